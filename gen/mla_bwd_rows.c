/* The row-wise kernels of mla_bwd:
 *   pre:      delta[t, h] = sum_c dO[t, h, c] * o[t, h, c]      (8 heads per CTA, 16 threads per head)
 *   convert:  dkv[r, :] = dkv_accum[r, :] rounded to the dtype  (16 kv rows per CTA, 8 threads per row)
 *   reduce:   deterministic dkv: for the CTA's 256 kv rows and column slice,
 *             every token in order, every slot in order, the slot's stored
 *             contributions (head blocks in order) added to its row. Each
 *             warp owns 32 of the rows and scans every token's indices, so no
 *             two warps touch one row and a row's sums happen in one order. */
#include "mla_bwd.h"
#include <stdio.h>

void mla_bwd_pre_emit(const AttnDesc *d, const KernelSpec *ks, Buf *module) {
    Kctx kc;
    Kctx *k = &kc;
    kctx_begin(k, ks);
    Emit *e = &k->e;
    int tpr = MLA_ROW_THREADS / MLA_PRE_HEADS, per = d->dv / 8 / tpr;   /* threads per head, chunks per thread */
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
    for (int i = 0; i < per; i++) {
        Reg a = e_reg(e, RC_B64), b = e_reg(e, RC_B64), x[4], y[4];
        INS(e, ADD_U64, R(a), R(ro), I(16 * tpr * i));
        INS(e, ADD_U64, R(b), R(rd), I(16 * tpr * i));
        ld16_global(k, x, a);
        ld16_global(k, y, b);
        INS(e, ADD_F32, R(sum), R(sum), R(dot8_packed(k, d->dtype, x, y)));
    }
    for (int m = tpr / 2; m >= 1; m >>= 1) {
        Reg o = e_reg(e, RC_F32);
        INS(e, SHFL_BFLY, R(o), R(sum), I(m), I(31), I(-1));
        INS(e, ADD_F32, R(sum), R(sum), R(o));
    }
    Reg lead = e_reg(e, RC_PRED), i = e_reg(e, RC_B32), a = e_reg(e, RC_B64);
    INSP(e, ok, 1, MOV_B32, R(part), I(1));                               /* past h_q: nobody stores */
    INS(e, SETP_EQ_U32, R(lead), R(part), I(0));
    INS(e, MAD_LO_U32, R(i), R(t), R(h_q), R(head));
    INS(e, MAD_WIDE_U32, R(a), R(i), I(4), R(kc_ptr(k, "delta")));
    INSP(e, lead, 0, ST_GLOBAL_F32, A(a, 0), R(sum));
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
    Reg src = e_reg(e, RC_B64), dst = e_reg(e, RC_B64), o32 = e_reg(e, RC_B32), o16 = e_reg(e, RC_B32);
    INS(e, MUL_LO_U32, R(o32), R(part), I(32));
    INS(e, MUL_LO_U32, R(o16), R(part), I(16));
    INS(e, MAD_WIDE_U32, R(src), R(row), I(4 * d->d), R(kc_ptr(k, "dkv_accum")));
    INS(e, MAD_WIDE_U32, R(src), R(o32), I(1), R(src));
    INS(e, MAD_WIDE_U32, R(dst), R(row), R(row_stride_bytes(k, "dkv")), R(kc_ptr(k, "dkv")));
    INS(e, MAD_WIDE_U32, R(dst), R(o16), I(1), R(dst));
    for (int i = 0; i < per; i++) {
        Reg f[8], out[4];
        for (int j = 0; j < 8; j++) f[j] = e_reg(e, RC_F32);
        INS(e, LD_GLOBAL_V4_B32, V4(f[0], f[1], f[2], f[3]), A(src, 32 * tpr * i));
        INS(e, LD_GLOBAL_V4_B32, V4(f[4], f[5], f[6], f[7]), A(src, 32 * tpr * i + 16));
        f32x8_pack(k, d->dtype, f, out);
        INS(e, ST_GLOBAL_V4_B32, A(dst, 16 * tpr * i), V4(out[0], out[1], out[2], out[3]));
    }
    e_place(e, done);
    kctx_finish(k, module);
}

