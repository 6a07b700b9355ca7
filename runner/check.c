#include "check.h"
#include "varlen.h"
#include "blockmask.h"
#include "paged.h"
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "buf.h"
#include "device.h"
#include "gpu_ref.h"
#include "problem.h"
#include "verify.h"

typedef struct {
    Device *dev;
    DevInfo info;
    ptxgen_set *set;
    DevModule *mod;
    struct { DevFunc *fn; DevFuncAttrs attrs; unsigned grid[3], block[3], cluster[3], smem; } k[6];   /* the set, in launch order */
    int nk;
    Problem pb;
    GpuRef *gref;               /* the GPU reference, when it judges this session's runs (pick_reference) */
    GpuRef *fwd_ref;            /* the GPU reference that derives a backward's O and LSE (derive_on_gpu) */
    char arch[16];
} Session;

static int fail(const char *what, const char *err) {
    fprintf(stderr, "ptxgen: %s: %s\n", what, err);
    return 1;
}

/* The shape flags, by family (dense attention, sparse MLA): whether the
 * family takes the flag (one of the other family's is refused) and its value
 * when not given (0 in RunOpts) for check and xcheck, small enough for the
 * float64 reference, and for bench, realistic. */
typedef struct {
    const char *flag;
    size_t field;                /* an int of RunOpts */
    int family[2][3];            /* [sparse]: takes it, check default, bench default */
} ShapeFlag;

static const ShapeFlag kShapeFlags[] = {
    {"--b", offsetof(RunOpts, b), {{1, 1, 1}, {0, 1, 1}}},
    {"--sq", offsetof(RunOpts, s_q), {{1, 1024, 1024}, {1, 16, 4096}}},
    {"--sk", offsetof(RunOpts, s_k), {{1, 1024, 1024}, {0, 0, 0}}},
    {"--hq", offsetof(RunOpts, h_q), {{1, 8, 8}, {1, 64, 128}}},
    {"--hkv", offsetof(RunOpts, h_kv), {{1, 8, 8}, {0, 1, 1}}},
    {"--causal", offsetof(RunOpts, req.causal), {{1, 0, 0}, {0, 0, 0}}},
    {"--skv", offsetof(RunOpts, s_kv), {{0, 0, 0}, {1, 300, 8192}}},
    {"--topk", offsetof(RunOpts, topk), {{0, 0, 0}, {1, 128, 2048}}},
    {"--topk-length", offsetof(RunOpts, topk_length), {{0, 0, 0}, {1, 0, 0}}},
};
#define NSHAPE_FLAGS (int)(sizeof kShapeFlags / sizeof kShapeFlags[0])

static int *shape_field(RunOpts *o, const ShapeFlag *f) { return (int *)((char *)o + f->field); }

/* "ptxgen: mla_fwd takes no --hkv (its shape flags: --sq --skv --hq --topk --topk-length)" */
static int refuse_flag(const char *kernel, const char *flag, int sparse) {
    fprintf(stderr, "ptxgen: %s takes no %s (its shape flags:", kernel, flag);
    for (int i = 0; i < NSHAPE_FLAGS; i++)
        if (kShapeFlags[i].family[sparse][0]) fprintf(stderr, " %s", kShapeFlags[i].flag);
    fprintf(stderr, ")\n");
    return 2;
}

/* o = in with each shape flag not given set to the kind's default for the mode (bench or not). */
static int resolve_shape(const RunOpts *in, int bench, RunOpts *o) {
    *o = *in;
    int kind = problem_kind(o->req.kernel);
    if (kind < 0) {
        char names[128];
        problem_kind_names(names, sizeof names);
        fprintf(stderr, "ptxgen: check, bench and xcheck run %s; not '%s'\n", names, o->req.kernel);
        return 2;
    }
    int sparse = problem_kind_sparse(kind);
    for (int i = 0; i < NSHAPE_FLAGS; i++) {
        const ShapeFlag *f = &kShapeFlags[i];
        int *v = shape_field(o, f);
        if (*v < 0) { fprintf(stderr, "ptxgen: %s must be >= 1\n", f->flag); return 2; }
        if (*v && !f->family[sparse][0]) return refuse_flag(o->req.kernel, f->flag, sparse);
        if (!*v) *v = f->family[sparse][1 + bench];
    }
    return 0;
}

