/* What the tcgen05 attn_bwd main kernel's plan and emitter share. */
#ifndef PTXGEN_ATTN_BWD_TC_H
#define PTXGEN_ATTN_BWD_TC_H
#include "attn_bwd.h"
#include "attn_wg.h"
#include "attn_tc.h"

#define TCB_BN 128             /* keys per CTA: the M of S^T, dP^T, dV and dK, one TMEM lane and compute thread each */
#define TCB_BM 64              /* query rows per step: the N of S^T and dP^T, the K of dV and dK, the M of dQ */
/* warps 0-3 compute (thread r owns key r), warp 4 issues the MMAs, warp 5 the TMA copies */
#define TCB_THREADS 192
#define TCB_ISSUER 128
#define TCB_PRODUCER 160
/* mbarriers: K/V landed; per ring slot full and empty; S^T and dP^T done; P^T and dS^T in; the step's MMAs done */
enum { TCB_KV };
#define TCB_FULL(st) 1
#define TCB_EMPTY(st) (1 + (st))
#define TCB_SD(st) (1 + 2 * (st))
#define TCB_PDS(st) (2 + 2 * (st))
#define TCB_DONE(st) (3 + 2 * (st))
#define TCB_NBARS(st) (4 + 2 * (st))
/* CTAs per block of keys: each owns dh = d / dsplit columns of dK, dV and dQ (its TMEM holds only those) and
 * computes S^T and dP^T over the whole d itself, which is how d 192 and 256 fit the 512 columns */
static inline int tcb_dsplit(const AttnDesc *d) { return d->tile.dsplit > 1 ? d->tile.dsplit : 1; }
static inline int tcb_dh(const AttnDesc *d) { return d->d / tcb_dsplit(d); }
/* whether P^T and dS^T get TMEM columns of their own (else over S^T and dP^T, so that the next step's scores
 * wait for this step's dV and dK): S^T, dP^T, P^T, dS^T, dV, dK and dQ within the 512 */
static inline int tcb_own_p(const AttnDesc *d) { return 3 * TCB_BM + 3 * tcb_dh(d) <= 512; }

void attn_bwd_tc_main_plan(const AttnDesc *d, Plan *p);
void attn_bwd_tc_main_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks);
void attn_bwd_tc_main_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module);
#endif
