/* Per-lane arithmetic, logic, comparisons, selects, moves and conversions for
 * every type the decoder names, with the PTX ISA's semantics: integer ops
 * wrap at the type's width, shifts clamp, .lo/.hi/.wide pick halves; floating
 * ops round once from the exact result as the instruction says (.rn by
 * default; f16 and bf16 in sim_half.c), .ftz flushes subnormals, .sat clamps
 * to [0, 1], .relu to [0, inf); min/max return the non-NaN operand (.NaN: the
 * NaN); float-to-integer conversions saturate. tests/test_fuzz_alu.c holds
 * all this against a GPU. A combination the sim does not model is refused
 * naming the instruction. */
#include <fenv.h>
#include <float.h>
#include <math.h>
#include <string.h>
#include "hostdata.h"
#include "sim.h"
#include "sim_half.h"

static float F(uint64_t u) { return bits_f32((uint32_t)u); }
static uint64_t U(float x) { return f32_bits(x); }
static double D(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }
static uint64_t UD(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }

static uint64_t mask_bits(int bits, uint64_t v) { return bits >= 64 ? v : bits <= 0 ? 0 : v & ((1ull << bits) - 1); }
static int64_t sext(int bits, uint64_t v)
{
    if (bits >= 64) return (int64_t)v;
    uint64_t m = 1ull << (bits - 1);
    v = mask_bits(bits, v);
    return (int64_t)((v ^ m) - m);
}

static float ftz(float x) { return fpclassify(x) == FP_SUBNORMAL ? copysignf(0.0f, x) : x; }
static float ftz_if(const IsaInsn *d, float x) { return d->flags & F_FTZ ? ftz(x) : x; }
static double ftz64(double x) { return fpclassify(x) == FP_SUBNORMAL ? copysign(0.0, x) : x; }
/* .sat: clamped to [0, 1], a NaN and -0 to +0 (measured: tests/test_fuzz_alu.c) */
static double sat01(double v) { return isnan(v) || v <= 0 ? 0 : v > 1 ? 1 : v; }

#define F64_QUIET 0x0008000000000000ull   /* an f64 NaN's quiet bit */

/* NaN results as a GPU gives them (an H100, tests/test_fuzz_alu.c): every f32 result that is a NaN is 0x7FFFFFFF,
 * every f16 or bf16 one 0x7FFF (half_canon_nan), whatever the operands' payloads; f64 arithmetic passes a NaN
 * operand on. */
static uint64_t nan32(uint64_t u) { return isnan(F(u)) ? 0x7FFFFFFFu : u; }
/* an f64 result: the first NaN operand of a, b, c (quieted; with several, the GPU's pick depends on how ptxas
 * orders the operands), else a NaN the operation made, 0xFFF8000000000000 as a GPU makes it */
static uint64_t nan64(uint64_t r, int n, uint64_t a, uint64_t b, uint64_t c)
{
    const uint64_t ops[3] = {a, b, c};
    for (int i = 0; i < n; i++)
        if (isnan(D(ops[i]))) return ops[i] | F64_QUIET;
    return isnan(D(r)) ? 0xFFF8000000000000ull : r;
}
/* min/max as the GPU: a NaN operand is missing (both: the f32 NaN), and -0 is below +0 */
static double minmax(int max, double a, double b)
{
    if (isnan(a)) return b;
    if (isnan(b)) return a;
    if (a == 0 && b == 0) return max ? (signbit(a) ? b : a) : (signbit(a) ? a : b);
    return max ? (a > b ? a : b) : (a < b ? a : b);
}

static int fe_mode(int rnd)
{
    switch (rnd) {
    case RND_RZ: case RND_RZI: return FE_TOWARDZERO;
    case RND_RM: case RND_RMI: return FE_DOWNWARD;
    case RND_RP: case RND_RPI: return FE_UPWARD;
    default: return FE_TONEAREST;
    }
}

typedef struct { SimCta *c; SimWarp *w; const SimInsn *in; int lane; } Ctx;

static int refuse(const Ctx *x, const char *why)
{
    sim_fail(x->c, sim_warp_id(x->c, x->w), x->lane, x->in, "%s: %s is not modelled by the sim", why,
             isa_base_text(x->in->d.op));
    return -1;
}

static uint64_t src(const Ctx *x, int k) { return x->in->nops > k ? sim_read(x->c, x->w, &x->in->o[k], x->lane) : 0; }

static float round_f32(double v, int rnd);
static float ftz_round_f32(double v, int rnd);
/* s, an f32 result computed from operands scaled by 2^64 (so rounded to 24 bits as if the exponent had no floor),
 * brought back under .ftz: a zero of its sign where it stays below 2^-126 */
static float ftz_unscale(float s) { return fabsf(s) < ldexpf(1.0f, -62) ? copysignf(0.0f, s) : ldexpf(s, -64); }

/* sqrt of a under rounding mode rnd (the default: nearest), as IEEE 754 gives it. An f32 sqrt is this one's
 * result rounded again the same way: with 53 bits against 24, the second rounding changes nothing. */
static double sqrt_f64(double a, int rnd)
{
    int saved = fegetround();
    fesetround(fe_mode(rnd));
    volatile double r = sqrt(a);
    fesetround(saved);
    return r;
}

/* f32 arithmetic under the instruction's rounding, .ftz and .sat. */
static uint64_t f32_op(const IsaInsn *d, int op, float a, float b, float c)
{
    int ftzm = (d->flags & F_FTZ) != 0;
    if (ftzm) a = ftz(a), b = ftz(b), c = ftz(c);
    int saved = fegetround();
    fesetround(fe_mode(d->rnd));
    volatile float r;
    switch (op) {
    case I_ADD: r = a + b; break;
    case I_SUB: r = a - b; break;
    case I_MUL: r = a * b; break;
    case I_DIV: r = a / b; break;
    default: r = fmaf(a, b, c); break;   /* mad.f32 / fma */
    }
    float v = r;
    /* .ftz: the result rounded to 24 bits as if the exponent had no floor, and flushed if that stays below 2^-126
     * (an H100 and an H200, tests/test_fuzz_alu.c: mul.rn.ftz of 1 - 2^-24 and 2^-126 gives 0, div.rp.ftz likewise;
     * fma.rp.ftz just under 2^-126 gives 2^-126 where the unbounded rounding reaches it, and 0 for 2^-126 - 2^-150,
     * which 24 bits hold, seed 10221, where the subnormals' grid rounds up to 2^-126). Scaled by 2^64 the operation
     * is that rounding: a nonzero result this small has operands that do not overflow so (a product's factors under
     * 2^48, a quotient's dividend under 2^4, a sum's terms under 2^-78). A sum of f32 values is a multiple of the
     * smallest subnormal, so any rule; a zero result is exact or flushed anyway, and a zero product leaves fma c. */
    if (ftzm && op != I_ADD && op != I_SUB && v != 0 && fabsf(v) <= FLT_MIN && (op == I_DIV || (double)a * b != 0)) {
        volatile float s = op == I_MUL ? ldexpf(a, 32) * ldexpf(b, 32) : op == I_DIV ? ldexpf(a, 64) / b
                         : fmaf(ldexpf(a, 32), ldexpf(b, 32), ldexpf(c, 64));
        v = ftz_unscale(s);
    }
    fesetround(saved);
    if (ftzm) v = ftz(v);
    if (d->flags & F_SAT) v = (float)sat01(v);
    return U(v);
}

