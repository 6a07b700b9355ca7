/* Reading a launch record: JSON tree -> LaunchRecord, with every field
 * checked where it is read so a message names the field, its line:column and
 * what was wanted. The GEMM's matrices come from the problem's prose
 * descriptions ("f16 MxK row-major (K-major) @0x100000000000"): the record
 * format has no structured field for layout, so the words are the contract. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "buf.h"
#include "json.h"
#include "launch_record.h"

/* CUDA 12.1+'s kernel parameter limit; CUtensorMap's alignment; what a matrix
 * may take on the host (the reference keeps M x N doubles besides) */
enum { MAX_PARAM_SPACE = 32764, TMAP_TAG_ALIGN = 64, MAX_MATRIX_BYTES = 256 << 20 };

typedef struct { const char *name; char *err; size_t errlen; } Ctx;

/* "NAME: PATH (line L:C): why"; returns -1. */
static int bad(const Ctx *c, const Json *at, const char *path, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int bad(const Ctx *c, const Json *at, const char *path, const char *fmt, ...)
{
    int n = at ? snprintf(c->err, c->errlen, "%s: %s (line %d:%d): ", c->name, path, at->line, at->col)
               : snprintf(c->err, c->errlen, "%s: %s: ", c->name, path);
    if (n >= 0 && (size_t)n < c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Member key of obj (at path) of the given kind; NULL after a message. */
static const Json *need(const Ctx *c, const Json *obj, const char *path, const char *key, JsonKind kind)
{
    const Json *v = json_get(obj, key);
    char p[256];
    snprintf(p, sizeof p, "%s%s%s", path, *path ? "." : "", key);
    if (!v) return bad(c, obj, path[0] ? path : "the record", "lacks \"%s\"", key), NULL;
    if (v->kind != kind) return bad(c, v, p, "is %s; want %s", json_kind_name(v->kind), json_kind_name(kind)), NULL;
    return v;
}

static int need_int(const Ctx *c, const Json *obj, const char *path, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    const Json *v = need(c, obj, path, key, JSON_NUM);
    char p[256];
    snprintf(p, sizeof p, "%s%s%s", path, *path ? "." : "", key);
    if (!v) return -1;
    if (json_i64(v, out) || *out < lo || *out > hi)
        return bad(c, v, p, "is %g; want an integer in [%lld, %lld]", v->num, (long long)lo, (long long)hi);
    return 0;
}

static int need_int32(const Ctx *c, const Json *obj, const char *path, const char *key, int64_t lo, int64_t hi, int *out)
{
    int64_t v;
    if (need_int(c, obj, path, key, lo, hi, &v)) return -1;
    *out = (int)v;
    return 0;
}

/* An array member of exactly n integers in [lo, hi]. */
static int need_ints(const Ctx *c, const Json *obj, const char *path, const char *key, int n, int64_t lo, int64_t hi,
                     uint64_t *out)
{
    const Json *a = need(c, obj, path, key, JSON_ARR);
    char p[256];
    snprintf(p, sizeof p, "%s.%s", path, key);
    if (!a) return -1;
    if (a->n != n) return bad(c, a, p, "has %d elements; want %d", a->n, n);
    for (int i = 0; i < n; i++) {
        int64_t v;
        if (json_i64(&a->item[i], &v) || v < lo || v > hi)
            return bad(c, &a->item[i], p, "element %d is not an integer in [%lld, %lld]", i, (long long)lo, (long long)hi);
        out[i] = (uint64_t)v;
    }
    return 0;
}

static int hex_digit(char ch)
{
    return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
}

/* "0x..." (1 to 16 hex digits) -> value; -1 when it is not that. */
static int parse_hex_u64(const char *s, uint64_t *v)
{
    if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || !s[2] || strlen(s + 2) > 16) return -1;
    *v = 0;
    for (s += 2; *s; s++) {
        if (hex_digit(*s) < 0) return -1;
        *v = *v << 4 | (uint64_t)hex_digit(*s);
    }
    return 0;
}

/* ---- tensor-map encodes ---- */
static int parse_encode(const Ctx *c, const Json *e, const char *path, RecEncode *out)
{
    DevTmapDesc *d = &out->desc;
    uint64_t tmp[DEV_TMAP_MAX_RANK];
    const Json *ga;
    if (e->kind != JSON_OBJ) return bad(c, e, path, "is %s; want an object", json_kind_name(e->kind));
    if (need_int32(c, e, path, "id", 0, INT32_MAX, &out->id) || need_int32(c, e, path, "dataType", 0, 12, &d->dtype) ||
        need_int32(c, e, path, "rank", 1, DEV_TMAP_MAX_RANK, &d->rank) || !(ga = need(c, e, path, "globalAddress", JSON_STR)))
        return -1;
    if (parse_hex_u64(ga->str, &d->gaddr)) return bad(c, ga, path, "globalAddress \"%s\" is not a 0x hex address", ga->str);
    if (need_ints(c, e, path, "globalDim", d->rank, 1, (int64_t)1 << 32, d->dim) ||
        need_ints(c, e, path, "globalStrides_bytes", d->rank - 1, 1, (int64_t)1 << 40, d->stride) ||
        need_ints(c, e, path, "boxDim", d->rank, 1, 256, tmp))
        return -1;
    for (int i = 0; i < d->rank; i++) d->box[i] = (uint32_t)tmp[i];
    if (need_ints(c, e, path, "elementStrides", d->rank, 1, 8, tmp)) return -1;
    for (int i = 0; i < d->rank; i++) d->estride[i] = (uint32_t)tmp[i];
    return need_int32(c, e, path, "interleave", 0, 2, &d->interleave) || need_int32(c, e, path, "swizzle", 0, 7, &d->swizzle) ||
           need_int32(c, e, path, "l2Promotion", 0, 3, &d->l2promo) || need_int32(c, e, path, "oobFill", 0, 1, &d->oobfill);
}

static int parse_encodes(const Ctx *c, const Json *root, LaunchRecord *r)
{
    const Json *a = need(c, root, "", "tensormap_encodes", JSON_ARR);
    if (!a) return -1;
    r->encodes = calloc((size_t)a->n + 1, sizeof *r->encodes);
    if (!r->encodes) return bad(c, NULL, "tensormap_encodes", "out of memory");
    for (int i = 0; i < a->n; i++, r->nencodes++) {
        char path[64];
        snprintf(path, sizeof path, "tensormap_encodes[%d]", i);
        if (parse_encode(c, &a->item[i], path, &r->encodes[i])) return -1;
        for (int k = 0; k < i; k++)
            if (r->encodes[k].id == r->encodes[i].id) return bad(c, &a->item[i], path, "repeats id %d", r->encodes[i].id);
    }
    return 0;
}

/* ---- the launch ---- */
static int parse_dim3(const Ctx *c, const Json *l, const char *path, const char *key, unsigned out[3])
{
    uint64_t v[3];
    if (need_ints(c, l, path, key, 3, 1, INT32_MAX, v)) return -1;
    for (int i = 0; i < 3; i++) out[i] = (unsigned)v[i];
    return 0;
}

static int parse_param(const Ctx *c, const Json *p, const char *path, RecParam *out, uint8_t *space)
{
    const Json *hex;
    if (p->kind != JSON_OBJ) return bad(c, p, path, "is %s; want an object", json_kind_name(p->kind));
    if (need_int32(c, p, path, "index", 0, MAX_PARAM_SPACE, &out->index) || need_int32(c, p, path, "size", 1, MAX_PARAM_SPACE, &out->size) ||
        need_int32(c, p, path, "align", 1, 256, &out->align) ||
        need_int32(c, p, path, "offset_in_param_space", 0, MAX_PARAM_SPACE, &out->offset) || !(hex = need(c, p, path, "hex", JSON_STR)))
        return -1;
    if (out->align & (out->align - 1)) return bad(c, p, path, "align %d is not a power of two", out->align);
    if (out->offset % out->align) return bad(c, p, path, "offset %d is not a multiple of its align %d", out->offset, out->align);
    if (out->offset + out->size > MAX_PARAM_SPACE)
        return bad(c, p, path, "offset %d + size %d runs past the %d-byte parameter space", out->offset, out->size, MAX_PARAM_SPACE);
    size_t len = strlen(hex->str);
    if (len != 2 * (size_t)out->size)
        return bad(c, hex, path, "hex has %zu digits; size %d needs %d", len, out->size, 2 * out->size);
    for (int i = 0; i < out->size; i++) {
        int hi = hex_digit(hex->str[2 * i]), lo = hex_digit(hex->str[2 * i + 1]);
        if (hi < 0 || lo < 0) return bad(c, hex, path, "hex has a non-hex character at digit %d", hi < 0 ? 2 * i : 2 * i + 1);
        space[out->offset + i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

static int parse_params(const Ctx *c, const Json *l, const char *path, LaunchRecord *r)
{
    char p[96];
    snprintf(p, sizeof p, "%s.params", path);
    const Json *a = need(c, l, path, "params", JSON_ARR);
    if (!a) return -1;
    r->param = calloc((size_t)a->n + 1, sizeof *r->param);
    r->params = calloc(MAX_PARAM_SPACE, 1);
    if (!r->param || !r->params) return bad(c, a, p, "out of memory");
    for (int i = 0; i < a->n; i++, r->nparams++) {
        char pi[128];
        snprintf(pi, sizeof pi, "%.96s[%d]", p, i);
        RecParam *q = &r->param[i];
        if (parse_param(c, &a->item[i], pi, q, r->params)) return -1;
        for (int k = 0; k < i; k++) {
            const RecParam *o = &r->param[k];
            if (o->index == q->index) return bad(c, &a->item[i], pi, "repeats index %d", q->index);
            if (q->offset < o->offset + o->size && o->offset < q->offset + q->size)
                return bad(c, &a->item[i], pi, "bytes [%d, %d) overlap params[%d]'s [%d, %d)", q->offset, q->offset + q->size, k,
                           o->offset, o->offset + o->size);
        }
        if ((size_t)(q->offset + q->size) > r->param_bytes) r->param_bytes = (size_t)(q->offset + q->size);
    }
    return 0;
}

static int parse_launch(const Ctx *c, const Json *root, LaunchRecord *r)
{
    const Json *ls = need(c, root, "", "launches", JSON_ARR), *e;
    if (!ls) return -1;
    if (!ls->n) return bad(c, ls, "launches", "is empty; want at least one launch");
    char path[64];
    snprintf(path, sizeof path, "launches[%d]", ls->n - 1);
    const Json *l = &ls->item[ls->n - 1];
    if (l->kind != JSON_OBJ) return bad(c, l, path, "is %s; want an object", json_kind_name(l->kind));
    if (!(e = need(c, l, path, "entry", JSON_STR))) return -1;
    if (!*e->str) return bad(c, e, path, "entry is empty");
    if (!(r->entry = strdup(e->str))) return bad(c, e, path, "out of memory");
    int64_t smem;
    if (parse_dim3(c, l, path, "grid", r->grid) || parse_dim3(c, l, path, "block", r->block) ||
        need_int(c, l, path, "dynamic_smem_bytes", 0, INT32_MAX, &smem))
        return -1;
    r->dyn_smem = (unsigned)smem;
    r->cluster[0] = r->cluster[1] = r->cluster[2] = 1;   /* no "cluster" (or null): not a cluster launch */
    const Json *cl = json_get(l, "cluster");
    if (cl && cl->kind != JSON_NULL && parse_dim3(c, l, path, "cluster", r->cluster)) return -1;
    return parse_params(c, l, path, r);
}

/* Each 64-byte-aligned 'TMAP' tag in the params names an encode by id and
 * repeats its global address: both must agree with tensormap_encodes. */
static int find_tags(const Ctx *c, LaunchRecord *r)
{
    for (size_t off = 0; off + 16 <= r->param_bytes; off += TMAP_TAG_ALIGN) {
        const uint8_t *t = r->params + off;
        if (memcmp(t, "TMAP", 4)) continue;
        uint32_t id = (uint32_t)t[4] | (uint32_t)t[5] << 8 | (uint32_t)t[6] << 16 | (uint32_t)t[7] << 24;
        uint64_t ga = 0;
        for (int i = 7; i >= 0; i--) ga = ga << 8 | t[8 + i];
        int k = 0;
        while (k < r->nencodes && (uint32_t)r->encodes[k].id != id) k++;
        char path[64];
        snprintf(path, sizeof path, "param bytes at offset %zu", off);
        if (k == r->nencodes)
            return bad(c, NULL, path, "a TMAP tag names tensor-map encode id %u, which tensormap_encodes lacks (it has %d "
                       "encodes)", id, r->nencodes);
        if (ga != r->encodes[k].desc.gaddr)
            return bad(c, NULL, path, "a TMAP tag names encode %u with global address 0x%llx; the encode says 0x%llx", id,
                       (unsigned long long)ga, (unsigned long long)r->encodes[k].desc.gaddr);
        if (off + DEV_TMAP_BYTES > r->param_bytes)
            return bad(c, NULL, path, "a TMAP tag's 128-byte tensor map runs past the last parameter (%zu bytes)", r->param_bytes);
        RecTag *nt = realloc(r->tags, (size_t)(r->ntags + 1) * sizeof *nt);
        if (!nt) return bad(c, NULL, path, "out of memory");
        r->tags = nt;
        r->tags[r->ntags++] = (RecTag){off, k};
    }
    return 0;
}

/* ---- the problem ---- */
size_t rec_matrix_bytes(const RecMatrix *m) { return (size_t)m->rows * (size_t)m->cols * (size_t)m->elem_bytes; }

/* "<dtype> <R>x<C> <row-major|column-major> ... @0x<address> ...": the
 * dtype, the shape letters (must be shape, e.g. "MxK"), the layout, and an
 * "X-major" remark, if any, must agree with the layout. */
static int parse_matrix(const Ctx *c, const Json *desc, const char *path, const char *shape, int rows, int cols, RecMatrix *m)
{
    char dt[16], sh[16], layout[32];
    const char *s = desc->str, *at = strchr(s, '@');
    if (sscanf(s, "%15s %15s %31s", dt, sh, layout) != 3)
        return bad(c, desc, path, "\"%s\" is not \"DTYPE %s row-major|column-major ... @0xADDRESS\"", s, shape);
    static const struct { const char *name; int dtype, bytes; } types[] = {{"f16", 6, 2}, {"f32", 7, 4}, {"bf16", 9, 2}};
    m->dtype = 0;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(dt, types[i].name)) m->dtype = types[i].dtype, m->elem_bytes = types[i].bytes;
    if (!m->dtype) return bad(c, desc, path, "element type \"%s\" is none of f16, f32, bf16", dt);
    if (strcmp(sh, shape)) return bad(c, desc, path, "shape \"%s\"; want %s", sh, shape);
    if (strcmp(layout, "row-major") && strcmp(layout, "column-major"))
        return bad(c, desc, path, "layout \"%s\" is neither row-major nor column-major", layout);
    m->col_major = !strcmp(layout, "column-major");
    char inner = m->col_major ? shape[0] : shape[2];   /* the dimension that is contiguous */
    for (const char *x = strstr(s, "-major"); x; x = strstr(x + 1, "-major"))
        if (x > s && x[-1] != 'w' && x[-1] != 'n' && x[-1] != inner)   /* skip "row-major"/"column-major" */
            return bad(c, desc, path, "says %c-major, but a %s %s matrix is %c-major", x[-1], layout, shape, inner);
    if (!at || sscanf(at + 1, "0x%llx", (unsigned long long *)&m->addr) != 1 || !m->addr)
        return bad(c, desc, path, "\"%s\" has no \"@0xADDRESS\"", s);
    m->rows = rows, m->cols = cols;
    if (rec_matrix_bytes(m) > MAX_MATRIX_BYTES)
        return bad(c, desc, path, "is %zu bytes; the sim takes at most %d MiB per matrix", rec_matrix_bytes(m), MAX_MATRIX_BYTES >> 20);
    return 0;
}

static int parse_problem(const Ctx *c, const Json *root, RecGemm *g)
{
    const Json *p = need(c, root, "", "problem", JSON_OBJ), *al, *be;
    if (!p) return -1;
    if (need_int32(c, p, "problem", "M", 1, 1 << 20, &g->M) || need_int32(c, p, "problem", "N", 1, 1 << 20, &g->N) ||
        need_int32(c, p, "problem", "K", 1, 1 << 20, &g->K) || !(al = need(c, p, "problem", "alpha", JSON_NUM)) ||
        !(be = need(c, p, "problem", "beta", JSON_NUM)))
        return -1;
    g->alpha = al->num, g->beta = be->num;
    const Json *d[4];
    const char *keys = "ABCD";
    for (int i = 0; i < 4; i++) {
        char k[2] = {keys[i], 0};
        if (!(d[i] = need(c, p, "problem", k, JSON_STR))) return -1;
    }
    g->a.name = 'A', g->b.name = 'B', g->c.name = 'C', g->d.name = 'D';
    if (parse_matrix(c, d[0], "problem.A", "MxK", g->M, g->K, &g->a) || parse_matrix(c, d[1], "problem.B", "NxK", g->N, g->K, &g->b) ||
        parse_matrix(c, d[2], "problem.C", "MxN", g->M, g->N, &g->c))
        return -1;
    if (!strncmp(d[3]->str, "same buffer as C", 16)) {   /* in place: the kernel overwrites C */
        g->d = g->c, g->d.name = 'D', g->d.in_place = 1;
        return 0;
    }
    return parse_matrix(c, d[3], "problem.D", "MxN", g->M, g->N, &g->d);
}

/* A tensor map over a matrix must describe that matrix: its type, and the
 * extents and row stride its layout implies. */
static int check_encodes(const Ctx *c, const LaunchRecord *r)
{
    const RecMatrix *mats[] = {&r->gemm.a, &r->gemm.b, &r->gemm.c, &r->gemm.d};
    for (int i = 0; i < r->nencodes; i++) {
        const DevTmapDesc *d = &r->encodes[i].desc;
        const RecMatrix *m = NULL;
        for (int k = 0; k < 4; k++)
            if (mats[k]->addr == d->gaddr) m = mats[k];
        char path[64];
        snprintf(path, sizeof path, "tensormap_encodes[%d]", i);
        if (!m) return bad(c, NULL, path, "global address 0x%llx is none of the problem's matrices", (unsigned long long)d->gaddr);
        uint64_t inner = (uint64_t)(m->col_major ? m->rows : m->cols), outer = (uint64_t)(m->col_major ? m->cols : m->rows);
        if (d->dtype != m->dtype || d->rank != 2 || d->dim[0] != inner || d->dim[1] != outer ||
            d->stride[0] != inner * (uint64_t)m->elem_bytes)
            return bad(c, NULL, path,
                       "(over %c) has dataType %d, rank %d, globalDim [%llu, %llu], stride %llu B; %c as the problem "
                       "describes it needs dataType %d, rank 2, [%llu, %llu], %llu B",
                       m->name, d->dtype, d->rank, (unsigned long long)d->dim[0],
                       (unsigned long long)(d->rank > 1 ? d->dim[1] : 0), (unsigned long long)(d->rank > 1 ? d->stride[0] : 0),
                       m->name, m->dtype, (unsigned long long)inner, (unsigned long long)outer,
                       (unsigned long long)(inner * (uint64_t)m->elem_bytes));
    }
    return 0;
}

int launch_record_parse(const char *text, const char *name, LaunchRecord *r, char *err, size_t errlen)
{
    Ctx c = {name, err, errlen};
    Json *root;
    memset(r, 0, sizeof *r);
    if (json_parse(text, &root, err, errlen)) {
        char why[512];
        snprintf(why, sizeof why, "%s", err);
        snprintf(err, errlen, "%s: not valid JSON: %s", name, why);
        return -1;
    }
    int rc = root->kind != JSON_OBJ ? bad(&c, root, "the record", "is %s; want an object", json_kind_name(root->kind))
             : parse_encodes(&c, root, r) || parse_launch(&c, root, r) || find_tags(&c, r) || parse_problem(&c, root, &r->gemm) ||
                     check_encodes(&c, r) ? -1 : 0;
    json_free(root);
    if (rc) launch_record_free(r);
    return rc;
}

int launch_record_load(const char *path, LaunchRecord *r, char *err, size_t errlen)
{
    size_t len;
    memset(r, 0, sizeof *r);
    char *text = buf_read_file(path, &len);
    if (!text) return snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno)), -1;
    int rc;
    if (strlen(text) != len) {
        snprintf(err, errlen, "%s: holds a NUL byte at offset %zu; a JSON text has none", path, strlen(text));
        rc = -1;
    } else rc = launch_record_parse(text, path, r, err, errlen);
    free(text);
    return rc;
}

void launch_record_free(LaunchRecord *r)
{
    free(r->entry);
    free(r->params);
    free(r->param);
    free(r->encodes);
    free(r->tags);
    memset(r, 0, sizeof *r);
}
