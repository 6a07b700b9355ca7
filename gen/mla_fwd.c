/* mla_fwd, mma.sync family: sparse MLA forward, one latent kv head read
 * through each token's top-k indices.
 *
 *   for each CTA (token t, head block hb):
 *     load Q[t, hb]; O = 0; m = -inf; l = 0
 *     for each step n over the token's slots (bn at a time, up to topk_length):
 *       gather KV_n = kv[indices[t, n*bn ...]]   (invalid slots: zero rows, S = -inf)
 *       S = Q KV_n^T;  m_new = max(m, rowmax S);  P = exp(scale (S - m_new))
 *       l = e^(scale (m - m_new)) l + rowsum P;  O = e^(scale (m - m_new)) O + P V_n
 *     O /= l;  lse = scale m + log l
 *
 * Warps come in pairs, one pair per 16 heads: warp c of a pair computes S for
 * half c of the step's slots and O for half c of d_v. Both need the whole P
 * row, so the pair swaps its row maxima and its halves of P through shared
 * memory (a named barrier per pair). Gathered rows are double-buffered, and
 * each thread reads the index of its gather row one step before it issues
 * the copy. The inner loop is mla_step(). */
#include "mla_emit.h"
#include <stdlib.h>
#include "../templates/epilogue.h"
#include "../templates/softmax.h"

typedef struct {
    const AttnDesc *d;
    int hn;                           /* the slots of one warp's half */
    MlaCta c;
    MlaSlots sl;
    SmemTile sq, sp, so;
    int rowx_off;
    Stages st;
    Reg scale_log2, zero;
    LdsmBases fq, fk, fv_own, fv_other, fp_other;
    Reg bias_lane;                    /* this lane's column pair of the current stage's bias */
    Acc o;
    RowStats rows;
} Mla;

static void fragment_bases(Kctx *k, Mla *f) {
    Emit *e = &k->e;
    Reg l15, hi, row, brow, bsel;
    Reg own = e_reg(e, RC_B32), other = e_reg(e, RC_B32), cols = e_reg(e, RC_B32), t = e_reg(e, RC_B32);
    ldsm_a_lanes(k, f->c.warp_row0, &l15, &hi, &row);
    ldsm_bases(k, &f->fq, f->sq, row, hi);                              /* A of S: the warp's heads of Q */
    INS(e, MUL_LO_U32, R(own), R(f->c.half), I(f->hn));                 /* first slot of each half */
    INS(e, SUB_U32, R(other), I(f->hn), R(own));
    ldsm_b_lanes(k, &brow, &bsel);
    INS(e, ADD_U32, R(t), R(brow), R(own));
    ldsm_bases(k, &f->fk, f->sl.skv, t, bsel);                          /* B of S: rows of the own slots */
    INS(e, MUL_LO_U32, R(cols), R(f->c.half), I(f->d->dv / 2 / 16));    /* 16-column pairs of the own d_v half */
    Reg r1 = e_reg(e, RC_B32), r2 = e_reg(e, RC_B32), p1 = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(r1), R(l15), R(own));
    ldsm_bases_at(k, &f->fv_own, f->sl.skv, r1, hi, cols);              /* B of O, transposed: own slots */
    INS(e, ADD_U32, R(r2), R(l15), R(other));
    ldsm_bases_at(k, &f->fv_other, f->sl.skv, r2, hi, cols);            /* ... and the partner's */
    INS(e, SHR_U32, R(p1), R(other), I(4));
    ldsm_bases_at(k, &f->fp_other, f->sp, row, hi, p1);                 /* A of O: the partner's half of P */
    f->bias_lane = mla_bias_lane(k, &f->sl, own);
    stages_track(&f->st, f->fk.base);
    stages_track(&f->st, f->fv_own.base);
    stages_track(&f->st, f->fv_other.base);
    stages_track(&f->st, f->bias_lane);
}

/* x[h] (rows g and g+8 of the warp) = op(x[h], the partner warp's x[h]) */
static void pair_combine(Kctx *k, Mla *f, Reg *x, Op op) {
    Reg id = e_reg(&k->e, RC_B32);
    INS(&k->e, ADD_U32, R(id), R(f->c.pair), I(1));     /* the pair's barrier (mla_pair_sync) */
    mla_rows_swap(k, x, op, f->c.half, f->c.warp_row0, f->c.bm, f->rowx_off, R(id), 64);
}

