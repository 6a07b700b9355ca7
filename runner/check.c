#include "check.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "device.h"
#include "problem.h"
#include "ref.h"
#include "verify.h"

typedef struct {
    Device *dev;
    DevInfo info;
    ptxgen_set *set;
    DevModule *mod;
    struct { DevFunc *fn; DevFuncAttrs attrs; unsigned grid[3], block[3], smem; } k[4];   /* the set, in launch order */
    int nk;
    Problem pb;
    char arch[16];
} Session;

static int fail(const char *what, const char *err) {
    fprintf(stderr, "ptxgen: %s: %s\n", what, err);
    return 1;
}

static int validate_shape(const RunOpts *o) {
    if (o->stats && (!o->device_kind || strcmp(o->device_kind, "sim"))) {
        fprintf(stderr, "ptxgen: --stats needs --device sim (the counters come from the interpreter)\n");
        return 2;
    }
    const char *bad = o->b < 1 ? "--b" : o->s_q < 1 ? "--sq" : o->s_k < 1 ? "--sk" : o->h_q < 1 ? "--hq" : o->h_kv < 1 ? "--hkv" : NULL;
    if (bad) { fprintf(stderr, "ptxgen: %s must be >= 1\n", bad); return 2; }
    if (o->h_q % o->h_kv) { fprintf(stderr, "ptxgen: h_q (%d) must be a multiple of h_kv (%d)\n", o->h_q, o->h_kv); return 2; }
    if (o->pad < 0 || o->pad % 8) { fprintf(stderr, "ptxgen: --pad must be a non-negative multiple of 8 (rows stay 16-byte aligned)\n"); return 2; }
    if (o->h_q > 65535 || o->b > 65535) { fprintf(stderr, "ptxgen: h_q and b must be <= 65535 (grid y/z limit)\n"); return 2; }
    if (!(o->scale >= 0) || isinf(o->scale)) { fprintf(stderr, "ptxgen: --scale must be a finite positive number\n"); return 2; }
    return 0;
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *s = NULL;
    long n = fseek(f, 0, SEEK_END) ? -1 : ftell(f);
    if (n >= 0 && !fseek(f, 0, SEEK_SET) && (s = malloc((size_t)n + 1)) && fread(s, 1, (size_t)n, f) == (size_t)n) s[n] = 0;
    else free(s), s = NULL;
    fclose(f);
    return s;
}

/* kind: "cuda" or "sim"; arch: the target when the request names none (NULL: the device's own). */
static int open_session(Session *ss, const RunOpts *o, const char *kind, const char *arch) {
    char err[2048];
    if (dev_open(&ss->dev, kind, o->device, err, sizeof err)) return fail("device", err);
    if (dev_info(ss->dev, &ss->info, err, sizeof err)) return fail("device", err);
    ptxgen_request rq = o->req;
    if (!rq.arch && arch) snprintf(ss->arch, sizeof ss->arch, "%s", arch), rq.arch = ss->arch;
    if (!rq.arch) {
        snprintf(ss->arch, sizeof ss->arch, "sm_%d%d", ss->info.cc_major, ss->info.cc_minor);
        rq.arch = ss->arch;
    }
    int rc = ptxgen_build(&rq, &ss->set, err, sizeof err);
    if (rc) { fprintf(stderr, "ptxgen: %s\n", err); return rc; }
    char dump[256];
    snprintf(dump, sizeof dump, "/tmp/%s.ptx", ptxgen_entry(ss->set, 0));
    char *text = NULL;
    if (o->ptx_file && !(text = read_text(o->ptx_file))) {
        fprintf(stderr, "ptxgen: cannot read --ptx %s\n", o->ptx_file);
        return 2;
    }
    rc = dev_load_ptx(ss->dev, text ? text : ptxgen_ptx(ss->set), dump, &ss->mod, err, sizeof err);
    free(text);
    if (rc) return fail("load", err);
    ss->nk = ptxgen_num_kernels(ss->set);
    for (int i = 0; i < ss->nk; i++)
        if (dev_get_func(ss->mod, ptxgen_entry(ss->set, i), &ss->k[i].fn, err, sizeof err) ||
            dev_func_attrs(ss->k[i].fn, &ss->k[i].attrs, err, sizeof err))
            return fail("load", err);
    return 0;
}

