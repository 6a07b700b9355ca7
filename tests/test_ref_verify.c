/* Self-check of the host-side pieces every kernel test leans on: element
 * conversions, the generator, the float64 attention reference and the judge. */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hostdata.h"
#include "ref.h"
#include "verify.h"

/* ---- conversions ---- */

static void check_bits(const char *name, uint16_t got, uint16_t want)
{
    check(got == want, name, "got 0x%04X want 0x%04X", got, want);
}

static void test_known_values(void)
{
    check_bits("bf16 1.0", f32_to_bf16(1.0f), 0x3F80);
    check_bits("bf16 -2.5", f32_to_bf16(-2.5f), 0xC020);
    check_bits("bf16 tie to even down", f32_to_bf16(bits_f32(0x3F808000u)), 0x3F80);
    check_bits("bf16 tie to even up", f32_to_bf16(bits_f32(0x3F818000u)), 0x3F82);
    check_bits("bf16 above tie", f32_to_bf16(bits_f32(0x3F808001u)), 0x3F81);
    check_bits("bf16 max rounds to inf", f32_to_bf16(bits_f32(0x7F7FFFFFu)), 0x7F80);
    check_bits("fp16 1.0", f32_to_fp16(1.0f), 0x3C00);
    check_bits("fp16 -2.5", f32_to_fp16(-2.5f), 0xC100);
    check_bits("fp16 65504", f32_to_fp16(65504.0f), 0x7BFF);
    check_bits("fp16 65519", f32_to_fp16(65519.0f), 0x7BFF);
    check_bits("fp16 65520 -> inf", f32_to_fp16(65520.0f), 0x7C00);
    check_bits("fp16 -1e6 -> -inf", f32_to_fp16(-1e6f), 0xFC00);
    check_bits("fp16 tie to even down", f32_to_fp16(1.0f + 0x1p-11f), 0x3C00);
    check_bits("fp16 tie to even up", f32_to_fp16(1.0f + 0x3p-11f), 0x3C02);
    check_bits("fp16 1e-8 underflows to 0", f32_to_fp16(1e-8f), 0x0000);
    check_bits("fp16 -1e-8 -> -0", f32_to_fp16(-1e-8f), 0x8000);
    check_bits("fp16 6e-8 -> min subnormal", f32_to_fp16(6e-8f), 0x0001);
    check_bits("fp16 1e-5 subnormal", f32_to_fp16(1e-5f), 0x00A8);
    check_bits("fp16 half min subnormal tie -> 0", f32_to_fp16(0x1p-25f), 0x0000);
    check_bits("fp16 1.5 ulp subnormal tie -> 2", f32_to_fp16(0x3p-25f), 0x0002);
    check_bits("fp16 2.5 ulp subnormal tie -> 2", f32_to_fp16(0x5p-25f), 0x0002);
    check_bits("fp16 subnormal rounds to min normal", f32_to_fp16(0x7FFp-25f), 0x0400);
    float sub = fp16_to_f32(0x00A8);
    check(sub == 168.0f * 0x1p-24f, "fp16 subnormal decode", "got %.9g", (double)sub);
}

static void test_nan(void)
{
    float snan = bits_f32(0x7F800001u);
    check(isnan(bf16_to_f32(f32_to_bf16(NAN))), "bf16 NaN stays NaN", "lost");
    check(isnan(bf16_to_f32(f32_to_bf16(snan))), "bf16 low-payload NaN stays NaN",
          "got 0x%04X", f32_to_bf16(snan));
    check(isnan(fp16_to_f32(f32_to_fp16(NAN))), "fp16 NaN stays NaN", "lost");
    check(isnan(fp16_to_f32(f32_to_fp16(snan))) && (f32_to_fp16(snan) & 0x0200),
          "fp16 low-payload NaN quiet", "got 0x%04X", f32_to_fp16(snan));
    check(isnan(dt_to_f32(DT_BF16, POISON_U16)) && isnan(dt_to_f32(DT_FP16, POISON_U16)),
          "poison decodes as NaN", "not NaN");
}

/* Every finite code decodes and re-encodes to itself. */
static void test_exhaustive_roundtrip(DType t, const char *name)
{
    long bad = -1;
    for (uint32_t h = 0; h < 0x10000u && bad < 0; h++) {
        float x = dt_to_f32(t, (uint16_t)h);
        if (!isnan(x) && f32_to_dt(t, x) != h)
            bad = (long)h;
    }
    check(bad < 0, name, "code 0x%04lX does not round-trip", bad);
}

/* Magnitude of a code, with the code after the largest finite one standing in
 * for the virtual next binade (where overflow rounds). */
static double code_mag(DType t, uint32_t m)
{
    uint32_t inf = t == DT_FP16 ? 0x7C00u : 0x7F80u;
    if (m == inf)
        return t == DT_FP16 ? 65536.0 : ldexp(1.0, 128);
    return (double)dt_to_f32(t, (uint16_t)m);
}

/* Independent of the encoder's arithmetic: the result must be a nearest code,
 * the even one on ties. */
static int nearest_even_ok(DType t, float x)
{
    uint32_t inf = t == DT_FP16 ? 0x7C00u : 0x7F80u;
    uint32_t m = f32_to_dt(t, x) & 0x7FFFu;
    double ax = fabs((double)x);
    if (m > inf)
        return 0;
    double e = fabs(ax - code_mag(t, m));
    double up = m < inf ? fabs(code_mag(t, m + 1) - ax) : INFINITY;
    double dn = m > 0 ? fabs(ax - code_mag(t, m - 1)) : INFINITY;
    if (e > up || e > dn)
        return 0;
    return (e < up && e < dn) || (m & 1u) == 0;
}

