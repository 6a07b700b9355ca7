/* attn_fwd, tcgen05 family (sm_100a / sm_103a): FlashAttention's forward with
 * S, P and O in TMEM, FA4's roles.
 *
 *   for each CTA (query rows [m0, m0 + 128) of head h, batch b):
 *     producer (warp 9, lane 0): Q once; K_n, V_n through a ring of `stages` slots (TMA)
 *     issuer (warp 8, lane 0), for each key block n:
 *       S_{n%2} = Q K_n^T                       SS MMAs; two S buffers
 *       O += P_{n-1} V_{n-1}  once P_{n-1} is in and O rescaled   TS MMAs: P from TMEM, V MN-major
 *     softmax (warps 0-3; thread r owns query row r, which is TMEM lane r), for each n:
 *       m' = max(m, rowmax S_n) if that is 2^8 above m (in exp2 units), else m;  P = exp2(scale S_n - scale m');
 *       l = l 2^(scale (m - m')) + rowsum P
 *       the factor 2^(scale (m - m')) to the correction warpgroup, P_n into P buffer n % 2
 *     correction (warps 4-7, the same rows): once P_{n-1} V_{n-1} is done, O *= the factor (skipped where no
 *       row of the warp moved; a row's max moves only once it grew by 2^8, softmax_lazy_max)
 *     epilogue (softmax): O / l -> o, lse = ln 2 (scale m + log2 l)
 *
 * So S_{n+1}'s MMAs run under the softmax of S_n, and the softmax of S_n does not wait for P_{n-1} V_{n-1}
 * (two P buffers; the correction waits instead). setmaxnreg gives the softmax 240 registers, the correction
 * 104, the last warpgroup (issuer, producer, two idle warps) 56; each role derives the CTA's problem itself
 * after it, so that nothing from before the split has to fit the smallest role.
 * With qtiles = 2 (FA4's M = 2 x 128) the CTA holds two Q tiles of 128 rows, a softmax warpgroup each and one S
 * and one O per tile in TMEM, P_t written over the upper half of S_t; per key block n the issuer runs
 *       O_0 += P_0(n-1) V_{n-1};  S_0 = Q_0 K_n^T;  O_1 += P_1(n-1) V_{n-1};  S_1 = Q_1 K_n^T
 * (issue_step2), each S_t once its P V has committed, since it overwrites P_t; so each tile's MMAs run while
 * the other tile's softmax works, and the correction warpgroup takes the tiles in turn.
 * With ctas = 2 a cluster of two CTAs shares each MMA (cta_group::2, M = 256): each CTA keeps its 128 query rows,
 * S, P and O, and loads half of each K tile (keys rank bn/2 ..) and of each V tile (columns rank d_v/2 ..), both
 * halves signalling the even CTA's barrier (produce_pair); the even CTA's thread issues for both, its commits
 * arrive in both CTAs, and both CTAs' softmax and correction threads arrive on its PAIR_READY.
 * With pack > 1 the 128 rows are pack query heads of one kv head x 128/pack tokens (row r: head
 * r % pack, token r / pack), one K/V tile for all of them (decode-shaped GQA); with poly > 1 every
 * poly-th exp2 of a row runs on the FMA units (exp2_poly) instead of MUFU.
 * The roles join by mbarriers only (attn_fwd_tc.h); their steps are produce_step(), issue_step(),
 * softmax_step() and correct_step(). */
#include "attn_fwd_tc.h"
#include "attn_splitkv.h"
#include <math.h>
#include <string.h>
#include "../templates/mbar.h"
#include "../templates/softmax.h"

typedef struct {
    const AttnDesc *d;
    int stages, bn, q_off, kv_off, kv_stride, alpha_off;
    int c_s, c_p, c_o;                /* TMEM columns of S.0 (S.1 follows), P.0 (P.1 follows), O (two Q tiles: O.0) */
    Reg bar[TC_FWD_NBARS(4, 2) + 1];
    Reg taddr, tq;                    /* TMEM base; this warp's lane quarter of it */
    int pack;                         /* query heads per CTA (tc_fwd_pack) */
    int qt;                           /* Q tiles per CTA (tc_fwd_qtiles) */
    TcFwdRoles ro;
    Reg ts, to;                       /* two Q tiles, softmax: this thread's tile's S and O at its lane quarter */
    Reg s_full, alpha_bar, pv_ready, p_free;   /* two Q tiles, softmax: its tile's barriers */
    int pair;                         /* a CTA pair (ctas=2): cta_group::2 MMAs issued by the even CTA for both */
    Reg rank, mask, lead_ready;       /* pair: this CTA's rank, the commits' CTA mask, the even CTA's PAIR_READY */
    Reg b, h, kvh, m_start, s_q, s_k, off, n_full, n_max;   /* h: the CTA's first query head; m_start: first token */
    Reg split, lo, hi;                /* split-KV: this CTA's split, its key blocks [lo, hi); n_max counts its steps */
    Reg j0, group;                    /* pack > 1: the first head's place in its kv head's group, the group's size */
    Reg leader;                       /* the lane of the issuer or producer warp that issues */
    /* issuer */
    Reg yes, no, q_desc, k_desc, v_desc;
    /* softmax: this thread's query row: its token and head, whether it is one to write */
    Reg row, head, ok, limit, m, l, scale_log2;
    Reg tb, q0, k0;                   /* TMA batch coordinate; varlen: the sequence's first packed query and key rows */
    KeyList kl;                       /* block-sparse: the row block's key list (problem) */
} TcFwd;

/* The CTA's tokens, heads, batch and key blocks: [0, n_full) need no mask, [n_full, n_max) do; block-sparse, the
 * steps are the key list's entries instead (n_max its count: every role but the softmax only counts them). Packed,
 * CTA y takes heads j0 .. j0 + pack - 1 of its kv head's group (packed_heads). */
