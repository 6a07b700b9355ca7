/* attn_bwd main kernel, tcgen05 family (sm_100a / sm_103a): dK and dV of one
 * block of 128 keys in TMEM, dQ by atomics.
 *
 *   for each CTA (keys [n0, n0 + 128) of kv head kvh, batch b):
 *     producer (warp 5, lane 0): K, V once; per query block m (every query head of the kv
 *       head's group, every block that sees the keys) Q_m, dO_m and the block's lse and delta
 *       (one TMA copy of the stats block the pre kernel padded) into a ring of `stages` slots
 *     issuer (warp 4, lane 0), per m:
 *       S^T  = K Q_m^T;  dP^T = V dO_m^T        SS MMAs, M = 128 keys, N = 64 queries
 *       once P^T and dS^T are in:
 *       dV  += P^T dO_m;  dK += dS^T Q_m         TS MMAs: P^T, dS^T from TMEM (over S^T, dP^T)
 *       dQ_m = dS K                              SS, M = 64: dS from the threads' rows in shared memory
 *     compute (warps 0-3; thread r owns key n0 + r, TMEM lane r), per m:
 *       P^T = exp2(scale log2(e) S^T - log2(e) lse_m)   (masked first where causal needs it)
 *       dS^T = P^T o (dP^T - delta_m)
 *       dQ_{m-1} out of TMEM by red.global.add into the fp32 accumulator (its convert scales it)
 *     epilogue: dK scaled, dK and dV rounded to dk and dv
 *   deterministic=1: the query blocks in chain order (attn_bwd_math.h, down), and key block n adds its
 *     dQ_m once the semaphore of (head, m, part) counts the n key blocks below it, then raises it: every
 *     element of dQ sums its key blocks in one order, whatever the schedule.
 *   dsplit > 1: CTAs x .. x + dsplit - 1 share the keys of block x / dsplit, each its d / dsplit columns of
 *     dV, dK and dQ (S^T and dP^T over the whole d in each).
 *
 * A step's MMAs start once the last step's are done (the issuer waits on its own commit), so S^T of
 * m+1 never overwrites P^T of m in flight: a first schedule, correct before fast. The roles join by
 * mbarriers only (attn_bwd_tc.h); their steps are produce_step(), issue_step() and compute_step(). */
#include "attn_bwd_tc.h"
#include <math.h>
#include <string.h>
#include "attn_bwd_math.h"
#include "../templates/mbar.h"

typedef struct {
    const AttnDesc *d;
    int stages, k_off, v_off, q_off, do_off, st_off, slot, ds_off;
    int ordered;                      /* deterministic: dQ adds in key-block order */
    int c_s, c_dp, c_p, c_ds, c_dv, c_dk, c_dq;   /* TMEM columns (P^T, dS^T over S^T, dP^T unless own_p) */
    int own_p;                        /* tcb_own_p */
    int dsplit, dh;                   /* CTAs per key block; this one's columns of dK, dV and dQ */
    Reg bar[TCB_NBARS(3)];
    Reg taddr, tq, leader;
    Reg b, kvh, key0, s_q, s_k, off, group;
    Reg part, col0, q_part, k_part;   /* dsplit > 1: its part; first column; that column's slab in Q or dO, and in K (bytes) */
    Reg n, nblk, top_n;         /* ordered: the key block, query blocks per head, the last key block */
    Reg s_q_grid, tb, q0, k0;   /* s_q the grid and the stats blocks are sized by; TMA batch; varlen's first rows */
    QueryBlocks blocks;
    /* issuer */
    Reg yes, no;
    /* compute */
    Reg key, scale_log2;
} TcBwd;

