/* mla_bwd dq kernel of the CTA-pair plan (tcgen05, cta_group::2, cluster of
 * 2): one token's 128 heads over a CTA pair, 64 per CTA (rank r: heads
 * 64 r .. 64 r + 63 of the head block). Heads are the MMAs' M (split over the
 * pair), the step's 64 slots their N (each CTA gathers 32: the N split of B):
 *
 *   for each pair (token t, heads [128 z, 128 z + 128)):
 *     load Q[t, the CTA's 64 heads], dO[t, ...]
 *     for each step n over the token's slots (64 at a time, whole 128-slot blocks):
 *       X = kv[indices[t, 64n + 32r ...]]          (this CTA's 32 slots, all 576 columns)
 *       Y = kv[indices[t, 64n ...]][this CTA's d_qk slabs]   (all 64 slots: B of dQ)
 *       S = Q X^T;  dP = dO V^T                      (M=128 over the pair, N=64)
 *       P = exp(scale S - lse);  dS = scale P (dP - delta)  -> ps (for the dkv kernel)
 *       dQ += dS Y                                   (N=256 x 2 and the rope N=128)
 *     store dq
 *
 * Roles (192 threads a CTA), joined by mbarriers (mla_bwd_pair.h):
 *   producer (warp 5)           gathers X and Y (TMA gather4) once dQ of step n-1 landed;
 *                               the odd CTA relays "mine landed" to the even CTA's FULL
 *   issuer (warp 4 of rank 0)   S, dP | dQ for the pair (tcgen05.mma.cta_group::2)
 *   compute (warps 0-3)         thread = (head, half of the slots): P, dS -> smem and ps
 * The loops: produce(), issue(), compute(). */
#include "mla_bwd_pair.h"
#include <math.h>
#include <string.h>

typedef struct {
    const AttnDesc *d;
    int q, dout, x, y, ds, bars;           /* shared regions */
    int c_dq, c_rope, c_s, c_dp;           /* TMEM columns */
    Reg t, rank, h0, h_q, s_kv, eff, nsteps, topk_pad;
    Reg kv_map, idx_row;
    Reg q_k, do_k, x_k, ds_k, y_mn;        /* the issuer's descriptors, at each operand's first byte */
    Reg taddr, tq, leader, yes, no;
    Reg bar[PB_NBARS], lead_full, lead_p;  /* the even CTA's FULL and P (cluster addresses) */
    Reg scale, scale_log2;
    Reg hl, half, neg_lse2, delta, ps_p;   /* compute: its head (in the CTA), slot half, stats, P row of ps */
} Pair;

static Reg parity(Kctx *k, Reg n) {
    Reg p = e_reg(&k->e, RC_B32);
    INS(&k->e, AND_B32, R(p), R(n), I(1));
    return p;
}

/* Barriers (thread 0), the pair's TMEM (warp 0 of each CTA), then a cluster
 * sync so no peer arrives on a barrier before it exists. */
static void setup(Kctx *k, Pair *f, int cols) {
    Emit *e = &k->e;
    Reg even = e_reg(e, RC_PRED), nfull = e_reg(e, RC_B32), zero = kc_imm32(k, 0);
    INS(e, SETP_EQ_U32, R(even), R(f->rank), I(0));
    INS(e, SELP_B32, R(nfull), I(2), I(1), R(even));        /* the even CTA's own arrival and the odd one's relay */
    Opnd c[PB_NBARS] = {[PB_FULL] = R(nfull), [PB_S] = I(1), [PB_P] = I(2 * 128), [PB_DQ] = I(1)};
    f->taddr = umma_prologue(k, f->bars, PB_NBARS, c, f->bar, cols, 1, &f->tq);
    f->lead_full = e_reg(e, RC_B32), f->lead_p = e_reg(e, RC_B32);
    INS(e, MAPA_SHARED, R(f->lead_full), R(f->bar[PB_FULL]), R(zero));
    INS(e, MAPA_SHARED, R(f->lead_p), R(f->bar[PB_P]), R(zero));
}

/* The row coordinates of slots slot0 .. slot0 + 3 of the token: the index,
 * or -1 (out of the map: zero-filled, nothing read) past the token's count
 * or for an index that is not a kv row. */
