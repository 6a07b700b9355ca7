#include "softmax.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void rows_init(Kctx *k, RowStats *rs, int mt) {
    rs->mt = mt;
    rs->m = e_regs(&k->e, 2 * mt);
    rs->l = e_regs(&k->e, 2 * mt);
    for (int r = 0; r < 2 * mt; r++) rs->m[r] = e_reg(&k->e, RC_F32), rs->l[r] = e_reg(&k->e, RC_F32);
    rows_reset(k, rs);
}

void rows_reset(Kctx *k, RowStats *rs) {
    for (int r = 0; r < 2 * rs->mt; r++) {
        INS(&k->e, MOV_F32, R(rs->m[r]), FI(-INFINITY));
        INS(&k->e, MOV_F32, R(rs->l[r]), FI(0.0f));
    }
}

void rows_copy(Kctx *k, RowStats *to, const RowStats *from) {
    for (int r = 0; r < 2 * from->mt; r++) {
        INS(&k->e, MOV_F32, R(to->m[r]), R(from->m[r]));
        INS(&k->e, MOV_F32, R(to->l[r]), R(from->l[r]));
    }
}

void softmax_mask(Kctx *k, Acc *s, const Reg *room) {
    Emit *e = &k->e;
    for (int i = 0; i < s->mt; i++)
        for (int j = 0; j < s->nt; j++)
            for (int c = 0; c < 4; c++) {
                Reg p = e_reg(e, RC_PRED);
                INS(e, SETP_GT_S32, R(p), R(room[2 * i + (c >> 1)]), I(8 * j + (c & 1)));
                INS(e, SELP_F32, R(ACC(s, i, j, c)), R(ACC(s, i, j, c)), FI(-INFINITY), R(p));
            }
}

/* butterflies over lane masks 1 .. top */
static void lanes_allreduce(Kctx *k, Reg x, Op op, int top) {
    for (int mask = 1; mask <= top; mask <<= 1) {
        Reg t = e_reg(&k->e, RC_F32);
        INS(&k->e, SHFL_BFLY, R(t), R(x), I(mask), I(31), I(-1));
        e_insn(&k->e, NOGUARD, 0, op, OPNDS(R(x), R(x), R(t)));
    }
}

void quad_allreduce(Kctx *k, Reg x, Op op) { lanes_allreduce(k, x, op, 2); }
void warp_allreduce(Kctx *k, Reg x, Op op) { lanes_allreduce(k, x, op, 16); }

Reg softmax_scaled_max(Kctx *k, Reg m, Reg scale_log2) {
    Emit *e = &k->e;
    Reg ms = e_reg(e, RC_F32);
    Reg none = e_reg(e, RC_PRED);
    INS(e, MUL_F32, R(ms), R(m), R(scale_log2));
    INS(e, SETP_EQ_F32, R(none), R(m), FI(-INFINITY));
    INS(e, SELP_F32, R(ms), FI(0.0f), R(ms), R(none));
    return ms;
}

Reg softmax_row_max(Kctx *k, const Acc *s, const RowStats *rs, int i, int h) {
    Emit *e = &k->e;
    Reg mx = e_reg(e, RC_F32);
    INS(e, MAX_F32, R(mx), R(rs->m[2 * i + h]), R(ACC(s, i, 0, 2 * h)));
    for (int j = 0; j < s->nt; j++)
        for (int c = 2 * h; c < 2 * h + 2; c++)
            if (j || c != 2 * h) INS(e, MAX_F32, R(mx), R(mx), R(ACC(s, i, j, c)));
    quad_allreduce(k, mx, OP_MAX_F32);
    return mx;
}

/* S row -> exp2, l rescaled and summed, m = mx; returns the row's rescale factor for O. */
Reg softmax_exp_row(Kctx *k, Acc *s, RowStats *rs, Reg scale_log2, int i, int h, Reg mx) {
    Emit *e = &k->e;
    Reg *m = &rs->m[2 * i + h], *l = &rs->l[2 * i + h];
    Reg ms = softmax_scaled_max(k, mx, scale_log2), neg_ms = e_reg(e, RC_F32), alpha = e_reg(e, RC_F32);
    INS(e, SUB_F32, R(neg_ms), FI(0.0f), R(ms));
    INS(e, FMA_F32, R(alpha), R(*m), R(scale_log2), R(neg_ms));
    INS(e, EX2_F32, R(alpha), R(alpha));
    INS(e, MOV_F32, R(*m), R(mx));
    Reg sum = e_reg(e, RC_F32);
    INS(e, MOV_F32, R(sum), FI(0.0f));
    for (int j = 0; j < s->nt; j++)
        for (int c = 2 * h; c < 2 * h + 2; c++) {
            Reg x = ACC(s, i, j, c);
            INS(e, FMA_F32, R(x), R(x), R(scale_log2), R(neg_ms));
            INS(e, EX2_F32, R(x), R(x));
            INS(e, ADD_F32, R(sum), R(sum), R(x));
        }
    INS(e, FMA_F32, R(*l), R(*l), R(alpha), R(sum));
    return alpha;
}

static void scale_row(Kctx *k, Acc *o, int i, int h, Reg alpha) {
    for (int j = 0; j < o->nt; j++)
        for (int c = 2 * h; c < 2 * h + 2; c++) INS(&k->e, MUL_F32, R(ACC(o, i, j, c)), R(ACC(o, i, j, c)), R(alpha));
}

