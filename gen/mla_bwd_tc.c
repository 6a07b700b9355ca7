/* mla_bwd main kernel, tcgen05 family (sm_100a / sm_103a, cta_group::1):
 * dq of one token's head block, and the block's share of dkv. The top-k
 * slots are the MMAs' M (128 per step, one TMEM lane and one thread each),
 * the block's heads their N, so every product is transposed:
 *
 *   for each CTA (token t, heads [h0, h0 + hb)):
 *     load Q[t, hb], dO[t, hb]
 *     for each step n over the token's slots (128 at a time, up to topk_length):
 *       gather KV_n = kv[indices[t, 128n ...]]   (invalid slots: zero rows, P = 0)
 *       S^T  = KV_n Q^T;   dP^T = V_n dO^T                    (SS MMAs into TMEM)
 *       P^T  = exp(scale S^T - lse);  dS^T = scale P^T (dP^T - delta)
 *                                                   (thread j = slot j: its TMEM lane)
 *       dQ^T += KV_n^T dS^T                         (A = KV MN-major, B = dS^T in smem)
 *       dkv[idx[j]] += dS^T Q + P^T dO              (A = dS^T, P^T from TMEM, B = Q, dO
 *                                                    MN-major), 256 columns at a time
 *     store dq = (dQ^T)^T
 *
 * One thread issues every MMA and commits it to an mbarrier; all four warps
 * gather, form P and dS, and move dkv out of TMEM (warp w owns lanes 32w..).
 * The inner loop is tc_step(). */
#include "mla_bwd.h"
#include <math.h>
#include <string.h>
#include "../templates/epilogue.h"
#include "../templates/umma.h"

enum { BAR_S, BAR_DQ, BAR_KV, TMEM_SLOT = 24 };
#define MAX_HB 32

typedef struct {
    const AttnDesc *d;
    int hb, bn, det;
    int kv, q, dout, ds, dq, bars;         /* shared regions */
    int c_kv, c_dq, c_s, c_dp, c_p, c_ds;  /* TMEM columns */
    Reg t, h0, h_q, s_kv, eff, nsteps;
    Reg kv_ptr, kv_rs, idx_row;
    Reg taddr, tq;                         /* TMEM base; this warp's lane quarter */
    Reg leader, yes, no;                   /* thread 0; constant predicates for enable-input-d */
    Reg bar[3];
    Reg scale, scale_log2, zero;
    Reg neg_lse2[MAX_HB], delta[MAX_HB];
    Reg dkv_base;                          /* b64: dkv_accum, or this CTA's block of dkv_part */
    Reg next_ok, next_row;                 /* the gathered step's slot of this thread: valid, kv row */
    /* descriptors at their operands' first byte */
    Reg kv_k, q_k, do_k, kv_mn, ds_mn, q_mn, do_mn;
    uint32_t i_s, i_dq, i_kv[2];
} TcBwd;

static Reg new_pred(Emit *e, int v) {
    Reg p = e_reg(e, RC_PRED), z = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(z), I(0));
    if (v) INS(e, SETP_EQ_U32, R(p), R(z), I(0));
    else INS(e, SETP_NE_U32, R(p), R(z), I(0));
    return p;
}

/* Barriers and TMEM: thread 0 initialises the mbarriers, warp 0 takes the
 * plan's columns; everyone reads the TMEM address after the sync. */