static void coords(Kctx *k, Pair *f, Reg slot0, Reg *c) {
    for (int q = 0; q < 4; q++) {
        Reg slot = e_reg(&k->e, RC_B32);
        INS(&k->e, ADD_U32, R(slot), R(slot0), I(q));
        c[q] = mla_slot_row(k, f->idx_row, f->eff, f->s_kv, slot, NULL);
    }
}

/* One gather4 of four rows' 64 columns from `col` into dst, for lanes where `on`. */
static void gather(Kctx *k, Pair *f, Reg on, Reg dst, Reg col, const Reg *c) {
    Reg cs[5] = {col, c[0], c[1], c[2], c[3]};
    INSP(&k->e, on, 0, TMA_GATHER4, A(dst, 0), TA(f->kv_map, 5, cs), A(f->bar[PB_FULL], 0));
}

/* The producer warp's step n. X: this CTA's 32 slots (lane l: group l % 8,
 * slabs s with s % 4 == l / 8); Y: all 64 slots (group l % 16) of this CTA's
 * five slabs i with i % 2 == l / 16. */
static void produce(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    Pair *f = ctx;
    (void)n_max, (void)masked;
    Emit *e = &k->e;
    Reg first = e_reg(e, RC_PRED), lead = e_reg(e, RC_PRED), pn = e_reg(e, RC_B32);
    int go = e_label(e);
    INS(e, SETP_EQ_U32, R(first), R(n), I(0));
    INSP(e, first, 0, BRA_UNI, L(go));
    INS(e, SUB_U32, R(pn), R(n), I(1));
    umma_wait_cluster(k, f->bar[PB_DQ], parity(k, pn));      /* dQ of step n-1 read X, Y and dS */
    e_place(e, go);
    Reg s0 = e_reg(e, RC_B32), gx = e_reg(e, RC_B32), gy = e_reg(e, RC_B32), cx[4], cy[4];
    INS(e, MUL_LO_U32, R(s0), R(n), I(PAIR_STEP));
    INS(e, AND_B32, R(gx), R(k->lane), I(7));
    INS(e, MAD_LO_U32, R(gx), R(f->rank), I(8), R(gx));
    INS(e, MAD_LO_U32, R(gx), R(gx), I(4), R(s0));
    INS(e, AND_B32, R(gy), R(k->lane), I(15));
    INS(e, MAD_LO_U32, R(gy), R(gy), I(4), R(s0));
    coords(k, f, gx, cx);
    coords(k, f, gy, cy);
    Reg st = e_reg(e, RC_B64), bytes = kc_imm32(k, (PAIR_STEP / 2 * f->d->d + PAIR_STEP * PAIR_Y_SLABS * 64) * 2);
    INS(e, SETP_EQ_U32, R(lead), R(k->lane), I(0));
    INSP(e, lead, 0, MBAR_ARRIVE_EXPECT_TX, R(st), A(f->bar[PB_FULL], 0), R(bytes));
    Reg ox = e_reg(e, RC_B32), oy = e_reg(e, RC_B32), lx = e_reg(e, RC_B32), ly = e_reg(e, RC_B32);
    INS(e, AND_B32, R(ox), R(k->lane), I(7));
    INS(e, MAD_LO_U32, R(ox), R(ox), I(4 * 128), R(k->smem));
    INS(e, AND_B32, R(oy), R(k->lane), I(15));
    INS(e, MAD_LO_U32, R(oy), R(oy), I(4 * 128), R(k->smem));
    INS(e, SHR_U32, R(lx), R(k->lane), I(3));
    INS(e, SHR_U32, R(ly), R(k->lane), I(4));
    for (int s = 0; s < f->d->d / UMMA_SLAB_COLS; s++) {
        Reg on = e_reg(e, RC_PRED), dst = e_reg(e, RC_B32);
        INS(e, SETP_EQ_U32, R(on), R(lx), I(s % 4));
        INS(e, ADD_U32, R(dst), R(ox), I(f->x + s * (PAIR_STEP / 2) * 128));
        gather(k, f, on, dst, kc_imm32(k, s * UMMA_SLAB_COLS), cx);
    }
    for (int i = 0; i < PAIR_Y_SLABS; i++) {
        Reg on = e_reg(e, RC_PRED), dst = e_reg(e, RC_B32), col = e_reg(e, RC_B32);
        INS(e, SETP_EQ_U32, R(on), R(ly), I(i % 2));
        INS(e, ADD_U32, R(dst), R(oy), I(f->y + i * PAIR_STEP * 128));
        if (i < 4) INS(e, MAD_LO_U32, R(col), R(f->rank), I(128), I((i / 2) * 256 + (i % 2) * 64));
        else INS(e, MOV_B32, R(col), I(512));
        gather(k, f, on, dst, col, cy);
    }
    /* the odd CTA: once its rows landed, one arrival on the even CTA's FULL */
    Reg odd = e_reg(e, RC_PRED);
    int even = e_label(e);
    INS(e, SETP_NE_U32, R(odd), R(f->rank), I(0));
    INSP(e, odd, 1, BRA_UNI, L(even));
    umma_wait(k, f->bar[PB_FULL], parity(k, n));
    INSP(e, lead, 0, MBAR_ARRIVE_REMOTE, SR("_"), A(f->lead_full, 0));
    e_place(e, even);
}

