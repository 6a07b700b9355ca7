/* How fast fp32 reductions reach the L2 in the dkv pattern of the wgmma mla_bwd (mla_dkv_store_lines): each
 * warp instruction red.global.add.v4.f32 covers 4 random rows of a [rows][576] fp32 array, 8 lanes (128 bytes)
 * a row. Run at all SMs and at a few, with several warps per CTA: if a few SMs each push more than all of them
 * together do per SM, the L2 bounds the rate; if not, the path from each SM does.
 * build: nvcc -arch=sm_90a -O2 -cudart static -o red_rate red_rate.cu     usage: ./red_rate */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#define COLS 576
#define CHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)

__global__ void red_rows(float *dst, unsigned rows, int iters, unsigned seed) {
    unsigned lane = threadIdx.x & 31, warp = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    unsigned h = (seed ^ warp) * 2654435761u;
    for (int i = 0; i < iters; i++) {
        h = h * 1664525u + 1013904223u;   /* one stream per warp: its 4 rows are the lane octets' */
        unsigned row = ((h >> 7) + (lane >> 3) * 2053u) % rows;
        unsigned col = (unsigned)(i % (COLS / 32)) * 32 + (lane & 7) * 4;
        float *p = dst + (size_t)row * COLS + col;
        asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(1.f), "f"(1.f), "f"(1.f), "f"(1.f)
                     : "memory");
    }
}

int main(void) {
    unsigned rows = 8192;
    float *dst;
    CHECK(cudaMalloc(&dst, (size_t)rows * COLS * 4));
    CHECK(cudaMemset(dst, 0, (size_t)rows * COLS * 4));
    int sms;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaEvent_t t0, t1;
    CHECK(cudaEventCreate(&t0));
    CHECK(cudaEventCreate(&t1));
    int ctas[] = {sms, sms, sms, sms, 2 * sms, 32, 8, 2, 1, 1, 1};
    int warps[] = {4, 8, 16, 32, 8, 8, 8, 8, 8, 16, 32};
    printf("%d SMs, rows %u x %d fp32, 512 bytes a warp instruction (4 rows x 128 B)\n", sms, rows, COLS);
    for (int c = 0; c < (int)(sizeof ctas / sizeof *ctas); c++) {
        int iters = 4000;
        red_rows<<<ctas[c], 32 * warps[c]>>>(dst, rows, 100, 1);   /* warm-up */
        CHECK(cudaGetLastError());
        CHECK(cudaEventRecord(t0));
        red_rows<<<ctas[c], 32 * warps[c]>>>(dst, rows, iters, 7 + c);
        CHECK(cudaGetLastError());
        CHECK(cudaEventRecord(t1));
        CHECK(cudaEventSynchronize(t1));
        float ms;
        CHECK(cudaEventElapsedTime(&ms, t0, t1));
        double bytes = (double)ctas[c] * warps[c] * iters * 512;
        int used = ctas[c] < sms ? ctas[c] : sms;
        printf("ctas %4d x %2d warps: %8.3f ms  %7.3f TB/s  %6.1f GB/s per SM used (%d)\n", ctas[c], warps[c], ms,
               bytes / ms / 1e9, bytes / ms / 1e6 / used, used);
    }
    CHECK(cudaFree(dst));
    return 0;
}
