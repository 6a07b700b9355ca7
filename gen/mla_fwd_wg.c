/* mla_fwd, wgmma family (sm_90a): sparse MLA forward, a gathering producer warpgroup and two consumer
 * warpgroups over the 64 heads of one token, in FlashMLA's "seesaw" order.
 *
 * The token's top-k slots come in blocks of 64, two blocks a pair: block 2n in ring slot 0, block 2n+1 in
 * slot 1. Each slot fills and frees in two halves: L (columns 0-255: K's and V's first half) and R
 * (256-575: V's second half and K's rope columns). Half L of either slot is read last by warpgroup 0, half
 * R by warpgroup 1, and that warpgroup frees it, so a slot's first half refills while its second is still
 * read. Consumer c owns O_c = O[:, 256c .. 256c+255] and the S of slot c:
 *
 *   warpgroup 0, pair n (S_0 = Q K_{2n}^T already done):       warpgroup 1, pair n:
 *     m_0 = max(m, rowmax S_0); P_0 = exp(S_0 - m_0)             S_1 = Q K_{2n+1}^T                (m64n64)
 *     O_0 = e^(m - m_0) O_0; m_0 -> rowx  ---------------->      m_1 = max(m_0, rowmax S_1); P_1 = exp(S_1 - m_1)
 *     O_0 += P_0 V_{2n}[:, O_0's]   (RS)                         O_1 = e^(m - m_1) O_1; m_1 -> rowx
 *     frees slot 0's half L                                      P_1 -> the P1 tile
 *     m_1 <- rowx  <-------------------------------------       O_1 += P_1 V_{2n+1}[:, O_1's]   (RS)
 *     P_0 e^(m_0 - m_1) -> slot 0's rope slab  ----------->      O_1 += P_0 V_{2n}[:, O_1's]     (SS)
 *     O_0 = e^(m_0 - m_1) O_0 + P_1 V_{2n+1}[:, O_0's]  (SS)    frees slot 1's half R, then slot 0's
 *     S_0 of pair n+1 under that product; frees slot 1's half L
 *
 * So one warpgroup's softmax runs under the other's products, and each S is m64n64 (Q read once per 64
 * slots from shared memory, where the two warpgroups splitting a block read it twice). The maxima's arrows
 * are mbarriers, the P tiles' named barriers (one arrive, one sync). l = l_0 + l_1 at the end; O_c /= l ->
 * shared (over Q) -> TMA store. The inner loops are wg0_pair() and wg1_pair(). */
#include "mla_wg.h"
#include <math.h>
#include "../templates/mbar.h"
#include "../templates/epilogue.h"
#include "../templates/softmax.h"
#include "../templates/smem_desc.h"
#include "../templates/wgmma.h"

/* mbarriers: Q; full and empty per (slot, half) at index 2 slot + half; each warpgroup's maxima written; both
 * warpgroups' row sums written */
enum { BAR_Q, BAR_FULL, BAR_EMPTY = BAR_FULL + 4, BAR_MAX = BAR_EMPTY + 4, BAR_SUMS = BAR_MAX + 2, NBARS };
enum { HALF_L, HALF_R };
/* named barriers (0 is the CTA's): the P tiles' arrows, then one per warpgroup's store */
enum { NB_P0 = 1, NB_P1, NB_STORE };
#define SLAB_BYTES (MLA_WG_BN * 128)       /* one 64-column slab of a ring slot (and of Q: MLA_WG_BM = MLA_WG_BN) */
#define ROPE_SLAB (MLA_D_V / WG_SLAB_COLS) /* slab 8: K's rope columns, then slot 0's P */
#define O_COLS (MLA_D_V / 2)               /* a warpgroup's columns of O */

static const int half_slab0[2] = {0, 4}, half_slabs[2] = {4, 5};

