#include "problem.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "expr.h"
#include "bind.h"
#include "guard.h"
#include "ref.h"
#include "varlen.h"
#include "verify.h"
#include "blockmask.h"
#include "paged.h"

static void attn_layouts(Problem *p, int pad);
static void mla_layouts(Problem *p, int pad);
static int ref_fwd(const Problem *p, double *const ref[], double *term_norm2);
static int ref_bwd(const Problem *p, double *const ref[], double *term_norm2);
static int ref_mla(const Problem *p, double *const ref[], double *term_norm2);
static int ref_mla_grads(const Problem *p, double *const ref[], double *term_norm2);
static int gpu_fwd(const Problem *p, GpuRef *g, const DevPtr out[], char *err, size_t errlen);
static int gpu_bwd(const Problem *p, GpuRef *g, const DevPtr out[], char *err, size_t errlen);
static int gpu_mla(const Problem *p, GpuRef *g, const DevPtr out[], char *err, size_t errlen);
static int gpu_mla_grads(const Problem *p, GpuRef *g, const DevPtr out[], char *err, size_t errlen);
static double attn_fwd_flops(const Problem *p);
static double attn_bwd_flops(const Problem *p);
static double mla_fwd_flops(const Problem *p);
static double mla_bwd_flops(const Problem *p);

/* What each kernel kind reads and writes (KERNELS.md), by tensor name: the
 * tensors' layouts, the inputs drawn at random, whether top-k indices are
 * drawn (sparse MLA), for a backward kind the forward reference whose O and
 * LSE (of those inputs) it takes as inputs, the outputs with their bf16
 * tolerance (fp16 halves it, except LSE's) and whether they must be exactly 0
 * where the reference is (rows with no valid key, kv rows nobody selected:
 * see mark_cancellations),
 * their float64 reference on the CPU (-1 when out of host memory; with each
 * output's squared term norm in term_norm2, which a forward leaves as it is
 * and derive_forward passes NULL: ref.h ref_grad_term) and on the GPU (into
 * fp32 buffers out[], one per output), and the FLOPs of one run. */
typedef int (*RefFn)(const Problem *p, double *const ref[], double *term_norm2);
typedef int (*GpuFn)(const Problem *p, GpuRef *g, const DevPtr out[], char *err, size_t errlen);

typedef struct {
    const char *name;
    void (*layouts)(Problem *p, int pad);
    const char *random[4];
    int sparse;
    RefFn forward;
    GpuFn gpu_forward;
    struct { const char *name; double tol; int fp16_halves, exact_zero; } out[PROBLEM_MAX_OUTPUTS];
    RefFn reference;
    GpuFn gpu_reference;
    double (*flops)(const Problem *p);
} KindSpec;

static const KindSpec kKinds[PK_COUNT] = {
    [PK_ATTN_FWD] = {"attn_fwd", attn_layouts, {"q", "k", "v"}, 0, NULL, NULL, {{"o", 5e-3, 1, 0}, {"lse", 1e-4, 0, 0}},
                     ref_fwd, gpu_fwd, attn_fwd_flops},
    [PK_ATTN_BWD] = {"attn_bwd", attn_layouts, {"q", "k", "v", "do"}, 0, ref_fwd, gpu_fwd,
                     {{"dq", 1e-2, 1, 0}, {"dk", 1e-2, 1, 0}, {"dv", 1e-2, 1, 0}}, ref_bwd, gpu_bwd, attn_bwd_flops},
    [PK_MLA_FWD] = {"mla_fwd", mla_layouts, {"q", "kv"}, 1, NULL, NULL, {{"o", 5e-3, 1, 1}, {"lse", 1e-4, 0, 0}}, ref_mla,
                    gpu_mla, mla_fwd_flops},
    [PK_MLA_BWD] = {"mla_bwd", mla_layouts, {"q", "kv", "do"}, 1, ref_mla, gpu_mla, {{"dq", 1e-2, 1, 1}, {"dkv", 1e-2, 1, 1}},
                    ref_mla_grads, gpu_mla_grads, mla_bwd_flops},
};

static const KindSpec *kind(const Problem *p) { return &kKinds[p->kind]; }

int problem_kind(const char *kernel) {
    for (int k = 0; kernel && k < PK_COUNT; k++)
        if (!strcmp(kKinds[k].name, kernel)) return k;
    return -1;
}

int problem_kind_sparse(ProblemKind k) { return kKinds[k].sparse; }

void problem_kind_names(char *buf, size_t len) {
    for (int k = 0, n = 0; k < PK_COUNT && n >= 0 && (size_t)n < len; k++)
        n += snprintf(buf + n, len - (size_t)n, "%s%s", k ? ", " : "", kKinds[k].name);
}

enum { NTENSORS = 19 };

/* Every tensor any kind has: the eight [b, rows, heads, width] ones, LSE,
 * MLA's kv, indices, topk_length and dkv, varlen's offsets, and the block mask and head types. Takes p const and hands out
 * writable tensors, as strchr does: the caller that owns p decides. */
