/* The runner's paged-KV problems (KERNELS.md "Paged KV"): sequence lengths and a
 * shuffled block table drawn per seed, the cache's layout, the check every
 * launch's table goes through (ptxgen_paged_check, public), the float64
 * reference by gathering each sequence's keys, FLOPs and a description. */
#ifndef PTXGEN_PAGED_H
#define PTXGEN_PAGED_H
#include "problem.h"

/* The lengths (the last sequence s_k long, the others drawn in [0, s_k]; full: all s_k long) and the block table
 * (pages in shuffled order, two spare pages nobody uses, -1 past each sequence's pages) from seed; p's b, s_k and
 * page_size set. */
int  paged_setup(Problem *p, uint64_t seed, int full, char *err, size_t errlen);
/* NaN into every row of k and v no sequence owns (past a sequence's keys in its last page, the spare pages), on the
 * device: those rows are any memory in a real cache, and a kernel must keep them out of its sums (P = 0 times NaN
 * is NaN). */
int  paged_poison(const Problem *p, Device *dev, char *err, size_t errlen);
/* Bytes of K and V a forward reads: each sequence's keys, once per kv head. */
double paged_kv_bytes(const Problem *p);
void paged_layouts(Problem *p, int pad);
int  paged_ref_fwd(const Problem *p, double *const ref[]);
double paged_fwd_flops(const Problem *p);
void paged_describe(const Problem *p, char *buf, size_t len);
#endif
