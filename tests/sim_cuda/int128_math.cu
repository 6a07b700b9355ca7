// Correct: the rotation, kept only where 128-bit integer arithmetic agrees with slow 16-bit-limb loops. nvcc writes
// __int128 as chains of the carry arithmetic (add.cc, addc.cc, sub.cc, subc, mad.lo.cc, madc.hi, on .u32 and .s64):
// sums, differences, products, shifts, comparisons, unsigned and signed quotients and remainders of random values.
// Then the forms nvcc does not write, by inline PTX: 64-bit limb chains (add.cc/addc.cc/addc.u64, sub.cc/subc.cc/
// subc.u64, mad.lo.cc.u64/madc.hi.u64, madc.lo.cc.u32/madc.hi.cc.u32), carries and borrows out of the top limb
// read back through addc and subc of zeros, and chains that mix the two (a subtraction's flag read by addc: 1 where
// nothing was borrowed, as nvcc's own division takes it). The slow side holds 16-bit limbs in 32-bit words, so no carry chain is in
// it. A failing check flips bit n of the output's .y (n: the check's number below).
// archs: sm_80 sm_90
// expect: ok
// block: 64
// smem: 0

typedef unsigned __int128 u128;
typedef __int128 s128;

struct L { unsigned v[8]; };   // 16-bit limbs, least significant first

__device__ L limbs(unsigned w0, unsigned w1, unsigned w2, unsigned w3) {
    L x;
    unsigned w[4] = {w0, w1, w2, w3};
    for (int i = 0; i < 4; i++) x.v[2 * i] = w[i] & 0xFFFF, x.v[2 * i + 1] = w[i] >> 16;
    return x;
}

// the native value's 32-bit words against the limbs
__device__ int same(u128 r, const L &x) {
    int ok = 1;
    for (int i = 0; i < 4; i++) ok &= (unsigned)(r >> (32 * i)) == (x.v[2 * i] | x.v[2 * i + 1] << 16);
    return ok;
}

__device__ L slow_add(const L &a, const L &b) {
    L r;
    unsigned c = 0;
    for (int i = 0; i < 8; i++) {
        unsigned s = a.v[i] + b.v[i] + c;
        r.v[i] = s & 0xFFFF, c = s >> 16;
    }
    return r;
}

__device__ L slow_sub(const L &a, const L &b) {
    L r;
    int br = 0;
    for (int i = 0; i < 8; i++) {
        int s = (int)a.v[i] - (int)b.v[i] - br;
        br = s < 0, r.v[i] = (unsigned)s & 0xFFFF;
    }
    return r;
}

// the low 128 bits of the product (the same bits signed or not)
__device__ L slow_mul(const L &a, const L &b) {
    unsigned acc[9] = {0};
    for (int i = 0; i < 8; i++) {
        unsigned c = 0;
        for (int j = 0; i + j < 8; j++) {
            unsigned p = a.v[i] * b.v[j];   // < 2^32: its halves added one limb at a time
            unsigned s = acc[i + j] + (p & 0xFFFF) + c;
            acc[i + j] = s & 0xFFFF;
            c = (s >> 16) + (p >> 16);
        }
    }
    L r;
    for (int i = 0; i < 8; i++) r.v[i] = acc[i];
    return r;
}

__device__ int bit(const L &a, int i) { return i < 0 || i > 127 ? 0 : a.v[i / 16] >> (i % 16) & 1; }
__device__ L shifted(const L &a, int by, int fill_sign) {   // by > 0: left; arithmetic right fills the sign
    L r;
    int sign = bit(a, 127);
    for (int i = 0; i < 8; i++) r.v[i] = 0;
    for (int i = 0; i < 128; i++) {
        int from = i - by, b = from > 127 ? (fill_sign ? sign : 0) : bit(a, from);
        r.v[i / 16] |= (unsigned)b << (i % 16);
    }
    return r;
}

__device__ int slow_ult(const L &a, const L &b) {
    for (int i = 7; i >= 0; i--)
        if (a.v[i] != b.v[i]) return a.v[i] < b.v[i];
    return 0;
}

__device__ int slow_slt(const L &a, const L &b) {
    int sa = bit(a, 127), sb = bit(b, 127);
    return sa != sb ? sa : slow_ult(a, b);
}

__device__ L slow_neg(const L &a) {
    L z;
    for (int i = 0; i < 8; i++) z.v[i] = 0;
    return slow_sub(z, a);
}