typedef struct {
    const AttnDesc *d;
    const Plan *p;
    int q_off, kv_off, kv_stride, bias_off, p1_off, rowx_off, o_off;
    Reg bar[NBARS];
    MlaCta cta;                        /* the token and its head block (mla_cta_token), in both roles */
    Reg npairs;
    /* consumers */
    Reg c, warp_row0, scale_log2, yes, no;
    Reg q_desc, kv_desc[2];            /* K-major descriptors of Q and of each slot */
    Reg bias_lane;
    MlaSlots sl;                       /* the consumers use its bias layout */
    Acc s, o;
    RowStats rows;
} MlaWg;

static Reg full_bar(const MlaWg *f, int slot, int half) { return f->bar[BAR_FULL + 2 * slot + half]; }
static Reg empty_bar(const MlaWg *f, int slot, int half) { return f->bar[BAR_EMPTY + 2 * slot + half]; }

/* ---- the producer: thread 0 loads Q; the 128 threads gather each pair's two blocks, half by half ---- */

/* Waits until half `half` of `slot` is free, gathers it (with the slot's bias when the half belongs to the
 * slot's own warpgroup, half == slot: the one that reads the bias frees it), and signals it full: an mbarrier
 * arrival once this thread's copies land (cp.async.mbarrier.arrive.noinc), and for the bias's plain stores a
 * release arrival of their own. */
static void gather_half(Kctx *k, MlaWg *f, const MlaSlots *sl, const Reg *idx, Reg shift, int slot, int half,
                        Reg parity) {
    Emit *e = &k->e;
    Reg st = e_reg(e, RC_B64);
    mbar_wait(k, empty_bar(f, slot, half), parity, 0);
    for (int i = 0; i < sl->g.passes; i++)
        mla_slot_gather_cols(k, sl, idx[i], shift, i, half_slab0[half] * WG_SLAB_COLS, half_slabs[half] * WG_SLAB_COLS,
                             half == slot);
    if (half == slot) INS(e, MBAR_ARRIVE, R(st), A(full_bar(f, slot, half), 0));
    INS(e, CP_ASYNC_MBAR_ARRIVE_NOINC, A(full_bar(f, slot, half), 0));
}

/* block b's rows of this thread's gather passes */
static void block_indices(Kctx *k, const MlaSlots *sl, Reg b, Reg *idx) {
    for (int i = 0; i < sl->g.passes; i++) INS(&k->e, MOV_B32, R(idx[i]), R(mla_slot_index_pass(k, sl, b, i)));
}

typedef struct { MlaWg *f; MlaSlots sl; Reg idx[2][8], shift1; } Feed;

/* Pair n: the halves in the order the consumers first need them (S_0 starts on half L, S_1 on half R), each
 * block's next indices read under the copies once its last half is issued. */
static void feed_pair(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    Feed *fd = ctx;
    MlaWg *f = fd->f;
    Emit *e = &k->e;
    (void)n_max, (void)masked;
    Reg parity = e_reg(e, RC_B32), b = e_reg(e, RC_B32);
    INS(e, AND_B32, R(parity), R(n), I(1));
    INS(e, XOR_B32, R(parity), R(parity), I(1));   /* a fresh half counts as freed: the phase before the first */
    gather_half(k, f, &fd->sl, fd->idx[0], NOGUARD, 0, HALF_L, parity);
    gather_half(k, f, &fd->sl, fd->idx[1], fd->shift1, 1, HALF_R, parity);
    gather_half(k, f, &fd->sl, fd->idx[0], NOGUARD, 0, HALF_R, parity);
    INS(e, MAD_LO_U32, R(b), R(n), I(2), I(2));
    block_indices(k, &fd->sl, b, fd->idx[0]);
    gather_half(k, f, &fd->sl, fd->idx[1], fd->shift1, 1, HALF_L, parity);
    INS(e, ADD_U32, R(b), R(b), I(1));
    block_indices(k, &fd->sl, b, fd->idx[1]);
}

