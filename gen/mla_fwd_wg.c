/* mla_fwd, wgmma family (sm_90a): sparse MLA forward, a gathering producer warpgroup and two consumer
 * warpgroups over the 64 heads of one token.
 *
 *   the producer warpgroup (setmaxnreg.dec): thread 0 loads Q (64 heads x 576) once by TMA; its 128
 *     threads gather each step's bn rows kv[indices[t, n bn ..]] by cp.async into a ring of two slots
 *     (an invalid slot: a zero row and bias -inf, nothing read), then fence the async proxy and arrive.
 *   consumer warpgroup c (0 or 1) owns slots [c bn/2, (c+1) bn/2) of each step for S, and columns
 *   [256 c, 256 c + 256) of O:
 *     for each step n:
 *       S_c = Q K_n[own slots]^T                       wgmma m64n32, Q and K from shared memory
 *       m_new = max(m, rowmax S_0, rowmax S_1)          the warpgroups swap their row maxima
 *       P_c = exp(scale (S_c - m_new)); l_c = e^(scale (m - m_new)) l_c + rowsum P_c
 *       P_c -> the slot's rope slab (K's columns 512-575: both S have read them)
 *       O_c = e^(scale (m - m_new)) O_c + P_c V_n[own slots, O_c's columns]
 *                                        + P_{1-c} V_n[the other slots, O_c's columns]
 *                                                       wgmma m64n256: P_c from registers, P_{1-c} from shared
 *     l = l_0 + l_1 (swapped);  O_c /= l -> shared (over Q) -> TMA store;  lse by warpgroup 0
 *
 * Both warpgroups take part in every step, so their barriers pair up: one after the row maxima are
 * written, one after P is. The inner loop is consumer_step(). */
#include "mla_wg.h"
#include "../templates/mbar.h"
#include "../templates/epilogue.h"
#include "../templates/softmax.h"
#include "../templates/smem_desc.h"
#include "../templates/wgmma.h"

enum { BAR_Q, BAR_FULL, BAR_EMPTY = BAR_FULL + 2, NBARS = BAR_EMPTY + 2 };   /* mbarriers; the ring has 2 slots */
enum { NB_CONSUMERS = 1, NB_STORE = 2 };   /* named barriers: both consumer warpgroups; then one per warpgroup */
#define SLAB_BYTES (MLA_WG_BN * 128)       /* one 64-column slab of a ring slot */
#define ROPE_SLAB (MLA_D_V / WG_SLAB_COLS) /* slab 8: K's rope columns, then P */

typedef struct {
    const AttnDesc *d;
    const Plan *p;
    int q_off, kv_off, kv_stride, bias_off, rowx_off, o_off, half;   /* half: the slots of one warpgroup */
    Reg bar[NBARS];
    MlaCta cta;                        /* the token and its head block (mla_cta_token), in both roles */
    Reg nsteps;
    Reg it;                            /* passes over the ring */
    /* consumers */
    Reg c, warp_row0, scale_log2, yes, no;
    Reg q_desc, k_desc, v_own, v_other, p_other;   /* descriptors at ring slot 0 */
    Reg bias_lane, p_chunk;
    MlaSlots sl;                       /* the consumers use its bias layout */
    Acc o;
    RowStats rows;
} MlaWg;

static void producer(Kctx *k, void *ctx) {
    MlaWg *f = ctx;
    INS(&k->e, SETMAXNREG_DEC, I(plan_role_regs(f->p, "producer")));
    mla_cta_token(k, &f->cta, MLA_WG_BM, 32 * f->d->tile.warps);
    MlaWgFeed feed = {.ntiles = 1, .tiles = {{"q_map", f->q_off, f->d->d}}, .bn = MLA_WG_BN, .stages = 2,
                      .kv_off = f->kv_off, .kv_stride = f->kv_stride, .bias_off = f->bias_off, .rows_off = -1,
                      .bar_in = f->bar[BAR_Q], .full0 = f->bar[BAR_FULL], .empty0 = f->bar[BAR_EMPTY], .it = f->it,
                      .prefetch = 1, .cta = &f->cta};
    mla_wg_producer(k, &feed);
}