static void setup(Kctx *k, TcBwd *f, int cols) {
    Emit *e = &k->e;
    Reg w0 = e_reg(e, RC_PRED);
    int skip = e_label(e), noalloc = e_label(e);
    for (int i = 0; i < 3; i++) {
        f->bar[i] = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(f->bar[i]), R(k->smem), I(f->bars + 8 * i));
    }
    INSP(e, f->leader, 1, BRA, L(skip));
    for (int i = 0; i < 3; i++) INS(e, MBAR_INIT, A(f->bar[i], 0), I(1));
    INS0(e, FENCE_MBAR_INIT);
    e_place(e, skip);
    INS(e, SETP_EQ_U32, R(w0), R(k->warp), I(0));
    INSP(e, w0, 1, BRA, L(noalloc));
    INS(e, TC_ALLOC_1, A(k->smem, f->bars + TMEM_SLOT), I(cols));
    INS0(e, TC_RELINQUISH_1);
    e_place(e, noalloc);
    umma_sync(k);
    f->taddr = e_reg(e, RC_B32), f->tq = e_reg(e, RC_B32);
    INS(e, LD_SHARED_B32, R(f->taddr), A(k->smem, f->bars + TMEM_SLOT));
    INS(e, SHL_B32, R(f->tq), R(k->warp), I(21));          /* lane 32 w in bits 16 and up */
    INS(e, ADD_U32, R(f->tq), R(f->tq), R(f->taddr));
}

/* -lse log2(e) and delta of every head of the block (heads past h_q: -inf and 0, so P = 0). */
static void head_stats(Kctx *k, TcBwd *f) {
    Emit *e = &k->e;
    Reg lse = kc_ptr(k, "lse"), delta = kc_ptr(k, "delta"), row = e_reg(e, RC_B32), a = e_reg(e, RC_B64);
    INS(e, MAD_LO_U32, R(row), R(f->t), R(f->h_q), R(f->h0));
    INS(e, MUL_WIDE_U32, R(a), R(row), I(4));
    Reg al = e_reg(e, RC_B64), ad = e_reg(e, RC_B64), room = e_reg(e, RC_B32);
    INS(e, ADD_U64, R(al), R(a), R(lse));
    INS(e, ADD_U64, R(ad), R(a), R(delta));
    INS(e, SUB_U32, R(room), R(f->h_q), R(f->h0));
    for (int h = 0; h < f->hb; h++) {
        Reg ok = e_reg(e, RC_PRED), l = e_reg(e, RC_F32);
        f->neg_lse2[h] = e_reg(e, RC_F32), f->delta[h] = e_reg(e, RC_F32);
        INS(e, SETP_LT_U32, R(ok), I(h), R(room));
        INS(e, MOV_F32, R(l), FI(INFINITY));
        INS(e, MOV_F32, R(f->delta[h]), FI(0.0f));
        INSP(e, ok, 0, LD_GLOBAL_F32, R(l), A(al, 4 * h));
        INSP(e, ok, 0, LD_GLOBAL_F32, R(f->delta[h]), A(ad, 4 * h));
        INS(e, MUL_F32, R(f->neg_lse2[h]), R(l), FI(-1.4426950408889634f));
    }
}

/* The descriptors of every operand, at its first byte; MMAs move them by immediates. */
static void descriptors(Kctx *k, TcBwd *f) {
    Reg none = NOGUARD;
    DType dt = f->d->dtype;
    f->kv_k = umma_desc(k, k->smem, none, f->kv, umma_kmajor128());
    f->q_k = umma_desc(k, k->smem, none, f->q, umma_kmajor128());
    f->do_k = umma_desc(k, k->smem, none, f->dout, umma_kmajor128());
    f->kv_mn = umma_desc(k, k->smem, none, f->kv, umma_mn128(f->bn));
    f->q_mn = umma_desc(k, k->smem, none, f->q, umma_mn128(f->hb));
    f->do_mn = umma_desc(k, k->smem, none, f->dout, umma_mn128(f->hb));
    f->ds_mn = umma_desc(k, k->smem, none, f->ds, umma_mn_rows(2 * f->hb));
    f->i_s = umma_idesc_f16(dt, f->bn, f->hb, 0, 0);
    f->i_dq = umma_idesc_f16(dt, f->bn, f->hb, 1, 1);
    f->i_kv[0] = umma_idesc_f16(dt, f->bn, MLA_TC_DKV_COLS, 0, 1);
    f->i_kv[1] = umma_idesc_f16(dt, f->bn, f->d->d % MLA_TC_DKV_COLS, 0, 1);
}