static void producer(Kctx *k, void *ctx) {
    MlaWg *f = ctx;
    Emit *e = &k->e;
    INS(e, SETMAXNREG_DEC, I(plan_role_regs(f->p, "producer")));
    mla_cta_token(k, &f->cta, MLA_WG_BM, 32 * f->d->tile.warps);
    MlaWgFeed tiles = {.ntiles = 1, .tiles = {{"q_map", f->q_off, f->d->d}}, .bar_in = f->bar[BAR_Q], .cta = &f->cta};
    Reg st, zero;
    mla_wg_load_tiles(k, &tiles, &st, &zero);
    Feed fd = {.f = f, .sl = {.bn = MLA_WG_BN, .skv = {MLA_WG_BN, MLA_D_QK, f->kv_off}, .bias_off = f->bias_off,
                              .rows_off = -1}};
    mla_slots_init_slabs(k, &fd.sl, f->cta.t, 128);
    /* the rows stay in L2 while Q and O stream past them: both head blocks of a token (h_q 128) and the tokens
     * whose top-k lists overlap read them again (without it an H200 run at h_q 128 fell into a mode 10 % slower
     * in most launches) */
    fd.sl.g.hinted = 1;
    fd.sl.g.policy = e_reg(e, RC_B64);
    INS(e, CREATEPOLICY_EVICT_LAST, R(fd.sl.g.policy), FI(1.0f));
    f->npairs = mla_token_steps(k, fd.sl.nsteps, 2);
    fd.shift1 = kc_imm32(k, f->kv_stride);
    for (int s = 0; s < 2; s++) {
        for (int i = 0; i < fd.sl.g.passes; i++) fd.idx[s][i] = e_reg(e, RC_B32);
        block_indices(k, &fd.sl, kc_imm32(k, s), fd.idx[s]);
    }
    Reg n = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(n), I(0));
    key_loop(k, feed_pair, &fd, n, f->npairs, f->npairs, 0);
}

/* ---- the consumers ---- */

/* The maxima and sums cross between the warpgroups through mbarriers, each thread arriving after its own
 * stores: compute-sanitizer's racecheck then sees them ordered, where it reports such exchanges over named
 * barriers (an arrive on one side, a sync on the other, or a sync on both) as races. */

/* This lane's rows (g and g+8 of the warp) in rowx's [side][parity][64] maxima at the given parity (a register),
 * two pairs deep: a side's maxima of pair n+1 never go where the other side may still read pair n's. */
static Reg rows_at(Kctx *k, MlaWg *f, Reg parity) {
    Emit *e = &k->e;
    Reg a = e_reg(e, RC_B32);
    INS(e, SHR_U32, R(a), R(k->lane), I(2));
    INS(e, ADD_U32, R(a), R(a), R(f->warp_row0));
    INS(e, MAD_LO_U32, R(a), R(a), I(4), R(k->smem));
    INS(e, MAD_LO_U32, R(a), R(parity), I(4 * MLA_WG_BM), R(a));
    return a;
}

#define ROWS_SIDE(side) ((side) * 8 * MLA_WG_BM)   /* bytes of a side's two pairs of maxima */
#define ROWS_SUMS (16 * MLA_WG_BM)                 /* then the sums' [2][64] of the end */

static Reg pair_parity(Kctx *k, Reg n) {
    Reg p = e_reg(&k->e, RC_B32);
    INS(&k->e, AND_B32, R(p), R(n), I(1));
    return p;
}

/* x[h] at byte `off` of this lane's rows, by the lanes with t == 0; then every thread's arrival on bar */
static void rows_put(Kctx *k, Reg a, int off, const Reg *x, Reg bar) {
    Emit *e = &k->e;
    Reg t = e_reg(e, RC_B32), lead = e_reg(e, RC_PRED), st = e_reg(e, RC_B64);
    INS(e, AND_B32, R(t), R(k->lane), I(3));
    INS(e, SETP_EQ_U32, R(lead), R(t), I(0));
    for (int h = 0; h < 2; h++) INSP(e, lead, 0, ST_SHARED_F32, A(a, off + 32 * h), R(x[h]));
    INS(e, MBAR_ARRIVE, R(st), A(bar, 0));
}

/* x[h] <- byte `off` of this lane's rows */
static void rows_get(Kctx *k, Reg a, int off, Reg *x) {
    for (int h = 0; h < 2; h++) {
        x[h] = e_reg(&k->e, RC_F32);
        INS(&k->e, LD_SHARED_F32, R(x[h]), A(a, off + 32 * h));
    }
}

