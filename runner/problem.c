#include "problem.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ref.h"

static void ref_fwd(const Problem *p, double *const ref[]);
static void ref_bwd(const Problem *p, double *const ref[]);

/* What each kernel kind reads and writes (KERNELS.md), by tensor name: the
 * inputs drawn at random, whether O and LSE are inputs derived from them, the
 * outputs with their bf16 tolerance (fp16 halves it, except LSE's), their
 * float64 reference, and the FLOPs as a multiple of the forward's. Indexed by
 * Problem.bwd. */
typedef struct {
    const char *random[4];
    int derives_fwd;
    struct { const char *name; double tol; int fp16_halves; } out[PROBLEM_MAX_OUTPUTS];
    void (*reference)(const Problem *p, double *const ref[]);
    double flops_vs_fwd;
} KindSpec;

static const KindSpec kKinds[] = {
    /* attn_fwd */ {{"q", "k", "v"}, 0, {{"o", 5e-3, 1}, {"lse", 1e-4, 0}}, ref_fwd, 1.0},
    /* attn_bwd */ {{"q", "k", "v", "do"}, 1, {{"dq", 1e-2, 1}, {"dk", 1e-2, 1}, {"dv", 1e-2, 1}}, ref_bwd, 2.5},
};

static const KindSpec *kind(const Problem *p) { return &kKinds[p->bwd ? 1 : 0]; }

enum { NTENSORS = 9 };

/* Every tensor either kind has: the eight [b, rows, heads, width] ones and LSE. */
static void all_tensors(Problem *p, Tensor *all[NTENSORS]) {
    Tensor *t[NTENSORS] = {&p->q, &p->k, &p->v, &p->o, &p->dout, &p->dq, &p->dk, &p->dv, &p->lse};
    memcpy(all, t, sizeof t);
}

static Tensor *tensor_named(Problem *p, const char *name) {
    Tensor *all[NTENSORS];
    all_tensors(p, all);
    for (int i = 0; i < NTENSORS; i++)
        if (all[i]->name && !strcmp(all[i]->name, name)) return all[i];
    return NULL;
}

