/* The sim's .approx instructions against a GPU's.
 *
 * The ISA gives ex2, lg2, rcp, sqrt, rsqrt, sin, cos and tanh .approx an error bound, not a value; the sim
 * rounds the exact result. Each instruction here runs over a fixed set of inputs (the edges of its type: +-0,
 * subnormals, the smallest normal, +-1, +-inf, NaNs, the arguments where results overflow or go subnormal, and
 * values in between), one thread an input. Sim and GPU must give the same class for every result (NaN, +inf,
 * -inf, +0, -0, a number: .ftz and the special cases are exact rules; under an absolute bound a zero counts as a
 * number), and numbers within the instruction's bound (kOps: the ISA's bound and an ulp of the sim's rounding,
 * relative to the GPU's value, or absolute where the bound is, or near zero the smallest subnormal's few ulps)
 * inside the range the bound holds for; outside it the class alone.
 *
 * tests/approx.golden holds a GPU's outputs (--device cuda --write FILE on the GPU its header names).
 *
 *   test_approx                                   the golden file against the sim
 *   test_approx --device cuda|sim --write FILE    run every instruction, write its outputs */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "device.h"
#include "golden_dev.h"

#define GOLDEN "tests/approx.golden"
enum { N = 128 };   /* inputs (threads) an instruction */

/* rel: relative bound; abs: absolute bound (the larger applies), times max(1, |x|) where abs_x; lo..hi: the
 * inputs the bound holds for */