static void test_random_rounding(DType t, const char *name)
{
    Rng r;
    rng_seed(&r, 7);
    float bad = 0.0f;
    int ok = 1;
    for (int n = 0; n < 1000000 && ok; n++) {
        uint32_t u = (uint32_t)rng_u64(&r);
        if (n & 1)   /* exactly-halfway patterns, which random bits rarely hit */
            u = (u & 0xFFFF0000u) | (t == DT_FP16 ? (u & 0xE000u) | 0x1000u : 0x8000u);
        if (n & 2)   /* exponents near fp16's range, subnormals and overflow included */
            u = (u & 0x807FFFFFu) | ((uint32_t)(98 + (n >> 2) % 48) << 23);
        float x = bits_f32(u);
        if (isnan(x) || isinf(x))
            continue;
        ok = nearest_even_ok(t, x);
        bad = x;
    }
    check(ok, name, "x=%a not rounded to nearest even", (double)bad);
}

/* ---- Rng ---- */

static void test_rng(void)
{
    Rng r, r2;
    rng_seed(&r, 12345);
    rng_seed(&r2, 12345);
    int same = 1;
    for (int i = 0; i < 100; i++)
        same &= rng_normal(&r) == rng_normal(&r2);
    check(same, "rng deterministic per seed", "sequences differ");

    const int n = 100000;
    double s = 0, s2 = 0, umin = 1, umax = 0;
    for (int i = 0; i < n; i++) {
        double x = rng_normal(&r), u = rng_uniform(&r);
        s += x;
        s2 += x * x;
        umin = u < umin ? u : umin;
        umax = u > umax ? u : umax;
    }
    double mean = s / n, var = s2 / n - mean * mean;
    check(fabs(mean) < 0.02 && fabs(var - 1.0) < 0.03, "rng normal mean/var",
          "mean %.4f var %.4f", mean, var);
    check(umin >= 0.0 && umax < 1.0 && umax > 0.99 && umin < 0.01, "rng uniform range",
          "min %.6f max %.6f", umin, umax);
}

/* ---- attention reference ---- */

static float *rand_floats(Rng *r, size_t n)
{
    float *a = malloc(sizeof *a * n);
    if (!a) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        a[i] = bf16_to_f32(f32_to_bf16((float)rng_normal(r)));
    return a;
}

/* Straightforward textbook softmax, no max shift (inputs are small), one
 * element at a time with the full index arithmetic spelled out. */
static void naive_attn(const RefAttn *p, const float *q, const float *k, const float *v,
                       double *o, double *lse)
{
    int grp = p->h_q / p->h_kv;
    for (int b = 0; b < p->b; b++)
    for (int h = 0; h < p->h_q; h++)
    for (int i = 0; i < p->s_q; i++) {
        double z = 0.0;
        double *orow = &o[((size_t)(b * p->s_q + i) * p->h_q + h) * p->dv];
        for (int c = 0; c < p->dv; c++)
            orow[c] = 0.0;
        for (int j = 0; j < p->s_k; j++) {
            if (p->causal && j - i > p->s_k - p->s_q)
                continue;
            double dot = 0.0;
            for (int c = 0; c < p->d; c++)
                dot += (double)q[((size_t)(b * p->s_q + i) * p->h_q + h) * p->d + c] *
                       (double)k[((size_t)(b * p->s_k + j) * p->h_kv + h / grp) * p->d + c];
            double w = exp(p->scale * dot);
            z += w;
            for (int c = 0; c < p->dv; c++)
                orow[c] += w * v[((size_t)(b * p->s_k + j) * p->h_kv + h / grp) * p->dv + c];
        }
        for (int c = 0; c < p->dv; c++)
            orow[c] = z > 0 ? orow[c] / z : 0.0;
        lse[((size_t)b * p->h_q + h) * p->s_q + i] = z > 0 ? log(z) : INFINITY;
    }
}

static double max_rel_diff(const double *a, const double *b, size_t n)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (isinf(a[i]) || isinf(b[i])) {
            if (a[i] != b[i])
                return INFINITY;
            continue;
        }
        double d = fabs(a[i] - b[i]) / (fabs(b[i]) + 1e-300);
        if (fabs(a[i] - b[i]) > 1e-13 && d > worst)
            worst = d;
    }
    return worst;
}

typedef struct { float *q, *k, *v; double *o, *lse, *o2, *lse2; size_t no, nl; } AttnBufs;

static AttnBufs attn_alloc(const RefAttn *p, Rng *r)
{
    AttnBufs a;
    a.q = rand_floats(r, (size_t)p->b * p->s_q * p->h_q * p->d);
    a.k = rand_floats(r, (size_t)p->b * p->s_k * p->h_kv * p->d);
    a.v = rand_floats(r, (size_t)p->b * p->s_k * p->h_kv * p->dv);
    a.no = (size_t)p->b * p->s_q * p->h_q * p->dv;
    a.nl = (size_t)p->b * p->h_q * p->s_q;
    a.o = calloc(a.no, sizeof(double));
    a.o2 = calloc(a.no, sizeof(double));
    a.lse = calloc(a.nl, sizeof(double));
    a.lse2 = calloc(a.nl, sizeof(double));
    if (!a.o || !a.o2 || !a.lse || !a.lse2) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return a;
}

static void attn_free(AttnBufs *a)
{
    free(a->q); free(a->k); free(a->v);
    free(a->o); free(a->o2); free(a->lse); free(a->lse2);
}

static void test_ref_vs_naive(const char *name, RefAttn p, int nthreads)
{
    Rng r;
    rng_seed(&r, 99);
    AttnBufs a = attn_alloc(&p, &r);
    ref_attn_fwd(&p, a.q, a.k, a.v, a.o, a.lse, nthreads);
    naive_attn(&p, a.q, a.k, a.v, a.o2, a.lse2);
    double eo = max_rel_diff(a.o, a.o2, a.no), el = max_rel_diff(a.lse, a.lse2, a.nl);
    check(eo < 1e-12 && el < 1e-12, name, "max rel diff o %.3e lse %.3e", eo, el);
    attn_free(&a);
}