static uint64_t f64_op(const IsaInsn *d, int op, double a, double b, double c)
{
    int saved = fegetround();
    fesetround(fe_mode(d->rnd));
    volatile double r;
    switch (op) {
    case I_ADD: r = a + b; break;
    case I_SUB: r = a - b; break;
    case I_MUL: r = a * b; break;
    case I_DIV: r = a / b; break;
    default: r = fma(a, b, c); break;
    }
    fesetround(saved);
    return UD(r);
}

/* a + b as the double nearest it (hi) and the rest (lo), exactly: Knuth's two-sum */
static void two_sum(double a, double b, double *hi, double *lo)
{
    volatile double s = a + b, bb = s - a;
    *hi = s;
    *lo = (a - (s - bb)) + (b - bb);
    if (!isfinite(s)) *lo = 0;
}

/* an f16 or bf16 operand as a double, a subnormal flushed to a zero of its sign under .ftz */
static double half_operand(int t, uint64_t h, int ftzm)
{
    double v = half_value(t, h);
    return ftzm && half_is_subnormal(t, h) ? copysign(0, v) : v;
}

/* .relu (fma, cvt): a negative result, -0 too, becomes +0; a NaN the canonical one */
static int relu16(int t, int h)
{
    h = half_canon_nan(t, (uint64_t)h);
    return h == 0x7FFF ? h : (h & 0x8000) ? 0 : h;
}

/* One f16 or bf16 operation (CUTLASS epilogues: mul.f16, add.f16, fma.rn.f16; nvcc's __hadd2 per half): the exact
 * result (a product of halves is exact in double, a sum two doubles; ex2 and tanh to double's precision) rounded
 * once to nearest. .ftz (f16 only)
 * flushes subnormal operands and results to zero, .sat clamps to [0, 1], .relu to [0, inf), min/max.NaN give the
 * canonical NaN for a NaN operand. The 16-bit result, or -1. */
static int half_arith(const Ctx *x, int t, uint64_t a, uint64_t b, uint64_t c)
{
    const IsaInsn *d = &x->in->d;
    int ftzm = (d->flags & F_FTZ) != 0;
    double ha = half_operand(t, a, ftzm), hb = half_operand(t, b, ftzm), hc = half_operand(t, c, ftzm), hi, lo = 0;
    int rnd = RND_RN;
    switch (d->op) {
    case I_ADD: two_sum(ha, hb, &hi, &lo); break;
    case I_SUB: two_sum(ha, -hb, &hi, &lo); break;
    case I_MUL: hi = ha * hb; break;
    case I_MAD: case I_FMA: two_sum(ha * hb, hc, &hi, &lo); break;
    case I_MIN: case I_MAX:
        if ((d->flags & F_NAN) && (isnan(ha) || isnan(hb))) return 0x7FFF;
        hi = minmax(d->op == I_MAX, ha, hb);
        break;
    case I_NEG: hi = -ha; break;
    case I_ABS: hi = fabs(ha); break;
    /* ex2.approx and tanh.approx (f16, bf16 and their pairs) within their bounds (tests/test_approx.c). An H200
     * truncates ex2's result (2^-24.5 is 0, not 2^-24; 2^16 still +inf): rounded toward zero here, but past the
     * largest finite value; tanh's nearest (tanh(10) is 1). The PTX forms: ex2.approx.f16, ex2.approx.ftz.bf16,
     * tanh.approx (no .ftz), each also x2 */
    case I_EX2:
        if (ftzm != (t == T_BF16)) return -1;
        hi = exp2(ha), rnd = RND_RZ;
        break;
    case I_TANH:
        if (ftzm) return -1;
        hi = tanh(ha);
        break;
    default: return -1;
    }
    if (d->flags & F_SAT) lo = hi <= 0 || hi >= 1 ? 0 : lo, hi = sat01(hi);
    int h = half_round(t, hi, lo, rnd);
    if (rnd == RND_RZ) {   /* toward zero, but for an overflow (ex2's only) */
        int nearest = half_round(t, hi, lo, RND_RN);
        if (half_satfinite(t, nearest) != nearest) h = nearest;
    }
    /* .ftz: fma rounds to the type's bits as if the exponent had no floor and flushes what that leaves below the
     * smallest normal, as f32 arithmetic does (an H200: fma.rn.ftz.f16 of 1 - 2^-11, 2^-14 and 0 gives 0, seeds 165
     * and 1154 of tests/fuzz_alu.golden, 2^-14 - 2^-25 being held by 11 bits; fma.rn.ftz.relu.f16x2 of 2^-14,
     * -1.61 x 2^-14 and 2^-14, 6e-9 under 2^-14, gives 2^-14, seed 6670: half_rounds_below_normal). Other
     * operations flush a result whose exact value is subnormal, one that rounds up to the smallest normal too (mul by
     * that rule, where no seed tells the two apart; a sum of halves is a multiple of the smallest subnormal, so either
     * rule for add and sub). */
    int fused = d->op == I_FMA || d->op == I_MAD;
    if (ftzm && (fused ? half_rounds_below_normal(t, hi, lo, rnd) : half_below_normal(t, hi, lo))) h &= 0x8000;
    return d->flags & F_RELU ? relu16(t, h) : h;
}

/* rcp.approx.ftz.f64 and rsqrt.approx.ftz.f64 as a GPU computes them (an H100, tests/test_approx.c): from the upper
 * 32 bits of the operand alone (a NaN whose payload lies in the lower ones is an infinity), subnormals flushed, the
 * result with its lower 32 bits zero (here the nearest such value, within 2^-21; the GPU's within 2^-20.3) */
static uint64_t f64_upper_approx(int rsqrt, uint64_t a)
{
    double v = ftz64(D(a & 0xFFFFFFFF00000000ull)), r = ftz64(rsqrt ? 1.0 / sqrt(v) : 1.0 / v);
    if (isnan(r)) return 0x7FFFFFFF00000000ull;
    if (isinf(r) || r == 0) return UD(r);
    return (UD(r) + 0x80000000ull) & 0xFFFFFFFF00000000ull;   /* a carry moves to the exponent, as it should */
}

