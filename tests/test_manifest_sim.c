/* An independent launcher: runs a generated mla_bwd set (or mla_fwd kernel, or a dense attn_fwd or attn_bwd set)
 * on the sim device from its PTX file and its manifest JSON alone (no ptxgen library call, no
 * runner binding code), the way a host app would: tensors sized from the
 * manifest's shapes, contiguous strides, workspaces from their byte
 * expressions (zeroed where asked), tensor maps encoded from the manifest's
 * tensor_maps rows (over tensors or workspaces), grids, clusters and shared memory from its expressions,
 * kernels in the listed order. dq and dkv (mla_fwd: o and lse; attn_fwd: o and lse; attn_bwd: dq, dk and dv from
 * the float64 forward's o and lse) are judged against float64.
 * --tight (mla_bwd, s_kv 1): inputs where deterministic=1's fixed-point bound is nearly met (gen/mla_bwd_fixed.c):
 * every slot selects row 0, dO is 1 and q is +-2^-20, so dS sums to 0 and dkv[0, :d_v] = s_q h_q against a bound
 * of s_q h_q (max|dO| + a term of order 2^-20); dq is then 0 and only dkv is judged.
 * usage: test_manifest_sim SET.ptx SET.json [--seed N] [--sq N --skv N --hq N --topk N] [--topk-length] [--tight]
 *        test_manifest_sim SET.ptx SET.json [--seed N] [--b N --sq N --sk N --hq N --hkv N]   (attn_fwd, attn_bwd)
 *                          [--varlen L1,L2,... [--varlen-k K1,K2,...]]   (a varlen set: the packed sequences)
 *                          [--splits N]   (a split-KV set; a paged set draws its own pages and lengths up to s_k)
 *        --device cuda: the same launch on a GPU (default: the sim) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "buf.h"
#include "check.h"
#include "device.h"
#include "dtype.h"
#include "expr.h"
#include "hostdata.h"
#include "json.h"
#include "ref.h"

enum { MAX_T = 24, MAX_V = 48, MAX_MAPS = 8 };
typedef struct {
    const char *name, *dtype;
    int ndim;
    long long dim[4];
    char dname[4][16];   /* the shape's dimension names: a stride parameter's dim ("s", "h", "b") is one of them */
    size_t bytes;
    DevPtr dev;
    void *host;
} Buffer;

typedef struct {
    Device *dev;
    DevModule *mod;
    ExprVar var[MAX_V];
    int nvar;
    Buffer t[MAX_T];
    int nt;
    uint8_t maps[MAX_MAPS][128] __attribute__((aligned(64)));   /* the tensor-map parameters of the kernel being launched */
    char err[1024];
} Ctx;

static const char *str(const Json *o, const char *key) {
    const Json *v = json_get(o, key);
    return v && v->kind == JSON_STR ? v->str : NULL;
}

static long long eval(Ctx *c, const char *text) {
    long long v = -1;
    char why[256];
    if (expr_eval(text, c->var, c->nvar, &v, why, sizeof why)) {
        snprintf(c->err, sizeof c->err, "expression '%s': %s", text, why);
        return -1;
    }
    return v;
}

static int esize(const char *dtype) { return !strcmp(dtype, "bf16") || !strcmp(dtype, "fp16") ? 2 : 4; }

/* The tensor a parameter names, allocated from its shape ("[s_q, h_q, d_qk]") on first sight. */
static Buffer *tensor(Ctx *c, const char *name, const char *shape, const char *dtype) {
    for (int i = 0; i < c->nt; i++)
        if (!strcmp(c->t[i].name, name)) return &c->t[i];
    if (!shape || !dtype || c->nt == MAX_T) return NULL;
    Buffer *b = &c->t[c->nt++];
    *b = (Buffer){.name = name, .dtype = dtype, .bytes = (size_t)esize(dtype)};
    char buf[128];
    snprintf(buf, sizeof buf, "%s", shape + 1);
    for (char *tok = strtok(buf, ",]"); tok; tok = strtok(NULL, ",]")) {   /* a dimension may be an expression: b + 1 */
        while (*tok == ' ') tok++;
        long long v = eval(c, tok);
        if (v < 0 || b->ndim == 4) return NULL;
        snprintf(b->dname[b->ndim], sizeof b->dname[0], "%s", tok);
        b->dim[b->ndim++] = v;
        b->bytes *= (size_t)v;
    }
    b->host = calloc(b->bytes ? b->bytes : 1, 1);
    return b->host && !dev_alloc(c->dev, &b->dev, b->bytes ? b->bytes : 1, c->err, sizeof c->err) ? b : NULL;
}

/* Contiguous strides in elements: the product of the dimensions after dim (as the stride's meaning says: "s" names
 * s_q, s_k, s_kv, the packed rows total_q, total_k, or a page's rows page_size; "b" a paged cache's num_pages); -1
 * if the shape has no such dimension */
static long long stride(const Buffer *b, const char *dim) {
    size_t n = strlen(dim);
    for (int i = 0; i < b->ndim; i++)
        if ((!strncmp(b->dname[i], dim, n) && (!b->dname[i][n] || b->dname[i][n] == '_')) ||
            (!strcmp(dim, "s") && (!strncmp(b->dname[i], "total_", 6) || !strcmp(b->dname[i], "page_size"))) ||
            (!strcmp(dim, "b") && !strcmp(b->dname[i], "num_pages"))) {
            long long s = 1;
            for (int j = i + 1; j < b->ndim; j++) s *= b->dim[j];
            return s;
        }
    return -1;
}