/* s_q > s_k with causal: the first s_q - s_k rows see no key. */
static void test_empty_rows(void)
{
    RefAttn p = { 1, 5, 3, 2, 1, 4, 4, 1, 0.5, {0} };
    Rng r;
    rng_seed(&r, 5);
    AttnBufs a = attn_alloc(&p, &r);
    ref_attn_fwd(&p, a.q, a.k, a.v, a.o, a.lse, 3);
    int ok = 1;
    for (int h = 0; h < p.h_q; h++)
        for (int i = 0; i < 2; i++) {
            ok &= a.lse[h * p.s_q + i] == INFINITY;
            for (int c = 0; c < p.dv; c++)
                ok &= a.o[((size_t)i * p.h_q + h) * p.dv + c] == 0.0;
        }
    for (int h = 0; h < p.h_q; h++)
        ok &= isfinite(a.lse[h * p.s_q + 2]);
    check(ok, "causal s_q>s_k empty rows lse=+inf o=0", "wrong empty-row output");
    attn_free(&a);
    test_ref_vs_naive("causal s_q>s_k matches naive", p, 2);
}

static void test_thread_equality(void)
{
    RefAttn p = { 2, 37, 53, 4, 2, 20, 12, 1, 0.2, {0} };
    Rng r;
    rng_seed(&r, 3);
    AttnBufs a = attn_alloc(&p, &r);
    ref_attn_fwd(&p, a.q, a.k, a.v, a.o, a.lse, 1);
    int ok = 1;
    int counts[] = { 7, 0, 1000 };
    for (int t = 0; t < 3; t++) {
        ref_attn_fwd(&p, a.q, a.k, a.v, a.o2, a.lse2, counts[t]);
        ok &= memcmp(a.o, a.o2, a.no * sizeof(double)) == 0;
        ok &= memcmp(a.lse, a.lse2, a.nl * sizeof(double)) == 0;
    }
    check(ok, "ref single vs multi thread identical", "outputs differ");
    attn_free(&a);
    test_ref_vs_naive("GQA d!=dv multi-thread matches naive", p, 5);
}

/* Each row is seen once, each chunk has its own scratch; a scratch that
 * cannot be allocated is -1 with no row run, never an exit. */
typedef struct { int seen[97]; } RowsSeen;

static void mark_rows(void *ctx, long r0, long r1, void *scratch)
{
    RowsSeen *s = ctx;
    for (long r = r0; r < r1; r++) {
        ((long *)scratch)[0] = r;   /* a shared scratch would race here */
        s->seen[r] += ((long *)scratch)[0] == r;
    }
}

static void test_parallel_rows(void)
{
    RowsSeen s;
    memset(&s, 0, sizeof s);
    int rc = ref_parallel_rows(97, 5, sizeof(long), mark_rows, &s), ok = 1;
    for (int r = 0; r < 97; r++) ok &= s.seen[r] == 1;
    check(rc == 0 && ok, "ref_parallel_rows runs every row once", "rc %d", rc);
    memset(&s, 0, sizeof s);
    rc = ref_parallel_rows(97, 5, (size_t)-1 / 2, mark_rows, &s);
    ok = 1;
    for (int r = 0; r < 97; r++) ok &= s.seen[r] == 0;
    check(rc == -1 && ok, "ref_parallel_rows out of memory: -1, no row run", "rc %d", rc);
}

static void test_ref(void)
{
    RefAttn p = { 1, 3, 5, 2, 1, 4, 4, 0, 0.5, {0} };
    test_ref_vs_naive("ref tiny non-causal", p, 1);
    p.causal = 1;
    test_ref_vs_naive("ref tiny causal", p, 2);
    test_empty_rows();
    test_thread_equality();
}

/* ---- backward: gradients against central differences of the forward ---- */

static double loss(const RefAttn *p, const AttnBufs *a, const float *dout)
{
    ref_attn_fwd(p, a->q, a->k, a->v, a->o2, a->lse2, 1);
    double l = 0;
    for (size_t i = 0; i < a->no; i++) l += a->o2[i] * dout[i];
    return l;
}

/* d loss / d x[i] by a central difference over the float input itself. */
static double numeric_grad(const RefAttn *p, AttnBufs *a, const float *dout, float *x, size_t i)
{
    float keep = x[i], hi = keep + 1e-2f, lo = keep - 1e-2f;
    x[i] = hi;
    double lh = loss(p, a, dout);
    x[i] = lo;
    double ll = loss(p, a, dout);
    x[i] = keep;
    return (lh - ll) / ((double)hi - (double)lo);
}

static void test_ref_bwd_case(const char *name, RefAttn p)
{
    Rng r;
    rng_seed(&r, 7);
    AttnBufs a = attn_alloc(&p, &r);
    float *dout = rand_floats(&r, a.no);
    size_t nq = (size_t)p.b * p.s_q * p.h_q * p.d, nk = (size_t)p.b * p.s_k * p.h_kv * p.d,
           nv = (size_t)p.b * p.s_k * p.h_kv * p.dv;
    double *dq = calloc(nq, 8), *dk = calloc(nk, 8), *dv = calloc(nv, 8);
    ref_attn_bwd(&p, a.q, a.k, a.v, NULL, dout, dq, dk, dv, NULL, 3);
    double worst = 0;
    struct { float *x; double *g; size_t n; } t[3] = {{a.q, dq, nq}, {a.k, dk, nk}, {a.v, dv, nv}};
    for (int w = 0; w < 3; w++)
        for (int s = 0; s < 12; s++) {
            size_t i = (size_t)(rng_u64(&r) % t[w].n);
            double num = numeric_grad(&p, &a, dout, t[w].x, i), err = fabs(num - t[w].g[i]) / (fabs(num) + 0.05);
            if (err > worst) worst = err;
        }
    check(worst < 2e-3, name, "worst relative gap to the central difference %.3e", worst);
    free(dout), free(dq), free(dk), free(dv);
    attn_free(&a);
}