static void all_tensors(const Problem *cp, Tensor *all[NTENSORS]) {
    Problem *p = (Problem *)cp;
    Tensor *t[NTENSORS] = {&p->q, &p->k, &p->v, &p->o, &p->dout, &p->dq, &p->dk, &p->dv, &p->lse, &p->kv, &p->indices,
                           &p->topk_length, &p->dkv, &p->cu_q, &p->cu_k, &p->block_mask, &p->head_mask_type,
                           &p->block_table, &p->seqlens};
    memcpy(all, t, sizeof t);
}

static Tensor *tensor_named(const Problem *p, const char *name) {
    Tensor *all[NTENSORS];
    all_tensors(p, all);
    for (int i = 0; i < NTENSORS; i++)
        if (all[i]->name && !strcmp(all[i]->name, name)) return all[i];
    return NULL;
}

void problem_layout(Tensor *t, const char *name, int b, int rows, int heads, int width, int pad, int esize) {
    *t = (Tensor){.name = name, .rows = rows, .heads = heads, .width = width, .esize = esize};
    t->stride_h = (uint64_t)(width + pad);
    t->stride_s = t->stride_h * (uint64_t)heads;
    t->stride_b = t->stride_s * (uint64_t)rows;
    t->elems = (size_t)t->stride_b * (size_t)b;
    t->count = (size_t)b * (size_t)rows * (size_t)heads * (size_t)width;
}

/* Where row r of the contiguous view (r counts (b, s, h) in that order) starts in the strided layout. */
static size_t row_offset(const Tensor *t, size_t r) {
    size_t h = r % (size_t)t->heads, s = r / (size_t)t->heads % (size_t)t->rows, b = r / (size_t)t->heads / (size_t)t->rows;
    return (size_t)(b * t->stride_b + s * t->stride_s + h * t->stride_h);
}

static void put_bits(uint8_t *raw, int esize, size_t i, uint64_t bits) {
    if (esize == 2) ((uint16_t *)raw)[i] = (uint16_t)bits;
    else ((uint32_t *)raw)[i] = (uint32_t)bits;
}

/* t's whole strided allocation on the host, random bits everywhere (so
 * padding a kernel reads shows); NULL (err says why) when out of memory. */
static uint8_t *strided_buffer(const Tensor *t, Rng *rng, char *err, size_t errlen) {
    uint8_t *raw = malloc(t->elems * (size_t)t->esize);
    if (!raw) snprintf(err, errlen, "out of host memory for %s", t->name);
    for (size_t i = 0; raw && i < t->elems; i++) put_bits(raw, t->esize, i, rng_u64(rng));
    return raw;
}

/* Element i of the contiguous view, at its place in the strided buffer. */
static void put_element(const Tensor *t, uint8_t *raw, size_t i, uint32_t bits) {
    put_bits(raw, t->esize, row_offset(t, i / (size_t)t->width) + i % (size_t)t->width, bits);
}

/* Allocates t on the device and uploads raw, which it frees. */
static int upload_raw(Tensor *t, uint8_t *raw, Device *dev, char *err, size_t errlen) {
    size_t bytes = t->elems * (size_t)t->esize;   /* varlen: every sequence may have no keys (a 0-row k and v) */
    int rc = dev_alloc(dev, &t->dev, bytes ? bytes : 16, err, errlen) ||
             (bytes && dev_upload(dev, t->dev, raw, bytes, err, errlen));
    free(raw);
    return rc;
}

/* Puts vals (NULL: fresh N(0,1) draws), rounded to t's element type, into
 * t's strided layout, keeps the rounded values in t->host, and uploads. */
static int upload(Tensor *t, DType dt, Rng *rng, const double *vals, Device *dev, char *err, size_t errlen) {
    uint8_t *raw = strided_buffer(t, rng, err, errlen);
    t->host = raw ? malloc(t->count * sizeof(float)) : NULL;
    if (!t->host) { free(raw); snprintf(err, errlen, "out of host memory for %s", t->name); return 1; }
    for (size_t i = 0; i < t->count; i++) {
        float x = (float)(vals ? vals[i] : rng_normal(rng));
        uint32_t bits = t->esize == 2 ? f32_to_dt(dt, x) : f32_bits(x);
        t->host[i] = t->esize == 2 ? dt_to_f32(dt, (uint16_t)bits) : x;
        put_element(t, raw, i, bits);
    }
    return upload_raw(t, raw, dev, err, errlen);
}

/* t->ints, already drawn, into t's strided layout, uploaded. */
static int upload_ints(Tensor *t, Rng *rng, Device *dev, char *err, size_t errlen) {
    uint8_t *raw = strided_buffer(t, rng, err, errlen);
    for (size_t i = 0; raw && i < t->count; i++) put_element(t, raw, i, (uint32_t)t->ints[i]);
    return !raw || upload_raw(t, raw, dev, err, errlen);
}

static int32_t *host_ints(Tensor *t, char *err, size_t errlen) {
    if (!(t->ints = malloc(t->count * sizeof *t->ints))) snprintf(err, errlen, "out of host memory for %s", t->name);
    return t->ints;
}

