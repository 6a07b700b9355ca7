/* The runner's problems (runner/problem.c) without a generated kernel: the
 * kind table (mla_bwd included), mla_bwd's tensors, derived O and LSE,
 * outputs and reference, and the canary zones around every output of every
 * kind: a byte written into either guard must fail problem_check_guards with
 * the tensor and offset, a write inside the tensor must not, and the guarded
 * allocation must be freed from its base.
 * usage: test_problem [--device cuda|sim]: the sim by default; on a CUDA
 * device it also compares each kind's GPU reference with its CPU one. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "device.h"
#include "gpu_ref.h"
#include "guard.h"
#include "problem.h"
#include "ref.h"

/* Small shapes of each kind; MLA keeps its real head dims (576/512) and
 * selects few of many kv rows, so most dkv rows must be exactly 0. */
static Problem shape_of(ProblemKind k, DType dt) {
    int mla = problem_kind_sparse(k);
    Problem p = {.kind = k, .b = 1, .s_q = mla ? 6 : 9, .s_k = mla ? 300 : 13, .h_q = mla ? 3 : 2, .h_kv = 1,
                 .d = mla ? 576 : 64, .d_v = mla ? 512 : 64, .topk = mla ? 16 : 0, .with_topk_length = mla,
                 .dt = dt, .causal = !mla};
    p.scale = (float)(1.0 / sqrt(p.d));
    return p;
}

