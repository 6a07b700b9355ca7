/* mla_bwd main kernel over a CTA pair, wgmma family (sm_90a; tile ctas=2): one token's 64 heads over a cluster
 * of two CTAs, CTA r owning the columns [288 r, 288 r + 288) of dq and dkv (docs/design/mla_bwd_wgmma_pair.md says
 * why: the room to stage dkv for wide bulk reductions).
 *
 *   CTA r holds the 64-column slabs 4 r .. 4 r + 4 of Q, dO (where d_v has them) and each step's gathered rows
 *   (local slab j is global slab 4 r + j; its columns are local [32 r, 32 r + 288)).
 *   the producer warpgroup (setmaxnreg.dec): thread 0 loads Q and dO by TMA; warps 0-1 gather each step's 64 rows
 *     into the one slot; warp 3 adds the staged dkv rows into dkv_accum, one 1152-byte cp.reduce.async.bulk a row.
 *   consumer warpgroup c (0 or 1) owns slots [32 c, 32 c + 32) for S and dP and the local columns
 *   [32 r + 144 c, + 144) of dq and dkv (runs cut at slab boundaries):
 *     for each step n:
 *       S_r = Q K^T, dP_r = dO V^T over the CTA's columns (partial sums)   wgmma m64n32
 *       st.async each thread's S_r and dP_r to the same thread's slot in the peer; add the peer's:
 *       S = S_0 + S_1, dP = dP_0 + dP_1 (both CTAs the same sums)
 *       P = exp(scale S - lse);  dS = scale P (dP - delta)  -> the [heads][slots] tiles P and dS
 *       dq_c += dS K_n[:, own columns]                                       a run at a time
 *       dkv_c = (dS^T Q + P^T dO)[:, own columns]                            (no dO past column 512)
 *       (the slot is free: the producer gathers step n+1)
 *       dkv rows staged, 32 slots at a time (warps 0-1 of each group, then 2-3), for the reducing warp
 *     dq_c -> shared (over Q) -> TMA store; the half slab a CTA shares with its peer by plain stores
 *
 * Each CTA's code is emitted once per rank and consumer group, so every shape and descriptor is a constant.
 * The inner loop is consumer_step(). */
#include "mla_bwd.h"
#include "mla_wg.h"
#include "../templates/mbar.h"
#include "../templates/smem_desc.h"
#include "../templates/wgmma.h"

/* mbarriers: Q and dO landed; the slot full and empty; X[c]: the peer's partials of group c landed (one arrival,
 * the group's thread 0 arming the bytes); XE[c]: the peer's group c added what this CTA sent (a remote arrival
 * from each of its warps); the staging full (the 128 threads of a half) and empty (the reducing warp) */
enum { BAR_IN, BAR_FULL, BAR_EMPTY, BAR_X, BAR_XE = BAR_X + 2, BAR_STG_FULL = BAR_XE + 2, BAR_STG_EMPTY, NBARS };
enum { NB_CONSUMERS = 1, NB_STORE = 2 };        /* named barriers: both consumer warpgroups; then one per group */
#define SLAB_BYTES (MLA_WG_BM * 128)
#define HALF (MLA_WG_BN / 2)                    /* slots of S and dP per warpgroup */
#define GROUP_COLS (MLA_WG2_COLS / 2)          /* dq and dkv columns per consumer warpgroup */
#define X_BYTES (MLA_WG_BM * HALF * 4)          /* one warpgroup's S (or dP) partial, fp32 */
#define STG_ROWS (MLA_WG_BN / 2)                /* slots staged at a time */
#define GATHER_THREADS 64                       /* producer warps 0-1 */
#define REDUCE_WARP 3

typedef struct { int slab, col, n; } Run;       /* local slab, its first column, columns */