/* MLA's selection: the indices, and topk_length when the problem passes one. */
static int draw_selection(Problem *p, Rng *rng, Device *dev, char *err, size_t errlen) {
    if (!host_ints(&p->indices, err, errlen)) return 1;
    mla_draw_indices(rng, p->s_q, p->s_k, p->topk, p->indices.ints);
    if (upload_ints(&p->indices, rng, dev, err, errlen)) return 1;
    if (!p->with_topk_length) return 0;
    if (!host_ints(&p->topk_length, err, errlen)) return 1;
    mla_draw_topk_length(rng, p->indices.ints, p->s_q, p->s_k, p->topk, p->topk_length.ints);
    return upload_ints(&p->topk_length, rng, dev, err, errlen);
}

static RefAttn ref_shape(const Problem *p) {
    return (RefAttn){p->b, p->s_q, p->s_k, p->h_q, p->h_kv, p->d, p->d_v, p->causal, p->scale, blockmask_ref(p, 0)};
}

static int ref_fwd(const Problem *p, double *const ref[], double *term_norm2) {
    (void)term_norm2;   /* no forward output sums signed terms */
    if (p->varlen) return varlen_ref_fwd(p, ref);
    if (p->page_size) return paged_ref_fwd(p, ref);
    RefAttn ra = ref_shape(p);
    return ref_attn_fwd(&ra, p->q.host, p->k.host, p->v.host, ref[0], ref[1], 0);
}

static int ref_bwd(const Problem *p, double *const ref[], double *term_norm2) {
    if (p->varlen) return varlen_ref_bwd(p, ref, term_norm2);
    RefAttn ra = ref_shape(p);
    return ref_attn_bwd(&ra, p->q.host, p->k.host, p->v.host, p->o.host, p->dout.host, ref[0], ref[1], ref[2], term_norm2, 0);
}

/* topk_length.ints is NULL when the problem passes none. */
static RefMla mla_shape(const Problem *p) {
    return (RefMla){p->s_q, p->s_k, p->h_q, p->topk, p->d, p->d_v, p->scale, p->indices.ints, p->topk_length.ints};
}

static int ref_mla(const Problem *p, double *const ref[], double *term_norm2) {
    (void)term_norm2;   /* no forward output sums signed terms */
    RefMla m = mla_shape(p);
    return ref_mla_fwd(&m, p->q.host, p->kv.host, ref[0], ref[1], 0);
}

static int ref_mla_grads(const Problem *p, double *const ref[], double *term_norm2) {
    RefMla m = mla_shape(p);
    return ref_mla_bwd(&m, p->q.host, p->kv.host, p->o.host, p->dout.host, ref[0], ref[1], term_norm2, 0);
}

static GpuRefStride gpu_stride(const Tensor *t) {
    return (GpuRefStride){(long long)t->stride_b, (long long)t->stride_s, (long long)t->stride_h};
}

/* The GPU reference reads the tensors the kernel under test reads, in place (strided). */
static GpuRefAttn gpu_attn_shape(const Problem *p) {
    return (GpuRefAttn){.dtype = p->dt, .b = p->b, .s_q = p->s_q, .s_k = p->s_k, .h_q = p->h_q, .h_kv = p->h_kv,
                        .d = p->d, .dv = p->d_v, .causal = p->causal, .scale = p->scale, .q = gpu_stride(&p->q),
                        .k = gpu_stride(&p->k), .v = gpu_stride(&p->v), .o = gpu_stride(&p->o),
                        .dout = gpu_stride(&p->dout)};
}

static int gpu_fwd(const Problem *p, GpuRef *g, const DevPtr out[], char *err, size_t errlen) {
    GpuRefAttn a = gpu_attn_shape(p);
    return gpu_ref_attn_fwd(g, &a, p->q.dev, p->k.dev, p->v.dev, out[0], out[1], err, errlen);
}

/* O and LSE: the inputs problem_init derived and uploaded (LSE fp32 [b, h_q, s_q], contiguous). */
static int gpu_bwd(const Problem *p, GpuRef *g, const DevPtr out[], char *err, size_t errlen) {
    GpuRefAttn a = gpu_attn_shape(p);
    return gpu_ref_attn_bwd(g, &a, p->q.dev, p->k.dev, p->v.dev, p->o.dev, p->dout.dev, p->lse.dev, out[0], out[1],
                            out[2], err, errlen);
}

/* mla_layouts lays out o and do for both MLA kinds; the forward ignores their strides. */
static GpuRefMla gpu_mla_shape(const Problem *p) {
    return (GpuRefMla){.dtype = p->dt, .s_q = p->s_q, .s_kv = p->s_k, .h_q = p->h_q, .topk = p->topk, .d_qk = p->d,
                       .d_v = p->d_v, .scale = p->scale, .q_stride_s = (long long)p->q.stride_s,
                       .q_stride_h = (long long)p->q.stride_h, .kv_stride_s = (long long)p->kv.stride_s,
                       .indices_stride_s = (long long)p->indices.stride_s, .o_stride_s = (long long)p->o.stride_s,
                       .o_stride_h = (long long)p->o.stride_h, .do_stride_s = (long long)p->dout.stride_s,
                       .do_stride_h = (long long)p->dout.stride_h};
}