/* A block mask for b 2, 2 mask heads, 7 x 9 at blocks 3 x 4 (3 x 3 blocks), head types 0 1 2 1 (head 0 dense): row
 * block 1 of mask head 0 sees nothing, so rows 3-5 of heads 1 and 3 have no key. */
static const int32_t kBlocks[2 * 2 * 3 * 3] = {1, 0, 1, 0, 0, 0, 1, 1, 0,   0, 1, 1, 1, 0, 1, 0, 0, 1,
                                               0, 1, 0, 0, 0, 0, 1, 0, 1,   1, 1, 0, 0, 1, 0, 1, 1, 1};
static const int32_t kTypes[4] = {0, 1, 2, 1};
static const RefMask kMask = {kBlocks, kTypes, 2, 3, 3, 3, 4};

/* The masked reference row by row against the dense reference of that row alone over the keys the mask and causal
 * leave it, gathered by the definition (key j of row i: j <= i + s_k - s_q, its head dense or its block set). */
static void test_ref_mask_gathered(int causal)
{
    RefAttn p = {2, 7, 9, 4, 2, 8, 6, causal, 0.35, kMask};
    Rng r;
    rng_seed(&r, 5);
    AttnBufs a = attn_alloc(&p, &r);
    ref_attn_fwd(&p, a.q, a.k, a.v, a.o, a.lse, 2);
    float k1[9 * 8], v1[9 * 6];
    double o1[6], lse1, worst = 0;
    int empty = 0;
    for (int b = 0; b < 2; b++)
        for (int h = 0; h < 4; h++)
            for (int i = 0; i < 7; i++) {
                int n = 0, t = kTypes[h], hk = h / 2;
                for (int j = 0; j < 9; j++) {
                    int sees = (!causal || j <= i + 2) && (!t || kBlocks[((b * 2 + t - 1) * 3 + i / 3) * 3 + j / 4]);
                    if (!sees) continue;
                    memcpy(&k1[n * 8], &a.k[((size_t)(b * 9 + j) * 2 + hk) * 8], 8 * sizeof(float));
                    memcpy(&v1[n * 6], &a.v[((size_t)(b * 9 + j) * 2 + hk) * 6], 6 * sizeof(float));
                    n++;
                }
                size_t row = (size_t)(b * 7 + i) * 4 + h;
                const double *o = &a.o[row * 6], lse = a.lse[((size_t)b * 4 + h) * 7 + i];
                if (!n) {   /* the contract's empty row */
                    empty++;
                    for (int c = 0; c < 6; c++) worst = o[c] != 0 ? INFINITY : worst;
                    if (lse != INFINITY) worst = INFINITY;
                    continue;
                }
                RefAttn one = {1, 1, n, 1, 1, 8, 6, 0, 0.35, {0}};
                ref_attn_fwd(&one, &a.q[row * 8], k1, v1, o1, &lse1, 1);
                for (int c = 0; c < 6; c++) worst = fmax(worst, fabs(o[c] - o1[c]));
                worst = fmax(worst, fabs(lse - lse1));
            }
    check(worst < 1e-12 && empty >= 6, causal ? "ref block mask vs gathered rows, causal" : "ref block mask vs gathered rows",
          "max diff %.3e, %d empty rows", worst, empty);
    attn_free(&a);
}

static double rel_gap(const double *a, const double *b, size_t n)
{
    double d = 0, s = 0;
    for (size_t i = 0; i < n; i++) d += (a[i] - b[i]) * (a[i] - b[i]), s += b[i] * b[i];
    return sqrt(d / (s > 0 ? s : 1));
}

/* The backward's o input (what a kernel reads) is what delta takes: handed the reference's own O in float, the
 * gradients barely move; handed an O 1 % off, dq and dk move and dv (P^T dO, no delta) does not. */
static void test_ref_bwd_given_o(void)
{
    RefAttn p = {2, 7, 9, 4, 2, 8, 6, 1, 0.35, kMask};
    Rng r;
    rng_seed(&r, 21);
    AttnBufs a = attn_alloc(&p, &r);
    float *dout = rand_floats(&r, a.no), *fo = malloc(a.no * sizeof(float));
    size_t nq = (size_t)p.b * p.s_q * p.h_q * p.d, nk = (size_t)p.b * p.s_k * p.h_kv * p.d, nv = (size_t)p.b * p.s_k * p.h_kv * p.dv;
    double *g[3][3];
    for (int v = 0; v < 3; v++) g[v][0] = calloc(nq, 8), g[v][1] = calloc(nk, 8), g[v][2] = calloc(nv, 8);
    ref_attn_fwd(&p, a.q, a.k, a.v, a.o, a.lse, 1);
    ref_attn_bwd(&p, a.q, a.k, a.v, NULL, dout, g[0][0], g[0][1], g[0][2], NULL, 2);
    for (size_t i = 0; i < a.no; i++) fo[i] = (float)a.o[i];
    ref_attn_bwd(&p, a.q, a.k, a.v, fo, dout, g[1][0], g[1][1], g[1][2], NULL, 2);
    for (size_t i = 0; i < a.no; i++) fo[i] = (float)(1.01 * a.o[i]);
    ref_attn_bwd(&p, a.q, a.k, a.v, fo, dout, g[2][0], g[2][1], g[2][2], NULL, 2);
    double same = fmax(rel_gap(g[1][0], g[0][0], nq), rel_gap(g[1][1], g[0][1], nk));
    double moved = fmin(rel_gap(g[2][0], g[0][0], nq), rel_gap(g[2][1], g[0][1], nk));
    int dv_same = !memcmp(g[2][2], g[0][2], nv * 8) && !memcmp(g[1][2], g[0][2], nv * 8);
    check(same < 1e-6 && moved > 1e-3 && dv_same, "ref bwd: delta from the o handed in (its own O: the same; 1 % off: dq, "
          "dk move, dv does not)", "own O %.2e, 1 %% off %.2e, dv the same %d", same, moved, dv_same);
    for (int v = 0; v < 3; v++) free(g[v][0]), free(g[v][1]), free(g[v][2]);
    free(dout), free(fo);
    attn_free(&a);
}

