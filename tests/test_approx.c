/* The sim's .approx instructions against a GPU's.
 *
 * The ISA gives ex2, lg2, rcp, sqrt, rsqrt, sin, cos and tanh .approx an error bound, not a value; the sim
 * rounds the exact result. Each instruction (f32, f64, and ex2 and tanh on f16, bf16 and their pairs, a pair's
 * halves two inputs) here runs over a fixed set of inputs (the edges of its type: +-0,
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
 *   test_approx --device cuda|sim --write FILE    run every instruction, write its outputs
 *   test_approx [--seed N] --dump DIR             write every instruction's program for ptxas (make test's probes;
 *                                                 the inputs are fixed, so --seed changes nothing) */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "dtype.h"
#include "device.h"
#include "golden_dev.h"

#define GOLDEN "tests/approx.golden"
enum { N = 128 };   /* inputs (threads) an instruction */

/* The operand and result type: its width in bytes and the halves a register holds */
typedef enum { F32, F64, F16, BF16, F16X2, BF16X2 } Ty;
static int ty_bytes(Ty t) { return t == F64 ? 8 : t == F16 || t == BF16 ? 2 : 4; }
static int ty_lanes(Ty t) { return t == F16X2 || t == BF16X2 ? 2 : 1; }
static int ty_half(Ty t) { return t >= F16; }
static int ty_bf(Ty t) { return t == BF16 || t == BF16X2; }

/* rel: relative bound; abs: absolute bound (the larger applies), times max(1, |x|) where abs_x; lo..hi: the
 * inputs the bound holds for */
