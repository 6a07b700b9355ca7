/* Split-KV: the forward's partial stores and the combine kernel (attn_splitkv.h). */
#include "attn_splitkv.h"
#include "../templates/softmax.h"
#include <math.h>
#include <stdio.h>

#define COMBINE_WARPS 4   /* rows per combine CTA, one warp each */

void abi_splitkv(KernelSpec *ks) {
    abi_workspace(ks, "o_part", "split-KV: each split's normalized O rows, fp32, written here");
    abi_workspace(ks, "lse_part", "split-KV: each split's LSE rows, written here");
    abi_sizes(ks, (const char *const[]){"num_splits"}, 1);
}

void splitkv_coords(Kctx *k, Reg *b, Reg *split) {
    Emit *e = &k->e;
    Reg z = e_reg(e, RC_B32);
    *b = e_reg(e, RC_B32), *split = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(z), SR("%ctaid.z"));
    INS(e, DIV_U32, R(*b), R(z), R(kc_u32(k, "num_splits")));
    INS(e, REM_U32, R(*split), R(z), R(kc_u32(k, "num_splits")));
}

void splitkv_range(Kctx *k, Reg split, Reg n_max, Reg n_full, Reg *lo, Reg *hi) {
    Emit *e = &k->e;
    Reg chunk = e_reg(e, RC_B32), ns = kc_u32(k, "num_splits");
    *lo = e_reg(e, RC_B32), *hi = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(chunk), R(n_max), R(ns));
    INS(e, SUB_U32, R(chunk), R(chunk), I(1));
    INS(e, DIV_U32, R(chunk), R(chunk), R(ns));
    INS(e, MUL_LO_U32, R(*lo), R(split), R(chunk));
    INS(e, MIN_U32, R(*lo), R(*lo), R(n_max));
    INS(e, ADD_U32, R(*hi), R(*lo), R(chunk));
    INS(e, MIN_U32, R(*hi), R(*hi), R(n_max));
    INS(e, MAX_U32, R(n_full), R(n_full), R(*lo));
    INS(e, MIN_U32, R(n_full), R(n_full), R(*hi));
}

/* row r of the partials of (z, h): ((z h_q + h) s_q + r) */
static Reg part_row(Kctx *k, Reg z, Reg h, Reg r) {
    Emit *e = &k->e;
    Reg i = e_reg(e, RC_B32);
    INS(e, MAD_LO_U32, R(i), R(z), R(kc_u32(k, "h_q")), R(h));
    INS(e, MAD_LO_U32, R(i), R(i), R(kc_u32(k, "s_q")), R(r));
    return i;
}

Reg splitkv_row(Kctx *k, Reg head, Reg tok) {
    Reg z = e_reg(&k->e, RC_B32);
    INS(&k->e, MOV_B32, R(z), SR("%ctaid.z"));
    return part_row(k, z, head, tok);
}

void splitkv_store(Kctx *k, const Acc *o, const Reg *lse, int mt, Reg warp_row0, const PackedRows *pr) {
    Emit *e = &k->e;
    int dv = o->nt * 8;
    Reg z = e_reg(e, RC_B32), t = e_reg(e, RC_B32), lead0 = e_reg(e, RC_PRED);
    INS(e, MOV_B32, R(z), SR("%ctaid.z"));
    INS(e, AND_B32, R(t), R(k->lane), I(3));
    INS(e, SETP_EQ_U32, R(lead0), R(t), I(0));
    for (int r = 0; r < 2 * mt; r++) {   /* rows g and g + 8 of each 16-row tile */
        Reg tok, head, p, a = e_reg(e, RC_B64), lead = e_reg(e, RC_PRED);
        packed_row(k, pr, warp_row0, r, &tok, &head, &p);
        Reg i = part_row(k, z, head, tok);
        INS(e, MAD_WIDE_U32, R(a), R(i), I(4), R(kc_ptr(k, "lse_part")));
        INS(e, AND_PRED, R(lead), R(lead0), R(p));
        INSP(e, lead, 0, ST_GLOBAL_F32, A(a, 0), R(lse[r]));
        INS(e, MUL_LO_U32, R(i), R(i), I(dv));
        INS(e, MAD_LO_U32, R(i), R(t), I(2), R(i));
        INS(e, MAD_WIDE_U32, R(a), R(i), I(4), R(kc_ptr(k, "o_part")));
        for (int j = 0; j < o->nt; j++)   /* columns 8 j + 2 t, + 1 */
            INSP(e, p, 0, ST_GLOBAL_V2_F32, A(a, 32 * j),
                 V2(ACC(o, r >> 1, j, 2 * (r & 1)), ACC(o, r >> 1, j, 2 * (r & 1) + 1)));
    }
}