static void test_ref_bwd(void)
{
    test_ref_bwd_case("ref bwd vs central differences: MHA non-causal", (RefAttn){1, 5, 7, 2, 2, 8, 8, 0, 0.4, {0}});
    test_ref_bwd_case("ref bwd vs central differences: GQA causal s_q<s_k d!=dv", (RefAttn){2, 4, 9, 4, 2, 8, 6, 1, 0.35, {0}});
    test_ref_bwd_case("ref bwd vs central differences: causal s_q>s_k (empty rows)", (RefAttn){1, 9, 4, 3, 1, 6, 6, 1, 0.5, {0}});
    test_ref_bwd_case("ref bwd vs central differences: block mask, GQA, causal", (RefAttn){2, 7, 9, 4, 2, 8, 6, 1, 0.35, kMask});
    test_ref_mask_gathered(0);
    test_ref_mask_gathered(1);
    test_ref_bwd_given_o();
}

/* ---- verify ---- */

static double *rand_ref(size_t n)
{
    Rng r;
    rng_seed(&r, 42);
    double *ref = malloc(sizeof *ref * n);
    if (!ref) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        ref[i] = rng_normal(&r);
    return ref;
}

static void test_verify_u16(void)
{
    const size_t n = 4096;
    double *ref = rand_ref(n);
    uint16_t *out = malloc(sizeof *out * n);
    if (!out)
        exit(1);
    for (size_t i = 0; i < n; i++)
        out[i] = f32_to_bf16((float)ref[i]);
    VerifyResult v = verify_u16(out, DT_BF16, ref, n, 5e-3, 0, 0);
    check(v.pass && v.first_bad == -1, "verify bf16 close match passes", "rel %.3e", v.rel_l2);
    verify_print("bf16 close", &v, 5e-3);

    out[100] = POISON_U16;
    v = verify_u16(out, DT_BF16, ref, n, 5e-3, 0, 0);
    check(!v.pass && v.n_unwritten == 1 && v.first_bad == 100, "verify catches poison",
          "pass %d unwritten %zu first %ld", v.pass, v.n_unwritten, v.first_bad);

    for (size_t i = 0; i < n; i++)
        out[i] = f32_to_fp16((float)ref[i]);
    v = verify_u16(out, DT_FP16, ref, n, 2.5e-3, 0, 0);
    check(v.pass, "verify fp16 close match passes", "rel %.3e", v.rel_l2);
    free(out);
    free(ref);
}

/* A heavy-tailed output (a dkv row that many slots select): a large element
 * rounded correctly to bf16 is no outlier however small the rms, and a small
 * element off by 20% of 1 still is one, though rel_l2 alone would pass it. */
static void test_verify_heavy_tail(void)
{
    const size_t n = 100000;
    double *ref = rand_ref(n);
    uint16_t *out = malloc(sizeof *out * n);
    if (!out)
        exit(1);
    for (size_t i = 0; i < n; i++)
        ref[i] *= 0.01;
    ref[500] = -22.0635497;   /* bf16 -22.125: off by 0.06, the limit from the rms alone is 0.035 */
    ref[900] = 1.0;
    for (size_t i = 0; i < n; i++)
        out[i] = f32_to_bf16((float)ref[i]);
    VerifyResult v = verify_u16(out, DT_BF16, ref, n, 1e-2, 0, 0);
    check(v.pass, "verify: a large element's own rounding is no outlier", "pass %d rel %.3e first %ld (out %g ref %g)",
          v.pass, v.rel_l2, v.first_bad, v.first_out, v.first_ref);
    out[900] = f32_to_bf16(1.2f);
    v = verify_u16(out, DT_BF16, ref, n, 1e-2, 0, 0);
    check(!v.pass && v.rel_l2 < 1e-2 && v.first_bad == 900, "verify: a small element 20% off is still an outlier",
          "pass %d rel %.3e first %ld", v.pass, v.rel_l2, v.first_bad);
    free(out);
    free(ref);
}

static void test_verify_f32(void)
{
    const size_t n = 100000;
    const double tol = 5e-3;
    double *ref = rand_ref(n);
    float *out = malloc(sizeof *out * n);
    if (!out)
        exit(1);
    for (size_t i = 0; i < n; i++)
        out[i] = (float)(ref[i] * (1.0 + 1e-4 * ((i % 7) - 3.0)));
    VerifyResult v = verify_f32(out, ref, n, tol, 0, 0);
    check(v.pass, "verify f32 close match passes", "rel %.3e", v.rel_l2);

    float keep = out[777];
    out[777] = NAN;
    v = verify_f32(out, ref, n, tol, 0, 0);
    check(!v.pass && v.n_bad_nonfinite == 1 && v.first_bad == 777, "verify catches NaN",
          "pass %d nonfinite %zu first %ld", v.pass, v.n_bad_nonfinite, v.first_bad);

    /* 100 x tol x rms on one of 1e5 elements: rel_l2 ~ tol/3 alone would pass. */
    out[777] = (float)(ref[777] + 100.0 * tol);
    v = verify_f32(out, ref, n, tol, 0, 0);
    check(!v.pass && v.rel_l2 < tol && v.first_bad == 777, "verify catches one outlier",
          "pass %d rel %.3e first %ld", v.pass, v.rel_l2, v.first_bad);
    out[777] = keep;

    /* Mostly exact zeros (a sparse dkv): the outlier scale is the rms of the
     * non-zero elements, so a correctly rounded large element passes. */
    for (size_t i = 0; i < n; i++)
        ref[i] = i % 100 ? 0.0 : ref[i], out[i] = (float)ref[i];
    ref[500] = 40.1, out[500] = bf16_to_f32(f32_to_bf16(40.1f));   /* 40.0: off by 0.1, 12 x tol x that rms */
    v = verify_f32(out, ref, n, tol, 1, 0);
    check(v.pass, "verify: exact zeros do not shrink the outlier scale", "pass %d rel %.3e first %ld", v.pass,
          v.rel_l2, v.first_bad);

    uint32_t poison = POISON_U32;
    memcpy(&out[5], &poison, sizeof poison);
    v = verify_f32(out, ref, n, tol, 0, 0);
    check(!v.pass && v.n_unwritten == 1 && v.first_bad == 5, "verify catches f32 poison",
          "pass %d unwritten %zu", v.pass, v.n_unwritten);
    free(out);
    free(ref);
}