/* Step n's slots into the KV tile: thread j gathers slot 128 n + j (a zero
 * row when the slot is past the token's count or its index is not a kv row).
 * Sets f->next_ok (valid slot) and f->next_row (its kv row) for the step. */
static void gather(Kctx *k, TcBwd *f, Reg n) {
    Emit *e = &k->e;
    Reg slot = e_reg(e, RC_B32), in = e_reg(e, RC_PRED), idx = e_reg(e, RC_B32), a = e_reg(e, RC_B64);
    Reg sz = e_reg(e, RC_B32), src = e_reg(e, RC_B64);
    INS(e, MAD_LO_U32, R(slot), R(n), I(f->bn), R(k->tid));
    INS(e, SETP_LT_U32, R(in), R(slot), R(f->eff));
    INS(e, MOV_B32, R(idx), I(-1));
    INS(e, MAD_WIDE_U32, R(a), R(slot), I(4), R(f->idx_row));
    INSP(e, in, 0, LD_GLOBAL_NC_B32, R(idx), A(a, 0));
    INS(e, SETP_LT_U32, R(f->next_ok), R(idx), R(f->s_kv));   /* unsigned: negative indices fail too */
    INS(e, SELP_B32, R(f->next_row), R(idx), I(0), R(f->next_ok));
    INS(e, SELP_B32, R(sz), I(16), I(0), R(f->next_ok));
    INS(e, MAD_WIDE_U32, R(src), R(f->next_row), R(f->kv_rs), R(f->kv_ptr));
    UmmaRow ur;
    Reg tile = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(tile), R(k->smem), I(f->kv));
    umma_row(k, &ur, tile, k->tid);
    for (int s = 0; s < f->d->d / UMMA_SLAB_COLS; s++) umma_row_slab_copy(k, &ur, f->bn, s, src, sz);
    INS0(e, CP_ASYNC_COMMIT);
}

/* The generic-proxy writes to shared memory (cp.async, st.shared) and the
 * tcgen05.st of every thread are visible to the MMAs thread 0 issues next. */
static void publish(Kctx *k) {
    INS0(&k->e, FENCE_PROXY_ASYNC_CTA);
    umma_sync(k);
}

/* S^T = KV Q^T (K = d_qk) and dP^T = V dO^T (K = d_v), 16 at a time along the 128B slabs. */
static void issue_scores(Kctx *k, TcBwd *f) {
    Emit *e = &k->e;
    Reg idesc = kc_imm32(k, f->i_s);
    for (int c = 0; c < f->d->d / 16; c++) {
        Reg a = umma_desc_at(k, f->kv_k, (c / 4) * f->bn * 128 + 32 * (c % 4));
        Reg b = umma_desc_at(k, f->q_k, (c / 4) * f->hb * 128 + 32 * (c % 4));
        INS(e, TC_MMA_1_F16_SS, A(f->taddr, f->c_s), R(a), R(b), R(idesc), R(c ? f->yes : f->no));
    }
    for (int c = 0; c < f->d->dv / 16; c++) {
        Reg a = umma_desc_at(k, f->kv_k, (c / 4) * f->bn * 128 + 32 * (c % 4));
        Reg b = umma_desc_at(k, f->do_k, (c / 4) * f->hb * 128 + 32 * (c % 4));
        INS(e, TC_MMA_1_F16_SS, A(f->taddr, f->c_dp), R(a), R(b), R(idesc), R(c ? f->yes : f->no));
    }
    INS(e, TC_COMMIT_1, A(f->bar[BAR_S], 0));
}

/* dQ^T += KV^T dS^T: row tile i covers d_qk rows from 128 i (the last, 448:
 * its upper half is the rope part); A walks two 64-column slabs (LBO), K the
 * step's slots 16 at a time. `acc`: the kernel's first step starts at zero. */
