// Correct: the rotation, kept only where movmatrix (by inline PTX: nvcc does not write it) transposes an 8x8 matrix of
// 16-bit values held as ldmatrix's fragments (lane l: row l / 4, columns 2 (l % 4) and + 1, the first in the low
// half), against the same elements fetched by shuffles, and where two transposes give the matrix back.
// A failing check flips bit n of the output's .y (n: the check's number below).
// archs: sm_80 sm_90
// expect: ok
// block: 64
// smem: 0

// element (r, c) of the matrix whose fragments the warp's lanes hold in a
__device__ unsigned element(unsigned a, int r, int c) {
    unsigned v = __shfl_sync(0xffffffffu, a, 4 * r + c / 2);
    return (v >> (16 * (c % 2))) & 0xffffu;
}

extern "C" __global__ void k(const int4 *in, int4 *out) {
    int t = threadIdx.x, l = t % 32;
    int4 v = in[(t + 32) % 64];
    unsigned a = (unsigned)in[t].x ^ (unsigned)in[t].w, d, back;
    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(d) : "r"(a));
    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(back) : "r"(d));
    /* this lane's place of the transpose: row l / 4, columns 2 (l % 4) and + 1, i.e. the source's (column, row) */
    unsigned want = element(a, 2 * (l % 4), l / 4) | element(a, 2 * (l % 4) + 1, l / 4) << 16;
    unsigned bad = 0, n = 0;
    bad |= (unsigned)(d != want) << n++;                                   /* 0 */
    bad |= (unsigned)(back != a) << n++;                                   /* 1 */
    v.y ^= (int)bad;
    out[t] = v;
}
