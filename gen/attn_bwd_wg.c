/* attn_bwd main kernel, wgmma family (sm_90a): FlashAttention-3's backward, dK and dV of one key block.
 *
 *   the producer warpgroup gives its registers away (setmaxnreg.dec); one thread of it:
 *     K_n, V_n by TMA once; then per query block (every query head of the kv head's group, every
 *     query block that sees K_n) Q_m and dO_m by TMA, lse_m and delta_m by a TMA copy of the block
 *     the pre kernel padded, into a ring of `stages` slots, each with a full barrier and an empty one.
 *   bn/64 consumer warpgroups (setmaxnreg.inc), 64 key rows each, and of dK, dV and dQ the CTA's dh = d / dsplit
 *   columns (d 256: two CTAs a key block, CTA x part x % 2 of key block x / 2; S^T and dP^T in each):
 *     dK = dV = 0
 *     for each query block m:
 *       S^T  = K_n Q_m^T                 wgmma, both from shared memory
 *       dP^T = V_n dO_m^T                wgmma, both from shared memory
 *       P^T  = exp(scale S^T - lse_m)    (masked first where causal needs it)
 *       dS^T = P^T o (dP^T - delta_m)
 *       dV  += P^T dO_m;  dK += dS^T Q_m  wgmma, P^T and dS^T from registers
 *       dS^T -> shared memory; every consumer's dS^T in, then
 *       dQ_m += dS K_n                   wgmma, each warpgroup one part of dQ, staged in shared memory
 *         (bm 80, no wgmma M: dQ_m^T = K_n^T dS^T, dS stored [query][key] by stmatrix.trans, dQ^T staged
 *          transposed; bwg_dq_swap)
 *     scale dK; dK, dV -> shared (over K_n, V_n) -> TMA store
 *   warp 1 of the producer warpgroup, the dQ writer: per query block, each consumer warpgroup's part once that
 *     warpgroup staged it, into the fp32 accumulator by TMA reduce-adds, freed to that warpgroup alone once
 *     read (a barrier pair per warpgroup, FA3's; one pair for all was 1-4 % slower on the H200).
 *     Deterministic (d 64/128), it first waits until the semaphore of (head, block m) counts the key blocks
 *     that add to m before this one, and raises it when its adds are complete. The key blocks add in the
 *     order the CTAs start (the last key block first without GQA, key block 0 first with), and step over the
 *     query blocks in chain order (attn_bwd_math.h).
 *     With dqbufs=2 the staging alternates between two buffers, so the consumers stage block m+1 while the
 *     writer still waits its turn for, or adds, block m.
 *
 * The inner loop is bwd_step(); the writer's is dq_writer(). */
#include "attn_bwd_wg.h"
#include "attn_bwd_math.h"
#include <stdio.h>
#include <stdlib.h>
#include "../templates/mbar.h"
#include "../templates/wgmma.h"
#include "../templates/smem_desc.h"

typedef struct {
    const AttnDesc *d;
    const Plan *p;
    int cw, stages, dqn, dsplit, dh;  /* consumer warpgroups; columns of each one's dQ part; CTAs a key block, columns
                                       * of dK, dV and dQ each */
    int dq, ordered;                  /* the kernel computes dQ (bwg_main_dq), which the dQ writer adds; in order */
    int k_off, v_off, q_off, do_off, st_off, ds_off, slot_bytes;   /* slot 0's regions, ring slots slot_bytes apart */
    Reg kv_bar, full0, empty0;        /* K/V landed; the first full and empty barrier of the ring */
    Reg b, kvh, key0, s_q, s_k, off, group;
    Reg part;                         /* dsplit > 1: the CTA's part of the key block, columns part dh .. */
    Reg s_q_grid, tb, q0, k0;         /* s_q the grid and stats blocks are sized by; TMA batch; varlen's first rows */
    Reg up;                           /* query blocks in chain order up (no GQA), else down */
    QueryBlocks blocks;               /* the query blocks this CTA's keys see */
    /* consumers */
    Reg wg, warp_row0;                /* this consumer warpgroup; the warp's first key row in the CTA's block */
    Reg wg_bar;                       /* its own named barrier: 0 is the CTA's, 1 the consumers', 2.. each group's */
    Reg scale_log2, yes, no;
    Reg ds_buf;                       /* this step's dS^T (swapped: dS) buffer: 0 or ds_other, the offset of the second */
    int ds_other;
    Reg k_desc, v_desc;               /* A of S^T and dP^T: the warpgroup's key rows */
    Reg q_desc, do_desc;              /* B of S^T and dP^T (K-major), slot 0 */
    Reg qt_desc, dot_desc;            /* B of dK and dV: Q and dO read MN-major, slot 0 */
    Reg ds_desc, kt_desc;             /* dQ: A from dS^T (MN-major) of buffer 0, B from K (MN-major); swapped, B from dS
                                       * (K-major), A from K (MN-major) */
    Reg dq_stage;                     /* the warp's rows of its warpgroup's dQ staging (buffer 0); swapped, the
                                       * warpgroup's staging */
    Reg dq_sel;                       /* two buffers: the one the next block is staged in (0 or 1) */
    int dq_off, dq_bufs, dq_bytes;    /* buffer 0; how many; bytes apart */
    Acc dk, dv;
} WgBwd;

/* The CTA's batch, kv head and key block (not yet in keys, nor in chain order) in the order CTAs start
 * (key_block_order). Deterministic and causal, the grid's order: without GQA the chain runs from the last key
 * block, the shortest, so chunks would start the short CTAs first (H200, d128: 0.3-1 % slower); with GQA not
 * measured. */
static void cta_keys(Kctx *k, const WgBwd *f, Reg b, Reg kvh, Reg kb, Reg part) {
    if (f->ordered && f->d->causal) key_block_order(k, 0, (Reg){0}, b, kvh, kb);
    else {
        Reg group = e_reg(&k->e, RC_B32);   /* query heads per kv head */
        INS(&k->e, DIV_U32, R(group), R(kc_u32(k, "h_q")), R(kc_u32(k, "h_kv")));
        key_block_order(k, f->p->ctas_per_sm, group, b, kvh, kb);
    }
    if (f->dsplit > 1) {   /* the parts of a key block are neighbours in the order: its K and V read once from HBM */
        INS(&k->e, REM_U32, R(part), R(kb), I(f->dsplit));
        INS(&k->e, DIV_U32, R(kb), R(kb), I(f->dsplit));
    }
}