static void layout(Tensor *t, const char *name, int b, int rows, int heads, int width, int pad, int esize) {
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

/* Puts vals (NULL: fresh N(0,1) draws), rounded to t's element type, into
 * t's strided layout with random bits in the padding (so a kernel reading it
 * shows), keeps the rounded values in t->host, and uploads. */
static int upload(Tensor *t, DType dt, Rng *rng, const double *vals, Device *dev, char *err, size_t errlen) {
    uint8_t *raw = malloc(t->elems * (size_t)t->esize);
    t->host = malloc(t->count * sizeof(float));
    if (!raw || !t->host) { free(raw); snprintf(err, errlen, "out of host memory for %s", t->name); return 1; }
    for (size_t i = 0; i < t->elems; i++) put_bits(raw, t->esize, i, rng_u64(rng));
    for (size_t i = 0; i < t->count; i++) {
        float x = (float)(vals ? vals[i] : rng_normal(rng));
        uint32_t bits = t->esize == 2 ? f32_to_dt(dt, x) : f32_bits(x);
        t->host[i] = t->esize == 2 ? dt_to_f32(dt, (uint16_t)bits) : x;
        put_bits(raw, t->esize, row_offset(t, i / (size_t)t->width) + i % (size_t)t->width, bits);
    }
    int rc = dev_alloc(dev, &t->dev, t->elems * (size_t)t->esize, err, errlen) ||
             dev_upload(dev, t->dev, raw, t->elems * (size_t)t->esize, err, errlen);
    free(raw);
    return rc;
}

static RefAttn ref_shape(const Problem *p) {
    return (RefAttn){p->b, p->s_q, p->s_k, p->h_q, p->h_kv, p->d, p->d_v, p->causal, p->scale};
}

static void ref_fwd(const Problem *p, double *const ref[]) {
    RefAttn ra = ref_shape(p);
    ref_attn_fwd(&ra, p->q.host, p->k.host, p->v.host, ref[0], ref[1], 0);
}

static void ref_bwd(const Problem *p, double *const ref[]) {
    RefAttn ra = ref_shape(p);
    ref_attn_bwd(&ra, p->q.host, p->k.host, p->v.host, p->dout.host, ref[0], ref[1], ref[2], 0);
}

/* The backward's O and LSE: the float64 forward of the rounded Q, K, V,
 * rounded like a forward kernel's outputs (so dO . O matches what a real
 * forward hands over). */
static int derive_forward(Problem *p, Rng *rng, Device *dev, char *err, size_t errlen) {
    double *o = malloc(p->o.count * sizeof(double)), *lse = malloc(p->lse.count * sizeof(double));
    int rc = !o || !lse;
    if (rc) snprintf(err, errlen, "out of host memory for o and lse");
    else {
        RefAttn ra = ref_shape(p);
        ref_attn_fwd(&ra, p->q.host, p->k.host, p->v.host, o, lse, 0);
        rc = upload(&p->o, p->dt, rng, o, dev, err, errlen) || upload(&p->lse, p->dt, rng, lse, dev, err, errlen);
    }
    free(o), free(lse);
    return rc;
}

int problem_init(Problem *p, Device *dev, uint64_t seed, int pad, char *err, size_t errlen) {
    const KindSpec *ks = kind(p);
    Rng rng;
    rng_seed(&rng, seed);
    layout(&p->q, "q", p->b, p->s_q, p->h_q, p->d, pad, 2);
    layout(&p->k, "k", p->b, p->s_k, p->h_kv, p->d, pad, 2);
    layout(&p->v, "v", p->b, p->s_k, p->h_kv, p->d_v, pad, 2);
    layout(&p->o, "o", p->b, p->s_q, p->h_q, p->d_v, pad, 2);
    layout(&p->dout, "do", p->b, p->s_q, p->h_q, p->d_v, pad, 2);
    layout(&p->dq, "dq", p->b, p->s_q, p->h_q, p->d, pad, 2);
    layout(&p->dk, "dk", p->b, p->s_k, p->h_kv, p->d, pad, 2);
    layout(&p->dv, "dv", p->b, p->s_k, p->h_kv, p->d_v, pad, 2);
    layout(&p->lse, "lse", p->b, p->h_q, 1, p->s_q, 0, 4);
    for (size_t i = 0; i < sizeof ks->random / sizeof ks->random[0] && ks->random[i]; i++)
        if (upload(tensor_named(p, ks->random[i]), p->dt, &rng, NULL, dev, err, errlen)) return 1;
    if (ks->derives_fwd && derive_forward(p, &rng, dev, err, errlen)) return 1;
    for (int i = 0; i < PROBLEM_MAX_OUTPUTS && ks->out[i].name; i++) {
        Tensor *t = tensor_named(p, ks->out[i].name);
        if (dev_alloc(dev, &t->dev, t->elems * (size_t)t->esize, err, errlen)) return 1;
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
    }
    return n;
}

void problem_reference(const Problem *p, double *const ref[PROBLEM_MAX_OUTPUTS]) { kind(p)->reference(p, ref); }

double problem_flops(const Problem *p) {
    double f = 4.0 * p->b * p->h_q * (double)p->s_q * p->s_k * p->d;
    return (p->causal ? f / 2 : f) * kind(p)->flops_vs_fwd;
}

int problem_poison_outputs(Problem *p, Device *dev, char *err, size_t errlen) {
    ProblemOutput out[PROBLEM_MAX_OUTPUTS];
    for (int i = 0, n = problem_outputs(p, out); i < n; i++)
        if (dev_fill_u8(dev, out[i].t->dev, 0xFF, out[i].t->elems * (size_t)out[i].t->esize, err, errlen)) return 1;
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

int problem_sizes(const Problem *p, ptxgen_size out[5]) {
    const ptxgen_size s[5] = {{"b", p->b}, {"s_q", p->s_q}, {"s_k", p->s_k}, {"h_q", p->h_q}, {"h_kv", p->h_kv}};
    memcpy(out, s, sizeof s);
    return 5;
}

int problem_workspaces(Problem *p, Device *dev, const ptxgen_set *s, char *err, size_t errlen) {
    ptxgen_size sizes[5];
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
        p->ws[i].name = w.name, p->ws[i].bytes = (size_t)bytes, p->ws[i].zero = w.zero_init;
        if (dev_alloc(dev, &p->ws[i].dev, p->ws[i].bytes, err, errlen)) return 1;
    }
    return 0;
}

int problem_zero_workspaces(Problem *p, Device *dev, char *err, size_t errlen) {
    for (int i = 0; i < p->nws; i++)
        if (p->ws[i].zero && dev_fill_u8(dev, p->ws[i].dev, 0, p->ws[i].bytes, err, errlen)) return 1;
    return 0;
}

/* A tensor this problem allocated: the kind's inputs and outputs, not the others. */
static Tensor *bound_tensor(Problem *p, const char *name, char *err, size_t errlen) {
    Tensor *t = tensor_named(p, name);
    if (!t || !t->dev) snprintf(err, errlen, "runner has no tensor '%s' for %s", name, p->bwd ? "attn_bwd" : "attn_fwd");
    return t && t->dev ? t : NULL;
}

static int size_named(const Problem *p, const char *name, uint64_t *v) {
    ptxgen_size sizes[5];
    for (int i = 0, n = problem_sizes(p, sizes); i < n; i++)
        if (!strcmp(sizes[i].name, name)) { *v = (uint64_t)sizes[i].value; return 0; }
    return 1;
}

static int workspace_named(const Problem *p, const char *name, uint64_t *v) {
    for (int i = 0; i < p->nws; i++)
        if (!strcmp(p->ws[i].name, name)) { *v = p->ws[i].dev; return 0; }
    return 1;
}

static int stride_of(const Tensor *t, const char *dim, uint64_t *v, char *err, size_t errlen) {
    *v = !strcmp(dim, "b") ? t->stride_b : !strcmp(dim, "s") ? t->stride_s : t->stride_h;
    /* the kernels form row addresses with 32-bit products of the row stride in bytes */
    if (!strcmp(dim, "s") && *v * 2 >= (1ull << 32)) {
        snprintf(err, errlen, "%s row stride %llu elements is too large: stride * 2 bytes must be < 2^32",
                 t->name, (unsigned long long)*v);
        return 1;
    }
    return 0;
}

/* The value of one parameter, by its role and name. */
static int param_value(Problem *p, const ptxgen_param *pi, uint64_t *v, char *err, size_t errlen) {
    Tensor *t;
    int named = pi->role == PTXGEN_ROLE_STRIDE || pi->role == PTXGEN_ROLE_SIZE || pi->role == PTXGEN_ROLE_WORKSPACE;
    if (named && (!pi->of || (pi->role == PTXGEN_ROLE_STRIDE && !pi->dim))) {
        snprintf(err, errlen, "parameter %s does not name its %s", pi->name, pi->of ? "dimension" : "tensor, size or workspace");
        return 1;
    }
    switch (pi->role) {
    case PTXGEN_ROLE_IN:
    case PTXGEN_ROLE_OUT:
        if (!(t = bound_tensor(p, pi->name, err, errlen))) return 1;
        *v = t->dev;
        return 0;
    case PTXGEN_ROLE_STRIDE:
        return !(t = bound_tensor(p, pi->of, err, errlen)) || stride_of(t, pi->dim, v, err, errlen);
    case PTXGEN_ROLE_SIZE:
        if (size_named(p, pi->of, v)) { snprintf(err, errlen, "runner has no size '%s'", pi->of); return 1; }
        return 0;
    case PTXGEN_ROLE_WORKSPACE:
        if (workspace_named(p, pi->of, v)) { snprintf(err, errlen, "runner has no workspace '%s'", pi->of); return 1; }
        return 0;
    case PTXGEN_ROLE_SCALE:
        break;
    }
    memcpy(v, &p->scale, sizeof p->scale);
    return 0;
}

int problem_args(Problem *p, const ptxgen_set *s, int kernel, char *err, size_t errlen) {
    int n = ptxgen_num_params(s, kernel);
    if (n > (int)(sizeof p->argv[0] / sizeof p->argv[0][0])) {
        snprintf(err, errlen, "%s has %d parameters; the runner holds at most 64", ptxgen_entry(s, kernel), n);
        return 1;
    }
    for (int i = 0; i < n; i++) {
        ptxgen_param pi;
        ptxgen_param_info(s, kernel, i, &pi);
        uint64_t v = 0;
        if (param_value(p, &pi, &v, err, errlen)) return 1;
        if (pi.type == PTXGEN_PARAM_U32 && v > 0xFFFFFFFFull) {
            snprintf(err, errlen, "%s = %llu does not fit u32", pi.name, (unsigned long long)v);
            return 1;
        }
        p->argv[kernel][i] = v;   /* little-endian: a u32/f32 parameter reads the low bytes */
        p->args[kernel][i] = &p->argv[kernel][i];
    }
    return 0;
}

void problem_free(Problem *p, Device *dev) {
    Tensor *all[NTENSORS];
    char err[256];
    all_tensors(p, all);
    for (int i = 0; i < NTENSORS; i++) {
        if (all[i]->dev) dev_free(dev, all[i]->dev, err, sizeof err);
        free(all[i]->host);
        all[i]->host = NULL;
        all[i]->dev = 0;
    }
    for (int i = 0; i < p->nws; i++)
        if (p->ws[i].dev) dev_free(dev, p->ws[i].dev, err, sizeof err), p->ws[i].dev = 0;
}
