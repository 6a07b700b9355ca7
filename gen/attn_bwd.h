/* The attn_bwd kernel set, in launch order:
 *   pre   delta = rowsum(dO * O) per query row, and the fp32 dQ accumulator zeroed
 *   main  per key block: dK, dV over every query block of every query head of
 *         the kv head's group, dQ partial sums added into the accumulator
 *   dq    dQ = scale * accumulator, rounded            (default)
 *         or dQ recomputed per query block, no atomics (deterministic=1)
 * Internal to the attn_bwd generator files. Calls point one way:
 *   attn_bwd_desc.c (plans, the set) -> attn_bwd_rows.c, attn_bwd.c, attn_bwd_dq.c
 *   every one of them                -> attn_bwd_abi.c (entry names, shared inputs) */
#ifndef PTXGEN_ATTN_BWD_H
#define PTXGEN_ATTN_BWD_H
#include "attn_emit.h"

enum { BWD_PRE, BWD_MAIN, BWD_DQ, BWD_KERNELS };
#define BWD_ROWS_PER_CTA 64     /* rows of one CTA of the row-wise kernels (pre, dQ convert) */
#define BWD_ROW_THREADS 128

/* attn_bwd_abi.c */
/* entry name: attn_bwd_<part>_<dtype>_d<d>[_causal] plus the tile where it matters */
void bwd_entry(KernelSpec *ks, const AttnDesc *d, const char *part, int with_tile);
/* q, k, v, do, lse and the delta workspace: what the main and dq kernels read */
void bwd_inputs(KernelSpec *ks, const AttnDesc *d);

/* the row-wise kernels (attn_bwd_rows.c) */
void bwd_pre_spec(const AttnDesc *d, KernelSpec *ks);
void bwd_pre_emit(const AttnDesc *d, const KernelSpec *ks, Buf *module);
void bwd_convert_spec(const AttnDesc *d, KernelSpec *ks);
void bwd_convert_emit(const AttnDesc *d, const KernelSpec *ks, Buf *module);
void bwd_rows_plan(const AttnDesc *d, Plan *p, const char *what);

/* the main dK/dV kernel: plan and spec in attn_bwd_desc.c, emitter in attn_bwd.c */
void bwd_main_plan(const AttnDesc *d, Plan *p);
void bwd_main_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks);
void bwd_main_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module);

/* the deterministic dQ kernel (attn_bwd_dq.c) */
void bwd_dq_plan(const AttnDesc *d, Plan *p);
void bwd_dq_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks);
void bwd_dq_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module);
#endif
