#include "warp_mma.h"
#include <stdio.h>
#include <stdlib.h>

void acc_new(Kctx *k, Acc *a, int mt, int nt) {
    *a = (Acc){mt, nt, e_regs(&k->e, mt * nt * 4)};
    for (int i = 0; i < mt * nt * 4; i++) a->r[i] = e_reg(&k->e, RC_F32);
}

void acc_fill(Kctx *k, Acc *a, float v) {
    for (int i = 0; i < a->mt * a->nt * 4; i++) INS(&k->e, MOV_F32, R(a->r[i]), FI(v));
}

static Op mma_op(DType dt) { return dt == DT_FP16 ? OP_MMA_F16 : OP_MMA_BF16; }

static void mma(Kctx *k, DType dt, Acc *c, int i, int j, const Reg *a, Reg b0, Reg b1, int fresh, Reg zero) {
    Opnd d = V4(ACC(c, i, j, 0), ACC(c, i, j, 1), ACC(c, i, j, 2), ACC(c, i, j, 3));
    Opnd cin = fresh ? V4(zero, zero, zero, zero) : d;
    e_insn(&k->e, NOGUARD, 0, mma_op(dt), OPNDS(d, V4(a[0], a[1], a[2], a[3]), V2(b0, b1), cin));
}

static void ldsm_x4(Kctx *k, Op op, Reg *r, Opnd addr) {
    for (int i = 0; i < 4; i++) r[i] = e_reg(&k->e, RC_B32);
    e_insn(&k->e, NOGUARD, 0, op, OPNDS(V4(r[0], r[1], r[2], r[3]), addr));
}

/* One k step of C (+)= A B (trans: B read transposed from a [k][n] tile) or
 * C (+)= A B^T (B rows from an [n][k] tile); a[i] are m tile i's fragments. */
static void mma_step(Kctx *k, Acc *c, const Reg *const *a, int kk, const LdsmBases *b, int trans, DType dt, int fresh,
                     Reg zero) {
    Reg bf[4];
    for (int nn = 0; nn < c->nt / 2; nn++) {
        /* one x4 load: b fragments of n tiles 2nn and 2nn+1 */
        if (trans) ldsm_x4(k, OP_LDSM_X4_T, bf, ldsm_addr(k, b, 16 * kk, nn));
        else ldsm_x4(k, OP_LDSM_X4, bf, ldsm_addr(k, b, 16 * nn, kk));
        for (int i = 0; i < c->mt; i++) {
            mma(k, dt, c, i, 2 * nn, a[i], bf[0], bf[1], fresh, zero);
            mma(k, dt, c, i, 2 * nn + 1, a[i], bf[2], bf[3], fresh, zero);
        }
    }
}

void mma_abt(Kctx *k, Acc *c, const LdsmBases *a, const LdsmBases *b, int ksteps, DType dt, Reg zero) {
    Reg af[8][4];
    const Reg *ai[8];
    for (int kk = 0; kk < ksteps; kk++) {
        for (int i = 0; i < c->mt; i++) ldsm_x4(k, OP_LDSM_X4, af[i], ldsm_addr(k, a, 16 * i, kk)), ai[i] = af[i];
        mma_step(k, c, ai, kk, b, 0, dt, kk == 0, zero);
    }
}

void mma_abt_shared_b(Kctx *k, Acc *c0, const LdsmBases *a0, int ks0, Acc *c1, const LdsmBases *a1, int ks1,
                      const LdsmBases *b, DType dt, Reg zero) {
    Acc *c[2] = {c0, c1};
    const LdsmBases *a[2] = {a0, a1};
    int ks[2] = {ks0, ks1};
    for (int kk = 0; kk < (ks0 > ks1 ? ks0 : ks1); kk++) {
        Reg af[2][4], bf[4];
        for (int x = 0; x < 2; x++)
            if (kk < ks[x]) ldsm_x4(k, OP_LDSM_X4, af[x], ldsm_addr(k, a[x], 0, kk));
        for (int nn = 0; nn < c0->nt / 2; nn++) {
            ldsm_x4(k, OP_LDSM_X4, bf, ldsm_addr(k, b, 16 * nn, kk));
            for (int x = 0; x < 2; x++) {
                if (kk >= ks[x]) continue;
                mma(k, dt, c[x], 0, 2 * nn, af[x], bf[0], bf[1], kk == 0, zero);
                mma(k, dt, c[x], 0, 2 * nn + 1, af[x], bf[2], bf[3], kk == 0, zero);
            }
        }
    }
}