/* The reduce kernel's per-thread state. */
typedef struct {
    const AttnDesc *d;
    int cols, lc;                     /* the CTA's slice width; columns per lane */
    Reg r0w, s_kv, topk, nhb;         /* first row of this warp */
    Reg acc;                          /* shared address of this lane's columns of the warp's row 0 */
    Reg part_lane;                    /* b64: dkv_part + 4 * (this lane's first column) */
} Reduce;

/* The slot's stored contributions (head blocks in order) added into the warp's row r. */
static void add_slot(Kctx *k, Reduce *rd, Reg t, Reg slot, Reg r) {
    Emit *e = &k->e;
    Reg sum[6], hb = e_reg(e, RC_B32), blk = e_reg(e, RC_B32), a = e_reg(e, RC_B64), p = e_reg(e, RC_PRED);
    for (int c = 0; c < rd->lc; c++) {
        sum[c] = e_reg(e, RC_F32);
        INS(e, MOV_F32, R(sum[c]), FI(0.0f));
    }
    INS(e, MOV_B32, R(hb), I(0));
    int top = e_label(e);
    e_place(e, top);
    INS(e, MAD_LO_U32, R(blk), R(t), R(rd->nhb), R(hb));
    INS(e, MAD_LO_U32, R(blk), R(blk), R(rd->topk), R(slot));
    INS(e, MAD_WIDE_U32, R(a), R(blk), I(4 * rd->d->d), R(rd->part_lane));
    for (int c = 0; c < rd->lc; c += 2) {
        Reg v[2] = {e_reg(e, RC_F32), e_reg(e, RC_F32)};
        INS(e, LD_GLOBAL_V2_F32, V2(v[0], v[1]), A(a, 4 * c));
        INS(e, ADD_F32, R(sum[c]), R(sum[c]), R(v[0]));
        INS(e, ADD_F32, R(sum[c + 1]), R(sum[c + 1]), R(v[1]));
    }
    INS(e, ADD_U32, R(hb), R(hb), I(1));
    INS(e, SETP_LT_U32, R(p), R(hb), R(rd->nhb));
    INSP(e, p, 0, BRA_UNI, L(top));
    Reg sa = e_reg(e, RC_B32);
    INS(e, MAD_LO_U32, R(sa), R(r), I(4 * rd->cols), R(rd->acc));
    for (int c = 0; c < rd->lc; c += 2) {
        Reg v[2] = {e_reg(e, RC_F32), e_reg(e, RC_F32)};
        INS(e, LD_SHARED_V2_F32, V2(v[0], v[1]), A(sa, 4 * c));
        INS(e, ADD_F32, R(v[0]), R(v[0]), R(sum[c]));
        INS(e, ADD_F32, R(v[1]), R(v[1]), R(sum[c + 1]));
        INS(e, ST_SHARED_V2_F32, A(sa, 4 * c), V2(v[0], v[1]));
    }
}

/* Slots [c, min(c + MLA_REDUCE_PIECE, eff)) of token t (eff: the token's selected slots), their rows in shared memory
 * at idx_s (slot c first): 32 at a time, lane l reading slot q + l for q = c, c + 32, ..; the slots whose row is this
 * warp's are added one after another in slot order. */