/* The issuer (warp 4 of the even CTA) step n: every lane waits, lane 0 issues for the pair. */
static void issue(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    Pair *f = ctx;
    (void)n_max, (void)masked;
    Emit *e = &k->e;
    DType dt = f->d->dtype;
    Reg mask = e_reg(e, RC_B16), acc = e_reg(e, RC_PRED);
    INS(e, MOV_B16, R(mask), I(3));
    umma_wait_cluster(k, f->bar[PB_FULL], parity(k, n));
    int past = umma_leader_only(k, f->leader);
    /* S = Q X^T (K = d_qk) and dP = dO V^T (K = d_v), 16 at a time along the 128B slabs */
    Reg is = kc_imm32(k, umma_idesc_f16(dt, 128, PAIR_STEP, 0, 0));
    for (int c = 0; c < f->d->d / 16; c++) {
        Reg a = umma_desc_at(k, f->q_k, (c / 4) * PAIR_CTA_HEADS * 128 + 32 * (c % 4));
        Reg b = umma_desc_at(k, f->x_k, (c / 4) * (PAIR_STEP / 2) * 128 + 32 * (c % 4));
        INS(e, TC_MMA_2_F16_SS, A(f->taddr, f->c_s), R(a), R(b), R(is), R(c ? f->yes : f->no));
    }
    for (int c = 0; c < f->d->dv / 16; c++) {
        Reg a = umma_desc_at(k, f->do_k, (c / 4) * PAIR_CTA_HEADS * 128 + 32 * (c % 4));
        Reg b = umma_desc_at(k, f->x_k, (c / 4) * (PAIR_STEP / 2) * 128 + 32 * (c % 4));
        INS(e, TC_MMA_2_F16_SS, A(f->taddr, f->c_dp), R(a), R(b), R(is), R(c ? f->yes : f->no));
    }
    INS(e, TC_COMMIT_2_MC, A(f->bar[PB_S], 0), R(mask));
    e_place(e, past);
    umma_wait_cluster(k, f->bar[PB_P], parity(k, n));
    INS(e, SETP_NE_U32, R(acc), R(n), I(0));                  /* false on the first step: dQ starts at zero */
    past = umma_leader_only(k, f->leader);
    /* dQ += dS Y: A = dS (K-major, the step's 64 slots in one 128-byte row), B = Y MN-major (d along N) */
    Reg iq = kc_imm32(k, umma_idesc_f16(dt, 128, 256, 0, 1)), ir = kc_imm32(k, umma_idesc_f16(dt, 128, 128, 0, 1));
    for (int j = 0; j < 3; j++)
        for (int kk = 0; kk < PAIR_STEP / 16; kk++) {
            Reg a = umma_desc_at(k, f->ds_k, 32 * kk);
            Reg b = umma_desc_at(k, f->y_mn, j * 2 * PAIR_STEP * 128 + kk * 16 * 128);
            INS(e, TC_MMA_2_F16_SS, A(f->taddr, j < 2 ? f->c_dq + 128 * j : f->c_rope), R(a), R(b), R(j < 2 ? iq : ir),
                R(kk ? f->yes : acc));
        }
    INS(e, TC_COMMIT_2_MC, A(f->bar[PB_DQ], 0), R(mask));
    e_place(e, past);
}