static void issue_dq(Kctx *k, TcBwd *f, Reg acc) {
    Emit *e = &k->e;
    Reg idesc = kc_imm32(k, f->i_dq);
    for (int i = 0; i < MLA_TC_DQ_TILES; i++) {
        int slab = i < MLA_TC_DQ_TILES - 1 ? 2 * i : f->d->d / UMMA_SLAB_COLS - 2;
        for (int kj = 0; kj < f->bn / 16; kj++) {
            Reg a = umma_desc_at(k, f->kv_mn, slab * f->bn * 128 + kj * 16 * 128);
            Reg b = umma_desc_at(k, f->ds_mn, kj * 16 * 2 * f->hb);
            INS(e, TC_MMA_1_F16_SS, A(f->taddr, f->c_dq + i * f->hb), R(a), R(b), R(idesc), R(kj ? f->yes : acc));
        }
    }
    INS(e, TC_COMMIT_1, A(f->bar[BAR_DQ], 0));
}

/* dkv chunk ch (columns [256 ch, ...)) = dS^T Q (+ P^T dO on d_v's columns),
 * A from TMEM, B MN-major over the heads 16 at a time. */
static int chunk_cols(const TcBwd *f, int ch) {
    int left = f->d->d - ch * MLA_TC_DKV_COLS;
    return left < MLA_TC_DKV_COLS ? left : MLA_TC_DKV_COLS;
}

static void issue_dkv(Kctx *k, TcBwd *f, int ch) {
    Emit *e = &k->e;
    int n = chunk_cols(f, ch);
    Reg idesc = kc_imm32(k, f->i_kv[n != MLA_TC_DKV_COLS]);
    int slab0 = ch * MLA_TC_DKV_COLS / UMMA_SLAB_COLS, with_do = ch * MLA_TC_DKV_COLS < f->d->dv;
    for (int kh = 0; kh < f->hb / 16; kh++) {
        Reg b = umma_desc_at(k, f->q_mn, slab0 * f->hb * 128 + kh * 16 * 128);
        INS(e, TC_MMA_1_F16_TS, A(f->taddr, f->c_kv), A(f->taddr, f->c_ds + 8 * kh), R(b), R(idesc), R(kh ? f->yes : f->no));
    }
    for (int kh = 0; with_do && kh < f->hb / 16; kh++) {
        Reg b = umma_desc_at(k, f->do_mn, slab0 * f->hb * 128 + kh * 16 * 128);
        INS(e, TC_MMA_1_F16_TS, A(f->taddr, f->c_kv), A(f->taddr, f->c_p + 8 * kh), R(b), R(idesc), R(f->yes));
    }
    INS(e, TC_COMMIT_1, A(f->bar[BAR_KV], 0));
}

/* this thread's n TMEM columns from col (its lane) into v, 32 or 16 at a time */
static void tmem_load(Kctx *k, TcBwd *f, int col, Reg *v, int n) {
    for (int c = 0; c < n; c += 32) {
        if (n - c >= 32) INS(&k->e, TC_LD_32X32B_X32, V(32, v + c), A(f->tq, col + c));
        else INS(&k->e, TC_LD_32X32B_X16, V(16, v + c), A(f->tq, col + c));
    }
    INS0(&k->e, TC_WAIT_LD);
}

static Reg pack2(Kctx *k, DType dt, Reg lo, Reg hi) {
    Reg r = e_reg(&k->e, RC_B32);
    if (dt == DT_BF16) INS(&k->e, CVT_BF16X2, R(r), R(hi), R(lo));   /* the first source is the high half */
    else INS(&k->e, CVT_F16X2, R(r), R(hi), R(lo));
    return r;
}

/* P^T and dS^T of this thread's slot from S^T and dP^T; into TMEM (A of dkv)
 * and dS^T into its shared row (B of dQ^T). */
