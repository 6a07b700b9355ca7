/* Host-side random data for checks: a seeded normal generator and the sparse
 * MLA selections. The element conversions live in core/dtype.h (included here
 * for the callers that round their draws). */
#ifndef PTXGEN_HOSTDATA_H
#define PTXGEN_HOSTDATA_H
#include <stddef.h>
#include <stdint.h>
#include "dtype.h"

/* splitmix64-seeded xoshiro256** with Box-Muller normals. */
typedef struct { uint64_t s[4]; int has_spare; double spare; } Rng;
void   rng_seed(Rng *r, uint64_t seed);
uint64_t rng_u64(Rng *r);
double rng_uniform(Rng *r);          /* [0,1) */
double rng_normal(Rng *r);           /* N(0,1) */
uint32_t rng_below(Rng *r, uint32_t n);   /* [0, n), n >= 1 */

/* Sparse MLA inputs (mla_data.c), fresh per generator state. */
/* indices [s_q, topk]: mostly uniform rows of [0, s_kv); about 1 slot in 8
 * one of the invalid values (-1, INT32_MIN, s_kv, s_kv + 7, INT32_MAX) and 1
 * in 8 a repeat of an earlier slot of the token. From a random token on, the
 * first min(3, s_q - 1) tokens are special: one with every slot invalid, one
 * whose first half is invalid (whole steps before any valid slot), one whose
 * only valid slot is the last. In the ordinary tokens, each invalid value and
 * a repeated valid row are planted at a random place (where slots suffice). */
void mla_draw_indices(Rng *r, int s_q, int s_kv, int topk, int32_t *idx);
/* topk_length [s_q]: per token a value in [1, topk) (every other token), topk,
 * 0, one above topk (up to INT32_MAX) or a negative one (-1 or INT32_MIN), in
 * a fixed cycle from a random start: any 8 consecutive tokens have each.
 * Where the lengths would leave no token two different valid rows of idx
 * (so dq = 0), the first token whose full row has two keeps every slot. */
void mla_draw_topk_length(Rng *r, const int32_t *idx, int s_q, int s_kv, int topk, int32_t *len);
#endif
