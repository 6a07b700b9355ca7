/* Paged-KV problems (paged.h). */
#include "paged.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ref.h"

PTXGEN_API int ptxgen_paged_check(const int *block_table, const int *seqlens_k, int b, int max_pages, int num_pages,
                                  int page_size, char *err, size_t errlen) {
    errlen = err ? errlen : 0;   /* a NULL err takes no message */
    if (!block_table || !seqlens_k || b < 1 || max_pages < 1 || num_pages < 1 || page_size < 1) {
        snprintf(err, errlen, "a paged KV cache needs b >= 1 sequences, a block table of max_pages >= 1 columns and "
                 "num_pages >= 1 pages of page_size >= 1 rows");
        return 2;
    }
    for (int i = 0; i < b; i++) {
        long long len = seqlens_k[i];
        if (len < 0 || len > (long long)max_pages * page_size) {
            snprintf(err, errlen, "seqlens_k[%d] is %lld: 0 .. max_pages * page_size = %lld", i, len,
                     (long long)max_pages * page_size);
            return 2;
        }
        for (long long j = 0; j < (len + page_size - 1) / page_size; j++) {
            int id = block_table[(long long)i * max_pages + j];
            if (id < 0 || id >= num_pages) {
                snprintf(err, errlen, "block_table[%d][%lld] is %d: sequence %d's keys need a page id in [0, %d)", i, j,
                         id, i, num_pages);
                return 2;
            }
        }
    }
    return 0;
}

static Tensor int_tensor(const char *name, int n) {
    return (Tensor){.name = name, .rows = 1, .heads = 1, .width = n, .stride_h = (uint64_t)n, .stride_s = (uint64_t)n,
                    .stride_b = (uint64_t)n, .elems = (size_t)n, .count = (size_t)n, .esize = 4};
}

int paged_setup(Problem *p, uint64_t seed, int full, char *err, size_t errlen) {
    Rng r;
    rng_seed(&r, seed ^ 0x70616765ull);   /* its own stream: the shapes are known before the inputs are drawn */
    int ps = p->page_size;
    p->max_pages = (p->s_k + ps - 1) / ps;
    p->seqlens = int_tensor("seqlens_k", p->b);
    p->block_table = int_tensor("block_table", p->b * p->max_pages);
    if (!(p->seqlens.ints = malloc(sizeof(int32_t) * (size_t)p->b)) ||
        !(p->block_table.ints = malloc(sizeof(int32_t) * (size_t)p->b * (size_t)p->max_pages)))
        return snprintf(err, errlen, "out of host memory for the block table"), 1;
    long long pages = 2;
    for (int i = 0; i < p->b; i++) {
        int len = full || i == p->b - 1 ? p->s_k : (int)rng_below(&r, (uint32_t)p->s_k + 1);
        p->seqlens.ints[i] = len;
        pages += (len + ps - 1) / ps;
    }
    if (pages > 1 << 24) return snprintf(err, errlen, "the cache would need %lld pages", pages), 1;
    p->num_pages = (int)pages;
    int *ids = malloc(sizeof *ids * (size_t)pages);
    if (!ids) return snprintf(err, errlen, "out of host memory for the page ids"), 1;
    for (int i = 0; i < p->num_pages; i++) ids[i] = i;
    for (int i = p->num_pages - 1; i > 0; i--) {   /* pages in any order */
        int j = (int)rng_below(&r, (uint32_t)i + 1), t = ids[i];
        ids[i] = ids[j], ids[j] = t;
    }
    int next = 0;
    for (int i = 0; i < p->b; i++)
        for (int j = 0; j < p->max_pages; j++)
            p->block_table.ints[(size_t)i * p->max_pages + j] =
                j < (p->seqlens.ints[i] + ps - 1) / ps ? ids[next++] : -1;   /* -1: never read */
    free(ids);
    return ptxgen_paged_check(p->block_table.ints, p->seqlens.ints, p->b, p->max_pages, p->num_pages, ps, err, errlen)
               ? 1 : 0;
}

void paged_layouts(Problem *p, int pad) {
    problem_layout(&p->q, "q", p->b, p->s_q, p->h_q, p->d, pad, 2);
    problem_layout(&p->k, "k", p->num_pages, p->page_size, p->h_kv, p->d, pad, 2);
    problem_layout(&p->v, "v", p->num_pages, p->page_size, p->h_kv, p->d_v, pad, 2);
    problem_layout(&p->o, "o", p->b, p->s_q, p->h_q, p->d_v, pad, 2);
    problem_layout(&p->lse, "lse", p->b, p->h_q, 1, p->s_q, 0, 4);
}

/* Sequence by sequence: its keys gathered from their pages into [len, h_kv, d], then the dense reference of a batch
 * of one; LSE rows [b, h_q, s_q] are batch-major already. */