static void problem(Kctx *k, TcFwd *f) {
    Emit *e = &k->e;
    int tokens = f->qt * TC_FWD_BM / f->pack;
    /* a pair owns the 256 rows of blocks 2 (x / 2) and + 1, and steps over the keys either of them sees */
    RowBlocks rb = {f->d->causal, tokens << f->pair, f->bn, 32, .last_first = f->d->causal, .pair = f->pair};
    Reg mblk = e_reg(e, RC_B32);
    row_block(k, &rb, mblk);
    if (f->pair) {   /* the cluster is CTAs 2 (x / 2) and + 1 */
        f->rank = e_reg(e, RC_B32);
        INS(e, MOV_B32, R(f->rank), SR("%ctaid.x"));
        INS(e, AND_B32, R(f->rank), R(f->rank), I(1));
    }
    cta_coords(k, &f->b, &f->h);
    if (f->d->splitkv) splitkv_coords(k, &f->b, &f->split);   /* %ctaid.z = b num_splits + split */
    if (f->pack == 1) f->kvh = kv_head_of(k, f->h);
    else packed_heads(k, f->pack, f->h, &f->group, &f->kvh, &f->j0, &f->h);
    if (f->d->varlen) {   /* packed (pack 1, one CTA): the sequence's lengths, TMA rows from its first, batch 0 */
        SeqSpan sp = seq_span(k, f->b);
        f->s_q = sp.s_q, f->s_k = sp.s_k, f->q0 = sp.q0, f->k0 = sp.k0, f->tb = kc_imm32(k, 0);
    } else {
        f->s_q = kc_u32(k, "s_q"), f->s_k = f->d->page_size ? paged_seqlen(k, f->b) : kc_u32(k, "s_k");
        f->tb = f->b;
    }
    f->m_start = e_reg(e, RC_B32), f->off = e_reg(e, RC_B32);
    INS(e, MUL_LO_U32, R(f->m_start), R(mblk), I(rb.bm));
    INS(e, SUB_S32, R(f->off), R(f->s_k), R(f->s_q));
    rb.s_q = f->s_q, rb.s_k = f->s_k, rb.off = f->off, rb.m_start = f->m_start,
    rb.own_lengths = f->d->varlen || f->d->page_size;
    f->n_full = e_reg(e, RC_B32), f->n_max = e_reg(e, RC_B32);
    key_blocks(k, &rb, f->n_full, f->n_max);
    if (f->d->splitkv) {   /* the split's share [lo, hi); every role but the softmax counts its steps from 0 */
        splitkv_range(k, f->split, f->n_max, f->n_full, &f->lo, &f->hi);
        INS(e, SUB_U32, R(f->n_max), R(f->hi), R(f->lo));
    }
    if (f->d->block_m) {
        sparse_key_list_at(k, &f->kl, f->qt * TC_FWD_BM, f->bn, f->b, f->h, mblk);
        f->n_max = f->kl.count;
    }
    if (f->pair) INS(e, MAD_LO_U32, R(f->m_start), R(f->rank), I(tokens), R(f->m_start));   /* this CTA's rows */
}

/* ---- a CTA pair's variants of the single CTA's steps ---- */

/* Wait for an MMA's commit (in a pair, multicast from the even CTA: cluster scope) */
static void mma_wait(Kctx *k, TcFwd *f, Reg bar, Reg parity) {
    if (f->pair) umma_wait_cluster(k, bar, parity);
    else umma_wait(k, bar, parity);
}

/* The issuer's MMAs so far, then an arrival on bar (in a pair, bar of both CTAs) */
static void mma_commit(Kctx *k, TcFwd *f, Reg bar) {
    if (f->pair) INS(&k->e, TC_COMMIT_2_MC, A(bar, 0), R(f->mask));
    else INS(&k->e, TC_COMMIT_1, A(bar, 0));
}

/* This thread's TMEM stores done, then its arrival on bar (and in a pair on the even CTA's PAIR_READY, which
 * its issuer waits for: both CTAs' P in and O rescaled) */
static void ready_arrive(Kctx *k, TcFwd *f, Reg bar) {
    tc_stores_arrive(k, bar);
    if (f->pair) INS(&k->e, MBAR_ARRIVE_REMOTE, SR("_"), A(f->lead_ready, 0));
}

/* Ring slot of key block n: its byte offset from slot 0, full and empty barriers, and the parity
 * of the full barrier's phase for this pass. */
static Reg kv_slot(Kctx *k, TcFwd *f, Reg n, Reg *full, Reg *parity, Reg *empty) {
    return wg_ring_slot(k, f->bar[TCF_KV_FULL], f->bar[TCF_KV_EMPTY(f->stages)], f->stages, n, f->kv_stride, full,
                        parity, empty);
}

/* base + (n & 1) * step: the even or odd one of a pair (S buffers, their barriers) */
static Reg of_pair(Kctx *k, Reg base, Reg n, int step) {
    Reg r = e_reg(&k->e, RC_B32);
    INS(&k->e, MAD_LO_U32, R(r), R(mbar_parity(k, n, 0, 0)), I(step), R(base));
    return r;
}

/* ---- producer ---- */

/* A pair's copy of rows x cols (from column col0) into this CTA's dst, signalling the even CTA's barrier
 * lead_bar (cta_group::2 lets a copy signal the pair's other CTA) */
static void tma_rows_2sm(Kctx *k, Reg map, int dst, int rows, int cols, Reg col0, Reg stage_off, Reg head, Reg row, Reg b,
                         Reg lead_bar) {
    Emit *e = &k->e;
    for (int s = 0; s < cols / UMMA_SLAB_COLS; s++) {
        Reg col = e_reg(e, RC_B32), a = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(col), R(col0), I(s * UMMA_SLAB_COLS));
        INS(e, ADD_U32, R(a), R(k->smem), R(stage_off));
        Reg c[4] = {col, head, row, b};
        INS(e, TMA_LOAD_4D_2SM, A(a, dst + s * rows * 128), TA(map, 4, c), A(lead_bar, 0));
    }
}

/* The even CTA's copy of one of its barriers (a cluster address; its own for the even CTA) */
static Reg lead_bar(Kctx *k, Reg bar) {
    Reg r = e_reg(&k->e, RC_B32);
    INS(&k->e, MAPA_SHARED, R(r), R(bar), R(kc_imm32(k, 0)));
    return r;
}

/* A pair's step n: each CTA's half of K_n (keys n bn + rank bn/2 ..) and of V_n (columns rank d_v/2 ..) into its
 * slot, both signalling the even CTA's full barrier, which expects the bytes of both. */
static void produce_pair(Kctx *k, TcFwd *f, Reg n, Reg stage, Reg full) {
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    Reg st = e_reg(e, RC_B64), row = e_reg(e, RC_B32), krow = e_reg(e, RC_B32), vcol = e_reg(e, RC_B32), even = e_reg(e, RC_PRED);
    Reg lead = lead_bar(k, full);
    INS(e, MUL_LO_U32, R(row), R(n), I(f->bn));
    INS(e, MAD_LO_U32, R(krow), R(f->rank), I(f->bn / 2), R(row));
    INS(e, MUL_LO_U32, R(vcol), R(f->rank), I(d->dv / 2));
    INS(e, SETP_EQ_U32, R(even), R(f->rank), I(0));
    int past = umma_leader_only(k, f->leader);
    INSP(e, even, 0, MBAR_ARRIVE_EXPECT_TX, R(st), A(full, 0), I(f->bn * (d->d + d->dv) * 2));
    tma_rows_2sm(k, kc_tmap(k, "k_map"), f->kv_off, f->bn / 2, d->d, kc_imm32(k, 0), stage, f->kvh, krow, f->b, lead);
    tma_rows_2sm(k, kc_tmap(k, "v_map"), f->kv_off + f->bn / 2 * d->d * 2, f->bn, d->dv / 2, vcol, stage, f->kvh, row,
                 f->b, lead);
    e_place(e, past);
}

