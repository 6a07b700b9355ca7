/* What the wgmma attn_fwd's plan and emitter share. */
#ifndef PTXGEN_ATTN_FWD_WG_H
#define PTXGEN_ATTN_FWD_WG_H
#include "attn_wg.h"

/* barriers: Q full, then per ring slot K full, K empty, V full, V empty; paged, one more: the last V block's rows
 * past the sequence zeroed (WG_TAIL); persistent, five more from wg_persist_bar: Q empty, the tile slots' full and
 * empty (two each), and with two Q buffers two more: the second's full and empty */
#define WG_NBARS(stages) (1 + 4 * (stages))
#define WG_TAIL(stages) WG_NBARS(stages)
#define WG_MAX_BARS (WG_NBARS(4) + 7)
/* Q tile buffers: two only for a persistent CTA (tile key qbufs), whose tiles alternate between them */
static inline int wg_q_bufs(const AttnTile *t) { return t->persist && t->qbufs == 2 ? 2 : 1; }
static inline int wg_persist_bar(const AttnDesc *d) { return WG_NBARS(d->tile.stages) + (d->page_size > 0); }
static inline int wg_nbars(const AttnDesc *d) {
    return wg_persist_bar(d) + (d->tile.persist ? 5 + 2 * (wg_q_bufs(&d->tile) - 1) : 0);
}
/* d 256's default key step (FA3's): 80 keys */
#define WG_D256_BN 80
/* consumer warpgroups of the tile: 64 query rows each */
int wg_consumers(const AttnTile *t);
/* The consumers' first warp: a producer warpgroup comes first (warps 0-3); a single producer warp comes
 * last, since a warpgroup is four warps from a multiple of 4. */
static inline int wg_consumer_warp0(const AttnTile *t) { return t->producer == 4 ? 4 : 0; }
static inline int wg_producer_warp(const AttnTile *t) { return t->producer == 4 ? 0 : 4 * wg_consumers(t); }
static inline int wg_threads(const AttnTile *t) { return 128 * wg_consumers(t) + 32 * t->producer; }
/* The default persistent grid: the SMs of an H100 SXM, H200, H800 or GH200, the most an sm_90a part has */
#define WG_PERSIST_CTAS 132
/* Persistent with O staged over Q, where O's own staging does not fit (d_v 256: 263,168 B): each warpgroup frees
 * Q only once the TMA store has read its O rows, so the next tile's Q loads after the store, not under it. */
static inline int wg_o_over_q(const AttnDesc *d) { return d->tile.persist && d->dv > 128; }
#endif