/* topk_length.dev is 0 (none) when the problem passes none. */
static int gpu_mla(const Problem *p, GpuRef *g, const DevPtr out[], char *err, size_t errlen) {
    GpuRefMla m = gpu_mla_shape(p);
    return gpu_ref_mla_fwd(g, &m, p->q.dev, p->kv.dev, p->indices.dev, p->topk_length.dev, out[0], out[1], err, errlen);
}

/* o and lse: the inputs problem_init derived and uploaded (lse fp32 [s_q, h_q], contiguous). */
static int gpu_mla_grads(const Problem *p, GpuRef *g, const DevPtr out[], char *err, size_t errlen) {
    GpuRefMla m = gpu_mla_shape(p);
    return gpu_ref_mla_bwd(g, &m, p->q.dev, p->kv.dev, p->o.dev, p->dout.dev, p->lse.dev, p->indices.dev,
                           p->topk_length.dev, out[0], out[1], err, errlen);
}

/* S = Q K^T (2 d per score) and O = P V (2 d_v): 4 b h s_q s_k d when d_v = d */
static double attn_fwd_flops(const Problem *p) {
    double f = 2.0 * p->b * p->h_q * (double)p->s_q * p->s_k * (p->d + p->d_v);
    if (p->varlen) f = varlen_fwd_flops(p);
    else if (p->page_size) f = paged_fwd_flops(p);
    else if (p->causal) f /= 2;
    return p->block_m ? f * blockmask_density(p) : f;   /* block-sparse: the active blocks' share */
}

static double attn_bwd_flops(const Problem *p) { return 2.5 * attn_fwd_flops(p); }
static double mla_fwd_flops(const Problem *p) { return 2.0 * p->s_q * p->h_q * (double)p->topk * (p->d + p->d_v); }
static double mla_bwd_flops(const Problem *p) {
    return 2.0 * p->s_q * p->h_q * (double)p->topk * (3 * p->d + 2 * p->d_v);
}

/* t's fp32 values widened into ref; a NaN (an element the reference left poisoned) is an error. */
static int widen(const Tensor *t, const float *f, double *ref, char *err, size_t errlen) {
    size_t nan = 0;
    for (size_t e = 0; e < t->count; e++) {
        ref[e] = f[e];
        nan += isnan(f[e]) != 0;
    }
    if (nan) snprintf(err, errlen, "the GPU reference left %zu of %zu %s elements NaN", nan, t->count, t->name);
    return nan != 0;
}

/* GPU reference fn of tensors t[0..n) (fp32 buffers, poisoned: NaN wherever
 * it writes nothing, which is an error) widened into out. */
static int gpu_run(Problem *p, Device *dev, GpuFn fn, GpuRef *g, const Tensor *const t[], int n, double *const out[],
                   char *err, size_t errlen) {
    DevPtr buf[PROBLEM_MAX_OUTPUTS] = {0};
    int rc = 0;
    for (int i = 0; !rc && i < n; i++)
        rc = dev_alloc(dev, &buf[i], t[i]->count * sizeof(float), err, errlen) ||
             dev_fill_u8(dev, buf[i], 0xFF, t[i]->count * sizeof(float), err, errlen);
    if (!rc) rc = fn(p, g, buf, err, errlen);
    for (int i = 0; !rc && i < n; i++) {
        float *f = malloc(t[i]->count * sizeof *f);
        if (!f) snprintf(err, errlen, "out of host memory for the GPU reference's %s", t[i]->name);
        rc = !f || dev_download(dev, f, buf[i], t[i]->count * sizeof *f, err, errlen) || widen(t[i], f, out[i], err, errlen);
        free(f);
    }
    for (int i = 0; i < n; i++)   /* after a failure, keeps its message */
        if (buf[i] && dev_free(dev, buf[i], rc ? NULL : err, rc ? 0 : errlen)) rc = 1;
    return rc;
}

/* The forward's outputs from the GPU reference into host doubles (p->fwd_gpu). */
static int gpu_forward(Problem *p, Device *dev, double *const out[2], char *err, size_t errlen) {
    const Tensor *t[2] = {&p->o, &p->lse};
    return gpu_run(p, dev, kind(p)->gpu_forward, p->fwd_gpu, t, 2, out, err, errlen);
}

/* A backward's O and LSE: the forward (ks->forward, float64 on the CPU, or
 * the GPU reference's when p->fwd_gpu is set: realistic shapes) of the
 * rounded inputs (and selection), rounded like a forward kernel's outputs (so
 * dO . O matches what a real forward hands over). */