/* One step of bn slots: the inner loop of the kernel. */
static void mla_step(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    Mla *f = ctx;
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    (void)n_max, (void)masked;
    e_comment(e, "top-k step n");
    sync_tiles(k);                            /* step n's rows landed; everyone is done with step n-1's stage */
    mla_slots_prefetch(k, &f->sl, &f->st, n);
    Acc s;
    acc_new(k, &s, 1, f->hn / 8);
    mma_abt(k, &s, &f->fq, &f->fk, d->d / 16, d->dtype, f->zero);              /* S = Q K^T, own slots */
    mla_add_bias(k, &f->sl, f->bias_lane, &s);
    Reg mx[2] = {softmax_row_max(k, &s, &f->rows, 0, 0), softmax_row_max(k, &s, &f->rows, 0, 1)};
    pair_combine(k, f, mx, OP_MAX_F32);
    for (int h = 0; h < 2; h++) softmax_rescale_row(k, &s, &f->rows, &f->o, f->scale_log2, 0, h, mx[h]);
    Reg *p = pack_a_from_acc(k, &s, d->dtype), chunk = e_reg(e, RC_B32);
    INS(e, MUL_LO_U32, R(chunk), R(f->c.half), I(f->hn / 8));
    packed_to_smem_at(k, p, 1, f->hn / 8, f->sp, f->c.warp_row0, chunk);
    mla_pair_sync(k, &f->c);                  /* both halves of P are in */
    mma_ab_trans(k, &f->o, p, f->hn / 16, &f->fv_own, d->dtype);               /* O += P V, own slots */
    Reg *q = frag_a_load(k, &f->fp_other, 1, f->hn / 16);
    mma_ab_trans(k, &f->o, q, f->hn / 16, &f->fv_other, d->dtype);             /* ... the partner's */
    stages_advance(k, &f->st);
}

static void epilogue(Kctx *k, Mla *f) {
    Emit *e = &k->e;
    const MlaCta *c = &f->c;
    Reg lse[2], rows_left = e_reg(e, RC_B32), chunk = e_reg(e, RC_B32), lim = e_reg(e, RC_B32), a = e_reg(e, RC_B32);
    Reg lead = e_reg(e, RC_PRED);
    softmax_row_sums(k, &f->rows);
    pair_combine(k, f, f->rows.l, OP_ADD_F32);
    softmax_normalize(k, &f->rows, &f->o, f->scale_log2, lse);
    sync_tiles(k);                            /* O staging reuses Q's shared memory */
    Reg *p = pack_a_from_acc(k, &f->o, f->d->dtype);
    INS(e, MUL_LO_U32, R(chunk), R(c->half), I(f->d->dv / 2 / 8));
    packed_to_smem_at(k, p, 1, f->o.nt, f->so, c->warp_row0, chunk);
    INS(e, BAR_SYNC, I(0));
    INS(e, SUB_U32, R(rows_left), R(c->h_q), R(c->h0));
    smem_to_global(k, f->so, c->threads, tensor_base(k, "o", 's', c->t, 'h', c->h0), stride_bytes(k, "o", 'h'),
                   rows_left);
    /* lse[t][h0 + r], written by the pair's first warp */
    INS(e, SETP_EQ_U32, R(lead), R(c->half), I(0));
    INS(e, SELP_B32, R(lim), R(rows_left), I(0), R(lead));
    Reg base = kc_ptr(k, "lse");
    INS(e, MAD_LO_U32, R(a), R(c->t), R(c->h_q), R(c->h0));
    INS(e, MAD_WIDE_U32, R(base), R(a), I(4), R(base));
    rows_to_global_f32(k, 1, lse, c->warp_row0, base, lim);
}

void mla_fwd_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module) {
    Kctx kc;
    kctx_begin(&kc, ks);
    Emit *e = &kc.e;
    const AttnTile *t = &d->tile;
    Mla f = {.d = d, .hn = t->bn / 2};
    f.sq = (SmemTile){t->bm, d->d, plan_region(p, "Q")};
    f.sp = (SmemTile){t->bm, MLA_P_COLS, plan_region(p, "P")};
    f.so = (SmemTile){t->bm, d->dv, plan_region(p, "O")};
    f.rowx_off = plan_region(p, "rowx");
    mla_stream_begin(&kc, d, p, 0, &f.c, &f.sl, &f.st);
    f.scale_log2 = scale_log2(&kc);
    f.zero = e_reg(e, RC_F32);
    INS(e, MOV_F32, R(f.zero), FI(0.0f));

    e_comment(e, "prologue: Q and the first step's rows in flight; the second step's index read");
    mla_load_heads(&kc, &f.c, "q", f.sq);
    mla_slots_start(&kc, &f.sl);

    fragment_bases(&kc, &f);
    acc_new(&kc, &f.o, 1, d->dv / 2 / 8);
    acc_fill(&kc, &f.o, 0.0f);
    rows_init(&kc, &f.rows, 1);
    mla_slot_loop(&kc, &f.sl, mla_step, &f);
    epilogue(&kc, &f);

    kctx_finish(&kc, module);
}
