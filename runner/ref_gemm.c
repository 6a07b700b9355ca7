/* float64 GEMM reference, D = alpha * A * B^T + beta * C: the problem of
 * NVIDIA's CuTe GEMM tutorials run from their launch records (record_run.c). */
#include "ref.h"

typedef struct {
    int N, K;
    double alpha, beta;
    const float *a, *b, *c;
    double *d;
} GemmJob;

static void gemm_rows(void *ctx, long r0, long r1, void *scratch)
{
    const GemmJob *j = ctx;
    (void)scratch;
    for (long m = r0; m < r1; m++)
        for (int n = 0; n < j->N; n++) {
            double acc = j->alpha * ref_dot(j->a + m * j->K, j->b + (long)n * j->K, j->K);
            if (j->c) acc += j->beta * (double)j->c[m * j->N + n];
            j->d[m * j->N + n] = acc;
        }
}

int ref_gemm_abt(int M, int N, int K, double alpha, double beta, const float *a, const float *b, const float *c,
                 double *d, int nthreads)
{
    GemmJob j = {N, K, alpha, beta, a, b, c, d};
    return ref_parallel_rows(M, nthreads, 0, gemm_rows, &j);
}