typedef struct {
    const AttnDesc *d;
    const Plan *p;
    int q_off, do_off, kv_off, bias_off, ds_off, p_off, x_off, stg_off;
    int r, c;                            /* the rank and consumer warpgroup this code is for */
    Reg bar[NBARS];
    MlaCta cta;
    /* consumers */
    Reg warp_row0, scale, scale_log2, yes, no, nsteps;
    Reg neg_lse2[2], delta[2];
    Reg q_a, do_a, k_b, ds_a, dst_a, pt_a;
    Reg x_own, x_peer, peer_x, peer_xe, lead; /* the thread's slot of X here and in the peer, the peer's barriers */
    Reg bias_lane, stg_lane, stg_parity;
    MlaSlots sl;
    int nrun;
    Run run[4];
    Acc dq[4];
} MlaPair;

/* Warpgroup c of rank r: local columns [32 r + 144 c, + 144), cut at slab boundaries. */
static int group_runs(int r, int c, Run *run) {
    int lo = 32 * r + GROUP_COLS * c, hi = lo + GROUP_COLS, n = 0;
    for (int x = lo; x < hi; n++) {
        int s = x / WG_SLAB_COLS, end = (s + 1) * WG_SLAB_COLS < hi ? (s + 1) * WG_SLAB_COLS : hi;
        run[n] = (Run){s, x % WG_SLAB_COLS, end - x};
        x = end;
    }
    return n;
}

static int global_col(const MlaPair *f, const Run *u) { return 4 * f->r * WG_SLAB_COLS + u->slab * WG_SLAB_COLS + u->col; }

/* Warps 0-1 gather, warp 3 reduces the staged dkv rows, warp 2 has nothing to do. */
static void reducer(Kctx *k, MlaPair *f);
static void producer(Kctx *k, void *ctx) {
    MlaPair *f = ctx;
    Emit *e = &k->e;
    int r = f->r, not_gather = e_label(e), done = e_label(e);
    INS(e, SETMAXNREG_DEC, I(plan_role_regs(f->p, "producer")));
    Reg p = e_reg(e, RC_PRED), it = e_reg(e, RC_B32);
    INS(e, SETP_GE_U32, R(p), R(k->warp), I(GATHER_THREADS / 32));
    INSP(e, p, 0, BRA_UNI, L(not_gather));
    MlaWgFeed feed = {.ntiles = 2,
                      .tiles = {{"q_map", f->q_off, MLA_WG2_SLABS * WG_SLAB_COLS, 4 * r * WG_SLAB_COLS},
                                {"do_map", f->do_off, (MLA_WG2_SLABS - r) * WG_SLAB_COLS, 4 * r * WG_SLAB_COLS}},
                      .bn = MLA_WG_BN, .stages = 1, .kv_off = f->kv_off, .kv_stride = 0, .bias_off = f->bias_off,
                      .rows_off = -1, .bar_in = f->bar[BAR_IN], .full0 = f->bar[BAR_FULL], .empty0 = f->bar[BAR_EMPTY],
                      .it = it, .cta = &f->cta, .gather_threads = GATHER_THREADS, .kv_col0 = 4 * r * WG_SLAB_COLS,
                      .slot_cols = MLA_WG2_SLABS * WG_SLAB_COLS};
    mla_wg_producer(k, &feed);
    INS(e, BRA_UNI, L(done));
    e_place(e, not_gather);
    INS(e, SETP_NE_U32, R(p), R(k->warp), I(REDUCE_WARP));
    INSP(e, p, 0, BRA_UNI, L(done));
    reducer(k, f);
    e_place(e, done);
}

typedef struct { MlaPair *f; Reg idx_row, eff, s_kv, base, src, st; } Reduce;

/* Step n of the reducing warp: each half's 32 staged rows, lane l adding row l (when its slot is valid) into
 * dkv_accum by one copy of the CTA's 288 columns; the staging is free once the copies have read it. */