typedef struct { const char *insn; int f64; double rel, abs, lo, hi; int abs_x; } Op;
#define ULP32 0x1p-23
static const Op kOps[] = {
    {"ex2.approx.f32", 0, 0x1p-22 + ULP32, 0, -INFINITY, INFINITY, 0},   /* 2 ulp */
    {"ex2.approx.ftz.f32", 0, 0x1p-22 + ULP32, 0, -INFINITY, INFINITY, 0},
    {"lg2.approx.f32", 0, 0x1p-22 + ULP32, 0x1p-22, -INFINITY, INFINITY, 0},   /* 2^-22.6 absolute near 1, else relative */
    {"lg2.approx.ftz.f32", 0, 0x1p-22 + ULP32, 0x1p-22, -INFINITY, INFINITY, 0},
    {"rcp.approx.f32", 0, 0x1p-23 + ULP32, 0, -INFINITY, INFINITY, 0},   /* 1 ulp */
    {"rcp.approx.ftz.f32", 0, 0x1p-23 + ULP32, 0, -INFINITY, INFINITY, 0},
    {"sqrt.approx.f32", 0, 0x1p-23 + ULP32, 0, -INFINITY, INFINITY, 0},
    {"sqrt.approx.ftz.f32", 0, 0x1p-23 + ULP32, 0, -INFINITY, INFINITY, 0},
    {"rsqrt.approx.f32", 0, 0x1p-22 + ULP32, 0, -INFINITY, INFINITY, 0},
    {"rsqrt.approx.ftz.f32", 0, 0x1p-22 + ULP32, 0, -INFINITY, INFINITY, 0},
    /* about 2^-21 absolute near 0; the argument is reduced in f32, so the error grows with |x| (1.1e-5 at 100) */
    {"sin.approx.f32", 0, 0, 0x1p-20, -100 * M_PI, 100 * M_PI, 1},
    {"sin.approx.ftz.f32", 0, 0, 0x1p-20, -100 * M_PI, 100 * M_PI, 1},
    {"cos.approx.f32", 0, 0, 0x1p-20, -100 * M_PI, 100 * M_PI, 1},
    {"cos.approx.ftz.f32", 0, 0, 0x1p-20, -100 * M_PI, 100 * M_PI, 1},
    {"tanh.approx.f32", 0, 0x1p-10, 0, -INFINITY, INFINITY, 0},   /* 2^-10.987 relative */
    /* the .ftz f64 forms: the operand's upper word alone, the result's lower word zero: 2^-20.3 measured, and the
     * sim's rounding to that word 2^-21; rsqrt.approx.f64 (no .ftz) is exact to an ulp on the H100 */
    {"rcp.approx.ftz.f64", 1, 0x1p-19, 0, -INFINITY, INFINITY, 0},
    {"rsqrt.approx.f64", 1, 0x1p-50, 0, -INFINITY, INFINITY, 0},
    {"rsqrt.approx.ftz.f64", 1, 0x1p-19, 0, -INFINITY, INFINITY, 0},
};
enum { NOPS = (int)(sizeof kOps / sizeof kOps[0]) };

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint64_t d2u(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static double u2d(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

/* Input i of an f32 or f64 instruction: the edges, then values spread over the ranges that matter (a fixed
 * stream, the same on every host) */
static uint64_t input(int f64, int i)
{
    static const double edge[] = {0, -0.0, 1, -1, 0.5, 2, 3, -3, 10, 100, 126, 127, 127.99, 128, 129, -126, -127,
                                  -149, -150, -151, -1022, -1074, -1075, 1023, 1024, 1e30, -1e30, 0.75, 1.5, 1e-3,
                                  M_PI, -M_PI, M_PI / 2, 100 * M_PI, -100 * M_PI, 101 * M_PI, 1e6, 0.01, 1e-10, 20,
                                  -20, 8, 9, 0.9999999, 1.0000001, INFINITY, -INFINITY, NAN};
    int ne = (int)(sizeof edge / sizeof edge[0]);
    if (i < ne) return f64 ? d2u(edge[i]) : f2u((float)edge[i]);
    static const uint32_t bits32[] = {0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000,
                                      0x7F7FFFFF, 0xFF7FFFFF, 0x7FC00000, 0xFFC00001, 0x7F800001, 0x00400000};
    static const uint64_t bits64[] = {0x0000000000000001ull, 0x8000000000000001ull, 0x000FFFFFFFFFFFFFull,
                                      0x0010000000000000ull, 0x7FEFFFFFFFFFFFFFull, 0xFFEFFFFFFFFFFFFFull,
                                      0x7FF8000000000000ull, 0xFFF8000000000001ull, 0x7FF0000000000001ull,
                                      0x3810000000000000ull, 0x37F0000000000000ull, 0x47EFFFFFE0000000ull};
    int nb = 12;
    if (i < ne + nb) return f64 ? bits64[i - ne] : bits32[i - ne];
    /* the rest: +-2^e m for e over the type's exponents and m in [1, 2), by a fixed recurrence */
    int k = i - ne - nb;
    double m = 1 + (double)((k * 2654435761u) % 1000u) / 1000, e = f64 ? -1070 + (k * 67) % 2140 : -150 + (k * 7) % 300;
    double v = ldexp(m, (int)e) * (k % 2 ? -1 : 1);
    if (k % 5 == 0) v = (k % 3 - 1) * 200.0 * m;   /* some in the ranges of sin, cos, ex2 and tanh */
    return f64 ? d2u(v) : f2u((float)v);
}

static int ptx_of(const Op *op, char *out, size_t cap)
{
    const char *r = op->f64 ? "fd" : "f", *w = op->f64 ? "64" : "32";
    int n = snprintf(out, cap,
                     ".version 8.8\n.target sm_90\n.address_size 64\n\n.visible .entry k(.param .u64 in, .param .u64 out)\n{\n"
                     "\t.reg .b32 %%r<2>;\n\t.reg .b64 %%rd<6>;\n\t.reg .f%s %%%s<3>;\n"
                     "\tld.param.u64 %%rd1, [in];\n\tld.param.u64 %%rd2, [out];\n\tcvta.to.global.u64 %%rd1, %%rd1;\n"
                     "\tcvta.to.global.u64 %%rd2, %%rd2;\n\tmov.u32 %%r1, %%tid.x;\n\tmul.wide.u32 %%rd3, %%r1, %d;\n"
                     "\tadd.s64 %%rd4, %%rd1, %%rd3;\n\tadd.s64 %%rd5, %%rd2, %%rd3;\n\tld.global.f%s %%%s1, [%%rd4];\n"
                     "\t%s %%%s2, %%%s1;\n\tst.global.f%s [%%rd5], %%%s2;\n\tret;\n}\n",
                     w, r, op->f64 ? 8 : 4, w, r, op->insn, r, r, w, r);
    return n < 0 || (size_t)n >= cap;
}

/* Runs op over its N inputs on dev; out[t] the result bits */
static int run_op(Device *dev, const Op *op, uint64_t out[N], char *err, size_t cap)
{
    char ptx[2048];
    if (ptx_of(op, ptx, sizeof ptx)) return snprintf(err, cap, "the program outgrew its buffer"), 1;
    size_t w = op->f64 ? 8 : 4;
    unsigned char in[8 * N], o[8 * N];
    for (int t = 0; t < N; t++) {
        uint64_t v = input(op->f64, t);
        memcpy(in + w * (size_t)t, &v, w);   /* little-endian: the low bytes */
    }
    int rc = golden_run(dev, ptx, N, in, w * N, o, w * N, err, cap);
    for (int t = 0; !rc && t < N; t++) {
        out[t] = 0;
        memcpy(&out[t], o + w * (size_t)t, w);
    }
    return rc;
}

/* 0 NaN, 1 +inf, 2 -inf, 3 +0, 4 -0, 5 a number */
static int cls(double v) { return isnan(v) ? 0 : isinf(v) ? (v > 0 ? 1 : 2) : v == 0 ? (signbit(v) ? 4 : 3) : 5; }
static const char *cls_name(int c) { static const char *const n[] = {"NaN", "+inf", "-inf", "+0", "-0", "a number"}; return n[c]; }

/* The golden file against the sim: one check per instruction, naming the first input that differs */
static int against_golden(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) { check(0, "approx golden file", "cannot read %s", path); return check_summary(); }
    char err[512], line[8192];
    Device *dev = NULL;
    if (dev_open(&dev, "sim", 0, err, sizeof err)) { check(0, "approx sim", "%s", err); fclose(f); return check_summary(); }
    int ops = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n') continue;
        char name[64];
        int used = 0;
        if (sscanf(line, "%63s%n", name, &used) != 1) continue;
        const Op *op = NULL;
        for (int i = 0; i < NOPS; i++)
            if (!strcmp(kOps[i].insn, name)) op = &kOps[i];
        char what[128];
        snprintf(what, sizeof what, "approx: %s on the sim against the GPU", name);
        uint64_t want[N], got[N];
        char *p = line + used, *end;
        int n = 0;
        for (; n < N; n++, p = end) {
            want[n] = strtoull(p, &end, 16);
            if (end == p) break;
        }
        if (!op || n != N) { check(0, what, "the golden line is malformed or names an instruction this test lacks"); continue; }
        ops++;
        if (run_op(dev, op, got, err, sizeof err)) { check(0, what, "%s", err); continue; }
        double worst = 0;
        int bad = -1;
        for (int t = 0; t < N && bad < 0; t++) {
            double x = op->f64 ? u2d(input(1, t)) : u2f((uint32_t)input(0, t));
            double g = op->f64 ? u2d(want[t]) : u2f((uint32_t)want[t]), s = op->f64 ? u2d(got[t]) : u2f((uint32_t)got[t]);
            /* a NaN or infinity must match; so must a zero where the bound is relative (flushes and underflow are
             * exact rules), while under an absolute bound a zero is a number like any other (cos(pi/2): the GPU's
             * 0 against the sim's -4.4e-8), and outside the bound's range (sin(1e30)) any number will do */
            int cg = cls(g), cs = cls(s), in = x >= op->lo && x <= op->hi;
            if (op->abs > 0 && cg >= 3 && cs >= 3) cg = cs = 5;
            if (cg != cs) { bad = t; break; }
            if (cg != 5 || !in) continue;
            double floor_abs = op->f64 ? 0x1p-1070 : 0x1p-147;   /* a few ulps of the smallest subnormal */
            double tol = fmax(fmax(op->rel * fabs(g), op->abs * (op->abs_x ? fmax(1, fabs(x)) : 1)), floor_abs), e = fabs(s - g);
            if (e > tol) bad = t;
            worst = fmax(worst, e / tol);
        }
        if (bad >= 0) {
            double x = op->f64 ? u2d(input(1, bad)) : u2f((uint32_t)input(0, bad));
            double g = op->f64 ? u2d(want[bad]) : u2f((uint32_t)want[bad]), s = op->f64 ? u2d(got[bad]) : u2f((uint32_t)got[bad]);
            check(0, what, "input %a (0x%llx): GPU %a (%s), sim %a (%s)", x, (unsigned long long)input(op->f64, bad), g,
                  cls_name(cls(g)), s, cls_name(cls(s)));
        } else {
            check(1, what, " ");
            printf("  worst error %.3f of the bound\n", worst);
        }
    }
    fclose(f);
    check(ops == NOPS, "approx golden file holds every instruction", "it holds %d of %d", ops, NOPS);
    dev_close(dev);
    return check_summary();
}