/* -lse log2(e) and delta of the thread's head (past h_q: -inf and 0, so P = 0) */
static void head_stats(Kctx *k, Pair *f) {
    Emit *e = &k->e;
    Reg head = e_reg(e, RC_B32), ok = e_reg(e, RC_PRED), row = e_reg(e, RC_B32), a = e_reg(e, RC_B64);
    Reg al = e_reg(e, RC_B64), ad = e_reg(e, RC_B64), l = e_reg(e, RC_F32);
    f->neg_lse2 = e_reg(e, RC_F32), f->delta = e_reg(e, RC_F32);
    INS(e, ADD_U32, R(head), R(f->h0), R(f->hl));
    INS(e, SETP_LT_U32, R(ok), R(head), R(f->h_q));
    INS(e, MAD_LO_U32, R(row), R(f->t), R(f->h_q), R(head));
    INS(e, MUL_WIDE_U32, R(a), R(row), I(4));
    INS(e, ADD_U64, R(al), R(a), R(kc_ptr(k, "lse")));
    INS(e, ADD_U64, R(ad), R(a), R(kc_ptr(k, "delta")));
    INS(e, MOV_F32, R(l), FI(INFINITY));
    INS(e, MOV_F32, R(f->delta), FI(0.0f));
    INSP(e, ok, 0, LD_GLOBAL_F32, R(l), A(al, 0));
    INSP(e, ok, 0, LD_GLOBAL_F32, R(f->delta), A(ad, 0));
    INS(e, MUL_F32, R(f->neg_lse2), R(l), FI(-1.4426950408889634f));
}

/* The compute warps' step n: the thread's head hl and slots 64n + 32 half
 * .. + 31 (Layout B: lanes 0-63 hold the even CTA's 32 slots, 64-127 the odd
 * one's). P and dS into ps; dS into the A tile of dQ. */
static void compute(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    Pair *f = ctx;
    (void)n_max, (void)masked;
    Emit *e = &k->e;
    Reg s[32], dp[32], row[32], p[16], ds[16], slot0 = e_reg(e, RC_B32);
    e_comment(e, "compute step n: P, dS");
    INS(e, MUL_LO_U32, R(slot0), R(n), I(PAIR_STEP));
    INS(e, MAD_LO_U32, R(slot0), R(f->half), I(PAIR_STEP / 2), R(slot0));
    for (int j = 0; j < 32; j += 4) {                         /* the slots' rows, read while the MMAs run */
        Reg g = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(g), R(slot0), I(j));
        coords(k, f, g, row + j);
    }
    umma_wait_cluster(k, f->bar[PB_S], parity(k, n));
    for (int j = 0; j < 32; j++) s[j] = e_reg(e, RC_F32), dp[j] = e_reg(e, RC_F32);
    INS(e, TC_LD_32X32B_X32, V(32, s), A(f->tq, f->c_s));
    INS(e, TC_LD_32X32B_X32, V(32, dp), A(f->tq, f->c_dp));
    INS0(e, TC_WAIT_LD);
    for (int j = 0; j < 32; j++) {
        Reg ok = e_reg(e, RC_PRED), sp = e_reg(e, RC_F32);
        INS(e, SETP_NE_U32, R(ok), R(row[j]), I(-1));
        INS(e, FMA_F32, R(s[j]), R(s[j]), R(f->scale_log2), R(f->neg_lse2));
        INS(e, EX2_F32, R(s[j]), R(s[j]));
        INS(e, SELP_F32, R(s[j]), R(s[j]), FI(0.0f), R(ok));   /* a zero row is no slot */
        INS(e, SUB_F32, R(dp[j]), R(dp[j]), R(f->delta));
        INS(e, MUL_F32, R(sp), R(s[j]), R(f->scale));
        INS(e, MUL_F32, R(dp[j]), R(dp[j]), R(sp));
    }
    for (int c = 0; c < 4; c++) {
        f32x8_pack(k, f->d->dtype, s + 8 * c, p + 4 * c);
        f32x8_pack(k, f->d->dtype, dp + 8 * c, ds + 4 * c);
    }
    /* dS: row hl of the K-major tile, chunks 4 half .. 4 half + 3 (16-byte chunk c at c ^ (hl & 7)) */
    Reg rowa = e_reg(e, RC_B32), sw = e_reg(e, RC_B32);
    INS(e, MAD_LO_U32, R(rowa), R(f->hl), I(128), R(k->smem));
    INS(e, AND_B32, R(sw), R(f->hl), I(7));
    for (int c = 0; c < 4; c++) {
        Reg ch = e_reg(e, RC_B32);
        INS(e, MAD_LO_U32, R(ch), R(f->half), I(4), I(c));
        INS(e, XOR_B32, R(ch), R(ch), R(sw));
        INS(e, MAD_LO_U32, R(ch), R(ch), I(16), R(rowa));
        INS(e, ST_SHARED_V4_B32, A(ch, f->ds), V4(ds[4 * c], ds[4 * c + 1], ds[4 * c + 2], ds[4 * c + 3]));
    }
    /* ps: 32 slots of the head's P row and dS row (64 bytes each) */
    Reg pa = e_reg(e, RC_B64), da = e_reg(e, RC_B64);
    INS(e, MAD_WIDE_U32, R(pa), R(slot0), I(2), R(f->ps_p));
    INS(e, MUL_WIDE_U32, R(da), R(f->topk_pad), I(PAIR_HEADS * 2));
    INS(e, ADD_U64, R(da), R(da), R(pa));
    for (int c = 0; c < 4; c++) {
        INS(e, ST_GLOBAL_V4_B32, A(pa, 16 * c), V4(p[4 * c], p[4 * c + 1], p[4 * c + 2], p[4 * c + 3]));
        INS(e, ST_GLOBAL_V4_B32, A(da, 16 * c), V4(ds[4 * c], ds[4 * c + 1], ds[4 * c + 2], ds[4 * c + 3]));
    }
    INS0(e, FENCE_PROXY_ASYNC_CTA);                           /* dS, read by the dQ MMAs */
    INS0(e, TC_FENCE_BEFORE);
    INS(e, MBAR_ARRIVE_REMOTE, SR("_"), A(f->lead_p, 0));
}