/* side `side`'s maxima of pair n: sent by its warpgroup, received by the other (which returns the parity) */
static void rows_send(Kctx *k, MlaWg *f, const Reg *x, int side, Reg n) {
    rows_put(k, rows_at(k, f, pair_parity(k, n)), f->rowx_off + ROWS_SIDE(side), x, f->bar[BAR_MAX + side]);
}

static Reg rows_recv(Kctx *k, MlaWg *f, Reg *x, int side, Reg n) {
    Reg parity = pair_parity(k, n);
    mbar_wait(k, f->bar[BAR_MAX + side], parity, 0);
    rows_get(k, rows_at(k, f, parity), f->rowx_off + ROWS_SIDE(side), x);
    return parity;
}

/* l += the other warpgroup's l: the rows' sums over both blocks of every pair */
static void sums_swap(Kctx *k, MlaWg *f) {
    Emit *e = &k->e;
    Reg other = e_reg(e, RC_B32), y[2];
    INS(e, XOR_B32, R(other), R(f->c), I(1));
    Reg mine = rows_at(k, f, f->c), theirs = rows_at(k, f, other);   /* [side][64] */
    rows_put(k, mine, f->rowx_off + ROWS_SUMS, f->rows.l, f->bar[BAR_SUMS]);
    mbar_wait(k, f->bar[BAR_SUMS], kc_imm32(k, 0), 0);
    rows_get(k, theirs, f->rowx_off + ROWS_SUMS, y);
    for (int h = 0; h < 2; h++) INS(e, ADD_F32, R(f->rows.l[h]), R(f->rows.l[h]), R(y[h]));
}

/* The half's copies landed; the consumer's proxy fence hands them to wgmma (the producer's cp.async arrival
 * cannot follow the landing with one of its own). */
static void wait_full(Kctx *k, MlaWg *f, int slot, int half, Reg parity) {
    mbar_wait(k, full_bar(f, slot, half), parity, 0);
    INS0(&k->e, FENCE_PROXY_ASYNC_CTA);
}

/* Every thread of the warpgroup frees the half (its own reads are released by its own arrival). */
static void free_half(Kctx *k, MlaWg *f, int slot, int half) {
    Reg st = e_reg(&k->e, RC_B64);
    INS(&k->e, MBAR_ARRIVE, R(st), A(empty_bar(f, slot, half), 0));
}

/* S (+)= Q K_slot^T over the half's slabs of columns: 4 k16 steps a slab. */
static void scores_half(Kctx *k, MlaWg *f, int slot, int half, int first) {
    Emit *e = &k->e;
    INS0(e, WGMMA_FENCE);
    for (int sb = half_slab0[half]; sb < half_slab0[half] + half_slabs[half]; sb++)
        for (int kk = 0; kk < 4; kk++) {
            int at = sb * SLAB_BYTES + kk * 32;
            wg_mma(k, &f->s, smem_desc_at(k, f->q_desc, at), NULL, smem_desc_at(k, f->kv_desc[slot], at), WG_KMAJOR,
                   f->d->dtype, first && sb == half_slab0[half] && !kk ? f->no : f->yes);
        }
    INS0(e, WGMMA_COMMIT);
}

/* O_c += P V_slot[:, O_c's columns]: P from registers (p) or from the K-major tile at shared offset p_off. */
static void values(Kctx *k, MlaWg *f, int c, int slot, const Reg *p, int p_off) {
    Emit *e = &k->e;
    Reg v = wg_desc_mn(k, f->kv_off + slot * f->kv_stride + 4 * c * SLAB_BYTES, SLAB_BYTES);
    Reg pd = p ? v : wg_desc_kmajor(k, p_off);   /* RS: the A descriptor is not read */
    for (int kk = 0; kk < MLA_WG_BN / 16; kk++)
        wg_mma(k, &f->o, p ? v : smem_desc_at(k, pd, kk * 32), p ? &p[4 * kk] : NULL,
               smem_desc_at(k, v, kk * 16 * 128), WG_B_MN, f->d->dtype, f->yes);
    INS0(e, WGMMA_COMMIT);
}

