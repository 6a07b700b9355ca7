/* float64 attention backward reference, in two passes that each parallelise
 * without sharing writes:
 *   1. per query row (b, h, i): P from the scores, delta = dO . O, dq_i;
 *      the row's lse and delta are kept for pass 2.
 *   2. per key row (b, hk, j): dk_j and dv_j summed over every query head of
 *      the group and every query that sees key j, recomputing s_ij and dP_ij. */
#define _POSIX_C_SOURCE 200809L
#include "ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const RefAttn *p;
    const float *q, *k, *v, *dout;
    double *dq, *dk, *dv, *lse, *delta;
} BwdJob;

static int first_query(const RefAttn *p, int j)   /* the first query that sees key j */
{
    if (!p->causal) return 0;
    long i = (long)j - (p->s_k - p->s_q);
    return i < 0 ? 0 : (int)i;
}

static size_t qi(const RefAttn *p, size_t b, int i, int h) { return ((b * p->s_q + (size_t)i) * p->h_q + (size_t)h); }
static size_t ki(const RefAttn *p, size_t b, int j, int hk) { return ((b * p->s_k + (size_t)j) * p->h_kv + (size_t)hk); }

static void query_row(const BwdJob *jb, long r, double *scratch)
{
    const RefAttn *p = jb->p;
    int i = (int)(r % p->s_q), h = (int)(r / p->s_q % p->h_q), hk = h / (p->h_q / p->h_kv);
    size_t b = (size_t)(r / ((long)p->s_q * p->h_q)), row = qi(p, b, i, h);
    const float *q = jb->q + row * (size_t)p->d, *dout = jb->dout + row * (size_t)p->dv;
    double *s = scratch, *o = scratch + p->s_k, *dq = jb->dq + row * (size_t)p->d;
    int n = ref_visible_keys(p, i);
    double mx = -INFINITY, sum = 0, delta = 0;
    for (int j = 0; j < n; j++) {
        s[j] = ref_mask_sees(p, b, h, i, j) ? p->scale * ref_dot(q, jb->k + ki(p, b, j, hk) * (size_t)p->d, p->d) : -INFINITY;
        if (s[j] > mx) mx = s[j];
    }
    if (mx == -INFINITY) n = 0;   /* no key the row may see: P = 0, dq = 0 */
    for (int j = 0; j < n; j++) sum += exp(s[j] - mx);
    double lse = n ? mx + log(sum) : INFINITY;
    memset(o, 0, sizeof(double) * (size_t)p->dv);
    for (int j = 0; j < n; j++) {
        const float *v = jb->v + ki(p, b, j, hk) * (size_t)p->dv;
        s[j] = exp(s[j] - lse);   /* now P */
        for (int c = 0; c < p->dv; c++) o[c] += s[j] * v[c];
    }
    for (int c = 0; c < p->dv; c++) delta += dout[c] * o[c];
    memset(dq, 0, sizeof(double) * (size_t)p->d);
    for (int j = 0; j < n; j++) {
        const float *k = jb->k + ki(p, b, j, hk) * (size_t)p->d, *v = jb->v + ki(p, b, j, hk) * (size_t)p->dv;
        double ds = s[j] * (ref_dot(dout, v, p->dv) - delta);
        for (int c = 0; c < p->d; c++) dq[c] += p->scale * ds * k[c];
    }
    size_t lrow = ((b * p->h_q + (size_t)h) * p->s_q + (size_t)i);
    jb->lse[lrow] = lse, jb->delta[lrow] = delta;
}

static void key_row(const BwdJob *jb, long r)
{
    const RefAttn *p = jb->p;
    int j = (int)(r % p->s_k), hk = (int)(r / p->s_k % p->h_kv), group = p->h_q / p->h_kv;
    size_t b = (size_t)(r / ((long)p->s_k * p->h_kv)), row = ki(p, b, j, hk);
    const float *k = jb->k + row * (size_t)p->d, *v = jb->v + row * (size_t)p->dv;
    double *dk = jb->dk + row * (size_t)p->d, *dv = jb->dv + row * (size_t)p->dv;
    memset(dk, 0, sizeof(double) * (size_t)p->d);
    memset(dv, 0, sizeof(double) * (size_t)p->dv);
    for (int h = hk * group; h < (hk + 1) * group; h++)
        for (int i = first_query(p, j); i < p->s_q; i++) {
            if (!ref_mask_sees(p, b, h, i, j)) continue;
            size_t qrow = qi(p, b, i, h), lrow = ((b * p->h_q + (size_t)h) * p->s_q + (size_t)i);
            const float *q = jb->q + qrow * (size_t)p->d, *dout = jb->dout + qrow * (size_t)p->dv;
            double pij = exp(p->scale * ref_dot(q, k, p->d) - jb->lse[lrow]);
            double ds = pij * (ref_dot(dout, v, p->dv) - jb->delta[lrow]);
            for (int c = 0; c < p->d; c++) dk[c] += p->scale * ds * q[c];
            for (int c = 0; c < p->dv; c++) dv[c] += pij * dout[c];
        }
}

static void query_rows(void *job, long r0, long r1, void *scratch)
{
    for (long r = r0; r < r1; r++) query_row(job, r, scratch);
}

static void key_rows(void *job, long r0, long r1, void *scratch)
{
    (void)scratch;
    for (long r = r0; r < r1; r++) key_row(job, r);
}

int ref_attn_bwd(const RefAttn *p, const float *q, const float *k, const float *v, const float *dout, double *dq,
                 double *dk, double *dv, int nthreads)
{
    size_t rows = (size_t)p->b * p->h_q * p->s_q;
    double *lse = malloc(sizeof(double) * (rows ? rows : 1)), *delta = malloc(sizeof(double) * (rows ? rows : 1));
    BwdJob job = {p, q, k, v, dout, dq, dk, dv, lse, delta};
    int rc = !lse || !delta ? -1
             : ref_parallel_rows((long)rows, nthreads, sizeof(double) * ((size_t)p->s_k + (size_t)p->dv), query_rows, &job);
    if (!rc) rc = ref_parallel_rows((long)p->b * p->h_kv * p->s_k, nthreads, 0, key_rows, &job);
    free(lse), free(delta);
    return rc;
}
