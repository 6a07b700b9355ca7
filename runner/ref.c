/* float64 attention forward reference, one (b, h, i) row at a time. */
#define _POSIX_C_SOURCE 200809L
#include "ref.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

typedef struct {
    const RefAttn *p;
    const float *q, *k, *v;
    double *o, *lse;
} AttnJob;

/* Four partial sums break the add dependency chain so the loop pipelines. */
static double dot_df(const double *a, const float *b, int n)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int j = 0;
    for (; j + 4 <= n; j += 4) {
        s0 += a[j] * b[j];
        s1 += a[j + 1] * b[j + 1];
        s2 += a[j + 2] * b[j + 2];
        s3 += a[j + 3] * b[j + 3];
    }
    for (; j < n; j++)
        s0 += a[j] * b[j];
    return (s0 + s1) + (s2 + s3);
}

double ref_dot(const float *a, const float *b, int n)
{
    double s = 0;
    for (int c = 0; c < n; c++)
        s += (double)a[c] * b[c];
    return s;
}

void ref_grad_term(double *g, double *t, double scale, double p, double dp, double delta, const float *x, int n)
{
    double ds = p * (dp - delta);
    for (int c = 0; c < n; c++)
        g[c] += scale * ds * x[c];
    if (!t)
        return;
    double mag = fabs(scale) * p * (fabs(dp) + fabs(delta));
    for (int c = 0; c < n; c++)
        t[c] += mag * fabs(x[c]);
}

double ref_sumsq(const double *t, int n)
{
    double s = 0;
    for (int c = 0; c < n; c++)
        s += t[c] * t[c];
    return s;
}

double *ref_row_values(size_t n, int wanted)
{
    return wanted ? malloc(sizeof(double) * (n ? n : 1)) : NULL;
}

double ref_sum_rows(const double *v, long n)
{
    double s = 0;
    for (long r = 0; r < n; r++)
        s += v[r];
    return s;
}

int ref_visible_keys(const RefAttn *p, int i)
{
    if (!p->causal)
        return p->s_k;
    long n = (long)i + p->s_k - p->s_q + 1;
    if (n < 0)
        n = 0;
    return n > p->s_k ? p->s_k : (int)n;
}

int ref_mask_sees(const RefAttn *p, size_t b, int h, int i, int j)
{
    const RefMask *m = &p->mask;
    if (!m->blocks || !m->types[h])
        return 1;
    int t = m->types[h];
    if (t < 0 || t > m->heads)   /* no mask head: the list kernels give it no blocks */
        return 0;
    return m->blocks[((b * (size_t)m->heads + (size_t)(t - 1)) * (size_t)m->rows + (size_t)(i / m->bm)) * (size_t)m->cols +
                     (size_t)(j / m->bn)] != 0;
}

/* Fills s[0..n) with scaled scores, -inf where the mask hides the key; returns their maximum. */
static double row_scores(const AttnJob *jb, const double *qd, size_t kbase,
                         size_t kstride, int n, double *s, size_t b, int h, int i)
{
    const RefAttn *p = jb->p;
    double mx = -INFINITY;
    for (int j = 0; j < n; j++) {
        if (!ref_mask_sees(p, b, h, i, j)) {
            s[j] = -INFINITY;
            continue;
        }
        s[j] = p->scale * dot_df(qd, jb->k + kbase + (size_t)j * kstride, p->d);
        if (s[j] > mx)
            mx = s[j];
    }
    return mx;
}