static void scan_piece(Kctx *k, Reduce *rd, Reg t, Reg idx_s, Reg eff, Reg c) {
    Emit *e = &k->e;
    Reg q = e_reg(e, RC_B32), j = e_reg(e, RC_B32), more = e_reg(e, RC_PRED), idx = e_reg(e, RC_B32), a = e_reg(e, RC_B32);
    Reg rel = e_reg(e, RC_B32), mine = e_reg(e, RC_PRED), valid = e_reg(e, RC_PRED), mask = e_reg(e, RC_B32);
    Reg end = e_reg(e, RC_B32);
    int group = e_label(e), groups_end = e_label(e);
    INS(e, ADD_U32, R(end), R(c), I(MLA_REDUCE_PIECE));
    INS(e, MIN_U32, R(end), R(end), R(eff));                           /* the piece's selected slots */
    INS(e, MOV_B32, R(q), R(c));
    e_place(e, group);
    INS(e, SETP_LT_U32, R(more), R(q), R(end));
    INSP(e, more, 1, BRA_UNI, L(groups_end));
    INS(e, SUB_U32, R(j), R(q), R(c));
    INS(e, ADD_U32, R(j), R(j), R(k->lane));
    INS(e, MAD_LO_U32, R(a), R(j), I(4), R(idx_s));
    INS(e, LD_SHARED_B32, R(idx), A(a, 0));                            /* -1 past the token's selected slots */
    INS(e, SUB_U32, R(rel), R(idx), R(rd->r0w));
    INS(e, SETP_LT_U32, R(valid), R(idx), R(rd->s_kv));
    INSP(e, valid, 1, MOV_B32, R(rel), I(32));                          /* invalid: nobody's row */
    INS(e, SETP_LT_U32, R(mine), R(rel), I(32));
    INS(e, VOTE_BALLOT, R(mask), R(mine), I(-1));
    int top = e_label(e), done = e_label(e);
    e_place(e, top);
    Reg none = e_reg(e, RC_PRED), b = e_reg(e, RC_B32), r = e_reg(e, RC_B32), slot = e_reg(e, RC_B32);
    INS(e, SETP_EQ_U32, R(none), R(mask), I(0));
    INSP(e, none, 0, BRA_UNI, L(done));
    INS(e, BREV_B32, R(b), R(mask));
    INS(e, CLZ_B32, R(b), R(b));                                        /* the lowest set lane: the next slot */
    Reg m1 = e_reg(e, RC_B32);
    INS(e, SUB_U32, R(m1), R(mask), I(1));
    INS(e, AND_B32, R(mask), R(mask), R(m1));
    INS(e, SHFL_IDX, R(r), R(rel), R(b), I(31), I(-1));
    INS(e, ADD_U32, R(slot), R(q), R(b));
    add_slot(k, rd, t, slot, r);
    INS(e, BRA_UNI, L(top));
    e_place(e, done);
    INS(e, ADD_U32, R(q), R(q), I(32));
    INS(e, BRA_UNI, L(group));
    e_place(e, groups_end);
}

/* The CTA's threads' share of the piece of token t from slot c (eff selected): thread i holds slots c + i + 256 j,
 * -1 past eff, in v[j]. */
static void load_piece(Kctx *k, Reg t, Reg c, Reg eff, Reg *v) {
    Emit *e = &k->e;
    Reg row = e_reg(e, RC_B64), t64 = e_reg(e, RC_B64);
    INS(e, CVT_U64_U32, R(t64), R(t));
    INS(e, MUL_LO_U64, R(t64), R(t64), R(kc_u64(k, "indices_stride_s")));
    INS(e, MUL_LO_U64, R(t64), R(t64), I(4));
    INS(e, ADD_U64, R(row), R(t64), R(kc_ptr(k, "indices")));
    for (int i = 0; i < MLA_REDUCE_PER_THREAD; i++) {
        Reg j = e_reg(e, RC_B32), in = e_reg(e, RC_PRED), a = e_reg(e, RC_B64);
        INS(e, ADD_U32, R(j), R(c), R(k->tid));
        INS(e, ADD_U32, R(j), R(j), I(32 * MLA_REDUCE_WARPS * i));
        INS(e, SETP_LT_U32, R(in), R(j), R(eff));
        INS(e, MOV_B32, R(v[i]), I(-1));
        INS(e, MAD_WIDE_U32, R(a), R(j), I(4), R(row));
        INSP(e, in, 0, LD_GLOBAL_NC_B32, R(v[i]), A(a, 0));
    }
}

