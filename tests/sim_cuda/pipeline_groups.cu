// Correct: the rotation through shared memory by the pipeline primitives: two cp.async groups (one per
// half of the rows) committed and waited.
// archs: sm_80
// expect: ok
// block: 64
// smem: 0
#include <cuda_pipeline.h>
extern "C" __global__ void k(const int4 *in, int4 *out) {
    __shared__ alignas(16) int4 buf[2][32];
    int t = threadIdx.x;
    for (int s = 0; s < 2; s++) {
        if (t < 32) __pipeline_memcpy_async(&buf[s][t], &in[(t + 32 * (s + 1)) % 64], sizeof(int4));
        __pipeline_commit();
    }
    __pipeline_wait_prior(0);
    __syncthreads();
    out[t] = buf[t / 32][t % 32];
}
