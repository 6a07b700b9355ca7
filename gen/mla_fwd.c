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
#include "mla.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "attn_emit.h"
#include "../templates/epilogue.h"
#include "../templates/row_gather.h"
#include "../templates/softmax.h"
#include "../templates/stages.h"

typedef struct {
    const AttnDesc *d;
    int bm, bn, hn, threads;          /* hn: the slots of one warp's half */
    SmemTile sq, skv, sp, so;         /* skv: stage 0 */
    int bias_off, rowx_off;           /* bias: stage 0 */
    Stages st;
    RowGather gkv;
    Reg t, h0, h_q, s_kv, eff, nsteps;
    Reg pair, half, warp_row0;        /* pair = row group r; half = c */
    Reg kv, kv_rs, idx_row, idx_next;
    Reg scale_log2, zero;
    LdsmBases fq, fk, fv_own, fv_other, fp_other;
    Reg bias_lane;                    /* this lane's column pair of the current stage's bias */
    Acc o;
    RowStats rows;
} Mla;

/* The token's slot count: topk, or clamp(topk_length[t], 0, topk) when given. */
static void slot_count(Kctx *k, Mla *f) {
    Emit *e = &k->e;
    Reg topk = kc_u32(k, "topk"), given = kc_ptr_set(k, "topk_length"), len = e_reg(e, RC_B32);
    Reg a = e_reg(e, RC_B64);
    f->eff = e_reg(e, RC_B32), f->nsteps = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(f->eff), R(topk));
    INS(e, MUL_WIDE_U32, R(a), R(f->t), I(4));
    INS(e, ADD_U64, R(a), R(a), R(kc_ptr(k, "topk_length")));
    INSP(e, given, 0, LD_GLOBAL_NC_B32, R(len), A(a, 0));
    INSP(e, given, 0, MAX_S32, R(len), R(len), I(0));
    INSP(e, given, 0, MIN_U32, R(f->eff), R(len), R(topk));
    INS(e, ADD_U32, R(f->nsteps), R(f->eff), I(f->bn - 1));
    INS(e, DIV_U32, R(f->nsteps), R(f->nsteps), I(f->bn));
}

static void setup(Kctx *k, Mla *f) {
    Emit *e = &k->e;
    f->t = e_reg(e, RC_B32), f->h0 = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(f->t), SR("%ctaid.x"));
    INS(e, MOV_B32, R(f->h0), SR("%ctaid.y"));
    INS(e, MUL_LO_U32, R(f->h0), R(f->h0), I(f->bm));
    f->h_q = kc_u32(k, "h_q");
    f->s_kv = kc_u32(k, "s_kv");
    int pairs = f->bm / 16;
    f->pair = e_reg(e, RC_B32), f->half = e_reg(e, RC_B32), f->warp_row0 = e_reg(e, RC_B32);
    INS(e, REM_U32, R(f->pair), R(k->warp), I(pairs));
    INS(e, DIV_U32, R(f->half), R(k->warp), I(pairs));
    INS(e, MUL_LO_U32, R(f->warp_row0), R(f->pair), I(16));
    f->kv = kc_ptr(k, "kv");
    f->kv_rs = row_stride_bytes(k, "kv");
    Reg a = e_reg(e, RC_B64);
    INS(e, CVT_U64_U32, R(a), R(f->t));
    INS(e, MUL_LO_U64, R(a), R(a), R(kc_u64(k, "indices_stride_s")));
    f->idx_row = kc_ptr(k, "indices");
    INS(e, MUL_LO_U64, R(a), R(a), I(4));
    INS(e, ADD_U64, R(f->idx_row), R(f->idx_row), R(a));
    slot_count(k, f);
    f->scale_log2 = scale_log2(k);
    f->zero = e_reg(e, RC_F32);
    INS(e, MOV_F32, R(f->zero), FI(0.0f));
}

/* The index of this thread's gather row in step n: -1 for slots past the
 * token's count, which are never read. */
static Reg fetch_index(Kctx *k, Mla *f, Reg n) {
    Emit *e = &k->e;
    Reg slot = e_reg(e, RC_B32), in = e_reg(e, RC_PRED), idx = e_reg(e, RC_B32), a = e_reg(e, RC_B64);
    INS(e, MAD_LO_U32, R(slot), R(n), I(f->bn), R(f->gkv.row));
    INS(e, SETP_LT_U32, R(in), R(slot), R(f->eff));
    INS(e, MOV_B32, R(idx), I(-1));
    INS(e, MAD_WIDE_U32, R(a), R(slot), I(4), R(f->idx_row));
    INSP(e, in, 0, LD_GLOBAL_NC_B32, R(idx), A(a, 0));
    return idx;
}

