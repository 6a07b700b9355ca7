// Correct: the rotation, kept only where nvcc's bit and half intrinsics agree with slow loops over the input's
// bits (loops of a run-time length, which nvcc does not turn into the same instructions): byte permutes
// (prmt, with sign replication), funnel shifts (shf.l/.r.wrap), bit fields (bfe, bfi; bfind), bit reversal,
// leading zeros (clz), population counts, packed half adds; and __syncthreads_count / _or (bar.red.popc,
// bar.red.or) and __threadfence (membar.gl).
// archs: sm_80
// expect: ok
// block: 64
// smem: 0
#include <cuda_fp16.h>

__device__ unsigned slow_perm(unsigned x, unsigned y, unsigned s, int four) {
    unsigned r = 0;
    for (int i = 0; i < four; i++) {
        unsigned sel = (s >> (4 * i)) & 15, src = (sel & 7) < 4 ? x : y, b = (src >> (8 * (sel & 3))) & 255;
        if (sel & 8) b = (b & 128) ? 255 : 0;
        r |= b << (8 * i);
    }
    return r;
}

__device__ unsigned long long slow_shl(unsigned long long v, int n) {
    for (int i = 0; i < n; i++) v += v;
    return v;
}

extern "C" __global__ void k(const int4 *in, int4 *out) {
    int t = threadIdx.x;
    int4 v = in[(t + 32) % 64];
    int r = in[t].x == 0x12345678 && in[t].y == 0x1abcdef0;   /* 0 but for one input in 2^64: nvcc cannot fold it */
    int four = 4 + r, n = 19 + r, w = 32 - r;
    unsigned x = (unsigned)v.x, y = (unsigned)v.y;
    unsigned signs;   /* prmt's sign replication, which __byte_perm (3 bits a selector) does not reach */
    asm("prmt.b32 %0, %1, %2, %3;" : "=r"(signs) : "r"(x), "r"(y), "r"(0x8E2B));
    int ok = __byte_perm(x, y, 0x7531) == slow_perm(x, y, 0x7531, four) && signs == slow_perm(x, y, 0x8E2B, four);
    unsigned long long xy = ((unsigned long long)y << 32) | x;
    ok &= __funnelshift_l(x, y, n) == (unsigned)(slow_shl(xy, n) >> 32);
    ok &= __funnelshift_r(x, y, n) == (unsigned)(slow_shl(xy, 32 - n) >> 32);
    unsigned rev = 0, top = 0, pop = 0;
    for (int i = 0; i < w; i++) {
        unsigned bit = (x >> i) & 1;
        rev |= bit << (w - 1 - i);
        if (bit) top = i + 1, pop++;
    }
    ok &= __brev(x) == rev && __popc(x) == (int)pop && (x == 0 || 31 - __clz(x) == (int)top - 1) && __clz(0) == 32;
    int cnt = __syncthreads_count(t < 40);
    int any = __syncthreads_or(t == 5), none = __syncthreads_or(t > 1000);
    __threadfence();
    unsigned fe, fi, fz, fs;   /* bfe (signed: the field's top bit fills), bfi, bfind (.shiftamt) by hand */
    asm("bfe.s32 %0, %1, %2, %3;" : "=r"(fe) : "r"(x), "r"(n), "r"(9));
    asm("bfi.b32 %0, %1, %2, %3, %4;" : "=r"(fi) : "r"(y), "r"(x), "r"(n), "r"(9));
    asm("bfind.u32 %0, %1;" : "=r"(fz) : "r"(x));
    asm("bfind.shiftamt.s32 %0, %1;" : "=r"(fs) : "r"(x));
    unsigned field = (x >> n) & 511, sfill = (field >> 8) ? ~511u : 0u, neg = (int)x < 0 ? ~x : x, nt = 0;
    for (int i = 0; i < w; i++)
        if ((neg >> i) & 1) nt = i + 1;
    ok &= fe == (field | sfill) && fi == ((x & ~(511u << n)) | ((y & 511) << n)) &&
          fz == (x ? top - 1 : 0xffffffffu) && fs == (nt ? 32 - nt : 0xffffffffu);
    __half2 h = __floats2half2_rn(1.5f + (float)r, -2.25f);
    float2 hf = __half22float2(__hadd2(h, h));
    ok &= cnt == 40 && any && !none && hf.x == 3.0f && hf.y == -4.5f;
    if (!ok) v.y ^= 1;
    out[t] = v;
}
