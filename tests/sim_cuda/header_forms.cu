// Correct: the rotation, kept only where what the CUDA headers and nvcc write in ordinary code agrees with slow
// computations in float: atomicAdd of __half2 and __nv_bfloat162 (atom.add.noftz.f16x2/.bf16x2, each half on its
// own) in global and shared memory; the dynamic shared window (extern __shared__) after function-scope static
// __shared__ arrays, the kernel's own and an inlined helper's; the half comparisons that compile to `set`
// (__hgt2 and __hbgt2 as .f16x2 and .u32 results, __hisnan, bf16 compares, which use it on sm_80); hsqrt, hexp2
// and hrcp, whose inline PTX declares `.reg.b32` without a space; __shfl_xor_sync of __half2 (the headers'
// WARP_SZ); `set` by inline PTX in .u32, .f32 and .s32.f16x2 and with a predicate; `ldu`; and all of it built with
// -lineinfo, so the PTX carries .loc, .file and a .section of debug strings. A failing check flips bit n of the
// output's .y (n: the check's number below).
// archs: sm_80 sm_90
// nvcc: -lineinfo
// expect: ok
// block: 64
// smem: 512

#include <cuda_fp16.h>
#include <cuda_bf16.h>

__device__ __half2 g_h2;
__device__ __nv_bfloat162 g_b2;
extern __shared__ int dyn[];

__device__ __forceinline__ int helper_sum(int t, int x) {   // an inlined helper with a static __shared__ of its own
    __shared__ int scratch[64];
    scratch[t] = x;
    __syncthreads();
    return scratch[(t + 1) % 64] + scratch[t];
}

__device__ float slow_f(__half h) { return __half2float(h); }
__device__ float slow_b(__nv_bfloat16 h) { return __bfloat162float(h); }

