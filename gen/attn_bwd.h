/* The attn_bwd kernel set, in launch order:
 *   pre   delta = rowsum(dO * O) per query row, and the fp32 dQ accumulator zeroed
 *         (and the dQ semaphores, where the main kernel orders its adds)
 *   main  per key block: dK, dV over every query block of every query head of
 *         the kv head's group, dQ partial sums added into the accumulator
 *   dq    dQ = scale * accumulator, rounded            (default; deterministic=1
 *                                                       of a main kernel that orders its adds)
 *         or dQ recomputed per query block, no atomics (deterministic=1 otherwise)
 * Internal to the attn_bwd generator files. Calls point one way:
 *   attn_bwd_desc.c (plans, the set) -> attn_bwd_rows.c, attn_bwd.c, attn_bwd_dq.c
 *   every one of them                -> attn_bwd_abi.c (entry names, shared inputs)
 *   attn_bwd_wg_desc.c (the wgmma set) -> the set, rows and dq kernels here, attn_bwd_wg.c */
#ifndef PTXGEN_ATTN_BWD_H
#define PTXGEN_ATTN_BWD_H
#include "attn_emit.h"
#include "attn_sparse.h"

enum { BWD_PRE, BWD_MAIN, BWD_DQ, BWD_KERNELS };
#define BWD_ROWS_PER_CTA 64     /* rows of one CTA of the row-wise kernels (pre, dQ convert) */
#define BWD_ROW_THREADS 128
/* the deterministic dQ kernel's own tile (attn_bwd_dq.c), whatever the main kernel's */
#define BWD_DQ_BM 64
#define BWD_DQ_BN 64

/* attn_bwd_abi.c */
/* entry name: attn_bwd_<part>_<dtype>_d<d>[_causal] plus the tile where it matters */
void bwd_entry(KernelSpec *ks, const AttnDesc *d, const char *part, int with_tile);
/* q, k, v, do, lse and the delta workspace: what the main and dq kernels read */
void bwd_inputs(KernelSpec *ks, const AttnDesc *d);
/* dk and dv (outputs), then (varlen) the offsets, then the sizes: the main kernels' tail */
void bwd_key_grads(KernelSpec *ks, const AttnDesc *d);
/* q, k, v, do alone (a main kernel that takes lse and delta from the stats blocks) */
void bwd_tensors(KernelSpec *ks, const AttnDesc *d);
/* the TMA map over the stats workspace: the blocks of bm (64, 80 or 128) rows as rows of 2 bm fp32, one per copy */
void bwd_stats_map(KernelSpec *ks, int bm);
/* the TMA maps of q and do (boxes of bm rows of one head) and of k and v (boxes of bn rows), in that order */
void bwd_input_maps(KernelSpec *ks, const AttnDesc *d, int bm, int bn);

/* What the set's row kernels and workspaces follow from its main kernel. */
typedef struct {
    int stats_block;   /* > 0: the main kernel reads lse and delta from the `stats` workspace, per block of this many
                        * query rows its lse, then its delta, 0 past s_q (one TMA copy of 8 stats_block bytes per step) */
    int dq_ordered;    /* deterministic=1 keeps dQ in the main kernel, its adds in key-block order under a semaphore per
                        * (batch, query head, block of stats_block rows) in the `dq_sem` workspace: no dQ kernel */
    int dq_parts;      /* with dq_ordered, > 1: that many semaphores per block, one per part of dQ's columns that
                        * CTAs of one key block add apart (index block * dq_parts + part) */
} BwdFeed;
static inline int bwd_sem_parts(const BwdFeed *f) { return f->dq_parts > 1 ? f->dq_parts : 1; }
/* deterministic by the mma.sync dQ kernel, which recomputes dQ per query block (no accumulator) */
static inline int bwd_dq_kernel(const AttnDesc *d, const BwdFeed *f) { return d->tile.deterministic && !f->dq_ordered; }
/* the main kernel orders its dQ adds by semaphores, which the pre kernel zeroes */
static inline int bwd_dq_sems(const AttnDesc *d, const BwdFeed *f) { return d->tile.deterministic && f->dq_ordered; }
/* whether a kernel of the set reads the `delta` workspace: the mma.sync main kernel and the dQ kernel do; a
 * main kernel that takes the stats blocks does not */
static inline int bwd_delta_ws(const AttnDesc *d, const BwdFeed *f) { return !f->stats_block || bwd_dq_kernel(d, f); }
/* the semaphores' bytes: one u32 per (b, h_q, block of stats_block rows) */
#define BWD_SEM_BYTES "b * h_q * cdiv(s_q, %d) * 4"
#define BWD_SEM_PARTS_BYTES "b * h_q * cdiv(s_q, %d) * %d"

/* the row-wise kernels (attn_bwd_rows.c) */
void bwd_pre_spec(const AttnDesc *d, const BwdFeed *f, KernelSpec *ks);
void bwd_pre_emit(const AttnDesc *d, const BwdFeed *f, const KernelSpec *ks, Buf *module);
void bwd_convert_spec(const AttnDesc *d, KernelSpec *ks);
void bwd_convert_emit(const AttnDesc *d, const KernelSpec *ks, Buf *module);
void bwd_rows_plan(const AttnDesc *d, Plan *p, const char *what);

/* the main dK/dV kernel: plan and spec in attn_bwd_desc.c, emitter in attn_bwd.c */
void bwd_main_plan(const AttnDesc *d, Plan *p);
void bwd_main_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks);
void bwd_main_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module);

/* The set around a main kernel (attn_bwd_desc.c): pre, main, then the dQ convert or, deterministic, the
 * dQ kernel built from desc dq (the mma.sync tile; d itself for this family). */
typedef struct {
    void (*plan)(const AttnDesc *d, Plan *p);
    void (*spec)(const AttnDesc *d, const Plan *p, KernelSpec *ks);
    void (*emit)(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module);
    BwdFeed feed;
} BwdMain;
/* dsplit (wgmma, tcgen05): CTAs per key block, each owning d / dsplit columns of dK, dV and dQ. Whether the parts
 * are whole 64-column slabs (else 1 and the refusal, naming the dsplit values up to max_ds that are), and the
 * plan's note on the price (empty for one part). */
int  bwd_dsplit_check(const AttnDesc *d, int ds, int max_ds, char *err, size_t errlen);
void bwd_dsplit_note(char *buf, size_t n, int ds, int dh);
/* The deterministic dQ kernel another family's set takes: the mma.sync family's, at that family's default tile. */
AttnDesc bwd_dq_desc(const AttnDesc *d);
int  bwd_set_plan(const AttnDesc *d, const AttnDesc *dq, const BwdMain *main, Plan *plans);
/* the stats workspace's bytes for blocks of `block` rows */
#define BWD_STATS_BYTES "b * h_q * cdiv(s_q, %d) * %d"
void bwd_set_build(const AttnDesc *d, const AttnDesc *dq, const BwdMain *main, KernelSet *ks, Buf *module);

/* the deterministic dQ kernel (attn_bwd_dq.c) */
void bwd_dq_plan(const AttnDesc *d, Plan *p);
void bwd_dq_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks);
void bwd_dq_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module);
#endif