/* S += the slot's bias (0, or -inf for invalid slots) */
static void add_bias(Kctx *k, MlaWg *f, int slot) {
    Reg b = e_reg(&k->e, RC_B32);
    INS(&k->e, ADD_U32, R(b), R(f->bias_lane), I(slot * f->kv_stride));
    mla_add_bias(k, &f->sl, b, &f->s);
}

/* e^(m_old - m_new) in exp2 units, 0 while m_new is still -inf (no key yet: the -inf - -inf of NaN avoided) */
static Reg factor(Kctx *k, MlaWg *f, Reg m_old, Reg m_new) {
    Emit *e = &k->e;
    Reg ms = softmax_scaled_max(k, m_new, f->scale_log2), x = e_reg(e, RC_F32), neg = e_reg(e, RC_F32);
    INS(e, SUB_F32, R(neg), FI(0.0f), R(ms));
    INS(e, FMA_F32, R(x), R(m_old), R(f->scale_log2), R(neg));
    INS(e, EX2_F32, R(x), R(x));
    return x;
}

/* S_0 of the pair of the caller's parity: half L, then (behind_pv) the wait for P_1 V, which frees slot 1's
 * half L, under it, and half R. */
static void wg0_scores(Kctx *k, MlaWg *f, Reg parity, int behind_pv) {
    Emit *e = &k->e;
    wait_full(k, f, 0, HALF_L, parity);
    scores_half(k, f, 0, HALF_L, 1);
    if (behind_pv) {
        INS(e, WGMMA_WAIT, I(1));
        free_half(k, f, 1, HALF_L);
    }
    wait_full(k, f, 0, HALF_R, parity);
    scores_half(k, f, 0, HALF_R, 0);
    INS(e, WGMMA_WAIT, I(0));
}

/* Pair n of warpgroup 0 (S_0 done): the inner loop of its side. */
static void wg0_pair(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    MlaWg *f = ctx;
    Emit *e = &k->e;
    (void)n_max, (void)masked;
    e_comment(e, "warpgroup 0, pair n: blocks 2n (its S) and 2n+1");
    add_bias(k, f, 0);
    Reg m0[2], alpha[2], m1[2], fac[2];
    for (int h = 0; h < 2; h++) {
        m0[h] = softmax_row_max(k, &f->s, &f->rows, 0, h);
        alpha[h] = softmax_exp_row(k, &f->s, &f->rows, f->scale_log2, 0, h, m0[h]);
    }
    rows_send(k, f, m0, 0, n);
    acc_scale_rows(k, &f->o, alpha);
    Reg *p = pack_a_from_acc(k, &f->s, f->d->dtype);
    INS0(e, WGMMA_FENCE);
    values(k, f, 0, 0, p, 0);
    INS(e, WGMMA_WAIT, I(0));
    free_half(k, f, 0, HALF_L);
    Reg parity = rows_recv(k, f, m1, 1, n);
    for (int h = 0; h < 2; h++) {
        fac[h] = factor(k, f, m0[h], m1[h]);
        INS(e, MOV_F32, R(f->rows.m[h]), R(m1[h]));
        INS(e, MUL_F32, R(f->rows.l[h]), R(f->rows.l[h]), R(fac[h]));
    }
    acc_scale_rows(k, &f->s, fac);                   /* P_0 as if taken against m_1, for warpgroup 1 */
    wg_pairs_to_smem(k, pack_a_from_acc(k, &f->s, f->d->dtype), MLA_WG_BN, f->warp_row0, k->smem,
                     f->kv_off + ROPE_SLAB * SLAB_BYTES, SLAB_BYTES);
    INS0(e, FENCE_PROXY_ASYNC_CTA);
    INS(e, BAR_ARRIVE_N, I(NB_P0), I(256));
    /* warpgroup 0 also frees slot 0's half R, which it just wrote: the producer's copies into it are then
     * ordered after these stores by this thread's own arrival, where compute-sanitizer's racecheck does not
     * follow the named barrier to warpgroup 1's arrival */
    free_half(k, f, 0, HALF_R);
    acc_scale_rows(k, &f->o, fac);
    INS(e, BAR_SYNC_N, I(NB_P1), I(256));
    INS0(e, WGMMA_FENCE);
    values(k, f, 0, 1, NULL, f->p1_off);
    Reg next = e_reg(e, RC_B32), last = e_reg(e, RC_PRED);
    int tail = e_label(e), done = e_label(e);
    INS(e, ADD_U32, R(next), R(n), I(1));
    INS(e, SETP_GE_U32, R(last), R(next), R(f->npairs));
    INSP(e, last, 0, BRA_UNI, L(tail));
    INS(e, XOR_B32, R(parity), R(parity), I(1));
    wg0_scores(k, f, parity, 1);
    INS(e, BRA_UNI, L(done));
    e_place(e, tail);
    INS(e, WGMMA_WAIT, I(0));
    free_half(k, f, 1, HALF_L);
    e_place(e, done);
}

