/* The runner's block-sparse problems (KERNELS.md "Block-sparse"): the mask
 * and head types from --block-mask, the check every launch's head types go
 * through (ptxgen_head_mask_check, public), the reference's view of the mask,
 * FLOPs over the active blocks and a description. */
#ifndef PTXGEN_BLOCKMASK_H
#define PTXGEN_BLOCKMASK_H
#include "problem.h"
#include "ref.h"

/* --block-mask MODE (NULL: random:0.5) with --mask-heads (0: 2): the problem's mask shape and how its contents are
 * drawn; a FILE is read here (whitespace-separated integers, b * n_mask_heads * mask_rows * mask_cols of them, then
 * h_q head types). Needs p's shape and block sizes set. 2 with err on bad input. */
int  blockmask_setup(Problem *p, const char *mode, int mask_heads, char *err, size_t errlen);
/* The mask and head types' layouts (problem_init); their contents from rng (or the file), uploaded. */
void blockmask_layouts(Problem *p);
int  blockmask_draw(Problem *p, Rng *rng, char *err, size_t errlen);
/* The reference's mask for batch entry b onward (varlen: sequence b's). */
RefMask blockmask_ref(const Problem *p, int b);
/* The fraction of (batch, query head, block) the mask lets through, dense heads whole; before blockmask_draw, the
 * mode's nominal density (random:D: D, else 1). */
double blockmask_density(const Problem *p);
/* " block-sparse 128x128 random:0.10 (active 10.2%, 2 mask heads, types 0,1,2,...)" into buf. */
void blockmask_describe(const Problem *p, char *buf, size_t len);
#endif