static void reduce_step(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    Reduce *x = ctx;
    Emit *e = &k->e;
    (void)n_max, (void)masked;
    for (int h = 0; h < 2; h++) {
        Reg slot = e_reg(e, RC_B32), ok, row, addr = e_reg(e, RC_B64), lead = e_reg(e, RC_PRED);
        INS(e, MAD_LO_U32, R(slot), R(n), I(MLA_WG_BN), R(k->lane));
        if (h) INS(e, ADD_U32, R(slot), R(slot), I(STG_ROWS));
        row = mla_slot_row(k, x->idx_row, x->eff, x->s_kv, slot, &ok);
        INS(e, MAD_WIDE_U32, R(addr), R(row), I(4 * MLA_D_QK), R(x->base));
        mbar_wait(k, x->f->bar[BAR_STG_FULL], kc_imm32(k, h), 0);   /* phase 2 n + h */
        INSP(e, ok, 0, BULK_REDUCE_ADD_F32, A(addr, 0), A(x->src, 0), I(4 * MLA_WG2_COLS));
        INS0(e, BULK_COMMIT);
        INS(e, BULK_WAIT_READ, I(0));
        INS(e, BAR_WARP_SYNC, I(-1));
        INS(e, SETP_EQ_U32, R(lead), R(k->lane), I(0));
        INSP(e, lead, 0, MBAR_ARRIVE, R(x->st), A(x->f->bar[BAR_STG_EMPTY], 0));
    }
}

static void reducer(Kctx *k, MlaPair *f) {
    Emit *e = &k->e;
    Reduce x = {.f = f, .idx_row = mla_index_row(k, f->cta.t), .eff = mla_token_slots(k, f->cta.t, kc_u32(k, "topk")),
                .s_kv = kc_u32(k, "s_kv"), .base = e_reg(e, RC_B64), .src = e_reg(e, RC_B32), .st = e_reg(e, RC_B64)};
    Reg nsteps = mla_token_steps(k, x.eff, MLA_WG_BN), n = e_reg(e, RC_B32);
    INS(e, ADD_U64, R(x.base), R(kc_ptr(k, "dkv_accum")), I(4 * MLA_WG2_COLS * f->r));
    INS(e, MAD_LO_U32, R(x.src), R(k->lane), I(MLA_WG2_PITCH), R(k->smem));
    INS(e, ADD_U32, R(x.src), R(x.src), I(f->stg_off));
    INS(e, MOV_B32, R(n), I(0));
    key_loop(k, reduce_step, &x, n, nsteps, nsteps, 0);
    INS(e, BULK_WAIT, I(0));                     /* the sums are in global memory before the kernel ends */
}

/* S_r = Q K^T and dP_r = dO V^T over the CTA's columns and the warpgroup's slots: two commit groups. */
static void partials(Kctx *k, MlaPair *f, Acc *s, Acc *dp) {
    Emit *e = &k->e;
    DType dt = f->d->dtype;
    /* local k steps from the CTA's first column (local 32 r); dP over d_v's columns of the CTA: rank 0 288, 1 224 */
    int first = 2 * f->r, dp_cols = MLA_D_V - MLA_WG2_COLS * f->r, dp_steps = (dp_cols < MLA_WG2_COLS ? dp_cols : MLA_WG2_COLS) / 16;
    acc_new(k, s, 1, HALF / 8);
    acc_new(k, dp, 1, HALF / 8);
    INS0(e, WGMMA_FENCE);
    for (int i = 0; i < MLA_WG2_COLS / 16; i++) {
        int kk = first + i, at = kk / 4 * SLAB_BYTES + kk % 4 * 32;
        wg_mma(k, s, smem_desc_at(k, f->q_a, at), NULL, smem_desc_at(k, f->k_b, at), WG_KMAJOR, dt, i ? f->yes : f->no);
    }
    INS0(e, WGMMA_COMMIT);
    for (int i = 0; i < dp_steps; i++) {
        int kk = first + i, at = kk / 4 * SLAB_BYTES + kk % 4 * 32;
        wg_mma(k, dp, smem_desc_at(k, f->do_a, at), NULL, smem_desc_at(k, f->k_b, at), WG_KMAJOR, dt, i ? f->yes : f->no);
    }
    INS0(e, WGMMA_COMMIT);
}