/* A tensor_maps row of the kernel, encoded over its tensor with the kernel's strides as variables. */
static int tmap(Ctx *c, const Json *k, const char *param, uint8_t *out) {
    const Json *maps = json_get(k, "tensor_maps");
    for (int i = 0; maps && i < maps->n; i++) {
        const Json *m = &maps->item[i];
        if (strcmp(str(m, "param"), param)) continue;
        Buffer *b = tensor(c, str(m, "tensor"), NULL, NULL);
        const Json *dims = json_get(m, "dims"), *st = json_get(m, "strides_bytes"), *box = json_get(m, "box");
        const Json *es = json_get(m, "element_strides");
        int64_t rank;
        if (!b || json_i64(json_get(m, "rank"), &rank) || rank < 1 || rank > DEV_TMAP_MAX_RANK) return 1;
        DevTmapDesc d = {.rank = (int)rank, .gaddr = b->dev};
        if (dev_tmap_names(&d, str(m, "dtype"), str(m, "swizzle"), str(m, "interleave"), str(m, "oob_fill"), c->err,
                           sizeof c->err))
            return 1;
        for (int r = 0; r < rank; r++) {
            int64_t bx, e;
            d.dim[r] = (uint64_t)eval(c, dims->item[r].str);
            if (r + 1 < rank) d.stride[r] = (uint64_t)eval(c, st->item[r].str);
            if (json_i64(&box->item[r], &bx) || json_i64(&es->item[r], &e)) return 1;
            d.box[r] = (uint32_t)bx, d.estride[r] = (uint32_t)e;
        }
        return dev_tmap_encode(c->dev, &d, out, c->err, sizeof c->err);
    }
    snprintf(c->err, sizeof c->err, "no tensor_maps row for parameter %s", param);
    return 1;
}

/* x rounded to b's dtype (bf16 or fp16) into element i of its host copy; returns the rounded value */
static float put16(Buffer *b, size_t i, float x) {
    int fp16 = !strcmp(b->dtype, "fp16");
    uint16_t h = fp16 ? f32_to_fp16(x) : f32_to_bf16(x);
    ((uint16_t *)b->host)[i] = h;
    return fp16 ? fp16_to_f32(h) : bf16_to_f32(h);
}

/* uniform draws in [-1, 1), rounded to b's dtype; copy: the values */
static void fill_uniform(Rng *r, Buffer *b, float *copy, int n) {
    for (int i = 0; i < n; i++) copy[i] = put16(b, (size_t)i, (float)(rng_uniform(r) * 2 - 1));
}

/* o of the float64 forward as the backward reads it: rounded to o's dtype into its host copy and into fo (whose
 * values the references' delta takes, as the kernels' does) */
static void put_o(Buffer *o, const double *ro, float *fo) {
    for (size_t i = 0; i < o->bytes / 2; i++) fo[i] = put16(o, i, (float)ro[i]);
}

static void add_var(Ctx *c, const char *name, long long v) { c->var[c->nvar++] = (ExprVar){name, v}; }

/* Every kernel in order: its arguments bound by role, launched. */
static int launch_all(Ctx *c, const Json *man, double scale) {
    const Json *ks = json_get(man, "kernels"), *wss = json_get(man, "workspaces");
    /* workspaces are buffers too (tensor maps may cover them), poisoned unless the manifest asks for zeros */
    for (int w = 0; wss && w < wss->n; w++) {
        long long n = eval(c, str(&wss->item[w], "bytes"));
        if (n < 0 || c->nt == MAX_T) return snprintf(c->err, sizeof c->err, "workspace %s", str(&wss->item[w], "name")), 1;
        Buffer *b = &c->t[c->nt++];
        *b = (Buffer){.name = str(&wss->item[w], "name"), .bytes = (size_t)(n > 0 ? n : 1)};
        if (dev_alloc(c->dev, &b->dev, b->bytes, c->err, sizeof c->err)) return 1;
        const Json *z = json_get(&wss->item[w], "zero_init");
        if (dev_fill_u8(c->dev, b->dev, z && z->boolean ? 0 : 0xA5, b->bytes, c->err, sizeof c->err)) return 1;
    }
    float fscale = (float)scale;
    for (int i = 0; ks && i < ks->n; i++) {
        const Json *k = &ks->item[i], *ps = json_get(k, "params");
        uint64_t val[64];
        void *args[64];
        int nmap = 0, base = c->nvar;
        /* the kernel's stride parameters are variables of its tensor-map expressions */
        for (int p = 0; p < ps->n && c->nvar < MAX_V; p++)
            if (!strcmp(str(&ps->item[p], "role"), "stride")) {
                Buffer *b = tensor(c, str(&ps->item[p], "tensor"), NULL, NULL);
                if (b) add_var(c, str(&ps->item[p], "name"), stride(b, str(&ps->item[p], "dim")));
            }
        for (int p = 0; p < ps->n && p < 64; p++) {
            const Json *q = &ps->item[p];
            const char *role = str(q, "role"), *name = str(q, "name");
            Buffer *b;
            val[p] = 0, args[p] = &val[p];
            if (!strcmp(role, "input") || !strcmp(role, "output")) {
                if (!(b = tensor(c, name, str(q, "shape"), str(q, "dtype")))) return snprintf(c->err, sizeof c->err, "tensor %s", name), 1;
                val[p] = b->dev;
            } else if (!strcmp(role, "stride")) {
                Buffer *t = tensor(c, str(q, "tensor"), NULL, NULL);
                long long st = t ? stride(t, str(q, "dim")) : -1;
                if (st < 0) return snprintf(c->err, sizeof c->err, "stride %s: no dimension %s", name, str(q, "dim")), 1;
                val[p] = (uint64_t)st;
            } else if (!strcmp(role, "size")) {
                val[p] = (uint64_t)eval(c, str(q, "size"));
            } else if (!strcmp(role, "scale")) {
                memcpy(&val[p], &fscale, 4);
            } else if (!strcmp(role, "workspace")) {
                if (!(b = tensor(c, str(q, "workspace"), NULL, NULL)))
                    return snprintf(c->err, sizeof c->err, "workspace %s is not in the manifest's list", name), 1;
                val[p] = b->dev;
            } else if (!strcmp(role, "tensor_map")) {
                if (nmap == MAX_MAPS || tmap(c, k, name, c->maps[nmap])) return 1;
                args[p] = c->maps[nmap++];
            } else return snprintf(c->err, sizeof c->err, "unknown role %s", role), 1;
        }
        c->nvar = base;
        unsigned grid[3], block[3], cl[3];
        const Json *g = json_get(k, "grid"), *bl = json_get(k, "block"), *cj = json_get(k, "cluster");
        for (int d = 0; d < 3; d++) {
            int64_t v;
            grid[d] = (unsigned)eval(c, g->item[d].str);
            cl[d] = cj ? (unsigned)eval(c, cj->item[d].str) : 1;
            if (json_i64(&bl->item[d], &v)) return 1;
            block[d] = (unsigned)v;
        }
        int64_t smem;
        DevFunc *fn = NULL;
        if (json_i64(json_get(k, "dynamic_smem_bytes"), &smem)) return snprintf(c->err, sizeof c->err, "no smem"), 1;
        if (dev_get_func(c->mod, str(k, "entry"), &fn, c->err, sizeof c->err) ||
            dev_set_dyn_smem(fn, (int)smem, c->err, sizeof c->err) ||
            (cl[0] * cl[1] * cl[2] > 1 ? dev_launch_cluster(fn, grid, block, cl, (unsigned)smem, args, c->err, sizeof c->err)
                                       : dev_launch(fn, grid, block, (unsigned)smem, args, c->err, sizeof c->err)) ||
            dev_sync(c->dev, c->err, sizeof c->err))
            return 1;
    }
    return 0;
}