/* A check's name from a format; valid until the next call. */
static const char *named(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *named(const char *fmt, ...) {
    static char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return buf;
}

static const char *kind_name(ProblemKind k) {
    static const char *names[PK_COUNT] = {"attn_fwd", "attn_bwd", "mla_fwd", "mla_bwd"};
    return names[k];
}

static void test_kinds(void) {
    char names[128];
    problem_kind_names(names, sizeof names);
    check(!strcmp(names, "attn_fwd, attn_bwd, mla_fwd, mla_bwd"), "kind names", "got '%s'", names);
    for (int k = 0; k < PK_COUNT; k++)
        check(problem_kind(kind_name(k)) == k, named("kind %s", kind_name(k)), "problem_kind gives %d",
              problem_kind(kind_name(k)));
    check(problem_kind("nosuch") == -1 && problem_kind(NULL) == -1, "unknown kind", "not -1");
    check(problem_kind_sparse(PK_MLA_BWD) && !problem_kind_sparse(PK_ATTN_BWD), "mla_bwd is sparse, attn_bwd not",
          "%d %d", problem_kind_sparse(PK_MLA_BWD), problem_kind_sparse(PK_ATTN_BWD));
}

static int init(Problem *p, Device *dev, const char *tag) {
    char err[1024];
    if (!problem_init(p, dev, 7, 8, err, sizeof err)) return 0;
    check(0, named("%s problem_init", tag), "%s", err);
    problem_free(p, dev);
    return 1;
}

/* Which tensors mla_bwd allocates, i.e. which names the runner binds for it, and their layouts. */
static void test_mla_bwd_tensors(const Problem *p, const char *tag) {
    const Tensor *bound[] = {&p->q, &p->kv, &p->dout, &p->o, &p->lse, &p->indices, &p->topk_length, &p->dq, &p->dkv};
    const char *want[] = {"q", "kv", "do", "o", "lse", "indices", "topk_length", "dq", "dkv"};
    for (size_t i = 0; i < sizeof bound / sizeof bound[0]; i++)
        check(bound[i]->dev && !strcmp(bound[i]->name, want[i]), named("%s binds %s", tag, want[i]),
              "dev 0x%llx name %s", (unsigned long long)bound[i]->dev, bound[i]->name);
    check(!p->k.dev && !p->v.dev && !p->dk.dev && !p->dv.dev, named("%s binds no k, v, dk, dv", tag), "one is");
    const Tensor *t = &p->dkv;
    check(t->rows == p->s_k && t->heads == 1 && t->width == p->d && t->stride_s == (uint64_t)p->d + 8,
          named("%s dkv [s_kv, d_qk], rows padded", tag), "rows %d heads %d width %d stride_s %llu", t->rows,
          t->heads, t->width, (unsigned long long)t->stride_s);
    check(p->lse.stride_s == (uint64_t)p->h_q && p->lse.esize == 4, named("%s lse fp32 [s_q, h_q] contiguous", tag),
          "stride_s %llu esize %d", (unsigned long long)p->lse.stride_s, p->lse.esize);
}

static void test_mla_bwd_outputs(Problem *p, const char *tag) {
    ProblemOutput out[PROBLEM_MAX_OUTPUTS];
    int n = problem_outputs(p, out);
    double tol = p->dt == DT_FP16 ? 5e-3 : 1e-2;
    check(n == 2 && out[0].t == &p->dq && out[1].t == &p->dkv, named("%s outputs dq, dkv", tag), "%d outputs", n);
    for (int i = 0; i < n; i++)
        check(out[i].tol == tol && out[i].exact_zero, named("%s %s tolerance, exact zeros", tag, out[i].t->name),
              "tol %g (want %g) exact_zero %d", out[i].tol, tol, out[i].exact_zero);
    double flops = 2.0 * p->s_q * p->h_q * p->topk * (3 * 576 + 2 * 512);
    check(problem_flops(p) == flops, named("%s flops", tag), "got %.0f want %.0f", problem_flops(p), flops);
}

static RefMla ref_shape(const Problem *p) {
    return (RefMla){p->s_q, p->s_k, p->h_q, p->topk, p->d, p->d_v, p->scale, p->indices.ints, p->topk_length.ints};
}

/* o and lse on the device: the float64 forward of the rounded inputs, o rounded to the element type. */
static void test_mla_bwd_derived(Problem *p, Device *dev, const char *tag) {
    char err[1024];
    RefMla m = ref_shape(p);
    double *o = calloc(p->o.count, sizeof *o), *lse = calloc(p->lse.count, sizeof *lse);
    uint16_t *o_dev = calloc(p->o.count, sizeof *o_dev);
    float *lse_dev = calloc(p->lse.count, sizeof *lse_dev);
    ref_mla_fwd(&m, p->q.host, p->kv.host, o, lse, 1);
    int rc = problem_download(dev, &p->o, o_dev, err, sizeof err) ||
             problem_download(dev, &p->lse, lse_dev, err, sizeof err);
    check(!rc, named("%s download o and lse", tag), "%s", err);
    size_t bad_o = 0, bad_lse = 0, inf = 0;
    for (size_t i = 0; !rc && i < p->o.count; i++) bad_o += o_dev[i] != f32_to_dt(p->dt, (float)o[i]);
    for (size_t i = 0; !rc && i < p->lse.count; i++) bad_lse += lse_dev[i] != (float)lse[i], inf += isinf(lse[i]) != 0;
    check(!rc && !bad_o, named("%s o = rounded float64 forward", tag), "%zu of %zu differ", bad_o, p->o.count);
    check(!rc && !bad_lse && inf > 0, named("%s lse = float64 forward, +inf for a token with no valid slot", tag),
          "%zu of %zu differ, %zu infinite", bad_lse, p->lse.count, inf);
    free(o), free(lse), free(o_dev), free(lse_dev);
}

/* 1 when the n values of one s index (a token's heads, or a kv row) are all
 * exactly 0, 0 when none is, -1 for a mix. */
static int zero_row(const double *v, size_t n) {
    size_t zeros = 0;
    for (size_t i = 0; i < n; i++) zeros += v[i] == 0;
    return zeros == n ? 1 : zeros ? -1 : 0;
}

/* The reference's exact zeros are the structural ones alone: the dq rows of a
 * token with no valid slot, the dkv rows no valid slot selects. A token whose
 * valid slots all hold one kv row (dS = 0 by cancellation) has none. */
static void test_mla_bwd_reference(Problem *p, const char *tag, int want_single) {
    RefMla m = ref_shape(p);
    double *ref[PROBLEM_MAX_OUTPUTS] = {calloc(p->dq.count, sizeof(double)), calloc(p->dkv.count, sizeof(double))};
    char *selected = calloc((size_t)p->s_k, 1);
    int wrong_dq = 0, wrong_dkv = 0, unselected = 0, single = 0;
    char err[256];
    double floor_[PROBLEM_MAX_OUTPUTS];
    if (problem_reference(p, ref, floor_, err, sizeof err)) {
        check(0, named("%s mla_bwd reference", tag), "%s", err);
        free(ref[0]), free(ref[1]), free(selected);
        return;
    }
    for (int t = 0; t < p->s_q; t++) {
        int valid = 0, first = -1, one_row = 1;
        for (int j = 0; j < p->topk; j++) {
            int32_t idx = p->indices.ints[t * p->topk + j];
            if (!ref_mla_valid(&m, t, j)) continue;
            selected[idx] = 1, valid++;
            one_row &= first < 0 || idx == first, first = idx;
        }
        single += valid && one_row;
        size_t per = (size_t)p->h_q * p->d;
        wrong_dq += zero_row(ref[0] + t * per, per) != !valid;
    }
    for (int r = 0; r < p->s_k; r++) {
        unselected += !selected[r];
        wrong_dkv += zero_row(ref[1] + (size_t)r * p->d, (size_t)p->d) != !selected[r];
    }
    check(!wrong_dq && (single > 0 || !want_single),
          named("%s reference dq: exact zeros for tokens with no slot only", tag),
          "%d tokens wrong, %d whose valid slots hold one row", wrong_dq, single);
    check(!wrong_dkv && unselected > 0 && unselected < p->s_k,
          named("%s reference dkv: exact zeros for unselected rows only", tag), "%d rows wrong, %d unselected",
          wrong_dkv, unselected);
    /* random inputs: dq's norm floor (verify.h) is there but far below ||dq||, so it judges nothing; dkv has none */
    double dq_norm = 0;
    for (size_t i = 0; i < p->dq.count; i++) dq_norm += ref[0][i] * ref[0][i];
    dq_norm = sqrt(dq_norm);
    check(floor_[0] > 0 && floor_[0] < dq_norm / 10 && floor_[1] == 0,
          named("%s reference: dq's norm floor below a tenth of ||dq||, dkv's 0", tag), "floors %.3e %.3e, ||dq|| %.3e",
          floor_[0], floor_[1], dq_norm);
    free(ref[0]), free(ref[1]), free(selected);
}

static void test_mla_bwd(Device *dev, DType dt) {
    const char *tag = dt == DT_FP16 ? "mla_bwd fp16" : "mla_bwd bf16";
    char shape[256];
    Problem p = shape_of(PK_MLA_BWD, dt);
    if (init(&p, dev, tag)) return;
    test_mla_bwd_tensors(&p, tag);
    test_mla_bwd_outputs(&p, tag);
    test_mla_bwd_derived(&p, dev, tag);
    test_mla_bwd_reference(&p, tag, 0);
    problem_describe(&p, shape, sizeof shape);
    check(strstr(shape, "s_kv=300") && strstr(shape, "topk_length"), named("%s describe", tag), "got '%s'", shape);
    problem_free(&p, dev);
    p = shape_of(PK_MLA_BWD, dt);
    p.with_topk_length = 0;
    if (init(&p, dev, tag)) return;
    check(!p.topk_length.dev && p.topk_length.optional, named("%s without topk_length: a null pointer", tag),
          "dev 0x%llx", (unsigned long long)p.topk_length.dev);
    char tag2[64];   /* not named(): its buffer is the callee's */
    snprintf(tag2, sizeof tag2, "%s without topk_length", tag);
    test_mla_bwd_reference(&p, tag2, 1);   /* the draw's token with one valid slot is there */
    problem_free(&p, dev);
}

/* Rearms the guards (poison), writes one byte at addr on the device, and
 * checks the guards: want NULL for no failure, else the message's start. */
static void scribble(Problem *p, Device *dev, DevPtr addr, const char *name, const char *want) {
    char err[1024] = "";
    uint8_t b = 0x3C;
    if (problem_poison_outputs(p, dev, err, sizeof err) || dev_upload(dev, addr, &b, 1, err, sizeof err)) {
        check(0, name, "setup: %s", err);
        return;
    }
    int rc = problem_check_guards(p, dev, err, sizeof err);
    if (!want) check(!rc, name, "%s", err);
    else check(rc && !strncmp(err, want, strlen(want)) && strstr(err, "0x3c"), name, "rc %d, message '%s'", rc, err);
}

/* One output t of kind k: 256-aligned between guards; a write into either is
 * caught, one inside the tensor is not. */
static void test_output_guards(Problem *p, Device *dev, const char *kind, const Tensor *t) {
    char want[160];
    DevPtr end = t->dev + t->elems * (size_t)t->esize;
    check(t->guarded && t->dev % 256 == 0, named("%s %s guarded, 256-aligned", kind, t->name), "guarded %d dev 0x%llx",
          t->guarded, (unsigned long long)t->dev);
    snprintf(want, sizeof want, "canary after %s overwritten at byte +12 ", t->name);
    scribble(p, dev, end + 12, named("%s %s: a write 12 B after it is caught", kind, t->name), want);
    snprintf(want, sizeof want, "canary after %s overwritten at byte +%d ", t->name, GUARD_BYTES - 1);
    scribble(p, dev, end + GUARD_BYTES - 1, named("%s %s: the guard's last byte is checked", kind, t->name), want);
    snprintf(want, sizeof want, "canary before %s overwritten at byte -1 ", t->name);
    scribble(p, dev, t->dev - 1, named("%s %s: a write 1 B before it is caught", kind, t->name), want);
    snprintf(want, sizeof want, "canary before %s overwritten at byte -%d ", t->name, GUARD_BYTES);
    scribble(p, dev, t->dev - GUARD_BYTES, named("%s %s: the guard's first byte is checked", kind, t->name), want);
    scribble(p, dev, t->dev, named("%s %s: a write to its first byte is not", kind, t->name), NULL);
    scribble(p, dev, end - 1, named("%s %s: a write to its last byte is not", kind, t->name), NULL);
}

/* Every output of kind k; rearming (poison) heals; freeing frees the base. */
static void test_guards(Device *dev, ProblemKind k) {
    Problem p = shape_of(k, DT_BF16);
    char err[1024];
    if (init(&p, dev, kind_name(k))) return;
    ProblemOutput out[PROBLEM_MAX_OUTPUTS];
    DevPtr base[PROBLEM_MAX_OUTPUTS];
    int n = problem_outputs(&p, out);
    for (int i = 0; i < n; i++) {
        base[i] = out[i].t->dev - GUARD_BYTES;
        test_output_guards(&p, dev, kind_name(k), out[i].t);
    }
    check(!problem_poison_outputs(&p, dev, err, sizeof err) && !problem_check_guards(&p, dev, err, sizeof err),
          named("%s: poison rearms the guards", kind_name(k)), "%s", err);
    problem_free(&p, dev);
    for (int i = 0; i < n && !strcmp(dev_kind(dev), "sim"); i++) {   /* the sim refuses freed addresses */
        uint8_t b;
        check(dev_download(dev, &b, base[i], 1, err, sizeof err) != 0,
              named("%s %s freed from its base", kind_name(k), out[i].t->name), "0x%llx is still allocated",
              (unsigned long long)base[i]);
    }
}

static double rel_l2(const double *a, const double *b, size_t n) {
    double d = 0, r = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(b[i])) d += (a[i] - b[i]) * (a[i] - b[i]), r += b[i] * b[i];
        else if (a[i] != b[i]) return INFINITY;
    return r > 0 ? sqrt(d / r) : sqrt(d);
}

