/* deterministic=1: dkv summed in fixed point, in every family's mla_bwd set.
 *
 * Float atomics add in whatever order the CTAs reach L2, so their sums differ run to run; integer sums do not.
 * Each contribution v to dkv[r, c] is rounded to the integer nearest v 2^S and added by red.global.add.u64 into
 * the s64 workspace dkv_fixed; convert writes dkv = sum 2^-S. Two's-complement sums wrap, so only the final sum
 * has to fit: S is chosen so that |dkv[r, c]| 2^S < 2^62 for every r, c.
 *
 * The bound. A token t and head h add to column c of a row, over the slots j that selected it,
 * P_j dO[c] + scale P_j (dP_j - delta) q[c], with sum_j P_j <= 1 (the softmax over the valid slots, given the
 * forward's lse) and |dP_j| = |dO . V[r_j]| <= ||dO||_1 max|V|. So
 *     |dkv[r, c]| <= sum over (t, h) of max|dO| + |scale| (||dO||_1 max|V| + |delta|) max|q|
 *                 <= s_q h_q (W0 + W1 W3 + W2)
 * with W0 = max over (t, h) of max|dO|, W1 of |scale| ||dO||_1 max|q|, W2 of |scale delta| max|q|, and
 * W3 = max|kv[:, :d_v]|.
 * pre raises the four in dkv_bound (their fp32 bit patterns: non-negative floats order as unsigned integers, NaN
 * above +inf) with red.global.max.u32, which gives the same maxima in any order. F = 2 s_q h_q (W0 + ...) (the 2
 * covers P and dS rounded to 16 bits and exp2's error), computed in f64, sets S = 61 - floor(log2 F), within
 * [-126, 126]. A word that is not finite (non-finite q, dO, o or kv, even in a kv row no token selects) or an lse
 * no forward writes (NaN, -inf) makes every dkv element NaN. The forward's lse is assumed: with another, P may sum
 * past 1 and the sums wrap unnoticed.
 * Each term is rounded to a quantum 2^-S in (F 2^-62, F 2^-61]: against the largest possible |dkv| that is 60 bits
 * finer; a row whose sum is far below F keeps fewer (one 2^-20 of F keeps 40). */
#include "mla_bwd.h"
#include <math.h>

/* x's magnitude as its bit pattern (b32): a NaN of either sign above +inf */
static Reg abs_bits(Emit *e, Reg x) {
    Reg b = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(b), R(x));
    INS(e, AND_B32, R(b), R(b), IX(0x7fffffffu));
    return b;
}

static Reg as_f32(Emit *e, Reg bits) {
    Reg f = e_reg(e, RC_F32);
    INS(e, MOV_F32_B32, R(f), R(bits));
    return f;
}

void mla_bound_add(Kctx *k, DType dt, const Reg *chunk, Reg *max_bits, Reg *l1) {
    Emit *e = &k->e;
    for (int i = 0; i < 4; i++) {
        Reg v[2];
        unpack2(k, dt, chunk[i], &v[0], &v[1]);
        for (int h = 0; h < 2; h++) {
            Reg b = abs_bits(e, v[h]);
            INS(e, MAX_U32, R(*max_bits), R(*max_bits), R(b));
            if (l1) INS(e, ADD_F32, R(*l1), R(*l1), R(as_f32(e, b)));
        }
    }
}

void mla_bound_row(Kctx *k, Reg w[MLA_BOUND_WORDS], Reg do_max, Reg do_l1, Reg q_max, Reg delta, Reg lse) {
    Emit *e = &k->e;
    Reg qm = e_reg(e, RC_F32), x = e_reg(e, RC_F32), real = e_reg(e, RC_PRED);
    INS(e, MUL_F32, R(qm), R(as_f32(e, q_max)), R(kc_f32(k, "softmax_scale")));
    /* no forward writes a NaN or -inf lse (+inf: no valid slot); with one, P could sum past 1 and the bound fail */
    INS(e, SETP_GT_F32, R(real), R(lse), FI(-INFINITY));
    w[0] = e_reg(e, RC_B32);
    INS(e, SELP_B32, R(w[0]), R(do_max), IX(0x7fc00000u), R(real));
    INS(e, MUL_F32, R(x), R(do_l1), R(qm));
    w[1] = abs_bits(e, x);
    INS(e, MUL_F32, R(x), R(delta), R(qm));
    w[2] = abs_bits(e, x);
}

