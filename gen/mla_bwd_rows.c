/* The row-wise kernels of mla_bwd:
 *   pre:      delta[t, h] = sum_c dO[t, h, c] * o[t, h, c]      (8 heads per CTA, 16 threads per head);
 *             deterministic, also the maxima that bound dkv (mla_bwd_fixed.c): per (t, h) max|dO|, ||dO||_1,
 *             max|q|, and over the kv rows, which the CTAs share out, max|V|
 *   convert:  dkv[r, :] = dkv_accum[r, :] rounded to the dtype  (16 kv rows per CTA, 8 threads per row);
 *             deterministic: dkv[r, :] = dkv_fixed[r, :] 2^-S, rounded */
#include "mla_bwd.h"
#include <math.h>

/* Deterministic pre: the largest |V| of the kv rows this CTA's head group g takes: rows 8 L + g + 8 n N for the
 * CTA's linear index L of N = nctaid.x nctaid.y and n = 0, 1, ...: every row once over the grid. off: the thread's
 * 16 bytes of a row (16 threads a row, as for dO). */
static Reg kv_max(Kctx *k, const AttnDesc *d, Reg off) {
    Emit *e = &k->e;
    int tpr = MLA_ROW_THREADS / MLA_PRE_HEADS, per = d->dv / 8 / tpr;
    Reg mx = e_reg(e, RC_B32), r = e_reg(e, RC_B32), g = e_reg(e, RC_B32), x = e_reg(e, RC_B32), step = e_reg(e, RC_B32);
    Reg more = e_reg(e, RC_PRED), s_kv = kc_u32(k, "s_kv"), stride = row_stride_bytes(k, "kv");
    int top = e_label(e), done = e_label(e);
    INS(e, MOV_B32, R(mx), I(0));
    INS(e, DIV_U32, R(g), R(k->tid), I(tpr));
    INS(e, MOV_B32, R(r), SR("%ctaid.y"));
    INS(e, MOV_B32, R(x), SR("%nctaid.x"));
    INS(e, MOV_B32, R(step), SR("%ctaid.x"));
    INS(e, MAD_LO_U32, R(r), R(r), R(x), R(step));                       /* the CTA's linear index */
    INS(e, MAD_LO_U32, R(r), R(r), I(MLA_PRE_HEADS), R(g));
    INS(e, MOV_B32, R(step), SR("%nctaid.y"));
    INS(e, MUL_LO_U32, R(step), R(step), R(x));
    INS(e, MUL_LO_U32, R(step), R(step), I(MLA_PRE_HEADS));
    e_place(e, top);
    INS(e, SETP_LT_U32, R(more), R(r), R(s_kv));
    INSP(e, more, 1, BRA, L(done));
    Reg a = e_reg(e, RC_B64);
    INS(e, MAD_WIDE_U32, R(a), R(r), R(stride), R(kc_ptr(k, "kv")));
    INS(e, MAD_WIDE_U32, R(a), R(off), I(1), R(a));
    for (int i = 0; i < per; i++) {
        Reg v[4];
        for (int j = 0; j < 4; j++) v[j] = e_reg(e, RC_B32);
        INS(e, LD_GLOBAL_V4_B32, V4(v[0], v[1], v[2], v[3]), A(a, 16 * tpr * i));
        mla_bound_add(k, d->dtype, v, &mx, NULL);
    }
    INS(e, ADD_U32, R(r), R(r), R(step));
    INS(e, BRA, L(top));
    e_place(e, done);
    return mx;
}

/* Deterministic pre: the largest |q| of (t, head hc)'s 576 columns: 72 chunks of 16 bytes, the thread's
 * part, part + 16, ... (the fifth only for parts below 8). */
static Reg q_max(Kctx *k, const AttnDesc *d, Reg t, Reg hc, Reg part, Reg off) {
    Emit *e = &k->e;
    int tpr = MLA_ROW_THREADS / MLA_PRE_HEADS, chunks = d->d / 8;
    Reg mx = e_reg(e, RC_B32), rq = tensor_base(k, "q", 's', t, 'h', hc);
    INS(e, MOV_B32, R(mx), I(0));
    INS(e, MAD_WIDE_U32, R(rq), R(off), I(1), R(rq));
    for (int i = 0; i * tpr < chunks; i++) {
        Reg v[4], in = e_reg(e, RC_PRED);
        for (int j = 0; j < 4; j++) {
            v[j] = e_reg(e, RC_B32);
            INS(e, MOV_B32, R(v[j]), I(0));
        }
        INS(e, SETP_LT_U32, R(in), R(part), I(chunks - tpr * i));
        INSP(e, in, 0, LD_GLOBAL_V4_B32, V4(v[0], v[1], v[2], v[3]), A(rq, 16 * tpr * i));
        mla_bound_add(k, d->dtype, v, &mx, NULL);
    }
    return mx;
}