/* Every input and output named by a parameter, allocated from its shape. */
static int bind_tensors(Ctx *c, const Json *man) {
    const Json *ks = json_get(man, "kernels");
    for (int i = 0; ks && i < ks->n; i++) {
        const Json *ps = json_get(&ks->item[i], "params");
        for (int p = 0; p < ps->n; p++) {
            const char *role = str(&ps->item[p], "role");
            if ((!strcmp(role, "input") || !strcmp(role, "output")) &&
                !tensor(c, str(&ps->item[p], "name"), str(&ps->item[p], "shape"), str(&ps->item[p], "dtype")))
                return 1;
        }
    }
    return 0;
}

static Buffer *named(Ctx *c, const char *name) { return tensor(c, name, NULL, NULL); }

static int upload(Ctx *c, Buffer *b) { return dev_upload(c->dev, b->dev, b->host, b->bytes, c->err, sizeof c->err); }

/* rel L2 of a 16-bit output against want (read as its dtype), how many elements are not finite, and want's L2 norm */
static double rel_l2(const Buffer *b, const double *want, int *nonfinite, double *norm) {
    double se = 0, sr = 0;
    int fp16 = !strcmp(b->dtype, "fp16");
    *nonfinite = 0;
    for (size_t i = 0; i < b->bytes / 2; i++) {
        uint16_t h = ((uint16_t *)b->host)[i];
        double g = fp16 ? fp16_to_f32(h) : bf16_to_f32(h);
        if (!isfinite(g)) (*nonfinite)++;
        se += (g - want[i]) * (g - want[i]), sr += want[i] * want[i];
    }
    *norm = sqrt(sr);
    return sqrt(se / (sr > 0 ? sr : 1));
}

/* KERNELS.md's bounds: rel L2 5e-3 for a forward output, 1e-2 for a gradient, half of it in fp16 */
static double tol_of(const Buffer *b, int grad) { return (grad ? 1e-2 : 5e-3) * (!strcmp(b->dtype, "fp16") ? 0.5 : 1); }

/* A forward's o and lse (n rows) against float64: lse +inf where the reference's row sees nothing */
static void judge_fwd(const Buffer *o, const double *ro, const Buffer *lse, const double *rl, size_t n) {
    int bad_o, bad_l = 0;
    double nref, eo = rel_l2(o, ro, &bad_o, &nref), el = 0, sl = 0, tol = tol_of(o, 0);
    for (size_t i = 0; i < n; i++) {
        double g = ((float *)lse->host)[i], w = rl[i];
        if (isinf(w)) bad_l += !(isinf(g) && g > 0);
        else if (!isfinite(g)) bad_l++;
        else el += (g - w) * (g - w), sl += w * w;
    }
    el = sqrt(el / (sl > 0 ? sl : 1));
    printf("  o rel_l2 %.3e (tol %.1e), lse rel_l2 %.3e (tol 1e-4), non-finite or wrong inf %d / %d, |o| %.3g\n", eo, tol, el,
           bad_o, bad_l, nref);
    check(nref > 0, "the reference is not zero (a zero reference would prove nothing)", "|o| %g", nref);
    check(!bad_o && eo <= tol, "o matches float64", "rel_l2 %.3e, %d non-finite", eo, bad_o);
    check(!bad_l && el <= 1e-4, "lse matches float64", "rel_l2 %.3e, %d bad", el, bad_l);
}

