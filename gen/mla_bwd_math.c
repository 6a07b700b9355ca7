/* What every mla_bwd main kernel computes per element of its accumulators, whichever instructions
 * produced them (mma.sync tiles or wgmma's, the same layout): the rows' lse and delta, P and dS from S
 * and dP, and a dkv block's values into global memory. */
#include "mla_bwd.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void mla_bwd_row_stats(Kctx *k, const MlaCta *c, Reg warp_row0, Reg neg_lse2[2], Reg delta[2]) {
    Emit *e = &k->e;
    Reg g = e_reg(e, RC_B32), lse = kc_ptr(k, "lse"), dl = kc_ptr(k, "delta");
    INS(e, SHR_U32, R(g), R(k->lane), I(2));
    INS(e, ADD_U32, R(g), R(g), R(warp_row0));
    INS(e, ADD_U32, R(g), R(g), R(c->h0));
    for (int h = 0; h < 2; h++) {
        Reg head = e_reg(e, RC_B32), ok = e_reg(e, RC_PRED), i = e_reg(e, RC_B32), a = e_reg(e, RC_B64);
        Reg l = e_reg(e, RC_F32);
        neg_lse2[h] = e_reg(e, RC_F32), delta[h] = e_reg(e, RC_F32);
        INS(e, ADD_U32, R(head), R(g), I(8 * h));
        INS(e, SETP_LT_U32, R(ok), R(head), R(c->h_q));
        INS(e, MAD_LO_U32, R(i), R(c->t), R(c->h_q), R(head));
        INS(e, MOV_F32, R(l), FI(INFINITY));
        INS(e, MOV_F32, R(delta[h]), FI(0.0f));
        INS(e, MUL_WIDE_U32, R(a), R(i), I(4));
        Reg al = e_reg(e, RC_B64), ad = e_reg(e, RC_B64);
        INS(e, ADD_U64, R(al), R(a), R(lse));
        INS(e, ADD_U64, R(ad), R(a), R(dl));
        INSP(e, ok, 0, LD_GLOBAL_F32, R(l), A(al, 0));
        INSP(e, ok, 0, LD_GLOBAL_F32, R(delta[h]), A(ad, 0));
        INS(e, MUL_F32, R(neg_lse2[h]), R(l), FI(-1.4426950408889634f));
    }
}

void mla_bwd_probabilities(Kctx *k, Acc *s, Acc *dp, Reg scale_log2, Reg scale, const Reg neg_lse2[2],
                           const Reg delta[2]) {
    Emit *e = &k->e;
    for (int j = 0; j < s->nt; j++)
        for (int c = 0; c < 4; c++) {
            Reg x = ACC(s, 0, j, c), y = ACC(dp, 0, j, c), sp = e_reg(e, RC_F32);
            INS(e, FMA_F32, R(x), R(x), R(scale_log2), R(neg_lse2[c >> 1]));
            INS(e, EX2_F32, R(x), R(x));
            INS(e, SUB_F32, R(y), R(y), R(delta[c >> 1]));
            INS(e, MUL_F32, R(sp), R(x), R(scale));
            INS(e, MUL_F32, R(y), R(y), R(sp));
        }
}

void mla_dkv_store(Kctx *k, int vec_red, const Acc *acc, const MlaDkvRows *r, int col0) {
    Emit *e = &k->e;
    for (int j = 0; j < acc->nt; j++)
        for (int h = 0; h < 2; h++) {
            Reg v0 = ACC(acc, 0, j, 2 * h), v1 = ACC(acc, 0, j, 2 * h + 1);
            Opnd a = A(r->addr[h], 4 * (col0 + 8 * j));
            if (vec_red) INSP(e, r->ok[h], 0, RED_GLOBAL_ADD_V2_F32, a, V2(v0, v1));
            else {
                INSP(e, r->ok[h], 0, RED_GLOBAL_ADD_F32, a, R(v0));
                INSP(e, r->ok[h], 0, RED_GLOBAL_ADD_F32, A(r->addr[h], 4 * (col0 + 8 * j) + 4), R(v1));
            }
        }
}

/* Lanes that differ in lane bit `mask` trade half their values: afterwards the lane bit says what bit `bit` of
 * a value's index said, and that index bit what the lane bit said (a lane whose bit is set keeps its odd
 * values and sends its even ones). */