/* The CTA's keys, kv head, batch, and the query blocks that see them. */
static void problem(Kctx *k, TcBwd *f) {
    Emit *e = &k->e;
    f->b = e_reg(e, RC_B32), f->kvh = e_reg(e, RC_B32), f->key0 = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(f->b), SR("%ctaid.z"));
    INS(e, MOV_B32, R(f->kvh), SR("%ctaid.y"));
    INS(e, MOV_B32, R(f->key0), SR("%ctaid.x"));
    if (f->dsplit > 1) {   /* CTAs x .. x + dsplit - 1 share keys x / dsplit, part x % dsplit */
        Reg part = f->part = e_reg(e, RC_B32);
        f->col0 = e_reg(e, RC_B32), f->q_part = e_reg(e, RC_B32), f->k_part = e_reg(e, RC_B32);
        INS(e, REM_U32, R(part), R(f->key0), I(f->dsplit));
        INS(e, DIV_U32, R(f->key0), R(f->key0), I(f->dsplit));
        INS(e, MUL_LO_U32, R(f->col0), R(part), I(f->dh));
        INS(e, MUL_LO_U32, R(f->q_part), R(part), I(f->dh / 64 * TCB_BM * 128));
        INS(e, MUL_LO_U32, R(f->k_part), R(part), I(f->dh / 64 * TCB_BN * 128));
    }
    if (f->ordered) INS(e, MOV_B32, R(f->n = e_reg(e, RC_B32)), R(f->key0));
    INS(e, MUL_LO_U32, R(f->key0), R(f->key0), I(TCB_BN));
    f->s_q_grid = f->s_q = kc_u32(k, "s_q"), f->s_k = kc_u32(k, "s_k"), f->tb = f->b;
    if (f->d->varlen) {   /* packed: the sequence's lengths; TMA rows from its first, batch coordinate 0 */
        SeqSpan sp = seq_span(k, f->b);
        f->s_q = sp.s_q, f->s_k = sp.s_k, f->q0 = sp.q0, f->k0 = sp.k0, f->tb = kc_imm32(k, 0);
    }
    f->group = e_reg(e, RC_B32), f->off = e_reg(e, RC_B32);
    INS(e, DIV_U32, R(f->group), R(kc_u32(k, "h_q")), R(kc_u32(k, "h_kv")));
    INS(e, SUB_S32, R(f->off), R(f->s_k), R(f->s_q));
    query_blocks(k, f->d->causal, TCB_BM, TCB_BN, f->key0, f->s_q, f->off, f->group, &f->blocks);
    if (f->d->block_m) {   /* block-sparse: the key block's query list */
        Reg n = e_reg(e, RC_B32), mt;
        INS(e, DIV_U32, R(n), R(f->key0), I(TCB_BN));
        query_blocks_listed(k, &f->blocks, sparse_query_list(k, TCB_BM, TCB_BN, f->b, f->kvh, n, &mt), mt);
    }
    if (f->ordered) {   /* down the chain: key block n meets each block one step after n - 1 */
        f->blocks.chain = 1, f->blocks.up = umma_const_pred(k, 0);
        f->nblk = e_reg(e, RC_B32), f->top_n = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(f->nblk), R(f->s_q_grid), I(TCB_BM - 1));   /* the pre kernel's semaphore layout */
        INS(e, DIV_U32, R(f->nblk), R(f->nblk), I(TCB_BM));
        INS(e, ADD_U32, R(f->top_n), R(f->s_k), I(TCB_BN - 1));
        INS(e, DIV_U32, R(f->top_n), R(f->top_n), I(TCB_BN));
        INS(e, SUB_U32, R(f->top_n), R(f->top_n), I(1));
    }
}

/* Ring slot of step it: its byte offset from slot 0, full and empty barriers, the full barrier's parity. */
static Reg slot_of(Kctx *k, TcBwd *f, Reg it, Reg *full, Reg *parity, Reg *empty) {
    return wg_ring_slot(k, f->bar[TCB_FULL(f->stages)], f->bar[TCB_EMPTY(f->stages)], f->stages, it, f->slot, full,
                        parity, empty);
}

/* ---- producer ---- */