/* The thread's 16 values of acc to the same thread's slot of the peer's X (at byte off), completing there. */
static void send(Kctx *k, MlaPair *f, const Acc *acc, int off) {
    for (int i = 0; i < 4; i++)
        INS(&k->e, ST_ASYNC_V4_B32, A(f->x_peer, off + i * 2048),
            V4(acc->r[4 * i], acc->r[4 * i + 1], acc->r[4 * i + 2], acc->r[4 * i + 3]), A(f->peer_x, 0));
}

/* acc += the peer's partial from this thread's slot of X (at byte off): own + peer on both ranks, which
 * fp32 addition makes the same sum. */
static void add_peer(Kctx *k, MlaPair *f, Acc *acc, int off) {
    Emit *e = &k->e;
    for (int i = 0; i < 4; i++) {
        Reg v[4];
        for (int j = 0; j < 4; j++) v[j] = e_reg(e, RC_F32);
        INS(e, LD_SHARED_V4_B32, V4(v[0], v[1], v[2], v[3]), A(f->x_own, off + i * 2048));
        for (int j = 0; j < 4; j++) INS(e, ADD_F32, R(acc->r[4 * i + j]), R(acc->r[4 * i + j]), R(v[j]));
    }
}

/* S and dP summed over the pair: send ours once the peer added our last ones, add the peer's once they landed,
 * arm X for the next step's bytes (thread 0 of the group) and tell the peer its slot is free (a lane of each warp). */
static void exchange(Kctx *k, MlaPair *f, Acc *s, Acc *dp, Reg n) {
    Emit *e = &k->e;
    Reg parity = e_reg(e, RC_B32), before = e_reg(e, RC_B32), st = e_reg(e, RC_B64), lane0 = e_reg(e, RC_PRED);
    INS(e, AND_B32, R(parity), R(n), I(1));
    INS(e, XOR_B32, R(before), R(parity), I(1));
    INS(e, WGMMA_WAIT, I(1));                        /* S_r is done */
    mbar_wait(k, f->bar[BAR_XE + f->c], before, 1);  /* the peer added step n-1's (a fresh barrier: the phase before) */
    send(k, f, s, 0);
    INS(e, WGMMA_WAIT, I(0));
    send(k, f, dp, X_BYTES);
    mbar_wait(k, f->bar[BAR_X + f->c], parity, 1);
    add_peer(k, f, s, 0);
    add_peer(k, f, dp, X_BYTES);
    INSP(e, f->lead, 0, MBAR_ARRIVE_EXPECT_TX, R(st), A(f->bar[BAR_X + f->c], 0), I(2 * X_BYTES));
    INS(e, BAR_WARP_SYNC, I(-1));                    /* every lane of the warp read its slot */
    INS(e, SETP_EQ_U32, R(lane0), R(k->lane), I(0));
    INSP(e, lane0, 0, MBAR_ARRIVE_REMOTE, SR("_"), A(f->peer_xe, 0));
}

/* dq_c += dS K[:, own columns], all 64 slots of the step (K = 4 steps of 16 slots), a run at a time. */
static void dq_products(Kctx *k, MlaPair *f) {
    DType dt = f->d->dtype;
    INS0(&k->e, WGMMA_FENCE);
    for (int kk = 0; kk < MLA_WG_BN / 16; kk++)
        for (int q = 0; q < f->nrun; q++) {
            const Run *u = &f->run[q];
            Reg b = wg_desc_mn(k, f->kv_off + u->slab * SLAB_BYTES + 2 * u->col + kk * 16 * 128, SLAB_BYTES);
            wg_mma(k, &f->dq[q], smem_desc_at(k, f->ds_a, kk * 32), NULL, b, WG_B_MN, dt, f->yes);
        }
    INS0(&k->e, WGMMA_COMMIT);
}