void splitkv_plan(const AttnDesc *d, Plan *p) {
    *p = (Plan){.threads = 32 * COMBINE_WARPS, .regs_est = 24 + 2 * d->dv / 32};
    char what[96];
    snprintf(what, sizeof what, "attn_fwd split-KV combine d_v=%d (%d rows per CTA, one warp each)", d->dv, COMBINE_WARPS);
    plan_finish(p, d->arch, what);
}

static void combine_spec(const AttnDesc *d, KernelSpec *ks) {
    *ks = (KernelSpec){.block = {32 * COMBINE_WARPS, 1, 1}};
    snprintf(ks->entry, sizeof ks->entry, "attn_fwd_splitkv_combine_%s_dv%d", dtype_name(d->dtype), d->dv);
    abi_workspace(ks, "o_part", "split-KV: each split's normalized O rows, read here");
    abi_workspace(ks, "lse_part", "split-KV: each split's LSE rows, read here");
    attn_tensor(ks, d, "o", PR_OUT, "attention output");
    attn_tensor(ks, d, "lse", PR_OUT, ATTN_LSE_MEANING);
    abi_sizes(ks, (const char *const[]){"s_q", "h_q", "num_splits"}, 3);
    snprintf(ks->grid[0], sizeof ks->grid[0], "cdiv(s_q, %d)", COMBINE_WARPS);
    snprintf(ks->grid[1], sizeof ks->grid[1], "h_q");
    snprintf(ks->grid[2], sizeof ks->grid[2], "b");
}

/* A loop over the splits i = i0, i0 + step, .. below num_splits, at = first + i stride their partial row;
 * split_loop_end moves on and closes it. */
typedef struct { Reg i, at; int top, end; } SplitLoop;
static SplitLoop split_loop(Kctx *k, Reg first, Reg i0, Reg stride) {
    Emit *e = &k->e;
    SplitLoop s = {e_reg(e, RC_B32), e_reg(e, RC_B32), e_label(e), e_label(e)};
    Reg p = e_reg(e, RC_PRED);
    INS(e, MOV_B32, R(s.i), R(i0));
    INS(e, MAD_LO_U32, R(s.at), R(i0), R(stride), R(first));
    e_place(e, s.top);
    INS(e, SETP_GE_U32, R(p), R(s.i), R(kc_u32(k, "num_splits")));
    INSP(e, p, 0, BRA_UNI, L(s.end));
    return s;
}

static void split_loop_end(Kctx *k, const SplitLoop *s, Reg stride, int step) {
    Emit *e = &k->e;
    INS(e, ADD_U32, R(s->i), R(s->i), I(step));
    INS(e, MAD_LO_U32, R(s->at), R(stride), I(step), R(s->at));
    INS(e, BRA_UNI, L(s->top));
    e_place(e, s->end);
}

#define COMBINE_UNROLL 4   /* splits whose loads are in flight together in the weighted sum */

/* One warp per row: the largest finite LSE of the splits (lanes over the splits, then across the warp), then their
 * weights and the weighted O, COMBINE_UNROLL splits at a time, each lane dv/32 columns; a row no split saw gets O 0
 * and LSE +inf. */