static int float_arith(const Ctx *x, int t, uint64_t *out)
{
    const IsaInsn *d = &x->in->d;
    uint64_t a = src(x, 1), b = src(x, 2), c = src(x, 3);
    int op = d->op;
    if (t == T_F32) {
        float fa = F(a), fb = F(b);
        if (d->flags & F_FTZ) fa = ftz(fa), fb = ftz(fb);
        switch (op) {
        case I_ADD: case I_SUB: case I_MUL: case I_MAD: case I_FMA: *out = nan32(f32_op(d, op, fa, fb, F(c))); return 1;
        case I_DIV:
            if (d->flags & (F_APPROX | F_FULL)) { *out = nan32(U(fa * (1.0f / fb))); return 1; }
            *out = nan32(f32_op(d, op, fa, fb, 0));
            return 1;
        case I_MIN: case I_MAX:   /* .NaN: a NaN operand gives the canonical NaN */
            if ((d->flags & F_NAN) && (isnan(fa) || isnan(fb))) { *out = 0x7FFFFFFFu; return 1; }
            *out = nan32(U((float)minmax(op == I_MAX, fa, fb)));
            return 1;
        case I_NEG: *out = nan32(U(-fa)); return 1;
        case I_ABS: *out = nan32(U(fabsf(fa))); return 1;
        case I_EX2: *out = U(ftz_if(d, (float)exp2((double)fa))); return 1;   /* subnormal results kept without .ftz */
        case I_LG2: *out = U(ftz((float)log2((double)fa))); return 1;
        case I_RCP:
            if (d->flags & F_APPROX) *out = nan32(U(d->flags & F_FTZ ? ftz(1.0f / fa) : 1.0f / fa));
            else *out = nan32(f32_op(d, I_DIV, 1.0f, fa, 0));   /* rcp.rn/rz/rm/rp: 1 / a in that mode */
            return 1;
        /* the .approx forms within their error bounds: the correctly rounded value is one of those */
        case I_SQRT: *out = nan32(U((d->flags & F_APPROX) ? sqrtf(fa) : round_f32(sqrt_f64((double)fa, d->rnd), d->rnd))); return 1;
        case I_RSQRT: *out = U((float)(1.0 / sqrt((double)fa))); return 1;
        case I_SIN: *out = U(ftz_if(d, (float)sin((double)fa))); return 1;
        case I_COS: *out = U((float)cos((double)fa)); return 1;
        case I_TANH: *out = U(ftz_if(d, (float)tanh((double)fa))); return 1;
        case I_COPYSIGN: *out = U(copysignf(F(b), F(a))); return 1;   /* copysign d, a, b: b with a's sign */
        }
    } else if (t == T_F64) {
        double da = D(a), db = D(b);
        switch (op) {
        case I_ADD: case I_SUB: case I_MUL: case I_DIV: *out = nan64(f64_op(d, op, da, db, 0), 2, a, b, 0); return 1;
        case I_MAD: case I_FMA: *out = nan64(f64_op(d, op, da, db, D(c)), 3, a, b, c); return 1;
        case I_MIN: case I_MAX:   /* both NaN: the first, unchanged */
            *out = isnan(da) && isnan(db) ? a : UD(minmax(op == I_MAX, da, db));
            return 1;
        case I_NEG: *out = isnan(da) ? a | F64_QUIET : UD(-da); return 1;   /* a NaN quieted, its sign kept */
        case I_ABS: *out = isnan(da) ? a | F64_QUIET : UD(fabs(da)); return 1;
        case I_RCP:
            if (d->flags & F_APPROX) *out = f64_upper_approx(0, a);   /* rcp.approx.ftz.f64: the only .approx form */
            else *out = nan64(f64_op(d, I_DIV, 1.0, da, 0), 1, a, 0, 0);   /* rcp.rn/rz/rm/rp.f64 in that mode */
            return 1;
        case I_SQRT: *out = nan64(UD(sqrt_f64(d->flags & F_FTZ ? ftz64(da) : da, d->rnd)), 1, a, 0, 0); return 1;
        case I_RSQRT: *out = d->flags & F_FTZ ? f64_upper_approx(1, a) : UD(1.0 / sqrt(da)); return 1;   /* .approx only */
        case I_COPYSIGN: *out = UD(copysign(db, da)); return 1;
        }
    } else if ((t == T_F16 || t == T_BF16) && (d->rnd == RND_NONE || d->rnd == RND_RN)) {
        int r = half_arith(x, t, a, b, c);
        if (r < 0) return refuse(x, "this half-precision operation");
        *out = (uint64_t)r;
        return 1;
    } else if ((t == T_F16X2 || t == T_BF16X2) && (d->rnd == RND_NONE || d->rnd == RND_RN)) {
        /* packed pairs (nvcc's __hadd2, __hfma2): each 16-bit half on its own */
        int e = t == T_F16X2 ? T_F16 : T_BF16, lo = half_arith(x, e, a, b, c), hi = half_arith(x, e, a >> 16, b >> 16, c >> 16);
        if (lo < 0 || hi < 0) return refuse(x, "this packed half-precision operation");
        *out = (uint64_t)lo | (uint64_t)hi << 16;
        return 1;
    }
    return refuse(x, "this floating-point type");
}

static uint64_t mul_hi(int bits, int sgn, uint64_t a, uint64_t b)
{
    if (bits == 64) {
        if (sgn) return (uint64_t)(((__int128)(int64_t)a * (__int128)(int64_t)b) >> 64);
        return (uint64_t)(((unsigned __int128)a * b) >> 64);
    }
    if (sgn) return (uint64_t)((sext(bits, a) * sext(bits, b)) >> bits);
    return (mask_bits(bits, a) * mask_bits(bits, b)) >> bits;
}

/* mul/mad: .lo (the default for integers), .hi, .wide (twice the width). */
static uint64_t mul_int(const IsaInsn *d, int bits, int sgn, uint64_t a, uint64_t b)
{
    if (d->flags & F_WIDE) return sgn ? (uint64_t)(sext(bits, a) * sext(bits, b)) : mask_bits(bits, a) * mask_bits(bits, b);
    if (d->flags & F_HI) return mul_hi(bits, sgn, a, b);
    return a * b;
}

/* The carry arithmetic: add, sub, mad with .cc, and addc, subc, madc: the operands masked to the type's bits, the c
 * forms adding the lane's CC.CF, and .cc writing the carry out of the top bit back to CC.CF. A subtraction is the
 * hardware's a + ~b + 1 (subc: + CC.CF), and CC.CF its carry: 1 where nothing was borrowed. The PTX ISA's text calls
 * CC.CF a borrow for sub (subc: a - (b + CC.CF)); the two read alike along a chain of subtractions, but nvcc's own
 * 128-bit division reads sub.cc's flag back by addc and takes 1 as "no borrow" (it adds the divisor back where it
 * reads 0), and the H200 agrees (tests/sim_cuda/int128_math.cu). Signed types give the same bits. A c form in a
 * lane that no .cc instruction set reads an undefined flag: refused. */
static int carry_arith(const Ctx *x, int bits, int sgn, uint64_t a, uint64_t b, uint64_t c, uint64_t *out)
{
    const IsaInsn *d = &x->in->d;
    uint32_t lane = 1u << x->lane;
    int op = d->op, with_in = op == I_ADDC || op == I_SUBC || op == I_MADC;
    unsigned __int128 m = bits == 64 ? ~0ull : (1ull << bits) - 1, cin = 0, r;
    if (with_in) {
        if (!(x->w->carry_set & lane)) {
            sim_fail(x->c, sim_warp_id(x->c, x->w), x->lane, x->in,
                     "reads the carry flag CC.CF before any .cc instruction set it");
            return -1;
        }
        cin = (x->w->carry & lane) != 0;
    }
    unsigned __int128 am = a & m, bm = b & m;
    if (op == I_SUB || op == I_SUBC) r = am + (~bm & m) + (with_in ? cin : 1);
    else {
        if (op == I_MAD || op == I_MADC) am = mul_int(d, bits, sgn, a, b) & m, bm = c & m;
        r = am + bm + cin;
    }
    int out_bit = (int)(r >> bits & 1);
    *out = (uint64_t)(r & m);
    if (d->cc) {
        x->w->carry = out_bit ? x->w->carry | lane : x->w->carry & ~lane;
        x->w->carry_set |= lane;
    }
    return 1;
}

/* min or max of a and b as integers of bits bits, signed or not; .relu (signed): a negative result becomes 0 */
static uint64_t int_minmax(const IsaInsn *d, int bits, int sgn, uint64_t a, uint64_t b)
{
    int max = d->op == I_MAX;
    int64_t as = sext(bits, a), bs = sext(bits, b), r = max ? (as > bs ? as : bs) : (as < bs ? as : bs);
    uint64_t au = mask_bits(bits, a), bu = mask_bits(bits, b);
    if ((d->flags & F_RELU) && r < 0) r = 0;
    return sgn ? (uint64_t)r : max ? (au > bu ? au : bu) : (au < bu ? au : bu);
}