/* Once the slot's last P V is done, K_n and V_n into it. */
static void produce_step(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    TcFwd *f = ctx;
    (void)n_max, (void)masked;
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    Reg full, parity, empty;
    Reg stage = kv_slot(k, f, n, &full, &parity, &empty);
    INS(e, XOR_B32, R(parity), R(parity), I(1));   /* a fresh slot counts as freed: the phase before the first */
    mbar_wait(k, empty, parity, f->pair);
    if (f->pair) {
        produce_pair(k, f, n, stage, full);
        return;
    }
    Reg st = e_reg(e, RC_B64), row = e_reg(e, RC_B32);
    INS(e, MUL_LO_U32, R(row), R(f->d->block_m ? sparse_entry(k, f->kl.list, n) : n), I(f->bn));
    if (f->d->varlen) INS(e, ADD_U32, R(row), R(row), R(f->k0));   /* the packed row */
    if (f->d->splitkv) INS(e, MAD_LO_U32, R(row), R(f->lo), I(f->bn), R(row));   /* step n is block lo + n */
    int past = umma_leader_only(k, f->leader);
    WgKeyBlock kb = wg_key_block(k, d->page_size, f->bn, f->b, row, f->s_k, f->tb);
    INS(e, MBAR_ARRIVE_EXPECT_TX, R(st), A(full, 0), I(f->bn * (d->d + d->dv) * 2));
    wg_tma_key_block(k, kc_tmap(k, "k_map"), f->kv_off, f->bn, d->d, stage, f->kvh, &kb, full);
    wg_tma_key_block(k, kc_tmap(k, "v_map"), f->kv_off + f->bn * d->d * 2, f->bn, d->dv, stage, f->kvh, &kb, full);
    e_place(e, past);
}

/* Every lane of the warp steps through the ring (the warp stays converged for the kernel's last
 * barrier); lane 0 issues the copies. */
static void producer_role(Kctx *k, void *ctx) {
    TcFwd *f = ctx;
    Emit *e = &k->e;
    Reg st = e_reg(e, RC_B64), n = e_reg(e, RC_B32);
    f->leader = e_reg(e, RC_PRED);
    INS(e, SETP_EQ_U32, R(f->leader), R(k->tid), I(f->ro.producer));
    if (f->pair) {   /* each CTA's Q into its own shared memory, signalling the even CTA's barrier (both Q tiles) */
        Reg even = e_reg(e, RC_PRED), lead = lead_bar(k, f->bar[TCF_Q]);
        INS(e, SETP_EQ_U32, R(even), R(f->rank), I(0));
        int past = umma_leader_only(k, f->leader);
        INSP(e, even, 0, MBAR_ARRIVE_EXPECT_TX, R(st), A(f->bar[TCF_Q], 0), I(2 * TC_FWD_BM * f->d->d * 2));
        tma_rows_2sm(k, kc_tmap(k, "q_map"), f->q_off, TC_FWD_BM, f->d->d, kc_imm32(k, 0), kc_imm32(k, 0), f->h,
                     f->m_start, f->b, lead);
        e_place(e, past);
        INS(e, MOV_B32, R(n), I(0));
        key_loop(k, produce_step, f, n, f->n_max, f->n_max, 0);
        return;
    }
    int past = umma_leader_only(k, f->leader);
    INS(e, MBAR_ARRIVE_EXPECT_TX, R(st), A(f->bar[TCF_Q], 0), I(f->qt * TC_FWD_BM * f->d->d * 2));
    /* packed: a box of pack heads x 128/pack tokens, which lands as rows (token, head), head innermost */
    for (int t = 0; t < f->qt; t++) {
        Reg m = f->m_start;
        if (t || f->d->varlen) {
            m = e_reg(e, RC_B32);
            INS(e, ADD_U32, R(m), R(f->m_start), I(t * TC_FWD_BM / f->pack));
            if (f->d->varlen) INS(e, ADD_U32, R(m), R(m), R(f->q0));   /* the packed row */
        }
        wg_tma_rows(k, kc_tmap(k, "q_map"), f->q_off + t * TC_FWD_BM * f->d->d * 2, TC_FWD_BM, f->d->d, kc_imm32(k, 0), f->h,
                    m, f->tb, f->bar[TCF_Q]);
    }
    e_place(e, past);
    INS(e, MOV_B32, R(n), I(0));
    key_loop(k, produce_step, f, n, f->n_max, f->n_max, 0);
}

/* ---- MMA issuer ---- */

/* S (at TMEM column s_col + col) = Q K^T from the Q tile q_bytes into Q and the K of ring slot `stage`: SS MMAs */
static void mma_s(Kctx *k, TcFwd *f, Reg stage, Reg s_col, int col, int q_bytes) {
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    int m = TC_FWD_BM << f->pair, krows = f->bn >> f->pair;   /* a pair: M = 256, each CTA bn/2 rows of K */
    Reg kd = wg_desc_plus(k, f->k_desc, stage), idesc = kc_imm32(k, umma_idesc_f16(d->dtype, m, f->bn, 0, 0));
    for (int c = 0; c < d->d / 16; c++) {
        int in = 32 * (c % 4);   /* 64 columns per slab, 16 (32 bytes) per MMA */
        Reg a = umma_desc_at(k, f->q_desc, q_bytes + (c / 4) * TC_FWD_BM * 128 + in);
        Reg b = umma_desc_at(k, kd, (c / 4) * krows * 128 + in);
        e_insn(e, NOGUARD, 0, f->pair ? OP_TC_MMA_2_F16_SS : OP_TC_MMA_1_F16_SS,
               OPNDS(A(s_col, col), R(a), R(b), R(idesc), R(c ? f->yes : f->no)));
    }
}

/* O (column o_col) += P (bf16 at p_col + p_off) V of ring slot `stage`: TS MMAs, P from TMEM, V MN-major; acc false
 * for key block 0, whose product O starts from */
static void mma_pv(Kctx *k, TcFwd *f, Reg stage, int o_col, Reg p_col, int p_off, Reg acc) {
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    Reg vd = wg_desc_plus(k, f->v_desc, stage), idesc = kc_imm32(k, umma_idesc_f16(d->dtype, TC_FWD_BM << f->pair, d->dv, 0, 1));
    for (int kk = 0; kk < f->bn / 16; kk++)
        e_insn(e, NOGUARD, 0, f->pair ? OP_TC_MMA_2_F16_TS : OP_TC_MMA_1_F16_TS,
               OPNDS(A(f->taddr, o_col), A(p_col, p_off + 8 * kk), R(umma_desc_at(k, vd, kk * 16 * 128)), R(idesc),
                     R(kk ? f->yes : acc)));
}