/* Row idx of kv into this thread's gather row of the stage at `shift`, and
 * the slot's bias (0, or -inf when invalid: no load, a zero row). */
static void gather_rows(Kctx *k, Mla *f, Reg idx, Reg shift) {
    Emit *e = &k->e;
    Reg ok = e_reg(e, RC_PRED), row = e_reg(e, RC_B32), sz = e_reg(e, RC_B32), src = e_reg(e, RC_B64);
    Reg bias = e_reg(e, RC_F32), lead = e_reg(e, RC_PRED), ba = e_reg(e, RC_B32);
    INS(e, SETP_LT_U32, R(ok), R(idx), R(f->s_kv));          /* unsigned: negative indices fail too */
    INS(e, SELP_B32, R(row), R(idx), I(0), R(ok));
    INS(e, SELP_B32, R(sz), I(16), I(0), R(ok));
    INS(e, MAD_WIDE_U32, R(src), R(row), R(f->kv_rs), R(f->kv));
    rg_issue(k, &f->gkv, f->skv, shift, src, sz);
    INS(e, SELP_F32, R(bias), FI(0.0f), FI(-INFINITY), R(ok));
    INS(e, SETP_EQ_U32, R(lead), R(f->gkv.part), I(0));
    INS(e, MAD_LO_U32, R(ba), R(f->gkv.row), I(4), R(k->smem));
    if (shift.cls != NOGUARD.cls) INS(e, ADD_U32, R(ba), R(ba), R(shift));
    INSP(e, lead, 0, ST_SHARED_F32, A(ba, f->bias_off), R(bias));
}

static void fragment_bases(Kctx *k, Mla *f) {
    Emit *e = &k->e;
    Reg l15, hi, row, brow, bsel;
    Reg own = e_reg(e, RC_B32), other = e_reg(e, RC_B32), cols = e_reg(e, RC_B32), t = e_reg(e, RC_B32);
    ldsm_a_lanes(k, f->warp_row0, &l15, &hi, &row);
    ldsm_bases(k, &f->fq, f->sq, row, hi);                              /* A of S: the warp's heads of Q */
    INS(e, MUL_LO_U32, R(own), R(f->half), I(f->hn));                   /* first slot of each half */
    INS(e, SUB_U32, R(other), I(f->hn), R(own));
    ldsm_b_lanes(k, &brow, &bsel);
    INS(e, ADD_U32, R(t), R(brow), R(own));
    ldsm_bases(k, &f->fk, f->skv, t, bsel);                             /* B of S: rows of the own slots */
    INS(e, MUL_LO_U32, R(cols), R(f->half), I(f->d->dv / 2 / 16));      /* 16-column pairs of the own d_v half */
    Reg r1 = e_reg(e, RC_B32), r2 = e_reg(e, RC_B32), p1 = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(r1), R(l15), R(own));
    ldsm_bases_at(k, &f->fv_own, f->skv, r1, hi, cols);                 /* B of O, transposed: own slots */
    INS(e, ADD_U32, R(r2), R(l15), R(other));
    ldsm_bases_at(k, &f->fv_other, f->skv, r2, hi, cols);               /* ... and the partner's */
    INS(e, SHR_U32, R(p1), R(other), I(4));
    ldsm_bases_at(k, &f->fp_other, f->sp, row, hi, p1);                 /* A of O: the partner's half of P */
    f->bias_lane = e_reg(e, RC_B32);
    INS(e, AND_B32, R(f->bias_lane), R(k->lane), I(3));
    INS(e, MAD_LO_U32, R(f->bias_lane), R(f->bias_lane), I(8), R(k->smem));
    INS(e, MAD_LO_U32, R(f->bias_lane), R(own), I(4), R(f->bias_lane));
    stages_track(&f->st, f->fk.base);
    stages_track(&f->st, f->fv_own.base);
    stages_track(&f->st, f->fv_other.base);
    stages_track(&f->st, f->bias_lane);
}

/* S += the slots' bias (0 or -inf), this lane's two columns per n tile */
static void add_bias(Kctx *k, Mla *f, Acc *s) {
    for (int j = 0; j < s->nt; j++) {
        Reg b[2] = {e_reg(&k->e, RC_F32), e_reg(&k->e, RC_F32)};
        INS(&k->e, LD_SHARED_V2_F32, V2(b[0], b[1]), A(f->bias_lane, f->bias_off + 32 * j));
        for (int c = 0; c < 4; c++) INS(&k->e, ADD_F32, R(ACC(s, 0, j, c)), R(ACC(s, 0, j, c)), R(b[c & 1]));
    }
}