int paged_ref_fwd(const Problem *p, double *const ref[]) {
    int ps = p->page_size, rc = 0;
    size_t krow = (size_t)p->h_kv * p->d, vrow = (size_t)p->h_kv * p->d_v;
    float *k = malloc(sizeof *k * krow * (size_t)(p->s_k ? p->s_k : 1)), *v = malloc(sizeof *v * vrow * (size_t)(p->s_k ? p->s_k : 1));
    if (!k || !v) rc = 1;
    for (int i = 0; !rc && i < p->b; i++) {
        int len = p->seqlens.ints[i];
        for (int j = 0; j < len; j++) {
            size_t src = (size_t)p->block_table.ints[(size_t)i * p->max_pages + j / ps] * ps + (size_t)(j % ps);
            memcpy(k + (size_t)j * krow, p->k.host + src * krow, sizeof *k * krow);
            memcpy(v + (size_t)j * vrow, p->v.host + src * vrow, sizeof *v * vrow);
        }
        RefAttn ra = {1, p->s_q, len, p->h_q, p->h_kv, p->d, p->d_v, p->causal, p->scale, {0}};
        rc = ref_attn_fwd(&ra, p->q.host + (size_t)i * p->s_q * p->h_q * p->d, k, v,
                          ref[0] + (size_t)i * p->s_q * p->h_q * p->d_v, ref[1] + (size_t)i * p->h_q * p->s_q, 0);
    }
    free(k), free(v);
    return rc;
}

/* the keys of every sequence */
static double total_keys(const Problem *p) {
    double keys = 0;
    for (int i = 0; i < p->b; i++) keys += p->seqlens.ints[i];
    return keys;
}

double paged_fwd_flops(const Problem *p) { return 2.0 * p->h_q * p->s_q * total_keys(p) * (p->d + p->d_v); }

/* rows [from, page_size) of page pg of t set to NaN */
static int poison_rows(const Problem *p, const Tensor *t, int pg, int from, const uint16_t *nan, Device *dev, char *err,
                       size_t errlen) {
    if (from >= p->page_size) return 0;
    size_t first = (size_t)pg * t->stride_b + (size_t)from * t->stride_s, n = (size_t)(p->page_size - from) * t->stride_s;
    return dev_upload(dev, t->dev + first * 2, nan, n * 2, err, errlen);
}

int paged_poison(const Problem *p, Device *dev, char *err, size_t errlen) {
    size_t row = (size_t)(p->k.stride_s > p->v.stride_s ? p->k.stride_s : p->v.stride_s) * (size_t)p->page_size;
    uint16_t *nan = malloc(row * sizeof *nan);
    char *used = calloc((size_t)p->num_pages, 1);
    int rc = !nan || !used;
    if (rc) snprintf(err, errlen, "out of host memory for the cache's NaN rows");
    for (size_t i = 0; !rc && i < row; i++) nan[i] = p->dt == DT_FP16 ? 0x7e00 : 0x7fc0;
    for (int i = 0; !rc && i < p->b; i++) {
        int len = p->seqlens.ints[i];
        for (int j = 0; !rc && j * p->page_size < len; j++) {
            int pg = p->block_table.ints[(size_t)i * p->max_pages + j], rows = len - j * p->page_size;
            used[pg] = 1;
            rc = poison_rows(p, &p->k, pg, rows, nan, dev, err, errlen) || poison_rows(p, &p->v, pg, rows, nan, dev, err, errlen);
        }
    }
    for (int pg = 0; !rc && pg < p->num_pages; pg++)
        if (!used[pg]) rc = poison_rows(p, &p->k, pg, 0, nan, dev, err, errlen) || poison_rows(p, &p->v, pg, 0, nan, dev, err, errlen);
    free(nan), free(used);
    return rc;
}

double paged_kv_bytes(const Problem *p) { return total_keys(p) * p->h_kv * (p->d + p->d_v) * 2.0; }

void paged_describe(const Problem *p, char *buf, size_t len) {
    int n = snprintf(buf, len, "paged b=%d s_q=%d (seqlens_k", p->b, p->s_q);
    for (int i = 0; i < p->b && n > 0 && (size_t)n < len; i++) {
        if (i == 8 && p->b > 10) { n += snprintf(buf + n, len - (size_t)n, " ... %d more", p->b - 8); break; }
        n += snprintf(buf + n, len - (size_t)n, "%s%d", i ? "," : " ", p->seqlens.ints[i]);
    }
    if (n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, "; %d pages of %d in shuffled order, longest %d) h_q=%d h_kv=%d d=%d%s",
                 p->num_pages, p->page_size, p->s_k, p->h_q, p->h_kv, p->d, p->causal ? " causal" : "");
}