static int derive_forward(Problem *p, Rng *rng, Device *dev, char *err, size_t errlen) {
    double *o = malloc(p->o.count * sizeof(double)), *lse = malloc(p->lse.count * sizeof(double));
    int rc = !o || !lse;
    if (rc) snprintf(err, errlen, "out of host memory for o and lse");
    else if (p->fwd_gpu) rc = gpu_forward(p, dev, (double *const[]){o, lse}, err, errlen);
    else if (kind(p)->forward(p, (double *const[]){o, lse}, NULL))
        rc = 1, snprintf(err, errlen, "out of host memory for the CPU reference");
    if (!rc) rc = upload(&p->o, p->dt, rng, o, dev, err, errlen) || upload(&p->lse, p->dt, rng, lse, dev, err, errlen);
    free(o), free(lse);
    return rc;
}

static void attn_layouts(Problem *p, int pad) {
    if (p->block_m) blockmask_layouts(p);
    if (p->page_size) {
        paged_layouts(p, pad);
        return;
    }
    if (p->varlen) {
        varlen_layouts(p, pad);
        return;
    }
    problem_layout(&p->q, "q", p->b, p->s_q, p->h_q, p->d, pad, 2);
    problem_layout(&p->k, "k", p->b, p->s_k, p->h_kv, p->d, pad, 2);
    problem_layout(&p->v, "v", p->b, p->s_k, p->h_kv, p->d_v, pad, 2);
    problem_layout(&p->o, "o", p->b, p->s_q, p->h_q, p->d_v, pad, 2);
    problem_layout(&p->dout, "do", p->b, p->s_q, p->h_q, p->d_v, pad, 2);
    problem_layout(&p->dq, "dq", p->b, p->s_q, p->h_q, p->d, pad, 2);
    problem_layout(&p->dk, "dk", p->b, p->s_k, p->h_kv, p->d, pad, 2);
    problem_layout(&p->dv, "dv", p->b, p->s_k, p->h_kv, p->d_v, pad, 2);
    problem_layout(&p->lse, "lse", p->b, p->h_q, 1, p->s_q, 0, 4);
}

/* KERNELS.md "mla_fwd / mla_bwd": no batch; the indices' rows padded like the others; lse [s_q, h_q];
 * dkv like kv. Both MLA kinds: each allocates only the tensors it binds. */
static void mla_layouts(Problem *p, int pad) {
    problem_layout(&p->q, "q", 1, p->s_q, p->h_q, p->d, pad, 2);
    problem_layout(&p->kv, "kv", 1, p->s_k, 1, p->d, pad, 2);
    problem_layout(&p->indices, "indices", 1, p->s_q, 1, p->topk, pad, 4);
    problem_layout(&p->topk_length, "topk_length", 1, 1, 1, p->s_q, 0, 4);
    p->topk_length.optional = 1;
    problem_layout(&p->o, "o", 1, p->s_q, p->h_q, p->d_v, pad, 2);
    problem_layout(&p->lse, "lse", 1, p->s_q, 1, p->h_q, 0, 4);
    problem_layout(&p->dout, "do", 1, p->s_q, p->h_q, p->d_v, pad, 2);
    problem_layout(&p->dq, "dq", 1, p->s_q, p->h_q, p->d, pad, 2);
    problem_layout(&p->dkv, "dkv", 1, p->s_k, 1, p->d, pad, 2);
}

int problem_init(Problem *p, Device *dev, uint64_t seed, int pad, char *err, size_t errlen) {
    const KindSpec *ks = kind(p);
    Rng rng;
    rng_seed(&rng, seed);
    ks->layouts(p, pad);
    if (p->varlen && (upload_ints(&p->cu_q, &rng, dev, err, errlen) || upload_ints(&p->cu_k, &rng, dev, err, errlen)))
        return 1;
    if (p->page_size && (upload_ints(&p->block_table, &rng, dev, err, errlen) || upload_ints(&p->seqlens, &rng, dev, err, errlen)))
        return 1;
    if (p->block_m && (blockmask_draw(p, &rng, err, errlen) || upload_ints(&p->block_mask, &rng, dev, err, errlen) ||
                       upload_ints(&p->head_mask_type, &rng, dev, err, errlen)))
        return 1;
    for (size_t i = 0; i < sizeof ks->random / sizeof ks->random[0] && ks->random[i]; i++)
        if (upload(tensor_named(p, ks->random[i]), p->dt, &rng, NULL, dev, err, errlen)) return 1;
    if (ks->sparse && draw_selection(p, &rng, dev, err, errlen)) return 1;   /* the MLA forward reads it */
    if (p->page_size && paged_poison(p, dev, err, errlen)) return 1;
    if (ks->forward && derive_forward(p, &rng, dev, err, errlen)) return 1;
    for (int i = 0; i < PROBLEM_MAX_OUTPUTS && ks->out[i].name; i++) {
        Tensor *t = tensor_named(p, ks->out[i].name);
        if (guard_alloc(dev, &t->dev, t->elems * (size_t)t->esize, err, errlen)) return 1;
        t->guarded = 1;
    }
    return 0;
}

int problem_outputs(Problem *p, ProblemOutput out[PROBLEM_MAX_OUTPUTS]) {
    const KindSpec *ks = kind(p);
    int n = 0;
    for (; n < PROBLEM_MAX_OUTPUTS && ks->out[n].name; n++) {
        double tol = ks->out[n].tol;
        out[n].t = tensor_named(p, ks->out[n].name);
        out[n].tol = p->dt == DT_FP16 && ks->out[n].fp16_halves ? tol / 2 : tol;
        out[n].exact_zero = ks->out[n].exact_zero;
    }
    return n;
}