static void produce_step(Kctx *k, void *ctx, Reg it, int masked) {
    TcBwd *f = ctx;
    (void)masked;
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    Reg h, m_start, full, parity, empty, st = e_reg(e, RC_B64);
    query_block_at(k, &f->blocks, it, f->kvh, &h, &m_start);
    Reg stage = slot_of(k, f, it, &full, &parity, &empty);
    INS(e, XOR_B32, R(parity), R(parity), I(1));   /* a fresh slot counts as freed: the phase before the first */
    mbar_wait(k, empty, parity, 0);
    int past = umma_leader_only(k, f->leader);
    INS(e, MBAR_ARRIVE_EXPECT_TX, R(st), A(full, 0), I(TCB_BM * (d->d + d->dv) * 2 + 8 * TCB_BM));
    Reg row = m_start;
    if (d->varlen) INS(e, ADD_U32, R(row = e_reg(e, RC_B32)), R(m_start), R(f->q0));   /* the packed row */
    wg_tma_rows(k, kc_tmap(k, "q_map"), f->q_off, TCB_BM, d->d, stage, h, row, f->tb, full);
    wg_tma_rows(k, kc_tmap(k, "do_map"), f->do_off, TCB_BM, d->dv, stage, h, row, f->tb, full);
    bwd_copy_stats(k, TCB_BM, f->s_q_grid, f->b, h, m_start, f->st_off, stage, full);
    e_place(e, past);
}

/* Every lane of the warp steps through the ring (it stays converged for the kernel's last barrier);
 * lane 0 issues the copies. */
static void producer_role(Kctx *k, void *ctx) {
    TcBwd *f = ctx;
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    Reg st = e_reg(e, RC_B64), zero = kc_imm32(k, 0);
    f->leader = e_reg(e, RC_PRED);
    INS(e, SETP_EQ_U32, R(f->leader), R(k->tid), I(TCB_PRODUCER));
    int past = umma_leader_only(k, f->leader);
    INS(e, MBAR_ARRIVE_EXPECT_TX, R(st), A(f->bar[TCB_KV], 0), I(TCB_BN * (d->d + d->dv) * 2));
    Reg krow = f->key0;
    if (d->varlen) INS(e, ADD_U32, R(krow = e_reg(e, RC_B32)), R(f->key0), R(f->k0));   /* the packed row */
    wg_tma_rows(k, kc_tmap(k, "k_map"), f->k_off, TCB_BN, d->d, zero, f->kvh, krow, f->tb, f->bar[TCB_KV]);
    wg_tma_rows(k, kc_tmap(k, "v_map"), f->v_off, TCB_BN, d->dv, zero, f->kvh, krow, f->tb, f->bar[TCB_KV]);
    e_place(e, past);
    query_loop(k, &f->blocks, produce_step, f, 0);
}

/* ---- MMA issuer ---- */

/* acc (+)= A B^T over `cols` of K-major operands, 16 at a time along the 128B slabs (a slab of A is a_rows
 * rows, of B b_rows rows). */
static void mma_kmajor(Kctx *k, TcBwd *f, int col, Reg a, int a_rows, Reg b, int b_rows, int cols, uint32_t idesc) {
    for (int c = 0; c < cols / 16; c++) {
        int in = 32 * (c % 4);
        INS(&k->e, TC_MMA_1_F16_SS, A(f->taddr, col), R(umma_desc_at(k, a, (c / 4) * a_rows * 128 + in)),
            R(umma_desc_at(k, b, (c / 4) * b_rows * 128 + in)), R(kc_imm32(k, idesc)), R(c ? f->yes : f->no));
    }
}

/* An MN-major operand's descriptor moved to this CTA's columns: `part` bytes further (dsplit > 1). */
static Reg at_part(Kctx *k, TcBwd *f, Reg desc, Reg part) { return f->dsplit > 1 ? wg_desc_plus(k, desc, part) : desc; }

/* Step it: once the slot landed (and, where P^T and dS^T live over S^T and dP^T, the last step's products
 * are done), S^T and dP^T; once P^T and dS^T are in, dV, dK and dQ; then the slot is free. */