static void lanes_trade(Emit *e, Reg *v, int n, int mask, int bit, Reg set) {
    for (int i = 0; i < n; i++) {
        if (i & 1 << bit) continue;
        Reg x = v[i], y = v[i | 1 << bit], s = e_reg(e, RC_F32), r = e_reg(e, RC_F32);
        v[i] = e_reg(e, RC_F32), v[i | 1 << bit] = e_reg(e, RC_F32);
        INS(e, SELP_F32, R(s), R(x), R(y), R(set));
        INS(e, SHFL_BFLY, R(r), R(s), I(mask), I(31), I(-1));
        INS(e, SELP_F32, R(v[i]), R(r), R(x), R(set));
        INS(e, SELP_F32, R(v[i | 1 << bit]), R(y), R(r), R(set));
    }
}

void mla_dkv_store_lines(Kctx *k, const Acc *acc, const MlaDkvLines *r, int col0) {
    Emit *e = &k->e;
    int n = 4 * acc->nt;
    Reg v[4 * 16];
    if (acc->mt != 1 || acc->nt % 4 || n > (int)(sizeof v / sizeof *v)) {   /* whole 32-column spans of one m16 tile */
        fprintf(stderr, "ptxgen internal: mla_dkv_store_lines takes 1 x (4 k) n8 tiles, k <= 4 (got %d x %d)\n", acc->mt, acc->nt);
        abort();
    }
    /* value i = 4 j + 2 h + p: column 8 j + 2 t + p of row g + 8 h; lane = 4 g + t */
    for (int i = 0; i < n; i++) v[i] = acc->r[i];
    lanes_trade(e, v, n, 1, 2, r->bit0);   /* lane bit 0 <-> column bit 3: index bit 2 is now column bit 1 */
    lanes_trade(e, v, n, 4, 3, r->bit2);   /* lane bit 2 <-> column bit 4: index bit 3 is now row bit 0 */
    for (int s = 0; s < acc->nt / 4; s++)  /* index bit 4: column bit 5 */
        for (int row = 0; row < 4; row++) {
            int i = s << 4 | (row & 1) << 3 | (row >> 1) << 1;
            Opnd a = A(r->addr[row], 4 * (col0 + 32 * s));
            INSP(e, r->ok[row], 0, RED_GLOBAL_ADD_V4_F32, a, V4(v[i], v[i | 1], v[i | 4], v[i | 5]));
        }
}

/* The line layout of mla_dkv_store_fixed: the L2 reduces a line a request, so 16 lanes on one line's 16 columns
 * make one request. Four lanes on one 32-byte sector, 8 rows an instruction (one lane exchange), took 15.57 ms at
 * h 64, s_q 4096, top-k 2048 on the H200; each lane on a sector of its own (mla_dkv_store_lines' layout) 38.0. */
void mla_dkv_store_fixed(Kctx *k, const Acc *acc, const MlaDkvFixed *r, int col0, Reg mul) {
    int n = 4 * acc->nt;
    Reg v[4 * 32];
    if (acc->mt != 1 || acc->nt % 2 || n > (int)(sizeof v / sizeof *v)) {
        fprintf(stderr, "ptxgen internal: mla_dkv_store_fixed takes 1 x 2k n8 tiles, k <= 16 (got %d x %d)\n", acc->mt,
                acc->nt);
        abort();
    }
    /* value i = 4 j + 2 h + p: column 8 j + 2 t + p of row g + 8 h; lane = 4 g + t */
    for (int i = 0; i < n; i++) v[i] = acc->r[i];
    lanes_trade(&k->e, v, n, 4, 0, r->bit2);   /* lane bit 2 <-> column bit 0: index bit 0 is now row bit 0 */
    lanes_trade(&k->e, v, n, 8, 2, r->bit3);   /* lane bit 3 <-> column bit 3: index bit 2 is now row bit 1 */
    for (int i = 0; i < n; i++)   /* value i: row i & 7, columns 16 (i >> 3) on */
        mla_dkv_fixed_add(k, r->ok[i & 7], r->addr[i & 7], 8 * (col0 + 16 * (i >> 3)), &v[i], 1, mul);
}

Reg mla_dkv_fixed_col(Kctx *k) {
    Emit *e = &k->e;
    Reg c = e_reg(e, RC_B32), b = e_reg(e, RC_B32);
    INS(e, AND_B32, R(c), R(k->lane), I(1));
    INS(e, SHL_B32, R(c), R(c), I(1));                 /* lane bit 0: column bit 1 */
    INS(e, AND_B32, R(b), R(k->lane), I(2));
    INS(e, MAD_LO_U32, R(c), R(b), I(2), R(c));        /* lane bit 1: column bit 2 */
    INS(e, SHR_U32, R(b), R(k->lane), I(2));
    INS(e, AND_B32, R(b), R(b), I(1));
    INS(e, ADD_U32, R(c), R(c), R(b));                 /* lane bit 2: column bit 0 */
    INS(e, AND_B32, R(b), R(k->lane), I(8));
    INS(e, ADD_U32, R(c), R(c), R(b));                 /* lane bit 3: column bit 3 */
    return c;
}