/* add, min, max of .u16x2/.s16x2: each 16-bit half on its own, wrapping (add) or compared as its type (min, max) */
static int pair16_arith(const Ctx *x, int t, uint64_t a, uint64_t b, uint64_t *out)
{
    const IsaInsn *d = &x->in->d;
    uint64_t r = 0;
    for (int h = 0; h < 2; h++) {
        uint64_t ah = a >> (16 * h) & 0xFFFF, bh = b >> (16 * h) & 0xFFFF, v;
        switch (d->op) {
        case I_ADD: v = ah + bh; break;
        case I_MIN: case I_MAX: v = int_minmax(d, 16, t == T_S16X2, ah, bh); break;
        default: return 0;
        }
        r |= (v & 0xFFFF) << (16 * h);
    }
    *out = r;
    return 1;
}

static int int_arith(const Ctx *x, int t, uint64_t *out)
{
    const IsaInsn *d = &x->in->d;
    int bits = isa_type_bits(t), sgn = isa_type_is_signed(t);
    uint64_t a = src(x, 1), b = src(x, 2), c = src(x, 3);
    if (t == T_U16X2 || t == T_S16X2) return pair16_arith(x, t, a, b, out);
    if (isa_carry(d)) return carry_arith(x, bits, sgn, a, b, c, out);
    int64_t as = sext(bits, a), bs = sext(bits, b);
    uint64_t au = mask_bits(bits, a), bu = mask_bits(bits, b);
    switch (d->op) {
    case I_ADD: *out = a + b; break;
    case I_SUB: *out = a - b; break;
    case I_MUL: *out = mul_int(d, bits, sgn, a, b); break;
    case I_MAD: *out = mul_int(d, bits, sgn, a, b) + c; break;
    case I_MIN: case I_MAX: *out = int_minmax(d, bits, sgn, a, b); break;
    case I_NEG: *out = 0 - (uint64_t)as; break;   /* in unsigned: the most negative value is its own negation */
    case I_ABS: *out = as < 0 ? 0 - (uint64_t)as : (uint64_t)as; break;
    case I_DIV: case I_REM:
        if (!bu) {
            sim_fail(x->c, sim_warp_id(x->c, x->w), x->lane, x->in, "integer division by zero");
            return -1;
        }
        if (sgn) {
            int64_t mn = bits >= 64 ? INT64_MIN : -(1ll << (bits - 1));
            if (as == mn && bs == -1) *out = d->op == I_DIV ? (uint64_t)as : 0;
            else *out = (uint64_t)(d->op == I_DIV ? as / bs : as % bs);
        } else {
            *out = d->op == I_DIV ? au / bu : au % bu;
        }
        break;
    default: return 0;
    }
    if ((d->flags & F_SAT) && sgn && bits == 32 && (d->op == I_ADD || d->op == I_SUB)) {
        int64_t r = d->op == I_ADD ? as + bs : as - bs;
        *out = (uint64_t)(r > INT32_MAX ? INT32_MAX : r < INT32_MIN ? INT32_MIN : r);
    }
    return 1;
}

static uint64_t brev(uint64_t a, int bits)
{
    uint64_t r = 0;
    for (int i = 0; i < bits; i++) r |= (a >> i & 1) << (bits - 1 - i);
    return r;
}

static int logic(const Ctx *x, int t, uint64_t *out)
{
    int bits = isa_type_bits(t);
    uint64_t a = mask_bits(bits, src(x, 1)), b = src(x, 2);
    uint32_t s = (uint32_t)b;
    switch (x->in->d.op) {
    case I_AND: *out = a & b; return 1;
    case I_OR: *out = a | b; return 1;
    case I_XOR: *out = a ^ b; return 1;
    case I_NOT: *out = ~a; return 1;
    case I_CNOT: *out = a == 0; return 1;   /* a is masked to the type's bits */
    case I_SHL: *out = s >= (uint32_t)bits ? 0 : a << s; return 1;
    case I_SHR:
        if (isa_type_is_signed(t)) *out = (uint64_t)(s >= (uint32_t)bits ? (sext(bits, a) < 0 ? -1 : 0) : sext(bits, a) >> s);
        else *out = s >= (uint32_t)bits ? 0 : a >> s;
        return 1;
    case I_BREV: *out = brev(a, bits); return 1;
    case I_POPC: *out = (uint64_t)__builtin_popcountll(a); return 1;
    case I_CLZ: {
        int n = 0;
        while (n < bits && !(a >> (bits - 1 - n) & 1)) n++;
        *out = (uint64_t)n;
        return 1;
    }
    }
    return 0;
}

/* a value of type t as a double (an integer type's as signed or unsigned) */
static double to_double(int t, uint64_t v)
{
    switch (t) {
    case T_F32: return F(v);
    case T_F64: return D(v);
    case T_F16: case T_BF16: return half_value(t, v);
    }
    return isa_type_is_signed(t) ? (double)sext(isa_type_bits(t), v) : (double)mask_bits(isa_type_bits(t), v);
}

static int compare(const Ctx *x, int t, uint64_t a, uint64_t b)
{
    int cmp = x->in->d.cmp;
    if (isa_type_is_float(t)) {
        /* each operand as its type: f16 and bf16 compare as halves, not as the bits of an f32 */
        double fa = to_double(t, a), fb = to_double(t, b);
        int ftzf = (x->in->d.flags & F_FTZ) != 0;
        if (ftzf && t == T_F32) fa = ftz((float)fa), fb = ftz((float)fb);
        if (t == T_F16 || t == T_BF16) fa = half_operand(t, a, ftzf), fb = half_operand(t, b, ftzf);
        int un = isnan(fa) || isnan(fb);
        switch (cmp) {
        case CMP_EQ: return !un && fa == fb;
        case CMP_NE: return !un && fa != fb;
        case CMP_LT: return !un && fa < fb;
        case CMP_LE: return !un && fa <= fb;
        case CMP_GT: return !un && fa > fb;
        case CMP_GE: return !un && fa >= fb;
        case CMP_EQU: return un || fa == fb;
        case CMP_NEU: return un || fa != fb;
        case CMP_LTU: return un || fa < fb;
        case CMP_LEU: return un || fa <= fb;
        case CMP_GTU: return un || fa > fb;
        case CMP_GEU: return un || fa >= fb;
        case CMP_NUM: return !un;
        case CMP_NAN: return un;
        }
        return -1;
    }
    int bits = isa_type_bits(t);
    int sgn = isa_type_is_signed(t);
    int64_t as = sext(bits, a), bs = sext(bits, b);
    uint64_t au = mask_bits(bits, a), bu = mask_bits(bits, b);
    switch (cmp) {
    case CMP_EQ: return au == bu;
    case CMP_NE: return au != bu;
    case CMP_LT: return sgn ? as < bs : au < bu;
    case CMP_LE: return sgn ? as <= bs : au <= bu;
    case CMP_GT: return sgn ? as > bs : au > bu;
    case CMP_GE: return sgn ? as >= bs : au >= bu;
    case CMP_LO: return au < bu;
    case CMP_LS: return au <= bu;
    case CMP_HI: return au > bu;
    case CMP_HS: return au >= bu;
    }
    return -1;
}

/* setp writes its predicate (and the complement into the "|q" one). */
/* setp's and set's .and/.or/.xor of a compare's outcome v with the predicate p */
static int bool_combine(int ro, int v, int p) { return ro == RO_AND ? v & p : ro == RO_OR ? v | p : v ^ p; }