/* What both roles derive from the CTA: its key block, kv head, batch, and the query blocks that see it. */
static void problem(Kctx *k, WgBwd *f) {
    Emit *e = &k->e;
    const AttnTile *t = &f->d->tile;
    f->b = e_reg(e, RC_B32), f->kvh = e_reg(e, RC_B32), f->key0 = e_reg(e, RC_B32);
    if (f->dsplit > 1) f->part = e_reg(e, RC_B32);
    cta_keys(k, f, f->b, f->kvh, f->key0, f->part);
    f->s_q_grid = f->s_q = kc_u32(k, "s_q");
    f->s_k = kc_u32(k, "s_k");
    f->tb = f->b;
    if (f->d->varlen) {   /* packed: the sequence's lengths; TMA rows from its first, batch coordinate 0 */
        SeqSpan sp = seq_span(k, f->b);
        f->s_q = sp.s_q, f->s_k = sp.s_k, f->q0 = sp.q0, f->k0 = sp.k0, f->tb = kc_imm32(k, 0);
    }
    f->group = e_reg(e, RC_B32), f->off = e_reg(e, RC_B32);
    INS(e, DIV_U32, R(f->group), R(kc_u32(k, "h_q")), R(kc_u32(k, "h_kv")));
    /* query blocks in chain order (attn_bwd_math.h): with GQA down, so that the key blocks of a kv head work
     * on the same (head, block) at once (H200, GQA 64/8 causal: 3-4 % over head-major); without, up, which is
     * the head-major order (the last key block first as well measured no faster without the chain) */
    f->up = e_reg(e, RC_PRED);
    INS(e, SETP_EQ_U32, R(f->up), R(f->group), I(1));
    if (f->ordered) {
        /* the chain of dQ adds in a fixed key-block order: up, the last key block first, so that no key block
         * waits on the one before it; down (GQA) from key block 0, whose CTA has group times the blocks: the
         * longest CTAs start first (measured on the H200: up costs GQA 64/8 causal its tail, down costs causal
         * MHA 15 %) */
        Reg nkeys = e_reg(e, RC_B32), rev = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(nkeys), R(f->s_k), I(t->bn - 1));
        INS(e, DIV_U32, R(nkeys), R(nkeys), I(t->bn));
        INS(e, SUB_U32, R(nkeys), R(nkeys), I(1));
        INS(e, SUB_U32, R(rev), R(nkeys), R(f->key0));
        INS(e, SELP_B32, R(f->key0), R(rev), R(f->key0), R(f->up));
    }
    INS(e, MUL_LO_U32, R(f->key0), R(f->key0), I(t->bn));
    INS(e, SUB_S32, R(f->off), R(f->s_k), R(f->s_q));
    query_blocks(k, f->d->causal, t->bm, t->bn, f->key0, f->s_q, f->off, f->group, &f->blocks);
    f->blocks.chain = 1, f->blocks.up = f->up;
    if (f->d->block_m) {   /* block-sparse: the key block's query list */
        Reg n = e_reg(e, RC_B32), mt;
        INS(e, DIV_U32, R(n), R(f->key0), I(t->bn));
        query_blocks_listed(k, &f->blocks, sparse_query_list(k, t->bm, t->bn, f->b, f->kvh, n, &mt), mt);
    }
}


static void dq_writer(Kctx *k, WgBwd *f);

static void producer(Kctx *k, void *ctx) {
    WgBwd *f = ctx;
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    int bm = d->tile.bm, bn = d->tile.bn, done = e_label(e);
    Reg lead = e_reg(e, RC_PRED), st = e_reg(e, RC_B64), zero = kc_imm32(k, 0);
    if (plan_role_regs(f->p, "producer")) INS(e, SETMAXNREG_DEC, I(plan_role_regs(f->p, "producer")));
    if (f->dq) {
        Reg writer = e_reg(e, RC_PRED);
        int other = e_label(e);
        INS(e, SETP_EQ_U32, R(writer), R(k->warp), I(1));
        INSP(e, writer, 1, BRA_UNI, L(other));
        dq_writer(k, f);
        INS(e, BRA_UNI, L(done));
        e_place(e, other);
    }
    INS(e, SETP_EQ_U32, R(lead), R(k->tid), I(0));
    INSP(e, lead, 1, BRA, L(done));
    e_comment(e, "producer: one thread issues every copy");
    problem(k, f);
    INS(e, MBAR_ARRIVE_EXPECT_TX, R(st), A(f->kv_bar, 0), I(bn * (d->d + d->dv) * 2));
    Reg krow = f->key0;
    if (d->varlen) INS(e, ADD_U32, R(krow = e_reg(e, RC_B32)), R(f->key0), R(f->k0));   /* the packed row */
    wg_tma_rows(k, kc_tmap(k, "k_map"), f->k_off, bn, d->d, zero, f->kvh, krow, f->tb, f->kv_bar);
    wg_tma_rows(k, kc_tmap(k, "v_map"), f->v_off, bn, d->dv, zero, f->kvh, krow, f->tb, f->kv_bar);
    Reg it = e_reg(e, RC_B32), more = e_reg(e, RC_PRED), qm = kc_tmap(k, "q_map"), dom = kc_tmap(k, "do_map");
    INS(e, MOV_B32, R(it), I(0));
    int top = e_label(e);
    e_place(e, top);
    INS(e, SETP_LT_U32, R(more), R(it), R(f->blocks.total));
    INSP(e, more, 1, BRA_UNI, L(done));
    Reg h, m_start, full, empty, parity;
    query_block_at(k, &f->blocks, it, f->kvh, &h, &m_start);
    Reg stage = wg_ring_slot(k, f->full0, f->empty0, f->stages, it, f->slot_bytes, &full, &parity, &empty);
    INS(e, XOR_B32, R(parity), R(parity), I(1));   /* a fresh slot counts as freed: the phase before the first */
    mbar_wait(k, empty, parity, 0);
    INS(e, MBAR_ARRIVE_EXPECT_TX, R(st), A(full, 0), I(bm * (d->d + d->dv) * 2 + 8 * bm));
    Reg qrow = m_start;
    if (d->varlen) INS(e, ADD_U32, R(qrow = e_reg(e, RC_B32)), R(m_start), R(f->q0));   /* the packed row */
    wg_tma_rows(k, qm, f->q_off, bm, d->d, stage, h, qrow, f->tb, full);
    wg_tma_rows(k, dom, f->do_off, bm, d->dv, stage, h, qrow, f->tb, full);
    bwd_copy_stats(k, bm, f->s_q_grid, f->b, h, m_start, f->st_off, stage, full);
    INS(e, ADD_U32, R(it), R(it), I(1));
    INS(e, BRA_UNI, L(top));
    e_place(e, done);
}

/* The warpgroup's products of one query block over K-major operands: acc = A B^T, k16 steps over `cols`
 * (64 per slab; a slab of A is bn rows, of B bm rows). */
