// Correct: the rotation through each thread's local memory: an array indexed at run time (nvcc's
// __local_depot, ld.local/st.local), read again through a generic pointer that may point either to it or to
// global memory (cvta.local, then a generic load of the local window).
// archs: sm_80
// expect: ok
// block: 64
// smem: 0
extern "C" __global__ void k(const int4 *in, int4 *out) {
    int4 v[8];
    int t = threadIdx.x;
    for (int i = 0; i < 8; i++) v[i] = in[(t + 32 + 8 * i) % 64];
    int j = (in[t].y & 0) + (t & 0);              /* 0, known only at run time */
    const int4 *p = in[t].z == 0x7fffffff && in[t].w == 3 ? in : v;   /* v unless the input is one in 2^64 */
    int4 a = v[j], b = p[j];
    out[t] = a;
    if (a.x != b.x || a.y != b.y || a.z != b.z || a.w != b.w) out[t].x ^= 1;
}
