#include "row_gather.h"
#include <stdio.h>
#include <stdlib.h>
#include "wgmma.h"

static void init(Kctx *k, RowGather *g, int rows, int cols, int threads, int slabs, int tpr) {
    Emit *e = &k->e;
    int pass_rows = threads / tpr;
    /* passes after the first move by pass_rows, a multiple of 8: each thread's swizzle pattern stays */
    if (pass_rows * tpr != threads || rows % pass_rows || (rows > pass_rows && pass_rows % 8) || 8 % tpr ||
        (cols / 8) % tpr) {
        fprintf(stderr, "ptxgen internal: %d threads cannot gather %d rows of %d columns\n", threads, rows, cols);
        abort();
    }
    *g = (RowGather){.rows = rows, .cols = cols, .tpr = tpr, .npat = 8 / tpr, .slabs = slabs,
                     .passes = rows / pass_rows, .pass_rows = pass_rows};
    g->row = e_reg(e, RC_B32), g->part = e_reg(e, RC_B32);
    INS(e, DIV_U32, R(g->row), R(k->tid), I(tpr));
    INS(e, REM_U32, R(g->part), R(k->tid), I(tpr));
    /* chunk part + tpr*i has low bits part + tpr*(i mod npat): no carry, since part < tpr */
    Reg base = e_reg(e, RC_B32), r7 = e_reg(e, RC_B32);
    INS(e, MAD_LO_U32, R(base), R(g->row), I(slabs ? 128 : cols * 2), R(k->smem));
    INS(e, AND_B32, R(r7), R(g->row), I(7));
    for (int p = 0; p < g->npat; p++) {
        Reg c = e_reg(e, RC_B32);
        g->dst[p] = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(c), R(g->part), I(p * tpr));
        INS(e, XOR_B32, R(c), R(c), R(r7));
        INS(e, MAD_LO_U32, R(g->dst[p]), R(c), I(16), R(base));
    }
}

void rg_init(Kctx *k, RowGather *g, int rows, int cols, int threads) { init(k, g, rows, cols, threads, 0, threads / rows); }
void rg_init_slabs(Kctx *k, RowGather *g, int rows, int cols, int threads, int tpr) {
    init(k, g, rows, cols, threads, 1, tpr);
}

void rg_issue(Kctx *k, const RowGather *g, SmemTile t, Reg shift, Reg src, Reg bytes) {
    rg_issue_pass(k, g, t, shift, 0, src, bytes);
}

void rg_issue_pass(Kctx *k, const RowGather *g, SmemTile t, Reg shift, int pass, Reg src, Reg bytes) {
    rg_issue_cols(k, g, t, shift, pass, src, bytes, 0, g->cols);
}

void rg_issue_cols(Kctx *k, const RowGather *g, SmemTile t, Reg shift, int pass, Reg src, Reg bytes, int col0,
                   int ncols) {
    Emit *e = &k->e;
    if (col0 % WG_SLAB_COLS || ncols % (8 * g->tpr) || col0 + ncols > g->cols) {   /* whole swizzle groups */
        fprintf(stderr, "ptxgen internal: columns [%d, %d) of a %d-column gather\n", col0, col0 + ncols, g->cols);
        abort();
    }
    Reg dst[8], s0 = e_reg(e, RC_B64);
    INS(e, MAD_WIDE_U32, R(s0), R(g->part), I(16), R(src));
    for (int p = 0; p < g->npat; p++) {
        dst[p] = g->dst[p];
        if (shift.cls == NOGUARD.cls) continue;
        dst[p] = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(dst[p]), R(g->dst[p]), R(shift));
    }
    for (int i = 0; i < ncols / 8 / g->tpr; i++) {
        int q = col0 / 8 + g->tpr * i;   /* the chunk of part 0; its group of 8 starts a row (or a slab) further on */
        int group = g->slabs ? (q / 8) * g->rows * 128 : 16 * (q & ~7);
        group += pass * g->pass_rows * (g->slabs ? 128 : g->cols * 2);
        Opnd to = A(dst[(q & 7) / g->tpr], t.off + group), from = A(s0, 16 * q);
        if (g->hinted) INS(e, CP_ASYNC_CG_16_HINT, to, from, I(16), R(bytes), R(g->policy));
        else INS(e, CP_ASYNC_CG_16, to, from, I(16), R(bytes));
    }
}