static void test_verify_inf(void)
{
    double ref[4] = { 1.5, INFINITY, -0.5, 2.0 };
    float out[4] = { 1.5f, INFINITY, -0.5f, 2.0f };
    VerifyResult v = verify_f32(out, ref, 4, 1e-4, 0, 0);
    check(v.pass, "verify matching +inf passes", "rel %.3e nonfinite %zu", v.rel_l2,
          v.n_bad_nonfinite);
    out[1] = 3.0f;
    v = verify_f32(out, ref, 4, 1e-4, 0, 0);
    check(!v.pass && v.n_bad_nonfinite == 1 && v.first_bad == 1, "verify finite vs +inf fails",
          "pass %d", v.pass);
    out[1] = -INFINITY;
    v = verify_f32(out, ref, 4, 1e-4, 0, 0);
    check(!v.pass && v.n_bad_nonfinite == 1, "verify -inf vs +inf fails", "pass %d", v.pass);
    out[1] = INFINITY;
    out[3] = INFINITY;
    v = verify_f32(out, ref, 4, 1e-4, 0, 0);
    check(!v.pass && v.first_bad == 3, "verify inf vs finite fails", "pass %d", v.pass);
}

/* An empty row's reference is exactly 0: with exact_zeros only +-0 meets it. */
static void test_verify_exact_zeros(void)
{
    double ref[6] = { 0.5, 0.0, 0.0, -1.25, 0.0, 2.0 };
    uint16_t out[6];
    for (int i = 0; i < 6; i++)
        out[i] = f32_to_bf16((float)ref[i]);
    out[2] = 0x8000;   /* -0 */
    VerifyResult v = verify_u16(out, DT_BF16, ref, 6, 5e-3, 1, 0);
    check(v.pass, "verify exact zeros: +0 and -0 meet a zero reference", "not_zero %zu", v.n_not_zero);
    out[4] = f32_to_bf16(1e-30f);   /* far inside tolerance, but not 0 */
    v = verify_u16(out, DT_BF16, ref, 6, 5e-3, 1, 0);
    check(!v.pass && v.n_not_zero == 1 && v.first_bad == 4, "verify exact zeros: a tiny nonzero fails",
          "pass %d not_zero %zu first %ld", v.pass, v.n_not_zero, v.first_bad);
    verify_print("exact zeros", &v, 5e-3);
    v = verify_u16(out, DT_BF16, ref, 6, 5e-3, 0, 0);
    check(v.pass, "verify without exact zeros: a tiny nonzero passes", "pass %d", v.pass);
    float f[6] = { 0.5f, 0.0f, 0.0f, -1.25f, 1e-30f, 2.0f };
    v = verify_f32(f, ref, 6, 1e-4, 1, 0);
    check(!v.pass && v.n_not_zero == 1, "verify f32 exact zeros: a tiny nonzero fails", "pass %d", v.pass);
}

/* ---- the norm floor: gradients whose terms cancel (verify.h) ---- */

static double norm2(const double *v, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += v[i] * v[i];
    return sqrt(s);
}

/* What a kernel hands back: bf16(ref + an error of rms `noise` per element). */
static uint16_t *noisy_bf16(const double *ref, size_t n, double noise, uint64_t seed)
{
    Rng r;
    rng_seed(&r, seed);
    uint16_t *out = test_alloc(sizeof *out * n);
    for (size_t i = 0; i < n; i++)
        out[i] = f32_to_bf16((float)(ref[i] + noise * rng_normal(&r)));
    return out;
}

/* An attention backward problem: random inputs (a, dout) and room for its gradients. */
typedef struct { AttnBufs a; float *dout; double *dq, *dk, *dv; size_t nq, nk, nv; } BwdBufs;

static BwdBufs bwd_alloc(const RefAttn *p, uint64_t seed)
{
    Rng r;
    rng_seed(&r, seed);
    BwdBufs b = { .a = attn_alloc(p, &r) };
    b.dout = rand_floats(&r, b.a.no);
    b.nq = (size_t)p->b * p->s_q * p->h_q * p->d;
    b.nk = (size_t)p->b * p->s_k * p->h_kv * p->d;
    b.nv = (size_t)p->b * p->s_k * p->h_kv * p->dv;
    b.dq = test_alloc(b.nq * 8), b.dk = test_alloc(b.nk * 8), b.dv = test_alloc(b.nv * 8);
    return b;
}

static void bwd_free(BwdBufs *b)
{
    free(b->dout), free(b->dq), free(b->dk), free(b->dv);
    attn_free(&b->a);
}

/* Attention with one key: P = 1 and o = v, so dP = delta and dq, dk are
 * exactly 0 in float64, while their terms are not. A kernel's residue (the
 * fp32 rounding of dP - delta, ~1e-7 of the terms) passes under the floor,
 * and the line says so; an error of 1e-3 of the terms' norm fails. */