/* mla_fwd from its manifest: o and lse against the float64 forward; o poisoned first, lse too. */
static int run_fwd(Ctx *c, const Json *man, uint64_t seed, int s_q, int s_kv, int h_q, int topk, int with_len, int d_qk,
                   int d_v) {
    Buffer *q = named(c, "q"), *kv = named(c, "kv"), *o = named(c, "o"), *lse = named(c, "lse");
    Buffer *idx = named(c, "indices"), *len = named(c, "topk_length");
    check(q && kv && o && lse && idx && len, "the manifest names every tensor of mla_fwd", "%s", c->err);
    if (!q || !kv || !o || !lse || !idx || !len) return check_summary();
    Rng r;
    rng_seed(&r, seed);
    size_t nq = q->bytes / 2, nkv = kv->bytes / 2, no = o->bytes / 2;
    float *fq = malloc(nq * 4), *fkv = malloc(nkv * 4);
    double *ro = malloc(no * 8), *rlse = malloc((size_t)s_q * (size_t)h_q * 8);
    fill_uniform(&r, q, fq, (int)nq), fill_uniform(&r, kv, fkv, (int)nkv);
    mla_draw_indices(&r, s_q, s_kv, topk, idx->host);
    if (with_len) mla_draw_topk_length(&r, idx->host, s_q, s_kv, topk, len->host);
    RefMla p = {s_q, s_kv, h_q, topk, d_qk, d_v, 1.0 / sqrt((double)d_qk), idx->host, with_len ? len->host : NULL};
    ref_mla_fwd(&p, fq, fkv, ro, rlse, 2);
    int rc = upload(c, q) || upload(c, kv) || upload(c, idx) || (with_len && upload(c, len)) ||
             dev_fill_u8(c->dev, o->dev, 0xFF, o->bytes, c->err, sizeof c->err) ||
             dev_fill_u8(c->dev, lse->dev, 0xFF, lse->bytes, c->err, sizeof c->err);
    if (!with_len) len->dev = 0;   /* topk_length is optional: a null pointer */
    rc = rc || launch_all(c, man, p.scale) || dev_download(c->dev, o->host, o->dev, o->bytes, c->err, sizeof c->err) ||
         dev_download(c->dev, lse->host, lse->dev, lse->bytes, c->err, sizeof c->err);
    check(!rc, "every kernel launches from the manifest alone", "%s", c->err);
    if (!rc) judge_fwd(o, ro, lse, rlse, (size_t)s_q * (size_t)h_q);
    free(fq), free(fkv), free(ro), free(rlse);
    return check_summary();
}

/* Normal draws scaled by 0.7 (softmax neither flat nor one-hot), rounded to the tensor's dtype; copy: the values */
static void fill_normal(Rng *r, Buffer *b, float *copy) {
    for (size_t i = 0; i < b->bytes / 2; i++) copy[i] = put16(b, i, (float)(0.7 * rng_normal(r)));
}

/* Packed sequences (varlen): n sequences of lq[i] query and lk[i] key rows; n = 0 for a plain batch */
enum { MAX_SEQS = 64 };
typedef struct { int n, lq[MAX_SEQS], lk[MAX_SEQS]; } Seqs;

/* fo NULL: the float64 forward (o, lse) of p; else, fo the backward's input o (that forward's, rounded), the
 * gradients (g: dq, dk, dv). Over the packed sequences where there are any: each sequence is a batch of one whose
 * rows are contiguous in the packed tensors, its lse scattered into [h_q, total_q]; a sequence without keys gives o 0
 * and lse +inf, and no gradient. */
static int attn_refs(const RefAttn *p, const Seqs *sq, const float *q, const float *k, const float *v, const float *fo,
                     const float *dout, double *o, double *lse, double *g[3]) {
    int bwd = fo != NULL;
    if (!sq->n) return bwd ? ref_attn_bwd(p, q, k, v, fo, dout, g[0], g[1], g[2], NULL, 0) : ref_attn_fwd(p, q, k, v, o, lse, 0);
    size_t q0 = 0, k0 = 0, total_q = 0, rq = (size_t)p->h_q * (size_t)p->d, rk = (size_t)p->h_kv * (size_t)p->d;
    size_t ro = (size_t)p->h_q * (size_t)p->dv, rv = (size_t)p->h_kv * (size_t)p->dv;
    for (int i = 0; i < sq->n; i++) total_q += (size_t)sq->lq[i];
    if (bwd) {   /* keys no query sees and queries of keyless sequences get 0 */
        memset(g[0], 0, total_q * rq * 8);
        for (int i = 0; i < sq->n; i++) k0 += (size_t)sq->lk[i];
        memset(g[1], 0, k0 * rk * 8), memset(g[2], 0, k0 * rv * 8), k0 = 0;
    }
    int rc = 0;
    for (int i = 0; !rc && i < sq->n; k0 += (size_t)sq->lk[i], q0 += (size_t)sq->lq[i], i++) {
        int lq = sq->lq[i], lk = sq->lk[i];
        if (!lq) continue;
        RefAttn one = *p;
        one.b = 1, one.s_q = lq, one.s_k = lk;
        if (bwd) {
            if (lk)
                rc = ref_attn_bwd(&one, q + q0 * rq, k + k0 * rk, v + k0 * rv, fo + q0 * ro, dout + q0 * ro, g[0] + q0 * rq,
                                  g[1] + k0 * rk, g[2] + k0 * rv, NULL, 0);
            continue;
        }
        double *l = malloc((size_t)p->h_q * (size_t)lq * 8);
        if (!l) return -1;
        if (!lk) {
            memset(o + q0 * ro, 0, (size_t)lq * ro * 8);
            for (size_t j = 0; j < (size_t)p->h_q * (size_t)lq; j++) l[j] = INFINITY;
        } else
            rc = ref_attn_fwd(&one, q + q0 * rq, k + k0 * rk, v + k0 * rv, o + q0 * ro, l, 0);
        for (int h = 0; h < p->h_q; h++)
            for (int j = 0; j < lq; j++) lse[(size_t)h * total_q + q0 + (size_t)j] = l[(size_t)h * (size_t)lq + (size_t)j];
        free(l);
    }
    return rc;
}

