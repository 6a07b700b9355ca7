/* What the tcgen05 attn_fwd's plan and emitter share. */
#ifndef PTXGEN_ATTN_FWD_TC_H
#define PTXGEN_ATTN_FWD_TC_H
#include "attn_wg.h"
#include "attn_tc.h"

#define TC_FWD_BM 128          /* query rows per CTA: the MMAs' M, all 128 TMEM lanes */
/* warps 0-3 softmax (thread r owns query row r, TMEM lane r), warp 4 issues the MMAs, warp 5 the TMA copies */
#define TC_FWD_THREADS 192
#define TC_FWD_ISSUER 128      /* the thread that issues every MMA */
#define TC_FWD_PRODUCER 160    /* the thread that issues every TMA copy */
/* barriers: Q full; K/V full per slot; K/V empty per slot; S full (two buffers); P full; O done */
enum { TCF_Q, TCF_KV_FULL };
#define TC_FWD_NBARS(stages) (5 + 2 * (stages))
#define TCF_KV_EMPTY(stages) (1 + (stages))
#define TCF_S_FULL(stages) (1 + 2 * (stages))
#define TCF_P_FULL(stages) (3 + 2 * (stages))
#define TCF_O_DONE(stages) (4 + 2 * (stages))
/* query heads per CTA: row r is head r % pack of token r / pack */
static inline int tc_fwd_pack(const AttnTile *t) { return t->pack > 1 ? t->pack : 1; }
#endif