static void issue_step(Kctx *k, void *ctx, Reg it, int masked) {
    TcBwd *f = ctx;
    (void)masked;
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    DType dt = d->dtype;
    Reg full, parity, empty, first = e_reg(e, RC_PRED), prev = e_reg(e, RC_B32), acc = e_reg(e, RC_PRED);
    Reg stage = slot_of(k, f, it, &full, &parity, &empty);
    umma_wait(k, full, parity);
    if (!f->own_p) {   /* S^T and dP^T hold the step before's P^T and dS^T until its dV and dK are done */
        int fresh = e_label(e);
        INS(e, SETP_EQ_U32, R(first), R(it), I(0));
        INSP(e, first, 0, BRA_UNI, L(fresh));
        INS(e, SUB_U32, R(prev), R(it), I(1));
        umma_wait(k, f->bar[TCB_DONE(f->stages)], mbar_parity(k, prev, 0, 0));
        e_place(e, fresh);
    }
    Reg kd = umma_desc(k, f->k_off, umma_kmajor128()), vd = umma_desc(k, f->v_off, umma_kmajor128());
    Reg qd = wg_desc_plus(k, umma_desc(k, f->q_off, umma_kmajor128()), stage);
    Reg dod = wg_desc_plus(k, umma_desc(k, f->do_off, umma_kmajor128()), stage);
    int past = umma_leader_only(k, f->leader);
    uint32_t i_sd = umma_idesc_f16(dt, TCB_BN, TCB_BM, 0, 0);
    mma_kmajor(k, f, f->c_s, kd, TCB_BN, qd, TCB_BM, d->d, i_sd);      /* S^T = K Q^T */
    mma_kmajor(k, f, f->c_dp, vd, TCB_BN, dod, TCB_BM, d->dv, i_sd);   /* dP^T = V dO^T */
    INS(e, TC_COMMIT_1, A(f->bar[TCB_SD(f->stages)], 0));
    e_place(e, past);
    umma_wait(k, f->bar[TCB_PDS(f->stages)], mbar_parity(k, it, 0, 0));
    INS(e, SETP_NE_U32, R(acc), R(it), I(0));                           /* dV and dK start from step 0's products */
    past = umma_leader_only(k, f->leader);
    Reg dom = at_part(k, f, wg_desc_plus(k, umma_desc(k, f->do_off, umma_mn128(TCB_BM)), stage), f->q_part);
    Reg qm = at_part(k, f, wg_desc_plus(k, umma_desc(k, f->q_off, umma_mn128(TCB_BM)), stage), f->q_part);
    Reg i_dv = kc_imm32(k, umma_idesc_f16(dt, TCB_BN, f->dh, 0, 1)), i_dk = kc_imm32(k, umma_idesc_f16(dt, TCB_BN, f->dh, 0, 1));
    for (int kk = 0; kk < TCB_BM / 16; kk++)                            /* dV += P^T dO */
        INS(e, TC_MMA_1_F16_TS, A(f->taddr, f->c_dv), A(f->taddr, f->c_p + 8 * kk), R(umma_desc_at(k, dom, kk * 16 * 128)),
            R(i_dv), R(kk ? f->yes : acc));
    for (int kk = 0; kk < TCB_BM / 16; kk++)                            /* dK += dS^T Q */
        INS(e, TC_MMA_1_F16_TS, A(f->taddr, f->c_dk), A(f->taddr, f->c_ds + 8 * kk), R(umma_desc_at(k, qm, kk * 16 * 128)),
            R(i_dk), R(kk ? f->yes : acc));
    {                                                                   /* dQ = dS K: M = 64 queries, K = 128 keys */
        Reg dsd = umma_desc(k, f->ds_off, umma_mn_rows(2 * TCB_BM));
        Reg km = at_part(k, f, umma_desc(k, f->k_off, umma_mn128(TCB_BN)), f->k_part);
        Reg i_dq = kc_imm32(k, umma_idesc_f16(dt, TCB_BM, f->dh, 1, 1));
        for (int kk = 0; kk < TCB_BN / 16; kk++)
            INS(e, TC_MMA_1_F16_SS, A(f->taddr, f->c_dq), R(umma_desc_at(k, dsd, kk * 16 * 2 * TCB_BM)),
                R(umma_desc_at(k, km, kk * 16 * 128)), R(i_dq), R(kk ? f->yes : f->no));
    }
    INS(e, TC_COMMIT_1, A(f->bar[TCB_DONE(f->stages)], 0));
    INS(e, TC_COMMIT_1, A(empty, 0));
    e_place(e, past);
}

static void issuer_role(Kctx *k, void *ctx) {
    TcBwd *f = ctx;
    Emit *e = &k->e;
    f->leader = e_reg(e, RC_PRED);
    INS(e, SETP_EQ_U32, R(f->leader), R(k->tid), I(TCB_ISSUER));
    f->yes = umma_const_pred(k, 1), f->no = umma_const_pred(k, 0);
    umma_wait(k, f->bar[TCB_KV], kc_imm32(k, 0));
    query_loop(k, &f->blocks, issue_step, f, 0);
}

