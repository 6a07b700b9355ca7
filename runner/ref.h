/* float64 CPU references. Inputs are the already-rounded element values as
 * float, contiguous [b, s, h, d]; outputs double. Threaded with pthreads. */
#ifndef PTXGEN_REF_H
#define PTXGEN_REF_H

typedef struct {
    int b, s_q, s_k, h_q, h_kv, d, dv;
    int causal;                 /* bottom-right aligned: key j visible to query i iff j <= i + s_k - s_q */
    double scale;               /* softmax scale (natural) */
} RefAttn;

/* o: [b, s_q, h_q, dv]; lse: [b, h_q, s_q] natural log, +inf for rows with no
 * valid key (whose o row is 0). nthreads <= 0: use all online CPUs. */
void ref_attn_fwd(const RefAttn *p, const float *q, const float *k, const float *v,
                  double *o, double *lse, int nthreads);
/* Gradients of sum(dout * O) (KERNELS.md attn_bwd): dq [b, s_q, h_q, d],
 * dk [b, s_k, h_kv, d] and dv [b, s_k, h_kv, dv], the last two summed over the
 * query heads of each kv head. Needs no forward outputs: P is recomputed. */
void ref_attn_bwd(const RefAttn *p, const float *q, const float *k, const float *v, const float *dout,
                  double *dq, double *dk, double *dv, int nthreads);
/* Calls fn over [0, rows) cut into nthreads contiguous chunks (<= 0: all online
 * CPUs), one thread each; the caller's thread takes the first. */
void ref_parallel_rows(long rows, int nthreads, void (*fn)(void *ctx, long r0, long r1), void *ctx);
/* Keys visible to query i: a prefix [0, n) of the key sequence. */
int ref_visible_keys(const RefAttn *p, int i);
#endif