/* dkv of the group's columns, a run at a time: dS^T Q, and P^T dO where d_v has the columns; one commit group. */
static void dkv_products(Kctx *k, MlaPair *f, Acc *acc) {
    DType dt = f->d->dtype;
    INS0(&k->e, WGMMA_FENCE);
    for (int q = 0; q < f->nrun; q++) {
        const Run *u = &f->run[q];
        int col = u->slab * SLAB_BYTES + 2 * u->col, with_do = global_col(f, u) < MLA_D_V;
        acc_new(k, &acc[q], 1, u->n / 8);
        for (int kk = 0; kk < MLA_WG_BM / 16; kk++) {   /* K = the heads, 16 (2048 bytes of an MN-major slab) a step */
            int at = kk * 16 * 128;
            wg_mma(k, &acc[q], smem_desc_at(k, f->dst_a, at), NULL, wg_desc_mn(k, f->q_off + col + at, SLAB_BYTES),
                   WG_A_MN | WG_B_MN, dt, kk ? f->yes : f->no);
        }
        for (int kk = 0; with_do && kk < MLA_WG_BM / 16; kk++) {
            int at = kk * 16 * 128;
            wg_mma(k, &acc[q], smem_desc_at(k, f->pt_a, at), NULL, wg_desc_mn(k, f->do_off + col + at, SLAB_BYTES),
                   WG_A_MN | WG_B_MN, dt, f->yes);
        }
    }
    INS0(&k->e, WGMMA_COMMIT);
}

/* The warp's 16 slots of dkv into the staging rows (its half's turn: warps 0-1 of each group the first 32 slots,
 * 2-3 the last), once the reducing warp has read what was there; then the half's staging is full. Row g of the
 * lane at stg_lane, columns from the CTA's first. */
static void stage(Kctx *k, MlaPair *f, const Acc *acc) {
    Emit *e = &k->e;
    Reg st = e_reg(e, RC_B64);
    mbar_wait(k, f->bar[BAR_STG_EMPTY], f->stg_parity, 0);
    for (int q = 0; q < f->nrun; q++) {
        const Run *u = &f->run[q];
        int col = global_col(f, u) - MLA_WG2_COLS * f->r;
        for (int j = 0; j < u->n / 8; j++)
            for (int h = 0; h < 2; h++)
                INS(e, ST_SHARED_V2_F32, A(f->stg_lane, h * 8 * MLA_WG2_PITCH + 4 * (col + 8 * j)),
                    V2(ACC(&acc[q], 0, j, 2 * h), ACC(&acc[q], 0, j, 2 * h + 1)));
    }
    INS0(e, FENCE_PROXY_ASYNC_CTA);                  /* the copies read them through the async proxy */
    INS(e, MBAR_ARRIVE, R(st), A(f->bar[BAR_STG_FULL], 0));
}

/* Step n of a consumer warpgroup: the inner loop of the kernel. */
static void consumer_step(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    MlaPair *f = ctx;
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    (void)n_max, (void)masked;
    e_comment(e, "top-k step n");
    Reg parity = e_reg(e, RC_B32), st = e_reg(e, RC_B64);
    INS(e, AND_B32, R(parity), R(n), I(1));
    mbar_wait(k, f->bar[BAR_FULL], parity, 0);
    Acc s, dp, kv[4];
    partials(k, f, &s, &dp);
    exchange(k, f, &s, &dp, n);
    mla_add_bias(k, &f->sl, f->bias_lane, &s);
    mla_bwd_probabilities(k, &s, &dp, f->scale_log2, f->scale, f->neg_lse2, f->delta);
    Reg *p = pack_a_from_acc(k, &s, d->dtype), *ds = pack_a_from_acc(k, &dp, d->dtype);
    INS(e, BAR_SYNC_N, I(NB_CONSUMERS), I(256));     /* both are done with the last step's P and dS */
    Reg chunk = kc_imm32(k, f->c * HALF / 8);
    wg_pairs_to_smem_at(k, p, HALF, f->warp_row0, k->smem, f->p_off, chunk);
    wg_pairs_to_smem_at(k, ds, HALF, f->warp_row0, k->smem, f->ds_off, chunk);
    INS0(e, FENCE_PROXY_ASYNC_CTA);                  /* both warpgroups' wgmma read them */
    INS(e, BAR_SYNC_N, I(NB_CONSUMERS), I(256));
    dq_products(k, f);
    dkv_products(k, f, kv);
    INS(e, WGMMA_WAIT, I(1));                        /* dq's products are done: the slot is the producer's */
    INS(e, MBAR_ARRIVE, R(st), A(f->bar[BAR_EMPTY], 0));
    INS(e, WGMMA_WAIT, I(0));
    stage(k, f, kv);
}

