// Correct: the rotation, kept only where stmatrix undoes ldmatrix: four 8x8 b16 matrices loaded by ldmatrix and
// stored back by stmatrix land as they were (x1, x2 and x4, plain and both .trans), and loaded plain but stored with
// .trans they land transposed, each matrix on its own.
// archs: sm_90
// expect: ok
// block: 64
// smem: 0

__device__ void ld4(unsigned a, unsigned r[4], int trans) {
    if (trans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}

__device__ void st4(unsigned a, const unsigned r[4], int trans) {
    if (trans)
        asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1,%2,%3,%4};"
                     :: "r"(a), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]) : "memory");
    else
        asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};"
                     :: "r"(a), "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]) : "memory");
}

extern "C" __global__ void k(const int4 *in, int4 *out) {
    /* per warp: source 4 matrices x 8 rows x 8 halves, a destination as large; rows 16 bytes apart */
    __shared__ __align__(16) unsigned short src[2][4][8][8], dst[2][4][8][8];
    int t = threadIdx.x, lane = t & 31, wp = t >> 5;
    int4 v = in[(t + 32) % 64];
    unsigned short *s = &src[wp][0][0][0], *d = &dst[wp][0][0][0];
    for (int i = lane; i < 256; i += 32) s[i] = (unsigned short)(in[i & 63].x * 31 + i * 7);
    __syncwarp();
    /* lane l gives row l % 8 of matrix l / 8 */
    unsigned sa = (unsigned)__cvta_generic_to_shared(&src[wp][lane >> 3][lane & 7][0]);
    unsigned da = (unsigned)__cvta_generic_to_shared(&dst[wp][lane >> 3][lane & 7][0]);
    unsigned r[4];
    int ok = 1;
    for (int mode = 0; mode < 3; mode++) {   /* plain, both .trans, plain then .trans */
        for (int i = lane; i < 256; i += 32) d[i] = 0xdead;
        __syncwarp();
        ld4(sa, r, mode == 1);
        st4(da, r, mode >= 1);
        __syncwarp();
        for (int i = 0; i < 256; i++) {
            int m = i >> 6, row = (i >> 3) & 7, col = i & 7;
            ok &= d[i] == (mode < 2 ? s[i] : src[wp][m][col][row]);
        }
        __syncwarp();
    }
    {   /* x1 and x2: only the first matrices' rows (lanes 0-7, 0-15) are addressed and written */
        unsigned r1, r2a, r2b;
        for (int i = lane; i < 256; i += 32) d[i] = 0xbeef;
        __syncwarp();
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(r2a), "=r"(r2b) : "r"(sa));
        asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r1) : "r"(sa));
        asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1,%2};" :: "r"(da), "r"(r2a), "r"(r2b) : "memory");
        __syncwarp();
        for (int i = 0; i < 256; i++) ok &= d[i] == (i < 128 ? s[i] : 0xbeef);
        __syncwarp();
        asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};" :: "r"(da), "r"(r2b) : "memory");
        __syncwarp();
        for (int i = 0; i < 64; i++) ok &= d[i] == s[64 + i];   /* matrix 1's fragments into matrix 0's place */
        ok &= r1 == r2a;
    }
    if (!ok) v.y ^= 1;
    out[t] = v;
}
