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
void rows_free(RowStats *rs);
/* S[i, j] = -inf where column j is not below limit: `room` holds, per (m tile,
 * half), how many columns from this lane's first column (2t) are valid. */
void softmax_mask(Kctx *k, Acc *s, const Reg *room);
/* New maxima, S <- exp2(S*scale_log2 - m*scale_log2) in place, O and l rescaled. */
void softmax_update(Kctx *k, Acc *s, RowStats *rs, Acc *o, Reg scale_log2);
/* O /= rowsum (0 where no key was valid); lse (natural log, +inf where no key
 * was valid) per (m tile, half) into lse[]. */
void softmax_finish(Kctx *k, RowStats *rs, Acc *o, Reg scale_log2, Reg *lse);
#endif
