#include "epilogue.h"
#include <stdlib.h>

void packed_to_smem(Kctx *k, const Reg *pairs, int mt, int nt, SmemTile stage, Reg warp_row0) {
    packed_to_smem_at(k, pairs, mt, nt, stage, warp_row0, NOGUARD);
}

void packed_to_smem_at(Kctx *k, const Reg *pairs, int mt, int nt, SmemTile stage, Reg warp_row0, Reg chunk0) {
    Emit *e = &k->e;
    int runtime = chunk0.cls != NOGUARD.cls;
    Reg g = e_reg(e, RC_B32), t4 = e_reg(e, RC_B32), row_addr = e_reg(e, RC_B32);
    INS(e, SHR_U32, R(g), R(k->lane), I(2));
    INS(e, AND_B32, R(t4), R(k->lane), I(3));
    INS(e, SHL_B32, R(t4), R(t4), I(2));
    INS(e, ADD_U32, R(row_addr), R(warp_row0), R(g));
    INS(e, MAD_LO_U32, R(row_addr), R(row_addr), I(tile_row_bytes(stage)), R(k->smem));
    INS(e, ADD_U32, R(row_addr), R(row_addr), R(t4));
    INS(e, ADD_U32, R(row_addr), R(row_addr), I(stage.off));
    /* rows g and g+8 share (row & 7) == g, so one swizzled chunk per n tile:
     * chunk q = chunk0 + j lands at (q & ~7) | ((q ^ g) & 7) */
    for (int j = 0; j < nt; j++) {
        Reg c = e_reg(e, RC_B32), a = e_reg(e, RC_B32);
        int64_t hi = 16 * (j & ~7);
        if (runtime) {
            Reg q = e_reg(e, RC_B32);
            INS(e, ADD_U32, R(q), R(chunk0), I(j));
            INS(e, XOR_B32, R(c), R(q), R(g));
            INS(e, AND_B32, R(c), R(c), I(7));
            INS(e, AND_B32, R(q), R(q), I(~7));
            INS(e, OR_B32, R(c), R(c), R(q));
            hi = 0;
        } else {
            INS(e, XOR_B32, R(c), R(g), I(j & 7));
        }
        INS(e, MAD_LO_U32, R(a), R(c), I(16), R(row_addr));
        for (int i = 0; i < mt; i++)
            for (int h = 0; h < 2; h++) {
                int64_t off = (int64_t)(16 * i + 8 * h) * tile_row_bytes(stage) + hi;
                INS(e, ST_SHARED_B32, A(a, off), R(pairs[(i * nt + j) * 2 + h]));
            }
    }
}

void acc_to_smem(Kctx *k, const Acc *acc, DType dt, SmemTile stage, Reg warp_row0) {
    packed_to_smem(k, pack_a_from_acc(k, acc, dt), acc->mt, acc->nt, stage, warp_row0);
}

/* One 16-byte chunk of the swizzled stage, (row, col), to gcol + row * stride
 * (gcol: the row-0 address of the chunk's column), if row < nrows. */
static void chunk_to_global(Kctx *k, SmemTile stage, Reg row, Reg col, Reg gcol, Reg stride_bytes, Reg nrows) {
    Emit *e = &k->e;
    Reg c = e_reg(e, RC_B32), hi = e_reg(e, RC_B32), sa = e_reg(e, RC_B32), p = e_reg(e, RC_PRED);
    Reg ga = e_reg(e, RC_B64), v[4] = {e_reg(e, RC_B32), e_reg(e, RC_B32), e_reg(e, RC_B32), e_reg(e, RC_B32)};
    INS(e, XOR_B32, R(c), R(col), R(row));
    INS(e, AND_B32, R(c), R(c), I(7));
    INS(e, AND_B32, R(hi), R(col), I(~7));
    INS(e, OR_B32, R(c), R(c), R(hi));
    INS(e, MAD_LO_U32, R(sa), R(row), I(tile_row_bytes(stage)), R(k->smem));
    INS(e, MAD_LO_U32, R(sa), R(c), I(16), R(sa));
    INS(e, SETP_LT_U32, R(p), R(row), R(nrows));
    INSP(e, p, 0, LD_SHARED_V4_B32, V4(v[0], v[1], v[2], v[3]), A(sa, stage.off));
    INS(e, MAD_WIDE_U32, R(ga), R(row), R(stride_bytes), R(gcol));
    INSP(e, p, 0, ST_GLOBAL_V4_B32, A(ga, 0), V4(v[0], v[1], v[2], v[3]));
}

void smem_to_global(Kctx *k, SmemTile stage, int threads, Reg base, Reg stride_bytes, Reg nrows) {
    Emit *e = &k->e;
    /* chunk i = tid + threads * pass of the rows * cpr chunks: whole rows per
     * pass when threads is a multiple of cpr, else (576 columns are 72
     * chunks) rows and columns from each pass's index */
    int cpr = stage.cols / 8, total = stage.rows * cpr, fixed = threads % cpr == 0;
    Reg lim = e_reg(e, RC_B32), row0 = e_reg(e, RC_B32), col = e_reg(e, RC_B32), gcol = e_reg(e, RC_B64);
    INS(e, MIN_U32, R(lim), R(nrows), I(stage.rows));
    INS(e, DIV_U32, R(row0), R(k->tid), I(cpr));
    INS(e, REM_U32, R(col), R(k->tid), I(cpr));
    INS(e, MAD_WIDE_U32, R(gcol), R(col), I(16), R(base));
    for (int pass = 0; pass * threads < total; pass++) {
        Reg row = e_reg(e, RC_B32);
        if (fixed) {
            INS(e, ADD_U32, R(row), R(row0), I(pass * threads / cpr));
            chunk_to_global(k, stage, row, col, gcol, stride_bytes, lim);
            continue;
        }
        Reg i = e_reg(e, RC_B32), c = e_reg(e, RC_B32), g = e_reg(e, RC_B64);
        INS(e, ADD_U32, R(i), R(k->tid), I(pass * threads));
        INS(e, DIV_U32, R(row), R(i), I(cpr));
        INS(e, REM_U32, R(c), R(i), I(cpr));
        INS(e, MAD_WIDE_U32, R(g), R(c), I(16), R(base));
        chunk_to_global(k, stage, row, c, g, stride_bytes, lim);
    }
}

void rows_to_global_f32(Kctx *k, int mt, const Reg *vals, Reg warp_row0, Reg base, Reg nrows) {
    Emit *e = &k->e;
    /* only the lane with t == 0 of each quad writes: the others see no rows */
    Reg g = e_reg(e, RC_B32), t = e_reg(e, RC_B32), lead = e_reg(e, RC_PRED), lim = e_reg(e, RC_B32);
    INS(e, SHR_U32, R(g), R(k->lane), I(2));
    INS(e, AND_B32, R(t), R(k->lane), I(3));
    INS(e, SETP_EQ_U32, R(lead), R(t), I(0));
    INS(e, SELP_B32, R(lim), R(nrows), I(0), R(lead));
    for (int r = 0; r < 2 * mt; r++) {
        Reg row = e_reg(e, RC_B32), p = e_reg(e, RC_PRED), a = e_reg(e, RC_B64);
        INS(e, ADD_U32, R(row), R(warp_row0), R(g));
        INS(e, ADD_U32, R(row), R(row), I(16 * (r >> 1) + 8 * (r & 1)));
        INS(e, SETP_LT_U32, R(p), R(row), R(lim));
        INS(e, MAD_WIDE_U32, R(a), R(row), I(4), R(base));
        INSP(e, p, 0, ST_GLOBAL_F32, A(a, 0), R(vals[r]));
    }
}