static void combine_emit(const AttnDesc *d, const KernelSpec *ks, Buf *module) {
    Kctx kc;
    kctx_begin(&kc, ks);
    Kctx *k = &kc;
    Emit *e = &k->e;
    int cpl = d->dv / 32, done = e_label(e);
    Reg row = e_reg(e, RC_B32), h = e_reg(e, RC_B32), b = e_reg(e, RC_B32), p = e_reg(e, RC_PRED);
    Reg ns = kc_u32(k, "num_splits"), z0 = e_reg(e, RC_B32), i = e_reg(e, RC_B32), m = e_reg(e, RC_F32);
    Reg a = e_reg(e, RC_B64), v = e_reg(e, RC_F32), fin = e_reg(e, RC_PRED);
    INS(e, MOV_B32, R(row), SR("%ctaid.x"));
    INS(e, MAD_LO_U32, R(row), R(row), I(COMBINE_WARPS), R(k->warp));
    INS(e, MOV_B32, R(h), SR("%ctaid.y"));
    INS(e, MOV_B32, R(b), SR("%ctaid.z"));
    INS(e, SETP_GE_U32, R(p), R(row), R(kc_u32(k, "s_q")));
    INSP(e, p, 0, BRA_UNI, L(done));                       /* the whole warp: one row */
    INS(e, MUL_LO_U32, R(z0), R(b), R(ns));
    Reg stride = e_reg(e, RC_B32);                            /* rows from one split to the next */
    INS(e, MUL_LO_U32, R(stride), R(kc_u32(k, "h_q")), R(kc_u32(k, "s_q")));
    Reg first = part_row(k, z0, h, row);
    /* pass 1: m = the largest finite LSE, lane l taking splits l, l + 32, .. */
    INS(e, MOV_F32, R(m), FI(-INFINITY));
    SplitLoop s1 = split_loop(k, first, kc_imm32(k, 0), stride);   /* uniform steps of 32 splits */
    Reg il = e_reg(e, RC_B32), atl = e_reg(e, RC_B32), in = e_reg(e, RC_PRED);
    INS(e, ADD_U32, R(il), R(s1.i), R(k->lane));
    INS(e, SETP_LT_U32, R(in), R(il), R(ns));
    INS(e, MAD_LO_U32, R(atl), R(k->lane), R(stride), R(s1.at));
    INS(e, MAD_WIDE_U32, R(a), R(atl), I(4), R(kc_ptr(k, "lse_part")));
    INS(e, MOV_F32, R(v), FI(INFINITY));   /* past the last split: as one without keys */
    INSP(e, in, 0, LD_GLOBAL_F32, R(v), A(a, 0));
    INS(e, SETP_EQ_F32, R(fin), R(v), FI(INFINITY));
    INS(e, SELP_F32, R(v), FI(-INFINITY), R(v), R(fin));
    INS(e, MAX_F32, R(m), R(m), R(v));
    split_loop_end(k, &s1, stride, 32);
    warp_allreduce(k, m, OP_MAX_F32);
    /* pass 2: the weights 2^((LSE_i - m) log2 e), 0 for a split without keys or past the last, and the weighted O */
    Reg sum = e_reg(e, RC_F32), none = e_reg(e, RC_PRED), mm = e_reg(e, RC_F32), lane_col = e_reg(e, RC_B32);
    Reg acc[8], x[COMBINE_UNROLL][8];
    for (int c = 0; c < cpl; c++) {
        acc[c] = e_reg(e, RC_F32);
        INS(e, MOV_F32, R(acc[c]), FI(0.0f));
    }
    INS(e, SETP_EQ_F32, R(none), R(m), FI(-INFINITY));
    INS(e, SELP_F32, R(mm), FI(0.0f), R(m), R(none));         /* no split saw the row: weights all 0 below */
    INS(e, MOV_F32, R(sum), FI(0.0f));
    INS(e, MUL_LO_U32, R(lane_col), R(k->lane), I(cpl));
    SplitLoop s2 = split_loop(k, first, kc_imm32(k, 0), stride);
    Reg w[COMBINE_UNROLL];
    for (int u = 0; u < COMBINE_UNROLL; u++) {   /* every load first, then the sums */
        Reg iu = e_reg(e, RC_B32), at = e_reg(e, RC_B32), in = e_reg(e, RC_PRED), col = e_reg(e, RC_B32);
        w[u] = e_reg(e, RC_F32);
        INS(e, ADD_U32, R(iu), R(s2.i), I(u));
        INS(e, SETP_LT_U32, R(in), R(iu), R(ns));
        INS(e, MAD_LO_U32, R(at), R(stride), I(u), R(s2.at));
        INS(e, MOV_F32, R(w[u]), FI(INFINITY));
        INS(e, MAD_WIDE_U32, R(a), R(at), I(4), R(kc_ptr(k, "lse_part")));
        INSP(e, in, 0, LD_GLOBAL_F32, R(w[u]), A(a, 0));
        INS(e, MAD_LO_U32, R(col), R(at), I(d->dv), R(lane_col));
        INS(e, MAD_WIDE_U32, R(a), R(col), I(4), R(kc_ptr(k, "o_part")));
        for (int c = 0; c < cpl; c += 2) {
            x[u][c] = e_reg(e, RC_F32), x[u][c + 1] = e_reg(e, RC_F32);
            INS(e, MOV_F32, R(x[u][c]), FI(0.0f));
            INS(e, MOV_F32, R(x[u][c + 1]), FI(0.0f));
            INSP(e, in, 0, LD_GLOBAL_V2_F32, V2(x[u][c], x[u][c + 1]), A(a, 4 * c));
        }
    }
    for (int u = 0; u < COMBINE_UNROLL; u++) {
        Reg inf = e_reg(e, RC_PRED);
        INS(e, SETP_EQ_F32, R(inf), R(w[u]), FI(INFINITY));
        INS(e, SUB_F32, R(w[u]), R(w[u]), R(mm));
        INS(e, MUL_F32, R(w[u]), R(w[u]), FI((float)M_LOG2E));
        INS(e, EX2_F32, R(w[u]), R(w[u]));
        INS(e, SELP_F32, R(w[u]), FI(0.0f), R(w[u]), R(inf));
        INS(e, ADD_F32, R(sum), R(sum), R(w[u]));
        for (int c = 0; c < cpl; c++) INS(e, FMA_F32, R(acc[c]), R(w[u]), R(x[u][c]), R(acc[c]));
    }
    split_loop_end(k, &s2, stride, COMBINE_UNROLL);
    /* O = acc / sum (0 without keys), LSE = m + ln sum (+inf without keys) */
    Reg inv = e_reg(e, RC_F32), lse = e_reg(e, RC_F32), out[4];
    INS(e, SELP_F32, R(sum), FI(1.0f), R(sum), R(none));
    INS(e, RCP_F32, R(inv), R(sum));
    for (int c = 0; c < cpl; c++) INS(e, MUL_F32, R(acc[c]), R(acc[c]), R(inv));
    INS(e, LG2_F32, R(lse), R(sum));
    INS(e, FMA_F32, R(lse), R(lse), FI((float)M_LN2), R(m));
    INS(e, SELP_F32, R(lse), FI(INFINITY), R(lse), R(none));
    Reg ob = e_reg(e, RC_B64);
    INS(e, MAD_WIDE_U32, R(ob), R(row), R(row_stride_bytes(k, "o")), R(head_base(k, "o", b, h)));
    INS(e, MUL_WIDE_U32, R(a), R(k->lane), I(2 * cpl));
    INS(e, ADD_U64, R(ob), R(ob), R(a));
    Op cvt = d->dtype == DT_FP16 ? OP_CVT_F16X2 : OP_CVT_BF16X2;
    for (int c = 0; c < cpl; c += 2) {
        out[0] = e_reg(e, RC_B32);
        e_insn(e, NOGUARD, 0, cvt, OPNDS(R(out[0]), R(acc[c + 1]), R(acc[c])));
        INS(e, ST_GLOBAL_B32, A(ob, 2 * c), R(out[0]));
    }
    Reg lead = e_reg(e, RC_PRED);
    INS(e, SETP_EQ_U32, R(lead), R(k->lane), I(0));
    INS(e, ADD_U32, R(i), R(stats_row(k, b, h)), R(row));
    INS(e, MAD_WIDE_U32, R(a), R(i), I(4), R(kc_ptr(k, "lse")));
    INSP(e, lead, 0, ST_GLOBAL_F32, A(a, 0), R(lse));
    e_place(e, done);
    kctx_finish(&kc, module);
}

void splitkv_build(const AttnDesc *d, KernelSet *ks, Buf *module) {
    static const char o_bytes[] = "b * num_splits * h_q * s_q * %d", meaning_o[] =
        "fp32 [b, num_splits, h_q, s_q, dv]: each split's normalized O rows, written by the forward, merged by the combine";
    WorkspaceSpec *w = &ks->ws[ks->nws++];
    *w = (WorkspaceSpec){"o_part", "", 0, meaning_o};
    snprintf(w->bytes, sizeof w->bytes, o_bytes, 4 * d->dv);
    ks->ws[ks->nws++] = (WorkspaceSpec){"lse_part", "b * num_splits * h_q * s_q * 4", 0,
                                        "fp32 [b, num_splits, h_q, s_q]: each split's LSE rows (+inf: the split saw no key)"};
    combine_spec(d, &ks->k[ks->nk]);
    ks->k[ks->nk].pdl = arch_has_pdl(d->arch);   /* launched as the main kernel's CTAs exit, as in bwd_set_build */
    buf_puts(module, "\n");
    combine_emit(d, &ks->k[ks->nk], module);
    ks->nk++;
}
