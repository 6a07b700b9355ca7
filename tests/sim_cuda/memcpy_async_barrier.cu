// Correct: the rotation through shared memory by cuda::memcpy_async completing on a cuda::barrier. nvcc writes
// cp.async and cp.async.mbarrier.arrive (without .noinc, then a plain arrival) for sm_80, a bulk copy with
// mbarrier.expect_tx for sm_90a, and for both a try_wait loop that backs off on %globaltimer and nanosleep.
// archs: sm_80 sm_90a
// expect: ok
// block: 64
// smem: 0
#include <cuda/barrier>
#include <cooperative_groups.h>
extern "C" __global__ void k(const int4 *in, int4 *out) {
    __shared__ alignas(16) int4 buf[64];
    #pragma nv_diag_suppress static_var_with_dynamic_init
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    auto block = cooperative_groups::this_thread_block();
    if (block.thread_rank() == 0) init(&bar, block.size());
    block.sync();
    int t = threadIdx.x;
    cuda::memcpy_async(&buf[t], &in[(t + 32) % 64], sizeof(int4), bar);
    bar.arrive_and_wait();
    out[t] = buf[t];
}