static int setp(const Ctx *x, int t)
{
    int r = compare(x, t, src(x, 1), src(x, 2));
    if (r < 0) return refuse(x, "this comparison");
    int q = !r;
    if (x->in->d.redop) {   /* setp.cmp.bool: combine with a third predicate */
        int p = (int)(src(x, 3) & 1), ro = x->in->d.redop;
        r = bool_combine(ro, r, p), q = bool_combine(ro, q, p);
    }
    const SimOpnd *o = &x->in->o[0];
    sim_write(x->w, x->c->f, o, x->lane, (uint64_t)r);
    if (o->reg2 >= 0) sim_write(x->w, x->c->f, &(SimOpnd){.kind = SO_REG, .reg = o->reg2}, x->lane, (uint64_t)q);
    return 1;
}

/* set.cmp{.bool}.dtype.stype d, a, b{, c}: the compare (setp's), combined with c, as the destination type's true
 * (0xffffffff, 0xffff for a 16-bit integer or a half of a pair, 1.0 in the float types) or 0; a packed pair compares
 * its halves each on its own (nvcc's __hgt2, __hbgt2 and friends, the half headers' inline PTX) */
static int set_op(const Ctx *x, uint64_t *out)
{
    const IsaInsn *d = &x->in->d;
    int dt = d->type[0], st = d->type[1], pair = st == T_F16X2 || st == T_BF16X2;
    int e = st == T_F16X2 ? T_F16 : st == T_BF16X2 ? T_BF16 : st;
    uint64_t a = src(x, 1), b = src(x, 2), r = 0;
    for (int h = 0; h < (pair ? 2 : 1); h++) {
        int v = compare(x, e, pair ? a >> (16 * h) & 0xFFFF : a, pair ? b >> (16 * h) & 0xFFFF : b);
        if (v < 0) return refuse(x, "this comparison");
        if (d->redop) v = bool_combine(d->redop, v, (int)(src(x, 3) & 1));
        uint64_t one = dt == T_F32 ? 0x3F800000u : dt == T_F16 || dt == T_F16X2 ? 0x3C00u
                     : dt == T_BF16 || dt == T_BF16X2 ? 0x3F80u
                     : pair || isa_type_bits(dt) == 16 ? 0xFFFFu : 0xFFFFFFFFu;
        if (v) r |= one << (16 * h);
    }
    *out = r;
    return 1;
}

/* ---- conversions ---- */
/* v rounded to f32 under .ftz: to 24 bits as if the exponent had no floor (v scaled by 2^64), flushed if that stays
 * below 2^-126, as f32_op's arithmetic (an H200: cvt.rp.ftz.f32.f64 of 1.8 ulps of 24 bits under 2^-126 is 0, seed
 * 13218 of test_fuzz_alu, where the subnormals' grid rounds up to 2^-126) */
static float ftz_round_f32(double v, int rnd)
{
    float f = round_f32(v, rnd);
    if (f == 0 || fabsf(f) > FLT_MIN || isnan(f)) return ftz(f);
    return ftz_unscale(round_f32(ldexp(v, 64), rnd));
}

static float round_f32(double v, int rnd)
{
    int saved = fegetround();
    fesetround(fe_mode(rnd));
    volatile float f = (float)v;
    fesetround(saved);
    return f;
}

/* f32 -> tf32: 10 explicit mantissa bits, nearest with ties away from zero. */
static uint32_t tf32_rna(float f)
{
    uint32_t u = f32_bits(f);
    if ((u & 0x7F800000u) == 0x7F800000u) return u;
    return (u + 0x1000u) & ~0x1FFFu;
}

static double round_int(double v, int rnd)
{
    switch (rnd) {
    case RND_RZI: return trunc(v);
    case RND_RMI: return floor(v);
    case RND_RPI: return ceil(v);
    default: return nearbyint(v);   /* rni: nearest even under the default mode */
    }
}

/* v + lo (exact) to f16 or bf16 as cvt rounds it: in mode rnd, .sat clamping to [0, 1] first, .satfinite
 * sending infinities to the largest finite value of their sign, .relu negatives to +0. The 16-bit result, or -1 for
 * a mode cvt does not have. */
static int half_cvt(const Ctx *x, int t, double v, double lo, int rnd)
{
    const IsaInsn *d = &x->in->d;
    if (rnd != RND_NONE && rnd != RND_RN && rnd != RND_RZ && rnd != RND_RM && rnd != RND_RP) return -1;
    if (d->flags & F_SAT) lo = v <= 0 || v >= 1 ? 0 : lo, v = sat01(v);
    int h = half_round(t, v, lo, rnd);
    if (d->flags & F_SATFINITE) h = half_satfinite(t, h);
    return d->flags & F_RELU ? relu16(t, h) : h;
}