void mla_bwd_pre_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module) {
    Kctx kc;
    Kctx *k = &kc;
    kctx_begin(k, ks);
    Emit *e = &k->e;
    int tpr = MLA_ROW_THREADS / MLA_PRE_HEADS, per = d->dv / 8 / tpr;   /* threads per head, chunks per thread */
    int det = d->tile.deterministic;
    Reg t = e_reg(e, RC_B32), head = e_reg(e, RC_B32), part = e_reg(e, RC_B32), h_q = kc_u32(k, "h_q");
    Reg ok = e_reg(e, RC_PRED), hc = e_reg(e, RC_B32), last = e_reg(e, RC_B32), off = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(t), SR("%ctaid.x"));
    INS(e, MOV_B32, R(head), SR("%ctaid.y"));
    INS(e, DIV_U32, R(hc), R(k->tid), I(tpr));
    INS(e, MAD_LO_U32, R(head), R(head), I(MLA_PRE_HEADS), R(hc));
    INS(e, REM_U32, R(part), R(k->tid), I(tpr));
    INS(e, SETP_LT_U32, R(ok), R(head), R(h_q));
    INS(e, SUB_U32, R(last), R(h_q), I(1));
    INS(e, MIN_U32, R(hc), R(head), R(last));                             /* heads past h_q read the last one */
    INS(e, MUL_LO_U32, R(off), R(part), I(16));
    Reg ro = tensor_base(k, "o", 's', t, 'h', hc), rd = tensor_base(k, "do", 's', t, 'h', hc);
    INS(e, MAD_WIDE_U32, R(ro), R(off), I(1), R(ro));
    INS(e, MAD_WIDE_U32, R(rd), R(off), I(1), R(rd));
    Reg sum = e_reg(e, RC_F32);
    INS(e, MOV_F32, R(sum), FI(0.0f));
    Reg do_max = {0}, do_l1 = {0};   /* deterministic: max|dO| (bit pattern), ||dO||_1 of the thread's part */
    if (det) {
        do_max = e_reg(e, RC_B32), do_l1 = e_reg(e, RC_F32);
        INS(e, MOV_B32, R(do_max), I(0));
        INS(e, MOV_F32, R(do_l1), FI(0.0f));
    }
    for (int i = 0; i < per; i++) {
        Reg a = e_reg(e, RC_B64), b = e_reg(e, RC_B64), x[4], y[4];
        INS(e, ADD_U64, R(a), R(ro), I(16 * tpr * i));
        INS(e, ADD_U64, R(b), R(rd), I(16 * tpr * i));
        ld16_global(k, x, a);
        ld16_global(k, y, b);
        INS(e, ADD_F32, R(sum), R(sum), R(dot8_packed(k, d->dtype, x, y)));
        if (det) mla_bound_add(k, d->dtype, y, &do_max, &do_l1);
    }
    Reg qm = det ? q_max(k, d, t, hc, part, off) : (Reg){0};
    for (int m = tpr / 2; m >= 1; m >>= 1) {
        Reg o = e_reg(e, RC_F32);
        INS(e, SHFL_BFLY, R(o), R(sum), I(m), I(31), I(-1));
        INS(e, ADD_F32, R(sum), R(sum), R(o));
        if (!det) continue;   /* the head's ||dO||_1, max|dO|, max|q| */
        Reg l = e_reg(e, RC_F32), x = e_reg(e, RC_B32), y = e_reg(e, RC_B32);
        INS(e, SHFL_BFLY, R(l), R(do_l1), I(m), I(31), I(-1));
        INS(e, ADD_F32, R(do_l1), R(do_l1), R(l));
        INS(e, SHFL_BFLY, R(x), R(do_max), I(m), I(31), I(-1));
        INS(e, MAX_U32, R(do_max), R(do_max), R(x));
        INS(e, SHFL_BFLY, R(y), R(qm), I(m), I(31), I(-1));
        INS(e, MAX_U32, R(qm), R(qm), R(y));
    }
    Reg w[MLA_BOUND_WORDS];
    if (det) {   /* before part changes below: a head past h_q repeats the last one's maxima, which changes none */
        Reg lse = e_reg(e, RC_F32), i = e_reg(e, RC_B32), a = e_reg(e, RC_B64);
        INS(e, MAD_LO_U32, R(i), R(t), R(h_q), R(hc));
        INS(e, MAD_WIDE_U32, R(a), R(i), I(4), R(kc_ptr(k, "lse")));
        INS(e, LD_GLOBAL_F32, R(lse), A(a, 0));
        mla_bound_row(k, w, do_max, do_l1, qm, sum, lse);
        w[3] = kv_max(k, d, off);
    }
    Reg lead = e_reg(e, RC_PRED), i = e_reg(e, RC_B32), a = e_reg(e, RC_B64);
    INSP(e, ok, 1, MOV_B32, R(part), I(1));                               /* past h_q: nobody stores */
    INS(e, SETP_EQ_U32, R(lead), R(part), I(0));
    INS(e, MAD_LO_U32, R(i), R(t), R(h_q), R(head));
    INS(e, MAD_WIDE_U32, R(a), R(i), I(4), R(kc_ptr(k, "delta")));
    INSP(e, lead, 0, ST_GLOBAL_F32, A(a, 0), R(sum));
    if (det) {
        Reg sm = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(sm), R(k->smem), I(plan_region(p, "bound")));
        mla_bound_publish(k, w, MLA_ROW_THREADS / 32, sm);
    }
    kctx_finish(k, module);
}