static void probabilities(Kctx *k, TcBwd *f, Reg ok) {
    Emit *e = &k->e;
    int hb = f->hb;
    Reg s[MAX_HB], dp[MAX_HB], p[MAX_HB / 2], ds[MAX_HB / 2];
    for (int h = 0; h < hb; h++) s[h] = e_reg(e, RC_F32), dp[h] = e_reg(e, RC_F32);
    tmem_load(k, f, f->c_s, s, hb);
    tmem_load(k, f, f->c_dp, dp, hb);
    for (int h = 0; h < hb; h++) {
        Reg sp = e_reg(e, RC_F32);
        INS(e, FMA_F32, R(s[h]), R(s[h]), R(f->scale_log2), R(f->neg_lse2[h]));
        INS(e, EX2_F32, R(s[h]), R(s[h]));
        INS(e, SELP_F32, R(s[h]), R(s[h]), FI(0.0f), R(ok));        /* a zero row is no slot */
        INS(e, SUB_F32, R(dp[h]), R(dp[h]), R(f->delta[h]));
        INS(e, MUL_F32, R(sp), R(s[h]), R(f->scale));
        INS(e, MUL_F32, R(dp[h]), R(dp[h]), R(sp));
    }
    for (int i = 0; i < hb / 2; i++) {
        p[i] = pack2(k, f->d->dtype, s[2 * i], s[2 * i + 1]);
        ds[i] = pack2(k, f->d->dtype, dp[2 * i], dp[2 * i + 1]);
    }
    if (hb == 32) {
        INS(e, TC_ST_32X32B_X16, A(f->tq, f->c_p), V(16, p));
        INS(e, TC_ST_32X32B_X16, A(f->tq, f->c_ds), V(16, ds));
    } else {
        INS(e, TC_ST_32X32B_X8, A(f->tq, f->c_p), V(8, p));
        INS(e, TC_ST_32X32B_X8, A(f->tq, f->c_ds), V(8, ds));
    }
    Reg tile = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(tile), R(k->smem), I(f->ds));
    for (int c = 0; c < hb / 8; c++)
        INS(e, ST_SHARED_V4_B32, umma_mn_row_chunk(k, tile, k->tid, 2 * hb, c),
            V4(ds[4 * c], ds[4 * c + 1], ds[4 * c + 2], ds[4 * c + 3]));
    INS0(e, TC_WAIT_ST);
}

/* The dkv chunk out of TMEM into global memory, for a valid slot only: a
 * vector reduction into the accumulator or, deterministic, a store of the
 * slot's contribution. */
static void dkv_out(Kctx *k, TcBwd *f, int ch, Reg ok, Reg dst) {
    Emit *e = &k->e;
    int n = chunk_cols(f, ch);
    for (int c = 0; c < n; c += 32) {
        Reg v[32];
        for (int i = 0; i < 32; i++) v[i] = e_reg(e, RC_F32);
        tmem_load(k, f, f->c_kv + c, v, 32);
        for (int i = 0; i < 8; i++) {
            Opnd a = A(dst, 4 * (ch * MLA_TC_DKV_COLS + c + 4 * i));
            if (f->det) INSP(e, ok, 0, ST_GLOBAL_V4_F32, a, V4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]));
            else INSP(e, ok, 0, RED_GLOBAL_ADD_V4_F32, a, V4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]));
        }
    }
}