static void issue_kmajor(Kctx *k, WgBwd *f, Acc *acc, Reg a, Reg b, int cols) {
    const AttnTile *t = &f->d->tile;
    for (int kk = 0; kk < cols / 16; kk++) {
        int slab = kk / 4, in = (kk % 4) * 32;
        wg_mma(k, acc, smem_desc_at(k, a, slab * t->bn * 128 + in), NULL, smem_desc_at(k, b, slab * t->bm * 128 + in),
               WG_KMAJOR, f->d->dtype, kk ? f->yes : f->no);
    }
}

/* acc += A B with A packed in registers (bm/16 k16 steps over the query block) and B MN-major rows. */
static void issue_rs(Kctx *k, WgBwd *f, Acc *acc, const Reg *a, Reg b) {
    for (int kk = 0; kk < f->d->tile.bm / 16; kk++)
        wg_mma(k, acc, b, &a[4 * kk], smem_desc_at(k, b, kk * 16 * 128), WG_B_MN, f->d->dtype, f->yes);
}

/* dQ_m (+)= dS K_n for this warpgroup's part (swapped: dQ_m^T = K_n^T dS^T), once dS^T (dS) of every consumer is in
 * the buffer ds_buf:
 * one commit group, which the caller waits for. */
static void dq_issue(Kctx *k, WgBwd *f, Acc *dq) {
    Emit *e = &k->e;
    const AttnTile *t = &f->d->tile;
    Reg ds = wg_desc_plus(k, f->ds_desc, f->ds_buf);
    INS0(e, WGMMA_FENCE);
    if (bwg_dq_swap(t)) {   /* dQ^T = K^T dS^T: A the part's 64 columns of K read MN-major, B dS K-major (bm rows) */
        acc_new(k, dq, 1, t->bm / 8);
        for (int kk = 0; kk < t->bn / 16; kk++)
            wg_mma(k, dq, smem_desc_at(k, f->kt_desc, kk * 16 * 128), NULL,
                   smem_desc_at(k, ds, (kk / 4) * t->bm * 128 + (kk % 4) * 32), WG_A_MN, f->d->dtype, kk ? f->yes : f->no);
    } else {
        acc_new(k, dq, 1, f->dqn / 8);
        for (int kk = 0; kk < t->bn / 16; kk++)
            wg_mma(k, dq, smem_desc_at(k, ds, kk * 16 * 128), NULL, smem_desc_at(k, f->kt_desc, kk * 16 * 128),
                   WG_A_MN | WG_B_MN, f->d->dtype, kk ? f->yes : f->no);
    }
    INS0(e, WGMMA_COMMIT);
}

/* Swapped (bwg_dq_swap): the warpgroup's dS^T (packed as dK's A: k16 step kk's registers are the 8x8 blocks (key
 * rows g | g+8) x (query columns 16 kk .. | 16 kk + 8 ..)) into the dS buffer as dS, [query][key]: slab wg of 64
 * keys, bm rows of 128 bytes, 128B-swizzled (16-byte chunk c of row q at c ^ (q & 7)). stmatrix.trans stores each
 * block transposed: lane l names row l & 7 of block l / 8, query 16 kk + 8 (l / 16) + (l & 7), whose 8 keys are
 * chunk 2 (warp in the warpgroup) + (l / 8) % 2. */
static void ds_store_kmajor(Kctx *k, WgBwd *f, const Reg *ps) {
    Emit *e = &k->e;
    int bm = f->d->tile.bm;
    Reg r = e_reg(e, RC_B32), ch = e_reg(e, RC_B32), a = e_reg(e, RC_B32), x = e_reg(e, RC_B32);
    INS(e, AND_B32, R(r), R(k->lane), I(7));
    INS(e, SHR_U32, R(x), R(k->lane), I(4));
    INS(e, MAD_LO_U32, R(a), R(x), I(8), R(r));                   /* the query row within the step's 16 */
    INS(e, MUL_LO_U32, R(a), R(a), I(128));
    INS(e, SHR_U32, R(ch), R(k->lane), I(3));
    INS(e, AND_B32, R(ch), R(ch), I(1));
    INS(e, AND_B32, R(x), R(k->warp), I(3));
    INS(e, MAD_LO_U32, R(ch), R(x), I(2), R(ch));
    INS(e, XOR_B32, R(ch), R(ch), R(r));
    INS(e, SHL_B32, R(ch), R(ch), I(4));
    INS(e, ADD_U32, R(a), R(a), R(ch));
    INS(e, MAD_LO_U32, R(a), R(f->wg), I(bm * 128), R(a));
    INS(e, ADD_U32, R(a), R(a), R(k->smem));
    INS(e, ADD_U32, R(a), R(a), R(f->ds_buf));
    for (int kk = 0; kk < bm / 16; kk++)
        INS(e, STSM_X4_T, A(a, f->ds_off + kk * 16 * 128), V4(ps[4 * kk], ps[4 * kk + 1], ps[4 * kk + 2], ps[4 * kk + 3]));
}

/* The reduce-adds of one warpgroup's dQ part (staged at shared offset src) into rows m_start.. of head h. */
static void dq_reduce(Kctx *k, WgBwd *f, Reg src, Reg row0, Reg col0, Reg h, Reg m_start) {
    Emit *e = &k->e;
    Reg m = kc_tmap(k, "dq_map"), row = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(row), R(m_start), R(row0));
    if (f->d->varlen) INS(e, ADD_U32, R(row), R(row), R(f->q0));   /* [h_q, total_q, d]: the packed row, batch 0 */
    for (int bx = 0; bx < f->dqn / 32; bx++) {
        Reg col = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(col), R(col0), I(32 * bx));
        Reg c[4] = {col, row, h, f->tb};
        INS(e, TMA_REDUCE_ADD_4D, TA(m, 4, c), A(src, bx * bwg_dq_rows(&f->d->tile) * 128));
    }
}

/* The warpgroup's dQ_m part into its staging, 128B-swizzled boxes of [64 rows][32 columns] (row r, 16-byte
 * chunk c at chunk c ^ (r & 7)), fenced for the TMA. */
