/* Launch arguments from names (bind.h). */
#include "bind.h"
#include <stdio.h>
#include <string.h>
#include "expr.h"

static int stride_of(const char *tensor, const BindTensor *t, const char *dim, uint64_t *v, char *err, size_t errlen) {
    *v = !strcmp(dim, "b") ? t->stride_b : !strcmp(dim, "s") ? t->stride_s : t->stride_h;
    /* the kernels form row addresses with 32-bit products of the row stride in bytes */
    if (!strcmp(dim, "s") && *v * (uint64_t)t->esize >= (1ull << 32)) {
        snprintf(err, errlen, "%s row stride %llu elements is too large: stride * %d bytes must be < 2^32", tensor,
                 (unsigned long long)*v, t->esize);
        return 1;
    }
    return 0;
}

/* The value of one parameter, by its role and name. */
static int param_value(const Binder *b, const ptxgen_param *pi, uint64_t *v, char *err, size_t errlen) {
    BindTensor t;
    int named = pi->role == PTXGEN_ROLE_STRIDE || pi->role == PTXGEN_ROLE_SIZE || pi->role == PTXGEN_ROLE_WORKSPACE;
    if (named && (!pi->of || (pi->role == PTXGEN_ROLE_STRIDE && !pi->dim))) {
        snprintf(err, errlen, "parameter %s does not name its %s", pi->name, pi->of ? "dimension" : "tensor, size or workspace");
        return 1;
    }
    switch (pi->role) {
    case PTXGEN_ROLE_IN:
    case PTXGEN_ROLE_OUT:
        if (b->tensor(b->ctx, pi->name, &t, err, errlen)) return 1;
        *v = t.ptr;
        return 0;
    case PTXGEN_ROLE_STRIDE:
        return b->tensor(b->ctx, pi->of, &t, err, errlen) || stride_of(pi->of, &t, pi->dim, v, err, errlen);
    case PTXGEN_ROLE_SIZE:
        if (b->size(b->ctx, pi->of, v)) { snprintf(err, errlen, "no size '%s' is given", pi->of); return 1; }
        return 0;
    case PTXGEN_ROLE_WORKSPACE:
        if (b->workspace(b->ctx, pi->of, v)) { snprintf(err, errlen, "no workspace '%s' is allocated", pi->of); return 1; }
        return 0;
    case PTXGEN_ROLE_SCALE:
        break;
    case PTXGEN_ROLE_TENSOR_MAP:
        snprintf(err, errlen, "parameter %s is a tensor map, not an 8-byte value", pi->name);
        return 1;
    }
    memcpy(v, &b->scale, sizeof b->scale);
    return 0;
}

/* The kernel's stride parameters and the problem sizes, by name: what tensor-map expressions use. */
static int expr_vars(const ptxgen_set *s, int kernel, const Binder *b, ExprVar *vars, int cap, char *err, size_t errlen) {
    int n = 0;
    for (int i = 0; i < ptxgen_num_problem_sizes(s) && n < cap; i++) {
        const char *name = ptxgen_problem_size(s, i);
        uint64_t v;
        if (!b->size(b->ctx, name, &v)) vars[n++] = (ExprVar){name, (long long)v};
    }
    for (int i = 0; i < ptxgen_num_params(s, kernel) && n < cap; i++) {
        ptxgen_param pi;
        ptxgen_param_info(s, kernel, i, &pi);
        uint64_t v;
        if (pi.role != PTXGEN_ROLE_STRIDE) continue;
        if (param_value(b, &pi, &v, err, errlen)) return -1;
        vars[n++] = (ExprVar){pi.name, (long long)v};
    }
    return n;
}

/* Encodes parameter pi's tensor map over its tensor into out. */
static int encode_tmap(const ptxgen_set *s, int kernel, const ptxgen_param *pi, Device *dev, const Binder *b, uint8_t *out,
                       char *err, size_t errlen) {
    ptxgen_tensor_map m;
    int found = 0;
    for (int i = 0; i < ptxgen_num_tensor_maps(s, kernel) && !found; i++)
        found = !ptxgen_tensor_map_info(s, kernel, i, &m) && !strcmp(m.param, pi->name);
    if (!found) {
        snprintf(err, errlen, "%s: no tensor map describes parameter %s", ptxgen_entry(s, kernel), pi->name);
        return 1;
    }
    BindTensor t = {0};
    uint64_t ws;   /* a map may cover a workspace (attn_bwd's fp32 dQ accumulator) rather than a tensor */
    if (!b->workspace(b->ctx, pi->of, &ws)) t.ptr = ws;
    else if (b->tensor(b->ctx, pi->of, &t, err, errlen)) return 1;
    ExprVar vars[16 + BIND_MAX_PARAMS];
    int nv = expr_vars(s, kernel, b, vars, (int)(sizeof vars / sizeof vars[0]), err, errlen);
    if (nv < 0) return 1;
    DevTmapDesc d = {.rank = m.rank, .gaddr = t.ptr};
    if (dev_tmap_names(&d, m.dtype, m.swizzle, m.interleave, m.oob_fill, err, errlen)) return 1;
    for (int i = 0; i < m.rank; i++) {
        long long v;
        char why[256];
        if (expr_eval(m.dims[i], vars, nv, &v, why, sizeof why)) {
            snprintf(err, errlen, "%s: tensor map %s dim %d: %s", ptxgen_entry(s, kernel), m.param, i, why);
            return 1;
        }
        d.dim[i] = (uint64_t)v;
        if (i + 1 < m.rank) {
            if (expr_eval(m.strides_bytes[i], vars, nv, &v, why, sizeof why)) {
                snprintf(err, errlen, "%s: tensor map %s stride %d: %s", ptxgen_entry(s, kernel), m.param, i, why);
                return 1;
            }
            d.stride[i] = (uint64_t)v;
        }
        d.box[i] = (uint32_t)m.box[i], d.estride[i] = (uint32_t)m.element_strides[i];
    }
    return dev_tmap_encode(dev, &d, out, err, errlen) ? 1 : 0;
}

int bind_args(const ptxgen_set *s, int kernel, Device *dev, const Binder *b, BoundArgs *out, char *err, size_t errlen) {
    int n = ptxgen_num_params(s, kernel), maps = 0;
    if (n > BIND_MAX_PARAMS) {
        snprintf(err, errlen, "%s has %d parameters; at most %d are bound", ptxgen_entry(s, kernel), n, BIND_MAX_PARAMS);
        return 1;
    }
    for (int i = 0; i < n; i++) {
        ptxgen_param pi;
        ptxgen_param_info(s, kernel, i, &pi);
        if (pi.type == PTXGEN_PARAM_TMAP) {
            if (maps == BIND_MAX_TMAPS) {
                snprintf(err, errlen, "%s has more than %d tensor maps", ptxgen_entry(s, kernel), BIND_MAX_TMAPS);
                return 1;
            }
            if (encode_tmap(s, kernel, &pi, dev, b, out->tmap[maps], err, errlen)) return 1;
            out->args[i] = out->tmap[maps++];
            continue;
        }
        uint64_t v = 0;
        if (param_value(b, &pi, &v, err, errlen)) return 1;
        if (pi.type == PTXGEN_PARAM_U32 && v > 0xFFFFFFFFull) {
            snprintf(err, errlen, "%s = %llu does not fit u32", pi.name, (unsigned long long)v);
            return 1;
        }
        out->argv[i] = v;   /* little-endian: a u32/f32 parameter reads the low bytes */
        out->args[i] = &out->argv[i];
    }
    return 0;
}