static int setup_problem(Session *ss, const RunOpts *o) {
    char err[1024];
    Problem *p = &ss->pb;
    int d = o->req.hdim ? o->req.hdim : 128;
    *p = (Problem){.b = o->b, .s_q = o->s_q, .s_k = o->s_k, .h_q = o->h_q, .h_kv = o->h_kv, .d = d, .dv = d,
                   .dt = o->req.dtype && !strcmp(o->req.dtype, "fp16") ? DT_FP16 : DT_BF16,
                   .scale = (float)(o->scale > 0 ? o->scale : 1.0 / sqrt(d))};
    ptxgen_size sizes[5];
    int ns = problem_sizes(p, sizes);
    for (int i = 0; i < ss->nk; i++) {
        if (ptxgen_launch_dims(ss->set, i, sizes, ns, ss->k[i].grid, ss->k[i].block, &ss->k[i].smem, err, sizeof err)) {
            fprintf(stderr, "ptxgen: %s\n", err);
            return 2;
        }
        if ((int)ss->k[i].smem > ss->info.max_smem_optin) {
            fprintf(stderr, "ptxgen: %s needs %u B shared memory; %s allows %d B\n", ptxgen_entry(ss->set, i),
                    ss->k[i].smem, ss->info.name, ss->info.max_smem_optin);
            return 2;
        }
        if (dev_set_dyn_smem(ss->k[i].fn, (int)ss->k[i].smem, err, sizeof err)) return fail("launch setup", err);
    }
    if (problem_init(p, ss->dev, o->seed, o->pad, err, sizeof err) || problem_workspaces(p, ss->dev, ss->set, err, sizeof err))
        return fail("inputs", err);
    for (int i = 0; i < ss->nk; i++)
        if (problem_args(p, ss->set, i, err, sizeof err)) { fprintf(stderr, "ptxgen: %s\n", err); return 2; }
    return 0;
}

/* One run of the set: zeroed workspaces, then every kernel in manifest order. */
static int launch(Session *ss) {
    char err[1024];
    if (problem_zero_workspaces(&ss->pb, ss->dev, err, sizeof err)) return fail("workspace", err);
    for (int i = 0; i < ss->nk; i++)
        if (dev_launch(ss->k[i].fn, ss->k[i].grid, ss->k[i].block, ss->k[i].smem, ss->pb.args[i], err, sizeof err))
            return fail("launch", err);
    return 0;
}

static void close_session(Session *ss) {
    if (ss->dev) problem_free(&ss->pb, ss->dev);
    if (ss->mod) dev_unload(ss->mod);
    ptxgen_free(ss->set);
    if (ss->dev) dev_close(ss->dev);
}

static void print_kernel(const Session *ss) {
    printf("device: %s (sm_%d%d, %d SMs)\n", ss->info.name, ss->info.cc_major, ss->info.cc_minor, ss->info.sm_count);
    for (int i = 0; i < ss->nk; i++)
        printf("kernel: %s\n  registers %d, local (spill/stack) %d B, static smem %d B, dynamic smem %u B, grid %ux%ux%u, "
               "block %u\n", ptxgen_entry(ss->set, i), ss->k[i].attrs.num_regs, ss->k[i].attrs.local_bytes,
               ss->k[i].attrs.static_smem, ss->k[i].smem, ss->k[i].grid[0], ss->k[i].grid[1], ss->k[i].grid[2],
               ss->k[i].block[0]);
}

/* Local memory (spills or stack) over the set's kernels. */
static int local_bytes(const Session *ss) {
    int n = 0;
    for (int i = 0; i < ss->nk; i++) n += ss->k[i].attrs.local_bytes;
    return n;
}

/* A run's outputs gathered into [b, s_q, h_q, dv] and [b, h_q, s_q]. */
typedef struct { uint16_t *o; float *lse; size_t no, nl; } Outputs;
typedef struct { double *o, *lse; } Reference;

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) { fputs("ptxgen: out of host memory\n", stderr); exit(1); }
    return p;
}

static int fetch(Session *ss, Outputs *out) {
    Problem *p = &ss->pb;
    char err[1024];
    out->no = (size_t)p->b * p->s_q * p->h_q * p->dv, out->nl = (size_t)p->b * p->h_q * p->s_q;
    uint16_t *raw = xmalloc(p->o.elems * 2);
    out->o = xmalloc(out->no * 2), out->lse = xmalloc(out->nl * 4);
    int rc = dev_download(ss->dev, raw, p->o.dev, p->o.elems * 2, err, sizeof err) ||
             dev_download(ss->dev, out->lse, p->lse.dev, out->nl * 4, err, sizeof err);
    if (rc) fail("download", err);
    for (size_t i = 0, bi = 0; !rc && bi < (size_t)p->b; bi++)
        for (int s = 0; s < p->s_q; s++)
            for (int h = 0; h < p->h_q; h++, i += (size_t)p->dv)
                memcpy(&out->o[i], &raw[bi * p->o.stride_b + s * p->o.stride_s + h * p->o.stride_h], (size_t)p->dv * 2);
    free(raw);
    return rc;
}