static void dq_stage(Kctx *k, WgBwd *f, Acc *dq) {
    Emit *e = &k->e;
    Reg g = e_reg(e, RC_B32), t = e_reg(e, RC_B32), u = e_reg(e, RC_B32), base = e_reg(e, RC_B32);
    INS(e, SHR_U32, R(g), R(k->lane), I(2));
    INS(e, AND_B32, R(t), R(k->lane), I(3));
    INS(e, SHR_U32, R(u), R(t), I(1));
    INS(e, XOR_B32, R(u), R(u), R(g));                          /* chunk 2(j % 4) + t/2 of row g, swizzled */
    INS(e, AND_B32, R(t), R(t), I(1));
    INS(e, SHL_B32, R(t), R(t), I(3));
    INS(e, MAD_LO_U32, R(base), R(g), I(128), R(f->dq_stage));  /* the warpgroup's staging, this lane's row, + 8 (t & 1) */
    INS(e, ADD_U32, R(base), R(base), R(t));
    for (int j = 0; j < dq->nt; j++) {
        Reg x = e_reg(e, RC_B32), a = e_reg(e, RC_B32);
        INS(e, XOR_B32, R(x), R(u), I(2 * (j % 4)));
        INS(e, SHL_B32, R(x), R(x), I(4));
        INS(e, ADD_U32, R(a), R(base), R(x));
        for (int hi = 0; hi < 2; hi++)
            INS(e, ST_SHARED_V2_F32, A(a, (j / 4) * 64 * 128 + hi * 8 * 128), V2(ACC(dq, 0, j, 2 * hi), ACC(dq, 0, j, 2 * hi + 1)));
    }
    INS0(e, FENCE_PROXY_ASYNC_CTA);                               /* the TMA reads what the threads wrote */
}

/* Swapped: the warpgroup's dQ^T part (rows: its 64 columns of dQ, 16 a warp; columns: the bm query rows) into its
 * staging transposed, boxes of [bm rows][32 columns] as dq_stage's. Element (column c, query q) of box c / 32 sits
 * at row q, 16-byte chunk (c % 32) / 4 ^ (q & 7), word c % 4. A lane's columns are 16 w + g (+ 8) and its queries
 * 8 j + 2 t (+ 1), so q & 7 does not depend on j: four addresses, each step of j 8 rows on. */
static void dq_stage_swapped(Kctx *k, WgBwd *f, Acc *dq) {
    Emit *e = &k->e;
    int bm = f->d->tile.bm;
    Reg g = e_reg(e, RC_B32), t2 = e_reg(e, RC_B32), w = e_reg(e, RC_B32), c0 = e_reg(e, RC_B32), base = e_reg(e, RC_B32);
    Reg x = e_reg(e, RC_B32);
    INS(e, SHR_U32, R(g), R(k->lane), I(2));
    INS(e, AND_B32, R(t2), R(k->lane), I(3));
    INS(e, SHL_B32, R(t2), R(t2), I(1));                        /* 2 t: the lane's first query, mod 8 */
    INS(e, AND_B32, R(w), R(k->warp), I(3));                    /* the warp in its warpgroup */
    INS(e, SHR_U32, R(x), R(w), I(1));
    INS(e, MAD_LO_U32, R(base), R(x), I(bm * 128), R(f->dq_stage));   /* box w / 2 */
    INS(e, MAD_LO_U32, R(base), R(t2), I(128), R(base));        /* row 2 t */
    INS(e, AND_B32, R(x), R(g), I(3));
    INS(e, MAD_LO_U32, R(base), R(x), I(4), R(base));           /* word g % 4 */
    INS(e, AND_B32, R(x), R(w), I(1));
    INS(e, SHR_U32, R(c0), R(g), I(2));
    INS(e, MAD_LO_U32, R(c0), R(x), I(4), R(c0));               /* chunk 4 (w % 2) + g / 4, before the swizzle */
    Reg a[2][2];
    for (int hi = 0; hi < 2; hi++)
        for (int lo = 0; lo < 2; lo++) {
            Reg c = e_reg(e, RC_B32), q = e_reg(e, RC_B32);
            a[hi][lo] = e_reg(e, RC_B32);
            INS(e, ADD_U32, R(c), R(c0), I(2 * hi));
            INS(e, ADD_U32, R(q), R(t2), I(lo));
            INS(e, XOR_B32, R(c), R(c), R(q));
            INS(e, SHL_B32, R(c), R(c), I(4));
            INS(e, ADD_U32, R(a[hi][lo]), R(base), R(c));
        }
    for (int j = 0; j < dq->nt; j++)
        for (int i = 0; i < 4; i++)
            INS(e, ST_SHARED_F32, A(a[i >> 1][i & 1], j * 8 * 128 + (i & 1) * 128), R(ACC(dq, 0, j, i)));
    INS0(e, FENCE_PROXY_ASYNC_CTA);                               /* the TMA reads what the threads wrote */
}

/* dQ_m's part into the warpgroup's staging, once the dQ writer's adds of its previous part read it. */
static void dq_add(Kctx *k, WgBwd *f, Acc *dq) {
    Emit *e = &k->e;
    Reg pair = kc_imm32(k, 128 + 32), full = e_reg(e, RC_B32), empty = e_reg(e, RC_B32), base = f->dq_stage;
    INS(e, MAD_LO_U32, R(full), R(f->wg), I(BWG_DQ_WG_STEP(f->cw)), I(BWG_DQ_FULL(f->cw, 0, 0)));
    if (f->dq_bufs == 2) {   /* buffer dq_sel: its barriers and bytes dq_sel steps on */
        f->dq_stage = e_reg(e, RC_B32);
        INS(e, MAD_LO_U32, R(full), R(f->dq_sel), I(BWG_DQ_BUF_STEP(f->cw)), R(full));
        INS(e, MAD_LO_U32, R(f->dq_stage), R(f->dq_sel), I(f->dq_bytes), R(base));
        INS(e, XOR_B32, R(f->dq_sel), R(f->dq_sel), I(1));
    }
    INS(e, ADD_U32, R(empty), R(full), I(1));
    INS(e, BAR_SYNC_N, R(empty), R(pair));                      /* the writer's adds read the staging */
    if (bwg_dq_swap(&f->d->tile)) dq_stage_swapped(k, f, dq);
    else dq_stage(k, f, dq);
    INS(e, BAR_ARRIVE_N, R(full), R(pair));
    f->dq_stage = base;
}

/* The dQ writer (warp 1 of the producer warpgroup; lane 0 issues): per step, warpgroup by warpgroup, once the
 * warpgroup's part is staged it adds it by TMA reduce-adds (rows past s_q are clipped by the map) and frees that
 * part's staging to that warpgroup once the adds have read it. The consumers thus never wait on the adds (H200,
 * against each warpgroup's lead issuing its own: 1-13 % faster), nor on each other here: with one barrier pair
 * for all parts each warpgroup waited for the other's staging every step (H200: 1-4 % slower, deterministic
 * 1 %). Ordered (deterministic=1), it first waits until the semaphore of (head, block) counts the key blocks
 * that add before this one, and raises it once the adds are complete (the last one sets it back to 0): every
 * query block's sum runs in one key-block order, so its bits never depend on the schedule. */