/* Paged: V_j's rows at or past the sequence's end are whatever the page holds there (another sequence's keys, stale
 * or unwritten memory), and P = 0 times a NaN there is NaN; the issuer warp zeroes them in the slot (whole 128-byte
 * rows of each 64-column slab, so the swizzle does not matter) and fences them to the MMA's async proxy. */
static void zero_v_tail(Kctx *k, TcFwd *f, Reg stage, Reg j) {
    Emit *e = &k->e;
    int bn = f->bn, top = e_label(e), done = e_label(e);
    Reg left = e_reg(e, RC_B32), p = e_reg(e, RC_PRED), r = e_reg(e, RC_B32), base = e_reg(e, RC_B32);
    Reg z = e_reg(e, RC_B32), chunk = e_reg(e, RC_B32);
    INS(e, MUL_LO_U32, R(left), R(j), I(bn));
    if (f->d->splitkv) INS(e, MAD_LO_U32, R(left), R(f->lo), I(bn), R(left));   /* step j is block lo + j */
    INS(e, SUB_S32, R(left), R(f->s_k), R(left));   /* rows of the sequence in the block: zero from there */
    INS(e, SETP_GE_S32, R(p), R(left), I(bn));
    INSP(e, p, 0, BRA_UNI, L(done));
    INS(e, MOV_B32, R(z), I(0));
    INS(e, AND_B32, R(chunk), R(k->lane), I(7));
    INS(e, SHL_B32, R(chunk), R(chunk), I(4));
    INS(e, ADD_U32, R(base), R(k->smem), R(stage));
    INS(e, ADD_U32, R(base), R(base), R(chunk));
    INS(e, MOV_B32, R(r), R(left));   /* 4 rows a pass: lane / 8 the row, lane % 8 its 16-byte chunk */
    e_place(e, top);
    INS(e, SETP_GE_S32, R(p), R(r), I(bn));
    INSP(e, p, 0, BRA_UNI, L(done));
    Reg mine = e_reg(e, RC_B32), in = e_reg(e, RC_PRED), a = e_reg(e, RC_B32);
    INS(e, SHR_U32, R(mine), R(k->lane), I(3));
    INS(e, ADD_U32, R(mine), R(mine), R(r));
    INS(e, SETP_LT_S32, R(in), R(mine), I(bn));
    INS(e, MAD_LO_U32, R(a), R(mine), I(128), R(base));
    for (int s = 0; s < f->d->dv / UMMA_SLAB_COLS; s++)
        INSP(e, in, 0, ST_SHARED_V4_B32, A(a, f->kv_off + bn * f->d->d * 2 + s * bn * 128), V4(z, z, z, z));
    INS(e, ADD_U32, R(r), R(r), I(4));
    INS(e, BRA_UNI, L(top));
    e_place(e, done);
    INS0(e, FENCE_PROXY_ASYNC_CTA);
    INS(e, BAR_WARP_SYNC, I(-1));
}

/* O += P_j V_j once the softmax put P_j in and the correction rescaled O; then O done, K_j/V_j's slot and
 * P_j's buffer free. */
static void issue_pv(Kctx *k, TcFwd *f, Reg j) {
    Emit *e = &k->e;
    Reg full, parity, empty, acc = e_reg(e, RC_PRED);
    Reg stage = kv_slot(k, f, j, &full, &parity, &empty);
    mma_wait(k, f, f->bar[f->pair ? TCF_PAIR_READY(f->stages) : TCF_PV_READY(f->stages, 1)], mbar_parity(k, j, 0, 0));
    if (f->d->page_size) zero_v_tail(k, f, stage, j);
    INS(e, SETP_NE_U32, R(acc), R(j), I(0));            /* false for block 0: O starts from its product */
    Reg p_col = of_pair(k, f->taddr, j, f->bn / 2), p_free = of_pair(k, f->bar[TCF_P_FREE(f->stages)], j, 8);
    int past = umma_leader_only(k, f->leader);
    mma_pv(k, f, stage, f->c_o, p_col, f->c_p, acc);
    mma_commit(k, f, f->bar[TCF_O_DONE(f->stages)]);
    mma_commit(k, f, empty);
    mma_commit(k, f, p_free);
    e_place(e, past);
}

/* Key block n: S_n = Q K_n^T into S buffer n % 2 once K_n landed, then P_{n-1} V_{n-1}. The buffer is
 * free: the softmax read S_{n-2} out before it put P_{n-2} in, which the previous step waited for. */
static void issue_step(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    TcFwd *f = ctx;
    (void)n_max, (void)masked;
    Emit *e = &k->e;
    Reg full, parity, empty, first = e_reg(e, RC_PRED), prev = e_reg(e, RC_B32);
    Reg stage = kv_slot(k, f, n, &full, &parity, &empty);
    mma_wait(k, f, full, parity);
    Reg s_col = of_pair(k, f->taddr, n, f->bn), s_full = of_pair(k, f->bar[TCF_S_FULL(f->stages)], n, 8);
    int past = umma_leader_only(k, f->leader);
    mma_s(k, f, stage, s_col, f->c_s, 0);
    mma_commit(k, f, s_full);
    e_place(e, past);
    int none = e_label(e);
    INS(e, SETP_EQ_U32, R(first), R(n), I(0));
    INSP(e, first, 0, BRA_UNI, L(none));
    INS(e, SUB_U32, R(prev), R(n), I(1));
    issue_pv(k, f, prev);
    e_place(e, none);
}

/* Two Q tiles: O_t += P_t(j) V_j once tile t's softmax put P in and the correction rescaled O_t; then P_t (so S_t)
 * free and, after the last tile, K_j/V_j's slot. then_wait: wait for that commit, since S_t's next MMAs write over
 * P_t and the ISA orders MMA after MMA only for the same accumulator and shape. */
static void issue_pv2(Kctx *k, TcFwd *f, Reg j, int t, int then_wait) {
    Emit *e = &k->e;
    Reg full, parity, empty, acc = e_reg(e, RC_PRED);
    Reg stage = kv_slot(k, f, j, &full, &parity, &empty), p_free = f->bar[TCF_P_FREE(f->stages) + t];
    mma_wait(k, f, f->bar[TCF_PV_READY(f->stages, 2) + t], mbar_parity(k, j, 0, 0));
    INS(e, SETP_NE_U32, R(acc), R(j), I(0));
    int past = umma_leader_only(k, f->leader);
    mma_pv(k, f, stage, f->c_o + t * f->d->dv, f->taddr, f->c_s + t * f->bn + f->bn / 2, acc);
    mma_commit(k, f, p_free);
    if (t == f->qt - 1) mma_commit(k, f, empty);
    e_place(e, past);
    if (!then_wait) return;
    e_comment(e, "wait: P_t V done before S_t goes over P_t");
    mma_wait(k, f, p_free, mbar_parity(k, j, 0, 0));
}