/* KERNELS.md's exact zeros are structural: the o and dq rows of a token with
 * no valid slot, the dkv row of a kv row no valid slot selects. A reference
 * also gives exact zeros by cancellation, which no kernel reproduces: when
 * every valid slot of a token holds one kv row, P = 1 there and o is that
 * row, so dP = delta and dS = 0 in float64, while a kernel's P from an fp32
 * lse (and its fp32 sums of dP and delta) leave a residue (dq, and dkv's columns
 * past d_v). Such elements of an exact_zero output become the smallest
 * double: 0 for every tolerance, but not an exact zero to verify.h. */
static int mark_cancellations(const Problem *p, double *const ref[PROBLEM_MAX_OUTPUTS], char *err, size_t errlen) {
    const KindSpec *ks = kind(p);
    if (!ks->sparse) return 0;   /* dense kinds have no exact_zero output */
    RefMla m = mla_shape(p);
    /* token[t]: t has a valid slot; row[r]: a valid slot selects kv row r */
    uint8_t *token = calloc((size_t)p->s_q + 1, 1), *row = calloc((size_t)p->s_k + 1, 1);
    if (!token || !row) {
        free(token), free(row);
        return snprintf(err, errlen, "out of host memory for the reference's selection"), 1;
    }
    for (int t = 0; t < p->s_q; t++)
        for (int j = 0; j < p->topk; j++)
            if (ref_mla_valid(&m, t, j)) token[t] = row[p->indices.ints[(size_t)t * p->topk + j]] = 1;
    for (int i = 0; i < PROBLEM_MAX_OUTPUTS && ks->out[i].name; i++) {
        if (!ks->out[i].exact_zero) continue;
        const Tensor *t = tensor_named(p, ks->out[i].name);
        const uint8_t *live = t == &p->dkv ? row : token;   /* by the tensor's s index: a kv row or a token */
        size_t per_s = (size_t)t->heads * (size_t)t->width;
        for (size_t e = 0; e < t->count; e++)
            if (ref[i][e] == 0 && live[e / per_s]) ref[i][e] = DBL_TRUE_MIN;
    }
    free(token), free(row);
    return 0;
}

int problem_reference(const Problem *p, double *const ref[PROBLEM_MAX_OUTPUTS], double norm_floor[PROBLEM_MAX_OUTPUTS],
                      char *err, size_t errlen) {
    double term_norm2[PROBLEM_MAX_OUTPUTS] = {0};   /* 0 for the outputs that sum no signed terms */
    if (kind(p)->reference(p, ref, term_norm2)) return snprintf(err, errlen, "out of host memory for the CPU reference"), 1;
    for (int i = 0; i < PROBLEM_MAX_OUTPUTS; i++) norm_floor[i] = verify_term_floor(term_norm2[i]);
    return mark_cancellations(p, ref, err, errlen);
}

int problem_gpu_reference(Problem *p, GpuRef *g, Device *dev, double *const ref[PROBLEM_MAX_OUTPUTS],
                          double norm_floor[PROBLEM_MAX_OUTPUTS], char *err, size_t errlen) {
    ProblemOutput out[PROBLEM_MAX_OUTPUTS];
    const Tensor *t[PROBLEM_MAX_OUTPUTS];
    int n = problem_outputs(p, out);
    /* No floor: the GPU reference returns no term norms. auto picks it only
     * above AUTO_GPU_REF_GFLOP (check.c), at benchmark shapes whose rows
     * spread over many keys, where nothing cancels (ratios in verify.h);
     * --ref gpu on a degenerate shape (one key, one kv row) keeps the plain
     * ||out - ref|| / ||ref||, and --ref cpu gives it the floor. */
    for (int i = 0; i < PROBLEM_MAX_OUTPUTS; i++) norm_floor[i] = 0;
    for (int i = 0; i < n; i++) t[i] = out[i].t;
    if (gpu_run(p, dev, kind(p)->gpu_reference, g, t, n, ref, err, errlen)) return 1;
    return mark_cancellations(p, ref, err, errlen);
}

double problem_flops(const Problem *p) { return kind(p)->flops(p); }