/* The chain's turn of this key block (n, of the key blocks 0 .. top_n; nblk query blocks per head) at the
 * block of (head h, rows from m_start): its semaphore, the count it must hold before this key block adds,
 * and what this key block adds to it after. The key blocks that see the block are 0 .. last (key block 0
 * sees every block any key block sees). Up, the ones above this one add before it, and key block 0 adds
 * last; down, the ones below it, and `last` adds last. The last one sets the semaphore back to 0 (adds
 * -want), so that the kernel can run again without the pre kernel (bench times it alone). */
typedef struct { Reg sem, want, raise; } ChainTurn;
static ChainTurn chain_turn(Kctx *k, WgBwd *f, Reg h, Reg m_start, Reg n, Reg nblk, Reg top_n) {
    Emit *e = &k->e;
    const AttnTile *t = &f->d->tile;
    ChainTurn c = {e_reg(e, RC_B64), e_reg(e, RC_B32), e_reg(e, RC_B32)};
    Reg idx = e_reg(e, RC_B32), blk = e_reg(e, RC_B32), last = e_reg(e, RC_B32), above = e_reg(e, RC_B32);
    Reg fin = e_reg(e, RC_B32), is_fin = e_reg(e, RC_PRED);
    INS(e, MAD_LO_U32, R(idx), R(f->b), R(kc_u32(k, "h_q")), R(h));
    INS(e, DIV_U32, R(blk), R(m_start), I(t->bm));
    INS(e, MAD_LO_U32, R(idx), R(idx), R(nblk), R(blk));
    if (f->dsplit > 1) INS(e, MAD_LO_U32, R(idx), R(idx), I(f->dsplit), R(f->part));   /* the part's own chain */
    INS(e, MAD_WIDE_U32, R(c.sem), R(idx), I(4), R(kc_ptr(k, "dq_sem")));
    INS(e, MOV_B32, R(last), R(top_n));
    if (f->d->causal) {   /* the block's last row q sees keys up to q + off */
        Reg q = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(q), R(m_start), I(t->bm));
        INS(e, MIN_U32, R(q), R(q), R(f->s_q));
        INS(e, ADD_U32, R(q), R(q), R(f->off));
        INS(e, SUB_U32, R(q), R(q), I(1));
        INS(e, DIV_U32, R(q), R(q), I(t->bn));
        INS(e, MIN_U32, R(last), R(last), R(q));
    }
    INS(e, SUB_U32, R(above), R(last), R(n));
    INS(e, SELP_B32, R(c.want), R(above), R(n), R(f->up));
    INS(e, SELP_B32, R(fin), I(0), R(last), R(f->up));
    INS(e, SETP_EQ_U32, R(is_fin), R(n), R(fin));
    INS(e, SUB_S32, R(c.raise), R(kc_imm32(k, 0)), R(c.want));
    INS(e, SELP_B32, R(c.raise), R(c.raise), I(1), R(is_fin));
    return c;
}

static void dq_writer(Kctx *k, WgBwd *f) {
    Emit *e = &k->e;
    const AttnTile *t = &f->d->tile;
    int mparts = bwg_mparts(t), top = e_label(e), done = e_label(e);
    e_comment(e, "dQ writer: the adds of each query block%s", f->ordered ? ", in key-block order" : "");
    problem(k, f);
    Reg pair = kc_imm32(k, 128 + 32);
    Reg l0 = e_reg(e, RC_PRED), p = e_reg(e, RC_PRED), n = e_reg(e, RC_B32), nblk = e_reg(e, RC_B32), top_n = e_reg(e, RC_B32);
    INS(e, SETP_EQ_U32, R(l0), R(k->lane), I(0));
    if (f->ordered) {
        INS(e, DIV_U32, R(n), R(f->key0), I(t->bn));
        INS(e, ADD_U32, R(nblk), R(f->s_q_grid), I(t->bm - 1));   /* the pre kernel's semaphore layout */
        INS(e, DIV_U32, R(nblk), R(nblk), I(t->bm));
        INS(e, ADD_U32, R(top_n), R(f->s_k), I(t->bn - 1));
        INS(e, DIV_U32, R(top_n), R(top_n), I(t->bn));
        INS(e, SUB_U32, R(top_n), R(top_n), I(1));
    }
    for (int b = 0; b < f->dq_bufs; b++) {                       /* the staging starts free */
        if (b) INS(e, SETP_GE_U32, R(p), R(f->blocks.total), I(b + 1));
        else INS(e, SETP_NE_U32, R(p), R(f->blocks.total), I(0));
        for (int wg = 0; wg < f->cw; wg++) INSP(e, p, 0, BAR_ARRIVE_N, R(kc_imm32(k, BWG_DQ_EMPTY(f->cw, b, wg))), R(pair));
    }
    Reg it = e_reg(e, RC_B32), src0 = k->smem, bar0 = kc_imm32(k, BWG_DQ_FULL(f->cw, 0, 0));
    INS(e, MOV_B32, R(it), I(0));
    e_place(e, top);
    INS(e, SETP_LT_U32, R(p), R(it), R(f->blocks.total));
    INSP(e, p, 1, BRA_UNI, L(done));
    if (f->dq_bufs == 2) {   /* block it in buffer it & 1 */
        Reg sel = e_reg(e, RC_B32);
        bar0 = e_reg(e, RC_B32), src0 = e_reg(e, RC_B32);
        INS(e, AND_B32, R(sel), R(it), I(1));
        INS(e, MAD_LO_U32, R(bar0), R(sel), I(BWG_DQ_BUF_STEP(f->cw)), I(BWG_DQ_FULL(f->cw, 0, 0)));
        INS(e, MAD_LO_U32, R(src0), R(sel), I(f->dq_bytes), R(k->smem));
    }
    Reg h, m_start;
    query_block_at(k, &f->blocks, it, f->kvh, &h, &m_start);
    ChainTurn c = {0};
    if (f->ordered) c = chain_turn(k, f, h, m_start, n, nblk, top_n);
    Reg next = e_reg(e, RC_B32), more = e_reg(e, RC_PRED);     /* the block that stages into this buffer next */
    INS(e, ADD_U32, R(next), R(it), I(f->dq_bufs));
    INS(e, SETP_LT_U32, R(more), R(next), R(f->blocks.total));
    for (int wg = 0; wg < f->cw; wg++) {   /* each part once its warpgroup staged it, freed once read */
        Reg full = e_reg(e, RC_B32), empty = e_reg(e, RC_B32), src = e_reg(e, RC_B32);
        int s1 = e_label(e);
        INS(e, ADD_U32, R(full), R(bar0), I(BWG_DQ_WG_STEP(f->cw) * wg));
        INS(e, ADD_U32, R(empty), R(full), I(1));
        INS(e, BAR_SYNC_N, R(full), R(pair));
        if (f->ordered && wg == 0) {   /* this key block's turn in the chain */
            Reg v = e_reg(e, RC_B32);
            int spin = e_label(e);
            e_place(e, spin);
            INS(e, LD_ACQUIRE_GPU_U32, R(v), A(c.sem, 0));
            INS(e, SETP_NE_U32, R(p), R(v), R(c.want));
            INSP(e, p, 0, BRA, L(spin));
        }
        INSP(e, l0, 1, BRA, L(s1));
        if (f->ordered && wg == 0) INS0(e, FENCE_PROXY_ASYNC_GLOBAL);   /* the adds after the acquire */
        INS(e, ADD_U32, R(src), R(src0), I(f->dq_off + wg * bwg_dq_part_bytes(f->d)));
        Reg col0 = kc_imm32(k, f->dqn * (wg / mparts));
        if (f->dsplit > 1) {   /* the part's columns on */
            Reg c = e_reg(e, RC_B32);
            INS(e, MAD_LO_U32, R(c), R(f->part), I(f->dh), R(col0));
            col0 = c;
        }
        dq_reduce(k, f, src, kc_imm32(k, 64 * (wg % mparts)), col0, h, m_start);
        INS0(e, BULK_COMMIT);
        INS(e, BULK_WAIT_READ, I(0));
        e_place(e, s1);
        INSP(e, more, 0, BAR_ARRIVE_N, R(empty), R(pair));       /* which may stage now */
    }
    INS(e, ADD_U32, R(it), R(it), I(1));
    if (f->ordered) {
        int s2 = e_label(e);
        INSP(e, l0, 1, BRA, L(s2));
        INS(e, BULK_WAIT, I(0));                                  /* the adds are complete ... */
        INS0(e, FENCE_PROXY_ASYNC_GLOBAL);
        INS(e, RED_RELEASE_GPU_ADD_U32, A(c.sem, 0), R(c.raise)); /* ... before the next key block's */
        e_place(e, s2);
    }
    INS(e, BRA_UNI, L(top));
    e_place(e, done);
}