/* ---- compute ---- */


/* Ordered: key block n's turn at the block of (head h, rows from m_start) and its part of the columns. The key
 * blocks that see the block are 0 .. last (key block 0 sees every block a later one sees); n adds once the
 * semaphore counts n, then adds 1 to it, or -n if it is the last, which leaves it 0 for another run of the kernel
 * alone (bench times it so). */
typedef struct { Reg sem, raise; } DqTurn;
static DqTurn dq_turn(Kctx *k, TcBwd *f, Reg h, Reg m_start) {
    Emit *e = &k->e;
    DqTurn t = {e_reg(e, RC_B64), e_reg(e, RC_B32)};
    Reg idx = e_reg(e, RC_B32), blk = e_reg(e, RC_B32), last = e_reg(e, RC_B32), is_last = e_reg(e, RC_PRED);
    INS(e, MAD_LO_U32, R(idx), R(f->b), R(kc_u32(k, "h_q")), R(h));
    INS(e, DIV_U32, R(blk), R(m_start), I(TCB_BM));
    INS(e, MAD_LO_U32, R(idx), R(idx), R(f->nblk), R(blk));
    if (f->dsplit > 1) INS(e, MAD_LO_U32, R(idx), R(idx), I(f->dsplit), R(f->part));
    INS(e, MAD_WIDE_U32, R(t.sem), R(idx), I(4), R(kc_ptr(k, "dq_sem")));
    INS(e, MOV_B32, R(last), R(f->top_n));
    if (f->d->causal) {   /* the block's last row q sees keys up to q + off */
        Reg q = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(q), R(m_start), I(TCB_BM));
        INS(e, MIN_U32, R(q), R(q), R(f->s_q));
        INS(e, ADD_U32, R(q), R(q), R(f->off));
        INS(e, SUB_U32, R(q), R(q), I(1));
        INS(e, DIV_U32, R(q), R(q), I(TCB_BN));
        INS(e, MIN_U32, R(last), R(last), R(q));
    }
    INS(e, SETP_EQ_U32, R(is_last), R(f->n), R(last));
    INS(e, SUB_S32, R(t.raise), R(kc_imm32(k, 0)), R(f->n));
    INS(e, SELP_B32, R(t.raise), R(t.raise), I(1), R(is_last));
    return t;
}

/* The compute warps wait for the turn: warp 0 spins on the semaphore (acquire), the others at the barrier. */
static void dq_wait_turn(Kctx *k, TcBwd *f, DqTurn t) {
    Emit *e = &k->e;
    Reg w0 = e_reg(e, RC_PRED), p = e_reg(e, RC_PRED), v = e_reg(e, RC_B32);
    int spin = e_label(e), past = e_label(e);
    e_comment(e, "dQ adds in key-block order: wait until the key blocks below this one added theirs");
    INS(e, SETP_NE_U32, R(w0), R(k->warp), I(0));
    INSP(e, w0, 0, BRA_UNI, L(past));
    e_place(e, spin);
    INS(e, LD_ACQUIRE_GPU_U32, R(v), A(t.sem, 0));
    INS(e, SETP_NE_U32, R(p), R(v), R(f->n));
    INSP(e, p, 0, BRA, L(spin));
    e_place(e, past);
    INS(e, BAR_SYNC_N, R(kc_imm32(k, 1)), R(kc_imm32(k, 128)));
}

/* Every compute thread's adds issued, thread 0 raises the semaphore (release: the adds before it). */
static void dq_pass_turn(Kctx *k, DqTurn t) {
    Emit *e = &k->e;
    Reg t0 = e_reg(e, RC_PRED);
    INS(e, BAR_SYNC_N, R(kc_imm32(k, 1)), R(kc_imm32(k, 128)));
    INS(e, SETP_EQ_U32, R(t0), R(k->tid), I(0));
    INSP(e, t0, 0, RED_RELEASE_GPU_ADD_U32, A(t.sem, 0), R(t.raise));
}

/* dQ of step it (M=64, Layout F: query row 16 w + lane of warp w's lanes 0-15) added into the accumulator
 * [b, h_q, s_q, d], rows below s_q only. */