static void attn_row(const AttnJob *jb, long row, double *scratch)
{
    const RefAttn *p = jb->p;
    int i = (int)(row % p->s_q);
    int h = (int)((row / p->s_q) % p->h_q);
    size_t b = (size_t)(row / ((long)p->s_q * p->h_q));
    int hk = h / (p->h_q / p->h_kv);
    double *s = scratch, *qd = scratch + p->s_k, *acc = qd + p->d;
    double *orow = jb->o + (((b * p->s_q + i) * p->h_q) + h) * (size_t)p->dv;
    int n = ref_visible_keys(p, i);

    const float *qrow = jb->q + (((b * p->s_q + i) * p->h_q) + h) * (size_t)p->d;
    for (int c = 0; c < p->d; c++)
        qd[c] = qrow[c];
    for (int c = 0; c < p->dv; c++)
        acc[c] = 0.0;

    size_t kv_row = (b * p->s_k) * p->h_kv + hk;       /* key 0's (b, j, hk) index */
    double mx = row_scores(jb, qd, kv_row * p->d, (size_t)p->h_kv * p->d, n, s, b, h, i);
    double sum = 0.0;
    if (mx == -INFINITY)   /* the mask hides every key the row may see */
        n = 0;
    for (int j = 0; j < n; j++) {
        if (s[j] == -INFINITY)
            continue;
        double w = exp(s[j] - mx);
        const float *vr = jb->v + (kv_row + (size_t)j * p->h_kv) * p->dv;
        sum += w;
        for (int c = 0; c < p->dv; c++)
            acc[c] += w * vr[c];
    }
    /* No visible key: the contract's empty softmax is LSE = +inf, O = 0. */
    jb->lse[row] = n ? mx + log(sum) : INFINITY;
    for (int c = 0; c < p->dv; c++)
        orow[c] = n ? acc[c] / sum : 0.0;
}

/* Rows [r0, r1) in lse order (b, h, i). */
static void attn_rows(void *ctx, long r0, long r1, void *scratch)
{
    for (long r = r0; r < r1; r++)
        attn_row(ctx, r, scratch);
}

typedef struct {
    RefRowsFn fn;
    void *ctx, *scratch;
    long r0, r1;
    pthread_t tid;
    int started;
} Chunk;

static void *run_chunk(void *arg)
{
    const Chunk *c = arg;
    c->fn(c->ctx, c->r0, c->r1, c->scratch);
    return NULL;
}

/* Everything a chunk needs is allocated before any thread starts, so running
 * out of memory is reported by the caller's thread and no worker ever fails. */
int ref_parallel_rows(long rows, int nthreads, size_t scratch_bytes, RefRowsFn fn, void *ctx)
{
    if (rows <= 0)
        return 0;
    if (nthreads <= 0) {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        nthreads = ncpu > 0 ? (int)ncpu : 1;
    }
    int nt = nthreads > rows ? (int)rows : nthreads, rc = 0;
    Chunk *chunks = calloc((size_t)nt, sizeof *chunks);
    if (!chunks)
        return -1;
    for (int t = 0; t < nt && !rc; t++)
        if (scratch_bytes && !(chunks[t].scratch = malloc(scratch_bytes)))
            rc = -1;
    for (int t = 0; t < nt && !rc; t++) {
        chunks[t].fn = fn, chunks[t].ctx = ctx;
        chunks[t].r0 = (long)((long long)rows * t / nt), chunks[t].r1 = (long)((long long)rows * (t + 1) / nt);
        /* The caller's thread takes chunk 0, and any chunk a thread can't start for. */
        chunks[t].started = t > 0 && pthread_create(&chunks[t].tid, NULL, run_chunk, &chunks[t]) == 0;
    }
    for (int t = 0; t < nt && !rc; t++)
        if (!chunks[t].started)
            run_chunk(&chunks[t]);
    for (int t = 0; t < nt; t++) {
        if (chunks[t].started)
            pthread_join(chunks[t].tid, NULL);
        free(chunks[t].scratch);
    }
    free(chunks);
    return rc;
}

int ref_attn_fwd(const RefAttn *p, const float *q, const float *k, const float *v,
                 double *o, double *lse, int nthreads)
{
    AttnJob job = { p, q, k, v, o, lse };
    return ref_parallel_rows((long)p->b * p->h_q * p->s_q, nthreads,
                             sizeof(double) * ((size_t)p->s_k + p->d + p->dv), attn_rows, &job);
}