// unsigned quotient and remainder, bit by bit
__device__ void slow_udiv(const L &a, const L &b, L &q, L &r) {
    for (int i = 0; i < 8; i++) q.v[i] = 0, r.v[i] = 0;
    for (int i = 127; i >= 0; i--) {
        for (int j = 7; j >= 0; j--) r.v[j] = (r.v[j] << 1 | (j ? r.v[j - 1] >> 15 : (unsigned)bit(a, i))) & 0xFFFF;
        if (!slow_ult(r, b)) r = slow_sub(r, b), q.v[i / 16] |= 1u << (i % 16);
    }
}

// signed: the quotient truncated toward zero, the remainder with the dividend's sign
__device__ void slow_sdiv(const L &a, const L &b, L &q, L &r) {
    int na = bit(a, 127), nb = bit(b, 127);
    slow_udiv(na ? slow_neg(a) : a, nb ? slow_neg(b) : b, q, r);
    if (na != nb) q = slow_neg(q);
    if (na) r = slow_neg(r);
}

__device__ u128 native(const L &x) {
    u128 r = 0;
    for (int i = 7; i >= 0; i--) r = r << 16 | x.v[i];
    return r;
}

extern "C" __global__ void k(const int4 *in, int4 *out) {
    int t = threadIdx.x;
    int4 v = in[(t + 32) % 64];
    int4 p = in[t], q = in[(t + 17) % 64];
    unsigned fail = 0;
    L a = limbs(p.x, p.y, p.z, p.w), b = limbs(q.x, q.y, q.z, q.w);
    if (t % 4 == 1) b = limbs(q.x, q.y, 0, 0);               // short divisors and a zero high half
    if (t % 8 == 3) a = limbs(0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, (unsigned)p.w | 0x80000000u);   // carries run far
    if (t % 8 == 5) b = slow_neg(limbs(1, 0, 0, 0));         // all ones
    u128 x = native(a), y = native(b);
    s128 sx = (s128)x, sy = (s128)y;
    int sh = (unsigned)p.x % 128, sh2 = (unsigned)q.y % 128;
    L ob = b;
    ob.v[0] |= 1;
    u128 yo = y | 1;
    s128 syo = (s128)yo;
    L qq, rr;
    if (!same(x + y, slow_add(a, b))) fail |= 1u << 0;
    if (!same(x - y, slow_sub(a, b))) fail |= 1u << 1;
    if (!same(x * y, slow_mul(a, b))) fail |= 1u << 2;
    if (!same((u128)(sx * sy), slow_mul(a, b))) fail |= 1u << 3;
    if (!same(x << sh, shifted(a, sh, 0))) fail |= 1u << 4;
    if (!same(x >> sh2, shifted(a, -sh2, 0))) fail |= 1u << 5;
    if (!same((u128)(sx >> sh2), shifted(a, -sh2, 1))) fail |= 1u << 6;
    if ((x < y) != slow_ult(a, b) || (sx < sy) != slow_slt(a, b)) fail |= 1u << 7;
    slow_udiv(a, ob, qq, rr);
    if (!same(x / yo, qq) || !same(x % yo, rr)) fail |= 1u << 8;
    slow_sdiv(a, ob, qq, rr);
    if (!same((u128)(sx / syo), qq) || !same((u128)(sx % syo), rr)) fail |= 1u << 9;
    if (!same(-x, slow_neg(a))) fail |= 1u << 10;

    // inline PTX: 256-bit sums and differences in 64-bit limbs, x and y side by side, then back
    unsigned long long s0, s1, s2, s3, d0, d1, d2, d3, cout, bout;
    unsigned long long x0 = (unsigned long long)x, x1 = (unsigned long long)(x >> 64);
    unsigned long long y0 = (unsigned long long)y, y1 = (unsigned long long)(y >> 64);
    asm("add.cc.u64 %0, %5, %7;\n\taddc.cc.u64 %1, %6, %8;\n\taddc.cc.u64 %2, %5, %8;\n\taddc.cc.u64 %3, %6, %7;\n\t"
        "addc.u64 %4, 0, 0;"
        : "=l"(s0), "=l"(s1), "=l"(s2), "=l"(s3), "=l"(cout) : "l"(x0), "l"(x1), "l"(y0), "l"(y1));
    asm("sub.cc.u64 %0, %5, %7;\n\tsubc.cc.u64 %1, %6, %8;\n\tsubc.cc.u64 %2, %5, %8;\n\tsubc.cc.u64 %3, %6, %7;\n\t"
        "subc.u64 %4, 0, 0;"
        : "=l"(d0), "=l"(d1), "=l"(d2), "=l"(d3), "=l"(bout) : "l"(x0), "l"(x1), "l"(y0), "l"(y1));
    // the slow side: the same 256-bit values as two 128-bit halves of limbs, the carry between them by hand
    L xl = a, yl = b, xh = limbs((unsigned)x0, (unsigned)(x0 >> 32), (unsigned)x1, (unsigned)(x1 >> 32));
    L yh = limbs((unsigned)y1, (unsigned)(y1 >> 32), (unsigned)y0, (unsigned)(y0 >> 32));   // (y1, y0) swapped
    L lo = slow_add(xl, yl), carry = limbs(slow_ult(lo, xl), 0, 0, 0), hi = slow_add(slow_add(xh, yh), carry);
    int top = slow_ult(slow_add(xh, yh), xh) || slow_ult(hi, carry);
    if (!same((u128)s1 << 64 | s0, lo) || !same((u128)s3 << 64 | s2, hi) || cout != (unsigned long long)top)
        fail |= 1u << 11;
    L dlo = slow_sub(xl, yl), borrow = limbs(slow_ult(xl, yl), 0, 0, 0), dhi = slow_sub(slow_sub(xh, yh), borrow);
    int under = slow_ult(xh, yh) || slow_ult(slow_sub(xh, yh), borrow);
    if (!same((u128)d1 << 64 | d0, dlo) || !same((u128)d3 << 64 | d2, dhi) || bout != (under ? ~0ull : 0ull))
        fail |= 1u << 12;

    // 64 x 64 -> 128 by mad.lo.cc.u64 / madc.hi.u64 on top of an addend, and the 32-bit madc.cc forms chained
    unsigned long long m0, m1, c0 = y0;
    asm("mad.lo.cc.u64 %0, %2, %3, %4;\n\tmadc.hi.u64 %1, %2, %3, 0;" : "=l"(m0), "=l"(m1) : "l"(x0), "l"(x1), "l"(c0));
    L xa = limbs((unsigned)x0, (unsigned)(x0 >> 32), 0, 0), xb = limbs((unsigned)x1, (unsigned)(x1 >> 32), 0, 0);
    L want = slow_add(slow_mul(xa, xb), limbs((unsigned)c0, (unsigned)(c0 >> 32), 0, 0));
    if (!same((u128)m1 << 64 | m0, want)) fail |= 1u << 13;
    unsigned w0 = (unsigned)x0, w1 = (unsigned)y0, r0, r1, r2;
    asm("mad.lo.cc.u32 %0, %3, %4, %5;\n\tmadc.hi.cc.u32 %1, %3, %4, %6;\n\tmadc.lo.u32 %2, %3, 0, 1;"
        : "=r"(r0), "=r"(r1), "=r"(r2) : "r"(w0), "r"(w1), "r"((unsigned)q.z), "r"((unsigned)q.w));
    L pw = slow_add(slow_mul(limbs(w0, 0, 0, 0), limbs(w1, 0, 0, 0)), limbs((unsigned)q.z, (unsigned)q.w, 0, 0));
    if (!same((u128)r0 | (u128)r1 << 32 | (u128)(r2 - 1) << 64, pw)) fail |= 1u << 14;
    // signed types: the same bits and the same carries
    long long e0, e1;
    asm("add.cc.s64 %0, %2, %3;\n\taddc.s64 %1, %2, 0;" : "=l"(e0), "=l"(e1) : "l"((long long)x0), "l"((long long)y0));
    if ((unsigned long long)e0 != x0 + y0 || (unsigned long long)e1 != x0 + (x0 + y0 < x0)) fail |= 1u << 15;
    // chains that mix: CC.CF after a subtraction is its carry (1: nothing borrowed) when addc reads it, and a
    // subtraction reads an addition's carry the same way (0 + ~0 + carry)
    unsigned n0, n1, n2, n3, u0 = (unsigned)q.x, u1 = (unsigned)p.y;
    asm("sub.cc.u32 %0, %2, %3;\n\taddc.u32 %1, 0, 0;" : "=r"(n0), "=r"(n1) : "r"(u0), "r"(u1));
    asm("add.cc.u32 %0, %2, %3;\n\tsubc.u32 %1, 0, 0;" : "=r"(n2), "=r"(n3) : "r"(u0), "r"(u1));
    L la = limbs(u0, 0, 0, 0), lb = limbs(u1, 0, 0, 0), ls = slow_add(la, lb);
    if (n0 != u0 - u1 || n1 != (unsigned)!slow_ult(la, lb) || n2 != u0 + u1 || n3 != (ls.v[2] ? 0u : ~0u))
        fail |= 1u << 16;
    v.y ^= (int)fail;
    out[t] = v;
}