/* Pair n of warpgroup 1: the inner loop of its side. */
static void wg1_pair(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    MlaWg *f = ctx;
    Emit *e = &k->e;
    (void)n_max, (void)masked;
    e_comment(e, "warpgroup 1, pair n: blocks 2n+1 (its S) and 2n");
    Reg parity = e_reg(e, RC_B32);
    INS(e, AND_B32, R(parity), R(n), I(1));
    wait_full(k, f, 1, HALF_R, parity);
    scores_half(k, f, 1, HALF_R, 1);
    wait_full(k, f, 1, HALF_L, parity);
    scores_half(k, f, 1, HALF_L, 0);
    INS(e, WGMMA_WAIT, I(0));
    add_bias(k, f, 1);
    Reg m0[2], m1[2], alpha[2];
    rows_recv(k, f, m0, 0, n);
    for (int h = 0; h < 2; h++) {
        m1[h] = softmax_row_max(k, &f->s, &f->rows, 0, h);
        INS(e, MAX_F32, R(m1[h]), R(m1[h]), R(m0[h]));
        alpha[h] = softmax_exp_row(k, &f->s, &f->rows, f->scale_log2, 0, h, m1[h]);
    }
    rows_send(k, f, m1, 1, n);
    Reg *p = pack_a_from_acc(k, &f->s, f->d->dtype);
    wg_pairs_to_smem(k, p, MLA_WG_BN, f->warp_row0, k->smem, f->p1_off, SLAB_BYTES);
    INS0(e, FENCE_PROXY_ASYNC_CTA);
    INS(e, BAR_ARRIVE_N, I(NB_P1), I(256));
    acc_scale_rows(k, &f->o, alpha);
    INS0(e, WGMMA_FENCE);
    values(k, f, 1, 1, p, 0);
    INS(e, BAR_SYNC_N, I(NB_P0), I(256));
    values(k, f, 1, 0, NULL, f->kv_off + ROPE_SLAB * SLAB_BYTES);
    INS(e, WGMMA_WAIT, I(1));
    free_half(k, f, 1, HALF_R);
    INS(e, WGMMA_WAIT, I(0));
    free_half(k, f, 0, HALF_R);
}

static void epilogue(Kctx *k, MlaWg *f) {
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    Reg lse[2];
    softmax_row_sums(k, &f->rows);
    /* and both are past their last S: Q may take O */
    sums_swap(k, f);
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
    int slabs = O_COLS / WG_SLAB_COLS, slab_bytes = MLA_WG_BM * 128;
    Reg src = e_reg(e, RC_B32), col0 = e_reg(e, RC_B32), bar = e_reg(e, RC_B32);
    INS(e, MAD_LO_U32, R(src), R(f->c), I(slabs * slab_bytes), R(k->smem));
    wg_pairs_to_smem(k, pack_a_from_acc(k, &f->o, d->dtype), O_COLS, f->warp_row0, src, f->o_off, slab_bytes);
    INS(e, ADD_U32, R(src), R(src), I(f->o_off));
    INS(e, MUL_LO_U32, R(col0), R(f->c), I(O_COLS));
    INS(e, ADD_U32, R(bar), R(f->c), I(NB_STORE));
    wg_store_cols(k, bar, "o_map", src, slabs, slab_bytes, col0, f->cta.h0, f->cta.t, kc_imm32(k, 0));
}