/* On a CUDA device: each kind's GPU reference (strided inputs, derived O and
 * LSE) agrees with its CPU one within a fifth of the kernel's tolerance. */
static void test_gpu_reference(Device *dev, GpuRef *g, ProblemKind k) {
    Problem p = shape_of(k, DT_BF16);
    char err[1024];
    if (init(&p, dev, kind_name(k))) return;
    ProblemOutput out[PROBLEM_MAX_OUTPUTS];
    double *cpu[PROBLEM_MAX_OUTPUTS], *gpu[PROBLEM_MAX_OUTPUTS];
    int n = problem_outputs(&p, out);
    for (int i = 0; i < n; i++)
        cpu[i] = calloc(out[i].t->count, sizeof(double)), gpu[i] = calloc(out[i].t->count, sizeof(double));
    double cpu_floor[PROBLEM_MAX_OUTPUTS], gpu_floor[PROBLEM_MAX_OUTPUTS];
    int rc = problem_reference(&p, cpu, cpu_floor, err, sizeof err) ||
             problem_gpu_reference(&p, g, dev, gpu, gpu_floor, err, sizeof err);
    check(!rc, named("%s GPU reference runs", kind_name(k)), "%s", err);
    for (int i = 0; !rc && i < n; i++) {
        double e = rel_l2(gpu[i], cpu[i], out[i].t->count);
        const char *name = named("%s GPU reference %s = CPU one (rel L2 %.1e)", kind_name(k), out[i].t->name, e);
        check(e <= out[i].tol / 5, name, "above %.1e", out[i].tol / 5);
    }
    for (int i = 0; i < n; i++) free(cpu[i]), free(gpu[i]);
    problem_free(&p, dev);
}

int main(int argc, char **argv) {
    const char *kind = argc == 3 && !strcmp(argv[1], "--device") ? argv[2] : "sim";
    char err[2048];
    Device *dev = NULL;
    if (argc != 1 && argc != 3) {
        fprintf(stderr, "usage: test_problem [--device cuda|sim]\n");
        return 2;
    }
    if (dev_open(&dev, kind, 0, err, sizeof err)) {
        fprintf(stderr, "test_problem: %s\n", err);
        return 1;
    }
    test_kinds();
    test_mla_bwd(dev, DT_BF16);
    test_mla_bwd(dev, DT_FP16);
    for (int k = 0; k < PK_COUNT; k++) test_guards(dev, (ProblemKind)k);
    if (!strcmp(kind, "cuda")) {
        GpuRef *g = NULL;
        int rc = gpu_ref_open(&g, dev, err, sizeof err);
        check(!rc, "gpu_ref_open", "%s", err);
        for (int k = 0; !rc && k < PK_COUNT; k++) test_gpu_reference(dev, g, (ProblemKind)k);
        gpu_ref_close(g);
    }
    dev_close(dev);
    return check_summary();
}
