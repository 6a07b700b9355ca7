// Correct: the rotation, kept only where 24-bit products and the bit-mask forms nvcc does not write (by inline PTX)
// agree with slow loops: mul24.lo/.hi and mad24.lo/.hi (.sat) of .u32 and .s32, bmsk.clamp/.wrap and
// szext.clamp/.wrap of .u32 and .s32, at positions and widths past 31 among the random ones, and the PTX ISA's own
// examples (bmsk.wrap 1, 2 is 0x6; szext.wrap.u32 of 0xffffffff, 0 is 0).
// A failing check flips bit n of the output's .y (n: the check's number below).
// archs: sm_80 sm_90
// expect: ok
// block: 64
// smem: 0

// a's low 24 bits as a 24-bit integer: bit by bit, the sign bit worth -2^23
__device__ long long slow24(unsigned a, int sgn) {
    long long v = 0;
    for (int i = 0; i < 24; i++)
        if (a >> i & 1) v += (sgn && i == 23) ? -(1ll << 23) : (1ll << i);
    return v;
}

// the 48-bit product's 32 bits from bit `from` (0: .lo, 16: .hi)
__device__ unsigned slow_mul24(unsigned a, unsigned b, int sgn, int from) {
    unsigned long long p = (unsigned long long)(slow24(a, sgn) * slow24(b, sgn));
    unsigned r = 0;
    for (int i = 0; i < 32; i++) r |= (unsigned)(p >> (from + i) & 1) << i;
    return r;
}

// bits [start, start + width) of 32; .clamp: start and width at most 32, .wrap: each mod 32
__device__ unsigned slow_bmsk(unsigned a, unsigned b, int clamp) {
    unsigned start = clamp ? (a > 32 ? 32 : a) : a % 32, width = clamp ? (b > 32 ? 32 : b) : b % 32, r = 0;
    for (unsigned i = 0; i < 32; i++)
        if (i >= start && i - start < width) r |= 1u << i;
    return r;
}

// a's low n bits (n = b, at most 32 with .clamp, mod 32 with .wrap), bit n-1 repeated above them where signed
__device__ unsigned slow_szext(unsigned a, unsigned b, int clamp, int sgn) {
    unsigned n = clamp ? (b > 32 ? 32 : b) : b % 32, r = 0;
    for (unsigned i = 0; i < 32; i++) {
        unsigned from = i < n ? i : n - 1;
        if (n && (i < n || sgn) && (a >> from & 1)) r |= 1u << i;
    }
    return r;
}

extern "C" __global__ void k(const int4 *in, int4 *out) {
    int t = threadIdx.x;
    int4 v = in[(t + 32) % 64];
    unsigned a = (unsigned)in[t].x, b = (unsigned)in[t].y, c = (unsigned)in[t].z, w = (unsigned)in[t].w;
    unsigned pos = w & 63, len = (w >> 6) & 63;   /* 0-63: past 31 a quarter of the time each */
    unsigned bad = 0, n = 0, r;
    asm("mul24.lo.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));                          /* 0 */
    bad |= (unsigned)(r != slow_mul24(a, b, 0, 0)) << n++;
    asm("mul24.hi.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));                          /* 1 */
    bad |= (unsigned)(r != slow_mul24(a, b, 0, 16)) << n++;
    asm("mul24.lo.s32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));                          /* 2 */
    bad |= (unsigned)(r != slow_mul24(a, b, 1, 0)) << n++;
    asm("mul24.hi.s32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));                          /* 3 */
    bad |= (unsigned)(r != slow_mul24(a, b, 1, 16)) << n++;
    asm("mad24.lo.u32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));              /* 4 */
    bad |= (unsigned)(r != slow_mul24(a, b, 0, 0) + c) << n++;
    asm("mad24.hi.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));              /* 5 */
    bad |= (unsigned)(r != slow_mul24(a, b, 1, 16) + c) << n++;
    long long s = (long long)(int)slow_mul24(a, b, 1, 16) + (int)c;
    unsigned sat = s > 2147483647ll ? 0x7fffffffu : s < -2147483648ll ? 0x80000000u : (unsigned)s;
    asm("mad24.hi.sat.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));          /* 6 */
    bad |= (unsigned)(r != sat) << n++;
    asm("bmsk.clamp.b32 %0, %1, %2;" : "=r"(r) : "r"(pos), "r"(len));                    /* 7 */
    bad |= (unsigned)(r != slow_bmsk(pos, len, 1)) << n++;
    asm("bmsk.wrap.b32 %0, %1, %2;" : "=r"(r) : "r"(pos), "r"(len));                     /* 8 */
    bad |= (unsigned)(r != slow_bmsk(pos, len, 0)) << n++;
    asm("bmsk.clamp.b32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));                        /* 9: any words */
    bad |= (unsigned)(r != slow_bmsk(a, b, 1)) << n++;
    asm("bmsk.wrap.b32 %0, 1, 2;" : "=r"(r));                                             /* 10: the ISA's example */
    bad |= (unsigned)(r != 0x6u) << n++;
    asm("szext.clamp.s32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(len));                     /* 11 */
    bad |= (unsigned)(r != slow_szext(a, len, 1, 1)) << n++;
    asm("szext.wrap.s32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(len));                      /* 12 */
    bad |= (unsigned)(r != slow_szext(a, len, 0, 1)) << n++;
    asm("szext.clamp.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(len));                     /* 13 */
    bad |= (unsigned)(r != slow_szext(a, len, 1, 0)) << n++;
    asm("szext.wrap.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));                        /* 14: any width */
    bad |= (unsigned)(r != slow_szext(a, b, 0, 0)) << n++;
    asm("szext.wrap.u32 %0, 0xffffffff, 0;" : "=r"(r));                                   /* 15: the ISA's example */
    bad |= (unsigned)(r != 0) << n++;
    v.y ^= (int)bad;
    out[t] = v;
}