/* A paged cache (page_size rows a page, each sequence's pages per its block_table row, its keys seqlens_k): the
 * float64 forward sequence by sequence over its keys gathered out of the pages (k, v: the pools) */
static int paged_refs(const RefAttn *p, int page, int max_pages, const int32_t *table, const int32_t *seqlens,
                      const float *q, const float *k, const float *v, double *o, double *lse) {
    size_t rk = (size_t)p->h_kv * (size_t)p->d, rv = (size_t)p->h_kv * (size_t)p->dv;
    size_t rq = (size_t)p->s_q * (size_t)p->h_q * (size_t)p->d, ro = (size_t)p->s_q * (size_t)p->h_q * (size_t)p->dv;
    size_t rl = (size_t)p->h_q * (size_t)p->s_q;
    float *kb = malloc((size_t)max_pages * (size_t)page * rk * 4 + 4), *vb = malloc((size_t)max_pages * (size_t)page * rv * 4 + 4);
    int rc = !kb || !vb ? -1 : 0;
    for (int i = 0; !rc && i < p->b; i++) {
        int len = seqlens[i];
        for (int j = 0; j < len; j++) {   /* key j: page table[i][j / page], row j % page */
            size_t at = (size_t)table[(size_t)i * (size_t)max_pages + (size_t)(j / page)] * (size_t)page + (size_t)(j % page);
            memcpy(kb + (size_t)j * rk, k + at * rk, rk * 4), memcpy(vb + (size_t)j * rv, v + at * rv, rv * 4);
        }
        if (!len) {
            memset(o + (size_t)i * ro, 0, ro * 8);
            for (size_t j = 0; j < rl; j++) lse[(size_t)i * rl + j] = INFINITY;
            continue;
        }
        RefAttn one = *p;
        one.b = 1, one.s_k = len;
        rc = ref_attn_fwd(&one, q + (size_t)i * rq, kb, vb, o + (size_t)i * ro, lse + (size_t)i * rl, 0);
    }
    free(kb), free(vb);
    return rc;
}

/* A dense attn_fwd or attn_bwd set from its manifest (causal from its constants): the forward's o and lse, or the
 * backward's dq, dk and dv from the float64 forward's o and lse, against float64; outputs poisoned first. */
