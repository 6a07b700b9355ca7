// Correct: the rotation, kept only where module-scope .global and .const variables behave: sinf and cosf of large
// arguments (their reduction reads nvcc's own .global table of 2/pi's bits) satisfy sin^2 + cos^2 = 1 and the
// double-angle formula, __device__ tables' initializers read back (scalars, byte arrays, an array sized by its
// initializer), a __constant__ table reads back by ld.const, and a zero-initialized __device__ array written by
// every thread reads back after __syncthreads.
// archs: sm_80 sm_90
// expect: ok
// block: 64
// smem: 0

__device__ int primes[8] = {2, 3, 5, 7, 11, 13, 17, 19};
__device__ float halves[4] = {0.5f, 1.5f, -2.5f, 1e-3f};
__device__ unsigned long long big = 0x123456789abcdefull;
__device__ short shorts[] = {-1, 300, -32768};
__device__ int scratch[64];
__constant__ float coef[8] = {1, 2, 3, 4, 5, 6, 7, 8};

extern "C" __global__ void k(const int4 *in, int4 *out) {
    int t = threadIdx.x;
    asm volatile("prefetch.global.L2 [%0];" :: "l"(in + (t + 32) % 64));   /* a hint: changes nothing */
    int4 v = in[(t + 32) % 64];
    unsigned u = (unsigned)in[t].x;
    int ok = 1;
    // 1e5 .. 1.6e7: past the fast reduction (|x| > 105615), so sinf/cosf take the table path
    float x = 1.0e5f + (float)(u >> 8), sn = sinf(x), cs = cosf(x), s2 = sinf(2.0f * x);
    ok &= fabsf(sn * sn + cs * cs - 1.0f) < 4e-6f && fabsf(s2 - 2.0f * sn * cs) < 1e-5f;
    int i = (int)(u & 7), prev = i ? primes[i - 1] : 1;
    ok &= primes[i] > prev && primes[7] == 19 && (primes[i] == 2 || primes[i] % 2 == 1);
    ok &= halves[0] + halves[1] == 2.0f && halves[2] == -2.5f && halves[3] > 0.00099f && halves[3] < 0.00101f;
    ok &= big == 0x123456789abcdefull && shorts[0] == -1 && shorts[1] == 300 && shorts[2] == -32768;
    ok &= coef[u & 7] == (float)((u & 7) + 1) && coef[3] == 4.0f;   // ld.const, by register and by symbol
    ok &= scratch[t] == 0;
    __syncthreads();
    scratch[t] = t * 7 + 1;
    __syncthreads();
    ok &= scratch[(t + 5) % 64] == ((t + 5) % 64) * 7 + 1;
    __syncthreads();
    scratch[t] = 0;   // as found: a second launch of the module sees zeros again
    if (!ok) v.y ^= 1;
    out[t] = v;
}