static int cvt(const Ctx *x, uint64_t *out)
{
    const IsaInsn *d = &x->in->d;
    if (d->ntype != 2) return refuse(x, "cvt without two types");
    int dt = d->type[0], st = d->type[1];
    uint64_t a = src(x, 1);
    int relu = (d->flags & F_RELU) != 0;
    if (relu && dt != T_F16 && dt != T_BF16 && dt != T_F16X2 && dt != T_BF16X2 && dt != T_E4M3X2 && dt != T_E5M2X2)
        return refuse(x, "cvt.relu to a type other than f16, bf16 or fp8 (x2)");
    if (dt == T_F16X2 && (st == T_E4M3X2 || st == T_E5M2X2)) {   /* each fp8 byte to a half, exactly, upper to upper */
        int e5 = st == T_E5M2X2, h[2];
        for (int k = 0; k < 2; k++) {
            h[k] = half_round(T_F16, fp8_to_f32((uint8_t)(a >> 8 * k), e5), 0, RND_RN);   /* exact; a NaN the canonical one */
            if (relu) h[k] = relu16(T_F16, h[k]);
        }
        *out = (uint32_t)h[1] << 16 | (uint32_t)h[0];
        return 1;
    }
    if (dt == T_E4M3X2 || dt == T_E5M2X2) {   /* two f32 (the first to the upper byte), nearest even, .satfinite */
        if (st != T_F32 || !(d->flags & F_SATFINITE) || (d->rnd != RND_RN && d->rnd != RND_NONE))
            return refuse(x, "a conversion to fp8 other than cvt.rn.satfinite from .f32");
        int e5 = dt == T_E5M2X2, q[2];
        for (int k = 0; k < 2; k++) {
            q[k] = f32_to_fp8(F(src(x, 2 - k)), e5);   /* .relu: negatives (-0 too) to +0, a NaN the canonical 0x7F */
            if (relu) q[k] = isnan(F(src(x, 2 - k))) ? 0x7F : (q[k] & 0x80) ? 0 : q[k];
        }
        *out = (uint32_t)q[1] << 8 | (uint32_t)q[0];
        return 1;
    }
    if (dt == T_BF16X2 || dt == T_F16X2) {   /* the first source goes to the upper half */
        int e = dt == T_BF16X2 ? T_BF16 : T_F16, hi = half_cvt(x, e, F(a), 0, d->rnd), lo = half_cvt(x, e, F(src(x, 2)), 0, d->rnd);
        if (hi < 0 || lo < 0) return refuse(x, "cvt to f16x2/bf16x2 in this rounding mode");
        *out = (uint32_t)hi << 16 | (uint32_t)lo;
        return 1;
    }
    if (!isa_type_is_float(dt) && !isa_type_is_float(st)) {
        int sb = isa_type_bits(st), db = isa_type_bits(dt);
        int64_t v = isa_type_is_signed(st) ? sext(sb, a) : (int64_t)mask_bits(sb, a);
        if (d->flags & F_SAT) {
            if (!isa_type_is_signed(st) && sb == 64 && (a >> 63)) v = INT64_MAX;   /* a u64 past INT64_MAX: high */
            int64_t lo = isa_type_is_signed(dt) ? -(1ll << (db - 1)) : 0;
            int64_t hi = isa_type_is_signed(dt) ? (1ll << (db - 1)) - 1 : db >= 64 ? INT64_MAX : (1ll << db) - 1;
            v = v < lo ? lo : v > hi ? hi : v;
        }
        *out = isa_type_is_signed(dt) ? (uint64_t)sext(db, (uint64_t)v) : mask_bits(db, (uint64_t)v);   /* to the register's width */
        return 1;
    }
    if ((dt == T_F32 || dt == T_F64) && !isa_type_is_float(st) && isa_type_bits(st) == 64) {
        /* one rounding in the instruction's mode, as the hardware: through a double, a value past 2^53 would be
         * rounded twice (and to f64 in the default mode only) */
        int saved = fegetround(), sg = isa_type_is_signed(st);
        fesetround(fe_mode(d->rnd));
        volatile double r = sg ? (double)(int64_t)a : (double)a;
        volatile float f = sg ? (float)(int64_t)a : (float)a;
        fesetround(saved);
        if (dt == T_F64) { *out = UD(r); return 1; }
        if (d->flags & F_SAT) f = (float)sat01(f);
        *out = U(f);
        return 1;
    }
    double v = to_double(st, a), v_lo = 0;
    if (!isa_type_is_float(st) && isa_type_bits(st) == 64)   /* what the double misses of a 64-bit integer (< 2^11) */
        v_lo = (double)(isa_type_is_signed(st) ? (__int128)(int64_t)a - (__int128)v : (__int128)a - (__int128)v);
    if (d->flags & F_FTZ) v = st == T_F32 ? (double)ftz((float)v) : ftz64(v);   /* a subnormal of the source type */
    int rnd = d->rnd;
    if (isa_type_is_float(dt) && (rnd == RND_RNI || rnd == RND_RZI || rnd == RND_RMI || rnd == RND_RPI))
        v = round_int(v, rnd), rnd = RND_RN;   /* cvt.rmi.f32.f32 and kin: to an integral value of the type */
    switch (dt) {
    case T_F32:
        if (st == T_BF16 && rnd == RND_NONE && !(d->flags & (F_FTZ | F_SAT))) { *out = (a & 0xFFFF) << 16; break; }   /* exact: NaNs too */
        if (st == T_F64 && isnan(v)) {   /* an f64 NaN keeps its sign and the top of its payload, quieted */
            *out = (a >> 32 & 0x80000000u) | 0x7FC00000u | (uint32_t)(a >> 29 & 0x7FFFFFu);
            break;
        }
        *out = nan32(U(d->flags & F_FTZ ? ftz_round_f32(v, rnd) : round_f32(v, rnd)));
        break;
    case T_F64:   /* a NaN passes on quieted (an f32 one widened); with .ftz an f32 NaN is the canonical one */
        if (!isnan(v)) *out = UD(v);
        else if (st == T_F64) *out = a | F64_QUIET;
        else if (st == T_F32 && !(d->flags & F_FTZ)) *out = ((a & 0x80000000u) << 32 | (a & 0x7FFFFFFFu) << 29) | 0x7FF8000000000000ull;
        else *out = 0x7FFFFFFFE0000000ull;
        break;
    case T_F16: case T_BF16: {
        int h = half_cvt(x, dt, v, v_lo, rnd);
        if (h < 0) return refuse(x, "cvt to f16/bf16 in this rounding mode");
        *out = (uint64_t)h;
        break;
    }
    case T_TF32: *out = tf32_rna((float)v); break;
    default: {   /* float -> integer: round, saturate; NaN as an H200 converts it (below) */
        int db = isa_type_bits(dt), sg = isa_type_is_signed(dt);
        if (isnan(v)) {   /* measured on an H200: the top bit from f64 or into 64 bits (any sign), else 0 */
            *out = db == 64 || st == T_F64 ? 1ull << (db - 1) : 0;
            break;
        }
        double r = round_int(v, d->rnd);
        /* the type's range: 2^(bits - 1) and 2^bits are exact doubles, its largest values (at 64 bits) are not */
        double lo = sg ? -ldexp(1, db - 1) : 0, top = sg ? ldexp(1, db - 1) : ldexp(1, db);
        uint64_t max = sg ? mask_bits(db - 1, ~0ull) : mask_bits(db, ~0ull);
        if (r >= top) *out = max;
        else if (r < lo) *out = mask_bits(db, sg ? (uint64_t)(int64_t)lo : 0);   /* negatives into unsigned: 0 */
        else *out = mask_bits(db, sg ? (uint64_t)(int64_t)r : (uint64_t)r);
    }
    }
    if ((d->flags & F_SAT) && dt == T_F32) *out = U((float)sat01(F(*out)));
    return 1;
}

/* cvta between a state space and the generic space. */
static int cvta(const Ctx *x, uint64_t *out)
{
    const IsaInsn *d = &x->in->d;
    uint64_t a = src(x, 1);
    int sp = d->nspace ? d->space[0] : SP_NONE, to = (d->flags & F_TO) != 0;
    uint64_t base = sp == SP_SHARED || sp == SP_SHARED_CLUSTER ? SIM_SHARED_WINDOW : sp == SP_PARAM ? SIM_PARAM_WINDOW
                  : sp == SP_LOCAL ? SIM_LOCAL_WINDOW : 0;
    if (sp != SP_GLOBAL && sp != SP_CONST && !base) return refuse(x, "cvta of this state space");   /* .const: in global memory */
    *out = to ? a - base : a + base;
    if (d->ntype && isa_type_bits(d->type[0]) == 32) *out = (uint32_t)*out;
    return 1;
}

/* isspacep: whether the generic address a falls in the space's window. Shared addresses carry their CTA's rank
 * (SIM_RANK_SHIFT): .shared (::cta) is the executing CTA's, ::cluster any CTA's of the cluster; .param the kernel's
 * parameters, which are global too (an H200 says both of a parameter's cvta.param address); global memory is all
 * but the shared and local windows. Constant memory has no window of its own here. */
static int isspacep(const Ctx *x, uint64_t *out)
{
    const IsaInsn *d = &x->in->d;
    int sp = d->nspace ? d->space[0] : SP_NONE;
    uint64_t a = src(x, 1);
    int shared = a - SIM_SHARED_WINDOW < (1ull << 32), param = a - SIM_PARAM_WINDOW < (1ull << 32);
    int local = a - SIM_LOCAL_WINDOW < (1ull << 32);
    uint32_t rank = (uint32_t)(a - SIM_SHARED_WINDOW) >> SIM_RANK_SHIFT;
    switch (sp) {
    case SP_SHARED: *out = shared && rank == (uint32_t)x->c->rank; return 1;
    case SP_SHARED_CLUSTER: *out = shared && rank < (uint32_t)x->c->cl->n; return 1;
    case SP_PARAM: *out = param; return 1;
    case SP_LOCAL: *out = local; return 1;
    case SP_GLOBAL: *out = !shared && !local; return 1;
    case SP_CONST: return refuse(x, "isspacep.const (constant memory lives in global memory here, with no window)");
    }
    return refuse(x, "isspacep without a state space");
}

/* createpolicy: the L2 policy only hints at what to keep cached, so its value is an opaque tag here; the
 * fraction of accesses it covers (default 1) must lie in (0, 1]. */
static int createpolicy(const Ctx *x, uint64_t *out)
{
    if (x->in->nops > 1) {
        uint32_t bits = (uint32_t)src(x, 1);
        float f;
        memcpy(&f, &bits, 4);
        if (!(f > 0.0f && f <= 1.0f)) return refuse(x, "createpolicy with a fraction outside (0, 1]");
    }
    *out = 0x5043494C4F500000ull;   /* "POLICY": any value an L2::cache_hint operand takes */
    return 1;
}