/* x[h] (rows g and g+8 of the warp) = op(x[h], the other warpgroup's x[h]), through rowx. */
static void swap_rows(Kctx *k, MlaWg *f, Reg *x, Op op) {
    mla_rows_swap(k, x, op, f->c, f->warp_row0, MLA_WG_BM, f->rowx_off, I(NB_CONSUMERS), 256);
}

/* S_c = Q K_n^T over the warpgroup's slots of the ring slot at `stage`. */
static void scores(Kctx *k, MlaWg *f, Acc *s, Reg stage) {
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    acc_new(k, s, 1, f->half / 8);
    Reg kd = wg_desc_plus(k, f->k_desc, stage);
    INS0(e, WGMMA_FENCE);
    for (int kk = 0; kk < d->d / 16; kk++) {
        int slab = kk / 4, in = (kk % 4) * 32;   /* 64 columns per slab, 16 (32 bytes) per step */
        wg_mma(k, s, smem_desc_at(k, f->q_desc, slab * MLA_WG_BM * 128 + in), NULL,
               smem_desc_at(k, kd, slab * SLAB_BYTES + in), WG_KMAJOR, d->dtype, kk ? f->yes : f->no);
    }
    INS0(e, WGMMA_COMMIT);
    INS(e, WGMMA_WAIT, I(0));
}

/* O_c += P_c V_n[own slots] (P_c from registers) + P_{1-c} V_n[other slots] (P_{1-c} from the rope slab). */
static void values(Kctx *k, MlaWg *f, const Reg *p, Reg stage) {
    Emit *e = &k->e;
    DType dt = f->d->dtype;
    Reg vo = wg_desc_plus(k, f->v_own, stage), vx = wg_desc_plus(k, f->v_other, stage);
    Reg px = wg_desc_plus(k, f->p_other, stage);
    INS0(e, WGMMA_FENCE);                            /* O was rescaled by the threads */
    for (int kk = 0; kk < f->half / 16; kk++)
        wg_mma(k, &f->o, vo, &p[4 * kk], smem_desc_at(k, vo, kk * 16 * 128), WG_B_MN, dt, f->yes);
    for (int kk = 0; kk < f->half / 16; kk++)
        wg_mma(k, &f->o, smem_desc_at(k, px, kk * 32), NULL, smem_desc_at(k, vx, kk * 16 * 128), WG_B_MN, dt, f->yes);
    INS0(e, WGMMA_COMMIT);
    INS(e, WGMMA_WAIT, I(0));
}

/* Step n of a consumer warpgroup: the inner loop of the kernel. */
static void consumer_step(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    MlaWg *f = ctx;
    Emit *e = &k->e;
    (void)n, (void)n_max, (void)masked;
    e_comment(e, "top-k step n");
    Reg full, parity, empty;
    Reg stage = wg_ring_slot(k, f->bar[BAR_FULL], f->bar[BAR_EMPTY], 2, f->it, f->kv_stride, &full, &parity, &empty);
    mbar_wait(k, full, parity, 0);
    Acc s;
    scores(k, f, &s, stage);
    Reg bias = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(bias), R(f->bias_lane), R(stage));
    mla_add_bias(k, &f->sl, bias, &s);
    Reg mx[2] = {softmax_row_max(k, &s, &f->rows, 0, 0), softmax_row_max(k, &s, &f->rows, 0, 1)};
    swap_rows(k, f, mx, OP_MAX_F32);                 /* both S are done: the rope slab is free for P */
    Reg alpha[2];
    for (int h = 0; h < 2; h++) alpha[h] = softmax_exp_row(k, &s, &f->rows, f->scale_log2, 0, h, mx[h]);
    Reg *p = pack_a_from_acc(k, &s, f->d->dtype), base = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(base), R(k->smem), R(stage));
    wg_pairs_to_smem_at(k, p, f->half, f->warp_row0, base, f->kv_off + ROPE_SLAB * SLAB_BYTES, f->p_chunk);
    INS0(e, FENCE_PROXY_ASYNC_CTA);                  /* the other warpgroup's wgmma reads P */
    INS(e, BAR_SYNC_N, I(NB_CONSUMERS), I(256));
    acc_scale_rows(k, &f->o, alpha);
    values(k, f, p, stage);
    /* every consumer thread frees the slot: its own reads of the bias and writes of P are then released to
     * the producer's next copies into it by the mbarrier alone (compute-sanitizer racecheck orders a thread's
     * accesses only by its own arrive, not through the named barrier before a warp's lane 0 arrives) */
    Reg st = e_reg(e, RC_B64);
    INS(e, MBAR_ARRIVE, R(st), A(empty, 0));
    INS(e, ADD_U32, R(f->it), R(f->it), I(1));
}