void mla_bound_publish(Kctx *k, Reg w[MLA_BOUND_WORDS], int warps, Reg smem) {
    Emit *e = &k->e;
    for (int m = 16; m >= 1; m >>= 1)   /* the warp's maxima */
        for (int i = 0; i < MLA_BOUND_WORDS; i++) {
            Reg o = e_reg(e, RC_B32);
            INS(e, SHFL_BFLY, R(o), R(w[i]), I(m), I(31), I(-1));
            INS(e, MAX_U32, R(w[i]), R(w[i]), R(o));
        }
    Reg a = e_reg(e, RC_B32), lead = e_reg(e, RC_PRED), first = e_reg(e, RC_PRED);
    int done = e_label(e);
    INS(e, SETP_EQ_U32, R(lead), R(k->lane), I(0));
    INS(e, MAD_LO_U32, R(a), R(k->warp), I(4 * MLA_BOUND_WORDS), R(smem));
    INSP(e, lead, 0, ST_SHARED_V4_B32, A(a, 0), V4(w[0], w[1], w[2], w[3]));
    INS(e, BAR_SYNC, I(0));
    INS(e, SETP_EQ_U32, R(first), R(k->tid), I(0));
    INSP(e, first, 1, BRA, L(done));
    for (int j = 1; j < warps; j++) {   /* the CTA's maxima, in thread 0 */
        Reg o[MLA_BOUND_WORDS];
        for (int i = 0; i < MLA_BOUND_WORDS; i++) o[i] = e_reg(e, RC_B32);
        INS(e, LD_SHARED_V4_B32, V4(o[0], o[1], o[2], o[3]), A(smem, 4 * MLA_BOUND_WORDS * j));
        for (int i = 0; i < MLA_BOUND_WORDS; i++) INS(e, MAX_U32, R(w[i]), R(w[i]), R(o[i]));
    }
    /* raise only the words this CTA exceeds: thousands of CTAs share these 16 bytes, and after the first few most
     * find the maxima already there (a stale read is only lower, which costs an atomic, never a wrong bound) */
    Reg cur[MLA_BOUND_WORDS], g = kc_ptr(k, "dkv_bound");
    for (int i = 0; i < MLA_BOUND_WORDS; i++) cur[i] = e_reg(e, RC_B32);
    INS(e, LD_RELAXED_GPU_V4_U32, V4(cur[0], cur[1], cur[2], cur[3]), A(g, 0));
    for (int i = 0; i < MLA_BOUND_WORDS; i++) {
        Reg up = e_reg(e, RC_PRED);
        INS(e, SETP_GT_U32, R(up), R(w[i]), R(cur[i]));
        INSP(e, up, 0, RED_GLOBAL_MAX_U32, A(g, 4 * i), R(w[i]));
    }
    e_place(e, done);
}

MlaFixed mla_dkv_fixed(Kctx *k) {
    Emit *e = &k->e;
    Reg w[MLA_BOUND_WORDS], f[MLA_BOUND_WORDS], g = kc_ptr(k, "dkv_bound");
    for (int i = 0; i < MLA_BOUND_WORDS; i++) w[i] = e_reg(e, RC_B32);
    INS(e, LD_GLOBAL_V4_B32, V4(w[0], w[1], w[2], w[3]), A(g, 0));   /* pre wrote them, a launch before */
    for (int i = 0; i < MLA_BOUND_WORDS; i++) {   /* in f64: F of finite words is finite (up to 2^320) */
        f[i] = e_reg(e, RC_B64);
        INS(e, CVT_F64_F32, R(f[i]), R(as_f32(e, w[i])));
    }
    Reg b = e_reg(e, RC_B64), n = e_reg(e, RC_B64), h = e_reg(e, RC_B64);
    INS(e, FMA_F64, R(b), R(f[1]), R(f[3]), R(f[2]));
    INS(e, ADD_F64, R(b), R(b), R(f[0]));
    INS(e, CVT_F64_U32, R(n), R(kc_u32(k, "s_q")));
    INS(e, CVT_F64_U32, R(h), R(kc_u32(k, "h_q")));
    INS(e, MUL_F64, R(n), R(n), R(h));
    INS(e, ADD_F64, R(n), R(n), R(n));
    INS(e, MUL_F64, R(b), R(b), R(n));   /* F */
    Reg hi = e_reg(e, RC_B64), ex = e_reg(e, RC_B32), s = e_reg(e, RC_B32), x = e_reg(e, RC_B32);
    MlaFixed r = {.mul = e_reg(e, RC_F32), .inv = e_reg(e, RC_F32), .bad = e_reg(e, RC_PRED)};
    INS(e, SHR_U64, R(hi), R(b), I(52));
    INS(e, CVT_U32_U64, R(ex), R(hi));
    INS(e, AND_B32, R(ex), R(ex), I(0x7ff));   /* F >= 0: floor(log2 F) = ex - 1023 (F normal) */
    INS(e, SETP_EQ_U32, R(r.bad), R(ex), I(0x7ff));
    INS(e, SUB_U32, R(s), I(61 + 1023), R(ex));   /* S = 61 - floor(log2 F) */
    /* S in [-126, 126], where 2^S and 2^-S are normal f32: a tiny or zero F keeps 2^126; a huge one -126, where a
     * finite f32 term (below 2^128) becomes at most 4 and no sum of them wraps */
    INS(e, MIN_S32, R(s), R(s), I(126));
    INS(e, MAX_S32, R(s), R(s), I(-126));
    INS(e, ADD_U32, R(x), R(s), I(127));
    INS(e, SHL_B32, R(x), R(x), I(23));
    INS(e, MOV_F32_B32, R(r.mul), R(x));
    INS(e, SUB_U32, R(x), I(127), R(s));
    INS(e, SHL_B32, R(x), R(x), I(23));
    INS(e, MOV_F32_B32, R(r.inv), R(x));
    return r;
}

void mla_dkv_fixed_add(Kctx *k, Reg ok, Reg addr, int off, const Reg *v, int n, Reg mul) {
    Emit *e = &k->e;
    for (int i = 0; i < n; i++) {
        Reg x = e_reg(e, RC_F32), q = e_reg(e, RC_B64);
        INS(e, MUL_F32, R(x), R(v[i]), R(mul));
        INS(e, CVT_RNI_S64_F32, R(q), R(x));
        INSP(e, ok, 0, RED_GLOBAL_ADD_U64, A(addr, off + 8 * i), R(q));
    }
}