void softmax_rescale_row(Kctx *k, Acc *s, RowStats *rs, Acc *o, Reg scale_log2, int i, int h, Reg mx) {
    scale_row(k, o, i, h, softmax_exp_row(k, s, rs, scale_log2, i, h, mx));
}

void softmax_update_deferred(Kctx *k, Acc *s, RowStats *rs, Reg scale_log2, const Reg *alpha) {
    for (int i = 0; i < s->mt; i++)
        for (int h = 0; h < 2; h++) {
            Reg a = softmax_exp_row(k, s, rs, scale_log2, i, h, softmax_row_max(k, s, rs, i, h));
            INS(&k->e, MOV_F32, R(alpha[2 * i + h]), R(a));
        }
}

void acc_scale_rows(Kctx *k, Acc *o, const Reg *alpha) {
    for (int i = 0; i < o->mt; i++)
        for (int h = 0; h < 2; h++) scale_row(k, o, i, h, alpha[2 * i + h]);
}

void softmax_lazy_max(Kctx *k, Reg mx, Reg m, Reg scale_log2) {
    Emit *e = &k->e;
    Reg grow = e_reg(e, RC_F32), moves = e_reg(e, RC_PRED);
    INS(e, SUB_F32, R(grow), R(mx), R(m));
    INS(e, MUL_F32, R(grow), R(grow), R(scale_log2));
    INS(e, SETP_GT_F32, R(moves), R(grow), FI(SOFTMAX_LAZY_LOG2));
    INS(e, SELP_F32, R(mx), R(mx), R(m), R(moves));
}

void softmax_update(Kctx *k, Acc *s, RowStats *rs, Acc *o, Reg scale_log2) {
    for (int i = 0; i < s->mt; i++)
        for (int h = 0; h < 2; h++) softmax_rescale_row(k, s, rs, o, scale_log2, i, h, softmax_row_max(k, s, rs, i, h));
}

void softmax_row_sums(Kctx *k, RowStats *rs) {
    for (int r = 0; r < 2 * rs->mt; r++) quad_allreduce(k, rs->l[r], OP_ADD_F32);
}

void softmax_finish(Kctx *k, RowStats *rs, Acc *o, Reg scale_log2, Reg *lse) {
    softmax_row_sums(k, rs);
    softmax_normalize(k, rs, o, scale_log2, lse);
}

void softmax_normalize(Kctx *k, RowStats *rs, Acc *o, Reg scale_log2, Reg *lse) {
    Emit *e = &k->e;
    for (int r = 0; r < 2 * rs->mt; r++) {
        Reg l = rs->l[r], inv = e_reg(e, RC_F32), empty = e_reg(e, RC_PRED);
        INS(e, SETP_EQ_F32, R(empty), R(l), FI(0.0f));
        INS(e, RCP_F32, R(inv), R(l));
        INS(e, SELP_F32, R(inv), FI(0.0f), R(inv), R(empty));
        for (int j = 0; j < o->nt; j++)
            for (int c = 2 * (r & 1); c < 2 * (r & 1) + 2; c++)
                INS(e, MUL_F32, R(ACC(o, r >> 1, j, c)), R(ACC(o, r >> 1, j, c)), R(inv));
        /* lse = ln 2 * (m * scale_log2 + log2 l) */
        Reg ms = softmax_scaled_max(k, rs->m[r], scale_log2);
        lse[r] = e_reg(e, RC_F32);
        INS(e, LG2_F32, R(lse[r]), R(l));
        INS(e, ADD_F32, R(lse[r]), R(lse[r]), R(ms));
        INS(e, MUL_F32, R(lse[r]), R(lse[r]), FI((float)M_LN2));
        INS(e, SELP_F32, R(lse[r]), FI(INFINITY), R(lse[r]), R(empty));
    }
}

/* x = j + f, j an integer and |f| <= 1/2: adding 1.5 * 2^23 rounds x to j in the low mantissa bits, and those
 * bits shifted up by 23 are j's exponent increment (the constant's own bits shift out). x is held at -126.5 or
 * above so the exponent field stays >= 0; there the result is subnormal, which the sums flush. */
void exp2_poly(Kctx *k, Reg x) {
    Emit *e = &k->e;
    static const float c[4] = {0.99992812f, 0.69326097f, 0.24261081f, 0.05517143f};   /* minimax on [-1/2, 1/2] */
    const float round_magic = 12582912.0f;
    Reg xc = e_reg(e, RC_F32), t = e_reg(e, RC_F32), f = e_reg(e, RC_F32), p = e_reg(e, RC_F32);
    INS(e, MAX_F32, R(xc), R(x), FI(-126.5f));
    INS(e, ADD_F32, R(t), R(xc), FI(round_magic));
    INS(e, SUB_F32, R(f), R(t), FI(round_magic));
    INS(e, SUB_F32, R(f), R(xc), R(f));
    INS(e, FMA_F32, R(p), R(f), FI(c[3]), FI(c[2]));
    INS(e, FMA_F32, R(p), R(p), R(f), FI(c[1]));
    INS(e, FMA_F32, R(p), R(p), R(f), FI(c[0]));
    Reg tb = e_reg(e, RC_B32), pb = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(tb), R(t));
    INS(e, SHL_B32, R(tb), R(tb), I(23));
    INS(e, MOV_B32, R(pb), R(p));
    INS(e, ADD_S32, R(pb), R(pb), R(tb));
    INS(e, MOV_F32_B32, R(x), R(pb));
}
