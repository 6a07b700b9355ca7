/* Element types shared by every layer: generators pick one, the runner and
 * the sim round host data to it with the same rounding cvt.rn uses. */
#ifndef PTXGEN_DTYPE_H
#define PTXGEN_DTYPE_H
#include <stdint.h>

typedef enum { DT_BF16 = 0, DT_FP16 = 1 } DType;

const char *dtype_name(DType t);     /* "bf16" / "fp16" */

uint32_t f32_bits(float x);          /* the IEEE bits of x, and back */
float    bits_f32(uint32_t u);
uint16_t f32_to_bf16(float x);       /* round to nearest even, NaN kept a NaN */
float    bf16_to_f32(uint16_t h);
uint16_t f32_to_fp16(float x);       /* IEEE binary16, RNE, overflow -> inf, subnormals kept */
float    fp16_to_f32(uint16_t h);
/* fp8: E4M3 (bias 7, no infinities, NaN 0x7f/0xff, largest 448) or E5M2 (bias 15, IEEE-like, largest 57344).
 * f32 -> fp8 is cvt.rn.satfinite's: nearest even, beyond the largest finite (infinities too) the largest finite,
 * NaN 0x7f; fp8 -> f32 is exact. */
uint8_t  f32_to_fp8(float x, int e5m2);
float    fp8_to_f32(uint8_t v, int e5m2);
uint16_t f32_to_dt(DType t, float x);
float    dt_to_f32(DType t, uint16_t h);
#endif