/* Key block n with two Q tiles, tile by tile: P_t(n-1) V_{n-1}, then S_t(n) = Q_t K_n^T into the same columns,
 * so each tile's MMAs run while the other tile's softmax works. */
static void issue_step2(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    TcFwd *f = ctx;
    (void)n_max, (void)masked;
    Emit *e = &k->e;
    Reg full, parity, empty, first = e_reg(e, RC_PRED), prev = e_reg(e, RC_B32);
    Reg stage = kv_slot(k, f, n, &full, &parity, &empty);
    INS(e, SETP_EQ_U32, R(first), R(n), I(0));
    INS(e, SUB_U32, R(prev), R(n), I(1));
    for (int t = 0; t < f->qt; t++) {
        int fresh = e_label(e);
        INSP(e, first, 0, BRA_UNI, L(fresh));
        issue_pv2(k, f, prev, t, 1);
        e_place(e, fresh);
        if (!t) mma_wait(k, f, full, parity);
        int past = umma_leader_only(k, f->leader);
        mma_s(k, f, stage, f->taddr, f->c_s + t * f->bn, t * TC_FWD_BM * f->d->d * 2);
        mma_commit(k, f, f->bar[TCF_S_FULL(f->stages) + t]);
        e_place(e, past);
    }
}

static void issuer_role(Kctx *k, void *ctx) {
    TcFwd *f = ctx;
    Emit *e = &k->e;
    Reg n = e_reg(e, RC_B32), none = e_reg(e, RC_PRED), last = e_reg(e, RC_B32);
    f->leader = e_reg(e, RC_PRED);
    INS(e, SETP_EQ_U32, R(f->leader), R(k->tid), I(f->ro.issuer));
    int empty = e_label(e);
    if (f->pair) {   /* the even CTA's issuer issues for both */
        Reg odd = e_reg(e, RC_PRED);
        INS(e, SETP_NE_U32, R(odd), R(f->rank), I(0));
        INSP(e, odd, 0, BRA_UNI, L(empty));
        f->mask = e_reg(e, RC_B16);
        INS(e, MOV_B16, R(f->mask), I(3));
    }
    f->yes = umma_const_pred(k, 1), f->no = umma_const_pred(k, 0);
    f->q_desc = umma_desc(k, f->q_off, umma_kmajor128());
    f->k_desc = umma_desc(k, f->kv_off, umma_kmajor128());
    f->v_desc = umma_desc(k, f->kv_off + (f->bn >> f->pair) * f->d->d * 2, umma_mn128(f->bn));
    mma_wait(k, f, f->bar[TCF_Q], kc_imm32(k, 0));
    INS(e, MOV_B32, R(n), I(0));
    key_loop(k, f->qt == 1 ? issue_step : issue_step2, f, n, f->n_max, f->n_max, 0);
    INS(e, SETP_EQ_U32, R(none), R(f->n_max), I(0));
    INSP(e, none, 0, BRA_UNI, L(empty));
    INS(e, SUB_U32, R(last), R(f->n_max), I(1));
    if (f->qt == 1) issue_pv(k, f, last);
    for (int t = 0; f->qt > 1 && t < f->qt; t++) issue_pv2(k, f, last, t, 0);
    e_place(e, empty);
}

/* ---- softmax ---- */


/* O *= alpha over this warp's rows, unless no row of the warp has a new maximum (alpha == 1 for all:
 * FA4's conditional rescale; the branch is uniform, as tcgen05.ld/st need). */
static void rescale_o(Kctx *k, TcFwd *f, Reg alpha, int o_col) {
    Emit *e = &k->e;
    Reg same = e_reg(e, RC_PRED), mask = e_reg(e, RC_B32), all = e_reg(e, RC_PRED);
    int skip = e_label(e);
    INS(e, SETP_EQ_F32, R(same), R(alpha), FI(1.0f));
    INS(e, VOTE_BALLOT, R(mask), R(same), I(-1));
    INS(e, SETP_EQ_U32, R(all), R(mask), I(-1));
    INSP(e, all, 0, BRA_UNI, L(skip));
    for (int c = 0; c < f->d->dv; c += 16) {
        Reg v[16];
        for (int i = 0; i < 16; i++) v[i] = e_reg(e, RC_F32);
        umma_tmem_load(k, f->tq, o_col + c, v, 16);
        for (int i = 0; i < 16; i++) INS(e, MUL_F32, R(v[i]), R(v[i]), R(alpha));
        INS(e, TC_ST_32X32B_X16, A(f->tq, o_col + c), V(16, v));
    }
    e_place(e, skip);
}

/* One Q tile, before P_n goes out: the factor out to the correction warpgroup once it took the last one (its part
 * of P_{n-1}'s readiness), P_n into its buffer once P_{n-2} V_{n-2} is done with it. */
static void wait_p_buffer(Kctx *k, TcFwd *f, Reg n) {
    Emit *e = &k->e;
    Reg first = e_reg(e, RC_PRED), early = e_reg(e, RC_PRED), prev = e_reg(e, RC_B32);
    int none = e_label(e), fresh = e_label(e);
    INS(e, SETP_EQ_U32, R(first), R(n), I(0));
    INSP(e, first, 0, BRA_UNI, L(none));
    INS(e, SUB_U32, R(prev), R(n), I(1));
    mbar_wait(k, f->bar[TCF_PV_READY(f->stages, 1)], mbar_parity(k, prev, 0, 0), 0);
    INS(e, SETP_LT_U32, R(early), R(n), I(2));
    INSP(e, early, 0, BRA_UNI, L(fresh));
    Reg q = e_reg(e, RC_B32);                                  /* P.(n % 2)'s phase of n - 2: (n / 2 - 1) & 1 */
    INS(e, SHR_U32, R(q), R(n), I(1));
    INS(e, ADD_U32, R(q), R(q), I(1));
    INS(e, AND_B32, R(q), R(q), I(1));
    mma_wait(k, f, of_pair(k, f->bar[TCF_P_FREE(f->stages)], n, 8), q);
    e_place(e, fresh);
    e_place(e, none);
}

