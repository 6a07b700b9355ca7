/* mla_bwd main kernel, wgmma family (sm_90a): dq of one token's 64 heads, and their share of dkv.
 *
 *   the producer warpgroup (setmaxnreg.dec): thread 0 loads Q (64 heads x 576) and dO (64 x 512) once by
 *     TMA; its 128 threads gather each step's 64 rows kv[indices[t, 64 n ..]] by cp.async into the one
 *     slot (an invalid slot: a zero row, bias -inf, nothing read), fence them for the async proxy, arrive.
 *   consumer warpgroup c (0 or 1) owns slots [32 c, 32 c + 32) of each step for S and dP, and columns
 *   [256 c, 256 c + 256) and [512 + 32 c, 544 + 32 c) of dq and dkv:
 *     for each step n:
 *       S_c  = Q K_n[own slots]^T;  dP_c = dO V_n[own slots]^T       wgmma m64n32, all from shared memory
 *       P_c = exp(scale S_c - lse);  dS_c = scale P_c (dP_c - delta)
 *       P_c, dS_c -> the [heads][slots] tiles P and dS
 *       dq_c += dS K_n[:, own columns]                                m64n256 + m64n32, K MN-major
 *       (the slot is free: the producer gathers step n+1)
 *       for each 64 own columns j (then the 32 rope ones):
 *         dkv[idx[t, 64 n + slot], j] += (dS^T Q[:, j] + P^T dO[:, j])[slot]   m64n64, dS^T, P^T, Q, dO
 *                                                                      MN-major; one fp32 reduction per
 *                                                                      element (deterministic: s64 fixed point)
 *     dq_c -> shared (over Q) -> TMA store
 *
 * The warpgroups' barriers pair up: one before P and dS are rewritten (both are done reading the last
 * step's), one after. The inner loop is consumer_step(). */
#include "mla_bwd.h"
#include "mla_wg.h"
#include "../templates/mbar.h"
#include "../templates/smem_desc.h"
#include "../templates/wgmma.h"

enum { BAR_IN, BAR_FULL, BAR_EMPTY, NBARS };   /* mbarriers: Q and dO landed; the slot's full and empty */
enum { NB_CONSUMERS = 1, NB_STORE = 2 };        /* named barriers: both consumer warpgroups; then one per group */
#define SLAB_BYTES (MLA_WG_BM * 128)            /* one 64-column slab of 64 rows: Q, dO, KV, P and dS alike */
#define HALF (MLA_WG_BN / 2)                    /* slots of S and dP per warpgroup */
#define OWN_SLABS (MLA_D_V / 2 / WG_SLAB_COLS)  /* 64-column slabs of dq and dkv per warpgroup (then 32 rope) */
#define ROPE_SLAB (MLA_D_V / WG_SLAB_COLS)      /* slab 8: columns 512-575 */
#define ROPE_HALF ((MLA_D_QK - MLA_D_V) / 2)    /* rope columns per warpgroup */

typedef struct {
    const AttnDesc *d;
    const Plan *p;
    int q_off, do_off, kv_off, bias_off, rows_off, ds_off, p_off, det;
    Reg bar[NBARS];
    MlaCta cta;
    Reg it;                              /* steps consumed (the slot's phases) */
    /* consumers */
    int c;                               /* the consumer warpgroup this code is for (its descriptors are constants) */
    Reg warp_row0, scale, scale_log2, yes, no, nsteps;
    Reg neg_lse2[2], delta[2];
    Reg q_a, do_a, k_b;                  /* S, dP: Q and dO (K-major A), the own slots' rows (K-major B) */
    Reg ds_a, kv_b, kv_rope_b;           /* dq: dS (K-major A), K's own columns (MN-major B) */
    Reg dst_a, pt_a, q_b, do_b, q_rope_b; /* dkv: dS^T, P^T (MN-major A), Q and dO's own columns (MN-major B) */
    Reg bias_lane, p_chunk, slot_lane, row_lane, bit0, bit2, dkv_base;
    Reg mul;                             /* deterministic: 2^S, dkv's fixed-point scale */
    MlaDkvFixed fx;                      /* deterministic: the lane bits of mla_dkv_store_fixed */
    MlaSlots sl;                         /* the consumers use its bias layout */
    Acc dq, dq_rope;
} MlaBwdWg;

