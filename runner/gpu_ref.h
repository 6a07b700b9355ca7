/* GPU references: plain CUDA C kernels, compiled at run time by NVRTC
 * (runner/nvrtc.h) for the device at hand, for shapes where the float64 CPU
 * reference (runner/ref.h) is too slow. Same math as KERNELS.md and ref.c:
 * inputs bf16 or fp16 in the strided layouts the kernels under test read,
 * products exact in fp32, sums accumulated in float64, outputs fp32 so that
 * the caller compares the kernel under test against them. One block per
 * query row (or key row, or MLA slot); simple, not fast. On an H200: MLA
 * s_q 4096, s_kv 8192, h_q 128, topk 2048 forward 1.3 s, backward 3.1 s;
 * attention b 2, s 4096, h_q 32, h_kv 8, d 128 forward 0.6 s, backward 1.6 s
 * (half that causal). They lean on fp64 units: GPUs with slow fp64 (sm_86,
 * sm_89, sm_120) are many times slower. */
#ifndef PTXGEN_GPU_REF_H
#define PTXGEN_GPU_REF_H
#include <stddef.h>
#include "device.h"
#include "dtype.h"

#define GPU_REF_MAX_DIM 1024   /* largest head dim (d, dv, d_qk, d_v) the kernels take */

/* Element strides of a [b, s, h, d] tensor; the last dimension is contiguous. */
typedef struct { long long b, s, h; } GpuRefStride;

typedef struct {
    DType dtype;
    int b, s_q, s_k, h_q, h_kv, d, dv;
    int causal;                       /* bottom-right: query i sees key j iff j <= i + s_k - s_q */
    float scale;
    GpuRefStride q, k, v, o, dout;    /* o and dout: backward inputs only */
} GpuRefAttn;

typedef struct {
    DType dtype;
    int s_q, s_kv, h_q, topk, d_qk, d_v;
    float scale;
    long long q_stride_s, q_stride_h, kv_stride_s, indices_stride_s;
    long long o_stride_s, o_stride_h, do_stride_s, do_stride_h;   /* backward inputs only */
} GpuRefMla;

typedef struct GpuRef GpuRef;   /* the reference kernels compiled and loaded for one device */

/* The CUDA C source of every reference kernel (what gpu_ref_open compiles). */
extern const char gpu_ref_source[];
/* Entry names in gpu_ref_source, NULL-terminated. */
extern const char *const gpu_ref_entries[];

/* Compiles gpu_ref_source for dev's compute capability with NVRTC and loads it.
 * Needs a "cuda" device and libnvrtc; otherwise -1 with one line in err
 * ("no NVRTC: ..." where the library is missing). Compile once per device and
 * keep the handle for every call below. */
int  gpu_ref_open(GpuRef **out, Device *dev, char *err, size_t errlen);
void gpu_ref_close(GpuRef *g);

/* Every call below launches, synchronizes, and returns 0 or -1 with one line
 * in err (a bad shape, or the driver call that failed). Buffers are device
 * addresses; outputs are fp32 and contiguous, every element written:
 *   attention: o [b, s_q, h_q, dv], lse [b, h_q, s_q], dq [b, s_q, h_q, d],
 *              dk [b, s_k, h_kv, d], dv [b, s_k, h_kv, dv] (summed over each group)
 *   MLA:       o [s_q, h_q, d_v], lse [s_q, h_q], dq [s_q, h_q, d_qk], dkv [s_kv, d_qk]
 * lse is the natural log; a row with no valid key gets lse = +inf and o = 0. */
int gpu_ref_attn_fwd(GpuRef *g, const GpuRefAttn *p, DevPtr q, DevPtr k, DevPtr v, DevPtr o, DevPtr lse,
                     char *err, size_t errlen);
/* o, dout: dtype, strided by p->o and p->dout; lse: fp32 [b, h_q, s_q].
 * delta = rowsum(dout * o) from these inputs, P from lse (KERNELS.md). */
int gpu_ref_attn_bwd(GpuRef *g, const GpuRefAttn *p, DevPtr q, DevPtr k, DevPtr v, DevPtr o, DevPtr dout,
                     DevPtr lse, DevPtr dq, DevPtr dk, DevPtr dv, char *err, size_t errlen);
/* indices: int32 [s_q, topk], row stride p->indices_stride_s; topk_length:
 * int32 [s_q] or 0 for none. Slot j of token t is valid iff 0 <= idx < s_kv
 * and j < topk_length[t]; invalid slots read nothing through their index. */
int gpu_ref_mla_fwd(GpuRef *g, const GpuRefMla *p, DevPtr q, DevPtr kv, DevPtr indices, DevPtr topk_length,
                    DevPtr o, DevPtr lse, char *err, size_t errlen);
/* o, dout: dtype [s_q, h_q, d_v] strided by p->o_stride_*, p->do_stride_*;
 * lse fp32 [s_q, h_q]. dkv is zeroed here, then scatter-added with fp32
 * atomics (so its low bits vary run to run); rows no valid slot selects stay 0. */
int gpu_ref_mla_bwd(GpuRef *g, const GpuRefMla *p, DevPtr q, DevPtr kv, DevPtr o, DevPtr dout, DevPtr lse,
                    DevPtr indices, DevPtr topk_length, DevPtr dq, DevPtr dkv, char *err, size_t errlen);

/* Runs every reference at small ragged shapes (strided inputs with NaN
 * padding, GQA, causal with empty rows, invalid and duplicate MLA indices,
 * topk_length) on dev and compares each output with float64 on the CPU,
 * printing one rel L2 line per output on stdout. Returns 0 when all pass;
 * -1 with err naming the failures (or why nothing could run). */
int gpu_ref_selfcheck(Device *dev, char *err, size_t errlen);
#endif