/* dq of the thread's head: Layout B puts columns 128 half .. of each N=256
 * tile in its lane; the rope tile's two halves are the same columns, so
 * half 0 stores them. No step: dq = 0. */
static void epilogue(Kctx *k, Pair *f) {
    Emit *e = &k->e;
    Reg head = e_reg(e, RC_B32), mine = e_reg(e, RC_PRED), has = e_reg(e, RC_PRED), last = e_reg(e, RC_B32);
    int out = e_label(e), none = e_label(e);
    INS(e, ADD_U32, R(head), R(f->h0), R(f->hl));
    INS(e, SETP_NE_U32, R(has), R(f->nsteps), I(0));
    INSP(e, has, 1, BRA_UNI, L(none));
    INS(e, SUB_U32, R(last), R(f->nsteps), I(1));
    umma_wait_cluster(k, f->bar[PB_DQ], parity(k, last));
    e_place(e, none);
    Reg base = tensor_base(k, "dq", 's', f->t, 'h', head), d0 = e_reg(e, RC_B32);
    INS(e, SETP_LT_U32, R(mine), R(head), R(f->h_q));
    for (int j = 0; j < 3; j++) {
        Reg v[128], pk[64], a = e_reg(e, RC_B64);
        int cols = j < 2 ? 128 : 64, skip = e_label(e), zero = e_label(e);
        if (j == 2) {
            Reg up = e_reg(e, RC_PRED);
            INS(e, SETP_NE_U32, R(up), R(f->half), I(0));
            INSP(e, up, 0, BRA_UNI, L(out));                    /* warp-uniform */
        }
        for (int c = 0; c < cols; c++) {
            v[c] = e_reg(e, RC_F32);
            INS(e, MOV_F32, R(v[c]), FI(0.0f));
        }
        INSP(e, has, 1, BRA_UNI, L(zero));
        for (int c = 0; c < cols; c += 32)
            INS(e, TC_LD_32X32B_X32, V(32, v + c), A(f->tq, (j < 2 ? f->c_dq + 128 * j : f->c_rope) + c));
        INS0(e, TC_WAIT_LD);
        e_place(e, zero);
        for (int c = 0; c < cols / 8; c++) f32x8_pack(k, f->d->dtype, v + 8 * c, pk + 4 * c);
        INSP(e, mine, 1, BRA, L(skip));
        if (j < 2) INS(e, MAD_LO_U32, R(d0), R(f->half), I(128), I(256 * j));
        else INS(e, MOV_B32, R(d0), I(512));
        INS(e, MAD_WIDE_U32, R(a), R(d0), I(2), R(base));
        for (int c = 0; c < cols / 8; c++)
            INS(e, ST_GLOBAL_V4_B32, A(a, 16 * c), V4(pk[4 * c], pk[4 * c + 1], pk[4 * c + 2], pk[4 * c + 3]));
        e_place(e, skip);
    }
    e_place(e, out);
}