/* One step of 128 slots: the inner loop of the kernel. */
static void tc_step(Kctx *k, TcBwd *f, Reg n) {
    Emit *e = &k->e;
    int issued[5];
    for (int i = 0; i < 5; i++) issued[i] = e_label(e);
    e_comment(e, "top-k step n: its rows landed (gathered during step n-1), S^T and dP^T");
    Reg row = e_reg(e, RC_B32), ok = e_reg(e, RC_PRED), par = e_reg(e, RC_B32), first = e_reg(e, RC_PRED);
    Reg okv = e_reg(e, RC_B32);                             /* copies: step n+1's gather overwrites next_* */
    INS(e, MOV_B32, R(row), R(f->next_row));
    INS(e, SELP_B32, R(okv), I(1), I(0), R(f->next_ok));
    INS(e, SETP_NE_U32, R(ok), R(okv), I(0));
    INS(e, CP_ASYNC_WAIT, I(0));
    publish(k);
    INSP(e, f->leader, 1, BRA, L(issued[0]));
    issue_scores(k, f);
    e_place(e, issued[0]);
    INS(e, AND_B32, R(par), R(n), I(1));
    umma_wait(k, f->bar[BAR_S], par);
    e_comment(e, "P^T, dS^T");
    probabilities(k, f, ok);
    publish(k);
    INS(e, SETP_NE_U32, R(first), R(n), I(0));             /* false on the first step: dQ^T starts at zero */
    INSP(e, f->leader, 1, BRA, L(issued[1]));
    issue_dq(k, f, first);
    issue_dkv(k, f, 0);
    e_place(e, issued[1]);
    /* where this slot's dkv goes: its kv row of the accumulator, or its slot of the part block */
    Reg dst = e_reg(e, RC_B64);
    if (f->det) {
        Reg slot = e_reg(e, RC_B32);
        INS(e, MAD_LO_U32, R(slot), R(n), I(f->bn), R(k->tid));
        INS(e, MAD_WIDE_U32, R(dst), R(slot), I(4 * f->d->d), R(f->dkv_base));
    } else INS(e, MAD_WIDE_U32, R(dst), R(row), I(4 * f->d->d), R(f->dkv_base));
    /* the dQ^T MMAs landed: KV and dS are free, step n+1's rows come in behind the dkv readout */
    Reg more = e_reg(e, RC_PRED), n1 = e_reg(e, RC_B32);
    int last = e_label(e);
    umma_wait(k, f->bar[BAR_DQ], par);
    INS(e, ADD_U32, R(n1), R(n), I(1));
    INS(e, SETP_LT_U32, R(more), R(n1), R(f->nsteps));
    INSP(e, more, 1, BRA_UNI, L(last));
    gather(k, f, n1);
    e_place(e, last);
    int chunks = (f->d->d + MLA_TC_DKV_COLS - 1) / MLA_TC_DKV_COLS;
    for (int ch = 0; ch < chunks; ch++) {
        Reg cp = e_reg(e, RC_B32);
        e_comment(e, "dkv chunk %d", ch);
        /* the chunk barrier completes `chunks` phases per step: this one is chunks * n + ch */
        INS(e, MAD_LO_U32, R(cp), R(n), I(chunks), I(ch));
        INS(e, AND_B32, R(cp), R(cp), I(1));
        umma_wait(k, f->bar[BAR_KV], cp);
        dkv_out(k, f, ch, ok, dst);
        if (ch + 1 < chunks) {
            umma_sync(k);                                  /* every lane's chunk is out of TMEM */
            INSP(e, f->leader, 1, BRA, L(issued[2 + ch]));
            issue_dkv(k, f, ch + 1);
            e_place(e, issued[2 + ch]);
        }
    }
}

/* dq = (dQ^T)^T: each warp's lanes of each row tile (a d_qk row, all heads)
 * into the staging tile, then 16-byte rows out. No step: dq = 0. */
