// Correct: the rotation, kept only where PTX forms nvcc does not write (by inline PTX, which nvcc passes through as
// written) have the values the sim gives them: a float constant in an operand of another width (0d and a decimal
// in an .f32 add or move: rounded to the nearest float; 0f in an .f64 add, fma and compare: its 32 bits
// zero-extended, a denormal, as an H200 computes it; a decimal in a .b64 move: a double), constants and a special
// register as elements of a packing mov's and a vector store's sources (a float constant in a .b32 element: its
// own bits cut to 32, a 0d's or decimal's low word; in an .f32 element: rounded), %tid.x read by a 16-bit mov,
// cnot, and lop3 (a table past 8 bits: its low byte).
// A failing check flips bit n of the output's .y (n: the check's number below).
// archs: sm_80 sm_90
// expect: ok
// block: 64
// smem: 0
extern "C" __global__ void k(const int4 *in, int4 *out) {
    __shared__ __align__(16) unsigned words[64 * 4];
    int t = threadIdx.x;
    int4 v = in[(t + 32) % 64];
    int r = in[t].x == 0x12345678 && in[t].y == 0x1abcdef0;   /* 0 but for one input in 2^64: nvcc cannot fold it */
    double x = (double)(in[t].z & 1023) + 0.25;
    float y = (float)(in[t].w & 1023) + 0.5f;
    unsigned u = (unsigned)in[t].x;
    unsigned bad = 0, n = 0;
    double d;
    float f;
    unsigned long long b;
    unsigned p, w0, w1, w2, w3;
    unsigned short h;
    unsigned sa = (unsigned)__cvta_generic_to_shared(&words[4 * t]);   /* this thread's four words */

    /* a 0f constant in an .f64 operand is its 32 bits zero-extended: a denormal, not the float's value */
    double one32 = __longlong_as_double(0x3F800000ll + r), two32 = __longlong_as_double(0x40000000ll + r);
    asm("add.f64 %0, %1, 0f3F800000;" : "=d"(d) : "d"(x));                       /* 0 */
    bad |= (unsigned)(d != x + one32) << n++;
    asm("add.f32 %0, %1, 0d3FF0000000000000;" : "=f"(f) : "f"(y));                /* 1: 1.0 rounded */
    bad |= (unsigned)(f != y + 1.0f) << n++;
    asm("mov.f32 %0, 0d3FB999999999999A;" : "=f"(f));                             /* 2: 0.1 to nearest float */
    bad |= (unsigned)(__float_as_uint(f) != 0x3DCCCCCDu) << n++;
    asm("fma.rn.f64 %0, %1, 0f40000000, 0f3F800000;" : "=d"(d) : "d"(x + 1e300));   /* 3 */
    bad |= (unsigned)(d != fma(x + 1e300, two32, one32)) << n++;
    asm("{ .reg .pred q; setp.eq.f64 q, %1, 0f3F800000; selp.u32 %0, 1, 0, q; }" : "=r"(p) : "d"(one32));   /* 4 */
    bad |= (unsigned)(p != 1) << n++;
    asm("add.f32 %0, %1, 1.5;" : "=f"(f) : "f"(y));                               /* 5: a decimal in an .f32 */
    bad |= (unsigned)(f != y + 1.5f) << n++;
    asm("mov.b64 %0, 1.5;" : "=l"(b));                                            /* 6: a decimal's double bits */
    bad |= (unsigned)(b != 0x3FF8000000000000ull) << n++;
    asm("mov.b64 %0, {%1, 7};" : "=l"(b) : "r"(u));                               /* 7: a constant packed */
    bad |= (unsigned)(b != ((7ull << 32) | u)) << n++;
    asm volatile("st.shared.v2.b32 [%0], {%1, 0f3F800000};" ::"r"(sa), "r"(u) : "memory");
    w0 = words[4 * t], w1 = words[4 * t + 1];                                     /* 8: a 0f element's bits */
    bad |= (unsigned)(w0 != u || w1 != 0x3F800000u) << n++;
    asm volatile("st.shared.v2.b32 [%0], {1.5, %1};" ::"r"(sa), "r"(u) : "memory");
    w0 = words[4 * t], w1 = words[4 * t + 1];                                     /* 9: 1.5's double's low word */
    bad |= (unsigned)(w0 != 0 || w1 != u) << n++;
    asm volatile("st.shared.v4.f32 [%0], {%1, 0d3FF0000000000000, 2.5, %1};" ::"r"(sa), "f"(y) : "memory");
    w0 = words[4 * t], w1 = words[4 * t + 1], w2 = words[4 * t + 2], w3 = words[4 * t + 3];   /* 10 */
    bad |= (unsigned)(w0 != __float_as_uint(y) || w1 != 0x3F800000u || w2 != 0x40200000u || w3 != __float_as_uint(y)) << n++;
    asm volatile("st.shared.v2.u32 [%0], {%%tid.x, %1};" ::"r"(sa), "r"(u) : "memory");
    w0 = words[4 * t], w1 = words[4 * t + 1];                                     /* 11: a special register element */
    bad |= (unsigned)(w0 != (unsigned)t || w1 != u) << n++;
    asm("mov.u16 %0, %%tid.x;" : "=h"(h));                                        /* 12: %tid.x's low 16 bits */
    bad |= (unsigned)(h != (unsigned short)t) << n++;
    asm("or.b64 %0, %1, 0d3FF0000000000000;" : "=l"(b) : "l"((unsigned long long)u));   /* 13: a 0d's bits */
    bad |= (unsigned)(b != (0x3FF0000000000000ull | u)) << n++;
    asm volatile("st.shared.v2.b32 [%0], {%1, 0d3FF0000000000001};" ::"r"(sa), "r"(u) : "memory");
    w0 = words[4 * t], w1 = words[4 * t + 1];                                     /* 14: a 0d's low word in a .b32 */
    bad |= (unsigned)(w0 != u || w1 != 1) << n++;
    asm volatile("st.shared.v2.b32 [%0], {%1, -7};" ::"r"(sa), "r"(u) : "memory");
    w0 = words[4 * t], w1 = words[4 * t + 1];                                     /* 15: a negative element */
    bad |= (unsigned)(w0 != u || w1 != (unsigned)-7) << n++;
    asm("cnot.b32 %0, %1;" : "=r"(p) : "r"(u & (unsigned)(t & 1)));               /* 16: 1 where the source is 0 */
    bad |= (unsigned)(p != ((u & (unsigned)(t & 1)) == 0)) << n++;
    asm("cnot.b16 %0, %1;" : "=h"(h) : "h"((unsigned short)(0x100u << (t & 1))));   /* 17: 16 bits, never 0 */
    bad |= (unsigned)(h != 0) << n++;
    asm volatile("st.shared.v2.b64 [%0], {%1, 0f3FC00000};" ::"r"(sa), "l"((unsigned long long)u) : "memory");
    w2 = words[4 * t + 2], w3 = words[4 * t + 3];                                 /* 18: a 0f in a .b64: zero-extended */
    bad |= (unsigned)(words[4 * t] != u || w2 != 0x3FC00000u || w3 != 0) << n++;
    asm volatile("st.shared.v2.b64 [%0], {%1, 1.5};" ::"r"(sa), "l"((unsigned long long)u) : "memory");
    w2 = words[4 * t + 2], w3 = words[4 * t + 3];                                 /* 19: a decimal in a .b64: a double */
    bad |= (unsigned)(w2 != 0 || w3 != 0x3FF80000u) << n++;
    asm("mov.b64 %0, {%1, 1.5};" : "=l"(b) : "r"(u));                             /* 20: 1.5's low word */
    bad |= (unsigned)(b != u) << n++;
    unsigned ma = u, mb = (unsigned)in[t].y, mc = (unsigned)in[t].z, maj = (ma & mb) | (ma & mc) | (mb & mc);
    asm("lop3.b32 %0, %1, %2, %3, 0xE8;" : "=r"(p) : "r"(ma), "r"(mb), "r"(mc));   /* 21: the majority's table */
    bad |= (unsigned)(p != maj) << n++;
    asm("lop3.b32 %0, %1, %2, %3, 0x1E8;" : "=r"(p) : "r"(ma), "r"(mb), "r"(mc));  /* 22: the table's low byte */
    bad |= (unsigned)(p != maj) << n++;
    asm("lop3.b32 %0, %1, %2, %3, 0x96;" : "=r"(p) : "r"(ma), "r"(mb), "r"(mc));   /* 23: a ^ b ^ c */
    bad |= (unsigned)(p != (ma ^ mb ^ mc)) << n++;
    v.y ^= (int)bad;
    out[t] = v;
}
