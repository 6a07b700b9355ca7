// Correct: the rotation, kept only where the SIMD intrinsics on pairs of 16-bit halves agree with a loop over the
// halves: __vadd2, __vsub2, __vaddus2, __vaddss2, __vmaxu2, __vmaxs2, __vminu2, __vmins2 (nvcc writes add.u16x2,
// add.s16x2, min/max.u16x2/.s16x2 for some of them on sm_90, other instructions on sm_80), and by inline PTX
// add.s16x2, max.u16x2 and min.relu.s16x2 / max.relu.s16x2. A failing check flips bit n of the output's .y.
// archs: sm_80 sm_90
// expect: ok
// block: 64
// smem: 0

// op over the two halves: 0 add, 1 sub, 2 add saturating unsigned, 3 add saturating signed, 4 max u, 5 max s,
// 6 min u, 7 min s; relu: a negative signed result becomes 0
__device__ unsigned halves(unsigned a, unsigned b, int op, int relu) {
    unsigned r = 0;
    for (int h = 0; h < 2; h++) {
        unsigned x = a >> (16 * h) & 0xffff, y = b >> (16 * h) & 0xffff;
        int sx = x >= 0x8000 ? (int)x - 0x10000 : (int)x, sy = y >= 0x8000 ? (int)y - 0x10000 : (int)y, z;
        switch (op) {
        case 0: z = (int)(x + y); break;
        case 1: z = (int)(x - y); break;
        case 2: z = (int)(x + y > 0xffff ? 0xffff : x + y); break;
        case 3: z = sx + sy > 32767 ? 32767 : sx + sy < -32768 ? -32768 : sx + sy; break;
        case 4: z = (int)(x > y ? x : y); break;
        case 5: z = sx > sy ? sx : sy; break;
        case 6: z = (int)(x < y ? x : y); break;
        default: z = sx < sy ? sx : sy; break;
        }
        if (relu && op >= 5 && z < 0) z = 0;
        r |= ((unsigned)z & 0xffff) << (16 * h);
    }
    return r;
}

extern "C" __global__ void k(const int4 *in, int4 *out) {
    int t = threadIdx.x;
    int4 v = in[(t + 32) % 64];
    unsigned a = (unsigned)in[t].x, b = (unsigned)in[t].y, fail = 0;
    if (t & 1) b = (a & 0xffff0000u) | (b & 0xffffu);   // equal high halves in odd lanes
    if (t % 4 == 2) a |= 0x80008000u, b |= 0x80008000u;  // negative halves: saturation and signed order
    if (__vadd2(a, b) != halves(a, b, 0, 0) || __vsub2(a, b) != halves(a, b, 1, 0)) fail |= 1u << 0;
    if (__vaddus2(a, b) != halves(a, b, 2, 0) || __vaddss2(a, b) != halves(a, b, 3, 0)) fail |= 1u << 1;
    if (__vmaxu2(a, b) != halves(a, b, 4, 0) || __vmaxs2(a, b) != halves(a, b, 5, 0)) fail |= 1u << 2;
    if (__vminu2(a, b) != halves(a, b, 6, 0) || __vmins2(a, b) != halves(a, b, 7, 0)) fail |= 1u << 3;
#if __CUDA_ARCH__ >= 900
    unsigned s, m, rl, rh;
    asm("add.s16x2 %0, %4, %5;\n\tmax.u16x2 %1, %4, %5;\n\tmin.relu.s16x2 %2, %4, %5;\n\tmax.relu.s16x2 %3, %4, %5;"
        : "=r"(s), "=r"(m), "=r"(rl), "=r"(rh) : "r"(a), "r"(b));
    if (s != halves(a, b, 0, 0) || m != halves(a, b, 4, 0) || rl != halves(a, b, 7, 1) || rh != halves(a, b, 5, 1))
        fail |= 1u << 4;
#endif
    v.y ^= (int)fail;
    out[t] = v;
}
