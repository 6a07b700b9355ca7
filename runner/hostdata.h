/* Host-side element types and random data for checks: bf16/fp16 conversion
 * (round to nearest even, NaN kept), a seeded normal generator. */
#ifndef PTXGEN_HOSTDATA_H
#define PTXGEN_HOSTDATA_H
#include <stddef.h>
#include <stdint.h>
#include "ptxgen_dtype.h"

uint32_t f32_bits(float x);          /* the IEEE bits of x, and back */
float    bits_f32(uint32_t u);
uint16_t f32_to_bf16(float x);
float    bf16_to_f32(uint16_t h);
uint16_t f32_to_fp16(float x);      /* IEEE binary16, RNE, overflow -> inf, subnormals kept */
float    fp16_to_f32(uint16_t h);
uint16_t f32_to_dt(DType t, float x);
float    dt_to_f32(DType t, uint16_t h);

/* splitmix64-seeded xoshiro256** with Box-Muller normals. */
typedef struct { uint64_t s[4]; int has_spare; double spare; } Rng;
void   rng_seed(Rng *r, uint64_t seed);
uint64_t rng_u64(Rng *r);
double rng_uniform(Rng *r);          /* [0,1) */
double rng_normal(Rng *r);           /* N(0,1) */
#endif