/* One query block of one consumer warpgroup: the inner loop of the kernel. */
static void bwd_step(Kctx *k, void *ctx, Reg it, int masked) {
    WgBwd *f = ctx;
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    int bm = d->tile.bm, dq_here = f->dq;
    e_comment(e, "query block: %s", masked ? "causal, masked" : "fully visible");
    Reg full, empty, parity, h, m_start;
    Reg stage = wg_ring_slot(k, f->full0, f->empty0, f->stages, it, f->slot_bytes, &full, &parity, &empty);
    mbar_wait(k, full, parity, 0);
    Acc s, dp, dq;
    acc_new(k, &s, 1, bm / 8);
    acc_new(k, &dp, 1, bm / 8);
    INS0(e, WGMMA_FENCE);
    issue_kmajor(k, f, &s, f->k_desc, wg_desc_plus(k, f->q_desc, stage), d->d);          /* S^T = K Q^T */
    INS0(e, WGMMA_COMMIT);
    issue_kmajor(k, f, &dp, f->v_desc, wg_desc_plus(k, f->do_desc, stage), d->dv);      /* dP^T = V dO^T */
    INS0(e, WGMMA_COMMIT);
    Reg cols = e_reg(e, RC_B32);
    INS(e, AND_B32, R(cols), R(k->lane), I(3));
    INS(e, MAD_LO_U32, R(cols), R(cols), I(8), R(k->smem));
    INS(e, ADD_U32, R(cols), R(cols), R(stage));
    BwdStats st = {cols, f->st_off, f->st_off + 4 * bm};
    query_block_at(k, &f->blocks, it, f->kvh, &h, &m_start);
    INS(e, WGMMA_WAIT, I(1));                                                           /* S^T done */
    if (masked) {
        Reg key_row0 = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(key_row0), R(f->key0), R(f->warp_row0));
        mask_future_keys(k, &s, m_start, f->off, key_row0);
    }
    if (d->varlen) {   /* past the sequence the packed rows are the next one's, not a TMA zero-fill */
        Reg key_row0 = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(key_row0), R(f->key0), R(f->warp_row0));
        mask_outside(k, &s, m_start, f->s_q, f->s_k, key_row0);
    }
    bwd_probabilities(k, &st, &s, f->scale_log2);
    INS(e, WGMMA_WAIT, I(0));                                                           /* dP^T done */
    bwd_score_grads(k, &st, &s, &dp);
    Reg *pp = pack_a_from_acc(k, &s, d->dtype), *ps = pack_a_from_acc(k, &dp, d->dtype);
    if (dq_here && bwg_dq_swap(&d->tile)) ds_store_kmajor(k, f, ps);   /* dS out before a wgmma reads its registers */
    else if (dq_here) {                                          /* dS^T out before a wgmma reads its registers */
        Reg base = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(base), R(k->smem), R(f->ds_buf));
        wg_pairs_to_smem(k, ps, bm, f->warp_row0, base, f->ds_off, d->tile.bn * 128);
    }
    /* FA3's order: dV, then (once every consumer's dS^T is in) dQ, then dK, so that dQ's staging runs while the
     * tensor cores do dK. Deterministic, the staging waits its turn in the key-block chain: dK goes before the
     * barrier as well, and the slot is freed before the staging (H200: this order there, the other elsewhere) */
    int dq_under_dk = dq_here && !f->ordered;
    INS0(e, WGMMA_FENCE);
    issue_rs(k, f, &f->dv, pp, wg_desc_plus(k, f->dot_desc, stage));                    /* dV += P^T dO */
    if (!dq_under_dk) issue_rs(k, f, &f->dk, ps, wg_desc_plus(k, f->qt_desc, stage));   /* dK += dS^T Q */
    INS0(e, WGMMA_COMMIT);
    if (dq_here) {
        INS0(e, FENCE_PROXY_ASYNC_CTA);                          /* the wgmma reads what the threads wrote */
        INS(e, BAR_SYNC_N, R(kc_imm32(k, 1)), I(128 * f->cw));   /* every consumer's dS^T (dS) is in */
        dq_issue(k, f, &dq);                                     /* dQ_m = dS K_n, this warpgroup's part */
    }
    if (dq_under_dk) {
        issue_rs(k, f, &f->dk, ps, wg_desc_plus(k, f->qt_desc, stage));                 /* dK += dS^T Q */
        INS0(e, WGMMA_COMMIT);
        INS(e, WGMMA_WAIT, I(1));                                /* dV and dQ done */
        dq_add(k, f, &dq);
    }
    INS(e, WGMMA_WAIT, I(0));
    wg_release(k, empty, it);                                    /* the slot's Q, dO and statistics are read */
    if (dq_here) {
        if (!dq_under_dk) dq_add(k, f, &dq);
        /* the other buffer next: a consumer rewrites this one only after every consumer passed the next
         * step's barrier, so after its dQ products here were done */
        INS(e, SUB_U32, R(f->ds_buf), I(f->ds_other), R(f->ds_buf));
    }
}