static int run_attn(Ctx *c, const Json *man, uint64_t seed, int bwd, RefAttn p, const Seqs *sq) {
    const char *need[] = {"q", "k", "v", "o", "lse", "do", "dq", "dk", "dv"};
    Buffer *t[9];
    int n = bwd ? 9 : 5, missing = 0;
    for (int i = 0; i < n; i++) missing += !(t[i] = named(c, need[i]));
    check(!missing, "the manifest names every tensor of the set", "%d of %d missing: %s", missing, n, c->err);
    if (missing) return check_summary();
    Buffer *q = t[0], *k = t[1], *v = t[2], *o = t[3], *lse = t[4];
    const Json *cons = json_get(man, "constants"), *causal = json_get(cons, "causal");
    p.causal = causal && causal->boolean;
    p.scale = 1.0 / sqrt((double)p.d);
    Rng r;
    rng_seed(&r, seed);
    Buffer *mask = named(c, "block_mask"), *types = named(c, "head_mask_type");
    if (mask && types) {   /* block-sparse: about half the blocks set, head 0 dense and the others over the mask heads */
        int32_t *m = mask->host, *ty = types->host;
        for (size_t i = 0; i < mask->bytes / 4; i++) m[i] = rng_uniform(&r) < 0.5 ? 0 : 1 + (int32_t)rng_below(&r, 3);
        for (int h = 0; h < p.h_q; h++) ty[h] = h % (p.mask.heads + 1);
        p.mask.blocks = m, p.mask.types = ty;
        if (upload(c, mask) || upload(c, types)) return check(0, "block mask upload", "%s", c->err), check_summary();
    }
    size_t nq = q->bytes / 2, nk = k->bytes / 2, nv = v->bytes / 2, no = o->bytes / 2, nl = lse->bytes / 4;
    float *fq = malloc(nq * 4), *fk = malloc(nk * 4), *fv = malloc(nv * 4), *fdo = malloc(no * 4), *fo = malloc(no * 4);
    double *ro = malloc(no * 8), *rl = malloc(nl * 8), *rg[3] = {malloc(nq * 8), malloc(nk * 8), malloc(nv * 8)};
    fill_normal(&r, q, fq), fill_normal(&r, k, fk), fill_normal(&r, v, fv);
    Buffer *cu[2] = {named(c, "cu_seqlens_q"), named(c, "cu_seqlens_k")};
    if (!cu[0] != !sq->n) return check(0, "varlen lengths given exactly for a varlen set", "the set %s cu_seqlens_q",
                                       cu[0] ? "takes" : "lacks"), check_summary();
    int rc = 0;
    for (int j = 0; j < 2 && sq->n; j++) {   /* the offsets: 0, then the running sums of the lengths */
        int32_t *a = cu[j]->host;
        a[0] = 0;
        for (int i = 0; i < sq->n; i++) a[i + 1] = a[i] + (j ? sq->lk[i] : sq->lq[i]);
        rc = rc || upload(c, cu[j]);
    }
    if (bwd) fill_normal(&r, t[5], fdo);
    Buffer *table = named(c, "block_table"), *seqlens = named(c, "seqlens_k");
    if (table && seqlens && !bwd) {   /* paged: pages in shuffled order, ragged lengths, the pages no one owns NaN */
        int max_pages = (int)table->dim[1], num_pages = (int)k->dim[0], page = (int)k->dim[1];
        int32_t *tb = table->host, *sl = seqlens->host, *perm = malloc((size_t)num_pages * 4);
        for (int i = 0; perm && i < num_pages; i++) perm[i] = i;
        for (int i = num_pages - 1; perm && i > 0; i--) {
            int j = (int)rng_below(&r, (uint32_t)i + 1), x = perm[i];
            perm[i] = perm[j], perm[j] = x;
        }
        for (int i = 0; perm && i < p.b; i++) {
            sl[i] = i ? (int32_t)rng_below(&r, (uint32_t)p.s_k + 1) : p.s_k;
            for (int j = 0; j < max_pages; j++) tb[i * max_pages + j] = perm[i * max_pages + j];
        }
        Buffer *pool[2] = {k, v};
        float *vals[2] = {fk, fv};
        for (int t2 = 0; t2 < 2; t2++) {   /* the pages no sequence owns: NaN, K's and V's */
            size_t rows = (size_t)page * (size_t)p.h_kv * (size_t)(t2 ? p.dv : p.d);
            for (int i = p.b * max_pages; perm && i < num_pages; i++)
                for (size_t e = 0; e < rows; e++)
                    ((uint16_t *)pool[t2]->host)[(size_t)perm[i] * rows + e] = 0x7FC0, vals[t2][(size_t)perm[i] * rows + e] = NAN;
        }
        rc = rc || !perm || upload(c, table) || upload(c, seqlens) ||
             paged_refs(&p, page, max_pages, tb, sl, fq, fk, fv, ro, rl);
        free(perm);
    } else {   /* every CPU: a GPU run takes realistic shapes */
        rc = rc || attn_refs(&p, sq, fq, fk, fv, NULL, fdo, ro, rl, rg);
        if (bwd && !rc) {   /* o is an input: the float64 forward's, rounded as the forward writes it; then the gradients */
            put_o(o, ro, fo);
            rc = attn_refs(&p, sq, fq, fk, fv, fo, fdo, ro, rl, rg);
        }
    }
    if (bwd) {   /* lse is an input too: the float64 forward's in fp32 */
        for (size_t i = 0; i < nl; i++) ((float *)lse->host)[i] = (float)rl[i];
        rc = rc || upload(c, o) || upload(c, lse) || upload(c, t[5]);
        for (int i = 6; i < 9; i++) rc = rc || dev_fill_u8(c->dev, t[i]->dev, 0xFF, t[i]->bytes, c->err, sizeof c->err);
    } else {
        rc = rc || dev_fill_u8(c->dev, o->dev, 0xFF, o->bytes, c->err, sizeof c->err) ||
             dev_fill_u8(c->dev, lse->dev, 0xFF, lse->bytes, c->err, sizeof c->err);
    }
    rc = rc || upload(c, q) || upload(c, k) || upload(c, v) || launch_all(c, man, p.scale);
    for (int i = bwd ? 6 : 3; !rc && i < (bwd ? 9 : 5); i++)
        rc = dev_download(c->dev, t[i]->host, t[i]->dev, t[i]->bytes, c->err, sizeof c->err);
    check(!rc, "every kernel launches from the manifest alone", "%s", c->err);
    if (!rc && !bwd) judge_fwd(o, ro, lse, rl, nl);
    for (int i = 0; !rc && bwd && i < 3; i++) {
        int bad;
        double nref, e = rel_l2(t[6 + i], rg[i], &bad, &nref), tol = tol_of(t[6 + i], 1);
        printf("  %s rel_l2 %.3e (tol %.1e), non-finite %d, |ref| %.3g\n", need[6 + i], e, tol, bad, nref);
        char what[64];
        snprintf(what, sizeof what, "%s matches float64", need[6 + i]);
        check(nref > 0 && !bad && e <= tol, what, "rel_l2 %.3e, %d non-finite, |ref| %g", e, bad, nref);
    }
    free(fq), free(fk), free(fv), free(fdo), free(fo), free(ro), free(rl), free(rg[0]), free(rg[1]), free(rg[2]);
    return check_summary();
}