/* Row q of a lane's 8 in mla_dkv_store_fixed: the slot past its row 4 (lane >> 4) of the 16-slot block */
static int fixed_slot(int q) { return (q & 1) + 2 * (q >> 2 & 1) + 8 * (q >> 1 & 1); }

/* Row q's address at kv row `row` and whether it is a valid one */
static void fixed_row(Emit *e, MlaDkvFixed *r, int q, Reg row, Reg s_kv, Reg base) {
    r->addr[q] = e_reg(e, RC_B64), r->ok[q] = e_reg(e, RC_PRED);
    INS(e, SETP_LT_U32, R(r->ok[q]), R(row), R(s_kv));
    INS(e, MAD_WIDE_U32, R(r->addr[q]), R(row), I(8 * MLA_D_QK), R(base));
}

/* The exchanges' lane bits 2 and 3 (b: a scratch register) */
static void fixed_bits(Kctx *k, MlaDkvFixed *r, Reg b) {
    Emit *e = &k->e;
    r->bit2 = e_reg(e, RC_PRED), r->bit3 = e_reg(e, RC_PRED);
    INS(e, AND_B32, R(b), R(k->lane), I(4));
    INS(e, SETP_NE_U32, R(r->bit2), R(b), I(0));
    INS(e, AND_B32, R(b), R(k->lane), I(8));
    INS(e, SETP_NE_U32, R(r->bit3), R(b), I(0));
}

void mla_dkv_fixed_rows(Kctx *k, MlaDkvFixed *r, Reg rows_at, int off, Reg s_kv, Reg base) {
    Emit *e = &k->e;
    for (int q = 0; q < 8; q++) {
        Reg row = e_reg(e, RC_B32);
        INS(e, LD_SHARED_B32, R(row), A(rows_at, off + 4 * fixed_slot(q)));
        fixed_row(e, r, q, row, s_kv, base);
    }
}

void mla_dkv_fixed_lane(Kctx *k, MlaDkvFixed *r, Reg slot0, Reg *rows_at) {
    Emit *e = &k->e;
    Reg b = e_reg(e, RC_B32);
    fixed_bits(k, r, b);
    *rows_at = e_reg(e, RC_B32);
    INS(e, SHR_U32, R(b), R(k->lane), I(4));
    INS(e, MAD_LO_U32, R(b), R(b), I(4), R(slot0));    /* the lane's row 4 (lane >> 4) */
    INS(e, MAD_LO_U32, R(*rows_at), R(b), I(4), R(k->smem));
}

void mla_dkv_fixed_tmem(Kctx *k, Reg taddr, int tcol, int cols, int gcol0, Reg row, Reg s_kv, Reg base, Reg mul) {
    Emit *e = &k->e;
    if (cols % 16) {
        fprintf(stderr, "ptxgen internal: mla_dkv_fixed_tmem takes whole 16-column groups (got %d)\n", cols);
        abort();
    }
    MlaDkvFixed r;
    Reg hi = e_reg(e, RC_B32), b = e_reg(e, RC_B32);
    fixed_bits(k, &r, b);
    INS(e, SHR_U32, R(hi), R(k->lane), I(4));
    INS(e, SHL_B32, R(hi), R(hi), I(2));                     /* the lane's row 4 (lane >> 4) of a half */
    for (int half = 0; half < 2; half++) {
        for (int q = 0; q < 8; q++) {   /* mla_dkv_fixed_rows' 8 rows, from the lanes that hold them */
            Reg src = e_reg(e, RC_B32), x = e_reg(e, RC_B32);
            INS(e, ADD_U32, R(src), R(hi), I(16 * half + fixed_slot(q)));
            INS(e, SHFL_IDX, R(x), R(row), R(src), I(31), I(-1));
            fixed_row(e, &r, q, x, s_kv, base);
        }
        for (int c = 0; c < cols; c += 32) {
            int w = cols - c >= 32 ? 32 : 16;
            Acc acc;
            acc_new(k, &acc, 1, w / 8);
            e_insn(e, NOGUARD, 0, w == 32 ? OP_TC_LD_16X256B_X4 : OP_TC_LD_16X256B_X2,
                   OPNDS(V(w / 2, acc.r), A(taddr, (16 * half << 16) + tcol + c)));
            INS0(e, TC_WAIT_LD);
            mla_dkv_store_fixed(k, &acc, &r, gcol0 + c, mul);
        }
    }
}