Reg *frag_a_load(Kctx *k, const LdsmBases *a, int mt, int ksteps) {
    Reg *p = e_regs(&k->e, mt * ksteps * 4);
    for (int i = 0; i < mt; i++)
        for (int kk = 0; kk < ksteps; kk++) ldsm_x4(k, OP_LDSM_X4, &p[(i * ksteps + kk) * 4], ldsm_addr(k, a, 16 * i, kk));
    return p;
}

/* m tile i's fragments of k step kk in packed A (mt x ksteps x 4) */
static void a_of_step(const Reg *a, int mt, int ksteps, int kk, const Reg **ai) {
    for (int i = 0; i < mt; i++) ai[i] = &a[(i * ksteps + kk) * 4];
}

void mma_abt_regs(Kctx *k, Acc *c, const Reg *a, int ksteps, const LdsmBases *b, DType dt, Reg zero) {
    const Reg *ai[8];
    for (int kk = 0; kk < ksteps; kk++) {
        a_of_step(a, c->mt, ksteps, kk, ai);
        mma_step(k, c, ai, kk, b, 0, dt, kk == 0, zero);
    }
}

Reg *pack_a_from_acc(Kctx *k, const Acc *c, DType dt) {
    int ks = c->nt / 2;
    Reg *p = e_regs(&k->e, c->mt * ks * 4);
    Op cvt = dt == DT_FP16 ? OP_CVT_F16X2 : OP_CVT_BF16X2;
    for (int i = 0; i < c->mt; i++)
        for (int kk = 0; kk < ks; kk++)
            for (int q = 0; q < 4; q++) {
                /* a0..a3 = (rows g | g+8) x (k tile 2kk | 2kk+1); the lower column goes low */
                int j = 2 * kk + (q >> 1), lo = (q & 1) * 2;
                Reg r = e_reg(&k->e, RC_B32);
                e_insn(&k->e, NOGUARD, 0, cvt, OPNDS(R(r), R(ACC(c, i, j, lo + 1)), R(ACC(c, i, j, lo))));
                p[(i * ks + kk) * 4 + q] = r;
            }
    return p;
}

void mma_ab_trans(Kctx *k, Acc *c, const Reg *a, int ksteps, const LdsmBases *b, DType dt) {
    const Reg *ai[8];
    for (int kk = 0; kk < ksteps; kk++) {
        a_of_step(a, c->mt, ksteps, kk, ai);
        mma_step(k, c, ai, kk, b, 1, dt, 0, a[0]);
    }
}

static void smem_ab(Kctx *k, Acc *c, const LdsmBases *a, int ksteps, const LdsmBases *b, DType dt, int fresh, Reg zero) {
    Reg af[8][4];
    const Reg *ai[8];
    for (int kk = 0; kk < ksteps; kk++) {
        for (int i = 0; i < c->mt; i++) ldsm_x4(k, OP_LDSM_X4_T, af[i], ldsm_addr(k, a, 16 * kk, i)), ai[i] = af[i];
        mma_step(k, c, ai, kk, b, 1, dt, fresh && kk == 0, zero);
    }
}

void mma_smem_ab(Kctx *k, Acc *c, const LdsmBases *a, int ksteps, const LdsmBases *b, DType dt, Reg zero) {
    smem_ab(k, c, a, ksteps, b, dt, 1, zero);
}

void mma_smem_ab_add(Kctx *k, Acc *c, const LdsmBases *a, int ksteps, const LdsmBases *b, DType dt) {
    smem_ab(k, c, a, ksteps, b, dt, 0, c->r[0]);
}

void acc_scale(Kctx *k, Acc *c, Reg s) {
    for (int i = 0; i < c->mt * c->nt * 4; i++) INS(&k->e, MUL_F32, R(c->r[i]), R(c->r[i]), R(s));
}