/* Descriptors and addresses of warpgroup c. */
static void consumer_bases(Kctx *k, MlaPair *f) {
    Emit *e = &k->e;
    int c = f->c;
    Reg peer = e_reg(e, RC_B32), g = e_reg(e, RC_B32), t4 = e_reg(e, RC_B32), wt = e_reg(e, RC_B32);
    Reg row = e_reg(e, RC_B32), half = e_reg(e, RC_PRED);
    f->q_a = wg_desc_kmajor(k, f->q_off);
    f->do_a = wg_desc_kmajor(k, f->do_off);
    f->k_b = wg_desc_kmajor(k, f->kv_off + c * HALF * 128);
    f->ds_a = wg_desc_kmajor(k, f->ds_off);
    f->dst_a = wg_desc_mn(k, f->ds_off, SLAB_BYTES);
    f->pt_a = wg_desc_mn(k, f->p_off, SLAB_BYTES);
    f->bias_lane = mla_bias_lane(k, &f->sl, kc_imm32(k, c * HALF));
    f->nrun = group_runs(f->r, c, f->run);
    /* the exchange: thread w of the group writes and reads 16 bytes at w * 16 of each 2048 (a warp's accesses
     * whole 512-byte lines), S's four then dP's */
    INS(e, MOV_B32, R(peer), I(f->r ^ 1));
    INS(e, AND_B32, R(wt), R(k->tid), I(127));
    f->x_own = e_reg(e, RC_B32), f->x_peer = e_reg(e, RC_B32), f->peer_x = e_reg(e, RC_B32);
    f->peer_xe = e_reg(e, RC_B32), f->lead = e_reg(e, RC_PRED);
    INS(e, SETP_EQ_U32, R(f->lead), R(wt), I(0));
    INS(e, MAD_LO_U32, R(f->x_own), R(wt), I(16), R(k->smem));
    INS(e, ADD_U32, R(f->x_own), R(f->x_own), I(f->x_off + c * 2 * X_BYTES));
    INS(e, MAPA_SHARED, R(f->x_peer), R(f->x_own), R(peer));
    INS(e, MAPA_SHARED, R(f->peer_x), R(f->bar[BAR_X + c]), R(peer));
    INS(e, MAPA_SHARED, R(f->peer_xe), R(f->bar[BAR_XE + c]), R(peer));
    /* staging: the lane's rows g (+ 8) of its warp's 16 slots, the half's rows; columns 2 t (+ 1) of each 8 */
    INS(e, SHR_U32, R(g), R(k->lane), I(2));
    INS(e, AND_B32, R(t4), R(k->lane), I(3));
    INS(e, SHL_B32, R(t4), R(t4), I(3));
    INS(e, AND_B32, R(row), R(f->warp_row0), I(STG_ROWS - 1));
    INS(e, ADD_U32, R(row), R(row), R(g));
    f->stg_lane = e_reg(e, RC_B32), f->stg_parity = e_reg(e, RC_B32);
    INS(e, MAD_LO_U32, R(f->stg_lane), R(row), I(MLA_WG2_PITCH), R(k->smem));
    INS(e, ADD_U32, R(f->stg_lane), R(f->stg_lane), R(t4));
    INS(e, ADD_U32, R(f->stg_lane), R(f->stg_lane), I(f->stg_off));
    /* half h of step n stages in phase 2 n + h, after phase 2 n + h - 1's copies read: parity h ^ 1 */
    INS(e, SETP_GE_U32, R(half), R(f->warp_row0), I(STG_ROWS));
    INS(e, SELP_B32, R(f->stg_parity), I(0), I(1), R(half));
}

