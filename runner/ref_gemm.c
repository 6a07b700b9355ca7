/* float64 GEMM reference, D = alpha * A * B^T + beta * C: the problem of
 * NVIDIA's CuTe GEMM tutorials run from their launch records (record_run.c). */
#include "ref.h"

typedef struct {
    int N, K;
    double alpha, beta;
    const float *a, *b, *c;
    double *d;
} GemmJob;

static void gemm_rows(void *ctx, long r0, long r1)
{
    const GemmJob *j = ctx;
    for (long m = r0; m < r1; m++)
        for (int n = 0; n < j->N; n++) {
            double acc = j->alpha * ref_dot(j->a + m * j->K, j->b + (long)n * j->K, j->K);
            if (j->c) acc += j->beta * (double)j->c[m * j->N + n];
            j->d[m * j->N + n] = acc;
        }
}

void ref_gemm_abt(int M, int N, int K, double alpha, double beta, const float *a, const float *b, const float *c,
                  double *d, int nthreads)
{
    GemmJob j = {N, K, alpha, beta, a, b, c, d};
    ref_parallel_rows(M, nthreads, gemm_rows, &j);
}
