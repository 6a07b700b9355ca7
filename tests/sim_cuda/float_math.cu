// Correct: the rotation, kept only where nvcc's float, double and integer arithmetic passes checks that do not
// repeat its formulas: square roots squared back, reciprocals and quotients multiplied back, exp and log undoing
// each other, sin^2 + cos^2 = 1, tanh against exponentials, the rounding conversions against loops that count up to the value, integer
// quotients and remainders recombined, the high halves of products against 64-bit products, and double precision
// the same way (sqrt.rn.f64, div.rn.f64, fma.rn.f64, cvt between widths); testp's six properties and
// tanh.approx by inline PTX.
// archs: sm_80 sm_90
// expect: ok
// block: 64
// smem: 0

// each check's failure sets its own bit of `bad`, which the kernel XORs into its output: a failing run names the
// first failing check by the bits of the first wrong byte (check n: byte 4 + n / 8, bit n % 8)
#define CHECK(c) (bad |= (unsigned)!(c) << nchk++)

__device__ int near(float a, float b, float rel) { return fabsf(a - b) <= rel * fmaxf(fabsf(b), 1e-30f); }
__device__ int near_d(double a, double b, double rel) { return fabs(a - b) <= rel * fmax(fabs(b), 1e-300); }

// floor of x >= 0 by counting (loops of a run-time length that nvcc does not turn into cvt.rmi)
__device__ int count_floor(float x) {
    int n = 0;
    while ((float)(n + 1) <= x) n++;
    return n;
}

// testp's properties of v as six bits (finite, infinite, number, notanumber, normal, subnormal), by inline PTX
__device__ unsigned props(float v) {
    unsigned r;
    asm("{ .reg .pred p0, p1, p2, p3, p4, p5;\n\t"
        "testp.finite.f32 p0, %1; testp.infinite.f32 p1, %1; testp.number.f32 p2, %1;\n\t"
        "testp.notanumber.f32 p3, %1; testp.normal.f32 p4, %1; testp.subnormal.f32 p5, %1;\n\t"
        "selp.u32 %0, 1, 0, p0;\n\t"
        "@p1 or.b32 %0, %0, 2; @p2 or.b32 %0, %0, 4; @p3 or.b32 %0, %0, 8;\n\t"
        "@p4 or.b32 %0, %0, 16; @p5 or.b32 %0, %0, 32; }"
        : "=r"(r) : "f"(v));
    return r;
}

extern "C" __global__ void k(const int4 *in, int4 *out) {
    int t = threadIdx.x;
    int4 v = in[(t + 32) % 64];
    unsigned u = (unsigned)in[t].x;
    float x = 1.0f + (float)(u & 0xffff) / 4096.0f;   // in [1, 17)
    float y = 0.25f + (float)(u >> 20) / 1024.0f;     // in [0.25, 4.25)
    unsigned bad = 0;
    int nchk = 0;
    float s = sqrtf(x);
    CHECK(near(s * s, x, 2e-7f));
    CHECK(near(rsqrtf(x) * s, 1.0f, 4e-7f));
    float q = x / y;
    CHECK(near(q * y, x, 2e-7f));
    CHECK(near(__fdividef(x, y), q, 4e-7f) && near(1.0f / y * y, 1.0f, 2e-7f));
    CHECK(near(logf(expf(y)), y, 1e-6f) && near(exp2f(log2f(x)), x, 1e-6f) && near(__expf(__logf(x)), x, 4e-6f));
    // __sinf/__cosf (sin/cos.approx); sinf itself reduces large arguments through a module-scope .global table,
    // which the sim does not model
    float sn = __sinf(y), cs = __cosf(y), th = tanhf(y), e2 = __expf(2.0f * y);
    CHECK(near(sn * sn + cs * cs, 1.0f, 4e-6f) && near(sn / cs, __tanf(y), 4e-5f) && near(th, (e2 - 1.0f) / (e2 + 1.0f), 4e-6f));
    // fma rounds once: x y - fl(x y) is the product's rounding error, exact in float, and the double product is exact
    CHECK(fmaf(x, y, -(x * y)) == (float)((double)x * (double)y - (double)(x * y)));
    float h = x * 3.3f;   // rounding conversions against counting
    int f = count_floor(h);
    CHECK(__float2int_rd(h) == f && __float2int_ru(h) == (h == (float)f ? f : f + 1) && (int)h == f &&
          __float2int_rn(h) == (h - (float)f > 0.5f || (h - (float)f == 0.5f && (f & 1)) ? f + 1 : f) &&
          floorf(-h) == (float)-(h == (float)f ? f : f + 1) && truncf(-h) == (float)-f);
    CHECK(copysignf(x, -y) == -x && fminf(x, y) == (x < y ? x : y) && fmaxf(-x, -y) == -(x < y ? x : y));
    CHECK(isfinite(x) && !isnan(q) && isinf(x / (y - y)) && isnan(sqrtf(-y)));
    float tiny = ldexpf(x, -140), th2;   // subnormal
    CHECK(props(x) == (1 | 4 | 16) && props(x / (y - y)) == (2 | 4) && props(sqrtf(-y)) == 8 && props(tiny) == (1 | 4 | 32) &&
          props(y - y) == (1 | 4 | 16));   // the PTX ISA counts +-0 as normal (the H200 agrees)
    asm("tanh.approx.f32 %0, %1;" : "=f"(th2) : "f"(y));
    CHECK(near(th2, th, 1e-3f));   // tanh.approx: relative error up to about 2^-11 (4.9e-4, the PTX ISA's bound)
    int a = (int)(u % 1000003u) - 500000, d = (int)(u >> 24) + 3;   // integers: quotient and remainder recombined
    int qi = a / d, ri = a % d;
    CHECK(qi * d + ri == a && (ri == 0 || (ri < 0) == (a < 0)) && abs(ri) < d);
    unsigned ua = u | 1u, ub = (u >> 7) + 77u;
    unsigned long long wide = (unsigned long long)ua * ub;
    CHECK(__umulhi(ua, ub) == (unsigned)(wide >> 32) && ua * ub == (unsigned)wide);
    CHECK(__mulhi((int)ua, -(int)ub) == (int)(((long long)(int)ua * -(long long)(int)ub) >> 32));
    double dx = (double)x + (double)u * 1e-12, dy = (double)y;   // double precision
    double ds = sqrt(dx);
    CHECK(near_d(ds * ds, dx, 4e-16) && near_d(dx / dy * dy, dx, 4e-16) && near_d(1.0 / dy * dy, 1.0, 4e-16));
    CHECK(fabs(fma(dx, dy, -(dx * dy))) <= 0x1p-53 * fabs(dx * dy));   // the product's rounding error, at most half an ulp
    CHECK(near_d(exp(log(dx)), dx, 1e-15) && near_d((double)(float)dx, dx, 1e-7) && (float)dx == (float)(double)(float)dx);
    long long big = (long long)(dx * 1e12);
    CHECK((double)big <= dx * 1e12 && dx * 1e12 < (double)(big + 1));
    v.y ^= bad;
    out[t] = v;
}
