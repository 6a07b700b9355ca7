/* What every family's attn_bwd main kernel shares: the query blocks a key
 * block sees, and the element-wise math on the transposed scores S^T (a warp's
 * rows are keys, its columns queries; an Acc in the m16n8 layout). */
#ifndef PTXGEN_ATTN_BWD_MATH_H
#define PTXGEN_ATTN_BWD_MATH_H
#include "attn_emit.h"
#include "../templates/warp_mma.h"

/* The CTA's (batch, kv head, key block) from its linear index over the grid (key blocks, kv heads, batch),
 * in the order CTAs start. Causal, key block 0 has the most query blocks, so the grid's own order (key block
 * fastest) ends on a (kv head, batch) pair's long CTAs, a tail where most SMs idle. A chunk is as many pairs as
 * fill the GPU's CTA slots (%nsmid x ctas_per_sm) with their key blocks; inside one, key block 0 of every pair
 * first, then key block 1, ... so the longest CTAs start first while those in flight still share few heads'
 * Q, dO and dQ in L2. Without GQA (group, the query heads per kv head, is 1) the whole grid goes by chunks
 * (H200: causal d128 2-4 %, deterministic d128 5-11 % faster). With GQA only the last chunk does and the rest
 * keeps the grid's order, where a kv head's key blocks step through its query heads' blocks together and share
 * them in L2 (chunks throughout: GQA 64/8 causal 5-10 % slower; the last chunk alone: 3-10 % faster, b 8 s 2048
 * GQA 32/4 causal 12 %). Key blocks of a pair keep their order (the dQ chain relies on it). A CTA's place in
 * the grid is not its keys: what depends on them (a varlen sequence's end) uses these. ctas_per_sm 0: the
 * grid's order. The linear index is 32-bit: ptxgen_launch_dims refuses grids of 2^32 CTAs or more. */
void key_block_order(Kctx *k, int ctas_per_sm, Reg group, Reg b, Reg kvh, Reg kb);

/* Query blocks of bm rows that see keys [key0, key0 + bn): [m_lo, m_lo + per_head) of each of the group's
 * query heads, the ones below m_full only partly (causal: from the first query whose row reaches key0; all
 * of them and none masked otherwise); the CTA steps over total = per_head * group of them.
 * In head-major order by default. `chain` (set with `up` after query_blocks): block-major, the group's heads
 * inside; from the first block up where the predicate `up` holds, else from the last block down. Key blocks
 * that add their dQ in a fixed order meet each (head, block) in step with the key block before them:
 * up, key block n after n+1, which sees bn/bm blocks fewer, all of which n also sees; down, key block n after
 * n-1 at the same step.
 */
typedef struct {
    int causal, bm, chain;
    Reg up;
    Reg m_lo, m_full, per_head, total, group;
    Reg per_head_div;                 /* max(per_head, 1): a divisor even when no block sees the keys */
    int listed;                       /* block-sparse: the steps are a query list's entries (query_blocks_listed) */
    Reg list, mt;                     /* its address (attn_sparse.h) and query tiles per head */
} QueryBlocks;
void query_blocks(Kctx *k, int causal, int bm, int bn, Reg key0, Reg s_q, Reg off, Reg group, QueryBlocks *qb);
/* Block-sparse, after query_blocks: the steps are the entries of query list `list` (entry (head in the group) * mt
 * + block), total its count; head-major, masked below m_full as before. */
void query_blocks_listed(Kctx *k, QueryBlocks *qb, Reg list, Reg mt);
/* step it -> its query head (of kv head kvh's group) and the first row of its block */
void query_block_at(Kctx *k, const QueryBlocks *qb, Reg it, Reg kvh, Reg *h, Reg *m_start);

/* Steps it = 0 .. total-1 over (query head, query block), the causal ones masked: block it % per_head + m_lo
 * is masked below m_full. One copy of the step body per kind, uniform branches. `advances`: the step moves
 * it on itself (a ring's pass counter), else the loop does. */
typedef void (*QueryStep)(Kctx *k, void *ctx, Reg it, int masked);
void query_loop(Kctx *k, const QueryBlocks *qb, QueryStep step, void *ctx, int advances);

/* S^T[key, q] = -inf where key > q + off, for a warp whose key rows start at key_row0 (16 per m tile)
 * and whose query columns start at m_start. */
void mask_future_keys(Kctx *k, Acc *s, Reg m_start, Reg off, Reg key_row0);
/* Varlen: S^T = -inf for keys at or past s_k and queries at or past s_q (the packed rows there are the next
 * sequence's, which a TMA copy does not zero), for a warp as mask_future_keys. */
void mask_outside(Kctx *k, Acc *s, Reg m_start, Reg s_q, Reg s_k, Reg key_row0);

/* The stats block of (batch b, head h, rows from m_start): bm lse then bm delta, padded by the pre kernel so
 * that one TMA copy of one row of the stats map (8 bm bytes) brings it to shared offset dst + stage, completing
 * on barrier full. */
void bwd_copy_stats(Kctx *k, int bm, Reg s_q, Reg b, Reg h, Reg m_start, int dst, Reg stage, Reg full);

/* The statistics of a query block in shared memory: [bm] f32 lse at lse_off, [bm] f32 delta at
 * delta_off, both from `lane_cols`, this lane's address of column 2t (smem + 8 t, plus its stage). */
typedef struct { Reg lane_cols; int lse_off, delta_off; } BwdStats;
/* P^T = 2^(S^T scale log2(e) - lse log2(e)) in place */
void bwd_probabilities(Kctx *k, const BwdStats *st, Acc *s, Reg scale_log2);
/* dS^T = P^T o (dP^T - delta) into dp */
void bwd_score_grads(Kctx *k, const BwdStats *st, const Acc *p, Acc *dp);
#endif