void mla_bwd_pair_dq_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module) {
    Kctx kc;
    kctx_begin(&kc, ks);
    Kctx *k = &kc;
    Emit *e = &k->e;
    Pair f = {.d = d, .q = plan_region(p, "Q"), .dout = plan_region(p, "dO"), .x = plan_region(p, "X"),
              .y = plan_region(p, "Y"), .ds = plan_region(p, "dS"), .bars = plan_region(p, "bars")};
    for (int i = 0; i < p->ntmem; i++) {
        const TmemRegion *r = &p->tmem[i];
        int *col = !strcmp(r->name, "dQ") ? &f.c_dq : !strcmp(r->name, "dQ_rope") ? &f.c_rope
                   : !strcmp(r->name, "S") ? &f.c_s : &f.c_dp;
        *col = r->col;
    }
    f.t = e_reg(e, RC_B32), f.rank = e_reg(e, RC_B32), f.h0 = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(f.rank), SR("%cluster_ctarank"));
    INS(e, MOV_B32, R(f.t), SR("%ctaid.x"));
    INS(e, SHR_U32, R(f.t), R(f.t), I(1));                    /* the pair is ctaid.x 2t, 2t + 1: s_q may pass 65535 */
    INS(e, MOV_B32, R(f.h0), SR("%ctaid.y"));
    INS(e, MAD_LO_U32, R(f.h0), R(f.h0), I(2), R(f.rank));
    INS(e, MUL_LO_U32, R(f.h0), R(f.h0), I(PAIR_CTA_HEADS));
    f.h_q = kc_u32(k, "h_q"), f.s_kv = kc_u32(k, "s_kv");
    f.kv_map = kc_tmap(k, "kv_map");
    f.idx_row = mla_index_row(k, f.t);
    f.eff = mla_token_slots(k, f.t, kc_u32(k, "topk"));
    f.nsteps = mla_token_steps(k, f.eff, PAIR_BLOCK);            /* whole dkv blocks: the dkv kernel reads them */
    f.topk_pad = e_reg(e, RC_B32);
    INS(e, MUL_LO_U32, R(f.nsteps), R(f.nsteps), I(PAIR_BLOCK / PAIR_STEP));
    INS(e, ADD_U32, R(f.topk_pad), R(kc_u32(k, "topk")), I(PAIR_BLOCK - 1));
    INS(e, AND_B32, R(f.topk_pad), R(f.topk_pad), I(-PAIR_BLOCK));
    f.scale = kc_f32(k, "softmax_scale");
    f.scale_log2 = scale_log2(k);
    f.yes = umma_const_pred(k, 1), f.no = umma_const_pred(k, 0);

    e_comment(e, "prologue: barriers, the pair's TMEM, Q and dO of the CTA's 64 heads");
    setup(k, &f, plan_tmem_alloc(p));
    /* heads past h_q are zero rows, read from nowhere (the odd CTA may have none: its rows' address is head 0's) */
    Reg room = e_reg(e, RC_B32), some = e_reg(e, RC_PRED), hsrc = e_reg(e, RC_B32), tile = e_reg(e, RC_B32);
    INS(e, SETP_LT_U32, R(some), R(f.h0), R(f.h_q));
    INS(e, SUB_U32, R(room), R(f.h_q), R(f.h0));
    INS(e, SELP_B32, R(room), R(room), I(0), R(some));
    INS(e, SELP_B32, R(hsrc), R(f.h0), I(0), R(some));
    INS(e, ADD_U32, R(tile), R(k->smem), I(f.q));
    umma_tile_copy(k, tile, PAIR_CTA_HEADS, d->d, PAIR_DQ_THREADS, tensor_base(k, "q", 's', f.t, 'h', hsrc),
                   stride_bytes(k, "q", 'h'), room);
    Reg tile2 = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(tile2), R(k->smem), I(f.dout));
    umma_tile_copy(k, tile2, PAIR_CTA_HEADS, d->dv, PAIR_DQ_THREADS, tensor_base(k, "do", 's', f.t, 'h', hsrc),
                   stride_bytes(k, "do", 'h'), room);
    INS0(e, CP_ASYNC_COMMIT);
    INS(e, CP_ASYNC_WAIT, I(0));
    INS0(e, FENCE_PROXY_ASYNC_CTA);
    umma_pair_sync(k);                                           /* the peer's Q and dO too, for the first MMA */

    Reg role = e_reg(e, RC_PRED);
    int not_compute = e_label(e), not_issuer = e_label(e), roles_done = e_label(e);
    INS(e, SETP_LT_U32, R(role), R(k->tid), I(128));
    INSP(e, role, 1, BRA_UNI, L(not_compute));
    e_comment(e, "role: compute (warps 0-3): thread = (head tid %% 64, slot half tid / 64)");
    f.hl = e_reg(e, RC_B32), f.half = e_reg(e, RC_B32), f.ps_p = e_reg(e, RC_B64);
    INS(e, AND_B32, R(f.hl), R(k->tid), I(PAIR_CTA_HEADS - 1));
    INS(e, SHR_U32, R(f.half), R(k->tid), I(6));
    head_stats(k, &f);
    {   /* ps [s_q, nctaid.y, 2 (P, dS), 128 heads, topk_pad] bf16: this head's P row */
        Reg r = e_reg(e, RC_B32), z = e_reg(e, RC_B32), nz = e_reg(e, RC_B32);
        INS(e, MOV_B32, R(z), SR("%ctaid.y"));
        INS(e, MOV_B32, R(nz), SR("%nctaid.y"));
        INS(e, MAD_LO_U32, R(r), R(f.t), R(nz), R(z));
        INS(e, MUL_LO_U32, R(r), R(r), I(2 * PAIR_HEADS));
        INS(e, MAD_LO_U32, R(r), R(f.rank), I(PAIR_CTA_HEADS), R(r));
        INS(e, ADD_U32, R(r), R(r), R(f.hl));
        INS(e, MUL_WIDE_U32, R(f.ps_p), R(r), R(f.topk_pad));   /* 64-bit: past 2^32 elements at s_q > 8192 */
        INS(e, SHL_B64, R(f.ps_p), R(f.ps_p), I(1));
        INS(e, ADD_U64, R(f.ps_p), R(f.ps_p), R(kc_ptr(k, "ps")));
    }
    Reg n = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(n), I(0));
    key_loop(k, compute, &f, n, f.nsteps, f.nsteps, 0);
    e_comment(e, "epilogue: dq out");
    epilogue(k, &f);
    INS(e, BRA_UNI, L(roles_done));
    e_place(e, not_compute);
    INS(e, SETP_LT_U32, R(role), R(k->tid), I(160));
    INSP(e, role, 1, BRA_UNI, L(not_issuer));
    e_comment(e, "role: MMA issuer (warp 4 of the even CTA; lane 0 issues for the pair)");
    Reg odd = e_reg(e, RC_PRED);
    INS(e, SETP_NE_U32, R(odd), R(f.rank), I(0));
    INSP(e, odd, 0, BRA_UNI, L(roles_done));
    f.leader = e_reg(e, RC_PRED);
    INS(e, SETP_EQ_U32, R(f.leader), R(k->tid), I(128));
    f.q_k = umma_desc(k, f.q, umma_kmajor128()), f.do_k = umma_desc(k, f.dout, umma_kmajor128());
    f.x_k = umma_desc(k, f.x, umma_kmajor128()), f.ds_k = umma_desc(k, f.ds, umma_kmajor128());
    f.y_mn = umma_desc(k, f.y, umma_mn128(PAIR_STEP));
    Reg n2 = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(n2), I(0));
    key_loop(k, issue, &f, n2, f.nsteps, f.nsteps, 0);
    INS(e, BRA_UNI, L(roles_done));
    e_place(e, not_issuer);
    e_comment(e, "role: producer (warp 5)");
    Reg n3 = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(n3), I(0));
    key_loop(k, produce, &f, n3, f.nsteps, f.nsteps, 0);
    e_place(e, roles_done);

    e_comment(e, "end: both CTAs past their last TMEM and shared-memory use, then the TMEM back");
    umma_epilogue(k, f.taddr, plan_tmem_alloc(p), 1);
    kctx_finish(k, module);
}