extern "C" __global__ void k(const int4 *in, int4 *out) {
    __shared__ int stat[64];
    __shared__ __half2 s_h2;
    __shared__ __nv_bfloat162 s_b2;
    int t = threadIdx.x;
    int4 v = in[(t + 32) % 64];
    unsigned fail = 0;
    int x = in[t].x, y = in[t].y;

    // 0-1: packed half atomics (sums exact in both formats)
    if (t == 0) {
        g_h2 = __floats2half2_rn(0.f, 0.f), g_b2 = __floats2bfloat162_rn(0.f, 0.f);
        s_h2 = __floats2half2_rn(0.f, 0.f), s_b2 = __floats2bfloat162_rn(0.f, 0.f);
    }
    __syncthreads();
    atomicAdd(&g_h2, __floats2half2_rn(1.0f, 2.0f));
    atomicAdd(&g_b2, __floats2bfloat162_rn(1.0f, 4.0f));
    atomicAdd(&s_h2, __floats2half2_rn(0.5f, (float)(t % 4)));
    atomicAdd(&s_b2, __floats2bfloat162_rn(2.0f, 0.25f));
    __syncthreads();
    if (__low2float(g_h2) != 64.f || __high2float(g_h2) != 128.f || __low2float(g_b2) != 64.f || __high2float(g_b2) != 256.f)
        fail |= 1u << 0;
    if (__low2float(s_h2) != 32.f || __high2float(s_h2) != 96.f || __low2float(s_b2) != 128.f || __high2float(s_b2) != 16.f)
        fail |= 1u << 1;

    // 2: the dynamic window after the static arrays: writing it leaves them as they were
    stat[t] = x;
    int hs = helper_sum(t, y);
    dyn[t] = ~x, dyn[64 + t] = ~y;
    __syncthreads();
    if (stat[t] != x || hs != in[(t + 1) % 64].y + y || dyn[t] != ~x || dyn[64 + t] != ~y) fail |= 1u << 2;

    // 3-5: comparisons of halves (small integers and a NaN: every value exact)
    float a0 = (float)(x & 7), a1 = (float)(y & 7), b0 = (float)((x >> 3) & 7), b1 = (float)((y >> 3) & 7);
    __half2 ha = __floats2half2_rn(a0, a1), hb = __floats2half2_rn(b0, b1);
    __half2 gt = __hgt2(ha, hb);
    if (slow_f(__low2half(gt)) != (a0 > b0 ? 1.f : 0.f) || slow_f(__high2half(gt)) != (a1 > b1 ? 1.f : 0.f)) fail |= 1u << 3;
    __nv_bfloat162 ba = __floats2bfloat162_rn(a0, a1), bb = __floats2bfloat162_rn(b0, b1);
    if (__hbgt2(ha, hb) != (a0 > b0 && a1 > b1) || __hble2(ba, bb) != (a0 <= b0 && a1 <= b1)) fail |= 1u << 4;
    __half qn = __float2half(t % 3 ? a0 : __int_as_float(0x7fc00000));
    if (__hisnan(qn) != !(t % 3) || __hlt(__low2bfloat16(ba), __low2bfloat16(bb)) != (a0 < b0) ||
        __heq(__high2bfloat16(ba), __high2bfloat16(bb)) != (a1 == b1))
        fail |= 1u << 5;
    (void)slow_b;

    // 6: half math through `.reg.b32` (against float, to the half's precision)
    __half h = __float2half((float)((x & 255) + 1));
    float s = __half2float(hsqrt(h)), r = __half2float(hrcp(h)), e = __half2float(hexp2(__float2half(a0 - 3.f)));
    float hv = __half2float(h);
    if (fabsf(s - sqrtf(hv)) > 2e-3f * sqrtf(hv) || fabsf(r - 1.f / hv) > 2e-3f / hv || e != exp2f(a0 - 3.f)) fail |= 1u << 6;

    // 7: a __half2 shuffle against the same shuffle of floats
    __half2 sh = __shfl_xor_sync(0xffffffffu, ha, 5);
    float f0 = __shfl_xor_sync(0xffffffffu, a0, 5), f1 = __shfl_xor_sync(0xffffffffu, a1, 5);
    if (__low2float(sh) != f0 || __high2float(sh) != f1) fail |= 1u << 7;

    // 8: set by inline PTX
    unsigned u, m, c;
    float fr;
    int p = t & 1;
    asm("set.lt.u32.s32 %0, %1, %2;" : "=r"(u) : "r"(x), "r"(y));
    asm("set.gt.f32.f32 %0, %1, %2;" : "=f"(fr) : "f"(a0), "f"(b0));
    asm("{ .reg .b32 hx, hy; mov.b32 hx, %1; mov.b32 hy, %2; set.ge.s32.f16x2 %0, hx, hy; }"
        : "=r"(m) : "r"(*(unsigned *)&ha), "r"(*(unsigned *)&hb));
    asm("{ .reg .pred q; setp.ne.u32 q, %3, 0; set.le.and.u32.u32 %0, %1, %2, !q; }"
        : "=r"(c) : "r"((unsigned)x), "r"((unsigned)y), "r"(p));
    unsigned want_m = (a0 >= b0 ? 0xFFFFu : 0u) | (a1 >= b1 ? 0xFFFF0000u : 0u);
    if (u != (x < y ? 0xFFFFFFFFu : 0u) || fr != (a0 > b0 ? 1.f : 0.f) || m != want_m ||
        c != ((unsigned)x <= (unsigned)y && !p ? 0xFFFFFFFFu : 0u))
        fail |= 1u << 8;

    // 9: ldu, by inline PTX: ld.global's values, through .global and a generic address
    unsigned l0, l1, l2;
    asm("ldu.global.u32 %0, [%3];\n\tldu.global.v2.u32 {%1, %2}, [%4];"
        : "=r"(l0), "=r"(l1), "=r"(l2) : "l"(&in[t].y), "l"(&in[t].z));
    unsigned l3;
    asm("ldu.u32 %0, [%1];" : "=r"(l3) : "l"(&in[t].x));
    if (l0 != (unsigned)in[t].y || l1 != (unsigned)in[t].z || l2 != (unsigned)in[t].w || l3 != (unsigned)in[t].x)
        fail |= 1u << 9;

    v.y ^= (int)fail;
    out[t] = v;
}
