/* float64 attention backward reference, in two passes that each parallelise
 * without sharing writes:
 *   1. per query row (b, h, i): P from the scores, delta = dO . O, dq_i;
 *      the row's lse and delta are kept for pass 2.
 *   2. per key row (b, hk, j): dk_j and dv_j summed over every query head of
 *      the group and every query that sees key j, recomputing s_ij and dP_ij.
 * Asked for, each pass also keeps its rows' squared term norms (ref.h
 * ref_grad_term), one per row, summed in row order once the pass is done. */
#define _POSIX_C_SOURCE 200809L
#include "ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const RefAttn *p;
    const float *q, *k, *v, *o, *dout;   /* o: NULL, delta from the row's own float64 O */
    double *dq, *dk, *dv, *lse, *delta;
    double *dq_t2, *dk_t2;   /* per query / key row: its squared term norm; NULL: not wanted */
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
    double *t = jb->dq_t2 ? o + p->dv : NULL;
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
    const float *o_in = jb->o ? jb->o + row * (size_t)p->dv : NULL;
    for (int c = 0; c < p->dv; c++) delta += dout[c] * (o_in ? (double)o_in[c] : o[c]);
    memset(dq, 0, sizeof(double) * (size_t)p->d);
    if (t) memset(t, 0, sizeof(double) * (size_t)p->d);
    for (int j = 0; j < n; j++) {
        const float *k = jb->k + ki(p, b, j, hk) * (size_t)p->d, *v = jb->v + ki(p, b, j, hk) * (size_t)p->dv;
        ref_grad_term(dq, t, p->scale, s[j], ref_dot(dout, v, p->dv), delta, k, p->d);
    }
    if (t) jb->dq_t2[r] = ref_sumsq(t, p->d);
    size_t lrow = ((b * p->h_q + (size_t)h) * p->s_q + (size_t)i);
    jb->lse[lrow] = lse, jb->delta[lrow] = delta;
}

static void key_row(const BwdJob *jb, long r, double *scratch)
{
    const RefAttn *p = jb->p;
    int j = (int)(r % p->s_k), hk = (int)(r / p->s_k % p->h_kv), group = p->h_q / p->h_kv;
    size_t b = (size_t)(r / ((long)p->s_k * p->h_kv)), row = ki(p, b, j, hk);
    const float *k = jb->k + row * (size_t)p->d, *v = jb->v + row * (size_t)p->dv;
    double *dk = jb->dk + row * (size_t)p->d, *dv = jb->dv + row * (size_t)p->dv, *t = jb->dk_t2 ? scratch : NULL;
    memset(dk, 0, sizeof(double) * (size_t)p->d);
    memset(dv, 0, sizeof(double) * (size_t)p->dv);
    if (t) memset(t, 0, sizeof(double) * (size_t)p->d);
    for (int h = hk * group; h < (hk + 1) * group; h++)
        for (int i = first_query(p, j); i < p->s_q; i++) {
            if (!ref_mask_sees(p, b, h, i, j)) continue;
            size_t qrow = qi(p, b, i, h), lrow = ((b * p->h_q + (size_t)h) * p->s_q + (size_t)i);
            const float *q = jb->q + qrow * (size_t)p->d, *dout = jb->dout + qrow * (size_t)p->dv;
            double pij = exp(p->scale * ref_dot(q, k, p->d) - jb->lse[lrow]);
            ref_grad_term(dk, t, p->scale, pij, ref_dot(dout, v, p->dv), jb->delta[lrow], q, p->d);
            for (int c = 0; c < p->dv; c++) dv[c] += pij * dout[c];
        }
    if (t) jb->dk_t2[r] = ref_sumsq(t, p->d);
}

static void query_rows(void *job, long r0, long r1, void *scratch)
{
    for (long r = r0; r < r1; r++) query_row(job, r, scratch);
}

static void key_rows(void *job, long r0, long r1, void *scratch)
{
    for (long r = r0; r < r1; r++) key_row(job, r, scratch);
}

int ref_attn_bwd(const RefAttn *p, const float *q, const float *k, const float *v, const float *o, const float *dout,
                 double *dq, double *dk, double *dv, double *term_norm2, int nthreads)
{
    size_t rows = (size_t)p->b * p->h_q * p->s_q, krows = (size_t)p->b * p->h_kv * p->s_k;
    double *lse = ref_row_values(rows, 1), *delta = ref_row_values(rows, 1);
    BwdJob job = {p, q, k, v, o, dout, dq, dk, dv, lse, delta, ref_row_values(rows, !!term_norm2), ref_row_values(krows, !!term_norm2)};
    size_t qscratch = (size_t)p->s_k + (size_t)p->dv + (size_t)p->d;   /* s, o, the row's term magnitudes */
    int rc = !lse || !delta || (term_norm2 && (!job.dq_t2 || !job.dk_t2)) ? -1
             : ref_parallel_rows((long)rows, nthreads, sizeof(double) * qscratch, query_rows, &job);
    if (!rc) rc = ref_parallel_rows((long)krows, nthreads, sizeof(double) * (size_t)p->d, key_rows, &job);
    if (!rc && term_norm2) {
        term_norm2[0] = ref_sum_rows(job.dq_t2, (long)rows);
        term_norm2[1] = ref_sum_rows(job.dk_t2, (long)krows);
        term_norm2[2] = 0;
    }
    free(lse), free(delta), free(job.dq_t2), free(job.dk_t2);
    return rc;
}