/* Descriptors and addresses of warpgroup c at ring slot 0. */
static void consumer_bases(Kctx *k, MlaWg *f) {
    Emit *e = &k->e;
    int half = f->half;
    Reg other = e_reg(e, RC_B32), own_rows = e_reg(e, RC_B32), other_rows = e_reg(e, RC_B32), cols = e_reg(e, RC_B32);
    Reg a = e_reg(e, RC_B32), b = e_reg(e, RC_B32), px = e_reg(e, RC_B32);
    INS(e, XOR_B32, R(other), R(f->c), I(1));
    INS(e, MUL_LO_U32, R(own_rows), R(f->c), I(half * 128));
    INS(e, MUL_LO_U32, R(other_rows), R(other), I(half * 128));
    INS(e, MUL_LO_U32, R(cols), R(f->c), I(f->d->dv / 2 / WG_SLAB_COLS * SLAB_BYTES));   /* O_c's 4 slabs of V */
    f->q_desc = wg_desc_kmajor(k, f->q_off);
    f->k_desc = wg_desc_plus(k, wg_desc_kmajor(k, f->kv_off), own_rows);
    INS(e, ADD_U32, R(a), R(own_rows), R(cols));
    INS(e, ADD_U32, R(b), R(other_rows), R(cols));
    f->v_own = wg_desc_plus(k, wg_desc_mn(k, f->kv_off, SLAB_BYTES), a);
    f->v_other = wg_desc_plus(k, wg_desc_mn(k, f->kv_off, SLAB_BYTES), b);
    INS(e, MUL_LO_U32, R(px), R(other), I(half * 2));                                   /* its columns of P */
    f->p_other = wg_desc_plus(k, wg_desc_kmajor(k, f->kv_off + ROPE_SLAB * SLAB_BYTES), px);
    f->p_chunk = e_reg(e, RC_B32);
    INS(e, MUL_LO_U32, R(f->p_chunk), R(f->c), I(half / 8));
    Reg first = e_reg(e, RC_B32);
    INS(e, MUL_LO_U32, R(first), R(f->c), I(half));
    f->bias_lane = mla_bias_lane(k, &f->sl, first);
}