static Reference reference(const Problem *p, int causal) {
    size_t no = (size_t)p->b * p->s_q * p->h_q * p->dv, nl = (size_t)p->b * p->h_q * p->s_q;
    Reference r = {xmalloc(no * 8), xmalloc(nl * 8)};
    RefAttn ra = {p->b, p->s_q, p->s_k, p->h_q, p->h_kv, p->d, p->dv, causal, p->scale};
    ref_attn_fwd(&ra, p->q.host, p->k.host, p->v.host, r.o, r.lse, 0);
    return r;
}

static double o_tol(const Problem *p) { return p->dt == DT_FP16 ? 2.5e-3 : 5e-3; }

/* 0 when O and LSE meet KERNELS.md's tolerances against ref; prints both. */
static int judge(const Problem *p, const Outputs *out, const Reference *ref, const char *label) {
    VerifyResult vo = verify_u16(out->o, p->dt, ref->o, out->no, o_tol(p)), vl = verify_f32(out->lse, ref->lse, out->nl, 1e-4);
    char no[64], nl[64];
    snprintf(no, sizeof no, "%so", label), snprintf(nl, sizeof nl, "%slse", label);
    verify_print(no, &vo, o_tol(p));
    verify_print(nl, &vl, 1e-4);
    return !(vo.pass && vl.pass);
}

static void outputs_free(Outputs *o) { free(o->o), free(o->lse); }