/* scale dK; dK and dV rounded into the warpgroup's rows of the K and V tiles (every consumer is done
 * with them), then one thread of the warpgroup stores them by TMA */
static void epilogue(Kctx *k, WgBwd *f) {
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    int bn = d->tile.bn;
    INS(e, BAR_SYNC_N, R(kc_imm32(k, 1)), I(128 * f->cw));     /* every consumer's last dQ product read K */
    acc_scale(k, &f->dk, kc_f32(k, "softmax_scale"));
    wg_pairs_to_smem(k, pack_a_from_acc(k, &f->dk, d->dtype), f->dh, f->warp_row0, k->smem, f->k_off, bn * 128);
    wg_pairs_to_smem(k, pack_a_from_acc(k, &f->dv, d->dtype), f->dh, f->warp_row0, k->smem, f->v_off, bn * 128);
    Reg col0 = {0};   /* dsplit > 1: the part's first column */
    if (f->dsplit > 1) INS(e, MUL_LO_U32, R(col0 = e_reg(e, RC_B32)), R(f->part), I(f->dh));
    if (d->varlen) {   /* a TMA store would write the next sequence's rows: plain stores of the keys below s_k */
        Reg rows_left = e_reg(e, RC_B32);
        INS(e, SUB_U32, R(rows_left), R(f->s_k), R(f->key0));
        static const char *const out[2] = {"dk", "dv"};
        for (int i = 0; i < 2; i++) {
            Reg base = e_reg(e, RC_B64), rs = row_stride_bytes(k, out[i]);
            INS(e, MAD_WIDE_U32, R(base), R(f->key0), R(rs), R(attn_head_base(k, d, out[i], f->b, f->kvh)));
            if (f->dsplit > 1) INS(e, MAD_WIDE_U32, R(base), R(col0), I(2), R(base));
            wg_store_rows_masked(k, f->wg_bar, f->wg, i ? f->v_off : f->k_off, f->dh, bn * 128, base, rs, rows_left);
        }
        return;
    }
    const Reg *at = f->dsplit > 1 ? &col0 : NULL;
    WgStore st[2] = {{"dk_map", f->k_off, f->dh, at}, {"dv_map", f->v_off, f->dh, at}};
    wg_store_group(k, f->wg_bar, f->wg, f->key0, st, 2, bn * 128, f->kvh, f->b);
}

/* The loop and epilogue of consumer warpgroup c, or (c < 0) of the one the warp index names. */
static void consumer_side(Kctx *k, void *ctx, int c) {
    WgBwd *f = ctx;
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    const AttnTile *t = &d->tile;
    int mparts = bwg_mparts(t), bn = t->bn;
    Reg w = e_reg(e, RC_B32), wwarp = e_reg(e, RC_B32), mpart = e_reg(e, RC_B32), npart = e_reg(e, RC_B32);
    f->wg = c < 0 ? e_reg(e, RC_B32) : kc_imm32(k, c), f->warp_row0 = e_reg(e, RC_B32);
    INS(e, SUB_U32, R(w), R(k->warp), I(4));
    if (c < 0) INS(e, SHR_U32, R(f->wg), R(w), I(2));
    INS(e, AND_B32, R(wwarp), R(w), I(3));
    if (c < 0) INS(e, MUL_LO_U32, R(f->warp_row0), R(w), I(16));
    else INS(e, MAD_LO_U32, R(f->warp_row0), R(wwarp), I(16), I(64 * c));
    f->wg_bar = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(f->wg_bar), R(f->wg), I(2));
    f->scale_log2 = scale_log2(k);
    f->yes = kc_pred(k, 1);
    f->no = kc_pred(k, 0);
    Reg rows = e_reg(e, RC_B32);
    INS(e, MUL_LO_U32, R(rows), R(f->wg), I(64 * 128));       /* the warpgroup's 64 rows of each K and V slab */
    f->k_desc = wg_desc_plus(k, wg_desc_kmajor(k, f->k_off), rows);
    f->v_desc = wg_desc_plus(k, wg_desc_kmajor(k, f->v_off), rows);
    f->q_desc = wg_desc_kmajor(k, f->q_off);
    f->do_desc = wg_desc_kmajor(k, f->do_off);
    f->qt_desc = wg_desc_mn(k, f->q_off, t->bm * 128);
    f->dot_desc = wg_desc_mn(k, f->do_off, t->bm * 128);
    Reg k_at = {0};   /* dsplit > 1: the part's first 64-column slab, in bytes of Q's (dO's) slabs and of K's */
    if (f->dsplit > 1) {
        Reg q_at = e_reg(e, RC_B32);
        k_at = e_reg(e, RC_B32);
        INS(e, MUL_LO_U32, R(q_at), R(f->part), I(f->dh / 64 * t->bm * 128));
        INS(e, MUL_LO_U32, R(k_at), R(f->part), I(f->dh / 64 * bn * 128));
        f->qt_desc = wg_desc_plus(k, f->qt_desc, q_at);
        f->dot_desc = wg_desc_plus(k, f->dot_desc, q_at);
    }
    if (f->dq) {
        /* dQ part of warpgroup wg: query rows 64 (wg % mparts), columns dqn (wg / mparts) */
        Reg x = e_reg(e, RC_B32);
        INS(e, REM_U32, R(mpart), R(f->wg), I(mparts));
        INS(e, DIV_U32, R(npart), R(f->wg), I(mparts));
        INS(e, MUL_LO_U32, R(x), R(mpart), I(bn * 128));
        if (bwg_dq_swap(t)) f->ds_desc = wg_desc_kmajor(k, f->ds_off);   /* B of dQ^T: dS, rows the bm queries */
        else f->ds_desc = wg_desc_plus(k, wg_desc_mn(k, f->ds_off, bn * 128), x);
        f->kt_desc = wg_desc_mn(k, f->k_off, bn * 128);
        Reg y = e_reg(e, RC_B32);
        INS(e, MUL_LO_U32, R(y), R(npart), I(f->dqn / 64 * bn * 128));
        if (f->dsplit > 1) INS(e, ADD_U32, R(y), R(y), R(k_at));
        f->kt_desc = wg_desc_plus(k, f->kt_desc, y);
        f->ds_buf = e_reg(e, RC_B32);
        f->dq_stage = e_reg(e, RC_B32);                            /* smem + dQ + wg rows dqn 4 (+ wwarp 16 rows * 128) */
        INS(e, MAD_LO_U32, R(f->dq_stage), R(f->wg), I(bwg_dq_part_bytes(d)), R(k->smem));
        if (!bwg_dq_swap(t)) INS(e, MAD_LO_U32, R(f->dq_stage), R(wwarp), I(16 * 128), R(f->dq_stage));   /* swapped: the warpgroup's */
        INS(e, ADD_U32, R(f->dq_stage), R(f->dq_stage), I(f->dq_off));
        INS(e, MOV_B32, R(f->ds_buf), I(0));
        if (f->dq_bufs == 2) INS(e, MOV_B32, R(f->dq_sel = e_reg(e, RC_B32)), I(0));
    }
    acc_new(k, &f->dk, 1, f->dh / 8);
    acc_new(k, &f->dv, 1, f->dh / 8);
    acc_fill(k, &f->dk, 0.0f);
    acc_fill(k, &f->dv, 0.0f);
    mbar_wait(k, f->kv_bar, kc_imm32(k, 0), 0);                  /* K and V landed */
    query_loop(k, &f->blocks, bwd_step, f, 1);   /* bwd_step moves it on (wg_release) */
    epilogue(k, f);
}