static void dq_out(Kctx *k, TcBwd *f, Reg it) {
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    Reg h, m_start, row = e_reg(e, RC_B32), ok = e_reg(e, RC_PRED), lo = e_reg(e, RC_PRED), idx = e_reg(e, RC_B32);
    query_block_at(k, &f->blocks, it, f->kvh, &h, &m_start);
    e_comment(e, "wait: the step's MMAs done, dQ among them");
    umma_wait(k, f->bar[TCB_DONE(f->stages)], mbar_parity(k, it, 0, 0));
    INS(e, MAD_LO_U32, R(row), R(k->warp), I(16), R(m_start));
    INS(e, ADD_U32, R(row), R(row), R(k->lane));
    INS(e, SETP_LT_U32, R(lo), R(k->lane), I(16));
    INS(e, SELP_B32, R(row), R(row), R(f->s_q), R(lo));                 /* lanes 16-31 hold no row of dQ */
    INS(e, SETP_LT_U32, R(ok), R(row), R(f->s_q));
    if (d->varlen) INS(e, ADD_U32, R(idx), R(attn_stats_row(k, d, f->b, h)), R(row));   /* [h_q, total_q, d] */
    else {
        INS(e, MAD_LO_U32, R(idx), R(f->b), R(kc_u32(k, "h_q")), R(h));
        INS(e, MAD_LO_U32, R(idx), R(idx), R(f->s_q), R(row));
    }
    Reg a = e_reg(e, RC_B64);
    INS(e, MUL_WIDE_U32, R(a), R(idx), I(4 * d->d));
    INS(e, ADD_U64, R(a), R(a), R(kc_ptr(k, "dq_accum")));
    if (f->dsplit > 1) INS(e, MAD_WIDE_U32, R(a), R(f->col0), I(4), R(a));   /* this CTA's columns */
    DqTurn turn = {0};
    if (f->ordered) dq_wait_turn(k, f, turn = dq_turn(k, f, h, m_start));
    for (int c = 0; c < f->dh; c += 16) {
        Reg v[16];
        for (int i = 0; i < 16; i++) v[i] = e_reg(e, RC_F32);
        umma_tmem_load(k, f->tq, f->c_dq + c, v, 16);
        for (int i = 0; i < 16; i += 4)
            INSP(e, ok, 0, RED_GLOBAL_ADD_V4_F32, A(a, 4 * (c + i)), V4(v[i], v[i + 1], v[i + 2], v[i + 3]));
    }
    if (f->ordered) dq_pass_turn(k, turn);
}

/* Step it: P^T and dS^T of this thread's key from S^T and dP^T, the step before's dQ out, then P^T and dS^T
 * into TMEM (over S^T and dP^T) and dS^T into its shared row. */
