#include "problem.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void layout(Tensor *t, const char *name, int b, int rows, int heads, int width, int pad, int esize) {
    *t = (Tensor){.name = name, .rows = rows, .heads = heads, .width = width, .esize = esize};
    t->stride_h = (uint64_t)(width + pad);
    t->stride_s = t->stride_h * (uint64_t)heads;
    t->stride_b = t->stride_s * (uint64_t)rows;
    t->elems = (size_t)t->stride_b * (size_t)b;
}

static size_t offset(const Tensor *t, int b, int s, int h) {
    return (size_t)(b * t->stride_b + (uint64_t)s * t->stride_s + (uint64_t)h * t->stride_h);
}

/* Random N(0,1) values, rounded to dt, scattered into the strided layout
 * (padding is filled with random bits too, so a kernel reading it shows). */
static int fill_input(Tensor *t, int b, DType dt, Rng *rng, Device *dev, char *err, size_t errlen) {
    size_t n = (size_t)b * (size_t)t->rows * (size_t)t->heads * (size_t)t->width;
    uint16_t *raw = malloc(t->elems * 2);
    t->host = malloc(n * sizeof(float));
    if (!raw || !t->host) { free(raw); snprintf(err, errlen, "out of host memory for %s", t->name); return 1; }
    for (size_t i = 0; i < t->elems; i++) raw[i] = (uint16_t)rng_u64(rng);
    size_t i = 0;
    for (int bi = 0; bi < b; bi++)
        for (int s = 0; s < t->rows; s++)
            for (int h = 0; h < t->heads; h++)
                for (int x = 0; x < t->width; x++, i++) {
                    uint16_t v = f32_to_dt(dt, (float)rng_normal(rng));
                    raw[offset(t, bi, s, h) + (size_t)x] = v;
                    t->host[i] = dt_to_f32(dt, v);
                }
    int rc = dev_alloc(dev, &t->dev, t->elems * 2, err, errlen) || dev_upload(dev, t->dev, raw, t->elems * 2, err, errlen);
    free(raw);
    return rc;
}

int problem_init(Problem *p, Device *dev, uint64_t seed, int pad, char *err, size_t errlen) {
    Rng rng;
    rng_seed(&rng, seed);
    layout(&p->q, "q", p->b, p->s_q, p->h_q, p->d, pad, 2);
    layout(&p->k, "k", p->b, p->s_k, p->h_kv, p->d, pad, 2);
    layout(&p->v, "v", p->b, p->s_k, p->h_kv, p->dv, pad, 2);
    layout(&p->o, "o", p->b, p->s_q, p->h_q, p->dv, pad, 2);
    layout(&p->lse, "lse", p->b, p->h_q, 1, p->s_q, 0, 4);
    if (fill_input(&p->q, p->b, p->dt, &rng, dev, err, errlen) || fill_input(&p->k, p->b, p->dt, &rng, dev, err, errlen) ||
        fill_input(&p->v, p->b, p->dt, &rng, dev, err, errlen))
        return 1;
    return dev_alloc(dev, &p->o.dev, p->o.elems * 2, err, errlen) ||
           dev_alloc(dev, &p->lse.dev, p->lse.elems * 4, err, errlen);
}

int problem_poison_outputs(Problem *p, Device *dev, char *err, size_t errlen) {
    return dev_fill_u8(dev, p->o.dev, 0xFF, p->o.elems * 2, err, errlen) ||
           dev_fill_u8(dev, p->lse.dev, 0xFF, p->lse.elems * 4, err, errlen);
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

static Tensor *tensor_named(Problem *p, const char *name) {
    Tensor *all[] = {&p->q, &p->k, &p->v, &p->o, &p->lse};
    for (int i = 0; i < 5; i++)
        if (!strcmp(all[i]->name, name)) return all[i];
    return NULL;
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

int problem_args(Problem *p, const ptxgen_set *s, int kernel, char *err, size_t errlen) {
    int n = ptxgen_num_params(s, kernel);
    for (int i = 0; i < n; i++) {
        ptxgen_param pi;
        ptxgen_param_info(s, kernel, i, &pi);
        uint64_t v = 0;
        if (pi.role == PTXGEN_ROLE_IN || pi.role == PTXGEN_ROLE_OUT) {
            Tensor *t = tensor_named(p, pi.name);
            if (!t) { snprintf(err, errlen, "runner has no tensor '%s'", pi.name); return 1; }
            v = t->dev;
        } else if (pi.role == PTXGEN_ROLE_SIZE) {
            if (size_named(p, pi.of, &v)) { snprintf(err, errlen, "runner has no size '%s'", pi.of); return 1; }
        } else if (pi.role == PTXGEN_ROLE_WORKSPACE) {
            if (workspace_named(p, pi.of, &v)) { snprintf(err, errlen, "runner has no workspace '%s'", pi.of); return 1; }
        } else if (pi.role == PTXGEN_ROLE_STRIDE) {
            Tensor *t = tensor_named(p, pi.of);
            if (!t || stride_of(t, pi.dim, &v, err, errlen)) return 1;
        } else {
            memcpy(&v, &p->scale, sizeof p->scale);
        }
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
    Tensor *all[] = {&p->q, &p->k, &p->v, &p->o, &p->lse};
    char err[256];
    for (int i = 0; i < 5; i++) {
        if (all[i]->dev) dev_free(dev, all[i]->dev, err, sizeof err);
        free(all[i]->host);
        all[i]->host = NULL;
        all[i]->dev = 0;
    }
    for (int i = 0; i < p->nws; i++)
        if (p->ws[i].dev) dev_free(dev, p->ws[i].dev, err, sizeof err), p->ws[i].dev = 0;
}