int main(int argc, char **argv) {
    uint64_t seed = 1;
    int s_q = 3, s_kv = 200, h_q = 40, topk = 150, with_len = 0, tight = 0, b = 1, s_k = 0, h_kv = 0;
    const char *device = "sim";   /* or cuda: the same launch on a GPU */
    int splits = 3;                /* --splits N: a split-KV set's num_splits */
    Seqs sq = {0};                 /* --varlen L1,L2,...: packed sequences; --varlen-k: their key lengths (else the same) */
    int nk = 0;
    if (argc < 3) {
        fprintf(stderr, "usage: test_manifest_sim SET.ptx SET.json [--seed N] [--sq N --skv N --hq N --topk N] [--topk-length] "
                        "[--tight]\n");
        return 2;
    }
    for (int i = 3; i < argc; i++) {
        int more = i + 1 < argc;
        if (!strcmp(argv[i], "--seed") && more) seed = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--device") && more) device = argv[++i];
        else if (!strcmp(argv[i], "--sq") && more) s_q = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--skv") && more) s_kv = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--hq") && more) h_q = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--topk") && more) topk = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--topk-length")) with_len = 1;
        else if (!strcmp(argv[i], "--tight")) tight = 1;
        else if (!strcmp(argv[i], "--b") && more) b = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--sk") && more) s_k = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--hkv") && more) h_kv = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--splits") && more) splits = atoi(argv[++i]);
        else if ((!strcmp(argv[i], "--varlen") || !strcmp(argv[i], "--varlen-k")) && more) {
            int *l = argv[i][8] ? sq.lk : sq.lq, n = 0;
            for (char *tok = strtok(argv[++i], ","); tok && n < MAX_SEQS; tok = strtok(NULL, ",")) l[n++] = atoi(tok);
            if (l == sq.lq) sq.n = n;
            else nk = n;
        }
        else return fprintf(stderr, "test_manifest_sim: bad argument '%s'\n", argv[i]), 2;
    }
    if (tight && s_kv != 1) return fprintf(stderr, "test_manifest_sim: --tight takes --skv 1\n"), 2;
    char *ptx = buf_read_file(argv[1], NULL), *text = buf_read_file(argv[2], NULL);
    Json *man = NULL;
    Ctx c = {0};
    if (!ptx || !text || json_parse(text, &man, c.err, sizeof c.err)) {
        fprintf(stderr, "test_manifest_sim: cannot read %s / %s: %s\n", argv[1], argv[2], c.err);
        return 2;
    }
    const Json *cons = json_get(man, "constants");
    int64_t d_qk = 0, d_v = 0;
    json_i64(json_get(cons, "d"), &d_qk), json_i64(json_get(cons, "dv"), &d_v);
    const char *kernel = str(man, "kernel");
    if (kernel && (!strcmp(kernel, "attn_fwd") || !strcmp(kernel, "attn_bwd"))) {
        long long total_q = 0, total_k = 0;
        if (sq.n) {   /* the batch is the sequences, s_q and s_k their longest */
            if (nk && nk != sq.n) return fprintf(stderr, "test_manifest_sim: --varlen-k needs one length a sequence\n"), 2;
            s_q = s_k = 0, b = sq.n;
            for (int i = 0; i < sq.n; i++) {
                if (!nk) sq.lk[i] = sq.lq[i];
                if (sq.lq[i] < 0 || sq.lk[i] < 0) return fprintf(stderr, "test_manifest_sim: negative length\n"), 2;
                s_q = sq.lq[i] > s_q ? sq.lq[i] : s_q, s_k = sq.lk[i] > s_k ? sq.lk[i] : s_k;
                total_q += sq.lq[i], total_k += sq.lk[i];
            }
            s_q = s_q ? s_q : 1, s_k = s_k ? s_k : 1;
        }
        s_k = s_k ? s_k : s_q, h_kv = h_kv ? h_kv : h_q;
        if (b < 1 || s_q < 1 || s_k < 1 || h_q < 1 || h_kv < 1 || h_q % h_kv)
            return fprintf(stderr, "test_manifest_sim: sizes must be positive and h_q a multiple of h_kv\n"), 2;
        printf("manifest-only launch of %s on the %s: b=%d s_q=%d s_k=%d h_q=%d h_kv=%d seed=%llu\n", str(man, "summary"),
               device, b, s_q, s_k, h_q, h_kv, (unsigned long long)seed);
        add_var(&c, "s_q", s_q), add_var(&c, "s_k", s_k), add_var(&c, "h_q", h_q), add_var(&c, "h_kv", h_kv), add_var(&c, "b", b);
        add_var(&c, "d", d_qk), add_var(&c, "dv", d_v);   /* the constants the shapes name */
        add_var(&c, "total_q", total_q), add_var(&c, "total_k", total_k);
        add_var(&c, "num_splits", splits);   /* split-KV: the splits are the caller's choice */
        int64_t page = 0;
        if (!json_i64(json_get(cons, "page_size"), &page) && page > 0) {   /* each sequence's pages, and 3 no one owns */
            long long max_pages = (s_k + page - 1) / page;
            add_var(&c, "page_size", page), add_var(&c, "max_pages", max_pages), add_var(&c, "num_pages", b * max_pages + 3);
        }
        RefMask mask = {0};
        int64_t bm = 0, bn = 0;
        if (!json_i64(json_get(cons, "block_m"), &bm) && !json_i64(json_get(cons, "block_n"), &bn) && bm > 0 && bn > 0) {
            mask = (RefMask){.heads = 2, .rows = (int)((s_q + bm - 1) / bm), .cols = (int)((s_k + bn - 1) / bn),
                             .bm = (int)bm, .bn = (int)bn};   /* the mask's sizes, from the set's block dims */
            add_var(&c, "n_mask_heads", mask.heads), add_var(&c, "mask_rows", mask.rows), add_var(&c, "mask_cols", mask.cols);
        }
        setenv("PTXGEN_SIM_STRICT", "1", 1);
        int rc = dev_open(&c.dev, device, 0, c.err, sizeof c.err) ||
                 dev_load_ptx(c.dev, ptx, "test_manifest_sim", &c.mod, c.err, sizeof c.err) || bind_tensors(&c, man);
        check(!rc, "the set loads and its tensors bind from the manifest", "%s", c.err);
        if (rc) return check_summary();
        RefAttn p = {.b = b, .s_q = s_q, .s_k = s_k, .h_q = h_q, .h_kv = h_kv, .d = (int)d_qk, .dv = (int)d_v,
                     .mask = mask};
        return run_attn(&c, man, seed, !strcmp(kernel, "attn_bwd"), p, &sq);
    }
    printf("manifest-only launch of %s on the %s: s_q=%d s_kv=%d h_q=%d topk=%d%s seed=%llu\n", str(man, "summary"), device, s_q,
           s_kv, h_q, topk, with_len ? " topk_length" : "", (unsigned long long)seed);
    add_var(&c, "s_q", s_q), add_var(&c, "s_kv", s_kv), add_var(&c, "h_q", h_q), add_var(&c, "topk", topk);
    add_var(&c, "d_qk", d_qk), add_var(&c, "d_v", d_v);
    setenv("PTXGEN_SIM_STRICT", "1", 1);
    int rc = dev_open(&c.dev, device, 0, c.err, sizeof c.err) ||
             dev_load_ptx(c.dev, ptx, "test_manifest_sim", &c.mod, c.err, sizeof c.err) || bind_tensors(&c, man);
    if (!rc && !strcmp(str(man, "kernel"), "mla_fwd")) return run_fwd(&c, man, seed, s_q, s_kv, h_q, topk, with_len,
                                                                     (int)d_qk, (int)d_v);
    Buffer *q = named(&c, "q"), *kv = named(&c, "kv"), *dout = named(&c, "do"), *o = named(&c, "o");
    Buffer *lse = named(&c, "lse"), *idx = named(&c, "indices"), *len = named(&c, "topk_length");
    Buffer *dq = named(&c, "dq"), *dkv = named(&c, "dkv");
    check(!rc && q && kv && dout && o && lse && idx && len && dq && dkv, "the manifest names every tensor of mla_bwd",
          "%s", c.err);
    if (rc || !q || !kv || !dout || !o || !lse || !idx || !len || !dq || !dkv) return check_summary();
    /* inputs: fresh random values, indices with invalid entries and duplicates, O and LSE from float64 */
    Rng r;
    rng_seed(&r, seed);
    size_t nq = q->bytes / 2, nkv = kv->bytes / 2, ndo = dout->bytes / 2;
    float *fq = malloc(nq * 4), *fkv = malloc(nkv * 4), *fdo = malloc(ndo * 4);
    double *ro = malloc(ndo * 8), *rlse = malloc((size_t)s_q * (size_t)h_q * 8);
    double *rdq = malloc(nq * 8), *rdkv = malloc(nkv * 8);
    fill_uniform(&r, q, fq, (int)nq), fill_uniform(&r, kv, fkv, (int)nkv), fill_uniform(&r, dout, fdo, (int)ndo);
    mla_draw_indices(&r, s_q, s_kv, topk, idx->host);
    if (tight) {   /* every slot row 0; dO 1; q +-2^-20 (exact in bf16) */
        for (size_t i = 0; i < nq; i++) fq[i] = put16(q, i, fq[i] < 0 ? -0x1p-20f : 0x1p-20f);
        for (size_t i = 0; i < ndo; i++) fdo[i] = put16(dout, i, 1.0f);
        for (int i = 0; i < s_q * topk; i++) ((int32_t *)idx->host)[i] = 0;
    }
    if (with_len) mla_draw_topk_length(&r, idx->host, s_q, s_kv, topk, len->host);
    RefMla p = {s_q, s_kv, h_q, topk, (int)d_qk, (int)d_v, 1.0 / sqrt((double)d_qk), idx->host, with_len ? len->host : NULL};
    ref_mla_fwd(&p, fq, fkv, ro, rlse, 2);
    float *fo = malloc(ndo * 4);
    put_o(o, ro, fo);
    for (int i = 0; i < s_q * h_q; i++) ((float *)lse->host)[i] = (float)rlse[i];
    ref_mla_bwd(&p, fq, fkv, fo, fdo, rdq, rdkv, NULL, 2);
    rc = upload(&c, q) || upload(&c, kv) || upload(&c, dout) || upload(&c, o) || upload(&c, lse) || upload(&c, idx) ||
         (with_len && upload(&c, len)) || dev_fill_u8(c.dev, dq->dev, 0xFF, dq->bytes, c.err, sizeof c.err) ||
         dev_fill_u8(c.dev, dkv->dev, 0xFF, dkv->bytes, c.err, sizeof c.err);
    if (!with_len) len->dev = 0;   /* topk_length is optional: a null pointer */
    rc = rc || launch_all(&c, man, p.scale) || dev_download(c.dev, dq->host, dq->dev, dq->bytes, c.err, sizeof c.err) ||
         dev_download(c.dev, dkv->host, dkv->dev, dkv->bytes, c.err, sizeof c.err);
    check(!rc, "every kernel launches from the manifest alone", "%s", c.err);
    if (!rc) {
        int bad_q, bad_kv;
        double nq_ref, nkv_ref, eq = rel_l2(dq, rdq, &bad_q, &nq_ref), ekv = rel_l2(dkv, rdkv, &bad_kv, &nkv_ref);
        printf("  dq rel_l2 %.3e, dkv rel_l2 %.3e (tol 1e-2), non-finite %d / %d, |ref| %.3g / %.3g\n", eq, ekv, bad_q,
               bad_kv, nq_ref, nkv_ref);
        check((tight || nq_ref > 0) && nkv_ref > 0, "the draw has valid slots (a zero reference would prove nothing)",
              "|dq| %g |dkv| %g", nq_ref, nkv_ref);
        if (!tight) check(!bad_q && eq <= tol_of(dq, 1), "dq matches float64", "rel_l2 %.3e, %d non-finite", eq, bad_q);
        check(!bad_kv && ekv <= tol_of(dkv, 1), "dkv matches float64", "rel_l2 %.3e, %d non-finite", ekv, bad_kv);
    }
    return check_summary();
}