static void consumer(Kctx *k, void *ctx) {
    MlaWg *f = ctx;
    Emit *e = &k->e;
    INS(e, SETMAXNREG_INC, I(plan_role_regs(f->p, "consumer")));
    mla_cta_token(k, &f->cta, MLA_WG_BM, 32 * f->d->tile.warps);
    f->npairs = mla_token_steps(k, mla_token_steps(k, mla_token_slots(k, f->cta.t, kc_u32(k, "topk")), MLA_WG_BN), 2);
    mla_wg_consumer_id(k, &f->c, &f->warp_row0);
    f->scale_log2 = scale_log2(k);
    f->yes = kc_pred(k, 1);
    f->no = kc_pred(k, 0);
    f->sl = (MlaSlots){.bn = MLA_WG_BN, .bias_off = f->bias_off};
    f->q_desc = wg_desc_kmajor(k, f->q_off);
    for (int s = 0; s < 2; s++) f->kv_desc[s] = wg_desc_kmajor(k, f->kv_off + s * f->kv_stride);
    f->bias_lane = mla_bias_lane(k, &f->sl, kc_imm32(k, 0));
    acc_new(k, &f->s, 1, MLA_WG_BN / 8);
    acc_new(k, &f->o, 1, O_COLS / 8);
    acc_fill(k, &f->o, 0.0f);
    rows_init(k, &f->rows, 1);
    mbar_wait(k, f->bar[BAR_Q], kc_imm32(k, 0), 0);  /* Q landed (also before an empty token's O takes its place) */
    Reg n = e_reg(e, RC_B32), side1 = e_reg(e, RC_PRED), none = e_reg(e, RC_PRED);
    int wg1 = e_label(e), looped = e_label(e);
    INS(e, MOV_B32, R(n), I(0));
    INS(e, SETP_NE_U32, R(side1), R(f->c), I(0));
    INSP(e, side1, 0, BRA_UNI, L(wg1));
    INS(e, SETP_EQ_U32, R(none), R(f->npairs), I(0));
    INSP(e, none, 0, BRA_UNI, L(looped));
    wg0_scores(k, f, kc_imm32(k, 0), 0);             /* S_0 of pair 0 */
    key_loop(k, wg0_pair, f, n, f->npairs, f->npairs, 0);
    INS(e, BRA_UNI, L(looped));
    e_place(e, wg1);
    key_loop(k, wg1_pair, f, n, f->npairs, f->npairs, 0);
    e_place(e, looped);
    epilogue(k, f);
}

void mla_fwd_wg_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module) {
    Kctx kc;
    kctx_begin(&kc, ks);
    MlaWg f = {.d = d, .p = p, .q_off = plan_region(p, "Q"), .kv_off = plan_region(p, "KV.0"),
               .p1_off = plan_region(p, "P1"), .rowx_off = plan_region(p, "rowx"), .o_off = plan_region(p, "O")};
    f.kv_stride = plan_region(p, "KV.1") - f.kv_off;
    f.bias_off = f.kv_off + MLA_WG_BN * d->d * 2;
    /* Q's expect_tx; per (slot, half) full: the 128 producer threads' copies, and their bias stores where the
     * half carries the slot's bias (half == slot); empty: the 128 threads of the warpgroup that frees it, and
     * for slot 0's half R, where warpgroup 0 writes P_0, its 128 too; maxima: the 128 threads of their side;
     * sums: all 256 */
    Opnd counts[NBARS] = {I(1), I(256), I(128), I(128), I(256), I(128), I(256), I(128), I(128), I(128), I(128), I(256)};
    mbar_init(&kc, plan_region(p, "barriers"), NBARS, counts, f.bar);
    mla_wg_roles(&kc, producer, consumer, &f);
    kctx_finish(&kc, module);
}
