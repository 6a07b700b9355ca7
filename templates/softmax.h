/* Online softmax over accumulator rows (FlashAttention-2): each lane owns two
 * rows per m tile (g and g+8) and 2 columns per n tile; row maxima are
 * reduced over the 4 lanes of a quad, row sums stay per lane until the end. */
#ifndef PTXGEN_SOFTMAX_H
#define PTXGEN_SOFTMAX_H
#include "warp_mma.h"

typedef struct {
    int mt;
    Reg *m;   /* running max of raw scores, per (m tile, half) */
    Reg *l;   /* this lane's partial sum of exp, per (m tile, half) */
} RowStats;

void rows_init(Kctx *k, RowStats *rs, int mt);
/* rows_init's values (no row seen yet) into rows already allocated, which a loop carries; the stats of `from` into
 * those of `to` (both allocated, as many rows) */
void rows_reset(Kctx *k, RowStats *rs);
void rows_copy(Kctx *k, RowStats *to, const RowStats *from);
/* S[i, j] = -inf where column j is not below limit: `room` holds, per (m tile,
 * half), how many columns from this lane's first column (2t) are valid. */
void softmax_mask(Kctx *k, Acc *s, const Reg *room);
/* New maxima, S <- exp2(S*scale_log2 - m*scale_log2) in place, O and l rescaled. */
void softmax_update(Kctx *k, Acc *s, RowStats *rs, Acc *o, Reg scale_log2);
/* softmax_update leaving O alone: alpha (2 per m tile, the caller's registers) gets each row's factor,
 * for the caller to apply with acc_scale_rows once O is not in flight (wgmma runs P V under the next softmax). */
void softmax_update_deferred(Kctx *k, Acc *s, RowStats *rs, Reg scale_log2, const Reg *alpha);
void acc_scale_rows(Kctx *k, Acc *o, const Reg *alpha);
/* FA4's lazy rescale: a row's new max mx (>= its running max m) is kept only when it lies more than
 * SOFTMAX_LAZY_LOG2 above m in exp2 units, else mx = m: P then stays below 2^8 (as exact in fp32 sums and as
 * representable in bf16/fp16 as below 1) and the row's factor for O is exactly 1. From -inf any finite max
 * is kept; a row still without keys stays -inf (-inf - -inf is NaN: not above). */
#define SOFTMAX_LAZY_LOG2 8.0f
void softmax_lazy_max(Kctx *k, Reg mx, Reg m, Reg scale_log2);
/* O /= rowsum (0 where no key was valid); lse (natural log, +inf where no key
 * was valid) per (m tile, half) into lse[]. */
void softmax_finish(Kctx *k, RowStats *rs, Acc *o, Reg scale_log2, Reg *lse);

/* The pieces of the two above, for rows whose columns are split over warps
 * (the caller combines the warps' maxima and sums in between): */
/* x = op(x, shfl_xor(x, 1)); x = op(x, shfl_xor(x, 2)): the 4 lanes of a quad agree. */
void quad_allreduce(Kctx *k, Reg x, Op op);
/* the same over all 32 lanes */
void warp_allreduce(Kctx *k, Reg x, Op op);
/* max of the running max and row (m tile i, half h) of S, quad-reduced */
Reg  softmax_row_max(Kctx *k, const Acc *s, const RowStats *rs, int i, int h);
/* with the row's new max mx: S <- exp2(...), l and O rescaled, m = mx */
void softmax_rescale_row(Kctx *k, Acc *s, RowStats *rs, Acc *o, Reg scale_log2, int i, int h, Reg mx);
/* S row -> exp2(...) with the row's new max mx, l rescaled and summed, m = mx; returns the row's factor
 * for O (to apply with acc_scale_rows once O is not in flight) */
Reg  softmax_exp_row(Kctx *k, Acc *s, RowStats *rs, Reg scale_log2, int i, int h, Reg mx);
/* l quad-reduced in place: this warp's row sums */
void softmax_row_sums(Kctx *k, RowStats *rs);
/* m * scale_log2, but 0 for a row that has seen no valid key yet: exp2(-inf - 0) then gives 0 instead of the
 * NaN of (-inf) - (-inf). */
Reg  softmax_scaled_max(Kctx *k, Reg m, Reg scale_log2);
/* O /= l and lse from l as it stands */
void softmax_normalize(Kctx *k, RowStats *rs, Acc *o, Reg scale_log2, Reg *lse);
/* x <- 2^x for a softmax exponent (x <= 0) on the FMA and integer units instead of MUFU: a degree-3
 * polynomial of the fraction, the integer part added to the exponent field (relative error 7.5e-5). Below
 * 2^-126 it gives a subnormal where ex2.approx.ftz gives 0: sum such values with add.ftz (OP_ADD_FTZ_F32). */
void exp2_poly(Kctx *k, Reg x);
#endif
