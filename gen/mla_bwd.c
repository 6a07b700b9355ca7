/* mla_bwd main kernel, mma.sync family: dq of one token's head block, and the
 * block's share of dkv.
 *
 *   for each CTA (token t, head block hb):
 *     load Q[t, hb], dO[t, hb];  dq = 0
 *     for each step n over the token's slots (bn at a time, up to topk_length):
 *       gather KV_n = kv[indices[t, n*bn ...]]   (invalid slots: zero rows, S = -inf)
 *       S  = Q KV_n^T;  P = exp(scale S - lse)   (lse from the forward)
 *       dP = dO V_n^T;  dS = scale P (dP - delta)
 *       dq += dS K_n
 *       dkv[idx[slot]] += dS^T Q + P^T dO        (one fp32 reduction per element and
 *                                                 slot, over the block's heads; deterministic,
 *                                                 an s64 one in fixed point)
 *     store dq
 *
 * Warps come in pairs, one pair per 16 heads (as in mla_fwd): warp c of a pair
 * computes S, dP, P and dS for half c of the step's slots and keeps dq for
 * half c of the columns (nope [256c, 256c+256), rope [512+32c, 544+32c)) in
 * registers. P and dS go through shared memory, where every warp then takes
 * one block of the step's bn x 576 dkv tile (mla_dkv_split): a 16-slot m tile
 * times a column group, summed over all bm heads in 64-column chunks that are
 * reduced into global memory as they finish. The inner loop is bwd_step(). */
#include "mla_bwd.h"
#include <stdlib.h>
#include "../templates/epilogue.h"

typedef struct {
    const AttnDesc *d;
    int hn, det;                      /* hn: the slots of one warp's half */
    MlaCta c;
    MlaSlots sl;
    MlaDkvSplit sp;
    SmemTile sq, sdo, sds, sprob, sdq;
    Stages st;
    Reg scale, scale_log2, zero;
    Reg mul, rows_fixed;              /* deterministic: 2^S, dkv's fixed-point scale; the lane's row list */
    MlaDkvFixed fx;                   /* deterministic: the lane bits of mla_dkv_store_fixed */
    Reg neg_lse2[2], delta[2];        /* rows g, g+8 of the warp's heads: -lse log2(e) (-inf past h_q), delta */
    LdsmBases fq, fdo, fk;            /* S, dP: A from the warp's heads, B from its own slots */
    LdsmBases fds, fkt, fkt_rope;     /* dq: A = dS of the warp's heads, B = K transposed, its columns */
    LdsmBases fdst, fpt;              /* dkv: A = dS^T and P^T of the warp's slot m tile */
    LdsmBases fqt, fqt_rope, fdot;    /* dkv: B = Q and dO transposed, the warp's column group */
    Reg bias_lane, rows_lane;         /* current stage: own slots' bias pair; kv rows of the m tile's rows g (fp32) */
    Reg dst;                          /* b64: dkv destination of the lane's first nope column, kv row 0 */
    Reg rope_delta;                   /* bytes from the lane's first nope column to its first rope column */
    Acc dq, dq_rope;
} MlaBwd;