static void compute_step(Kctx *k, void *ctx, Reg it, int masked) {
    TcBwd *f = ctx;
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    e_comment(e, "compute a query block: %s", masked ? "causal, masked" : "fully visible");
    Reg s[TCB_BM], dp[TCB_BM], p[TCB_BM / 2], ds[TCB_BM / 2], full, parity, empty;
    for (int i = 0; i < TCB_BM; i++) s[i] = e_reg(e, RC_F32), dp[i] = e_reg(e, RC_F32);
    Reg stage = slot_of(k, f, it, &full, &parity, &empty);
    mbar_wait(k, full, parity, 0);                                        /* the slot's stats landed */
    umma_wait(k, f->bar[TCB_SD(f->stages)], mbar_parity(k, it, 0, 0));
    umma_tmem_load(k, f->tq, f->c_s, s, TCB_BM);
    umma_tmem_load(k, f->tq, f->c_dp, dp, TCB_BM);
    if (masked) {   /* key j sees query i when j <= i + off: S^T = -inf for i < j - off - m_start */
        Reg h, m_start, lim = e_reg(e, RC_B32);
        query_block_at(k, &f->blocks, it, f->kvh, &h, &m_start);
        INS(e, SUB_S32, R(lim), R(f->key), R(f->off));
        INS(e, SUB_S32, R(lim), R(lim), R(m_start));
        for (int i = 0; i < TCB_BM; i++) {
            Reg vis = e_reg(e, RC_PRED);
            INS(e, SETP_LE_S32, R(vis), R(lim), I(i));
            INS(e, SELP_F32, R(s[i]), R(s[i]), FI(-INFINITY), R(vis));
        }
    }
    if (d->varlen) {   /* past the sequence the packed rows are the next one's queries and keys (not a TMA zero-fill):
                        * S^T = -inf there, so P^T and dS^T are 0 */
        Reg h, m_start, lim = e_reg(e, RC_B32), key_ok = e_reg(e, RC_PRED);
        query_block_at(k, &f->blocks, it, f->kvh, &h, &m_start);
        INS(e, SUB_S32, R(lim), R(f->s_q), R(m_start));
        INS(e, SETP_LT_U32, R(key_ok), R(f->key), R(f->s_k));
        INS(e, SELP_B32, R(lim), R(lim), I(0), R(key_ok));
        for (int i = 0; i < TCB_BM; i++) {
            Reg vis = e_reg(e, RC_PRED);
            INS(e, SETP_GT_S32, R(vis), R(lim), I(i));
            INS(e, SELP_F32, R(s[i]), R(s[i]), FI(-INFINITY), R(vis));
        }
    }
    Reg sa = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(sa), R(k->smem), R(stage));
    for (int i = 0; i < TCB_BM; i += 4) {   /* the block's lse and delta: the same for every thread */
        Reg l[4], dl[4];
        for (int c = 0; c < 4; c++) l[c] = e_reg(e, RC_F32), dl[c] = e_reg(e, RC_F32);
        INS(e, LD_SHARED_V4_B32, V4(l[0], l[1], l[2], l[3]), A(sa, f->st_off + 4 * i));
        INS(e, LD_SHARED_V4_B32, V4(dl[0], dl[1], dl[2], dl[3]), A(sa, f->st_off + 4 * TCB_BM + 4 * i));
        for (int c = 0; c < 4; c++) {
            Reg x = s[i + c], y = dp[i + c];
            INS(e, MUL_F32, R(l[c]), R(l[c]), FI((float)-M_LOG2E));
            INS(e, FMA_F32, R(x), R(x), R(f->scale_log2), R(l[c]));
            INS(e, EX2_F32, R(x), R(x));                                  /* P^T */
            INS(e, SUB_F32, R(y), R(y), R(dl[c]));
            INS(e, MUL_F32, R(y), R(y), R(x));                            /* dS^T */
        }
    }
    for (int c = 0; c < TCB_BM / 8; c++) {
        f32x8_pack(k, d->dtype, s + 8 * c, p + 4 * c);
        f32x8_pack(k, d->dtype, dp + 8 * c, ds + 4 * c);
    }
    {   /* the step before's products done: its dQ out (dS's row free, and P^T, dS^T) */
        Reg first = e_reg(e, RC_PRED), prev = e_reg(e, RC_B32);
        int none = e_label(e);
        INS(e, SETP_EQ_U32, R(first), R(it), I(0));
        INSP(e, first, 0, BRA_UNI, L(none));
        INS(e, SUB_U32, R(prev), R(it), I(1));
        dq_out(k, f, prev);
        e_place(e, none);
    }
    {
        Reg tile = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(tile), R(k->smem), I(f->ds_off));
        for (int c = 0; c < TCB_BM / 8; c++)
            INS(e, ST_SHARED_V4_B32, umma_mn_row_chunk(k, tile, k->tid, 2 * TCB_BM, c),
                V4(ds[4 * c], ds[4 * c + 1], ds[4 * c + 2], ds[4 * c + 3]));
        INS0(e, FENCE_PROXY_ASYNC_CTA);                                   /* the dQ MMA reads what the threads wrote */
    }
    for (int c = 0; c < TCB_BM / 2; c += 16) {
        INS(e, TC_ST_32X32B_X16, A(f->tq, f->c_p + c), V(16, p + c));
        INS(e, TC_ST_32X32B_X16, A(f->tq, f->c_ds + c), V(16, ds + c));
    }
    tc_stores_arrive(k, f->bar[TCB_PDS(f->stages)]);
}

/* dK (scaled) and dV rounded to dk and dv, this thread's key row (keys past s_k skipped); a CTA no query
 * block sees writes zeros. */