static void epilogue(Kctx *k, TcBwd *f) {
    Emit *e = &k->e;
    SmemTile st = {f->hb, f->d->d, f->dq};
    Reg has = e_reg(e, RC_PRED);
    INS(e, SETP_NE_U32, R(has), R(f->nsteps), I(0));
    for (int i = 0; i < MLA_TC_DQ_TILES; i++) {
        int d0 = i < MLA_TC_DQ_TILES - 1 ? 128 * i : f->d->d - 128, skip = e_label(e);
        Reg v[MAX_HB], dd = e_reg(e, RC_B32), mine = e_reg(e, RC_PRED);
        e_comment(e, "dq rows %d-%d", d0, d0 + 127);
        INS(e, MAD_LO_U32, R(dd), R(k->warp), I(32), R(k->lane));
        INS(e, ADD_U32, R(dd), R(dd), I(d0));
        /* the last tile's lower half repeats rows of the one before */
        INS(e, SETP_GE_U32, R(mine), R(dd), I(i < MLA_TC_DQ_TILES - 1 ? 0 : 128 * (MLA_TC_DQ_TILES - 1)));
        INSP(e, mine, 1, BRA_UNI, L(skip));                /* warp-uniform: rows 32 w .. 32 w + 31 */
        for (int h = 0; h < f->hb; h++) {
            v[h] = e_reg(e, RC_F32);
            INS(e, MOV_F32, R(v[h]), FI(0.0f));
        }
        int none = e_label(e);
        INSP(e, has, 1, BRA_UNI, L(none));
        tmem_load(k, f, f->c_dq + i * f->hb, v, f->hb);
        e_place(e, none);
        /* element (h, d) of the staging tile: row h, chunk swz_chunk(h, d / 8), d % 8 */
        Reg cd = e_reg(e, RC_B32), hi = e_reg(e, RC_B32), lo = e_reg(e, RC_B32);
        INS(e, SHR_U32, R(cd), R(dd), I(3));
        INS(e, AND_B32, R(hi), R(cd), I(~7));
        INS(e, AND_B32, R(lo), R(dd), I(7));
        INS(e, SHL_B32, R(lo), R(lo), I(1));
        INS(e, ADD_U32, R(lo), R(lo), R(k->smem));
        for (int h = 0; h < f->hb; h++) {
            Reg c = e_reg(e, RC_B32), x = e_reg(e, RC_B16);
            INS(e, XOR_B32, R(c), R(cd), I(h));
            INS(e, AND_B32, R(c), R(c), I(7));
            INS(e, OR_B32, R(c), R(c), R(hi));
            INS(e, MAD_LO_U32, R(c), R(c), I(16), R(lo));
            if (f->d->dtype == DT_BF16) INS(e, CVT_BF16_F32, R(x), R(v[h]));
            else INS(e, CVT_F16_F32, R(x), R(v[h]));
            INS(e, ST_SHARED_B16, A(c, st.off + h * tile_row_bytes(st)), R(x));
        }
        e_place(e, skip);
    }
    INS(e, BAR_SYNC, I(0));
    Reg rows_left = e_reg(e, RC_B32);
    INS(e, SUB_U32, R(rows_left), R(f->h_q), R(f->h0));
    smem_to_global(k, st, 32 * f->d->tile.warps, tensor_base(k, "dq", 's', f->t, 'h', f->h0),
                   stride_bytes(k, "dq", 'h'), rows_left);
}

static void dkv_base(Kctx *k, TcBwd *f) {
    f->dkv_base = f->det ? kc_ptr(k, "dkv_part") : kc_ptr(k, "dkv_accum");
    if (f->det) mla_dkv_part_block(k, f->t, f->d->d, f->dkv_base);
}