/* Resolves the shape (resolve_shape) and checks what the kernels' launch and layouts need. */
static int prepare(const RunOpts *in, int bench, RunOpts *o) {
    int rc = resolve_shape(in, bench, o);
    if (rc) return rc;
    if (o->stats && !bench && (!o->device_kind || strcmp(o->device_kind, "sim"))) {
        fprintf(stderr, "ptxgen: check --stats needs --device sim (the counters come from the interpreter; bench --stats "
                "lists the timed runs)\n");
        return 2;
    }
    if (o->h_q % o->h_kv) { fprintf(stderr, "ptxgen: h_q (%d) must be a multiple of h_kv (%d)\n", o->h_q, o->h_kv); return 2; }
    if (o->pad < 0 || o->pad % 8) { fprintf(stderr, "ptxgen: --pad must be a non-negative multiple of 8 (rows stay 16-byte aligned)\n"); return 2; }
    if (o->h_q > 65535 || o->b > 65535) { fprintf(stderr, "ptxgen: h_q and b must be <= 65535 (grid y/z limit)\n"); return 2; }
    if (!(o->scale >= 0) || isinf(o->scale)) { fprintf(stderr, "ptxgen: --scale must be a finite positive number\n"); return 2; }
    const char *no_ref = o->req.varlen ? "takes padded batches, not varlen" : o->req.block_m ? "takes no block mask"
                       : o->req.page_size ? "takes no paged cache" : NULL;
    if (o->ref == RUN_REF_GPU && no_ref) {   /* refused before anything runs */
        fprintf(stderr, "ptxgen: --ref gpu: the GPU reference %s (--ref cpu)\n", no_ref);
        return 2;
    }
    return 0;
}

/* kind: "cuda" or "sim"; arch: the target when the request names none (NULL: the device's own). */
/* The problem's shape class (ptxgen_shape_class) from the resolved shape flags. */
static int shape_class(const RunOpts *o, char *out, size_t len) {
    ptxgen_size sz[] = {{"s_q", o->s_q}, {"s_k", o->s_k}, {"s_kv", o->s_kv}, {"h_q", o->h_q}, {"h_kv", o->h_kv}};
    return ptxgen_shape_class(o->req.kernel, sz, 5, out, len);
}