/* Returns 1 with the value in *out, 0 when the instruction writes its own
 * destinations (or is not an ALU op), -1 for a fault (reported). */
static int lane_op(const Ctx *x, uint64_t *out)
{
    const IsaInsn *d = &x->in->d;
    int t = d->ntype ? d->type[d->ntype - 1] : T_NONE;
    int half = t == T_F16 || t == T_BF16 || t == T_F16X2 || t == T_BF16X2;
    int relu_minmax = (d->op == I_MIN || d->op == I_MAX) && (t == T_S32 || t == T_S16X2);
    if ((d->flags & F_RELU) && !(d->op == I_CVT || (d->op == I_FMA && half) || relu_minmax))
        return refuse(x, ".relu other than on cvt, an f16/bf16 fma or an s32/s16x2 min/max");
    if ((d->flags & F_NAN) && !((d->op == I_MIN || d->op == I_MAX) && (half || t == T_F32)))
        return refuse(x, ".NaN other than on an f32, f16 or bf16 min/max");
    switch (d->op) {
    case I_MOV: *out = src(x, 1); return 1;
    case I_SETP: return setp(x, t) < 0 ? -1 : 0;
    case I_SET: return set_op(x, out);
    case I_SELP: *out = (src(x, 3) & 1) ? src(x, 1) : src(x, 2); return 1;
    case I_CVT: return cvt(x, out);
    case I_CVTA: return cvta(x, out);
    case I_ISSPACEP: return isspacep(x, out);
    case I_CREATEPOLICY: return createpolicy(x, out);
    case I_SAD: {   /* sad.type d, a, b, c: c + |a - b|, a and b compared as the type */
        int bits = isa_type_bits(t), sg = isa_type_is_signed(t);
        uint64_t a = src(x, 1), b = src(x, 2);
        int a_gt = sg ? sext(bits, a) > sext(bits, b) : mask_bits(bits, a) > mask_bits(bits, b);
        *out = mask_bits(bits, (a_gt ? a - b : b - a) + src(x, 3));
        return 1;
    }
    case I_DP4A: case I_DP2A: {   /* dp4a.atype.btype d, a, b, c; dp2a.lo/.hi.atype.btype: bytes and halfwords sign- or
                                   * zero-extended as their operand's type says, products added to c */
        if (d->ntype != 2) return refuse(x, "dp4a/dp2a without .atype.btype");
        int sa = isa_type_is_signed(d->type[0]), sb = isa_type_is_signed(d->type[1]);
        uint32_t a = (uint32_t)src(x, 1), b = (uint32_t)src(x, 2);
        int64_t acc = (sa || sb) ? (int64_t)(int32_t)src(x, 3) : (int64_t)(uint32_t)src(x, 3);
        int four = d->op == I_DP4A, sel = !four && (d->flags & F_HI) ? 2 : 0;
        if (!four && !(d->flags & (F_LO | F_HI))) return refuse(x, "dp2a without .lo or .hi");
        for (int i = 0; i < (four ? 4 : 2); i++) {
            int64_t va = four ? (sa ? (int8_t)(a >> 8 * i) : (uint8_t)(a >> 8 * i)) : (sa ? (int16_t)(a >> 16 * i) : (uint16_t)(a >> 16 * i));
            int64_t vb = sb ? (int8_t)(b >> 8 * (sel + i)) : (uint8_t)(b >> 8 * (sel + i));
            acc += va * vb;
        }
        *out = (uint32_t)acc;
        return 1;
    }
    case I_FNS: {   /* fns.b32 d, mask, base, offset: the |offset|-th set bit of mask from bit base, searching up (offset >
                     * 0) or down (< 0); offset 0: base itself if set; none: 0xffffffff */
        uint32_t mask = (uint32_t)src(x, 1), base = (uint32_t)src(x, 2);
        int32_t off = (int32_t)src(x, 3);
        if (base > 31) return refuse(x, "fns with a base above 31 (undefined)");
        *out = 0xFFFFFFFFull;
        if (!off) {
            if (mask >> base & 1) *out = base;
            return 1;
        }
        int64_t need = off > 0 ? off : -(int64_t)off;
        for (int pos = (int)base; pos >= 0 && pos < 32; pos += off > 0 ? 1 : -1)
            if ((mask >> pos & 1) && --need == 0) { *out = (uint64_t)pos; break; }
        return 1;
    }
    case I_TESTP: {   /* testp.property.ftype p, a */
        int cls = t == T_F64 ? fpclassify(D(src(x, 1))) : fpclassify(F(src(x, 1)));
        switch (d->cmp) {
        case CMP_FINITE: *out = cls != FP_INFINITE && cls != FP_NAN; return 1;
        case CMP_INFINITE: *out = cls == FP_INFINITE; return 1;
        case CMP_NUMBER: *out = cls != FP_NAN; return 1;
        case CMP_NOTANUMBER: *out = cls == FP_NAN; return 1;
        case CMP_NORMAL: *out = cls == FP_NORMAL || cls == FP_ZERO; return 1;   /* the ISA counts +-0 as normal */
        case CMP_SUBNORMAL: *out = cls == FP_SUBNORMAL; return 1;
        default: return refuse(x, "testp without a property");
        }
    }
    case I_SHF: {   /* the 64 bits {b, a} shifted by c (mod 32, or at most 32 with .clamp): d = the upper word (.l), the lower (.r) */
        uint64_t f = x->in->d.flags, ab = (src(x, 1) & 0xFFFFFFFFull) | (src(x, 2) & 0xFFFFFFFFull) << 32;
        uint64_t n = src(x, 3) & 0xFFFFFFFFull;
        if (!(f & (F_SHF_L | F_SHF_R)) || !(f & (F_CLAMP | F_WRAP))) return refuse(x, "shf without .l/.r and .wrap/.clamp");
        n = (f & F_CLAMP) ? (n > 32 ? 32 : n) : (n & 31);
        *out = (f & F_SHF_L) ? (uint32_t)((ab << n) >> 32) : (uint32_t)(ab >> n);
        return 1;
    }
    case I_BFE: case I_BFI: {   /* position and length take their low 8 bits; the field stops at the msb */
        int bits = isa_type_bits(t), sgn = d->op == I_BFE && isa_type_is_signed(t);
        if (bits != 32 && bits != 64) return refuse(x, "bfe/bfi of this type");
        int last = d->op == I_BFE ? 3 : 4;
        unsigned pos = (unsigned)src(x, last - 1) & 255, len = (unsigned)src(x, last) & 255, msb = (unsigned)bits - 1;
        uint64_t a = src(x, 1), r;
        if (d->op == I_BFI) {   /* bfi d, a, b, pos, len: a's low len bits into b at pos */
            r = src(x, 2);
            for (unsigned i = 0; i < len && pos + i <= msb; i++) r = (r & ~(1ull << (pos + i))) | ((a >> i & 1) << (pos + i));
        } else {                /* bfe d, a, pos, len: a's bits from pos, sign- or zero-filled past the field */
            uint64_t sbit = sgn && len ? a >> (pos + len - 1 < msb ? pos + len - 1 : msb) & 1 : 0;
            r = 0;
            for (unsigned i = 0; i <= msb; i++) r |= (i < len && pos + i <= msb ? a >> (pos + i) & 1 : sbit) << i;
        }
        *out = bits == 64 ? r : r & 0xFFFFFFFFull;
        return 1;
    }
    case I_BFIND: {   /* the most significant bit that is not a sign bit (for .s32/.s64, ~a when negative), or ~0 if
                       * none; .shiftamt: its distance from the top instead */
        int bits = isa_type_bits(t), sgn = isa_type_is_signed(t);
        uint64_t a = src(x, 1) & (bits == 64 ? ~0ull : 0xFFFFFFFFull);
        if (bits != 32 && bits != 64) return refuse(x, "bfind of this type");
        if (sgn && (a >> (bits - 1) & 1)) a = ~a & (bits == 64 ? ~0ull : 0xFFFFFFFFull);
        int pos = a ? 63 - __builtin_clzll(a) : -1;
        *out = pos < 0 ? 0xFFFFFFFFull : (x->in->d.flags & F_SHIFTAMT) ? (uint64_t)(bits - 1 - pos) : (uint64_t)pos;
        return 1;
    }
    case I_MUL24: case I_MAD24: {   /* the low 24 bits of a and b as 24-bit integers of the type; .lo: the 48-bit
                                     * product's bits 0-31, .hi: its bits 16-47; mad24 adds c (.sat: .hi.s32 only) */
        int sg = t == T_S32;
        int64_t a = sg ? sext(24, src(x, 1)) : (int64_t)mask_bits(24, src(x, 1));
        int64_t b = sg ? sext(24, src(x, 2)) : (int64_t)mask_bits(24, src(x, 2)), p = a * b;
        int64_t w = (d->flags & F_HI) ? p >> 16 : p;   /* arithmetic shift: the 48 bits' sign where signed */
        if ((d->flags & F_SAT) && !(d->op == I_MAD24 && (d->flags & F_HI) && sg))
            return refuse(x, ".sat other than on mad24.hi.s32");
        if (d->op == I_MUL24) { *out = (uint32_t)w; return 1; }
        if (d->flags & F_SAT) {   /* the 32-bit word of the product plus c, saturated */
            int64_t r = (int64_t)(int32_t)w + (int64_t)(int32_t)src(x, 3);
            *out = (uint32_t)(r > INT32_MAX ? INT32_MAX : r < INT32_MIN ? INT32_MIN : r);
        } else {
            *out = (uint32_t)((uint32_t)w + (uint32_t)src(x, 3));
        }
        return 1;
    }
    case I_BMSK: {   /* b bits set from bit a; .clamp: a or b of 32 or more give no bits past 31 and no wrap */
        uint32_t a = (uint32_t)src(x, 1), b = (uint32_t)src(x, 2), a1 = a & 31, b1 = b & 31, sum = a1 + b1;
        int clamp = (d->flags & F_CLAMP) != 0;
        uint64_t lo = clamp && a >= 32 ? 0 : 0xFFFFFFFFull << a1;   /* the bits from the start */
        uint64_t hi = 0xFFFFFFFFull << sum;                            /* the bits past the end */
        if (sum >= 32 || (clamp && b >= 32)) hi = 0;                   /* up to bit 31 */
        else if (!b1) hi = 0xFFFFFFFFull;                              /* no bits */
        *out = (uint32_t)(lo & ~hi);
        return 1;
    }
    case I_SZEXT: {   /* the low N bits of a extended to 32 (N = b & 31; .clamp: b of 32 or more keeps all 32) */
        uint32_t a = (uint32_t)src(x, 1), b = (uint32_t)src(x, 2), n = b & 31;
        if ((d->flags & F_CLAMP) && b >= 32) { *out = a; return 1; }
        if (!n) { *out = 0; return 1; }
        uint32_t keep = (uint32_t)(0xFFFFFFFFull >> (32 - n));
        *out = t == T_S32 && (a >> (n - 1) & 1) ? a | ~keep : a & keep;
        return 1;
    }
    case I_LOP3: {   /* bit i of d: bit (a_i b_i c_i) of the table's low byte, a the high one (immLut = F(0xF0, 0xCC, 0xAA)) */
        uint32_t a = (uint32_t)src(x, 1), b = (uint32_t)src(x, 2), c = (uint32_t)src(x, 3), lut = (uint32_t)src(x, 4), r = 0;
        for (int i = 0; i < 32; i++) r |= (lut >> ((a >> i & 1) << 2 | (b >> i & 1) << 1 | (c >> i & 1)) & 1u) << i;
        *out = r;
        return 1;
    }
    case I_PRMT: {   /* byte i of d: byte (c >> 4i) & 7 of the pair {b, a}, or that byte's sign (bit 7) copied when bit 3 */
        uint64_t ab = (src(x, 1) & 0xFFFFFFFFull) | (src(x, 2) & 0xFFFFFFFFull) << 32, c = src(x, 3), r = 0;
        for (int i = 0; i < 4; i++) {
            unsigned sel = (unsigned)(c >> (4 * i)) & 15, byte = (unsigned)(ab >> (8 * (sel & 7))) & 0xFF;
            if (sel & 8) byte = (byte & 0x80) ? 0xFF : 0;
            r |= (uint64_t)byte << (8 * i);
        }
        *out = r;
        return 1;
    }
    case I_AND: case I_OR: case I_XOR: case I_NOT: case I_CNOT: case I_SHL: case I_SHR: case I_BREV: case I_CLZ: case I_POPC:
        if (t == T_PRED) {
            uint64_t a = src(x, 1) & 1, b = src(x, 2) & 1;
            *out = d->op == I_AND ? a & b : d->op == I_OR ? a | b : d->op == I_XOR ? a ^ b : !a;
            return 1;
        }
        return logic(x, t, out) ? 1 : refuse(x, "this logic op");
    }
    if (isa_type_is_float(t)) return float_arith(x, t, out);
    int r = int_arith(x, t, out);
    return r ? r : refuse(x, "this instruction");
}