/* Barrier of the two warps of this warp's pair (id 1 + pair; 0 is the CTA's). */
static void pair_sync(Kctx *k, Mla *f) {
    Reg id = e_reg(&k->e, RC_B32);
    INS(&k->e, ADD_U32, R(id), R(f->pair), I(1));
    INS(&k->e, BAR_SYNC_N, R(id), I(64));
}

/* x[h] (rows g and g+8 of the warp) = op(x[h], the partner warp's x[h]) */
static void pair_combine(Kctx *k, Mla *f, Reg *x, Op op) {
    Emit *e = &k->e;
    Reg g = e_reg(e, RC_B32), mine = e_reg(e, RC_B32), theirs = e_reg(e, RC_B32), lead = e_reg(e, RC_PRED);
    Reg t = e_reg(e, RC_B32);
    INS(e, SHR_U32, R(g), R(k->lane), I(2));
    INS(e, ADD_U32, R(g), R(g), R(f->warp_row0));
    INS(e, MAD_LO_U32, R(g), R(g), I(4), R(k->smem));
    INS(e, MAD_LO_U32, R(mine), R(f->half), I(4 * f->bm), R(g));
    INS(e, XOR_B32, R(theirs), R(f->half), I(1));
    INS(e, MAD_LO_U32, R(theirs), R(theirs), I(4 * f->bm), R(g));
    INS(e, AND_B32, R(t), R(k->lane), I(3));
    INS(e, SETP_EQ_U32, R(lead), R(t), I(0));
    for (int h = 0; h < 2; h++) INSP(e, lead, 0, ST_SHARED_F32, A(mine, f->rowx_off + 32 * h), R(x[h]));
    pair_sync(k, f);
    for (int h = 0; h < 2; h++) {
        Reg y = e_reg(e, RC_F32);
        INS(e, LD_SHARED_F32, R(y), A(theirs, f->rowx_off + 32 * h));
        e_insn(e, NOGUARD, 0, op, OPNDS(R(x[h]), R(x[h]), R(y)));
    }
}

/* Step n+1's rows into the other stage and step n+2's index into idx_next, unless n is the last step. */
static void prefetch(Kctx *k, Mla *f, Reg n) {
    Emit *e = &k->e;
    Reg next = e_reg(e, RC_B32), last = e_reg(e, RC_PRED), n2 = e_reg(e, RC_B32);
    int skip = e_label(e);
    INS(e, ADD_U32, R(next), R(n), I(1));
    INS(e, SETP_GE_U32, R(last), R(next), R(f->nsteps));
    INSP(e, last, 0, BRA_UNI, L(skip));
    gather_rows(k, f, f->idx_next, stages_other(k, &f->st));
    INS0(e, CP_ASYNC_COMMIT);
    INS(e, ADD_U32, R(n2), R(n), I(2));
    INS(e, MOV_B32, R(f->idx_next), R(fetch_index(k, f, n2)));
    e_place(e, skip);
}

/* One step of bn slots: the inner loop of the kernel. */
static void mla_step(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    Mla *f = ctx;
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    (void)n_max, (void)masked;
    e_comment(e, "top-k step n");
    sync_tiles(k);                            /* step n's rows landed; everyone is done with step n-1's stage */
    prefetch(k, f, n);
    Acc s;
    acc_new(k, &s, 1, f->hn / 8);
    mma_abt(k, &s, &f->fq, &f->fk, d->d / 16, d->dtype, f->zero);              /* S = Q K^T, own slots */
    add_bias(k, f, &s);
    Reg mx[2] = {softmax_row_max(k, &s, &f->rows, 0, 0), softmax_row_max(k, &s, &f->rows, 0, 1)};
    pair_combine(k, f, mx, OP_MAX_F32);
    for (int h = 0; h < 2; h++) softmax_rescale_row(k, &s, &f->rows, &f->o, f->scale_log2, 0, h, mx[h]);
    Reg *p = pack_a_from_acc(k, &s, d->dtype), chunk = e_reg(e, RC_B32);
    INS(e, MUL_LO_U32, R(chunk), R(f->half), I(f->hn / 8));
    packed_to_smem_at(k, p, 1, f->hn / 8, f->sp, f->warp_row0, chunk);
    pair_sync(k, f);                          /* both halves of P are in */
    mma_ab_trans(k, &f->o, p, f->hn / 16, &f->fv_own, d->dtype);               /* O += P V, own slots */
    Reg *q = frag_a_load(k, &f->fp_other, 1, f->hn / 16);
    mma_ab_trans(k, &f->o, q, f->hn / 16, &f->fv_other, d->dtype);             /* ... the partner's */
    free(p), free(q);
    acc_free(&s);
    stages_advance(k, &f->st);
}

