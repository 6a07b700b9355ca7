/* float64 sparse MLA references (KERNELS.md "mla_fwd / mla_bwd").
 * Forward: one (token, head) row at a time over the token's valid slots.
 * Backward in two passes that each parallelise without sharing writes, as in
 * ref_bwd.c:
 *   1. per (token, head) row: P, delta = dO . o, dq; lse and delta kept;
 *   2. per kv row: dkv summed over every valid slot that selected it (an
 *      inverted index built from the indices) and every head, recomputing P
 *      and dP from the kept lse and delta.
 * Asked for, pass 1 also keeps each row's squared dq term norm (ref.h
 * ref_grad_term), summed in row order once the pass is done. */
#include "ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const RefMla *p;
    const float *q, *kv, *dout;
    const float *o_in;       /* the backward's input o, which delta takes; NULL: each row's own float64 o */
    double *o, *lse, *dq, *dkv, *delta;
    double *dq_t2;           /* per (token, head) row: its squared dq term norm; NULL: not wanted */
    const long *sel_start;   /* kv row r is selected by the tokens sel[sel_start[r] .. sel_start[r + 1]), once per slot */
    const int *sel;
} MlaJob;

int ref_mla_valid(const RefMla *p, int t, int j)
{
    int32_t idx = p->indices[(size_t)t * p->topk + j];
    return idx >= 0 && idx < p->s_kv && (!p->topk_length || j < p->topk_length[t]);
}

static const float *kv_row(const MlaJob *jb, int32_t idx) { return jb->kv + (size_t)idx * jb->p->d_qk; }
static const float *q_row(const MlaJob *jb, long r) { return jb->q + (size_t)r * jb->p->d_qk; }

/* Row r = (t, h): P of token t's slots in s (0 for invalid ones), o = sum P V
 * in o; returns lse (+inf, with o = 0, when no slot is valid). */
static double row_softmax(const MlaJob *jb, long r, double *s, double *o)
{
    const RefMla *p = jb->p;
    int t = (int)(r / p->h_q);
    const int32_t *idx = p->indices + (size_t)t * p->topk;
    double mx = -INFINITY, sum = 0;
    for (int j = 0; j < p->topk; j++) {
        s[j] = ref_mla_valid(p, t, j) ? p->scale * ref_dot(q_row(jb, r), kv_row(jb, idx[j]), p->d_qk) : -INFINITY;
        if (s[j] > mx) mx = s[j];
    }
    memset(o, 0, sizeof(double) * (size_t)p->d_v);
    if (mx == -INFINITY) {
        memset(s, 0, sizeof(double) * (size_t)p->topk);
        return INFINITY;
    }
    for (int j = 0; j < p->topk; j++) sum += exp(s[j] - mx);
    double lse = mx + log(sum);
    for (int j = 0; j < p->topk; j++) {
        s[j] = exp(s[j] - lse);   /* exp(-inf) = 0 for an invalid slot */
        if (s[j] == 0) continue;
        const float *v = kv_row(jb, idx[j]);
        for (int c = 0; c < p->d_v; c++) o[c] += s[j] * v[c];
    }
    return lse;
}

static void fwd_rows(void *ctx, long r0, long r1, void *scratch)
{
    const MlaJob *jb = ctx;
    for (long r = r0; r < r1; r++) jb->lse[r] = row_softmax(jb, r, scratch, jb->o + (size_t)r * jb->p->d_v);
}

int ref_mla_fwd(const RefMla *p, const float *q, const float *kv, double *o, double *lse, int nthreads)
{
    MlaJob job = {.p = p, .q = q, .kv = kv, .o = o, .lse = lse};
    return ref_parallel_rows((long)p->s_q * p->h_q, nthreads, sizeof(double) * (size_t)p->topk, fwd_rows, &job);
}

/* Pass 1 for row r: dq = scale * sum_j dS_j K[idx_j]; keeps lse and delta,
 * and with t (d_qk doubles of scratch; NULL: not wanted) the squared term norm. */
static void dq_row(const MlaJob *jb, long r, double *s, double *o, double *t)
{
    const RefMla *p = jb->p;
    const int32_t *idx = p->indices + (size_t)(r / p->h_q) * p->topk;
    const float *dout = jb->dout + (size_t)r * p->d_v;
    double *dq = jb->dq + (size_t)r * p->d_qk, delta = 0;
    jb->lse[r] = row_softmax(jb, r, s, o);
    const float *o_in = jb->o_in ? jb->o_in + (size_t)r * p->d_v : NULL;
    for (int c = 0; c < p->d_v; c++) delta += dout[c] * (o_in ? (double)o_in[c] : o[c]);
    jb->delta[r] = delta;
    memset(dq, 0, sizeof(double) * (size_t)p->d_qk);
    if (t) memset(t, 0, sizeof(double) * (size_t)p->d_qk);
    for (int j = 0; j < p->topk; j++) {
        if (s[j] == 0) continue;   /* invalid (or a P that underflowed: dS = 0 either way) */
        const float *k = kv_row(jb, idx[j]);
        ref_grad_term(dq, t, p->scale, s[j], ref_dot(dout, k, p->d_v), delta, k, p->d_qk);
    }
    if (t) jb->dq_t2[r] = ref_sumsq(t, p->d_qk);
}

