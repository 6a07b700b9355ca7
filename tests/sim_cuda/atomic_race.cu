// Planted bug: warp 0 counts by atomicAdd on shared memory while warp 1 overwrites the counter with a plain
// store, no barrier between them: atomics do not race with each other, but they do with plain accesses.
// archs: sm_80
// expect: shared-memory race
// block: 64
// smem: 0
extern "C" __global__ void k(const int4 *in, int4 *out) {
    __shared__ int count;
    int t = threadIdx.x;
    if (t == 0) count = 0;
    __syncthreads();
    if (t < 32) atomicAdd(&count, 1);
    else if (t == 32) *(volatile int *)&count = 5;
    __syncthreads();
    out[t] = in[(t + 32) % 64];
    if (count < 0) out[t].x = 0;
}