static void test_floor_one_key(void)
{
    RefAttn p = { 1, 9, 1, 4, 2, 16, 16, 0, 0.25, {0} };
    BwdBufs b = bwd_alloc(&p, 11);
    size_t nq = b.nq, nk = b.nk;
    double *dq = b.dq, *dk = b.dk, t2[3];
    int rc = ref_attn_bwd(&p, b.a.q, b.a.k, b.a.v, NULL, b.dout, dq, dk, b.dv, t2, 3);
    check(!rc && norm2(dq, nq) == 0 && norm2(dk, nk) == 0 && t2[0] > 0 && t2[1] > 0 && t2[2] == 0,
          "norm floor: attention with one key: dq and dk cancel to 0, their term norms do not (dv has none)",
          "rc %d ||dq|| %.3e ||dk|| %.3e term norms^2 %.3e %.3e %.3e", rc, norm2(dq, nq), norm2(dk, nk), t2[0], t2[1],
          t2[2]);
    struct { const char *name; const double *ref; size_t n; double t2; } g[2] = { { "dq", dq, nq, t2[0] },
                                                                             { "dk", dk, nk, t2[1] } };
    for (int i = 0; i < 2; i++) {
        double fl = verify_term_floor(g[i].t2), elem = sqrt(g[i].t2 / (double)g[i].n);
        uint16_t *out = noisy_bf16(g[i].ref, g[i].n, 1e-7 * elem, 3 + (uint64_t)i);
        VerifyResult v = verify_u16(out, DT_BF16, g[i].ref, g[i].n, 1e-2, 0, fl);
        char name[160];
        snprintf(name, sizeof name, "norm floor: a kernel's residue of a cancelled %s passes, judged by the floor", g[i].name);
        check(v.pass && v.norm_floor > v.ref_norm && v.rel_l2 < 1e-3, name, "pass %d rel %.3e floor %.3e ||ref|| %.3e",
              v.pass, v.rel_l2, v.norm_floor, v.ref_norm);
        if (i == 0)
            verify_print("cancelled dq", &v, 1e-2);   /* the line names the floor */
        free(out);
        out = noisy_bf16(g[i].ref, g[i].n, 1e-3 * elem, 5 + (uint64_t)i);   /* an error of 1e-3 ||T|| */
        v = verify_u16(out, DT_BF16, g[i].ref, g[i].n, 1e-2, 0, fl);
        snprintf(name, sizeof name, "norm floor: an error of 1e-3 of the terms' norm in a cancelled %s fails", g[i].name);
        check(!v.pass && v.rel_l2 > 0.5, name, "pass %d rel %.3e", v.pass, v.rel_l2);
        free(out);
    }
    bwd_free(&b);
}

/* Sparse MLA with every valid slot on kv row 0 (s_kv 1): dq cancels to
 * float64 noise, not to 0, so without the floor a kernel's residue fails
 * (the bug). Token 2 has no valid slot: its dq rows must stay exactly 0,
 * and NaN or unwritten elements fail, floor or not. */
static void test_floor_one_row(void)
{
    enum { SQ = 3, H = 4, TOPK = 8, DQK = 24, DV = 16 };
    const int32_t idx[SQ * TOPK] = { 0, -1, 0, 0, 5, 0, 0, 0,   0, 0, 0, 0, 0, 0, 0, 0,
                                     -1, -1, 1, 7, -1, -1, -1, INT32_MIN };
    RefMla p = { SQ, 1, H, TOPK, DQK, DV, 0.3, idx, NULL };
    Rng r;
    rng_seed(&r, 12);
    size_t nq = (size_t)SQ * H * DQK, per_token = (size_t)H * DQK;
    float *q = rand_floats(&r, nq), *kv = rand_floats(&r, DQK), *dout = rand_floats(&r, (size_t)SQ * H * DV);
    double *dq = test_alloc(nq * 8), dkv[DQK], t2[2];
    int rc = ref_mla_bwd(&p, q, kv, NULL, dout, dq, dkv, t2, 2), empty = 1;
    for (size_t i = 2 * per_token; i < nq; i++)
        empty &= dq[i] == 0;
    double ratio = norm2(dq, nq) / sqrt(t2[0]), fl = verify_term_floor(t2[0]);
    check(!rc && ratio < 1e-12 && empty && t2[1] == 0,
          "norm floor: mla with every slot on one kv row: ||dq|| / ||T|| below 1e-12 (float64 noise), the empty token 0",
          "rc %d ratio %.3e empty token's rows 0: %d, dkv's term norm^2 %.3e", rc, ratio, empty, t2[1]);
    for (size_t i = 0; i < 2 * per_token; i++)   /* zeros by cancellation are no exact zeros (problem.c mark_cancellations) */
        dq[i] = dq[i] == 0 ? DBL_TRUE_MIN : dq[i];
    double elem = sqrt(t2[0] / (double)(2 * per_token));
    uint16_t *out = noisy_bf16(dq, nq, 1e-7 * elem, 7);
    for (size_t i = 2 * per_token; i < nq; i++)
        out[i] = 0;   /* the kernel writes the empty token's rows 0 */
    VerifyResult v = verify_u16(out, DT_BF16, dq, nq, 1e-2, 1, fl);
    check(v.pass && v.norm_floor > v.ref_norm, "norm floor: mla residue of a cancelled dq passes, exact zeros met",
          "pass %d rel %.3e not_zero %zu first %ld", v.pass, v.rel_l2, v.n_not_zero, v.first_bad);
    v = verify_u16(out, DT_BF16, dq, nq, 1e-2, 1, 0);
    check(!v.pass && v.rel_l2 > 1e3, "norm floor: without it the same residue fails (the bug it fixes)",
          "pass %d rel %.3e", v.pass, v.rel_l2);
    out[2 * per_token + 5] = f32_to_bf16(1e-30f);
    v = verify_u16(out, DT_BF16, dq, nq, 1e-2, 1, fl);
    check(!v.pass && v.n_not_zero == 1, "norm floor: the empty token's dq must still be exactly 0",
          "pass %d not_zero %zu", v.pass, v.n_not_zero);
    out[2 * per_token + 5] = 0;
    out[7] = f32_to_bf16(NAN);
    v = verify_u16(out, DT_BF16, dq, nq, 1e-2, 1, fl);
    check(!v.pass && v.n_bad_nonfinite == 1, "norm floor: a NaN still fails", "pass %d", v.pass);
    out[7] = POISON_U16;
    v = verify_u16(out, DT_BF16, dq, nq, 1e-2, 1, fl);
    check(!v.pass && v.n_unwritten == 1, "norm floor: an unwritten element still fails", "pass %d", v.pass);
    free(out), free(q), free(kv), free(dout), free(dq);
}