/* Key block n: P_n from S_n into TMEM, l and m moved on, the rows' factors to the correction warpgroup. */
static void softmax_step(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    TcFwd *f = ctx;
    (void)n_max;
    Emit *e = &k->e;
    int bn = f->bn;
    e_comment(e, "softmax of key block n: %s", masked ? "ragged or causal, masked" : "fully visible");
    Reg c = f->d->block_m ? f->kl.t : n;   /* the step's count (block-sparse: the list position; n the key block) */
    if (f->d->splitkv) INS(e, SUB_U32, R(c = e_reg(e, RC_B32)), R(n), R(f->lo));   /* split-KV: from the split's first */
    Reg s[128], p[64];
    for (int j = 0; j < bn; j++) s[j] = e_reg(e, RC_F32);
    if (f->qt == 1) {   /* S buffer n % 2 */
        mma_wait(k, f, of_pair(k, f->bar[TCF_S_FULL(f->stages)], c, 8), mbar_parity(k, c, 1, 0));
        umma_tmem_load(k, of_pair(k, f->tq, c, bn), f->c_s, s, bn);
    } else {            /* this tile's S */
        e_comment(e, "wait: this tile's S_n landed");
        mma_wait(k, f, f->s_full, mbar_parity(k, c, 0, 0));
        umma_tmem_load(k, f->ts, f->c_s, s, bn);
    }
    if (masked) {   /* key n bn + j is visible to this row when j < limit - n bn */
        Reg room = e_reg(e, RC_B32);
        INS(e, MUL_LO_U32, R(room), R(n), I(bn));
        INS(e, SUB_S32, R(room), R(f->limit), R(room));
        for (int j = 0; j < bn; j++) {
            Reg vis = e_reg(e, RC_PRED);
            INS(e, SETP_GT_S32, R(vis), R(room), I(j));
            INS(e, SELP_F32, R(s[j]), R(s[j]), FI(-INFINITY), R(vis));
        }
    }
    /* the row max by `chains` independent chains over runs of the row, then a tree, so its steps do not all wait
     * on one another: bn/2 chains of one pair at 240 registers; 8 at two Q tiles' 192, where bn/2 more live values
     * beside S would spill */
    Reg mx[64];
    int chains = f->qt == 1 ? bn / 2 : 8, run = bn / chains;
    for (int j = 0; j < chains; j++) {
        mx[j] = e_reg(e, RC_F32);
        INS(e, MAX_F32, R(mx[j]), R(s[run * j]), R(s[run * j + 1]));
        for (int i = 2; i < run; i++) INS(e, MAX_F32, R(mx[j]), R(mx[j]), R(s[run * j + i]));
    }
    for (int w = chains / 2; w >= 1; w /= 2)
        for (int j = 0; j < w; j++) INS(e, MAX_F32, R(mx[j]), R(mx[j]), R(mx[j + w]));
    INS(e, MAX_F32, R(mx[0]), R(mx[0]), R(f->m));
    softmax_lazy_max(k, mx[0], f->m, f->scale_log2);   /* the correction then skips O where the warp's rows stayed */
    Reg ms = softmax_scaled_max(k, mx[0], f->scale_log2);
    Reg neg_ms = e_reg(e, RC_F32), alpha = e_reg(e, RC_F32), sum = e_reg(e, RC_F32);
    INS(e, SUB_F32, R(neg_ms), FI(0.0f), R(ms));
    INS(e, FMA_F32, R(alpha), R(f->m), R(f->scale_log2), R(neg_ms));
    INS(e, EX2_F32, R(alpha), R(alpha));
    INS(e, MOV_F32, R(f->m), R(mx[0]));
    INS(e, MOV_F32, R(sum), FI(0.0f));
    int every = f->d->tile.poly;   /* every poly-th exp2 on the FMA units, the rest on MUFU */
    for (int j = 0; j < bn; j++) {
        INS(e, FMA_F32, R(s[j]), R(s[j]), R(f->scale_log2), R(neg_ms));
        if (every && j % every == every - 1) exp2_poly(k, s[j]);
        else INS(e, EX2_F32, R(s[j]), R(s[j]));
        e_insn(e, NOGUARD, 0, every ? OP_ADD_FTZ_F32 : OP_ADD_F32, OPNDS(R(sum), R(sum), R(s[j])));
    }
    INS(e, FMA_F32, R(f->l), R(f->l), R(alpha), R(sum));
    for (int c = 0; c < bn / 8; c++) f32x8_pack(k, f->d->dtype, s + 8 * c, p + 4 * c);
    if (f->qt == 1) wait_p_buffer(k, f, c);
    /* two Q tiles: S_n's MMAs came after P_{n-1} V_{n-1} was done, and after the correction's step n-1 (it
     * read the factor of n-2 before): P_n may go over S_n, the factor into its slot */
    Reg st = e_reg(e, RC_B64), aa = e_reg(e, RC_B32);
    INS(e, MAD_LO_U32, R(aa), R(mbar_parity(k, c, 0, 0)), I(4 * TC_FWD_BM * f->qt), R(k->smem));
    INS(e, MAD_LO_U32, R(aa), R(k->tid), I(4), R(aa));
    INS(e, ST_SHARED_F32, A(aa, f->alpha_off), R(alpha));
    if (f->qt == 1) {
        INS(e, MBAR_ARRIVE, R(st), A(f->bar[TCF_ALPHA(f->stages)], 0));
        Reg p_col = of_pair(k, f->tq, c, bn / 2);
        for (int c = 0; c < bn / 2; c += 16) INS(e, TC_ST_32X32B_X16, A(p_col, f->c_p + c), V(16, p + c));
        ready_arrive(k, f, f->bar[TCF_PV_READY(f->stages, 1)]);
        return;
    }
    INS(e, MBAR_ARRIVE, R(st), A(f->alpha_bar, 0));
    for (int c = 0; c < bn / 2; c += 16) INS(e, TC_ST_32X32B_X16, A(f->ts, f->c_s + bn / 2 + c), V(16, p + c));
    tc_stores_arrive(k, f->pv_ready);
}


/* ---- correction ---- */

/* Key block n for this thread's row of Q tile t (its softmax twin's): once the row's factor is out and
 * P_{n-1} V_{n-1} is done, O rescaled in TMEM; then its part of P_n V_n's readiness. */
static void correct_tile(Kctx *k, TcFwd *f, Reg n, int t) {
    Emit *e = &k->e;
    int one = f->qt == 1;
    Reg done = one ? f->bar[TCF_O_DONE(f->stages)] : f->bar[TCF_P_FREE(f->stages) + t];
    Reg aa = e_reg(e, RC_B32), alpha = e_reg(e, RC_F32), first = e_reg(e, RC_PRED), prev = e_reg(e, RC_B32);
    int none = e_label(e);
    mbar_wait(k, f->bar[TCF_ALPHA(f->stages) + t], mbar_parity(k, n, 0, 0), 0);
    INS(e, MAD_LO_U32, R(aa), R(mbar_parity(k, n, 0, 0)), I(4 * TC_FWD_BM * f->qt), R(k->smem));
    INS(e, SUB_U32, R(prev), R(k->tid), I(f->ro.correction - TC_FWD_BM * t));   /* the twin's thread */
    INS(e, MAD_LO_U32, R(aa), R(prev), I(4), R(aa));
    INS(e, LD_SHARED_F32, R(alpha), A(aa, f->alpha_off));
    INS(e, SETP_EQ_U32, R(first), R(n), I(0));
    INSP(e, first, 0, BRA_UNI, L(none));
    INS(e, SUB_U32, R(prev), R(n), I(1));
    e_comment(e, "wait: P_{n-1} V_{n-1} done");
    mma_wait(k, f, done, mbar_parity(k, prev, 0, 0));
    rescale_o(k, f, alpha, f->c_o + t * f->d->dv);
    e_place(e, none);
    ready_arrive(k, f, f->bar[TCF_PV_READY(f->stages, f->qt) + t]);
}