static void epilogue(Kctx *k, MlaWg *f) {
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    Reg lse[2];
    softmax_row_sums(k, &f->rows);
    swap_rows(k, f, f->rows.l, OP_ADD_F32);          /* and both are past their last S: Q may take O */
    softmax_normalize(k, &f->rows, &f->o, f->scale_log2, lse);
    /* lse[t][h0 + r], written by warpgroup 0 */
    Reg lim = e_reg(e, RC_B32), w0 = e_reg(e, RC_PRED), a = e_reg(e, RC_B32), base = kc_ptr(k, "lse");
    INS(e, SUB_U32, R(lim), R(f->cta.h_q), R(f->cta.h0));
    INS(e, SETP_EQ_U32, R(w0), R(f->c), I(0));
    INS(e, SELP_B32, R(lim), R(lim), I(0), R(w0));
    INS(e, MAD_LO_U32, R(a), R(f->cta.t), R(f->cta.h_q), R(f->cta.h0));
    INS(e, MAD_WIDE_U32, R(base), R(a), I(4), R(base));
    rows_to_global_f32(k, 1, lse, f->warp_row0, base, lim);
    /* O_c into its 4 slabs of the staging area, then to columns 256 c .. of heads h0 .. (TMA drops those past h_q) */
    int slabs = d->dv / 2 / WG_SLAB_COLS, slab_bytes = MLA_WG_BM * 128;
    Reg src = e_reg(e, RC_B32), col0 = e_reg(e, RC_B32), bar = e_reg(e, RC_B32);
    INS(e, MAD_LO_U32, R(src), R(f->c), I(slabs * slab_bytes), R(k->smem));
    wg_pairs_to_smem(k, pack_a_from_acc(k, &f->o, d->dtype), d->dv / 2, f->warp_row0, src, f->o_off, slab_bytes);
    INS(e, ADD_U32, R(src), R(src), I(f->o_off));
    INS(e, MUL_LO_U32, R(col0), R(f->c), I(d->dv / 2));
    INS(e, ADD_U32, R(bar), R(f->c), I(NB_STORE));
    wg_store_cols(k, bar, "o_map", src, slabs, slab_bytes, col0, f->cta.h0, f->cta.t, kc_imm32(k, 0));
}

static void consumer(Kctx *k, void *ctx) {
    MlaWg *f = ctx;
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    INS(e, SETMAXNREG_INC, I(plan_role_regs(f->p, "consumer")));
    mla_cta_token(k, &f->cta, MLA_WG_BM, 32 * f->d->tile.warps);
    f->nsteps = mla_token_steps(k, mla_token_slots(k, f->cta.t, kc_u32(k, "topk")), MLA_WG_BN);
    mla_wg_consumer_id(k, &f->c, &f->warp_row0);
    f->scale_log2 = scale_log2(k);
    f->yes = kc_pred(k, 1);
    f->no = kc_pred(k, 0);
    f->sl = (MlaSlots){.bn = MLA_WG_BN, .bias_off = f->bias_off};
    consumer_bases(k, f);
    acc_new(k, &f->o, 1, d->dv / 2 / 8);
    acc_fill(k, &f->o, 0.0f);
    rows_init(k, &f->rows, 1);
    INS(e, MOV_B32, R(f->it), I(0));
    mbar_wait(k, f->bar[BAR_Q], kc_imm32(k, 0), 0);  /* Q landed (also before an empty token's O takes its place) */
    Reg n = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(n), I(0));
    key_loop(k, consumer_step, f, n, f->nsteps, f->nsteps, 0);
    epilogue(k, f);
}

void mla_fwd_wg_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module) {
    Kctx kc;
    kctx_begin(&kc, ks);
    Emit *e = &kc.e;
    MlaWg f = {.d = d, .p = p, .q_off = plan_region(p, "Q"), .kv_off = plan_region(p, "KV.0"),
               .rowx_off = plan_region(p, "rowx"), .o_off = plan_region(p, "O"), .half = MLA_WG_BN / 2};
    f.kv_stride = plan_region(p, "KV.1") - f.kv_off;
    f.bias_off = f.kv_off + MLA_WG_BN * d->d * 2;
    Opnd counts[NBARS] = {I(1), I(128), I(128), I(256), I(256)};   /* Q's expect_tx; producer and consumer threads */
    mbar_init(&kc, plan_region(p, "barriers"), NBARS, counts, f.bar);
    f.it = e_reg(e, RC_B32);
    mla_wg_roles(&kc, producer, consumer, &f);
    kctx_finish(&kc, module);
}
