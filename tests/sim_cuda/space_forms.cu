// Correct: the rotation, kept only where isspacep (nvcc's __isShared, __isGlobal, __isLocal, and .shared::cluster and
// .param by inline PTX) says which window each generic address falls in: a global buffer's, a shared array's, a
// local array's (indexed at run time, so it stays in local memory) and a kernel parameter's (cvta.param: in the param
// window and the global one alike, as an H200 answers).
// A failing check flips bit n of the output's .y (n: the check's number below).
// archs: sm_90
// expect: ok
// block: 64
// smem: 0

__device__ unsigned cluster_shared(const void *p) {
    unsigned r;
    asm("{ .reg .pred q; isspacep.shared::cluster q, %1; selp.u32 %0, 1, 0, q; }" : "=r"(r) : "l"(p));
    return r;
}

__device__ unsigned param_window(const void *p) {
    unsigned r;
    asm("{ .reg .pred q; isspacep.param q, %1; selp.u32 %0, 1, 0, q; }" : "=r"(r) : "l"(p));
    return r;
}

// the three answers of nvcc's intrinsics and the two of the inline forms, one bit each
__device__ unsigned spaces(const void *p) {
    return (unsigned)__isGlobal(p) | (unsigned)__isShared(p) << 1 | (unsigned)__isLocal(p) << 2 | cluster_shared(p) << 3 |
           param_window(p) << 4;
}

extern "C" __global__ void k(const int4 *in, int4 *out) {
    __shared__ int s[64];
    int t = threadIdx.x;
    int4 v = in[(t + 32) % 64];
    volatile int l[8];
    int sel = in[t].x & 7;
    l[sel] = t;
    s[t] = l[sel];
    const void *param;
    asm("{ .reg .u64 a; mov.u64 a, k_param_0; cvta.param.u64 %0, a; }" : "=l"(param));
    /* each pointer picked by a run-time index, so that nvcc cannot know its space and asks isspacep */
    const void *p[4] = {&in[t], &s[t], (const void *)&l[sel], param};
    /* global; shared (the CTA's, the cluster's); local; param, which an H200 says is global too */
    const unsigned want[4] = {1u, 2u | 8u, 4u, 16u | 1u};
    unsigned bad = 0, n = 0;
    for (int i = 0; i < 4; i++) {                                              /* 0-3: each pointer */
        int j = (i + in[t].y) & 3;
        bad |= (unsigned)(spaces(p[j]) != want[j]) << j;
        n++;
    }
    bad |= (unsigned)(s[t] != t) << n++;                                     /* 4: the local and shared values kept */
    v.y ^= (int)bad;
    out[t] = v;
}
