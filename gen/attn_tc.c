#include "attn_tc.h"

/* 16 columns from col + off + c into v, times mul; zeros where has is false */
static void row_chunk(Kctx *k, Reg col, int off, int c, Reg has, const Reg *mul, Reg *v) {
    Emit *e = &k->e;
    int zero = e_label(e), ready = e_label(e);
    for (int i = 0; i < 16; i++) v[i] = e_reg(e, RC_F32);
    INSP(e, has, 1, BRA_UNI, L(zero));
    umma_tmem_load(k, col, off + c, v, 16);
    INS(e, BRA_UNI, L(ready));
    e_place(e, zero);
    for (int i = 0; i < 16; i++) INS(e, MOV_F32, R(v[i]), FI(0.0f));
    e_place(e, ready);
    if (mul) for (int i = 0; i < 16; i++) INS(e, MUL_F32, R(v[i]), R(v[i]), R(*mul));
}

void tc_row_out_f32(Kctx *k, Reg col, int off, int n, Reg has, const Reg *mul, Reg a, Reg pred) {
    for (int c = 0; c < n; c += 16) {
        Reg v[16];
        row_chunk(k, col, off, c, has, mul, v);
        for (int q = 0; q < 4; q++)
            INSP(&k->e, pred, 0, ST_GLOBAL_V4_F32, A(a, 4 * (c + 4 * q)), V4(v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]));
    }
}

void tc_row_out(Kctx *k, Reg col, int off, int n, Reg has, const Reg *mul, DType dt, Reg a, Reg pred) {
    Emit *e = &k->e;
    for (int c = 0; c < n; c += 16) {
        Reg v[16], w[8];
        row_chunk(k, col, off, c, has, mul, v);
        f32x8_pack(k, dt, v, w);
        f32x8_pack(k, dt, v + 8, w + 4);
        INSP(e, pred, 0, ST_GLOBAL_V4_B32, A(a, 2 * c), V4(w[0], w[1], w[2], w[3]));
        INSP(e, pred, 0, ST_GLOBAL_V4_B32, A(a, 2 * c + 16), V4(w[4], w[5], w[6], w[7]));
    }
}

void tc_stores_arrive(Kctx *k, Reg bar) {
    INS0(&k->e, TC_WAIT_ST);
    INS0(&k->e, TC_FENCE_BEFORE);
    Reg st = e_reg(&k->e, RC_B64);
    INS(&k->e, MBAR_ARRIVE, R(st), A(bar, 0));
}
