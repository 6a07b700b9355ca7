/* f16 and bf16 values and their rounding, straight from an exact value. Going through f32 on the way rounds
 * twice: 1 + 2^-11 + 2^-30 (an f16 fma can make it) is the tie 1 + 2^-11 in f32, which goes to 1 in f16,
 * where the value itself rounds to 1 + 2^-10. */
#include <math.h>
#include "dtype.h"
#include "isa.h"
#include "sim_half.h"

/* a format's mantissa bits, exponent bias, largest finite value, and its exponent field, mantissa field and largest
 * finite value as bits */
typedef struct { int mant, bias; double max; uint32_t exp, man, max_bits; } HalfFmt;

static HalfFmt half_fmt(int t)
{
    return t == T_F16 ? (HalfFmt){10, 15, ldexp(2047, 5), 0x7C00, 0x03FF, 0x7BFF}
                      : (HalfFmt){7, 127, ldexp(255, 120), 0x7F80, 0x007F, 0x7F7F};
}

double half_value(int t, uint64_t h)
{
    return t == T_F16 ? fp16_to_f32((uint16_t)h) : bf16_to_f32((uint16_t)h);
}

int half_is_subnormal(int t, uint64_t h)
{
    HalfFmt f = half_fmt(t);
    return (h & f.exp) == 0 && (h & f.man) != 0;
}

int half_below_normal(int t, double hi, double lo)
{
    double m = ldexp(1, 1 - half_fmt(t).bias), a = fabs(hi);
    if (hi == 0 || isnan(hi)) return 0;
    return a < m || (a == m && lo != 0 && (lo < 0) != (hi < 0));
}

int half_rounds_below_normal(int t, double hi, double lo, int rnd)
{
    if (hi == 0 || isnan(hi) || isinf(hi)) return 0;
    /* scaled by 2^24 the value rounds in the normal range (a tiny one to a subnormal or 0, still below the bound) */
    int s = half_round(t, ldexp(hi, 24), ldexp(lo, 24), rnd) & 0x7FFF;
    return half_value(t, (uint64_t)s) < ldexp(1, 24 + 1 - half_fmt(t).bias);
}

int half_canon_nan(int t, uint64_t h)
{
    HalfFmt f = half_fmt(t);
    return (h & f.exp) == f.exp && (h & f.man) ? 0x7FFF : (int)(h & 0xFFFF);
}

int half_satfinite(int t, int h)
{
    HalfFmt f = half_fmt(t);
    return (h & 0x7FFF) == (int)f.exp ? (h & 0x8000) | (int)f.max_bits : h;
}

int half_round(int t, double hi, double lo, int rnd)
{
    if (isnan(hi)) return 0x7FFF;
    int neg = signbit(hi) != 0;
    HalfFmt f = half_fmt(t);
    if (isinf(hi)) return (neg ? 0x8000 : 0) | (int)f.exp;
    if (hi == 0) return neg ? 0x8000 : 0;   /* lo is 0 too */
    /* the grid of the exact value's binade (the subnormals' below the smallest normal): where hi is a power of two
     * and lo takes the value toward zero, the value lies in the finer binade below */
    int e;
    double m = frexp(hi, &e);
    e -= 1 + (fabs(m) == 0.5 && lo != 0 && (lo < 0) != neg);
    e = e < 1 - f.bias ? 1 - f.bias : e;
    double q = ldexp(1, e - f.mant), x = hi / q, fl = floor(x), frac = x - fl;
    if (frac == 0 && lo < 0) fl -= 1, frac = 1;   /* just under the grid point x: fl < value < fl + 1 */
    double r = fl;
    if (frac != 0 || lo != 0) {   /* strictly between fl and fl + 1 */
        int side = frac == 0.5 ? (lo > 0) - (lo < 0) : frac > 0.5 ? 1 : -1;   /* against the half-way point */
        int up = rnd == RND_RZ ? neg : rnd == RND_RM ? 0 : rnd == RND_RP ? 1 : side > 0 || (side == 0 && fmod(fl, 2) != 0);
        r = up ? fl + 1 : fl;
    }
    double v = r * q;
    if (fabs(v) > f.max) {   /* past the largest finite value: infinity, or that value where the mode rounds toward it */
        int inf = rnd == RND_RZ ? 0 : rnd == RND_RM ? neg : rnd == RND_RP ? !neg : 1;
        v = copysign(inf ? INFINITY : f.max, hi);
    }
    if (v == 0) v = copysign(0, hi);
    return t == T_F16 ? f32_to_fp16((float)v) : f32_to_bf16((float)v);   /* exact: v is a value of the type */
}