/* mov between a register and a vector of registers: pack or unpack, the
 * first element in the low bits. */
static int mov_vector(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    const SimOpnd *dst = &in->o[0], *sv = &in->o[1];
    int packing = sv->kind == SO_VEC, n = packing ? sv->n : dst->n;
    int total = isa_type_bits(in->d.ntype ? in->d.type[0] : T_B32), eb = total / (n ? n : 1);
    for (int l = 0; l < 32; l++) {
        if (!(exec >> l & 1)) continue;
        if (packing) {
            uint64_t v = 0;
            for (int k = 0; k < n; k++) {
                SimOpnd e = sim_vec_elem(c->f, sv, k);
                v |= mask_bits(eb, sim_read(c, w, &e, l)) << (k * eb);
            }
            sim_write(w, c->f, dst, l, v);
        } else {
            uint64_t v = sim_read(c, w, sv, l);
            for (int k = 0; k < n; k++) {
                SimOpnd e = sim_vec_elem(c->f, dst, k);
                sim_write(w, c->f, &e, l, mask_bits(eb, v >> (k * eb)));
            }
        }
    }
    return 1;
}

/* Its operands, modifiers and type were checked when the module was parsed (sim_form.c, emit/isa.c). */
int sim_alu(SimCta *c, SimWarp *w, const SimInsn *in, uint32_t exec)
{
    if (in->d.op == I_MOV && (in->o[0].kind == SO_VEC || in->o[1].kind == SO_VEC)) return mov_vector(c, w, in, exec);
    for (int l = 0; l < 32 && !c->failed; l++) {
        if (!(exec >> l & 1)) continue;
        Ctx x = {c, w, in, l};
        uint64_t v;
        int r = lane_op(&x, &v);
        if (r < 0) return 1;
        if (r > 0) sim_write(w, c->f, &in->o[0], l, v);
    }
    return 1;
}
