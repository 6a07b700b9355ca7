// Correct: the rotation, kept only where nvcc's integer and warp intrinsics agree with slow loops (of a run-time
// length, which nvcc does not turn into the same instructions): byte and halfword dot products (dp4a, dp2a.lo/.hi,
// every signedness), sums of absolute differences (sad), the n-th set bit (fns, up, down and at the base), the
// lanes that share a key (match.any, match.all, against the keys in shared memory) and the active lanes of a
// divergent branch (activemask).
// archs: sm_80 sm_90
// expect: ok
// block: 64
// smem: 0

__device__ int slow_dot(unsigned a, unsigned b, int sa, int sb, int n, int wide, int sel) {
    int acc = 0;
    for (int i = 0; i < n; i++) {
        int va = wide ? (sa ? (int)(short)(a >> 16 * i) : (int)(unsigned short)(a >> 16 * i))
                      : (sa ? (int)(signed char)(a >> 8 * i) : (int)(unsigned char)(a >> 8 * i));
        int vb = sb ? (int)(signed char)(b >> 8 * (sel + i)) : (int)(unsigned char)(b >> 8 * (sel + i));
        acc += va * vb;
    }
    return acc;
}

__device__ unsigned slow_fns(unsigned mask, int base, int off, int w) {
    if (off == 0) return (mask >> base & 1) ? (unsigned)base : 0xffffffffu;
    int need = off > 0 ? off : -off;
    for (int pos = base; pos >= 0 && pos < w; pos += off > 0 ? 1 : -1)
        if ((mask >> pos & 1) && --need == 0) return (unsigned)pos;
    return 0xffffffffu;
}

extern "C" __global__ void k(const int4 *in, int4 *out) {
    __shared__ unsigned keys[64];
    int t = threadIdx.x, lane = t & 31;
    int4 v = in[(t + 32) % 64];
    unsigned a = (unsigned)in[t].x, b = (unsigned)in[t].y, c = (unsigned)in[t].z;
    int r = in[t].x == 0x12345678 && in[t].y == 0x1abcdef0;   /* 0 but for one input in 2^64: nvcc cannot fold it */
    int four = 4 + r, two = 2 + r, w = 32 - r;
    int ok = __dp4a((int)a, (int)b, (int)c) == (int)c + slow_dot(a, b, 1, 1, four, 0, 0);
    ok &= __dp4a(a, b, c) == c + (unsigned)slow_dot(a, b, 0, 0, four, 0, 0);
    ok &= __dp2a_lo((int)a, (int)b, (int)c) == (int)c + slow_dot(a, b, 1, 1, two, 1, 0);
    ok &= __dp2a_hi(a, b, c) == c + (unsigned)slow_dot(a, b, 0, 0, two, 1, 2);
    ok &= __sad((int)a, (int)b, c) == c + (unsigned)((int)a > (int)b ? (int)a - (int)b : (int)b - (int)a);
    ok &= __usad(a, b, c) == c + (a > b ? a - b : b - a);
    int base = (int)(c & 31), off = (int)(c >> 8 & 7) - 3;
    ok &= __fns(a, base, off) == slow_fns(a, base, off, w) && __fns(a, base, 0) == slow_fns(a, base, 0, w);
    unsigned key = b & 3;   /* lanes sharing a key */
    keys[t] = key;
    __syncwarp();
    unsigned want = 0;
    for (int j = 0; j < w; j++)
        if (keys[(t & ~31) + j] == key) want |= 1u << j;
    ok &= __match_any_sync(0xffffffffu, key) == want;
    int pred = 0, pred2 = 1;
    ok &= __match_all_sync(0xffffffffu, 7u + (unsigned)r, &pred) == 0xffffffffu && pred;
    ok &= __match_all_sync(0xffffffffu, key, &pred2) == (want == 0xffffffffu ? 0xffffffffu : 0u) && pred2 == (want == 0xffffffffu);
    unsigned active = 0;
    if (lane < 20 + r) active = __activemask();
    ok &= lane < 20 ? active == (1u << 20) - 1 : active == 0;
    if (!ok) v.y ^= 1;
    out[t] = v;
}
