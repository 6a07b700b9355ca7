/* wgmma building blocks (wgmma.h). */
#include "wgmma.h"
#include <stdio.h>
#include <stdlib.h>
#include "smem_desc.h"

/* Hopper's descriptor: swizzle mode in bits 62-63, 1 = 128B (PTX_FACTS 3.7) */
#define WG_SWIZZLE_128B (1ull << 62)

Reg wg_desc_kmajor(Kctx *k, int off) { return smem_desc(k, off, smem_desc_offsets(16, 1024) | WG_SWIZZLE_128B); }

Reg wg_desc_mn(Kctx *k, int off, int slab_bytes) {
    return smem_desc(k, off, smem_desc_offsets(slab_bytes, 1024) | WG_SWIZZLE_128B);
}

typedef struct { int n; Op ss_bf16, rs_bf16, ss_f16, rs_f16; } WgRow;
#define ROW(n) {n, OP_WGMMA_SS_BF16_N##n, OP_WGMMA_RS_BF16_N##n, OP_WGMMA_SS_F16_N##n, OP_WGMMA_RS_F16_N##n}
static const WgRow rows[] = {ROW(64), ROW(96), ROW(128), ROW(192), ROW(256)};
#undef ROW

static const WgRow *row_of(int n) {
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].n == n) return &rows[i];
    return NULL;
}

int wg_has_n(int n) { return row_of(n) != NULL; }

void wg_mma(Kctx *k, Acc *d, Reg a, const Reg *a_regs, Reg b, int trans_b, DType dt, Reg accumulate) {
    int n = 8 * d->nt;
    const WgRow *r = row_of(n);
    if (d->mt != 1 || !r) {
        fprintf(stderr, "ptxgen internal: wgmma accumulator of %d x %d tiles\n", d->mt, d->nt);
        abort();
    }
    int bf = dt == DT_BF16;
    if (a_regs)
        e_insn(&k->e, NOGUARD, 0, bf ? r->rs_bf16 : r->rs_f16,
               OPNDS(V(n / 2, d->r), V(4, a_regs), R(b), R(accumulate), I(1), I(1), I(trans_b)));
    else
        e_insn(&k->e, NOGUARD, 0, bf ? r->ss_bf16 : r->ss_f16,
               OPNDS(V(n / 2, d->r), R(a), R(b), R(accumulate), I(1), I(1), I(0), I(trans_b)));
}
