/* The CTA-pair plan of the tcgen05 mla_bwd set (bm = 128, docs/design/mla_bwd_tcgen05.md):
 *   dq kernel  (mla_bwd_pair.c, cta_group::2, cluster 2): per token, the
 *              pair's 128 heads (64 per CTA) over the slots 64 at a time;
 *              dq, and P and dS of every (head, slot) into the `ps` workspace
 *   dkv kernel (mla_bwd_pair_dkv.c, cta_group::1): per token and 128
 *              dkv columns, KV-stationary: 128 slots x all heads per step
 * Plans and set hooks: mla_bwd_pair_desc.c. Internal to those files. */
#ifndef PTXGEN_MLA_BWD_PAIR_H
#define PTXGEN_MLA_BWD_PAIR_H
#include "mla_bwd.h"
#include "mla_tc.h"

#define PAIR_HEADS 128          /* per pair, 64 per CTA: the MMAs' M (cta_group::2) */
#define PAIR_CTA_HEADS 64
#define PAIR_STEP 64            /* slots per dq step: 32 gathered by each CTA (the N split of B) */
#define PAIR_BLOCK 128          /* slots per dkv step (its MMAs' M); the dq kernel covers whole blocks */
#define PAIR_DKV_COLS 128       /* dkv columns per CTA of the dkv kernel (the last chunk: the 64 rope columns) */
#define PAIR_Y_SLABS 5          /* 64-column slabs of the step's rows each CTA holds as B of dQ */
#define PAIR_DQ_THREADS 192     /* warps 0-3 compute, 4 the MMA issuer (even CTA), 5 the producer */
#define PAIR_DKV_THREADS 128

/* mbarriers of the dq kernel (each CTA has all four; the even CTA's P and FULL gather the pair):
 *   FULL  this CTA's gathers; the even CTA's also waits for the odd CTA's relay
 *   S     the issuer's commit of S, dP (multicast to both CTAs)
 *   P     every compute thread of the pair (on the even CTA): P, dS read out, dS in smem
 *   DQ    the issuer's commit of dQ (multicast): the step's rows and dS are free */
enum { PB_FULL, PB_S, PB_P, PB_DQ, PB_NBARS };
#define PAIR_BARS_BYTES (8 * PB_NBARS + 8)

extern const MlaBwdMain mla_bwd_pair_main;   /* the dq kernel, then the dkv kernel */
void mla_bwd_pair_dq_plan(const AttnDesc *d, Plan *p);
void mla_bwd_pair_dq_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module);
void mla_bwd_pair_dkv_plan(const AttnDesc *d, Plan *p);
void mla_bwd_pair_dkv_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module);
#endif