static int open_session(Session *ss, const RunOpts *o, const char *kind, const char *arch) {
    char err[2048];
    if (dev_open(&ss->dev, kind, o->device, err, sizeof err)) return fail("device", err);
    if (dev_info(ss->dev, &ss->info, err, sizeof err)) return fail("device", err);
    dev_set_strict(ss->dev, 1);   /* our own kernels: what the ISA asks for is required, not a note */
    ptxgen_request rq = o->req;
    if (!rq.arch && arch) snprintf(ss->arch, sizeof ss->arch, "%s", arch), rq.arch = ss->arch;
    if (!rq.arch) {
        if (!strcmp(dev_kind(ss->dev), "sim"))   /* the sim's default stays the portable target its tests name */
            snprintf(ss->arch, sizeof ss->arch, "sm_%d%d", ss->info.cc_major, ss->info.cc_minor);
        else
            dev_arch_name(&ss->info, ss->arch, sizeof ss->arch);
        rq.arch = ss->arch;
    }
    if (rq.arch != ss->arch) snprintf(ss->arch, sizeof ss->arch, "%s", rq.arch);   /* the target, for the report */
    char cls[64];
    if (!shape_class(o, cls, sizeof cls)) rq.shape_class = cls;   /* a tile tune saved for this class is used */
    int rc = ptxgen_build(&rq, &ss->set, err, sizeof err);
    if (rc) { fprintf(stderr, "ptxgen: %s\n", err); return rc; }
    if (ptxgen_tile_note(ss->set)) printf("tile: %s\n", ptxgen_tile_note(ss->set));
    char *text = NULL;
    if (o->ptx_file && !(text = buf_read_file(o->ptx_file, NULL))) {
        fprintf(stderr, "ptxgen: cannot read --ptx %s\n", o->ptx_file);
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = dev_load_ptx(ss->dev, text ? text : ptxgen_ptx(ss->set), ptxgen_entry(ss->set, 0), &ss->mod, err, sizeof err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    free(text);
    if (rc) return fail("load", err);
    if (dev_last_load(ss->dev))
        printf("module load: %.2f ms (%s)\n", (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6,
               dev_last_load(ss->dev));
    ss->nk = ptxgen_num_kernels(ss->set);
    if (ss->nk > (int)(sizeof ss->k / sizeof ss->k[0])) {
        snprintf(err, sizeof err, "the set has %d kernels; the runner holds at most %d", ss->nk, (int)(sizeof ss->k / sizeof ss->k[0]));
        return fail("load", err);
    }
    for (int i = 0; i < ss->nk; i++)
        if (dev_get_func(ss->mod, ptxgen_entry(ss->set, i), &ss->k[i].fn, err, sizeof err) ||
            dev_func_attrs(ss->k[i].fn, &ss->k[i].attrs, err, sizeof err))
            return fail("load", err);
    return 0;
}

/* --ref auto takes the GPU reference on a CUDA device above this many GFLOP
 * (problem_flops: the CPU reference does the same math as the set). The
 * float64 CPU reference runs at about 2 to 3 GFLOP/s a core, so above it
 * takes seconds on a 16-core host, and minutes at realistic shapes. */
#define AUTO_GPU_REF_GFLOP 20.0

/* A backward's O and LSE come from the GPU reference's forward where the
 * float64 CPU one would take minutes: on a CUDA device, past the threshold,
 * unless --ref cpu asks for the CPU throughout. A GPU reference that fails
 * to load leaves the CPU one. */
static void derive_on_gpu(Session *ss, const RunOpts *o) {
    char err[2048];
    Problem *p = &ss->pb;
    if (strcmp(dev_kind(ss->dev), "cuda") || o->ref == RUN_REF_CPU || problem_flops(p) / 1e9 <= AUTO_GPU_REF_GFLOP) return;
    if (p->varlen || p->block_m) {
        printf("inputs: o and lse from the CPU forward (%s)\n", p->varlen ? "varlen: the GPU reference takes padded "
               "batches" : "block-sparse: the GPU reference takes no block mask");
        return;
    }
    if (gpu_ref_open(&ss->fwd_ref, ss->dev, err, sizeof err)) {
        printf("inputs: o and lse from the CPU forward (the GPU reference failed to load: %s)\n", err);
        return;
    }
    p->fwd_gpu = ss->fwd_ref;
}

/* --varlen LIST [--varlen-k LIST]: the sequences' lengths, b of them (keys as the queries unless given). */
static int varlen_problem(Problem *p, const RunOpts *o) {
    char err[512];
    int *lq = NULL, *lk = NULL, nq = 0, nk = 0;
    if (!o->varlen_q) {
        fprintf(stderr, "ptxgen: a varlen set runs on --varlen L1,L2,... (the query lengths of the sequences)\n");
        return 2;
    }
    int rc = varlen_parse(o->varlen_q, "--varlen", &lq, &nq, err, sizeof err) ||
             (o->varlen_k && varlen_parse(o->varlen_k, "--varlen-k", &lk, &nk, err, sizeof err));
    if (!rc && lk && nk != nq) rc = 1, snprintf(err, sizeof err, "--varlen-k has %d lengths, --varlen %d", nk, nq);
    if (!rc) rc = varlen_setup(p, lq, lk ? lk : lq, nq, err, sizeof err);
    free(lq), free(lk);
    if (rc) fprintf(stderr, "ptxgen: %s\n", err);
    return rc;
}

static int setup_problem(Session *ss, const RunOpts *o) {
    char err[1024];
    Problem *p = &ss->pb;
    int kind = problem_kind(o->req.kernel), d, dv;
    ptxgen_head_dims(ss->set, &d, &dv);
    *p = (Problem){.kind = (ProblemKind)kind, .b = o->b, .s_q = o->s_q, .s_k = problem_kind_sparse(kind) ? o->s_kv : o->s_k,
                   .h_q = o->h_q, .h_kv = o->h_kv, .d = d, .d_v = dv, .topk = o->topk, .with_topk_length = o->topk_length,
                   .dt = o->req.dtype && !strcmp(o->req.dtype, "fp16") ? DT_FP16 : DT_BF16,
                   .scale = (float)(o->scale > 0 ? o->scale : 1.0 / sqrt(d)), .causal = o->req.causal};
    p->varlen = o->req.varlen != 0;
    if (p->varlen && varlen_problem(p, o)) return 2;
    p->num_splits = o->num_splits;
    if (o->req.page_size) {   /* paged KV: the lengths and the block table, per seed */
        p->page_size = o->req.page_size;
        if (paged_setup(p, o->seed, o->full_kv, err, sizeof err)) {
            fprintf(stderr, "ptxgen: %s\n", err);
            return 2;
        }
    }
    if (o->req.splitkv && !o->num_splits) {   /* none asked: 4 CTAs per SM on a GPU, 3 on the sim (one SM) */
        ptxgen_size sizes[PROBLEM_NSIZES];
        int ns = problem_sizes(p, sizes), sim = o->device_kind && !strcmp(o->device_kind, "sim");
        int n = sim ? 0 : ptxgen_num_splits(ss->set, sizes, ns, ss->info.sm_count);
        p->num_splits = n > 0 ? n : 3;
        printf("split-KV: %d splits (%s; --splits chooses)\n", p->num_splits,
               n > 0 ? "4 CTAs per SM of the forward, at most one per key block"
                     : sim ? "the sim's default" : "3: ptxgen_num_splits had no count for these sizes");
    }
    if (o->req.block_m) {   /* block-sparse: the mask's shape and contents */
        p->block_m = o->req.block_m, p->block_n = o->req.block_n;
        if (blockmask_setup(p, o->block_mask, o->mask_heads, err, sizeof err)) {
            fprintf(stderr, "ptxgen: %s\n", err);
            return 2;
        }
    }
    ptxgen_size sizes[PROBLEM_NSIZES];
    int ns = problem_sizes(p, sizes);
    for (int i = 0; i < ss->nk; i++) {
        if (ptxgen_launch_dims(ss->set, i, sizes, ns, ss->k[i].grid, ss->k[i].block, &ss->k[i].smem, err, sizeof err) ||
            ptxgen_cluster_dims(ss->set, i, sizes, ns, ss->k[i].cluster, err, sizeof err)) {
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
    derive_on_gpu(ss, o);
    if (problem_init(p, ss->dev, o->seed, o->pad, err, sizeof err) || problem_workspaces(p, ss->dev, ss->set, err, sizeof err))
        return fail("inputs", err);
    for (int i = 0; i < ss->nk; i++)
        if (problem_args(p, ss->set, i, ss->dev, err, sizeof err)) { fprintf(stderr, "ptxgen: %s\n", err); return 2; }
    return 0;
}

static int launch_kernel(Session *ss, int i) {
    char err[1024];
    const unsigned *c = ss->k[i].cluster;
    DevLaunchHow how = {c[0] * c[1] * c[2] > 1 ? c : NULL, ptxgen_programmatic_dependent(ss->set, i)};
    if (dev_launch_how(ss->k[i].fn, ss->k[i].grid, ss->k[i].block, &how, ss->k[i].smem, ss->pb.bound[i].args, err, sizeof err))
        return fail("launch", err);
    return 0;
}

/* One run of the set: zeroed workspaces, then every kernel in manifest order. */
static int launch(Session *ss) {
    char err[1024];
    if (problem_zero_workspaces(&ss->pb, ss->dev, err, sizeof err)) return fail("workspace", err);
    for (int i = 0; i < ss->nk; i++)
        if (launch_kernel(ss, i)) return 1;
    return 0;
}

/* The whole set (which < 0) or kernel `which` alone, after a run of the set
 * has left the workspaces it reads filled (not all as the set leaves them
 * for its next kernel: a block-sparse persistent forward's main kernel alone
 * finds its list kernel's class counts spent, and takes its tiles in their
 * own order). */
static int launch_part(Session *ss, int which) { return which < 0 ? launch(ss) : launch_kernel(ss, which); }

static void close_session(Session *ss) {
    gpu_ref_close(ss->gref);
    gpu_ref_close(ss->fwd_ref);
    if (ss->dev) problem_free(&ss->pb, ss->dev);
    if (ss->mod) dev_unload(ss->mod);
    ptxgen_free(ss->set);
    if (ss->dev) dev_close(ss->dev);
}

static void print_kernel(const Session *ss) {
    if (!strcmp(dev_kind(ss->dev), "sim"))   /* the sim runs each module as its .target, with that arch's limits */
        printf("device: %s, running %s PTX\n", ss->info.name, ss->arch);
    else printf("device: %s (sm_%d%d, %d SMs)\n", ss->info.name, ss->info.cc_major, ss->info.cc_minor, ss->info.sm_count);
    const char *note = ptxgen_family_note(ss->set);   /* --mma auto took another family: never silently */
    if (note && *note) printf("note: %s\n", note);
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

/* A run's outputs, each gathered contiguous, in problem_outputs order. */
typedef struct { int n; ProblemOutput spec[PROBLEM_MAX_OUTPUTS]; void *host[PROBLEM_MAX_OUTPUTS]; } Outputs;
/* The float64 value of every element of each output, in the same order, and each output's norm floor
 * (verify.h: 0 where none). */
typedef struct { int n; double *v[PROBLEM_MAX_OUTPUTS]; double floor[PROBLEM_MAX_OUTPUTS]; } Reference;


static int fetch(Session *ss, Outputs *out) {
    char err[1024];
    *out = (Outputs){0};
    out->n = problem_outputs(&ss->pb, out->spec);
    for (int i = 0; i < out->n; i++) {
        const Tensor *t = out->spec[i].t;
        if (!(out->host[i] = malloc(t->count * (size_t)t->esize + 1))) return fail("outputs", "out of host memory");
        if (problem_download(ss->dev, t, out->host[i], err, sizeof err)) return fail("download", err);
    }
    return 0;
}

static void outputs_free(Outputs *o) {
    for (int i = 0; i < o->n; i++) free(o->host[i]);
}

/* The bits of element e of output i (16-bit elements zero-extended). */
static uint32_t bits_at(const Outputs *o, int i, size_t e) {
    if (o->spec[i].t->esize == 2) return ((const uint16_t *)o->host[i])[e];
    return ((const uint32_t *)o->host[i])[e];
}

static double value_at(const Outputs *o, int i, size_t e, DType dt) {
    uint32_t b = bits_at(o, i, e);
    return o->spec[i].t->esize == 2 ? dt_to_f32(dt, (uint16_t)b) : bits_f32(b);
}

/* Elements of output i whose bits differ between a and b; *first: the first one's index. */
static size_t bits_differ(const Outputs *a, const Outputs *b, int i, size_t *first) {
    size_t n = 0;
    for (size_t e = a->spec[i].t->count; e-- > 0;)
        if (bits_at(a, i, e) != bits_at(b, i, e)) n++, *first = e;
    return n;
}


/* Picks the reference that judges ss's runs (--ref), opens the GPU one when
 * picked (ss->gref), and prints which and why. auto falls back to the CPU
 * reference when the GPU one fails to load; --ref gpu fails instead. */
static int pick_reference(Session *ss, const RunOpts *o) {
    double gflop = problem_flops(&ss->pb) / 1e9;
    int cuda = !strcmp(dev_kind(ss->dev), "cuda");
    int gpu = o->ref == RUN_REF_GPU || (o->ref != RUN_REF_CPU && cuda && gflop > AUTO_GPU_REF_GFLOP);
    char why[128], err[2048];
    if (ss->pb.varlen) gpu = 0, snprintf(why, sizeof why, "varlen: the GPU reference takes padded batches");
    else if (ss->pb.block_m) gpu = 0, snprintf(why, sizeof why, "block-sparse: the GPU reference takes no block mask");
    else if (ss->pb.page_size) gpu = 0, snprintf(why, sizeof why, "paged: the GPU reference takes no paged cache");
    else if (o->ref == RUN_REF_GPU || o->ref == RUN_REF_CPU) snprintf(why, sizeof why, "--ref %s", gpu ? "gpu" : "cpu");
    else if (!cuda) snprintf(why, sizeof why, "auto: the %s device has no GPU reference", dev_kind(ss->dev));
    else snprintf(why, sizeof why, "auto: %.1f GFLOP, %s the %.0f GFLOP threshold", gflop, gpu ? "above" : "within",
                  AUTO_GPU_REF_GFLOP);
    if (gpu && ss->fwd_ref) ss->gref = ss->fwd_ref, ss->fwd_ref = NULL;   /* compiled already for the inputs */
    if (gpu && !ss->gref && gpu_ref_open(&ss->gref, ss->dev, err, sizeof err)) {
        if (o->ref == RUN_REF_GPU) return fail("gpu reference", err);
        printf("reference: cpu float64 (%s, but the GPU reference failed to load: %s)\n", why, err);
        return 0;
    }
    printf("reference: %s (%s)\n", gpu ? "gpu, float64 sums to fp32 (runner/gpu_ref.c)" : "cpu float64", why);
    return 0;
}

/* The reference of every output of ss's problem, from the reference
 * pick_reference chose. Reads only the inputs, so it may run before the set
 * (the GPU one reads them on the device). */
static int reference(Session *ss, Reference *r) {
    char err[1024];
    ProblemOutput spec[PROBLEM_MAX_OUTPUTS];
    *r = (Reference){.n = problem_outputs(&ss->pb, spec)};
    for (int i = 0; i < r->n; i++)
        if (!(r->v[i] = malloc(spec[i].t->count * sizeof(double) + 1))) return fail("reference", "out of host memory");
    if (!ss->gref) {
        if (problem_reference(&ss->pb, r->v, r->floor, err, sizeof err)) return fail("reference", err);
    } else if (problem_gpu_reference(&ss->pb, ss->gref, ss->dev, r->v, r->floor, err, sizeof err))
        return fail("gpu reference", err);
    return 0;
}

static void reference_free(Reference *r) {
    for (int i = 0; i < r->n; i++) free(r->v[i]);
}

/* 0 when every output meets its KERNELS.md tolerance against ref; prints one
 * line each. float64: ref is the float64 reference, whose exact zeros (rows
 * with no valid key) an output marked exact_zero must meet exactly; another
 * device's outputs may underflow to 0 where these do not. */
static int judge(const Problem *p, const Outputs *out, const Reference *ref, const char *label, int float64) {
    int bad = 0;
    for (int i = 0; i < out->n; i++) {
        const Tensor *t = out->spec[i].t;
        double tol = out->spec[i].tol;
        int zeros = float64 && out->spec[i].exact_zero;
        double fl = ref->floor[i];
        VerifyResult r = t->esize == 2 ? verify_u16(out->host[i], p->dt, ref->v[i], t->count, tol, zeros, fl)
                                       : verify_f32(out->host[i], ref->v[i], t->count, tol, zeros, fl);
        char name[64];
        snprintf(name, sizeof name, "%s%s", label, t->name);
        verify_print(name, &r, tol);
        bad |= !r.pass;
    }
    return bad;
}

/* The outputs' canary zones after runs of the set: a store past either end
 * of an output fails the run even where it hit nothing the device checks. */
static int guards_intact(Session *ss) {
    char err[1024];
    if (!problem_check_guards(&ss->pb, ss->dev, err, sizeof err)) return 1;
    fprintf(stderr, "ptxgen: %s\n", err);
    return 0;
}

/* One run of the set on poisoned outputs (so every element must be written)
 * between rearmed canaries (so no byte beside them may be), fetched. */
static int run_once(Session *ss, Outputs *out) {
    char err[1024];
    if (problem_poison_outputs(&ss->pb, ss->dev, err, sizeof err)) return fail("poison", err);
    if (launch(ss)) return 1;
    if (dev_sync(ss->dev, err, sizeof err)) return fail("kernel", err);
    if (!guards_intact(ss)) return 1;
    if (problem_check_kept_zero(&ss->pb, ss->dev, err, sizeof err)) return fail("workspace", err);
    return fetch(ss, out);
}

/* A set that promises determinism runs again on the same inputs and must
 * reproduce the first run's outputs bit for bit. */
static int check_determinism(Session *ss, const Outputs *first) {
    if (!ptxgen_deterministic(ss->set)) {
        printf("  deterministic: not checked (the set is not built deterministic)\n");
        return 0;
    }
    Outputs again = {0};
    int rc = run_once(ss, &again);
    char names[64] = "";
    for (int i = 0; !rc && i < first->n; i++) {
        size_t e = 0;
        if (bits_differ(first, &again, i, &e)) {
            printf("  deterministic: FAIL %s differs across 2 runs, first at index %zu (0x%x, then 0x%x)\n",
                   first->spec[i].t->name, e, bits_at(first, i, e), bits_at(&again, i, e));
            rc = 1;
        }
        size_t len = strlen(names);
        snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", first->spec[i].t->name);
    }
    if (!rc) printf("  deterministic: %s bit-identical across 2 runs\n", names);
    outputs_free(&again);
    return rc;
}

/* PTXGEN_DUMP_WORKSPACE=NAME[,NAME..]: those workspaces after the run, for tests of what a set leaves there (the
 * persistent attn_fwd's tile order) */
static int dump_workspaces(Session *ss) {
    const char *list = getenv("PTXGEN_DUMP_WORKSPACE");
    char err[1024], name[64];
    while (list && *list) {
        size_t n = strcspn(list, ",");
        snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), list);
        if (n && problem_print_workspace(&ss->pb, ss->dev, name, stdout, err, sizeof err)) return fail("workspace", err);
        list += n + (list[n] == ',');
    }
    return 0;
}

/* Computes the reference, runs the set once, judges it, prints the sim's
 * counters (before a rerun adds to them), then checks determinism. */
static int check_outputs(Session *ss, const RunOpts *o) {
    char err[1024];
    Outputs out = {0};
    Reference ref = {0};
    int ran = !reference(ss, &ref) && !run_once(ss, &out), rc = !ran;
    if (ran) rc = judge(&ss->pb, &out, &ref, "", 1);
    if (ran && dump_workspaces(ss)) rc = 1;
    reference_free(&ref);
    if (o->stats && dev_print_stats(ss->dev, stdout, err, sizeof err)) rc = fail("stats", err);
    if (ran) rc |= check_determinism(ss, &out);
    outputs_free(&out);
    return rc;
}

static void print_shape(const Problem *p, const RunOpts *o) {
    char shape[256];
    problem_describe(p, shape, sizeof shape);
    printf("shape: %s pad=%d seed=%llu scale=%.9g\n", shape, o->pad, (unsigned long long)o->seed, p->scale);
}

int run_check(const RunOpts *in) {
    RunOpts opts, *o = &opts;
    int rc = prepare(in, 0, o);
    if (rc) return rc;
    if (o->ref == RUN_REF_GPU && o->device_kind && !strcmp(o->device_kind, "sim")) {
        fprintf(stderr, "ptxgen: --ref gpu needs a CUDA device: the sim cannot run the GPU reference (--ref cpu or auto)\n");
        return 2;
    }
    Session ss = {0};
    rc = open_session(&ss, o, o->device_kind, NULL);
    if (!rc) rc = setup_problem(&ss, o);
    if (!rc) {
        print_kernel(&ss);
        print_shape(&ss.pb, o);
        rc = pick_reference(&ss, o) || check_outputs(&ss, o);
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

static int time_runs(Session *ss, const RunOpts *o, int which, float *ms, float *median);

int run_measure(const RunOpts *in, Measure *m) {
    RunOpts opts, *o = &opts;
    char err[1024];
    *m = (Measure){.ms = -1};
    int rc = prepare(in, 0, o);
    if (rc) return rc;
    Session ss = {0};
    rc = open_session(&ss, o, o->device_kind, NULL);
    if (!rc) rc = setup_problem(&ss, o);
    if (!rc) {
        int dv;
        shape_class(o, m->cls, sizeof m->cls);
        problem_describe(&ss.pb, m->shape, sizeof m->shape);
        ptxgen_head_dims(ss.set, &m->d, &dv);
        m->nk = ss.nk;
        for (int i = 0; i < ss.nk; i++) {
            snprintf(m->k[i].entry, sizeof m->k[i].entry, "%s", ptxgen_entry(ss.set, i));
            m->k[i].regs = ss.k[i].attrs.num_regs, m->k[i].local_bytes = ss.k[i].attrs.local_bytes;
            ptxgen_kernel_plan_info(ss.set, i, &m->k[i].plan);
        }
        rc = pick_reference(&ss, o) || check_outputs(&ss, o);
        m->ok = !rc;
        DevStats s0;
        if (!rc && !dev_stats(ss.dev, &s0)) {   /* the sim: one more run's counters */
            rc = launch(&ss) || (dev_sync(ss.dev, err, sizeof err) && fail("sim", err)) || dev_stats(ss.dev, &m->stats);
            for (int c = 0; !rc && c < DEV_STAT_CLASSES; c++) m->stats.warp_insns[c] -= s0.warp_insns[c];
            m->stats.smem_wavefronts -= s0.smem_wavefronts, m->stats.smem_ideal -= s0.smem_ideal;
            m->stats.gmem_sectors -= s0.gmem_sectors, m->stats.ctas -= s0.ctas;
            m->have_stats = !rc;
        } else if (!rc) {
            float *ms = calloc((size_t)o->iters, sizeof *ms), med = 0;
            rc = !ms || time_runs(&ss, o, -1, ms, &med);
            if (!rc) m->ms = med, m->tflops = problem_flops(&ss.pb) / (med * 1e-3) / 1e12;
            free(ms);
        }
    }
    close_session(&ss);
    return rc;
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Median of o->iters timed runs of launch_part(which), sorted into ms. */
static int time_runs(Session *ss, const RunOpts *o, int which, float *ms, float *median) {
    char err[1024] = "";
    DevEvent *e0 = NULL, *e1 = NULL;
    int rc = dev_event_new(ss->dev, &e0, err, sizeof err) || dev_event_new(ss->dev, &e1, err, sizeof err);
    for (int i = 0; !rc && i < o->warmup; i++) rc = launch_part(ss, which);
    for (int i = 0; !rc && i < o->iters; i++)
        rc = dev_event_record(e0, err, sizeof err) || launch_part(ss, which) || dev_event_record(e1, err, sizeof err) ||
             dev_event_ms(e0, e1, &ms[i], err, sizeof err);
    if (rc && err[0]) fail("bench", err);
    if (e0) dev_event_free(e0);
    if (e1) dev_event_free(e1);
    if (!rc && o->stats && which < 0) {   /* bench --stats: the runs in launch order, before the sort */
        printf("runs (ms, in launch order):");
        for (int i = 0; i < o->iters; i++) printf(" %.4f", ms[i]);
        printf("\n");
    }
    if (!rc) {
        qsort(ms, (size_t)o->iters, sizeof *ms, cmp_float);
        *median = ms[o->iters / 2];
    }
    return rc;
}

/* Each kernel of a multi-kernel set timed alone: where the set's time goes. */
static int time_kernels(Session *ss, const RunOpts *o, float *ms, float set_ms) {
    int rc = 0;
    for (int i = 0; ss->nk > 1 && !rc && i < ss->nk; i++) {
        float med = 0;
        rc = time_runs(ss, o, i, ms, &med);
        if (!rc) printf("  %s: median %.4f ms (%.1f%% of the set)\n", ptxgen_entry(ss->set, i), med, 100.0 * med / set_ms);
    }
    return rc;
}

/* A paged decode is bound by memory: the KV bytes it reads per second beside the copy bandwidth of this GPU, measured
 * here (a device-to-device copy as large as the cache, at least 256 MB so it is not L2's; read + write bytes). */
static int kv_bandwidth(Session *ss, const RunOpts *o, float kernel_ms) {
    char err[1024] = "";
    double kv = paged_kv_bytes(&ss->pb);
    size_t bytes = (size_t)(kv > 256e6 ? kv : 256e6);
    DevPtr a = 0, b = 0;
    DevEvent *e0 = NULL, *e1 = NULL;
    float *ms = calloc((size_t)o->iters, sizeof *ms);
    int rc = !ms || dev_alloc(ss->dev, &a, bytes, err, sizeof err) || dev_alloc(ss->dev, &b, bytes, err, sizeof err) ||
             dev_fill_u8(ss->dev, a, 0x5a, bytes, err, sizeof err) || dev_event_new(ss->dev, &e0, err, sizeof err) ||
             dev_event_new(ss->dev, &e1, err, sizeof err);
    for (int i = 0; !rc && i < o->warmup + o->iters; i++) {
        float t = 0;
        rc = dev_event_record(e0, err, sizeof err) || dev_copy(ss->dev, b, a, bytes, err, sizeof err) ||
             dev_event_record(e1, err, sizeof err) || dev_event_ms(e0, e1, &t, err, sizeof err);
        if (i >= o->warmup) ms[i - o->warmup] = t;
    }
    if (!rc) {
        qsort(ms, (size_t)o->iters, sizeof *ms, cmp_float);
        double copy = 2.0 * (double)bytes / (ms[o->iters / 2] * 1e-3), read = kv / (kernel_ms * 1e-3);
        printf("bench: KV read %.0f GB/s (%.1f MB of K and V in %.4f ms); device-to-device copy %.0f GB/s (read + write of "
               "%.0f MB, median of %d); KV read / copy = %.1f%%\n", read / 1e9, kv / 1e6, kernel_ms, copy / 1e9,
               (double)bytes / 1e6, o->iters, 100.0 * read / copy);
    } else if (err[0]) fail("bench", err);
    if (e0) dev_event_free(e0);
    if (e1) dev_event_free(e1);
    if ((a && dev_free(ss->dev, a, err, sizeof err)) || (b && dev_free(ss->dev, b, err, sizeof err))) rc = fail("bench", err);
    free(ms);
    return rc;
}

int run_bench(const RunOpts *in) {
    RunOpts opts, *o = &opts;
    int rc = prepare(in, 1, o);
    if (rc) return rc;
    if (o->iters < 1) { fprintf(stderr, "ptxgen: --iters must be >= 1\n"); return 2; }
    if (o->ref) { fprintf(stderr, "ptxgen: bench takes no --ref (it judges no outputs; check does)\n"); return 2; }
    if (o->device_kind && !strcmp(o->device_kind, "sim")) {
        fprintf(stderr, "ptxgen: bench needs a GPU: the sim device does not model time (use check --device sim --stats)\n");
        return 2;
    }
    Session ss = {0};
    float *ms = calloc((size_t)o->iters, sizeof *ms);
    rc = open_session(&ss, o, o->device_kind, NULL);
    if (!rc) rc = setup_problem(&ss, o);
    float med = 0;
    if (!rc) rc = time_runs(&ss, o, -1, ms, &med);
    if (!rc) {
        char shape[256];
        problem_describe(&ss.pb, shape, sizeof shape);
        print_kernel(&ss);
        printf("bench: %s: median %.4f ms (min %.4f, max %.4f, n=%d) %.1f TFLOP/s\n", shape, med, ms[0],
               ms[o->iters - 1], o->iters, problem_flops(&ss.pb) / (med * 1e-3) / 1e12);
        rc = time_kernels(&ss, o, ms, med);
        if (!rc && ss.pb.page_size) rc = kv_bandwidth(&ss, o, med);
    }
    if (!rc && !guards_intact(&ss)) rc = 1;   /* bench shapes are the large ones: overflowing offsets show here */
    free(ms);
    close_session(&ss);
    return rc;
}

/* The sim's outputs judged against the GPU's (which stand in for the
 * reference, keeping its norm floors: the terms are the same), and how many
 * of each output's elements are bit-identical. */
static int compare_devices(const Problem *p, const Outputs *gpu, const Outputs *sim, Reference *ref) {
    for (int i = 0; i < gpu->n; i++)
        for (size_t e = 0; e < gpu->spec[i].t->count; e++) ref->v[i][e] = value_at(gpu, i, e, p->dt);
    int rc = judge(p, sim, ref, "sim vs gpu ", 0);
    for (int i = 0; i < gpu->n; i++) {
        size_t first, n = gpu->spec[i].t->count;
        printf("  sim vs gpu: %.2f%% of %s elements bit-identical\n",
               100.0 * (double)(n - bits_differ(gpu, sim, i, &first)) / (double)n, gpu->spec[i].t->name);
    }
    return rc;
}

/* Same PTX, same inputs, on a GPU and on the sim: each judged against the
 * reference (the GPU one computed on the GPU's inputs before either runs),
 * then the sim's outputs against the GPU's. */
int run_xcheck(const RunOpts *in) {
    RunOpts opts, *o = &opts;
    int rc = prepare(in, 0, o);
    if (rc) return rc;
    Session s[2] = {{0}};   /* 0: the GPU, 1: the sim */
    Outputs out[2] = {{0}};
    Reference ref = {0};
    Problem *p = &s[0].pb;
    int shown = 0;   /* the verdict line follows the device, kernel and shape lines */
    rc = open_session(&s[0], o, "cuda", NULL);
    if (!rc) rc = open_session(&s[1], o, "sim", s[0].arch[0] ? s[0].arch : o->req.arch);
    if (!rc && strcmp(ptxgen_ptx(s[0].set), ptxgen_ptx(s[1].set))) rc = fail("xcheck", "the two devices got different PTX");
    for (int i = 0; i < 2 && !rc; i++) rc = setup_problem(&s[i], o);
    if (!rc) {
        print_kernel(&s[0]);
        print_shape(p, o);
        shown = 1;
        rc = pick_reference(&s[0], o) || reference(&s[0], &ref);
    }
    for (int i = 0; i < 2 && !rc; i++) rc = run_once(&s[i], &out[i]);
    if (!rc) {
        rc = judge(p, &out[0], &ref, "gpu ", 1) | judge(p, &out[1], &ref, "sim ", 1);
        rc |= compare_devices(p, &out[0], &out[1], &ref);
    }
    if (shown) printf("%s\n", rc ? "xcheck: FAIL" : "xcheck: PASS");
    reference_free(&ref);
    for (int i = 0; i < 2; i++) outputs_free(&out[i]), close_session(&s[i]);
    return rc;
}

int run_selfcheck(const RunOpts *o) {
    if (o->device_kind && !strcmp(o->device_kind, "sim")) {
        fprintf(stderr, "ptxgen: selfcheck needs a CUDA device: the GPU references do not run on the sim\n");
        return 2;
    }
    char err[2048];
    Device *dev = NULL;
    DevInfo info;
    if (dev_open(&dev, "cuda", o->device, err, sizeof err) || dev_info(dev, &info, err, sizeof err)) {
        if (dev) dev_close(dev);
        return fail("device", err);
    }
    printf("device: %s (sm_%d%d, %d SMs)\n", info.name, info.cc_major, info.cc_minor, info.sm_count);
    int rc = gpu_ref_selfcheck(dev, err, sizeof err) ? fail("selfcheck", err) : 0;
    printf("%s\n", rc ? "selfcheck: FAIL" : "selfcheck: PASS");
    dev_close(dev);
    return rc;
}
