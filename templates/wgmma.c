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
static const WgRow rows[] = {ROW(32), ROW(64), ROW(80), ROW(96), ROW(112), ROW(128), ROW(160), ROW(176), ROW(192), ROW(256)};
#undef ROW

static const WgRow *row_of(int n) {
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (rows[i].n == n) return &rows[i];
    return NULL;
}

int wg_has_n(int n) { return row_of(n) != NULL; }

void wg_mma(Kctx *k, Acc *d, Reg a, const Reg *a_regs, Reg b, int mn, DType dt, Reg accumulate) {
    int n = 8 * d->nt;
    const WgRow *r = row_of(n);
    if (d->mt != 1 || !r) {
        fprintf(stderr, "ptxgen internal: wgmma accumulator of %d x %d tiles\n", d->mt, d->nt);
        abort();
    }
    int bf = dt == DT_BF16, trans_a = !!(mn & WG_A_MN), trans_b = !!(mn & WG_B_MN);
    if (a_regs && trans_a) {
        fprintf(stderr, "ptxgen internal: a register A operand is K-major\n");
        abort();
    }
    if (a_regs)
        e_insn(&k->e, NOGUARD, 0, bf ? r->rs_bf16 : r->rs_f16,
               OPNDS(V(n / 2, d->r), V(4, a_regs), R(b), R(accumulate), I(1), I(1), I(trans_b)));
    else
        e_insn(&k->e, NOGUARD, 0, bf ? r->ss_bf16 : r->ss_f16,
               OPNDS(V(n / 2, d->r), R(a), R(b), R(accumulate), I(1), I(1), I(trans_a), I(trans_b)));
}

/* Per 16 columns the pairs are (g, 2t) (g+8, 2t) (g, 8+2t) (g+8, 8+2t); chunk c of row r sits at chunk
 * c ^ (r & 7), and r & 7 = g since warp_row0 is a multiple of 8. */
static void pairs_store(Kctx *k, const Reg *pairs, int ncols, Reg warp_row0, Reg smem, int off, int slab_bytes, Reg chunk0) {
    Emit *e = &k->e;
    Reg g = e_reg(e, RC_B32), t4 = e_reg(e, RC_B32), row = e_reg(e, RC_B32), base = e_reg(e, RC_B32);
    INS(e, SHR_U32, R(g), R(k->lane), I(2));
    INS(e, AND_B32, R(t4), R(k->lane), I(3));
    INS(e, SHL_B32, R(t4), R(t4), I(2));
    INS(e, ADD_U32, R(row), R(warp_row0), R(g));
    INS(e, MAD_LO_U32, R(base), R(row), I(128), R(smem));
    INS(e, ADD_U32, R(base), R(base), R(t4));
    Reg sw = g;                                                 /* what chunk j is XORed with: the row's g */
    if (chunk0.cls != NOGUARD.cls) {                            /* ... and the first chunk, whose bits j never has */
        sw = e_reg(e, RC_B32);
        INS(e, XOR_B32, R(sw), R(g), R(chunk0));
    }
    for (int j = 0; j < ncols / 8; j++) {                       /* column tile j: chunk j % 8 of slab j / 8 */
        Reg x = e_reg(e, RC_B32), a = e_reg(e, RC_B32);
        INS(e, XOR_B32, R(x), R(sw), I(j % 8));
        INS(e, SHL_B32, R(x), R(x), I(4));
        INS(e, ADD_U32, R(a), R(base), R(x));
        int slab = off + (j / 8) * slab_bytes, kk = j / 2, hi = j % 2;
        INS(e, ST_SHARED_B32, A(a, slab), R(pairs[4 * kk + 2 * hi]));
        INS(e, ST_SHARED_B32, A(a, slab + 8 * 128), R(pairs[4 * kk + 2 * hi + 1]));
    }
}

void wg_pairs_to_smem(Kctx *k, const Reg *pairs, int ncols, Reg warp_row0, Reg smem, int off, int slab_bytes) {
    pairs_store(k, pairs, ncols, warp_row0, smem, off, slab_bytes, NOGUARD);
}

void wg_pairs_to_smem_at(Kctx *k, const Reg *pairs, int ncols, Reg warp_row0, Reg smem, int off, Reg chunk0) {
    if (ncols > WG_SLAB_COLS) {
        fprintf(stderr, "ptxgen internal: %d columns from a runtime chunk do not fit one slab\n", ncols);
        abort();
    }
    pairs_store(k, pairs, ncols, warp_row0, smem, off, 0, chunk0);
}