static void producer(Kctx *k, void *ctx) {
    MlaBwdWg *f = ctx;
    INS(&k->e, SETMAXNREG_DEC, I(plan_role_regs(f->p, "producer")));
    mla_cta_token(k, &f->cta, MLA_WG_BM, 32 * f->d->tile.warps);
    MlaWgFeed feed = {.ntiles = 2, .tiles = {{"q_map", f->q_off, MLA_D_QK}, {"do_map", f->do_off, MLA_D_V}},
                      .bn = MLA_WG_BN, .stages = 1, .kv_off = f->kv_off, .kv_stride = 0, .bias_off = f->bias_off,
                      .rows_off = f->rows_off, .bar_in = f->bar[BAR_IN], .full0 = f->bar[BAR_FULL],
                      .empty0 = f->bar[BAR_EMPTY], .it = f->it, .cta = &f->cta};
    mla_wg_producer(k, &feed);
}

/* S_c = Q K^T and dP_c = dO V^T over the warpgroup's slots, two commit groups; S is done on return. */
static void scores(Kctx *k, MlaBwdWg *f, Acc *s, Acc *dp) {
    Emit *e = &k->e;
    DType dt = f->d->dtype;
    acc_new(k, s, 1, HALF / 8);
    acc_new(k, dp, 1, HALF / 8);
    INS0(e, WGMMA_FENCE);
    for (int kk = 0; kk < MLA_D_QK / 16; kk++) {
        int at = kk / 4 * SLAB_BYTES + kk % 4 * 32;   /* 64 columns per slab, 16 (32 bytes) per step */
        wg_mma(k, s, smem_desc_at(k, f->q_a, at), NULL, smem_desc_at(k, f->k_b, at), WG_KMAJOR, dt, kk ? f->yes : f->no);
    }
    INS0(e, WGMMA_COMMIT);
    for (int kk = 0; kk < MLA_D_V / 16; kk++) {
        int at = kk / 4 * SLAB_BYTES + kk % 4 * 32;
        wg_mma(k, dp, smem_desc_at(k, f->do_a, at), NULL, smem_desc_at(k, f->k_b, at), WG_KMAJOR, dt, kk ? f->yes : f->no);
    }
    INS0(e, WGMMA_COMMIT);
    INS(e, WGMMA_WAIT, I(1));
}

/* dq_c += dS K[:, own columns], all 64 slots of the step (K = 4 steps of 16 slots). */
static void dq_products(Kctx *k, MlaBwdWg *f) {
    DType dt = f->d->dtype;
    INS0(&k->e, WGMMA_FENCE);
    for (int kk = 0; kk < MLA_WG_BN / 16; kk++) {
        Reg a = smem_desc_at(k, f->ds_a, kk * 32);
        wg_mma(k, &f->dq, a, NULL, smem_desc_at(k, f->kv_b, kk * 16 * 128), WG_B_MN, dt, f->yes);
        wg_mma(k, &f->dq_rope, a, NULL, smem_desc_at(k, f->kv_rope_b, kk * 16 * 128), WG_B_MN, dt, f->yes);
    }
    INS0(&k->e, WGMMA_COMMIT);
}

/* dkv chunk j of the warpgroup's columns (j < OWN_SLABS: 64 nope columns, dS^T Q + P^T dO; else its 32
 * rope columns, dS^T Q), into acc; one commit group. */
static void dkv_products(Kctx *k, MlaBwdWg *f, Acc *acc, int j) {
    DType dt = f->d->dtype;
    int rope = j == OWN_SLABS;
    /* each chunk in new registers lets ptxas start chunk j + 1's products before chunk j's reductions have read
     * its values (10% on the H200; deterministic, 11.64 against 13.10 ms at h 64 with one shared accumulator,
     * for 44 bytes of spills) */
    acc_new(k, acc, 1, WG_SLAB_COLS / 8);
    acc->nt = (rope ? ROPE_HALF : WG_SLAB_COLS) / 8;
    INS0(&k->e, WGMMA_FENCE);
    for (int kk = 0; kk < MLA_WG_BM / 16; kk++) {   /* K = the heads, 16 (2048 bytes of an MN-major slab) a step */
        int at = kk * 16 * 128;
        Reg qb = rope ? smem_desc_at(k, f->q_rope_b, at) : smem_desc_at(k, f->q_b, j * SLAB_BYTES + at);
        wg_mma(k, acc, smem_desc_at(k, f->dst_a, at), NULL, qb, WG_A_MN | WG_B_MN, dt, kk ? f->yes : f->no);
    }
    for (int kk = 0; !rope && kk < MLA_WG_BM / 16; kk++) {
        int at = kk * 16 * 128;
        wg_mma(k, acc, smem_desc_at(k, f->pt_a, at), NULL, smem_desc_at(k, f->do_b, j * SLAB_BYTES + at),
               WG_A_MN | WG_B_MN, dt, f->yes);
    }
    INS0(&k->e, WGMMA_COMMIT);
}