static void reduce_setup(Kctx *k, Reduce *rd, const Plan *p) {
    Emit *e = &k->e;
    Reg x = e_reg(e, RC_B32), col = e_reg(e, RC_B32), h_q = kc_u32(k, "h_q");
    rd->s_kv = kc_u32(k, "s_kv"), rd->topk = kc_u32(k, "topk");
    rd->r0w = e_reg(e, RC_B32), rd->nhb = e_reg(e, RC_B32), rd->acc = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(x), SR("%ctaid.x"));
    INS(e, MUL_LO_U32, R(x), R(x), I(MLA_REDUCE_ROWS));
    INS(e, MAD_LO_U32, R(rd->r0w), R(k->warp), I(32), R(x));
    INS(e, ADD_U32, R(rd->nhb), R(h_q), I(rd->d->tile.bm - 1));
    INS(e, DIV_U32, R(rd->nhb), R(rd->nhb), I(rd->d->tile.bm));
    INS(e, MUL_LO_U32, R(x), R(k->lane), I(4 * rd->lc));
    INS(e, ADD_U32, R(x), R(x), R(k->smem));
    INS(e, MAD_LO_U32, R(rd->acc), R(k->warp), I(32 * 4 * rd->cols), R(x));
    INS(e, ADD_U32, R(rd->acc), R(rd->acc), I(plan_region(p, "dkv")));
    INS(e, MOV_B32, R(col), SR("%ctaid.y"));
    INS(e, MUL_LO_U32, R(col), R(col), I(rd->cols));
    INS(e, MAD_LO_U32, R(col), R(k->lane), I(rd->lc), R(col));
    rd->part_lane = e_reg(e, RC_B64);
    INS(e, MAD_WIDE_U32, R(rd->part_lane), R(col), I(4), R(kc_ptr(k, "dkv_part")));
}

/* The warp's 32 rows, rounded, to dkv (rows past s_kv skipped). */
static void reduce_store(Kctx *k, Reduce *rd) {
    Emit *e = &k->e;
    Reg col = e_reg(e, RC_B32), base = kc_ptr(k, "dkv"), rs = row_stride_bytes(k, "dkv");
    INS(e, MOV_B32, R(col), SR("%ctaid.y"));
    INS(e, MUL_LO_U32, R(col), R(col), I(rd->cols));
    INS(e, MAD_LO_U32, R(col), R(k->lane), I(rd->lc), R(col));
    INS(e, MAD_WIDE_U32, R(base), R(col), I(2), R(base));
    Op cvt = rd->d->dtype == DT_FP16 ? OP_CVT_F16X2 : OP_CVT_BF16X2;
    for (int i = 0; i < 32; i++) {
        Reg row = e_reg(e, RC_B32), p = e_reg(e, RC_PRED), a = e_reg(e, RC_B64);
        INS(e, ADD_U32, R(row), R(rd->r0w), I(i));
        INS(e, SETP_LT_U32, R(p), R(row), R(rd->s_kv));
        INS(e, MAD_WIDE_U32, R(a), R(row), R(rs), R(base));
        for (int c = 0; c < rd->lc; c += 2) {
            Reg v[2] = {e_reg(e, RC_F32), e_reg(e, RC_F32)}, w = e_reg(e, RC_B32);
            INS(e, LD_SHARED_V2_F32, V2(v[0], v[1]), A(rd->acc, 4 * (i * rd->cols + c)));
            e_insn(e, NOGUARD, 0, cvt, OPNDS(R(w), R(v[1]), R(v[0])));
            INSP(e, p, 0, ST_GLOBAL_B32, A(a, 2 * c), R(w));
        }
    }
}

