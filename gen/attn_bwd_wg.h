/* What the wgmma attn_bwd's plan and emitter share. */
#ifndef PTXGEN_ATTN_BWD_WG_H
#define PTXGEN_ATTN_BWD_WG_H
#include "attn_bwd.h"
#include "attn_wg.h"

/* barriers: K and V landed, then per ring slot its Q/dO/statistics full and empty */
#define BWG_NBARS(stages) (1 + 2 * (stages))
/* consumer warpgroups: 64 key rows each */
static inline int bwg_consumers(const AttnTile *t) { return t->bn / 64; }
/* dQ = dS K over the consumers: bm/64 row blocks times bwg_dq_parts column parts, one per warpgroup */
static inline int bwg_dq_parts(const AttnTile *t) { return bwg_consumers(t) / (t->bm / 64); }
/* a producer warpgroup (warps 0-3; one thread issues TMA, one warp stages the statistics), then the consumers */
static inline int bwg_threads(const AttnTile *t) { return 128 + 128 * bwg_consumers(t); }

void attn_bwd_wg_main_plan(const AttnDesc *d, Plan *p);
void attn_bwd_wg_main_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks);
void attn_bwd_wg_main_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module);
#endif