static void fragment_bases(Kctx *k, MlaBwd *f) {
    Emit *e = &k->e;
    const MlaCta *c = &f->c;
    Reg l15, hi, row, brow, bsel, t = e_reg(e, RC_B32), own = e_reg(e, RC_B32), p = e_reg(e, RC_B32);
    ldsm_a_lanes(k, c->warp_row0, &l15, &hi, &row);
    ldsm_bases(k, &f->fq, f->sq, row, hi);
    ldsm_bases(k, &f->fdo, f->sdo, row, hi);
    ldsm_bases(k, &f->fds, f->sds, row, hi);
    ldsm_b_lanes(k, &brow, &bsel);
    INS(e, MUL_LO_U32, R(own), R(c->half), I(f->hn));
    INS(e, ADD_U32, R(t), R(brow), R(own));
    ldsm_bases(k, &f->fk, f->sl.skv, t, bsel);
    INS(e, MUL_LO_U32, R(p), R(c->half), I(f->d->dv / 2 / 16));
    ldsm_bases_at(k, &f->fkt, f->sl.skv, l15, hi, p);
    Reg pr = e_reg(e, RC_B32);
    INS(e, MAD_LO_U32, R(pr), R(c->half), I((f->d->d - f->d->dv) / 2 / 16), I(f->d->dv / 16));
    ldsm_bases_at(k, &f->fkt_rope, f->sl.skv, l15, hi, pr);
    f->bias_lane = mla_bias_lane(k, &f->sl, own);
    stages_track(&f->st, f->fk.base);
    stages_track(&f->st, f->fkt.base);
    stages_track(&f->st, f->fkt_rope.base);
    stages_track(&f->st, f->bias_lane);
    /* the dkv block: slot m tile mi = warp % mtiles, column group warp / mtiles */
    Reg mi = e_reg(e, RC_B32), grp = e_reg(e, RC_B32), pn = e_reg(e, RC_B32), pq = e_reg(e, RC_B32);
    INS(e, REM_U32, R(mi), R(k->warp), I(f->sp.mtiles));
    INS(e, DIV_U32, R(grp), R(k->warp), I(f->sp.mtiles));
    ldsm_bases_at(k, &f->fdst, f->sds, brow, bsel, mi);
    f->fpt = (LdsmBases){f->sprob, f->fdst.base};                      /* dS and P: one row width */
    INS(e, MUL_LO_U32, R(pn), R(grp), I(f->sp.nope / 16));
    ldsm_bases_at(k, &f->fqt, f->sq, l15, hi, pn);
    ldsm_bases_at(k, &f->fdot, f->sdo, l15, hi, pn);
    INS(e, MAD_LO_U32, R(pq), R(grp), I(f->sp.rope / 16), I(f->d->dv / 16));
    ldsm_bases_at(k, &f->fqt_rope, f->sq, l15, hi, pq);
    if (!f->det) {   /* this lane's rows of the m tile: slots 16 mi + g (+8) */
        Reg g = e_reg(e, RC_B32);
        Reg slot_lane = e_reg(e, RC_B32);
        f->rows_lane = e_reg(e, RC_B32);
        INS(e, SHR_U32, R(g), R(k->lane), I(2));
        INS(e, MAD_LO_U32, R(slot_lane), R(mi), I(16), R(g));
        INS(e, MAD_LO_U32, R(f->rows_lane), R(slot_lane), I(4), R(k->smem));
        stages_track(&f->st, f->rows_lane);
    }
    /* this lane's first column of the group: 2t past the group's first (deterministic: mla_dkv_store_fixed's),
     * nope and rope */
    Reg tq = f->det ? mla_dkv_fixed_col(k) : e_reg(e, RC_B32), col[2] = {e_reg(e, RC_B32), e_reg(e, RC_B32)};
    if (f->det) {   /* its rows: mla_dkv_fixed_rows' of the m tile */
        Reg slot0 = e_reg(e, RC_B32);
        INS(e, MUL_LO_U32, R(slot0), R(mi), I(16));
        mla_dkv_fixed_lane(k, &f->fx, slot0, &f->rows_fixed);
        stages_track(&f->st, f->rows_fixed);
    } else {
        INS(e, AND_B32, R(tq), R(k->lane), I(3));
        INS(e, SHL_B32, R(tq), R(tq), I(1));
    }
    INS(e, MAD_LO_U32, R(col[0]), R(grp), I(f->sp.nope), R(tq));
    INS(e, MAD_LO_U32, R(col[1]), R(grp), I(f->sp.rope), R(tq));
    INS(e, ADD_U32, R(col[1]), R(col[1]), I(f->d->dv));
    int esz = f->det ? 8 : 4;   /* s64 fixed point or fp32 */
    f->dst = e_reg(e, RC_B64), f->rope_delta = e_reg(e, RC_B32);
    INS(e, MAD_WIDE_U32, R(f->dst), R(col[0]), I(esz), R(kc_ptr(k, f->det ? "dkv_fixed" : "dkv_accum")));
    INS(e, SUB_U32, R(f->rope_delta), R(col[1]), R(col[0]));
    INS(e, MUL_LO_U32, R(f->rope_delta), R(f->rope_delta), I(esz));
}

/* Where rows g and g+8 of the warp's dkv block go (its first nope column;
 * rope_delta further for rope), and whether each is a valid slot (else no
 * access at all). */
static MlaDkvRows dkv_rows(Kctx *k, MlaBwd *f) {
    Emit *e = &k->e;
    MlaDkvRows r;
    for (int h = 0; h < 2; h++) {
        Reg row = e_reg(e, RC_B32);
        r.ok[h] = e_reg(e, RC_PRED);
        INS(e, LD_SHARED_B32, R(row), A(f->rows_lane, f->sl.rows_off + 32 * h));
        INS(e, SETP_LT_U32, R(r.ok[h]), R(row), R(f->sl.s_kv));
        r.addr[h] = e_reg(e, RC_B64);
        INS(e, MAD_WIDE_U32, R(r.addr[h]), R(row), I(4 * f->d->d), R(f->dst));
    }
    return r;
}

