/* What the wgmma attn_bwd's plan and emitter share. */
#ifndef PTXGEN_ATTN_BWD_WG_H
#define PTXGEN_ATTN_BWD_WG_H
#include "attn_bwd.h"
#include "attn_wg.h"
#include "../templates/wgmma.h"

/* barriers: K and V landed, then per ring slot its Q/dO/statistics full and empty */
#define BWG_NBARS(stages) (1 + 2 * (stages))
/* named barriers: 0 the CTA's, 1 the consumers', 2.. each consumer warpgroup's; then, with the dQ writer, per
 * staging buffer b and consumer warpgroup w, its part staged (the warpgroup arrives, the writer waits) and its part
 * free (the writer arrives, the warpgroup waits): a pair each, 128 + 32 threads, so that no warpgroup waits for
 * another's part */
#define BWG_DQ_FULL(cw, b, w) (2 + (cw) + 2 * ((b) * (cw) + (w)))
#define BWG_DQ_EMPTY(cw, b, w) (BWG_DQ_FULL(cw, b, w) + 1)
/* BWG_DQ_FULL's steps per warpgroup and per buffer, for the IDs the kernel computes at run time */
#define BWG_DQ_WG_STEP(cw) (BWG_DQ_FULL(cw, 0, 1) - BWG_DQ_FULL(cw, 0, 0))
#define BWG_DQ_BUF_STEP(cw) (BWG_DQ_FULL(cw, 1, 0) - BWG_DQ_FULL(cw, 0, 0))
/* dQ staging buffers: with two, the consumers stage a block while the writer still adds the one before */
static inline int bwg_dq_bufs(const AttnTile *t) { return t->dqbufs == 2 ? 2 : 1; }
/* consumer warpgroups: 64 key rows each */
static inline int bwg_consumers(const AttnTile *t) { return t->bn / 64; }
/* bm not a multiple of 64 (80, FA3's d 128 step, which FA3 takes non-causal and ours causal too; 32, d 256's step,
 * whose ring of full 256-column Q and dO fits beside K and V): dQ's rows cannot be a wgmma's M, so each
 * warpgroup computes dQ^T = K^T dS^T, its 64 columns of dQ on M and the bm query rows on N (dS kept K-major in
 * shared memory, dQ^T staged transposed) */
static inline int bwg_dq_swap(const AttnTile *t) { return t->bm % 64 != 0; }
/* CTAs per key block: each owns dh = d / dsplit columns of dK, dV and dQ (its registers hold only those; S^T and
 * dP^T are computed in every part); d 256's dK and dV would be 256 registers a consumer thread in one */
static inline int bwg_dsplit(const AttnTile *t) { return t->dsplit > 1 ? t->dsplit : 1; }
static inline int bwg_dh(const AttnDesc *d) { return d->d / bwg_dsplit(&d->tile); }
/* dQ's 64-row blocks over the consumers: bm/64, or one swapped (its N is all bm rows) */
static inline int bwg_mparts(const AttnTile *t) { return bwg_dq_swap(t) ? 1 : t->bm / 64; }
/* dQ = dS K over the consumers: bwg_mparts row blocks times bwg_dq_parts column parts, one per warpgroup */
static inline int bwg_dq_parts(const AttnTile *t) { return bwg_consumers(t) / bwg_mparts(t); }
/* the query rows of one warpgroup's dQ part: all bm swapped, else 64 */
static inline int bwg_dq_rows(const AttnTile *t) { return bwg_dq_swap(t) ? t->bm : 64; }
/* the bytes of one warpgroup's fp32 dQ part in the staging: its rows x its d / bwg_dq_parts columns */
static inline int bwg_dq_part_bytes(const AttnDesc *d) {
    return bwg_dq_rows(&d->tile) * (bwg_dh(d) / bwg_dq_parts(&d->tile)) * 4;
}
/* a producer warpgroup (warps 0-3; one thread issues TMA, warp 1 adds dQ), then the consumers */
static inline int bwg_threads(const AttnTile *t) { return 128 + 128 * bwg_consumers(t); }
/* whether the main kernel computes dQ = dS K: a CTA's dh columns (64 or 128) in parts of whole 64-column slabs */
static inline int bwg_main_dq(const AttnDesc *d) {
    return (bwg_dh(d) == 64 || bwg_dh(d) == 128) && (bwg_dh(d) / bwg_dq_parts(&d->tile)) % WG_SLAB_COLS == 0;
}
/* deterministic with dQ in the main kernel: a dQ-writer warp adds each block in key-block order (semaphores) */
static inline int bwg_ordered(const AttnDesc *d) { return d->tile.deterministic && bwg_main_dq(d); }

void attn_bwd_wg_main_plan(const AttnDesc *d, Plan *p);
void attn_bwd_wg_main_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks);
void attn_bwd_wg_main_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module);
#endif
