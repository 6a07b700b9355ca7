/* What the tcgen05 attn_fwd's plan and emitter share. */
#ifndef PTXGEN_ATTN_FWD_TC_H
#define PTXGEN_ATTN_FWD_TC_H
#include "attn_wg.h"
#include "attn_tc.h"

#define TC_FWD_BM 128          /* query rows per CTA: the MMAs' M, all 128 TMEM lanes */
/* warps 0-3 softmax (thread r owns query row r, TMEM lane r), warps 4-7 correction (the same rows: O rescaled),
 * warp 8 issues the MMAs, warp 9 the TMA copies, warps 10-11 complete their warpgroup (setmaxnreg is per
 * warpgroup) and idle; setmaxnreg moves the registers to the softmax */
#define TC_FWD_THREADS 384
#define TC_FWD_SOFTMAX_REGS 240
#define TC_FWD_CORRECTION_REGS 104
#define TC_FWD_TAIL_REGS 56
#define TC_FWD_CORRECTION 128  /* the correction warpgroup's first thread */
#define TC_FWD_ISSUER 256      /* the thread that issues every MMA */
#define TC_FWD_PRODUCER 288    /* the thread that issues every TMA copy */
/* barriers: Q full; K/V full per slot; K/V empty per slot; S full and P free (two buffers each); the rows'
 * factors published (softmax -> correction); P in and O rescaled (softmax and correction -> issuer); O done */
enum { TCF_Q, TCF_KV_FULL };
#define TC_FWD_NBARS(stages) (8 + 2 * (stages))
#define TCF_KV_EMPTY(stages) (1 + (stages))
#define TCF_S_FULL(stages) (1 + 2 * (stages))
#define TCF_P_FREE(stages) (3 + 2 * (stages))
#define TCF_ALPHA(stages) (5 + 2 * (stages))
#define TCF_PV_READY(stages) (6 + 2 * (stages))
#define TCF_O_DONE(stages) (7 + 2 * (stages))
/* query heads per CTA: row r is head r % pack of token r / pack */
static inline int tc_fwd_pack(const AttnTile *t) { return t->pack > 1 ? t->pack : 1; }
#endif