/* Where the lane's dkv lines of step n go (mla_dkv_store_lines: its rows are slots slot_lane + 0, 1, 8, 9) and
 * whether each slot is valid; read before the slot is freed (the rows are the producer's next write). */
static MlaDkvLines dkv_lines(Kctx *k, MlaBwdWg *f) {
    Emit *e = &k->e;
    MlaDkvLines r = {.bit0 = f->bit0, .bit2 = f->bit2};
    for (int i = 0; i < 4; i++) {
        int slot = (i & 1) + 8 * (i >> 1);
        Reg row = e_reg(e, RC_B32);
        r.addr[i] = e_reg(e, RC_B64), r.ok[i] = e_reg(e, RC_PRED);
        INS(e, LD_SHARED_B32, R(row), A(f->row_lane, f->rows_off + 4 * slot));
        INS(e, SETP_LT_U32, R(r.ok[i]), R(row), R(f->sl.s_kv));
        INS(e, MAD_WIDE_U32, R(r.addr[i]), R(row), I((f->det ? 8 : 4) * MLA_D_QK), R(f->dkv_base));
    }
    return r;
}

/* Step n of a consumer warpgroup: the inner loop of the kernel. */
static void consumer_step(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    MlaBwdWg *f = ctx;
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    (void)n, (void)n_max, (void)masked;
    e_comment(e, "top-k step n");
    Reg parity = e_reg(e, RC_B32), st = e_reg(e, RC_B64);
    INS(e, AND_B32, R(parity), R(f->it), I(1));
    mbar_wait(k, f->bar[BAR_FULL], parity, 0);
    Acc s, dp;
    scores(k, f, &s, &dp);
    mla_add_bias(k, &f->sl, f->bias_lane, &s);
    INS(e, WGMMA_WAIT, I(0));
    mla_bwd_probabilities(k, &s, &dp, f->scale_log2, f->scale, f->neg_lse2, f->delta);
    MlaDkvLines rows = {0};
    MlaDkvFixed fixed = f->fx;   /* deterministic: the lane's 8 rows, read before the slot is freed */
    if (f->det) mla_dkv_fixed_rows(k, &fixed, f->row_lane, f->rows_off, f->sl.s_kv, f->dkv_base);
    else rows = dkv_lines(k, f);
    Reg *p = pack_a_from_acc(k, &s, d->dtype), *ds = pack_a_from_acc(k, &dp, d->dtype);
    INS(e, BAR_SYNC_N, I(NB_CONSUMERS), I(256));     /* both are done with the last step's P and dS */
    wg_pairs_to_smem_at(k, p, HALF, f->warp_row0, k->smem, f->p_off, f->p_chunk);
    wg_pairs_to_smem_at(k, ds, HALF, f->warp_row0, k->smem, f->ds_off, f->p_chunk);
    INS0(e, FENCE_PROXY_ASYNC_CTA);                  /* both warpgroups' wgmma read them */
    INS(e, BAR_SYNC_N, I(NB_CONSUMERS), I(256));
    dq_products(k, f);
    /* dkv in 64-column chunks (then the rope one), each chunk's products issued after the last one's
     * reductions (dkv_products says how ptxas overlaps them). An explicit second accumulator measured no
     * faster on the H200 (the reductions' L2 traffic bounds this phase) and needed setmaxnreg 240, which left
     * the producer too few registers. */
    Acc acc;
    dkv_products(k, f, &acc, 0);
    INS(e, WGMMA_WAIT, I(1));                        /* dq's products are done: the slot is the producer's */
    INS(e, MBAR_ARRIVE, R(st), A(f->bar[BAR_EMPTY], 0));
    INS(e, ADD_U32, R(f->it), R(f->it), I(1));
    for (int j = 0; j <= OWN_SLABS; j++) {
        INS(e, WGMMA_WAIT, I(0));
        /* columns from the warpgroup's first (dkv_base is at 256 c): its nope chunk j, or its rope half */
        int col0 = j < OWN_SLABS ? j * WG_SLAB_COLS : MLA_D_V + f->c * ROPE_HALF - f->c * MLA_D_V / 2;
        if (f->det) mla_dkv_store_fixed(k, &acc, &fixed, col0, f->mul);
        else mla_dkv_store_lines(k, &acc, &rows, col0);
        if (j < OWN_SLABS) dkv_products(k, f, &acc, j + 1);
    }
}

