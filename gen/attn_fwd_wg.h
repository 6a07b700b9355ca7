/* What the wgmma attn_fwd's plan and emitter share. */
#ifndef PTXGEN_ATTN_FWD_WG_H
#define PTXGEN_ATTN_FWD_WG_H
#include "attn_emit.h"

/* setmaxnreg of the producer warpgroup: one thread issues TMA, the rest exit */
#define WG_PRODUCER_REGS 24
/* barriers: Q full, then per ring slot K full, K empty, V full, V empty */
#define WG_NBARS(stages) (1 + 4 * (stages))
/* consumer warpgroups of the tile: 64 query rows each */
int wg_consumers(const AttnTile *t);
#endif