/* At d 128 each consumer warpgroup runs its own copy of the code, its index a constant: ptxas then keeps the
 * descriptors (constants plus the ring's offset) on the uniform datapath instead of adding them up per thread and
 * moving each by R2UR before its wgmma (the main kernel's R2UR 80 -> 23). H200, against one copy for both
 * (BENCHMARKS.md, 2026-11-28): d 128 -2 %, causal -2 %, GQA 64/8 causal -2 %, deterministic -1 %; at d 64 +2 %,
 * so d 64 and d 256 keep one copy, and so does varlen (two copies spill 8 bytes there at ptxas 13.0, causal). The
 * forward measured 0-2 % slower with copies: its descriptors also derive from tiles read from shared memory. */
static void consumer(Kctx *k, void *ctx) {
    WgBwd *f = ctx;
    Emit *e = &k->e;
    if (plan_role_regs(f->p, "consumer")) INS(e, SETMAXNREG_INC, I(plan_role_regs(f->p, "consumer")));
    problem(k, f);
    if (f->d->d != 128 || f->d->varlen || f->cw == 1) {
        consumer_side(k, f, -1);
        return;
    }
    Reg wg = e_reg(e, RC_B32), other = e_reg(e, RC_PRED);
    INS(e, SUB_U32, R(wg), R(k->warp), I(4));
    INS(e, SHR_U32, R(wg), R(wg), I(2));
    wg_each_consumer(k, wg, other, f->cw, consumer_side, f);
}

void attn_bwd_wg_main_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module) {
    Kctx kc;
    kctx_begin(&kc, ks);
    Emit *e = &kc.e;
    const AttnTile *t = &d->tile;
    WgBwd f = {.d = d, .p = p, .cw = bwg_consumers(t), .stages = t->stages, .dqn = bwg_dh(d) / bwg_dq_parts(t),
               .dsplit = bwg_dsplit(t), .dh = bwg_dh(d),
               .dq = bwg_main_dq(d), .ordered = bwg_ordered(d),
               .k_off = plan_region(p, "K"), .v_off = plan_region(p, "V"), .q_off = plan_region(p, "Q.0"),
               .do_off = plan_region(p, "dO.0"), .st_off = plan_region(p, "stats.0")};
    if (BWG_DQ_EMPTY(f.cw, bwg_dq_bufs(t) - 1, f.cw - 1) > 15) {   /* named barriers are 0-15 */
        fprintf(stderr, "ptxgen internal: the wgmma attn_bwd's dQ barrier pairs need more than 16 named barriers\n");
        abort();
    }
    f.slot_bytes = t->stages > 1 ? plan_region(p, "Q.1") - f.q_off : 0;
    if (t->stages > 1 && (plan_region(p, "dO.1") - f.do_off != f.slot_bytes || plan_region(p, "stats.1") - f.st_off != f.slot_bytes)) {
        fprintf(stderr, "ptxgen internal: the attn_bwd ring's slots are not evenly spaced\n");
        abort();
    }
    if (f.dq) {
        f.ds_off = plan_region(p, "dS.0"), f.ds_other = plan_region(p, "dS.1") - f.ds_off;
        f.dq_bufs = bwg_dq_bufs(t);
        f.dq_off = plan_region(p, f.dq_bufs == 2 ? "dQ.0" : "dQ");
        f.dq_bytes = f.dq_bufs == 2 ? plan_region(p, "dQ.1") - f.dq_off : 0;
    }
    int nb = BWG_NBARS(t->stages);
    Reg bar[BWG_NBARS(3)];
    Opnd counts[BWG_NBARS(3)];
    counts[0] = I(1);                                             /* K/V: the producer's expect_tx */
    for (int s = 0; s < t->stages; s++) {
        counts[1 + s] = I(1);                                     /* full: the producer's expect_tx */
        counts[1 + t->stages + s] = I(4 * f.cw);                  /* empty: every consumer warp */
    }
    mbar_init(&kc, plan_region(p, "barriers"), nb, counts, bar);
    f.kv_bar = bar[0], f.full0 = bar[1], f.empty0 = bar[1 + t->stages];
    INS(e, BAR_SYNC, I(0));                                       /* the barriers are initialised */
    Reg is_consumer = e_reg(e, RC_PRED);
    INS(e, SETP_GE_U32, R(is_consumer), R(kc.warp), I(4));
    int past = 0;
    if (d->varlen) {   /* the grid covers the longest sequence's keys: a CTA past its own sequence's leaves */
        Reg b = e_reg(e, RC_B32), kvh = e_reg(e, RC_B32), key0 = e_reg(e, RC_B32), part = {0};
        if (f.dsplit > 1) part = e_reg(e, RC_B32);
        cta_keys(&kc, &f, b, kvh, key0, part);
        INS(e, MUL_LO_U32, R(key0), R(key0), I(t->bn));
        past = varlen_keys_exit_at(&kc, d, b, key0);
    }
    wg_roles(&kc, is_consumer, producer, consumer, &f);
    if (d->varlen) e_place(&kc.e, past);
    kctx_finish(&kc, module);
}