static void epilogue(Kctx *k, TcBwd *f) {
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    Reg has = e_reg(e, RC_PRED), in = e_reg(e, RC_PRED), last = e_reg(e, RC_B32), scale = kc_f32(k, "softmax_scale");
    int none = e_label(e);
    INS(e, SETP_NE_U32, R(has), R(f->blocks.total), I(0));
    INSP(e, has, 1, BRA_UNI, L(none));
    INS(e, SUB_U32, R(last), R(f->blocks.total), I(1));
    dq_out(k, f, last);                                                   /* its wait covers every MMA */
    e_place(e, none);
    INS(e, SETP_LT_U32, R(in), R(f->key), R(f->s_k));
    const char *names[2] = {"dk", "dv"};
    int cols[2] = {f->c_dk, f->c_dv};
    for (int t = 0; t < 2; t++) {
        Reg a = attn_head_base(k, d, names[t], f->b, f->kvh);
        INS(e, MAD_WIDE_U32, R(a), R(f->key), R(row_stride_bytes(k, names[t])), R(a));
        if (f->dsplit > 1) INS(e, MAD_WIDE_U32, R(a), R(f->col0), I(2), R(a));
        tc_row_out(k, f->tq, cols[t], f->dh, has, t ? NULL : &scale, d->dtype, a, in);
    }
}

static void compute_role(Kctx *k, void *ctx) {
    TcBwd *f = ctx;
    Emit *e = &k->e;
    f->scale_log2 = scale_log2(k);
    f->key = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(f->key), R(f->key0), R(k->tid));
    {   /* dQ's M = 64 leaves lanes 16-31 of each quarter to no MMA: zeros, so its 32-lane reads read data */
        Reg z[16];
        for (int i = 0; i < 16; i++) z[i] = kc_imm32(k, 0);
        for (int c = 0; c < f->dh; c += 16) INS(e, TC_ST_32X32B_X16, A(f->tq, f->c_dq + c), V(16, z));
    }
    query_loop(k, &f->blocks, compute_step, f, 0);
    epilogue(k, f);
}

void attn_bwd_tc_main_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module) {
    Kctx kc;
    kctx_begin(&kc, ks);
    Kctx *k = &kc;
    Emit *e = &k->e;
    const AttnTile *t = &d->tile;
    TcBwd f = {.d = d, .stages = t->stages, .ordered = t->deterministic, .own_p = tcb_own_p(d), .dsplit = tcb_dsplit(d),
               .dh = tcb_dh(d), .k_off = plan_region(p, "K"), .v_off = plan_region(p, "V"),
               .q_off = plan_region(p, "Q.0"), .do_off = plan_region(p, "dO.0"), .st_off = plan_region(p, "stats.0")};
    f.slot = t->stages > 1 ? plan_region(p, "Q.1") - f.q_off : 0;
    f.ds_off = plan_region(p, "dS");
    for (int i = 0; i < p->ntmem; i++) {
        const TmemRegion *r = &p->tmem[i];
        int *col = !strcmp(r->name, "S^T") ? &f.c_s : !strcmp(r->name, "dP^T") ? &f.c_dp : !strcmp(r->name, "P^T") ? &f.c_p
                   : !strcmp(r->name, "dS^T") ? &f.c_ds : !strcmp(r->name, "dV") ? &f.c_dv
                   : !strcmp(r->name, "dK") ? &f.c_dk : !strcmp(r->name, "dQ") ? &f.c_dq : NULL;
        if (col) *col = r->col;
    }
    int nb = TCB_NBARS(t->stages);
    Opnd counts[TCB_NBARS(3)];
    for (int i = 0; i < nb; i++) counts[i] = I(1);          /* expect_tx or tcgen05.commit arrivals */
    counts[TCB_PDS(t->stages)] = I(128);                    /* every compute thread */
    int past = varlen_keys_exit(k, d, TCB_BN, f.dsplit);   /* before the TMEM allocation */
    e_comment(e, "prologue: barriers, TMEM");
    f.taddr = umma_prologue(k, plan_region(p, "bars"), nb, counts, f.bar, plan_tmem_alloc(p), 0, &f.tq);
    problem(k, &f);

    umma_roles6(k, "compute", compute_role, issuer_role, producer_role, &f);
    umma_epilogue(k, f.taddr, plan_tmem_alloc(p), 0);
    if (d->varlen) e_place(e, past);
    kctx_finish(k, module);
}
