/* What a wgmma.mma_async computes when it lands: D = A*B (+ D), with A
 * (64 x K) from shared memory or the threads' fragment registers, B (N x K,
 * stored "column-major": B[n][k]) from shared memory, and D (64 x N) in the
 * accumulator registers of the warpgroup's 128 threads.
 * Precision (PTX ISA, wgmma.mma_async "Precision and rounding"): products
 * are exact here (f16/bf16/tf32 products fit a double), and a K-step is
 * summed in double and rounded once to the accumulator type: the hardware's
 * accumulation order and internal width are unspecified, "at least single
 * precision" for .f32 and "at least half precision" for .f16, which one
 * rounding per instruction satisfies. .tf32 inputs lose their 13 low
 * mantissa bits before the multiply, as the ISA says. FP8 (.e4m3, .e5m2)
 * products are exact too; the hardware's FP8 accumulation is known to keep
 * fewer bits than f32 (what DeepGEMM promotes around), which one rounding
 * per instruction does not model: results agree within the accumulator's
 * width, not bit for bit. */
#include <stdlib.h>
#include "dtype.h"
#include "sim_wgmma.h"

/* RS fragments. 16-bit types: per warp the mma.m16n8k16 A fragment (the
 * ISA's wgmma-64N16-A figure): register r holds row g (+8 for odd r),
 * columns 2q + h (+8 for r >= 2). tf32: the mma.m16n8k8 tf32 A fragment,
 * one element a register: row g (+8 for odd r), column q (+4 for r >= 2)
 * (CUTLASS's ALayout_64x8 says the same). fp8: the mma.m16n8k32 8-bit A
 * fragment (wgmma-64N32-A), four a register: row g (+8 for odd r), columns
 * 4q + h (+16 for r >= 2). g = lane/4, q = lane%4, and warp w of the
 * warpgroup owns rows 16w .. 16w+15. */
void wg_a_frag(int ebytes, int t, int reg, int h, int *row, int *k)
{
    if (ebytes == 2) {
        sim_wgmma_a_map(t, reg, h, row, k);
        return;
    }
    int w = t / 32, g = t % 32 / 4, q = t % 4;
    *row = 16 * w + g + 8 * (reg % 2);
    *k = ebytes == 4 ? q + 4 * (reg / 2) : 4 * q + h + 16 * (reg / 2);
}

double sim_mma_elem(int type, uint32_t bits)
{
    switch (type) {
    case T_F16: return fp16_to_f32((uint16_t)bits);
    case T_BF16: return bf16_to_f32((uint16_t)bits);
    case T_E4M3: case T_E5M2: return fp8_to_f32((uint8_t)bits, type == T_E5M2);
    default: return bits_f32(bits & ~0x1FFFu);   /* tf32: the low 13 bits are dropped */
    }
}

uint32_t sim_mma_load(const uint8_t *smem, uint32_t lo, int ebytes)
{
    uint32_t v = 0;
    for (int i = 0; i < ebytes; i++) v |= (uint32_t)smem[lo + (uint32_t)i] << (8 * i);
    return v;
}

/* A as doubles [64][k], negated when imm-scale-a is -1. */
static void fetch_a(const WgOp *op, double *a)
{
    double s = op->neg_a ? -1 : 1;
    if (!op->rs) {
        for (int i = 0; i < WG_M * op->k; i++) a[i] = s * sim_mma_elem(op->atype, sim_mma_load(op->cta->smem, op->aaddr[i], op->ebytes));
        return;
    }
    int parts = 4 / op->ebytes, pbits = 8 * op->ebytes;   /* elements a register: 1 (tf32), 2 or 4 (fp8) */
    for (int t = 0; t < WG_THREADS; t++)
        for (int r = 0; r < 4; r++)
            for (int h = 0; h < parts; h++) {
                int row, k;
                wg_a_frag(op->ebytes, t, r, h, &row, &k);
                uint32_t bits = parts == 1 ? op->areg[t][r] : op->areg[t][r] >> (pbits * h) & ((1u << pbits) - 1);
                a[row * op->k + k] = s * sim_mma_elem(op->atype, bits);
            }
}

static void fetch_b(const WgOp *op, double *b)
{
    double s = op->neg_b ? -1 : 1;
    for (int i = 0; i < op->n * op->k; i++) b[i] = s * sim_mma_elem(op->btype, sim_mma_load(op->cta->smem, op->baddr[i], op->ebytes));
}

static double dot(const double *a, const double *b, int k)
{
    double sum = 0;
    for (int i = 0; i < k; i++) sum += a[i] * b[i];
    return sum;
}

/* One accumulator element: element e of thread t's fragment. */
static double result(const WgOp *op, const double *a, const double *b, int t, int e, double acc)
{
    int row, col;
    sim_wgmma_d_map(op->n, t, e, &row, &col);
    return (op->scale_d ? acc : 0) + dot(&a[row * op->k], &b[col * op->k], op->k);
}

void wg_compute(const WgOp *op)
{
    double a[WG_M * WG_MAX_K], b[WG_MAX_N * WG_MAX_K];   /* 80 KB: on the stack, no shared scratch */
    fetch_a(op, a);
    fetch_b(op, b);
    const SimFunc *f = op->cta->f;
    const SimOpnd *d = &op->in->o[0];
    for (int t = 0; t < WG_THREADS; t++) {
        SimWarp *w = &op->cta->w[WG_WARPS * op->wg + t / 32];
        for (int j = 0; j < d->n; j++) {
            uint64_t *r = &w->r[(size_t)f->vec[d->reg + j] * 32 + (size_t)(t % 32)];
            if (op->dtype == T_F32) {
                *r = f32_bits((float)result(op, a, b, t, j, bits_f32((uint32_t)*r)));
                continue;
            }
            /* .f16: register j packs elements 2j (low half) and 2j+1 (high half) */
            uint32_t lo = f32_to_fp16((float)result(op, a, b, t, 2 * j, fp16_to_f32((uint16_t)*r)));
            uint32_t hi = f32_to_fp16((float)result(op, a, b, t, 2 * j + 1, fp16_to_f32((uint16_t)(*r >> 16))));
            *r = lo | hi << 16;
        }
    }
}