/* Random inputs: ||ref|| / ||T|| far above 2^-10, so the floor judges
 * nothing and a correctly rounded output's line carries no floor note. */
static void test_floor_inactive(void)
{
    enum { SQ = 6, SKV = 200, H = 8, TOPK = 64, DQK = 64, DV = 48 };
    Rng r;
    rng_seed(&r, 13);
    int32_t *idx = test_alloc(sizeof *idx * SQ * TOPK);
    mla_draw_indices(&r, SQ, SKV, TOPK, idx);
    RefMla p = { SQ, SKV, H, TOPK, DQK, DV, 1.0 / sqrt((double)DQK), idx, NULL };
    size_t nq = (size_t)SQ * H * DQK;
    float *q = rand_floats(&r, nq), *kv = rand_floats(&r, (size_t)SKV * DQK), *dout = rand_floats(&r, (size_t)SQ * H * DV);
    double *dq = test_alloc(nq * 8), *dkv = test_alloc((size_t)SKV * DQK * 8), t2[2];
    ref_mla_bwd(&p, q, kv, NULL, dout, dq, dkv, t2, 2);
    double ratio = norm2(dq, nq) / sqrt(t2[0]);
    uint16_t *out = noisy_bf16(dq, nq, 0, 1);
    VerifyResult v = verify_u16(out, DT_BF16, dq, nq, 1e-2, 1, verify_term_floor(t2[0]));
    char name[160];
    snprintf(name, sizeof name, "norm floor: inactive on random mla inputs (||dq|| / ||T|| = %.3f, 10x 2^-10 at least)",
             ratio);
    check(ratio > 10 * VERIFY_TERM_KAPPA && v.pass && v.norm_floor < v.ref_norm, name, "ratio %.3e pass %d", ratio,
          v.pass);
    free(idx), free(q), free(kv), free(dout), free(dq), free(dkv), free(out);
}

/* The outlier scale under the floor is the floor spread evenly: one element
 * of an all-zero reference off by 60 x tol x floor / sqrt(n) fails although
 * rel_l2 passes; off by 40 x, it passes. */
static void test_floor_outlier(void)
{
    const size_t n = 100000;
    const double tol = 1e-2, fl = 1.0, unit = tol * fl / sqrt((double)n);
    double *ref = calloc(n, sizeof *ref);
    float *out = calloc(n, sizeof *out);
    if (!ref || !out)
        exit(1);
    out[321] = (float)(60 * unit);
    VerifyResult v = verify_f32(out, ref, n, tol, 0, fl);
    check(!v.pass && v.rel_l2 < tol && v.first_bad == 321, "norm floor: an outlier of 60 x tol x the floor's rms fails",
          "pass %d rel %.3e first %ld", v.pass, v.rel_l2, v.first_bad);
    out[321] = (float)(40 * unit);
    v = verify_f32(out, ref, n, tol, 0, fl);
    check(v.pass, "norm floor: 40 x tol x the floor's rms is no outlier", "pass %d rel %.3e first %ld", v.pass, v.rel_l2,
          v.first_bad);
    free(ref), free(out);
}

/* Each row's term norm comes from the one thread that ran it, summed in row
 * order afterwards: the total is bit for bit the same for any thread count. */
static void test_floor_threads(void)
{
    RefAttn p = { 2, 37, 53, 4, 2, 20, 12, 1, 0.2, {0} };
    BwdBufs b = bwd_alloc(&p, 14);
    double first[3], again[3];
    int ok = !ref_attn_bwd(&p, b.a.q, b.a.k, b.a.v, NULL, b.dout, b.dq, b.dk, b.dv, first, 1);
    int counts[] = { 2, 5, 7, 0 };
    for (int t = 0; t < 4; t++) {
        ok &= !ref_attn_bwd(&p, b.a.q, b.a.k, b.a.v, NULL, b.dout, b.dq, b.dk, b.dv, again, counts[t]);
        ok &= memcmp(first, again, sizeof first) == 0;
    }
    check(ok && first[0] > 0 && first[1] > 0, "norm floor: attention term norms identical for 1, 2, 5, 7 and all threads",
          "differ (or zero): %.17g %.17g", first[0], first[1]);
    bwd_free(&b);
}

int main(void)
{
    test_known_values();
    test_nan();
    test_exhaustive_roundtrip(DT_BF16, "bf16 all codes round-trip");
    test_exhaustive_roundtrip(DT_FP16, "fp16 all codes round-trip");
    test_random_rounding(DT_BF16, "bf16 random floats round to nearest even");
    test_random_rounding(DT_FP16, "fp16 random floats round to nearest even");
    test_rng();
    test_parallel_rows();
    test_ref();
    test_ref_bwd();
    test_verify_u16();
    test_verify_heavy_tail();
    test_verify_f32();
    test_verify_inf();
    test_verify_exact_zeros();
    test_floor_one_key();
    test_floor_one_row();
    test_floor_inactive();
    test_floor_outlier();
    test_floor_threads();
    return check_summary();
}