/* dq_c (bf16) into the staging slabs over Q once both warpgroups are past their last product reading Q, then by
 * TMA, each group two of the CTA's four whole slabs; the slab the pair shares (global 4, columns 256-319) by plain
 * stores of the CTA's half, heads past h_q not written. */
static void epilogue(Kctx *k, MlaPair *f) {
    Emit *e = &k->e;
    DType dt = f->d->dtype;
    int r = f->r, c = f->c, shared = r ? 0 : 4;      /* the local slab the pair shares */
    INS(e, BAR_SYNC_N, I(NB_CONSUMERS), I(256));
    for (int q = 0; q < f->nrun; q++) {
        const Run *u = &f->run[q];
        Reg *pairs = pack_a_from_acc(k, &f->dq[q], dt);
        if (u->slab != shared) {
            wg_pairs_to_smem_from(k, pairs, u->n, f->warp_row0, k->smem, f->q_off + u->slab * SLAB_BYTES, SLAB_BYTES,
                                  u->col);
            continue;
        }
        Reg g = e_reg(e, RC_B32), t4 = e_reg(e, RC_B32);
        INS(e, SHR_U32, R(g), R(k->lane), I(2));
        INS(e, AND_B32, R(t4), R(k->lane), I(3));
        for (int h = 0; h < 2; h++) {
            Reg head = e_reg(e, RC_B32), ok = e_reg(e, RC_PRED), a = e_reg(e, RC_B64);
            INS(e, ADD_U32, R(head), R(f->cta.h0), R(f->warp_row0));
            INS(e, ADD_U32, R(head), R(head), R(g));
            if (h) INS(e, ADD_U32, R(head), R(head), I(8));
            INS(e, SETP_LT_U32, R(ok), R(head), R(f->cta.h_q));
            INS(e, SELP_B32, R(head), R(head), I(0), R(ok));   /* no address past the tensor is formed */
            Reg base = tensor_base(k, "dq", 's', f->cta.t, 'h', head);
            INS(e, MAD_WIDE_U32, R(a), R(t4), I(4), R(base));
            for (int j = 0; j < u->n / 8; j++)
                INSP(e, ok, 0, ST_GLOBAL_B32, A(a, 2 * (global_col(f, u) + 8 * j)), R(pairs[4 * (j / 2) + 2 * (j % 2) + h]));
        }
    }
    INS0(e, FENCE_PROXY_ASYNC_CTA);
    INS(e, BAR_SYNC_N, I(NB_CONSUMERS), I(256));     /* slabs written by both groups are whole */
    int first = (r ? 1 : 0) + 2 * c;                 /* the group's two local slabs */
    Reg src = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(src), R(k->smem), I(f->q_off + first * SLAB_BYTES));
    wg_store_cols(k, kc_imm32(k, NB_STORE + c), "dq_map", src, 2, SLAB_BYTES, kc_imm32(k, (4 * r + first) * WG_SLAB_COLS),
                  f->cta.h0, f->cta.t, kc_imm32(k, 0));
}

/* Warpgroup c's whole loop and epilogue, c a constant. */
static void consumer_side(Kctx *k, void *ctx, int c) {
    MlaPair *f = ctx;
    f->c = c;
    consumer_bases(k, f);
    for (int q = 0; q < f->nrun; q++) {
        acc_new(k, &f->dq[q], 1, f->run[q].n / 8);
        acc_fill(k, &f->dq[q], 0.0f);
    }
    mbar_wait(k, f->bar[BAR_IN], kc_imm32(k, 0), 0); /* Q and dO landed (also before an empty token's dq takes Q's place) */
    Reg n = e_reg(&k->e, RC_B32);
    INS(&k->e, MOV_B32, R(n), I(0));
    key_loop(k, consumer_step, f, n, f->nsteps, f->nsteps, 0);
    epilogue(k, f);
}