void problem_describe(const Problem *p, char *buf, size_t len) {
    size_t n;
    if (p->varlen) varlen_describe(p, buf, len);
    else if (p->page_size) paged_describe(p, buf, len);
    else if (!kind(p)->sparse)
        snprintf(buf, len, "b=%d s_q=%d s_k=%d h_q=%d h_kv=%d d=%d%s", p->b, p->s_q, p->s_k, p->h_q, p->h_kv, p->d,
                 p->causal ? " causal" : "");
    if (!kind(p)->sparse) {
        if (p->block_m && (n = strlen(buf)) < len) blockmask_describe(p, buf + n, len - n);
        if (p->num_splits && (n = strlen(buf)) < len) snprintf(buf + n, len - n, " split-KV %d", p->num_splits);
        return;
    }
    RefMla m = mla_shape(p);
    long valid = 0;
    int empty = 0;
    for (int t = 0; t < p->s_q; t++) {
        int n = 0;
        for (int j = 0; j < p->topk; j++) n += ref_mla_valid(&m, t, j);
        valid += n, empty += !n;
    }
    snprintf(buf, len, "s_q=%d s_kv=%d h_q=%d topk=%d d_qk=%d d_v=%d%s (valid slots %ld of %ld, %d token%s with none)",
             p->s_q, p->s_k, p->h_q, p->topk, p->d, p->d_v, m.topk_length ? " topk_length" : "", valid,
             (long)p->s_q * p->topk, empty, empty == 1 ? "" : "s");
}

static size_t tensor_bytes(const Tensor *t) { return t->elems * (size_t)t->esize; }

/* Rearms the guards too, so that each run is judged on its own stores. */
int problem_poison_outputs(Problem *p, Device *dev, char *err, size_t errlen) {
    ProblemOutput out[PROBLEM_MAX_OUTPUTS];
    for (int i = 0, n = problem_outputs(p, out); i < n; i++)
        if (dev_fill_u8(dev, out[i].t->dev, 0xFF, tensor_bytes(out[i].t), err, errlen) ||
            guard_arm(dev, out[i].t->dev, tensor_bytes(out[i].t), err, errlen))
            return 1;
    return 0;
}

int problem_check_guards(Problem *p, Device *dev, char *err, size_t errlen) {
    ProblemOutput out[PROBLEM_MAX_OUTPUTS];
    for (int i = 0, n = problem_outputs(p, out); i < n; i++)
        if (guard_check(dev, out[i].t->dev, tensor_bytes(out[i].t), out[i].t->name, err, errlen)) return 1;
    return 0;
}

int problem_download(Device *dev, const Tensor *t, void *dst, char *err, size_t errlen) {
    size_t es = (size_t)t->esize, row = (size_t)t->width * es;
    uint8_t *raw = malloc(t->elems * es);
    if (!raw) { snprintf(err, errlen, "out of host memory for %s", t->name); return 1; }
    int rc = dev_download(dev, raw, t->dev, t->elems * es, err, errlen);
    for (size_t r = 0; !rc && r < t->count / (size_t)t->width; r++)
        memcpy((uint8_t *)dst + r * row, raw + row_offset(t, r) * es, row);
    free(raw);
    return rc;
}

int problem_sizes(const Problem *p, ptxgen_size out[PROBLEM_NSIZES]) {
    const ptxgen_size s[PROBLEM_NSIZES] = {{"b", p->b},       {"s_q", p->s_q},   {"s_k", p->s_k},  {"h_q", p->h_q},
                                           {"h_kv", p->h_kv}, {"s_kv", p->s_k}, {"topk", p->topk},
                                           {"total_q", p->total_q}, {"total_k", p->total_k},
                                           {"n_mask_heads", p->n_mask_heads}, {"mask_rows", p->mask_rows},
                                           {"mask_cols", p->mask_cols}, {"max_pages", p->max_pages},
                                           {"num_splits", p->num_splits}, {"num_pages", p->num_pages}};
    memcpy(out, s, sizeof s);
    return PROBLEM_NSIZES;
}

int problem_workspaces(Problem *p, Device *dev, const ptxgen_set *s, char *err, size_t errlen) {
    ptxgen_size sizes[PROBLEM_NSIZES];
    int ns = problem_sizes(p, sizes);
    p->nws = ptxgen_num_workspaces(s);
    if (p->nws > (int)(sizeof p->ws / sizeof p->ws[0])) {
        snprintf(err, errlen, "the set has %d workspaces; the runner holds at most %d", p->nws,
                 (int)(sizeof p->ws / sizeof p->ws[0]));
        return p->nws = 0, 1;
    }
    for (int i = 0; i < p->nws; i++) {
        ptxgen_workspace w;
        unsigned long long bytes;
        ptxgen_workspace_info(s, i, &w);
        if (ptxgen_workspace_bytes(s, i, sizes, ns, &bytes, err, errlen)) return 1;
        p->ws[i].name = w.name, p->ws[i].bytes = (size_t)bytes, p->ws[i].zero = w.zero_init && !w.kept_zero;
        p->ws[i].kept = w.kept_zero;
        if (dev_alloc(dev, &p->ws[i].dev, p->ws[i].bytes, err, errlen)) return 1;
        if (w.kept_zero && dev_fill_u8(dev, p->ws[i].dev, 0, p->ws[i].bytes, err, errlen)) return 1;
    }
    return 0;
}

/* Workspace i's bytes on the host (the caller frees them), or NULL with err set */
static unsigned char *ws_host(const Problem *p, Device *dev, int i, char *err, size_t errlen) {
    unsigned char *h = malloc(p->ws[i].bytes ? p->ws[i].bytes : 1);
    if (!h) return snprintf(err, errlen, "out of host memory for workspace %s", p->ws[i].name), NULL;
    if (p->ws[i].bytes && dev_download(dev, h, p->ws[i].dev, p->ws[i].bytes, err, errlen)) return free(h), NULL;
    return h;
}