int main(int argc, char **argv)
{
    const char *kind = NULL, *write = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) kind = argv[++i];
        else if (!strcmp(argv[i], "--write") && i + 1 < argc) write = argv[++i];
        else {
            fprintf(stderr, "test_approx: unknown argument %s (see the file's head)\n", argv[i]);
            return 2;
        }
    }
    if (!kind && !write) return against_golden(GOLDEN);
    if (!kind || !write) { fprintf(stderr, "test_approx: --device and --write go together\n"); return 2; }
    char err[512], what[128];
    FILE *f = NULL;
    snprintf(what, sizeof what, "per instruction the bits of its %d results (the inputs are test_approx.c's)", N);
    Device *dev = golden_open("test_approx", kind, write, what, &f);
    if (!dev) return 1;
    int failed = 0;
    for (int i = 0; i < NOPS; i++) {
        uint64_t out[N];
        if (run_op(dev, &kOps[i], out, err, sizeof err)) {
            fprintf(stderr, "%s: %s\n", kOps[i].insn, err);
            failed++;
            continue;
        }
        fprintf(f, "%s", kOps[i].insn);
        for (int t = 0; t < N; t++) fprintf(f, " %llx", (unsigned long long)out[t]);
        fprintf(f, "\n");
    }
    fclose(f);
    dev_close(dev);
    printf("%d instructions, %d failed to run\n", NOPS, failed);
    return failed != 0;
}