void mla_bwd_reduce_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module) {
    Kctx kc;
    Kctx *k = &kc;
    kctx_begin(k, ks);
    Emit *e = &k->e;
    Reduce rd = {.d = d, .cols = mla_reduce_cols(d->arch)};
    rd.lc = rd.cols / 32;
    reduce_setup(k, &rd, p);
    Reg z = kc_imm32(k, 0);
    for (int i = 0; i < 32; i++)
        for (int c = 0; c < rd.lc; c += 2) INS(e, ST_SHARED_V2_F32, A(rd.acc, 4 * (i * rd.cols + c)), V2(z, z));
    /* every token in order, its selected rows a piece at a time: the CTA loads a piece into shared memory (the next
     * one's loads run under this one's scan), and every warp scans it for its own rows: the indices are read once a
     * CTA, not once a warp, and their loads are not in the scan's way */
    e_comment(e, "every token in order, a piece of its slots at a time");
    Reg t = e_reg(e, RC_B32), c = e_reg(e, RC_B32), eff = e_reg(e, RC_B32), s_q = kc_u32(k, "s_q"), more = e_reg(e, RC_PRED);
    Reg v[MLA_REDUCE_PER_THREAD], idx_s = e_reg(e, RC_B32), st = e_reg(e, RC_B32);
    for (int i = 0; i < MLA_REDUCE_PER_THREAD; i++) v[i] = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(idx_s), R(k->smem), I(plan_region(p, "indices")));
    INS(e, MAD_LO_U32, R(st), R(k->tid), I(4), R(idx_s));
    int piece = e_label(e), pieces_end = e_label(e), same = e_label(e), fetch = e_label(e);
    INS(e, MOV_B32, R(t), I(0));
    INS(e, MOV_B32, R(c), I(0));
    INS(e, SETP_LT_U32, R(more), R(t), R(s_q));
    INSP(e, more, 1, BRA_UNI, L(pieces_end));
    INS(e, MOV_B32, R(eff), R(mla_token_slots(k, t, rd.topk)));
    load_piece(k, t, c, eff, v);
    e_place(e, piece);
    INS(e, BAR_SYNC, I(0));                                             /* every warp scanned the last piece */
    for (int i = 0; i < MLA_REDUCE_PER_THREAD; i++) INS(e, ST_SHARED_B32, A(st, 4 * 32 * MLA_REDUCE_WARPS * i), R(v[i]));
    INS(e, BAR_SYNC, I(0));                                             /* the piece is in */
    Reg nt = e_reg(e, RC_B32), nc = e_reg(e, RC_B32), neff = e_reg(e, RC_B32), p2 = e_reg(e, RC_PRED);
    INS(e, MOV_B32, R(nt), R(t));
    INS(e, MOV_B32, R(neff), R(eff));
    INS(e, ADD_U32, R(nc), R(c), I(MLA_REDUCE_PIECE));
    INS(e, SETP_LT_U32, R(p2), R(nc), R(eff));
    INSP(e, p2, 0, BRA_UNI, L(same));                                   /* the token's next piece, or the next token */
    INS(e, ADD_U32, R(nt), R(t), I(1));
    INS(e, MOV_B32, R(nc), I(0));
    INS(e, SETP_LT_U32, R(p2), R(nt), R(s_q));
    INSP(e, p2, 1, BRA_UNI, L(fetch));
    INS(e, MOV_B32, R(neff), R(mla_token_slots(k, nt, rd.topk)));
    e_place(e, same);
    load_piece(k, nt, nc, neff, v);
    e_place(e, fetch);
    scan_piece(k, &rd, t, idx_s, eff, c);
    INS(e, MOV_B32, R(t), R(nt));
    INS(e, MOV_B32, R(c), R(nc));
    INS(e, MOV_B32, R(eff), R(neff));
    INS(e, SETP_LT_U32, R(more), R(t), R(s_q));
    INSP(e, more, 0, BRA_UNI, L(piece));
    e_place(e, pieces_end);
    reduce_store(k, &rd);
    kctx_finish(k, module);
}
