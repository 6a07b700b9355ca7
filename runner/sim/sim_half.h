/* The 16-bit float types (f16 and bf16) as the sim's ALU reads and rounds them. */
#ifndef SIM_HALF_H
#define SIM_HALF_H
#include <stdint.h>

double half_value(int t, uint64_t h);   /* the low 16 bits of h as type t (T_F16 or T_BF16) */
/* hi + lo (exact, |lo| at most half an ulp of hi: a sum from two_sum, or lo 0) rounded once to type t in mode
 * rnd (RND_NONE as RND_RN): the 16-bit result; any NaN is the canonical 0x7FFF */
int half_round(int t, double hi, double lo, int rnd);
int half_is_subnormal(int t, uint64_t h);
/* whether hi + lo (as half_round takes it) is nonzero and below type t's smallest normal in magnitude */
int half_below_normal(int t, double hi, double lo);
/* whether hi + lo rounded to type t's bits in mode rnd as if the exponent had no floor stays below its smallest
 * normal (an fma's .ftz: sim_alu.c) */
int half_rounds_below_normal(int t, double hi, double lo, int rnd);
int half_canon_nan(int t, uint64_t h);   /* the low 16 bits of h, any NaN the canonical 0x7FFF */
int half_satfinite(int t, int h);        /* an infinity as the largest finite value of its sign (.satfinite) */

#endif