int problem_check_kept_zero(const Problem *p, Device *dev, char *err, size_t errlen) {
    for (int i = 0; i < p->nws; i++) {
        if (!p->ws[i].kept || !p->ws[i].bytes) continue;
        unsigned char *h = ws_host(p, dev, i, err, errlen);
        if (!h) return 1;
        size_t at = 0;
        while (at < p->ws[i].bytes && !h[at]) at++;
        free(h);
        if (at < p->ws[i].bytes)
            return snprintf(err, errlen, "workspace %s (kept_zero: every run of the set must leave it zeroed) holds a "
                            "nonzero byte at offset %zu after the run", p->ws[i].name, at), 1;
    }
    return 0;
}

int problem_print_workspace(const Problem *p, Device *dev, const char *name, FILE *f, char *err, size_t errlen) {
    for (int i = 0; i < p->nws; i++) {
        if (strcmp(p->ws[i].name, name)) continue;
        size_t n = p->ws[i].bytes / 4;
        unsigned char *h = ws_host(p, dev, i, err, errlen);
        if (!h) return 1;
        fprintf(f, "workspace %s u32[%zu]:", name, n);
        for (size_t j = 0; j < n; j++) {
            uint32_t w;
            memcpy(&w, h + 4 * j, 4);
            fprintf(f, " %u", w);
        }
        fputc('\n', f);
        free(h);
        return 0;
    }
    size_t len = (size_t)snprintf(err, errlen, "no workspace %s in this set (it has:", name);
    for (int i = 0; i < p->nws && len < errlen; i++) len += (size_t)snprintf(err + len, errlen - len, " %s", p->ws[i].name);
    if (len < errlen) snprintf(err + len, errlen - len, ")");
    return 1;
}

int problem_zero_workspaces(Problem *p, Device *dev, char *err, size_t errlen) {
    for (int i = 0; i < p->nws; i++)
        if (p->ws[i].zero && dev_fill_u8(dev, p->ws[i].dev, 0, p->ws[i].bytes, err, errlen)) return 1;
    return 0;
}

/* A tensor this problem allocated: the kind's inputs and outputs, not the
 * others; an optional input it does not pass has dev 0 (a null pointer). */
static Tensor *bound_tensor(Problem *p, const char *name, char *err, size_t errlen) {
    Tensor *t = tensor_named(p, name);
    if (t && (t->dev || t->optional)) return t;
    snprintf(err, errlen, "runner has no tensor '%s' for %s", name, kind(p)->name);
    return NULL;
}

static int size_named(const Problem *p, const char *name, uint64_t *v) {
    ptxgen_size sizes[PROBLEM_NSIZES];
    for (int i = 0, n = problem_sizes(p, sizes); i < n; i++)
        if (!strcmp(sizes[i].name, name)) { *v = (uint64_t)sizes[i].value; return 0; }
    return 1;
}

static int workspace_named(const Problem *p, const char *name, uint64_t *v) {
    for (int i = 0; i < p->nws; i++)
        if (!strcmp(p->ws[i].name, name)) { *v = p->ws[i].dev; return 0; }
    return 1;
}

/* the Binder callbacks over this problem's tensors, sizes and workspaces */
static int bind_tensor(void *ctx, const char *name, BindTensor *out, char *err, size_t errlen) {
    const Tensor *t = bound_tensor(ctx, name, err, errlen);
    if (!t) return 1;
    *out = (BindTensor){t->dev, t->stride_b, t->stride_s, t->stride_h, t->esize};
    return 0;
}
static int bind_size(void *ctx, const char *name, uint64_t *v) { return size_named(ctx, name, v); }
static int bind_workspace(void *ctx, const char *name, uint64_t *v) { return workspace_named(ctx, name, v); }

int problem_args(Problem *p, const ptxgen_set *s, int kernel, Device *dev, char *err, size_t errlen) {
    Binder b = {p, bind_tensor, bind_size, bind_workspace, p->scale};
    if (bind_args(s, kernel, dev, &b, &p->bound[kernel], err, errlen)) return 1;
    return 0;
}

void problem_free(Problem *p, Device *dev) {
    Tensor *all[NTENSORS];
    char err[256];
    all_tensors(p, all);
    for (int i = 0; i < NTENSORS; i++) {
        if (all[i]->guarded) guard_free(dev, all[i]->dev, err, sizeof err);
        else if (all[i]->dev) dev_free(dev, all[i]->dev, err, sizeof err);
        all[i]->guarded = 0;
        free(all[i]->host);
        free(all[i]->ints);
        all[i]->host = NULL;
        all[i]->ints = NULL;
        all[i]->dev = 0;
    }
    for (int i = 0; i < p->nws; i++)
        if (p->ws[i].dev) dev_free(dev, p->ws[i].dev, err, sizeof err), p->ws[i].dev = 0;
    free(p->mask_file);
    p->mask_file = NULL;
}