void mla_bwd_tc_main_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module) {
    Kctx kc;
    kctx_begin(&kc, ks);
    Kctx *k = &kc;
    Emit *e = &k->e;
    TcBwd f = {.d = d, .hb = d->tile.bm, .bn = d->tile.bn, .det = d->tile.deterministic,
               .kv = plan_region(p, "KV"), .q = plan_region(p, "Q"), .dout = plan_region(p, "dO"),
               .ds = plan_region(p, "dS"), .dq = plan_region(p, "dQ"), .bars = plan_region(p, "bars")};
    for (int i = 0; i < p->ntmem; i++) {
        const TmemRegion *r = &p->tmem[i];
        int *col = !strcmp(r->name, "dKV") ? &f.c_kv : !strcmp(r->name, "dQ^T") ? &f.c_dq : !strcmp(r->name, "S^T") ? &f.c_s
                   : !strcmp(r->name, "dP^T") ? &f.c_dp : !strcmp(r->name, "P^T") ? &f.c_p : &f.c_ds;
        *col = r->col;
    }
    f.t = e_reg(e, RC_B32), f.h0 = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(f.t), SR("%ctaid.x"));
    INS(e, MOV_B32, R(f.h0), SR("%ctaid.y"));
    INS(e, MUL_LO_U32, R(f.h0), R(f.h0), I(f.hb));
    f.h_q = kc_u32(k, "h_q"), f.s_kv = kc_u32(k, "s_kv");
    f.kv_ptr = kc_ptr(k, "kv"), f.kv_rs = row_stride_bytes(k, "kv");
    Reg a = e_reg(e, RC_B64);
    INS(e, CVT_U64_U32, R(a), R(f.t));
    INS(e, MUL_LO_U64, R(a), R(a), R(kc_u64(k, "indices_stride_s")));
    INS(e, MUL_LO_U64, R(a), R(a), I(4));
    f.idx_row = kc_ptr(k, "indices");
    INS(e, ADD_U64, R(f.idx_row), R(f.idx_row), R(a));
    f.eff = mla_token_slots(k, f.t, kc_u32(k, "topk"));
    f.nsteps = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(f.nsteps), R(f.eff), I(f.bn - 1));
    INS(e, DIV_U32, R(f.nsteps), R(f.nsteps), I(f.bn));
    f.scale = kc_f32(k, "softmax_scale");
    f.scale_log2 = scale_log2(k);
    f.leader = e_reg(e, RC_PRED);
    INS(e, SETP_EQ_U32, R(f.leader), R(k->tid), I(0));
    f.yes = new_pred(e, 1), f.no = new_pred(e, 0);

    e_comment(e, "prologue: barriers, TMEM, Q and dO in flight, head statistics");
    setup(k, &f, plan_tmem_alloc(p));
    Reg room = e_reg(e, RC_B32), tile = e_reg(e, RC_B32);
    INS(e, SUB_U32, R(room), R(f.h_q), R(f.h0));
    INS(e, ADD_U32, R(tile), R(k->smem), I(f.q));
    umma_tile_copy(k, tile, f.hb, d->d, 32 * d->tile.warps, tensor_base(k, "q", 's', f.t, 'h', f.h0),
                   stride_bytes(k, "q", 'h'), room);
    Reg tile2 = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(tile2), R(k->smem), I(f.dout));
    umma_tile_copy(k, tile2, f.hb, d->dv, 32 * d->tile.warps, tensor_base(k, "do", 's', f.t, 'h', f.h0),
                   stride_bytes(k, "do", 'h'), room);
    head_stats(k, &f);
    descriptors(k, &f);
    dkv_base(k, &f);

    Reg n = e_reg(e, RC_B32), more = e_reg(e, RC_PRED);
    int top = e_label(e), done = e_label(e);
    INS(e, MOV_B32, R(n), I(0));
    f.next_ok = e_reg(e, RC_PRED), f.next_row = e_reg(e, RC_B32);
    INS(e, SETP_LT_U32, R(more), R(n), R(f.nsteps));
    INSP(e, more, 1, BRA_UNI, L(done));
    gather(k, &f, n);                                      /* step 0's rows */
    e_place(e, top);
    INS(e, SETP_LT_U32, R(more), R(n), R(f.nsteps));
    INSP(e, more, 1, BRA_UNI, L(done));
    tc_step(k, &f, n);
    INS(e, ADD_U32, R(n), R(n), I(1));
    INS(e, BRA_UNI, L(top));
    e_place(e, done);
    INS(e, CP_ASYNC_WAIT, I(0));                           /* no step: Q and dO still land before the exit */
    umma_sync(k);

    e_comment(e, "epilogue: dq out, TMEM back");
    epilogue(k, &f);
    umma_sync(k);
    Reg w0 = e_reg(e, RC_PRED);
    int kept = e_label(e);
    INS(e, SETP_EQ_U32, R(w0), R(k->warp), I(0));
    INSP(e, w0, 1, BRA, L(kept));
    INS(e, TC_DEALLOC_1, R(f.taddr), I(plan_tmem_alloc(p)));
    e_place(e, kept);
    kctx_finish(k, module);
}