typedef struct { const char *insn; Ty ty; double rel, abs, lo, hi; int abs_x; } Op;
#define ULP32 0x1p-23
#define ULP16 0x1p-10   /* an ulp of f16 (relative, at most), the sim's rounding and the GPU's together */
#define ULPB16 0x1p-7
static const Op kOps[] = {
    {"ex2.approx.f32", F32, 0x1p-22 + ULP32, 0, -INFINITY, INFINITY, 0},   /* 2 ulp */
    {"ex2.approx.ftz.f32", F32, 0x1p-22 + ULP32, 0, -INFINITY, INFINITY, 0},
    {"lg2.approx.f32", F32, 0x1p-22 + ULP32, 0x1p-22, -INFINITY, INFINITY, 0},   /* 2^-22.6 absolute near 1, else relative */
    {"lg2.approx.ftz.f32", F32, 0x1p-22 + ULP32, 0x1p-22, -INFINITY, INFINITY, 0},
    {"rcp.approx.f32", F32, 0x1p-23 + ULP32, 0, -INFINITY, INFINITY, 0},   /* 1 ulp */
    {"rcp.approx.ftz.f32", F32, 0x1p-23 + ULP32, 0, -INFINITY, INFINITY, 0},
    {"sqrt.approx.f32", F32, 0x1p-23 + ULP32, 0, -INFINITY, INFINITY, 0},
    {"sqrt.approx.ftz.f32", F32, 0x1p-23 + ULP32, 0, -INFINITY, INFINITY, 0},
    {"rsqrt.approx.f32", F32, 0x1p-22 + ULP32, 0, -INFINITY, INFINITY, 0},
    {"rsqrt.approx.ftz.f32", F32, 0x1p-22 + ULP32, 0, -INFINITY, INFINITY, 0},
    /* about 2^-21 absolute near 0; the argument is reduced in f32, so the error grows with |x| (1.1e-5 at 100) */
    {"sin.approx.f32", F32, 0, 0x1p-20, -100 * M_PI, 100 * M_PI, 1},
    {"sin.approx.ftz.f32", F32, 0, 0x1p-20, -100 * M_PI, 100 * M_PI, 1},
    {"cos.approx.f32", F32, 0, 0x1p-20, -100 * M_PI, 100 * M_PI, 1},
    {"cos.approx.ftz.f32", F32, 0, 0x1p-20, -100 * M_PI, 100 * M_PI, 1},
    {"tanh.approx.f32", F32, 0x1p-10, 0, -INFINITY, INFINITY, 0},   /* 2^-10.987 relative */
    /* the .ftz f64 forms: the operand's upper word alone, the result's lower word zero: 2^-20.3 measured, and the
     * sim's rounding to that word 2^-21; rsqrt.approx.f64 (no .ftz) is exact to an ulp on the H100 */
    {"rcp.approx.ftz.f64", F64, 0x1p-19, 0, -INFINITY, INFINITY, 0},
    {"rsqrt.approx.f64", F64, 0x1p-50, 0, -INFINITY, INFINITY, 0},
    {"rsqrt.approx.ftz.f64", F64, 0x1p-19, 0, -INFINITY, INFINITY, 0},
    /* the 16-bit forms: ex2 2^-9.9 relative (f16; subnormals kept) and 2^-7 (bf16, .ftz only), tanh 2^-10.987
     * (f16) and 2^-8 (bf16) absolute, each with an ulp of the type for the two roundings */
    {"ex2.approx.f16", F16, 1.0467e-3 + ULP16, 0, -INFINITY, INFINITY, 0},
    {"ex2.approx.f16x2", F16X2, 1.0467e-3 + ULP16, 0, -INFINITY, INFINITY, 0},
    {"ex2.approx.ftz.bf16", BF16, 0x1p-7 + ULPB16, 0, -INFINITY, INFINITY, 0},
    {"ex2.approx.ftz.bf16x2", BF16X2, 0x1p-7 + ULPB16, 0, -INFINITY, INFINITY, 0},
    {"tanh.approx.f16", F16, ULP16, 4.9271e-4, -INFINITY, INFINITY, 0},
    {"tanh.approx.f16x2", F16X2, ULP16, 4.9271e-4, -INFINITY, INFINITY, 0},
    {"tanh.approx.bf16", BF16, ULPB16, 0x1p-8, -INFINITY, INFINITY, 0},
    {"tanh.approx.bf16x2", BF16X2, ULPB16, 0x1p-8, -INFINITY, INFINITY, 0},
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

/* Input i of an f16 (bf: bf16) lane, as input() for its type: where ex2 overflows (16; 128) and goes subnormal
 * and under (-14 .. -25; -126 .. -134), where tanh saturates, the type's own subnormals, largest value and NaNs */
static uint16_t input16(int bf, int i)
{
    static const double edge[] = {0, -0.0, 1, -1, 0.5, 2, 3, -3, 4, -4.5, 10, 15, 15.99, 16, 17, -14, -15, -24, -24.5,
                                  -25, -26, 127, 128, -126, -127, -133, -134, 0.75, 1.5, 1e-3, 0.01, 20, -20, 8, 9,
                                  0.3, -0.7, INFINITY, -INFINITY, NAN};
    int ne = (int)(sizeof edge / sizeof edge[0]);
    if (i < ne) return bf ? f32_to_bf16((float)edge[i]) : f32_to_fp16((float)edge[i]);
    static const uint16_t h[] = {0x0001, 0x8001, 0x03FF, 0x83FF, 0x0400, 0x8400, 0x7BFF, 0xFBFF, 0x7E00, 0xFE01, 0x7C01};
    static const uint16_t b[] = {0x0001, 0x8001, 0x007F, 0x807F, 0x0080, 0x8080, 0x7F7F, 0xFF7F, 0x7FC0, 0xFFC1, 0x7F81};
    int nb = 11;
    if (i < ne + nb) return bf ? b[i - ne] : h[i - ne];
    int k = i - ne - nb;
    double m = 1 + (double)((k * 2654435761u) % 1000u) / 1000, e = bf ? -136 + (k * 7) % 264 : -26 + (k * 3) % 42;
    double v = ldexp(m, (int)e) * (k % 2 ? -1 : 1);
    if (k % 3 == 0) v = (k % 5 - 2) * 6.0 * m;   /* most within the ranges of ex2 and tanh */
    return bf ? f32_to_bf16((float)v) : f32_to_fp16((float)v);
}

/* Thread t's operand register: a pair's halves are inputs t and N - 1 - t, so each input meets both halves */
static uint64_t operand(Ty ty, int t)
{
    if (!ty_half(ty)) return input(ty == F64, t);
    uint64_t lo = input16(ty_bf(ty), t);
    return ty_lanes(ty) == 2 ? lo | (uint64_t)input16(ty_bf(ty), N - 1 - t) << 16 : lo;
}

/* Lane l of a register of type ty as a double */
static double lane_value(Ty ty, uint64_t reg, int l)
{
    if (ty == F64) return u2d(reg);
    if (ty == F32) return u2f((uint32_t)reg);
    uint16_t h = (uint16_t)(reg >> (16 * l));
    return ty_bf(ty) ? bf16_to_f32(h) : fp16_to_f32(h);
}

static int ptx_of(const Op *op, char *out, size_t cap)
{
    static const char *const reg[] = {".f32 %%f", ".f64 %%fd", ".b16 %%h", ".b16 %%h", ".b32 %%x", ".b32 %%x"};
    static const char *const name[] = {"%%f", "%%fd", "%%h", "%%h", "%%x", "%%x"};
    static const char *const mem[] = {"f32", "f64", "b16", "b16", "b32", "b32"};
    char fmt[1024];
    snprintf(fmt, sizeof fmt,
             ".version 8.8\n.target sm_90\n.address_size 64\n\n.visible .entry k(.param .u64 in, .param .u64 out)\n{\n"
             "\t.reg .b32 %%%%r<2>;\n\t.reg .b64 %%%%rd<6>;\n\t.reg %s<3>;\n"
             "\tld.param.u64 %%%%rd1, [in];\n\tld.param.u64 %%%%rd2, [out];\n\tcvta.to.global.u64 %%%%rd1, %%%%rd1;\n"
             "\tcvta.to.global.u64 %%%%rd2, %%%%rd2;\n\tmov.u32 %%%%r1, %%%%tid.x;\n\tmul.wide.u32 %%%%rd3, %%%%r1, %d;\n"
             "\tadd.s64 %%%%rd4, %%%%rd1, %%%%rd3;\n\tadd.s64 %%%%rd5, %%%%rd2, %%%%rd3;\n\tld.global.%s %s1, [%%%%rd4];\n"
             "\t%%s %s2, %s1;\n\tst.global.%s [%%%%rd5], %s2;\n\tret;\n}\n",
             reg[op->ty], ty_bytes(op->ty), mem[op->ty], name[op->ty], name[op->ty], name[op->ty], mem[op->ty], name[op->ty]);
    int n = snprintf(out, cap, fmt, op->insn);
    return n < 0 || (size_t)n >= cap;
}

/* Runs op over its N inputs on dev; out[t] the result bits */
static int run_op(Device *dev, const Op *op, uint64_t out[N], char *err, size_t cap)
{
    char ptx[2048];
    if (ptx_of(op, ptx, sizeof ptx)) return snprintf(err, cap, "the program outgrew its buffer"), 1;
    size_t w = (size_t)ty_bytes(op->ty);
    unsigned char in[8 * N], o[8 * N];
    for (int t = 0; t < N; t++) {
        uint64_t v = operand(op->ty, t);
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
        int bad = -1, bad_lane = 0;
        for (int t = 0; t < N && bad < 0; t++)
            for (int l = 0; l < ty_lanes(op->ty) && bad < 0; l++) {
                double x = lane_value(op->ty, operand(op->ty, t), l), g = lane_value(op->ty, want[t], l),
                       s = lane_value(op->ty, got[t], l);
                /* a NaN or infinity must match; so must a zero where the bound is relative (flushes and underflow
                 * are exact rules), while under an absolute bound a zero is a number like any other (cos(pi/2): the
                 * GPU's 0 against the sim's -4.4e-8), and outside the bound's range (sin(1e30)) any number will do */
                int cg = cls(g), cs = cls(s), in = x >= op->lo && x <= op->hi;
                if (op->abs > 0 && cg >= 3 && cs >= 3) cg = cs = 5;
                if (cg != cs) { bad = t, bad_lane = l; break; }
                if (cg != 5 || !in) continue;
                /* a few ulps of the smallest subnormal */
                double floor_abs = op->ty == F64 ? 0x1p-1070 : op->ty == F32 ? 0x1p-147 : ty_bf(op->ty) ? 0x1p-131 : 0x1p-22;
                double tol = fmax(fmax(op->rel * fabs(g), op->abs * (op->abs_x ? fmax(1, fabs(x)) : 1)), floor_abs);
                double e = fabs(s - g);
                if (e > tol) bad = t, bad_lane = l;
                worst = fmax(worst, e / tol);
            }
        if (bad >= 0) {
            double x = lane_value(op->ty, operand(op->ty, bad), bad_lane), g = lane_value(op->ty, want[bad], bad_lane),
                   s = lane_value(op->ty, got[bad], bad_lane);
            check(0, what, "input %a (0x%llx, lane %d): GPU %a (%s), sim %a (%s)", x,
                  (unsigned long long)operand(op->ty, bad), bad_lane, g, cls_name(cls(g)), s, cls_name(cls(s)));
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
    const char *kind = NULL, *write = NULL, *dump = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--device") && i + 1 < argc) kind = argv[++i];
        else if (!strcmp(argv[i], "--write") && i + 1 < argc) write = argv[++i];
        else if (!strcmp(argv[i], "--dump") && i + 1 < argc) dump = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) i++;
        else {
            fprintf(stderr, "test_approx: unknown argument %s (see the file's head)\n", argv[i]);
            return 2;
        }
    }
    if (dump) {
        for (int i = 0; i < NOPS; i++) {
            char ptx[2048], path[1024];
            snprintf(path, sizeof path, "%s/approx_%d.ptx", dump, i);
            FILE *f = ptx_of(&kOps[i], ptx, sizeof ptx) ? NULL : fopen(path, "w");
            if (!f || fputs(ptx, f) < 0 || fclose(f)) { fprintf(stderr, "test_approx: cannot write %s\n", path); return 1; }
        }
        return 0;
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
