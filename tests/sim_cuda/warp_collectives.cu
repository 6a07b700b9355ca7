// Correct: the rotation by warp collectives: each lane takes its value from the other warp through shared
// memory, then a shuffle round trip, a ballot (vote.sync.ballot) and a warp reduction (redux.sync) must agree,
// and atomics on shared memory from both warps count the 64 lanes.
// archs: sm_80
// expect: ok
// block: 64
// smem: 0
extern "C" __global__ void k(const int4 *in, int4 *out) {
    __shared__ int4 buf[64];
    __shared__ int count;
    int t = threadIdx.x;
    if (t == 0) count = 0;
    buf[t] = in[t];
    __syncthreads();
    atomicAdd(&count, 1);
    int4 v = buf[(t + 32) % 64];
    int x = __shfl_xor_sync(0xffffffffu, v.x, 1);
    x = __shfl_xor_sync(0xffffffffu, x, 1);
    unsigned b = __ballot_sync(0xffffffffu, x == v.x);
    int all = __reduce_add_sync(0xffffffffu, b == 0xffffffffu ? 1 : 0);
    __syncthreads();
    if (all != 32 || count != 64) v.x ^= 1;
    out[t] = v;
}