int run_check(const RunOpts *o) {
    int rc = validate_shape(o);
    if (rc) return rc;
    Session ss = {0};
    char err[1024];
    rc = open_session(&ss, o, o->device_kind, NULL);
    if (!rc) rc = setup_problem(&ss, o);
    if (!rc) {
        print_kernel(&ss);
        printf("shape: b=%d s_q=%d s_k=%d h_q=%d h_kv=%d d=%d%s pad=%d seed=%llu\n", o->b, o->s_q, o->s_k, o->h_q, o->h_kv,
               ss.pb.d, o->req.causal ? " causal" : "", o->pad, (unsigned long long)o->seed);
        rc = problem_poison_outputs(&ss.pb, ss.dev, err, sizeof err) ? fail("poison", err) : launch(&ss);
        if (!rc && dev_sync(ss.dev, err, sizeof err)) rc = fail("kernel", err);
        Outputs out = {0};
        if (!rc) rc = fetch(&ss, &out);
        if (!rc) {
            Reference ref = reference(&ss.pb, o->req.causal);
            rc = judge(&ss.pb, &out, &ref, "");
            free(ref.o), free(ref.lse);
        }
        outputs_free(&out);
        if (o->stats && dev_print_stats(ss.dev, stdout, err, sizeof err)) rc = fail("stats", err);
        /* a spill in a default config is a bug; a chosen tile may trade spills for speed */
        int default_tile = !o->req.tile || !o->req.tile[0];
        if (!rc && local_bytes(&ss) > 0) {
            printf("%s: %d B of local memory (spills) in %s\n", default_tile ? "FAIL" : "warning", local_bytes(&ss),
                   default_tile ? "a default config" : "this tile config");
            rc = default_tile;
        }
        printf("%s\n", rc ? "check: FAIL" : "check: PASS");
    }
    close_session(&ss);
    return rc;
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static double attn_flops(const RunOpts *o) {
    int d = o->req.hdim ? o->req.hdim : 128;
    double f = 4.0 * o->b * o->h_q * (double)o->s_q * o->s_k * d;
    return o->req.causal ? f / 2 : f;
}

static int time_runs(Session *ss, const RunOpts *o, float *ms) {
    char err[1024];
    DevEvent *e0 = NULL, *e1 = NULL;
    int rc = dev_event_new(ss->dev, &e0, err, sizeof err) || dev_event_new(ss->dev, &e1, err, sizeof err);
    for (int i = 0; !rc && i < o->warmup; i++) rc = launch(ss);
    for (int i = 0; !rc && i < o->iters; i++)
        rc = dev_event_record(e0, err, sizeof err) || launch(ss) || dev_event_record(e1, err, sizeof err) ||
             dev_event_ms(e0, e1, &ms[i], err, sizeof err);
    if (rc && err[0]) fail("bench", err);
    if (e0) dev_event_free(e0);
    if (e1) dev_event_free(e1);
    return rc;
}

int run_bench(const RunOpts *o) {
    int rc = validate_shape(o);
    if (rc) return rc;
    if (o->iters < 1) { fprintf(stderr, "ptxgen: --iters must be >= 1\n"); return 2; }
    if (o->device_kind && !strcmp(o->device_kind, "sim")) {
        fprintf(stderr, "ptxgen: bench needs a GPU: the sim device does not model time (use check --device sim --stats)\n");
        return 2;
    }
    Session ss = {0};
    float *ms = calloc((size_t)o->iters, sizeof *ms);
    rc = open_session(&ss, o, o->device_kind, NULL);
    if (!rc) rc = setup_problem(&ss, o);
    if (!rc) rc = time_runs(&ss, o, ms);
    if (!rc) {
        qsort(ms, (size_t)o->iters, sizeof *ms, cmp_float);
        float med = ms[o->iters / 2];
        print_kernel(&ss);
        printf("bench: b=%d s_q=%d s_k=%d h_q=%d h_kv=%d d=%d%s: median %.4f ms (min %.4f, max %.4f, n=%d) %.1f TFLOP/s\n",
               o->b, o->s_q, o->s_k, o->h_q, o->h_kv, ss.pb.d, o->req.causal ? " causal" : "", med, ms[0],
               ms[o->iters - 1], o->iters, attn_flops(o) / (med * 1e-3) / 1e12);
    }
    free(ms);
    close_session(&ss);
    return rc;
}

/* Same PTX, same inputs, on a GPU and on the sim: each judged against the
 * reference, then the sim's outputs against the GPU's. */
int run_xcheck(const RunOpts *o) {
    int rc = validate_shape(o);
    if (rc) return rc;
    Session s[2] = {{0}};   /* 0: the GPU, 1: the sim */
    Outputs out[2] = {{0}};
    char err[1024];
    rc = open_session(&s[0], o, "cuda", NULL);
    if (!rc) rc = open_session(&s[1], o, "sim", s[0].arch[0] ? s[0].arch : o->req.arch);
    if (!rc && strcmp(ptxgen_ptx(s[0].set), ptxgen_ptx(s[1].set))) rc = fail("xcheck", "the two devices got different PTX");
    for (int i = 0; i < 2 && !rc; i++) {
        rc = setup_problem(&s[i], o);
        if (!rc) rc = problem_poison_outputs(&s[i].pb, s[i].dev, err, sizeof err) ? fail("poison", err) : launch(&s[i]);
        if (!rc && dev_sync(s[i].dev, err, sizeof err)) rc = fail("kernel", err);
        if (!rc) rc = fetch(&s[i], &out[i]);
    }
    if (!rc) {
        const Problem *p = &s[0].pb;
        print_kernel(&s[0]);
        printf("shape: b=%d s_q=%d s_k=%d h_q=%d h_kv=%d d=%d%s pad=%d seed=%llu\n", o->b, o->s_q, o->s_k, o->h_q,
               o->h_kv, p->d, o->req.causal ? " causal" : "", o->pad, (unsigned long long)o->seed);
        Reference ref = reference(p, o->req.causal);
        rc = judge(p, &out[0], &ref, "gpu ") | judge(p, &out[1], &ref, "sim ");
        /* the GPU's result as the reference of the sim's */
        size_t same = 0;
        for (size_t i = 0; i < out[0].no; i++) ref.o[i] = dt_to_f32(p->dt, out[0].o[i]), same += out[0].o[i] == out[1].o[i];
        for (size_t i = 0; i < out[0].nl; i++) ref.lse[i] = out[0].lse[i];
        rc |= judge(p, &out[1], &ref, "sim vs gpu ");
        printf("  sim vs gpu: %.2f%% of O elements bit-identical\n", 100.0 * (double)same / (double)out[0].no);
        free(ref.o), free(ref.lse);
        printf("%s\n", rc ? "xcheck: FAIL" : "xcheck: PASS");
    }
    for (int i = 0; i < 2; i++) outputs_free(&out[i]), close_session(&s[i]);
    return rc;
}