static void consumer(Kctx *k, void *ctx) {
    MlaPair *f = ctx;
    Emit *e = &k->e;
    INS(e, SETMAXNREG_INC, I(plan_role_regs(f->p, "consumer")));
    f->nsteps = mla_token_steps(k, mla_token_slots(k, f->cta.t, kc_u32(k, "topk")), MLA_WG_BN);
    Reg c, second = e_reg(e, RC_PRED);
    mla_wg_consumer_id(k, &c, &f->warp_row0);
    f->scale = kc_f32(k, "softmax_scale");
    f->scale_log2 = scale_log2(k);
    f->yes = kc_pred(k, 1);
    f->no = kc_pred(k, 0);
    f->sl = (MlaSlots){.bn = MLA_WG_BN, .bias_off = f->bias_off, .s_kv = kc_u32(k, "s_kv")};
    mla_bwd_row_stats(k, &f->cta, f->warp_row0, f->neg_lse2, f->delta);
    wg_each_consumer(k, c, second, 2, consumer_side, f);
}

/* Rank r's CTA: the roles, each with its rank's constants. */
static void rank_side(Kctx *k, void *ctx, int r) {
    MlaPair *f = ctx;
    Reg is_consumer = e_reg(&k->e, RC_PRED);
    f->r = r;
    INS(&k->e, SETP_GE_U32, R(is_consumer), R(k->warp), I(4));
    wg_roles(k, is_consumer, producer, consumer, f);
}

void mla_bwd_wg_pair_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module) {
    Kctx kc;
    kctx_begin(&kc, ks);
    Kctx *k = &kc;
    Emit *e = &k->e;
    MlaPair f = {.d = d, .p = p, .q_off = plan_region(p, "Q"), .do_off = plan_region(p, "dO"),
                 .kv_off = plan_region(p, "KV"), .bias_off = plan_region(p, "bias"), .ds_off = plan_region(p, "dS"),
                 .p_off = plan_region(p, "P"), .x_off = plan_region(p, "X"), .stg_off = plan_region(p, "staging")};
    Opnd counts[NBARS] = {[BAR_IN] = I(1), [BAR_FULL] = I(GATHER_THREADS), [BAR_EMPTY] = I(256), [BAR_X] = I(1),
                          [BAR_X + 1] = I(1), [BAR_XE] = I(4), [BAR_XE + 1] = I(4), [BAR_STG_FULL] = I(128),
                          [BAR_STG_EMPTY] = I(1)};
    mbar_init(k, plan_region(p, "barriers"), NBARS, counts, f.bar);
    /* X's first phase armed before the peer can send (its later ones by each group once it added the peer's) */
    Reg t0 = e_reg(e, RC_PRED), st = e_reg(e, RC_B64), rank = e_reg(e, RC_B32), second = e_reg(e, RC_PRED);
    INS(e, SETP_EQ_U32, R(t0), R(k->tid), I(0));
    for (int c = 0; c < 2; c++) INSP(e, t0, 0, MBAR_ARRIVE_EXPECT_TX, R(st), A(f.bar[BAR_X + c], 0), I(2 * X_BYTES));
    INS0(e, CLUSTER_ARRIVE);                         /* no peer arrives on or sends to a barrier before it exists */
    INS0(e, CLUSTER_WAIT);
    /* the pair is ctaid.x 2 t, 2 t + 1 (the cluster's ranks 0, 1) */
    mla_cta_token(k, &f.cta, MLA_WG_BM, 32 * d->tile.warps);
    INS(e, SHR_U32, R(f.cta.t), R(f.cta.t), I(1));
    INS(e, MOV_B32, R(rank), SR("%cluster_ctarank"));
    wg_each_consumer(k, rank, second, 2, rank_side, &f);
    INS0(e, CLUSTER_ARRIVE);                         /* the peer's last arrivals and sends are in before either exits */
    INS0(e, CLUSTER_WAIT);
    kctx_finish(k, module);
}