/* Key block n: each Q tile's O in turn (tile 0's softmax is the one ahead) */
static void correct_step(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    TcFwd *f = ctx;
    (void)n_max, (void)masked;
    for (int t = 0; t < f->qt; t++) correct_tile(k, f, n, t);
}

static void correction_role(Kctx *k, void *ctx) {
    TcFwd *f = ctx;
    Reg n = e_reg(&k->e, RC_B32);
    if (f->qt > 1) {   /* the lane quarter past setmaxnreg (see umma_lane_quarter) */
        f->tq = e_reg(&k->e, RC_B32);
        umma_lane_quarter(k, f->taddr, f->tq);
    }
    if (f->pair) f->lead_ready = lead_bar(k, f->bar[TCF_PAIR_READY(f->stages)]);
    INS(&k->e, MOV_B32, R(n), I(0));
    key_loop(k, correct_step, f, n, f->n_max, f->n_max, 0);
}

/* O / l rounded to o and the row's lse, for rows of a token below s_q and a head of the group; a CTA that saw
 * no key writes 0 and +inf. */
static void epilogue(Kctx *k, TcFwd *f) {
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    Reg has = e_reg(e, RC_PRED), empty = e_reg(e, RC_PRED), last = e_reg(e, RC_B32);
    int none = e_label(e);
    INS(e, SETP_NE_U32, R(has), R(f->n_max), I(0));
    INSP(e, has, 1, BRA_UNI, L(none));
    INS(e, SUB_U32, R(last), R(f->n_max), I(1));
    mma_wait(k, f, f->qt == 1 ? f->bar[TCF_O_DONE(f->stages)] : f->p_free, mbar_parity(k, last, 0, 0));
    e_place(e, none);
    Reg inv = e_reg(e, RC_F32), lse = e_reg(e, RC_F32);
    INS(e, SETP_EQ_F32, R(empty), R(f->l), FI(0.0f));
    INS(e, RCP_F32, R(inv), R(f->l));
    INS(e, SELP_F32, R(inv), FI(0.0f), R(inv), R(empty));
    INS(e, LG2_F32, R(lse), R(f->l));
    INS(e, ADD_F32, R(lse), R(lse), R(softmax_scaled_max(k, f->m, f->scale_log2)));
    INS(e, MUL_F32, R(lse), R(lse), FI((float)M_LN2));
    INS(e, SELP_F32, R(lse), FI(INFINITY), R(lse), R(empty));
    Reg in = f->ok, la = e_reg(e, RC_B32), lp = e_reg(e, RC_B64);
    if (d->splitkv) {   /* the split's partials, for the combine: LSE and the normalized O row in fp32 */
        Reg i = splitkv_row(k, f->head, f->row), op = e_reg(e, RC_B64), oi = e_reg(e, RC_B32);
        INS(e, MAD_WIDE_U32, R(lp), R(i), I(4), R(kc_ptr(k, "lse_part")));
        INSP(e, in, 0, ST_GLOBAL_F32, A(lp, 0), R(lse));
        INS(e, MUL_LO_U32, R(oi), R(i), I(d->dv));
        INS(e, MAD_WIDE_U32, R(op), R(oi), I(4), R(kc_ptr(k, "o_part")));
        tc_row_out_f32(k, f->to, f->c_o, d->dv, has, &inv, op, in);
        return;
    }
    INS(e, ADD_U32, R(la), R(attn_stats_row(k, f->d, f->b, f->head)), R(f->row));
    INS(e, MAD_WIDE_U32, R(lp), R(la), I(4), R(kc_ptr(k, "lse")));
    INSP(e, in, 0, ST_GLOBAL_F32, A(lp, 0), R(lse));
    Reg oa = attn_head_base(k, f->d, "o", f->b, f->head);
    INS(e, MAD_WIDE_U32, R(oa), R(f->row), R(row_stride_bytes(k, "o")), R(oa));
    tc_row_out(k, f->to, f->c_o, d->dv, has, &inv, d->dtype, oa, in);
}

