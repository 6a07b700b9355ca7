/* float64 CPU references. Inputs are the already-rounded element values as
 * float, contiguous [b, s, h, d]; outputs double. Threaded with pthreads. */
#ifndef PTXGEN_REF_H
#define PTXGEN_REF_H
#include <stddef.h>
#include <stdint.h>

/* Block-sparse (KERNELS.md): blocks [b, heads, rows, cols] int32 at bm x bn (NULL: dense), types [h_q]. */
typedef struct {
    const int32_t *blocks, *types;
    int heads, rows, cols, bm, bn;
} RefMask;

typedef struct {
    int b, s_q, s_k, h_q, h_kv, d, dv;
    int causal;                 /* bottom-right aligned: key j visible to query i iff j <= i + s_k - s_q */
    double scale;               /* softmax scale (natural) */
    RefMask mask;               /* and, block-sparse, its head dense or its block of (i, j) set */
} RefAttn;

/* Every reference returns 0, or -1 when the host is out of memory (its
 * outputs then unwritten); none exits. */

/* o: [b, s_q, h_q, dv]; lse: [b, h_q, s_q] natural log, +inf for rows with no
 * valid key (whose o row is 0). nthreads <= 0: use all online CPUs. */
int ref_attn_fwd(const RefAttn *p, const float *q, const float *k, const float *v,
                 double *o, double *lse, int nthreads);
/* Gradients of sum(dout * O) (KERNELS.md attn_bwd): dq [b, s_q, h_q, d],
 * dk [b, s_k, h_kv, d] and dv [b, s_k, h_kv, dv], the last two summed over the
 * query heads of each kv head. P is recomputed; o (NULL: the reference's own
 * float64 O) is the backward's input O, rounded as a forward writes it, which
 * delta = dO . O takes, as a kernel's does (KERNELS.md judges from the same
 * rounded inputs; where dS cancels, O's rounding is what a kernel's dS is left
 * with).
 * term_norm2: NULL, or 3 values in the outputs' order, each the squared
 * Frobenius norm of the output's term magnitudes (ref_grad_term): dq's and
 * dk's; dv's is 0 (P dO has no dS - delta to cancel). The same for any nthreads. */
int ref_attn_bwd(const RefAttn *p, const float *q, const float *k, const float *v, const float *o, const float *dout,
                 double *dq, double *dk, double *dv, double *term_norm2, int nthreads);
/* Calls fn over [0, rows) cut into nthreads contiguous chunks (<= 0: all online
 * CPUs), one thread each; the caller's thread takes the first. Each chunk gets
 * its own scratch of scratch_bytes (NULL when 0). -1, having run nothing, when
 * out of host memory. */
typedef void (*RefRowsFn)(void *ctx, long r0, long r1, void *scratch);
int ref_parallel_rows(long rows, int nthreads, size_t scratch_bytes, RefRowsFn fn, void *ctx);
/* Keys causal lets query i see: a prefix [0, n) of the key sequence. */
int ref_visible_keys(const RefAttn *p, int i);
/* Whether the block mask lets query i of (batch b, head h) see key j (1 when dense). */
int ref_mask_sees(const RefAttn *p, size_t b, int h, int i, int j);
/* sum a[c] * b[c] in float64, c in order. */
double ref_dot(const float *a, const float *b, int n);
/* One term of a gradient row that sums dS = P (dP - delta) times an input
 * row x: g[c] += scale * dS * x[c]. Such a row cancels to (nearly) 0 when
 * dP = delta for all its terms (a query row that sees one key, a token whose
 * valid slots all hold one kv row), and what is left of it in a kernel is the
 * rounding of dP - delta, a fraction of the terms' size, not of the sum's.
 * So t (NULL: not wanted) gathers that size beside it:
 * t[c] += |scale| P (|dP| + |delta|) |x[c]| (verify.h's norm floor). */
void ref_grad_term(double *g, double *t, double scale, double p, double dp, double delta, const float *x, int n);
/* sum t[c]^2, c in order: a row's squared term norm. */
double ref_sumsq(const double *t, int n);
/* v[0] + ... + v[n - 1] in that order: per-row values, each written by the
 * one thread that ran its row, summed after the threads so that the total
 * does not depend on how ref_parallel_rows cut the rows. */
double ref_sum_rows(const double *v, long n);
/* n doubles for per-row values (at least one, so that an empty problem is no failure), or NULL when not wanted */
double *ref_row_values(size_t n, int wanted);

/* Sparse MLA, MQA form (KERNELS.md "mla_fwd / mla_bwd"): q [s_q, h_q, d_qk],
 * one latent kv [s_kv, d_qk] with K = kv[:, :d_qk] and V = kv[:, :d_v],
 * indices [s_q, topk] of any int32 values. */
typedef struct {
    int s_q, s_kv, h_q, topk, d_qk, d_v;
    double scale;                  /* softmax scale (natural) */
    const int32_t *indices;        /* [s_q, topk] */
    const int32_t *topk_length;    /* [s_q], or NULL: every slot */
} RefMla;

/* Slot j of token t is valid iff 0 <= idx < s_kv and (no topk_length or j < topk_length[t]). */
int ref_mla_valid(const RefMla *p, int t, int j);
/* o [s_q, h_q, d_v]; lse [s_q, h_q] natural log over the valid slots (a
 * duplicate index counts once per slot), +inf with o = 0 for a token with no
 * valid slot. nthreads as ref_attn_fwd. */
int ref_mla_fwd(const RefMla *p, const float *q, const float *kv, double *o, double *lse, int nthreads);
/* Gradients of sum(dout * o): dq [s_q, h_q, d_qk] and dkv [s_kv, d_qk],
 * dkv[idx, :d_qk] += scale * dS^T q and dkv[idx, :d_v] += P^T dO summed over
 * every (token, head, valid slot) that selected idx; rows nobody selected are
 * exactly 0. P is recomputed; o [s_q, h_q, d_v] as ref_attn_bwd's (NULL: the
 * reference's own). term_norm2: NULL, or 2 values as ref_attn_bwd's: dq's
 * squared term norm, and 0 for dkv (its P^T dO part does not cancel). */
int ref_mla_bwd(const RefMla *p, const float *q, const float *kv, const float *o, const float *dout, double *dq,
                double *dkv, double *term_norm2, int nthreads);

/* GEMM (ref_gemm.c): d[m, n] = alpha * sum_k a[m, k] * b[n, k] + beta * c[m, n],
 * all dense row-major (a [M, K], b [N, K], c and d [M, N]); c may be NULL
 * (beta ignored). nthreads as ref_attn_fwd. */
int ref_gemm_abt(int M, int N, int K, double alpha, double beta, const float *a, const float *b, const float *c,
                 double *d, int nthreads);
#endif