/* The same rows at their first rope column. */
static MlaDkvRows dkv_rope_rows(Kctx *k, MlaBwd *f, const MlaDkvRows *nope) {
    MlaDkvRows r = *nope;
    for (int h = 0; h < 2; h++) {
        r.addr[h] = e_reg(&k->e, RC_B64);
        INS(&k->e, MAD_WIDE_U32, R(r.addr[h]), R(f->rope_delta), I(1), R(nope->addr[h]));
    }
    return r;
}

/* B operand bases of the warp's nope columns [32c, 32c + 32): chunk pairs
 * 2c, 2c+1 of the group, a 128-byte step per 64 columns and an XOR within one. */
static LdsmBases chunk_bases(Kctx *k, const LdsmBases *b, int c) {
    LdsmBases r = *b;
    r.t.off += 128 * (c / 2);
    if (c & 1) {
        r.base = e_reg(&k->e, RC_B32);
        INS(&k->e, XOR_B32, R(r.base), R(b->base), I(64));
    }
    return r;
}

/* The block's chunk into dkv: fp32 reductions at rows, or (deterministic) fixed point at fixed */
static void dkv_store(Kctx *k, MlaBwd *f, const Acc *acc, const MlaDkvRows *rows, const MlaDkvFixed *fixed, int col0) {
    if (f->det) mla_dkv_store_fixed(k, acc, fixed, col0, f->mul);
    else mla_dkv_store(k, f->d->arch->vec_red, acc, rows, col0);
}

/* dkv of the warp's block, MLA_DKV_CHUNK columns at a time: dS^T Q (+ P^T dO on the d_v columns). */
static void dkv_block(Kctx *k, MlaBwd *f, MlaDkvRows rows, MlaDkvFixed fixed) {
    const AttnDesc *d = f->d;
    for (int c = 0; c < f->sp.nope / 32; c++) {
        LdsmBases qb = chunk_bases(k, &f->fqt, c), db = chunk_bases(k, &f->fdot, c);
        Acc acc;
        acc_new(k, &acc, 1, 4);
        mma_smem_ab(k, &acc, &f->fdst, f->c.bm / 16, &qb, d->dtype, f->zero);
        mma_smem_ab_add(k, &acc, &f->fpt, f->c.bm / 16, &db, d->dtype);
        dkv_store(k, f, &acc, &rows, &fixed, 32 * c);
    }
    Acc acc;
    acc_new(k, &acc, 1, f->sp.rope / 8);
    mma_smem_ab(k, &acc, &f->fdst, f->c.bm / 16, &f->fqt_rope, d->dtype, f->zero);
    MlaDkvRows rope = {0};
    if (f->det)   /* the same rows at their first rope column */
        for (int q = 0; q < 8; q++) {
            Reg a = e_reg(&k->e, RC_B64);
            INS(&k->e, MAD_WIDE_U32, R(a), R(f->rope_delta), I(1), R(fixed.addr[q]));
            fixed.addr[q] = a;
        }
    else rope = dkv_rope_rows(k, f, &rows);
    dkv_store(k, f, &acc, &rope, &fixed, 0);
}

/* One step of bn slots: the inner loop of the kernel. */
static void bwd_step(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    MlaBwd *f = ctx;
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    (void)n_max, (void)masked;
    e_comment(e, "top-k step n");
    sync_tiles(k);                            /* step n's rows landed; everyone is done with step n-1 */
    int one = f->st.stride == 0;              /* one row buffer (stages=1) */
    if (!one) mla_slots_prefetch(k, &f->sl, &f->st, n);
    Acc s, dp;
    acc_new(k, &s, 1, f->hn / 8);
    acc_new(k, &dp, 1, f->hn / 8);
    /* S = Q K^T and dP = dO V^T over the own slots: V is K's first d_v columns */
    mma_abt_shared_b(k, &s, &f->fq, d->d / 16, &dp, &f->fdo, d->dv / 16, &f->fk, d->dtype, f->zero);
    mla_add_bias(k, &f->sl, f->bias_lane, &s);
    mla_bwd_probabilities(k, &s, &dp, f->scale_log2, f->scale, f->neg_lse2, f->delta);
    Reg *p = pack_a_from_acc(k, &s, d->dtype), *ds = pack_a_from_acc(k, &dp, d->dtype), chunk = e_reg(e, RC_B32);
    INS(e, MUL_LO_U32, R(chunk), R(f->c.half), I(f->hn / 8));
    packed_to_smem_at(k, p, 1, f->hn / 8, f->sprob, f->c.warp_row0, chunk);
    packed_to_smem_at(k, ds, 1, f->hn / 8, f->sds, f->c.warp_row0, chunk);
    INS(e, BAR_SYNC, I(0));                   /* every head's P and dS of the step are in */
    Reg *a = frag_a_load(k, &f->fds, 1, f->sl.bn / 16);
    mma_ab_trans(k, &f->dq, a, f->sl.bn / 16, &f->fkt, d->dtype);               /* dq += dS K, all bn slots */
    mma_ab_trans(k, &f->dq_rope, a, f->sl.bn / 16, &f->fkt_rope, d->dtype);
    MlaDkvRows rows = {0};
    MlaDkvFixed fixed = f->fx;
    if (f->det) mla_dkv_fixed_rows(k, &fixed, f->rows_fixed, f->sl.rows_off, f->sl.s_kv, f->dst);
    else rows = dkv_rows(k, f);
    if (one) {   /* every warp's dq products have read the rows: the next step's land under the dkv products */
        INS(e, BAR_SYNC, I(0));
        mla_slots_prefetch(k, &f->sl, &f->st, n);
    }
    dkv_block(k, f, rows, fixed);
    if (!one) stages_advance(k, &f->st);
}