static void softmax_role(Kctx *k, void *ctx) {
    TcFwd *f = ctx;
    Emit *e = &k->e;
    Reg n = e_reg(e, RC_B32);
    f->scale_log2 = scale_log2(k);
    f->row = e_reg(e, RC_B32), f->limit = e_reg(e, RC_B32), f->m = e_reg(e, RC_F32), f->l = e_reg(e, RC_F32);
    f->ok = e_reg(e, RC_PRED);
    f->ts = f->to = f->tq;
    if (f->pair) f->lead_ready = lead_bar(k, f->bar[TCF_PAIR_READY(f->stages)]);
    if (f->qt > 1) {   /* warpgroup t: Q tile t, its S and O columns and barriers */
        Reg t = e_reg(e, RC_B32);
        f->tq = e_reg(e, RC_B32);
        umma_lane_quarter(k, f->taddr, f->tq);
        f->ts = e_reg(e, RC_B32), f->to = e_reg(e, RC_B32), f->s_full = e_reg(e, RC_B32), f->alpha_bar = e_reg(e, RC_B32);
        f->pv_ready = e_reg(e, RC_B32), f->p_free = e_reg(e, RC_B32);
        INS(e, SHR_U32, R(t), R(k->tid), I(7));
        INS(e, MAD_LO_U32, R(f->ts), R(t), I(f->bn), R(f->tq));
        INS(e, MAD_LO_U32, R(f->to), R(t), I(f->d->dv), R(f->tq));
        INS(e, MAD_LO_U32, R(f->s_full), R(t), I(8), R(f->bar[TCF_S_FULL(f->stages)]));
        INS(e, MAD_LO_U32, R(f->alpha_bar), R(t), I(8), R(f->bar[TCF_ALPHA(f->stages)]));
        INS(e, MAD_LO_U32, R(f->pv_ready), R(t), I(8), R(f->bar[TCF_PV_READY(f->stages, 2)]));
        INS(e, MAD_LO_U32, R(f->p_free), R(t), I(8), R(f->bar[TCF_P_FREE(f->stages)]));
    }
    if (f->pack == 1) {
        f->head = f->h;
        INS(e, ADD_U32, R(f->row), R(f->m_start), R(k->tid));
        INS(e, SETP_LT_U32, R(f->ok), R(f->row), R(f->s_q));
    } else {   /* row tid: head tid % pack, token tid / pack */
        Reg j = e_reg(e, RC_B32), mine = e_reg(e, RC_PRED), lim = e_reg(e, RC_B32);
        f->head = e_reg(e, RC_B32);
        INS(e, REM_U32, R(j), R(k->tid), I(f->pack));
        INS(e, ADD_U32, R(f->head), R(f->h), R(j));
        INS(e, DIV_U32, R(f->row), R(k->tid), I(f->pack));
        INS(e, ADD_U32, R(f->row), R(f->row), R(f->m_start));
        INS(e, ADD_U32, R(j), R(j), R(f->j0));
        INS(e, SETP_LT_U32, R(mine), R(j), R(f->group));     /* a head of the next group: read, never written */
        INS(e, SELP_B32, R(lim), R(f->s_q), I(0), R(mine));
        INS(e, SETP_LT_U32, R(f->ok), R(f->row), R(lim));
    }
    INS(e, MOV_B32, R(f->limit), R(f->s_k));
    if (f->d->causal) {   /* row q sees keys up to q + s_k - s_q (bottom-right aligned) */
        Reg c = e_reg(e, RC_B32);
        INS(e, ADD_S32, R(c), R(f->row), R(f->off));
        INS(e, ADD_S32, R(c), R(c), I(1));
        INS(e, MIN_S32, R(f->limit), R(f->limit), R(c));
    }
    INS(e, MOV_F32, R(f->m), FI(-INFINITY));
    INS(e, MOV_F32, R(f->l), FI(0.0f));
    if (f->d->block_m) sparse_key_loop(k, softmax_step, f, &f->kl, 0, f->n_full, f->n_max);
    else if (f->d->splitkv) {   /* key blocks [lo, n_full) unmasked, [n_full, hi) masked */
        INS(e, MOV_B32, R(n), R(f->lo));
        key_loop(k, softmax_step, f, n, f->n_full, f->hi, 0);
        key_loop(k, softmax_step, f, n, f->hi, f->hi, 1);
    } else {
        INS(e, MOV_B32, R(n), I(0));
        key_loop(k, softmax_step, f, n, f->n_full, f->n_max, 0);
        key_loop(k, softmax_step, f, n, f->n_max, f->n_max, 1);
    }
    epilogue(k, f);
}

void attn_fwd_tc_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module) {
    Kctx kc;
    kctx_begin(&kc, ks);
    Kctx *k = &kc;
    Emit *e = &k->e;
    const AttnTile *t = &d->tile;
    TcFwd f = {.d = d, .stages = t->stages, .bn = t->bn, .pack = tc_fwd_pack(t), .qt = tc_fwd_qtiles(t),
               .ro = tc_fwd_roles(t), .q_off = plan_region(p, "Q"), .kv_off = plan_region(p, "KV.0"),
               .alpha_off = plan_region(p, "alpha"), .pair = tc_fwd_pair(t)};
    f.kv_stride = t->stages > 1 ? plan_region(p, "KV.1") - f.kv_off : 0;
    for (int i = 0; i < p->ntmem; i++) {
        const TmemRegion *r = &p->tmem[i];
        if (!strcmp(r->name, "S.0")) f.c_s = r->col;
        if (!strcmp(r->name, "P.0")) f.c_p = r->col;
        if (!strcmp(r->name, "O") || !strcmp(r->name, "O.0")) f.c_o = r->col;
    }
    int nb = tc_fwd_nbars(t);
    Opnd counts[TC_FWD_NBARS(4, 2) + 1];
    for (int i = 0; i < nb; i++) counts[i] = I(1);           /* expect_tx or tcgen05.commit arrivals */
    for (int q = 0; q < f.qt; q++) {
        counts[TCF_ALPHA(t->stages) + q] = I(128);                 /* every softmax thread of the tile */
        counts[TCF_PV_READY(t->stages, f.qt) + q] = I(256);        /* and every correction thread */
    }
    if (f.pair) counts[TCF_PAIR_READY(t->stages)] = I(512);    /* of both CTAs (used in the even one) */
    int past = varlen_exit(k, d, f.qt * TC_FWD_BM, d->causal);   /* the grid covers the longest sequence */
    e_comment(e, "prologue: barriers, TMEM");
    f.taddr = umma_prologue(k, plan_region(p, "bars"), nb, counts, f.bar, plan_tmem_alloc(p), f.pair, &f.tq);

    /* the roles, by warpgroup: softmax (one per Q tile), correction, then the MMA issuer warp, the producer warp
     * and two idle warps; each warpgroup first sets its registers */
    Reg role = e_reg(e, RC_PRED);
    int l1 = e_label(e), l2 = e_label(e), l3 = e_label(e), done = e_label(e), w = f.ro.correction / 32;
    INS(e, SETP_LT_U32, R(role), R(k->tid), I(f.ro.correction));
    INSP(e, role, 1, BRA_UNI, L(l1));
    e_comment(e, "role: softmax (warps 0-%d)", w - 1);
    INS(e, SETMAXNREG_INC, I(f.ro.softmax_regs));
    problem(k, &f);
    softmax_role(k, &f);
    INS(e, BRA_UNI, L(done));
    e_place(e, l1);
    INS(e, SETP_LT_U32, R(role), R(k->tid), I(f.ro.issuer));
    INSP(e, role, 1, BRA_UNI, L(l2));
    e_comment(e, "role: correction (warps %d-%d)", w, w + 3);
    INS(e, SETMAXNREG_DEC, I(f.ro.correction_regs));
    problem(k, &f);
    correction_role(k, &f);
    INS(e, BRA_UNI, L(done));
    e_place(e, l2);
    INS(e, SETMAXNREG_DEC, I(f.ro.tail_regs));
    INS(e, SETP_LT_U32, R(role), R(k->tid), I(f.ro.producer));
    INSP(e, role, 1, BRA_UNI, L(l3));
    e_comment(e, "role: MMA issuer (warp %d)", w + 4);
    problem(k, &f);
    issuer_role(k, &f);
    INS(e, BRA_UNI, L(done));
    e_place(e, l3);
    INS(e, SETP_LT_U32, R(role), R(k->tid), I(f.ro.producer + 32));
    INSP(e, role, 1, BRA_UNI, L(done));                      /* the last two warps: nothing more */
    e_comment(e, "role: producer (warp %d)", w + 5);
    problem(k, &f);
    producer_role(k, &f);
    e_place(e, done);
    umma_epilogue(k, f.taddr, plan_tmem_alloc(p), f.pair);
    if (d->varlen) e_place(e, past);
    kctx_finish(k, module);
}
