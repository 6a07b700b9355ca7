// Correct: the rotation with L2 access properties: loads through a persisting annotated pointer (nvcc:
// createpolicy and ld.global.L2::cache_hint), stores streaming (st.global.cs).
// archs: sm_80 sm_90
// expect: ok
// block: 64
// smem: 0
#include <cuda/annotated_ptr>
extern "C" __global__ void k(const int4 *in, int4 *out) {
    cuda::annotated_ptr<const int4, cuda::access_property::persisting> pin(in);
    int t = threadIdx.x;
    int4 v = pin[(t + 32) % 64];
    __stcs(&out[t], v);
}