/* Descriptors and addresses of warpgroup c. */
static void consumer_bases(Kctx *k, MlaBwdWg *f) {
    Emit *e = &k->e;
    int c = f->c, cols = c * OWN_SLABS * SLAB_BYTES, rope = c * ROPE_HALF * 2;   /* rope: half a 128-byte row */
    f->q_a = wg_desc_kmajor(k, f->q_off);
    f->do_a = wg_desc_kmajor(k, f->do_off);
    f->k_b = wg_desc_kmajor(k, f->kv_off + c * HALF * 128);
    f->ds_a = wg_desc_kmajor(k, f->ds_off);
    f->kv_b = wg_desc_mn(k, f->kv_off + cols, SLAB_BYTES);
    f->kv_rope_b = wg_desc_mn(k, f->kv_off + ROPE_SLAB * SLAB_BYTES + rope, SLAB_BYTES);
    f->dst_a = wg_desc_mn(k, f->ds_off, SLAB_BYTES);
    f->pt_a = wg_desc_mn(k, f->p_off, SLAB_BYTES);
    f->q_b = wg_desc_mn(k, f->q_off + cols, SLAB_BYTES);
    f->do_b = wg_desc_mn(k, f->do_off + cols, SLAB_BYTES);
    f->q_rope_b = wg_desc_mn(k, f->q_off + ROPE_SLAB * SLAB_BYTES + rope, SLAB_BYTES);
    f->p_chunk = kc_imm32(k, c * HALF / 8);
    f->bias_lane = mla_bias_lane(k, &f->sl, kc_imm32(k, c * HALF));
    /* dkv (mla_dkv_store_lines): the lane's rows are slots warp_row0 + 2 (lane >> 3) + 0, 1, 8, 9, its columns
     * start at 256 c + 8 (lane & 1) + 4 (lane >> 1 & 1) + 16 (lane >> 2 & 1); deterministic (mla_dkv_store_fixed):
     * the rows list from slot warp_row0, columns from 256 c + mla_dkv_fixed_col */
    Reg col;
    if (f->det) {
        mla_dkv_fixed_lane(k, &f->fx, f->warp_row0, &f->row_lane);
        col = mla_dkv_fixed_col(k);
    } else {
        Reg b = e_reg(e, RC_B32);
        col = e_reg(e, RC_B32);
        f->slot_lane = e_reg(e, RC_B32), f->row_lane = e_reg(e, RC_B32);
        f->bit0 = e_reg(e, RC_PRED), f->bit2 = e_reg(e, RC_PRED);
        INS(e, AND_B32, R(b), R(k->lane), I(1));
        INS(e, SETP_NE_U32, R(f->bit0), R(b), I(0));
        INS(e, AND_B32, R(b), R(k->lane), I(4));
        INS(e, SETP_NE_U32, R(f->bit2), R(b), I(0));
        INS(e, SHR_U32, R(b), R(k->lane), I(3));
        INS(e, MAD_LO_U32, R(f->slot_lane), R(b), I(2), R(f->warp_row0));
        INS(e, MAD_LO_U32, R(f->row_lane), R(f->slot_lane), I(4), R(k->smem));
        INS(e, AND_B32, R(col), R(k->lane), I(1));
        INS(e, SHL_B32, R(col), R(col), I(3));
        INS(e, AND_B32, R(b), R(k->lane), I(2));
        INS(e, MAD_LO_U32, R(col), R(b), I(2), R(col));
        INS(e, AND_B32, R(b), R(k->lane), I(4));
        INS(e, MAD_LO_U32, R(col), R(b), I(4), R(col));
    }
    int esz = f->det ? 8 : 4;   /* s64 fixed point or fp32 */
    f->dkv_base = e_reg(e, RC_B64);
    INS(e, MOV_B64, R(f->dkv_base), R(kc_ptr(k, f->det ? "dkv_fixed" : "dkv_accum")));
    INS(e, MAD_WIDE_U32, R(f->dkv_base), R(col), I(esz), R(f->dkv_base));
    INS(e, ADD_U64, R(f->dkv_base), R(f->dkv_base), I(esz * (f->c * MLA_D_V / 2)));
}

/* dq_c (bf16) into the staging slabs over Q once both warpgroups are past their last product reading Q, then
 * by TMA: warpgroup 0 its 4 slabs, warpgroup 1 its 4 and the rope slab both wrote half of. */