static void dq_rows(void *ctx, long r0, long r1, void *scratch)
{
    const MlaJob *jb = ctx;
    double *s = scratch, *o = s + jb->p->topk, *t = jb->dq_t2 ? o + jb->p->d_v : NULL;
    for (long r = r0; r < r1; r++) dq_row(jb, r, s, o, t);
}

/* Pass 2 for kv row k: every (token, head) of every slot that selected it. */
static void dkv_row(const MlaJob *jb, long k)
{
    const RefMla *p = jb->p;
    const float *kr = kv_row(jb, (int32_t)k);
    double *dkv = jb->dkv + (size_t)k * p->d_qk;
    memset(dkv, 0, sizeof(double) * (size_t)p->d_qk);
    for (long e = jb->sel_start[k]; e < jb->sel_start[k + 1]; e++)
        for (int h = 0; h < p->h_q; h++) {
            long r = (long)jb->sel[e] * p->h_q + h;
            const float *q = q_row(jb, r), *dout = jb->dout + (size_t)r * p->d_v;
            double pj = exp(p->scale * ref_dot(q, kr, p->d_qk) - jb->lse[r]);
            ref_grad_term(dkv, NULL, p->scale, pj, ref_dot(dout, kr, p->d_v), jb->delta[r], q, p->d_qk);
            for (int c = 0; c < p->d_v; c++) dkv[c] += pj * dout[c];
        }
}

static void dkv_rows(void *ctx, long r0, long r1, void *scratch)
{
    (void)scratch;
    for (long r = r0; r < r1; r++) dkv_row(ctx, r);
}

/* The inverted index: for each kv row, the token of every valid slot that selected it, in (token, slot) order.
 * fill: s_kv longs of scratch. */
static void invert_indices(const RefMla *p, long *start, int *sel, long *fill)
{
    memset(start, 0, sizeof(long) * ((size_t)p->s_kv + 1));
    for (int t = 0; t < p->s_q; t++)
        for (int j = 0; j < p->topk; j++)
            if (ref_mla_valid(p, t, j)) start[p->indices[(size_t)t * p->topk + j] + 1]++;
    for (int k = 0; k < p->s_kv; k++) start[k + 1] += start[k];
    memcpy(fill, start, sizeof(long) * (size_t)p->s_kv);
    for (int t = 0; t < p->s_q; t++)
        for (int j = 0; j < p->topk; j++)
            if (ref_mla_valid(p, t, j)) sel[fill[p->indices[(size_t)t * p->topk + j]]++] = t;
}

int ref_mla_bwd(const RefMla *p, const float *q, const float *kv, const float *o, const float *dout, double *dq,
                double *dkv, double *term_norm2, int nthreads)
{
    size_t rows = (size_t)p->s_q * p->h_q;
    long *start = malloc(sizeof(long) * ((size_t)p->s_kv + 1)), *fill = malloc(sizeof(long) * ((size_t)p->s_kv + 1));
    int *sel = malloc(sizeof(int) * ((size_t)p->s_q * (size_t)p->topk + 1));
    double *lse = ref_row_values(rows, 1), *delta = ref_row_values(rows, 1), *dq_t2 = ref_row_values(rows, !!term_norm2);
    MlaJob job = {.p = p, .q = q, .kv = kv, .o_in = o, .dout = dout, .lse = lse, .dq = dq, .dkv = dkv, .delta = delta,
                  .dq_t2 = dq_t2, .sel_start = start, .sel = sel};
    size_t scratch = (size_t)p->topk + (size_t)p->d_v + (size_t)p->d_qk;   /* P, o, the row's term magnitudes */
    int rc = !start || !fill || !sel || !lse || !delta || (term_norm2 && !dq_t2) ? -1 : 0;
    if (!rc) invert_indices(p, start, sel, fill);
    if (!rc) rc = ref_parallel_rows((long)rows, nthreads, sizeof(double) * scratch, dq_rows, &job);
    if (!rc) rc = ref_parallel_rows(p->s_kv, nthreads, 0, dkv_rows, &job);
    if (!rc && term_norm2) term_norm2[0] = ref_sum_rows(dq_t2, (long)rows), term_norm2[1] = 0;
    free(start), free(fill), free(sel), free(lse), free(delta), free(dq_t2);
    return rc;
}