static void epilogue(Kctx *k, MlaBwd *f) {
    Emit *e = &k->e;
    const MlaCta *c = &f->c;
    Reg chunk = e_reg(e, RC_B32), rows_left = e_reg(e, RC_B32);
    sync_tiles(k);                            /* dq staging reuses Q's shared memory */
    Reg *p = pack_a_from_acc(k, &f->dq, f->d->dtype), *pr = pack_a_from_acc(k, &f->dq_rope, f->d->dtype);
    INS(e, MUL_LO_U32, R(chunk), R(c->half), I(f->dq.nt));
    packed_to_smem_at(k, p, 1, f->dq.nt, f->sdq, c->warp_row0, chunk);
    INS(e, MAD_LO_U32, R(chunk), R(c->half), I(f->dq_rope.nt), I(f->d->dv / 8));
    packed_to_smem_at(k, pr, 1, f->dq_rope.nt, f->sdq, c->warp_row0, chunk);
    INS(e, BAR_SYNC, I(0));
    INS(e, SUB_U32, R(rows_left), R(c->h_q), R(c->h0));
    smem_to_global(k, f->sdq, c->threads, tensor_base(k, "dq", 's', c->t, 'h', c->h0), stride_bytes(k, "dq", 'h'),
                   rows_left);
}

void mla_bwd_main_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module) {
    Kctx kc;
    kctx_begin(&kc, ks);
    Emit *e = &kc.e;
    const AttnTile *t = &d->tile;
    MlaBwd f = {.d = d, .hn = t->bn / 2, .det = t->deterministic, .sp = mla_dkv_split(t)};
    f.sq = (SmemTile){t->bm, d->d, plan_region(p, "Q")};
    f.sdo = (SmemTile){t->bm, d->dv, plan_region(p, "dO")};
    f.sds = (SmemTile){t->bm, MLA_P_COLS, plan_region(p, "dS")};
    f.sprob = (SmemTile){t->bm, MLA_P_COLS, plan_region(p, "P")};
    f.sdq = (SmemTile){t->bm, d->d, plan_region(p, "dQ")};
    mla_stream_begin(&kc, d, p, 1, &f.c, &f.sl, &f.st);
    f.scale = kc_f32(&kc, "softmax_scale");
    f.scale_log2 = scale_log2(&kc);
    f.zero = e_reg(e, RC_F32);
    INS(e, MOV_F32, R(f.zero), FI(0.0f));
    if (f.det) f.mul = mla_dkv_fixed(&kc).mul;

    e_comment(e, "prologue: Q, dO and the first step's rows in flight; the second step's index read");
    mla_load_heads(&kc, &f.c, "q", f.sq);
    mla_load_heads(&kc, &f.c, "do", f.sdo);
    mla_slots_start(&kc, &f.sl);
    mla_bwd_row_stats(&kc, &f.c, f.c.warp_row0, f.neg_lse2, f.delta);
    fragment_bases(&kc, &f);
    acc_new(&kc, &f.dq, 1, d->dv / 2 / 8);
    acc_new(&kc, &f.dq_rope, 1, (d->d - d->dv) / 2 / 8);
    acc_fill(&kc, &f.dq, 0.0f);
    acc_fill(&kc, &f.dq_rope, 0.0f);
    mla_slot_loop(&kc, &f.sl, bwd_step, &f);
    epilogue(&kc, &f);

    kctx_finish(&kc, module);
}