static void epilogue(Kctx *k, Mla *f) {
    Emit *e = &k->e;
    Reg lse[2], rows_left = e_reg(e, RC_B32), chunk = e_reg(e, RC_B32), lim = e_reg(e, RC_B32), a = e_reg(e, RC_B32);
    Reg lead = e_reg(e, RC_PRED);
    softmax_row_sums(k, &f->rows);
    pair_combine(k, f, f->rows.l, OP_ADD_F32);
    softmax_normalize(k, &f->rows, &f->o, f->scale_log2, lse);
    sync_tiles(k);                            /* O staging reuses Q's shared memory */
    Reg *p = pack_a_from_acc(k, &f->o, f->d->dtype);
    INS(e, MUL_LO_U32, R(chunk), R(f->half), I(f->d->dv / 2 / 8));
    packed_to_smem_at(k, p, 1, f->o.nt, f->so, f->warp_row0, chunk);
    free(p);
    INS(e, BAR_SYNC, I(0));
    INS(e, SUB_U32, R(rows_left), R(f->h_q), R(f->h0));
    smem_to_global(k, f->so, f->threads, tensor_base(k, "o", 's', f->t, 'h', f->h0),
                   stride_bytes(k, "o", 'h'), rows_left);
    /* lse[t][h0 + r], written by the pair's first warp */
    INS(e, SETP_EQ_U32, R(lead), R(f->half), I(0));
    INS(e, SELP_B32, R(lim), R(rows_left), I(0), R(lead));
    Reg base = kc_ptr(k, "lse");
    INS(e, MAD_LO_U32, R(a), R(f->t), R(f->h_q), R(f->h0));
    INS(e, MAD_WIDE_U32, R(base), R(a), I(4), R(base));
    rows_to_global_f32(k, 1, lse, f->warp_row0, base, lim);
}

static void load_q(Kctx *k, Mla *f) {
    Emit *e = &k->e;
    RowGather gq;
    Reg head = e_reg(e, RC_B32), ok = e_reg(e, RC_PRED), sz = e_reg(e, RC_B32), src = e_reg(e, RC_B64);
    rg_init(k, &gq, f->bm, f->d->d, f->threads);
    INS(e, ADD_U32, R(head), R(f->h0), R(gq.row));
    INS(e, SETP_LT_U32, R(ok), R(head), R(f->h_q));
    INS(e, SELP_B32, R(sz), I(16), I(0), R(ok));
    INS(e, SELP_B32, R(head), R(gq.row), I(0), R(ok));                  /* heads past h_q: row 0, not read */
    INS(e, MUL_WIDE_U32, R(src), R(head), R(stride_bytes(k, "q", 'h')));
    INS(e, ADD_U64, R(src), R(src), R(tensor_base(k, "q", 's', f->t, 'h', f->h0)));
    rg_issue(k, &gq, f->sq, NOGUARD, src, sz);
}

void mla_fwd_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module) {
    Kctx kc;
    kctx_begin(&kc, ks);
    Emit *e = &kc.e;
    const AttnTile *t = &d->tile;
    Mla f = {.d = d, .bm = t->bm, .bn = t->bn, .hn = t->bn / 2, .threads = 32 * t->warps};
    f.sq = (SmemTile){t->bm, d->d, plan_region(p, "Q")};
    f.skv = (SmemTile){t->bn, d->d, plan_region(p, "KV.0")};
    f.sp = (SmemTile){t->bm, MLA_P_COLS, plan_region(p, "P")};
    f.so = (SmemTile){t->bm, d->dv, plan_region(p, "O")};
    f.bias_off = plan_region(p, "bias.0");
    f.rowx_off = plan_region(p, "rowx");
    setup(&kc, &f);
    stages_init(&kc, &f.st, plan_stage_stride(p));
    rg_init(&kc, &f.gkv, t->bn, d->d, f.threads);

    e_comment(e, "prologue: Q and the first step's rows in flight; the second step's index read");
    load_q(&kc, &f);
    Reg zero_u = kc_imm32(&kc, 0), one = kc_imm32(&kc, 1);
    gather_rows(&kc, &f, fetch_index(&kc, &f, zero_u), NOGUARD);
    INS0(e, CP_ASYNC_COMMIT);
    f.idx_next = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(f.idx_next), R(fetch_index(&kc, &f, one)));

    fragment_bases(&kc, &f);
    acc_new(&kc, &f.o, 1, d->dv / 2 / 8);
    acc_fill(&kc, &f.o, 0.0f);
    rows_init(&kc, &f.rows, 1);
    Reg n = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(n), I(0));
    key_loop(&kc, mla_step, &f, n, f.nsteps, f.nsteps, 0);
    epilogue(&kc, &f);

    kctx_finish(&kc, module);
    acc_free(&f.o);
    rows_free(&f.rows);
}