static void epilogue(Kctx *k, MlaBwdWg *f) {
    Emit *e = &k->e;
    DType dt = f->d->dtype;
    int c = f->c, own = f->q_off + c * OWN_SLABS * SLAB_BYTES;
    INS(e, BAR_SYNC_N, I(NB_CONSUMERS), I(256));
    wg_pairs_to_smem(k, pack_a_from_acc(k, &f->dq, dt), MLA_D_V / 2, f->warp_row0, k->smem, own, SLAB_BYTES);
    wg_pairs_to_smem_at(k, pack_a_from_acc(k, &f->dq_rope, dt), ROPE_HALF, f->warp_row0, k->smem,
                        f->q_off + ROPE_SLAB * SLAB_BYTES, kc_imm32(k, c * ROPE_HALF / 8));
    INS0(e, FENCE_PROXY_ASYNC_CTA);
    INS(e, BAR_SYNC_N, I(NB_CONSUMERS), I(256));     /* the rope slab has both halves */
    Reg src = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(src), R(k->smem), I(own));
    wg_store_cols(k, kc_imm32(k, NB_STORE + c), "dq_map", src, OWN_SLABS + c, SLAB_BYTES, kc_imm32(k, c * MLA_D_V / 2),
                  f->cta.h0, f->cta.t, kc_imm32(k, 0));
}

/* Warpgroup c's whole loop and epilogue, c a constant. */
static void consumer_side(Kctx *k, void *ctx, int c) {
    MlaBwdWg *f = ctx;
    Emit *e = &k->e;
    f->c = c;
    consumer_bases(k, f);
    acc_new(k, &f->dq, 1, MLA_D_V / 2 / 8);
    acc_new(k, &f->dq_rope, 1, ROPE_HALF / 8);
    acc_fill(k, &f->dq, 0.0f);
    acc_fill(k, &f->dq_rope, 0.0f);
    INS(e, MOV_B32, R(f->it), I(0));
    mbar_wait(k, f->bar[BAR_IN], kc_imm32(k, 0), 0); /* Q and dO landed (also before an empty token's dq takes Q's place) */
    Reg n = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(n), I(0));
    key_loop(k, consumer_step, f, n, f->nsteps, f->nsteps, 0);
    epilogue(k, f);
}

/* Both consumer warpgroups run the same code but for their columns and slots; each has its own copy, so
 * that every shared-memory descriptor is a constant ptxas rematerialises where it is used rather than a
 * register held across the loop next to dq's 144. */
static void consumer(Kctx *k, void *ctx) {
    MlaBwdWg *f = ctx;
    Emit *e = &k->e;
    INS(e, SETMAXNREG_INC, I(plan_role_regs(f->p, "consumer")));
    mla_cta_token(k, &f->cta, MLA_WG_BM, 32 * f->d->tile.warps);
    f->nsteps = mla_token_steps(k, mla_token_slots(k, f->cta.t, kc_u32(k, "topk")), MLA_WG_BN);
    Reg c, second = e_reg(e, RC_PRED);
    mla_wg_consumer_id(k, &c, &f->warp_row0);
    f->scale = kc_f32(k, "softmax_scale");
    f->scale_log2 = scale_log2(k);
    f->yes = kc_pred(k, 1);
    f->no = kc_pred(k, 0);
    f->sl = (MlaSlots){.bn = MLA_WG_BN, .bias_off = f->bias_off, .s_kv = kc_u32(k, "s_kv")};
    if (f->det) f->mul = mla_dkv_fixed(k).mul;
    /* lse and delta of the lane's heads, loaded once and held across the loop (4 registers the consumers have) */
    mla_bwd_row_stats(k, &f->cta, f->warp_row0, f->neg_lse2, f->delta);
    wg_each_consumer(k, c, second, 2, consumer_side, f);
}

void mla_bwd_wg_main_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module) {
    Kctx kc;
    kctx_begin(&kc, ks);
    Emit *e = &kc.e;
    MlaBwdWg f = {.d = d, .p = p, .q_off = plan_region(p, "Q"), .do_off = plan_region(p, "dO"),
                  .kv_off = plan_region(p, "KV"), .bias_off = plan_region(p, "bias"), .rows_off = plan_region(p, "rows"),
                  .ds_off = plan_region(p, "dS"), .p_off = plan_region(p, "P"), .det = d->tile.deterministic};
    Opnd counts[NBARS] = {I(1), I(128), I(256)};     /* the tiles' expect_tx; producer and consumer threads */
    mbar_init(&kc, plan_region(p, "barriers"), NBARS, counts, f.bar);
    f.it = e_reg(e, RC_B32);
    mla_wg_roles(&kc, producer, consumer, &f);
    kctx_finish(&kc, module);
}
