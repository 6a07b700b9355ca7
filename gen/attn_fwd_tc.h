/* What the tcgen05 attn_fwd's plan and emitter share. */
#ifndef PTXGEN_ATTN_FWD_TC_H
#define PTXGEN_ATTN_FWD_TC_H
#include "attn_wg.h"
#include "attn_sparse.h"
#include "attn_tc.h"

#define TC_FWD_BM 128          /* query rows per Q tile: the MMAs' M, all 128 TMEM lanes */
/* The warps, by warpgroup (setmaxnreg is per warpgroup): qtiles softmax warpgroups (thread r of
 * warpgroup t owns row r of Q tile t, TMEM lane r), one correction warpgroup (O rescaled for every
 * tile), then the issuer warp, the producer warp and two idle ones. One Q tile: 384 threads, 240 /
 * 104 / 56 registers; two (FA4's M = 2 x 128): 512 threads, 192 / 80 / 48, the whole 64 K pool. */
typedef struct {
    int threads, correction, issuer, producer;   /* the CTA's threads; the first thread of each role */
    int softmax_regs, correction_regs, tail_regs;
} TcFwdRoles;
static inline int tc_fwd_qtiles(const AttnTile *t) { return t->qtiles > 1 ? t->qtiles : 1; }
static inline TcFwdRoles tc_fwd_roles(const AttnTile *t) {
    int q = tc_fwd_qtiles(t), c = 128 * q;
    return q == 1 ? (TcFwdRoles){384, c, c + 128, c + 160, 240, 104, 56}
                  : (TcFwdRoles){512, c, c + 128, c + 160, 192, 80, 48};
}
/* barriers: Q full; K/V full per slot; K/V empty per slot; S full x2 and P free x2 (one Q tile: by key
 * block parity; two: by tile); the rows' factors published (softmax -> correction; two tiles: one each);
 * P in and O rescaled (softmax and correction -> issuer; two tiles: one each); one tile: O done */
enum { TCF_Q, TCF_KV_FULL };
#define TC_FWD_NBARS(stages, q) (7 + 2 * (stages) + (q))
#define TCF_KV_EMPTY(stages) (1 + (stages))
#define TCF_S_FULL(stages) (1 + 2 * (stages))
#define TCF_P_FREE(stages) (3 + 2 * (stages))
#define TCF_ALPHA(stages) (5 + 2 * (stages))
#define TCF_PV_READY(stages, q) (5 + 2 * (stages) + (q))
#define TCF_O_DONE(stages) (7 + 2 * (stages))
/* a CTA pair (ctas=2): one more, in the even CTA only: P in and O rescaled in both CTAs (-> its issuer) */
#define TCF_PAIR_READY(stages) (8 + 2 * (stages))
static inline int tc_fwd_pair(const AttnTile *t) { return t->ctas > 1; }
static inline int tc_fwd_nbars(const AttnTile *t) {
    return TC_FWD_NBARS(t->stages, t->qtiles > 1 ? t->qtiles : 1) + tc_fwd_pair(t);
}
/* query heads per CTA: row r is head r % pack of token r / pack */
static inline int tc_fwd_pack(const AttnTile *t) { return t->pack > 1 ? t->pack : 1; }
#endif
