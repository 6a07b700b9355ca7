/* Element types: names and the host's rounding to them (round to nearest
 * even, NaN kept), the same rounding cvt.rn performs on the device. */
#include "dtype.h"

#include <math.h>
#include <string.h>

const char *dtype_name(DType t) { return t == DT_FP16 ? "fp16" : "bf16"; }

uint32_t f32_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

float bits_f32(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* ---- bf16 ---- */

uint16_t f32_to_bf16(float x)
{
    uint32_t u = f32_bits(x);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
        /* Truncating a NaN whose payload sits only in the low half would give
         * inf; forcing the quiet bit keeps it a NaN. */
        return (uint16_t)((u >> 16) | 0x0040u);
    }
    /* Adding 0x7FFF plus the kept LSB rounds half to even; a carry out of the
     * mantissa bumps the exponent, which also turns overflow into inf. */
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float bf16_to_f32(uint16_t h)
{
    return bits_f32((uint32_t)h << 16);
}

/* ---- IEEE binary16 ---- */

/* Round q (with the bits shifted out in rem, halfway at half) to nearest even. */
static uint32_t round_rne(uint32_t q, uint32_t rem, uint32_t half)
{
    if (rem > half || (rem == half && (q & 1u)))
        q++;
    return q;
}

static uint16_t fp16_nonfinite(uint32_t sign, uint32_t mag)
{
    if (mag == 0x7F800000u)
        return (uint16_t)(sign | 0x7C00u);
    return (uint16_t)(sign | 0x7E00u | ((mag >> 13) & 0x3FFu));
}

/* |x| below the smallest normal half: the result is a multiple of 2^-24. */
static uint16_t fp16_subnormal(uint32_t sign, uint32_t mag, int e)
{
    /* Value in units of 2^-24 is m * 2^(e+1); shifts past 24 leave < 1/2 unit. */
    int shift = -e - 1;
    if (shift > 24)
        return (uint16_t)sign;
    uint32_t m = (mag & 0x7FFFFFu) | 0x800000u;
    uint32_t q = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    /* A round-up to 0x400 is exactly the smallest normal's encoding. */
    return (uint16_t)(sign | round_rne(q, rem, 1u << (shift - 1)));
}

uint16_t f32_to_fp16(float x)
{
    uint32_t u = f32_bits(x);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t mag = u & 0x7FFFFFFFu;
    if (mag >= 0x7F800000u)
        return fp16_nonfinite(sign, mag);
    int e = (int)(mag >> 23) - 127;
    if (e > 15)
        return (uint16_t)(sign | 0x7C00u);
    if (e < -14)
        return fp16_subnormal(sign, mag, e);
    uint32_t q = ((uint32_t)(e + 15) << 10) | ((mag >> 13) & 0x3FFu);
    /* Carry out of the mantissa moves to the next binade, and from the top
     * binade lands exactly on 0x7C00 (inf). */
    q = round_rne(q, mag & 0x1FFFu, 0x1000u);
    return (uint16_t)(sign | q);
}

float fp16_to_f32(uint16_t h)
{
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1Fu;
    uint32_t m = h & 0x3FFu;
    if (e == 0) {
        /* m * 2^-24 is exact in float, including zero. */
        float v = ldexpf((float)m, -24);
        return sign ? -v : v;
    }
    if (e == 31)
        return bits_f32(sign | 0x7F800000u | (m << 13) | (m ? 0x400000u : 0u));
    return bits_f32(sign | ((e + 112u) << 23) | (m << 13));
}

uint16_t f32_to_dt(DType t, float x)
{
    return t == DT_FP16 ? f32_to_fp16(x) : f32_to_bf16(x);
}

float dt_to_f32(DType t, uint16_t h)
{
    return t == DT_FP16 ? fp16_to_f32(h) : bf16_to_f32(h);
}

uint8_t f32_to_fp8(float x, int e5m2)
{
    int mb = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7;
    double top = e5m2 ? 57344.0 : 448.0, a = fabs((double)x);
    uint8_t s = signbit(x) ? 0x80 : 0;
    if (isnan(x)) return 0x7f;
    int e;
    frexp(a, &e);   /* a = f 2^e, f in [0.5, 1): its binade's exponent is e - 1, the subnormals' 1 - bias */
    e = e - 1 < 1 - bias ? 1 - bias : e - 1;
    /* q: the spacing there; below the largest finite value nothing rounds past it */
    double q = ldexp(1.0, e - mb), r = a >= top ? top : nearbyint(a / q) * q;
    if (r == 0) return s;
    frexp(r, &e);
    e -= 1;
    if (e < 1 - bias) return (uint8_t)(s | (int)ldexp(r, bias - 1 + mb));   /* subnormal: m 2^(1 - bias - mb) */
    return (uint8_t)(s | (e + bias) << mb | ((int)ldexp(r, mb - e) - (1 << mb)));
}

float fp8_to_f32(uint8_t v, int e5m2)
{
    int mb = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7, ex = v >> mb & (e5m2 ? 31 : 15), m = v & ((1 << mb) - 1);
    double r;
    if (e5m2 && ex == 31) r = m ? NAN : INFINITY;
    else if (!e5m2 && ex == 15 && m == 7) r = NAN;
    else if (!ex) r = ldexp(m, 1 - bias - mb);
    else r = ldexp((1 << mb) + m, ex - bias - mb);
    return (float)(v & 0x80 ? -r : r);
}