void mla_bwd_convert_emit(const AttnDesc *d, const KernelSpec *ks, Buf *module) {
    Kctx kc;
    Kctx *k = &kc;
    kctx_begin(k, ks);
    Emit *e = &k->e;
    int tpr = MLA_ROW_THREADS / MLA_CONVERT_ROWS, per = d->d / 8 / tpr;
    Reg row = e_reg(e, RC_B32), part = e_reg(e, RC_B32), p = e_reg(e, RC_PRED);
    int done = e_label(e);
    INS(e, DIV_U32, R(row), R(k->tid), I(tpr));
    INS(e, REM_U32, R(part), R(k->tid), I(tpr));
    Reg r0 = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(r0), SR("%ctaid.x"));
    INS(e, MAD_LO_U32, R(row), R(r0), I(MLA_CONVERT_ROWS), R(row));
    INS(e, SETP_LT_U32, R(p), R(row), R(kc_u32(k, "s_kv")));
    INSP(e, p, 1, BRA, L(done));
    int det = d->tile.deterministic, esz = det ? 8 : 4;   /* s64 fixed point or fp32 */
    Reg src = e_reg(e, RC_B64), dst = e_reg(e, RC_B64), osrc = e_reg(e, RC_B32), o16 = e_reg(e, RC_B32);
    INS(e, MUL_LO_U32, R(osrc), R(part), I(8 * esz));   /* the thread's 8 elements */
    INS(e, MUL_LO_U32, R(o16), R(part), I(16));
    MlaFixed fx = {0};
    if (det) fx = mla_dkv_fixed(k);
    INS(e, MAD_WIDE_U32, R(src), R(row), I(esz * d->d), R(kc_ptr(k, det ? "dkv_fixed" : "dkv_accum")));
    INS(e, MAD_WIDE_U32, R(src), R(osrc), I(1), R(src));
    INS(e, MAD_WIDE_U32, R(dst), R(row), R(row_stride_bytes(k, "dkv")), R(kc_ptr(k, "dkv")));
    INS(e, MAD_WIDE_U32, R(dst), R(o16), I(1), R(dst));
    for (int i = 0; i < per; i++) {
        Reg f[8], out[4];
        for (int j = 0; j < 8; j++) f[j] = e_reg(e, RC_F32);
        if (det) {   /* sum 2^-S; a bound that is not finite (non-finite inputs): NaN */
            Reg q[8];
            for (int j = 0; j < 8; j++) q[j] = e_reg(e, RC_B64);
            for (int j = 0; j < 4; j++) INS(e, LD_GLOBAL_V2_B64, V2(q[2 * j], q[2 * j + 1]), A(src, 64 * tpr * i + 16 * j));
            for (int j = 0; j < 8; j++) {
                INS(e, CVT_F32_S64, R(f[j]), R(q[j]));
                INS(e, MUL_F32, R(f[j]), R(f[j]), R(fx.inv));
                INS(e, SELP_F32, R(f[j]), FI(NAN), R(f[j]), R(fx.bad));
            }
        } else {
            INS(e, LD_GLOBAL_V4_B32, V4(f[0], f[1], f[2], f[3]), A(src, 32 * tpr * i));
            INS(e, LD_GLOBAL_V4_B32, V4(f[4], f[5], f[6], f[7]), A(src, 32 * tpr * i + 16));
        }
        f32x8_pack(k, d->dtype, f, out);
        INS(e, ST_GLOBAL_V4_B32, A(dst, 16 * tpr * i), V4(out[0], out[1], out[2], out[3]));
    }
    e_place(e, done);
    kctx_finish(k, module);
}
