/* The row-wise kernels of mla_bwd:
 *   pre:      delta[t, h] = sum_c dO[t, h, c] * o[t, h, c]      (8 heads per CTA, 16 threads per head)
 *   convert:  dkv[r, :] = dkv_accum[r, :] rounded to the dtype  (16 kv rows per CTA, 8 threads per row);
 *             deterministic: dkv[r, :] = the reduce's MLA_REDUCE_SPLIT range sums dkv_split[z, r, :]
 *             added in z order, rounded
 *   reduce:   deterministic dkv: for the CTA's 256 kv rows, column slice and
 *             range z of the tokens, every token of the range in order,
 *             every slot in order, the slot's stored contributions (head
 *             blocks in order) added to its row, the sums to dkv_split[z].
 *             Each warp owns 32 of the rows and scans every token's indices,
 *             so no two warps touch one row and a row's sums happen in one
 *             order whatever the schedule. Each warp loads the indices into
 *             its registers a piece at a time (no barrier ties the warps'
 *             paces), lists the slots that are its rows in shared memory, and
 *             loads their contributions a batch at a time. */
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
    const char *from = d->tile.deterministic ? "dkv_split" : "dkv_accum";
    Reg range = {0};   /* deterministic: the bytes between two token ranges' sums */
    if (d->tile.deterministic) {
        range = e_reg(e, RC_B64);
        INS(e, MUL_WIDE_U32, R(range), R(kc_u32(k, "s_kv")), I(4 * d->d));
    }
    INS(e, MAD_WIDE_U32, R(src), R(row), I(4 * d->d), R(kc_ptr(k, from)));
    INS(e, MAD_WIDE_U32, R(src), R(o32), I(1), R(src));
    INS(e, MAD_WIDE_U32, R(dst), R(row), R(row_stride_bytes(k, "dkv")), R(kc_ptr(k, "dkv")));
    INS(e, MAD_WIDE_U32, R(dst), R(o16), I(1), R(dst));
    for (int i = 0; i < per; i++) {
        Reg f[8], out[4];
        for (int j = 0; j < 8; j++) f[j] = e_reg(e, RC_F32);
        INS(e, LD_GLOBAL_V4_B32, V4(f[0], f[1], f[2], f[3]), A(src, 32 * tpr * i));
        INS(e, LD_GLOBAL_V4_B32, V4(f[4], f[5], f[6], f[7]), A(src, 32 * tpr * i + 16));
        if (d->tile.deterministic) {   /* the later token ranges' sums, added in range order */
            Reg a = e_reg(e, RC_B64);
            INS(e, MOV_B64, R(a), R(src));
            for (int z = 1; z < MLA_REDUCE_SPLIT; z++) {
                Reg g[8];
                for (int j = 0; j < 8; j++) g[j] = e_reg(e, RC_F32);
                INS(e, ADD_U64, R(a), R(a), R(range));
                INS(e, LD_GLOBAL_V4_B32, V4(g[0], g[1], g[2], g[3]), A(a, 32 * tpr * i));
                INS(e, LD_GLOBAL_V4_B32, V4(g[4], g[5], g[6], g[7]), A(a, 32 * tpr * i + 16));
                for (int j = 0; j < 8; j++) INS(e, ADD_F32, R(f[j]), R(f[j]), R(g[j]));
            }
        }
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
    Reg lim;                          /* the warp's rows below s_kv: min(MLA_REDUCE_WARP_ROWS, max(s_kv - r0w, 0)) */
    Reg acc;                          /* shared address of this lane's columns of the warp's row 0 */
    Reg part_lane;                    /* b64: dkv_part + 4 * (this lane's first column) */
} Reduce;

/* Entries [i, i + MLA_REDUCE_BATCH) of the warp's match list (n of them) at shared address list, each {the slot's
 * first dkv_part row, the warp's row}: each slot's stored contributions (head blocks in order) summed, then added to
 * the warp's row, one entry after another. The batch's loads are all in flight at once: one match a time kept a
 * warp to one outstanding load, and the reduce's reads of dkv_part to about 0.6 TB/s. */
static void add_batch(Kctx *k, Reduce *rd, Reg list, Reg i, Reg n) {
    Emit *e = &k->e;
    enum { B = MLA_REDUCE_BATCH };
    Reg sum[B][6], blk0[B], row[B], in[B], hb = e_reg(e, RC_B32), p = e_reg(e, RC_PRED);
    for (int u = 0; u < B; u++) {
        Reg j = e_reg(e, RC_B32), a = e_reg(e, RC_B32);
        blk0[u] = e_reg(e, RC_B32), row[u] = e_reg(e, RC_B32), in[u] = e_reg(e, RC_PRED);
        INS(e, ADD_U32, R(j), R(i), I(u));
        INS(e, SETP_LT_U32, R(in[u]), R(j), R(n));
        INS(e, MAD_LO_U32, R(a), R(j), I(8), R(list));
        INS(e, MOV_B32, R(blk0[u]), I(0));
        INS(e, MOV_B32, R(row[u]), I(0));
        INSP(e, in[u], 0, LD_SHARED_V2_B32, V2(blk0[u], row[u]), A(a, 0));
        for (int c = 0; c < rd->lc; c++) {
            sum[u][c] = e_reg(e, RC_F32);
            INS(e, MOV_F32, R(sum[u][c]), FI(0.0f));
        }
    }
    INS(e, MOV_B32, R(hb), I(0));
    int top = e_label(e);
    e_place(e, top);
    Reg hoff = e_reg(e, RC_B32);
    INS(e, MUL_LO_U32, R(hoff), R(hb), R(rd->topk));
    Reg v[B][6];
    for (int u = 0; u < B; u++) {   /* every load of the batch first */
        Reg blk = e_reg(e, RC_B32), a = e_reg(e, RC_B64);
        INS(e, ADD_U32, R(blk), R(blk0[u]), R(hoff));
        INS(e, MAD_WIDE_U32, R(a), R(blk), I(4 * rd->d->d), R(rd->part_lane));
        for (int c = 0; c < rd->lc; c += 2) {
            v[u][c] = e_reg(e, RC_F32), v[u][c + 1] = e_reg(e, RC_F32);
            INS(e, MOV_F32, R(v[u][c]), FI(0.0f));
            INS(e, MOV_F32, R(v[u][c + 1]), FI(0.0f));
            INSP(e, in[u], 0, LD_GLOBAL_V2_F32, V2(v[u][c], v[u][c + 1]), A(a, 4 * c));
        }
    }
    for (int u = 0; u < B; u++)
        for (int c = 0; c < rd->lc; c++) INS(e, ADD_F32, R(sum[u][c]), R(sum[u][c]), R(v[u][c]));
    INS(e, ADD_U32, R(hb), R(hb), I(1));
    INS(e, SETP_LT_U32, R(p), R(hb), R(rd->nhb));
    INSP(e, p, 0, BRA_UNI, L(top));
    for (int u = 0; u < B; u++) {   /* then the rows' sums, in the list's (token, slot) order */
        Reg sa = e_reg(e, RC_B32);
        int skip = e_label(e);
        INSP(e, in[u], 1, BRA_UNI, L(skip));
        INS(e, MAD_LO_U32, R(sa), R(row[u]), I(4 * rd->cols), R(rd->acc));
        for (int c = 0; c < rd->lc; c += 2) {
            Reg w[2] = {e_reg(e, RC_F32), e_reg(e, RC_F32)};
            INS(e, LD_SHARED_V2_F32, V2(w[0], w[1]), A(sa, 4 * c));
            INS(e, ADD_F32, R(w[0]), R(w[0]), R(sum[u][c]));
            INS(e, ADD_F32, R(w[1]), R(w[1]), R(sum[u][c + 1]));
            INS(e, ST_SHARED_V2_F32, A(sa, 4 * c), V2(w[0], w[1]));
        }
        e_place(e, skip);
    }
}

/* The warp's whole batches of its list (n entries at list), in order; the fewer than MLA_REDUCE_BATCH left over move
 * to the list's front and n becomes their count, so every batch but the kernel's last is full whatever the pieces
 * hold. With `all`, the leftover too (the last tokens). */
static void drain_list(Kctx *k, Reduce *rd, Reg list, Reg n, int all) {
    Emit *e = &k->e;
    Reg i = e_reg(e, RC_B32), more = e_reg(e, RC_PRED), left = e_reg(e, RC_B32);
    int batch = e_label(e), batches_end = e_label(e);
    INS(e, BAR_WARP_SYNC, I(-1));                                      /* the list is in */
    INS(e, MOV_B32, R(i), I(0));
    e_place(e, batch);
    if (all) INS(e, SETP_LT_U32, R(more), R(i), R(n));
    else {   /* whole batches only: i <= n throughout */
        INS(e, SUB_U32, R(left), R(n), R(i));
        INS(e, SETP_GE_U32, R(more), R(left), I(MLA_REDUCE_BATCH));
    }
    INSP(e, more, 1, BRA_UNI, L(batches_end));
    add_batch(k, rd, list, i, n);
    INS(e, ADD_U32, R(i), R(i), I(MLA_REDUCE_BATCH));
    INS(e, BRA_UNI, L(batch));
    e_place(e, batches_end);
    if (all) return;
    /* the leftover [i, n) to [0, n - i): i is 0 or at least MLA_REDUCE_BATCH > n - i, so the two never overlap */
    INS(e, BAR_WARP_SYNC, I(-1));                                      /* the batches' reads of the list are done */
    Reg lo = e_reg(e, RC_B32), hi = e_reg(e, RC_B32), a = e_reg(e, RC_B32), mv = e_reg(e, RC_PRED);
    Reg moved = e_reg(e, RC_PRED);
    INS(e, SETP_LT_U32, R(mv), R(k->lane), R(left));
    INS(e, SETP_NE_U32, R(moved), R(i), I(0));
    INS(e, AND_PRED, R(mv), R(mv), R(moved));
    INS(e, ADD_U32, R(a), R(i), R(k->lane));
    INS(e, MAD_LO_U32, R(a), R(a), I(8), R(list));
    INSP(e, mv, 0, LD_SHARED_V2_B32, V2(lo, hi), A(a, 0));
    INS(e, MAD_LO_U32, R(a), R(k->lane), I(8), R(list));
    INSP(e, mv, 0, ST_SHARED_V2_B32, A(a, 0), V2(lo, hi));
    INS(e, MOV_B32, R(n), R(left));
    INS(e, BAR_WARP_SYNC, I(-1));                                      /* read before the next piece's entries */
}

/* Slots [c, min(c + MLA_REDUCE_PIECE, eff)) of token t (eff: the token's selected slots), their rows in v (lane l:
 * slot c + 32 g + l in v[g]): 32 at a time, the slots whose row is this warp's appended to the warp's list at `list`
 * (n entries, slot order), whose whole batches are added every MLA_REDUCE_SCAN slots (the list's room). */
static void scan_piece(Kctx *k, Reduce *rd, Reg t, const Reg *v, Reg list, Reg n, Reg eff, Reg c) {
    Emit *e = &k->e;
    Reg end = e_reg(e, RC_B32), tb = e_reg(e, RC_B32), more = e_reg(e, RC_PRED), base = e_reg(e, RC_B32);
    int groups_end = e_label(e);
    enum { EXIT_GROUPS = 8 };   /* groups of 32 slots between two checks for the piece's end */
    INS(e, ADD_U32, R(end), R(c), I(MLA_REDUCE_PIECE));
    INS(e, MIN_U32, R(end), R(end), R(eff));                           /* the piece's selected slots */
    INS(e, MUL_LO_U32, R(tb), R(t), R(rd->nhb));
    INS(e, MUL_LO_U32, R(tb), R(tb), R(rd->topk));                     /* token t's first dkv_part row */
    INS(e, ADD_U32, R(base), R(tb), R(c));
    INS(e, ADD_U32, R(base), R(base), R(k->lane));                     /* this lane's slot c's dkv_part row */
    for (int g = 0; g < MLA_REDUCE_PER_LANE; g++) {
        Reg rel = e_reg(e, RC_B32), mine = e_reg(e, RC_PRED), none = e_reg(e, RC_PRED), mask = e_reg(e, RC_B32);
        int next = e_label(e);
        if (g > 0 && g % (MLA_REDUCE_SCAN / 32) == 0) drain_list(k, rd, list, n, 0);
        if (g % EXIT_GROUPS == 0) {   /* a short token (topk_length) stops early; past eff v is -1, nobody's row */
            Reg q = e_reg(e, RC_B32);
            INS(e, ADD_U32, R(q), R(c), I(32 * g));
            INS(e, SETP_LT_U32, R(more), R(q), R(end));
            INSP(e, more, 1, BRA_UNI, L(groups_end));
        }
        /* most groups of 32 slots hold none of the warp's 32 rows (of s_kv): the ballot alone, then the next */
        INS(e, SUB_U32, R(rel), R(v[g]), R(rd->r0w));
        INS(e, SETP_LT_U32, R(mine), R(rel), R(rd->lim));
        INS(e, VOTE_BALLOT, R(mask), R(mine), I(-1));
        INS(e, SETP_EQ_U32, R(none), R(mask), I(0));
        INSP(e, none, 0, BRA_UNI, L(next));
        Reg below = e_reg(e, RC_B32), a = e_reg(e, RC_B32), x = e_reg(e, RC_B32);
        INS(e, MOV_B32, R(below), SR("%lanemask_lt"));
        INS(e, AND_B32, R(below), R(below), R(mask));
        INS(e, POPC_B32, R(below), R(below));
        INS(e, ADD_U32, R(below), R(below), R(n));
        INS(e, MAD_LO_U32, R(a), R(below), I(8), R(list));
        INS(e, ADD_U32, R(x), R(base), I(32 * g));
        INSP(e, mine, 0, ST_SHARED_V2_B32, A(a, 0), V2(x, rel));
        INS(e, POPC_B32, R(mask), R(mask));
        INS(e, ADD_U32, R(n), R(n), R(mask));
        e_place(e, next);
    }
    e_place(e, groups_end);
    drain_list(k, rd, list, n, 0);
}

/* The warp's piece of token t from slot c (eff selected): lane l holds slot c + 32 g + l in v[g], -1 past eff. Every
 * warp loads the indices itself (the CTA's other warps read the same lines, from L1), so no barrier ties one warp's
 * pace to another's: a warp whose rows matched more slots of a piece is not waited for. */
static void load_piece(Kctx *k, Reg t, Reg c, Reg eff, Reg *v) {
    Emit *e = &k->e;
    Reg row = e_reg(e, RC_B64), t64 = e_reg(e, RC_B64);
    INS(e, CVT_U64_U32, R(t64), R(t));
    INS(e, MUL_LO_U64, R(t64), R(t64), R(kc_u64(k, "indices_stride_s")));
    INS(e, MUL_LO_U64, R(t64), R(t64), I(4));
    INS(e, ADD_U64, R(row), R(t64), R(kc_ptr(k, "indices")));
    for (int g = 0; g < MLA_REDUCE_PER_LANE; g++) {
        Reg j = e_reg(e, RC_B32), in = e_reg(e, RC_PRED), a = e_reg(e, RC_B64);
        INS(e, ADD_U32, R(j), R(c), R(k->lane));
        INS(e, ADD_U32, R(j), R(j), I(32 * g));
        INS(e, SETP_LT_U32, R(in), R(j), R(eff));
        INS(e, MOV_B32, R(v[g]), I(-1));
        INS(e, MAD_WIDE_U32, R(a), R(j), I(4), R(row));
        INSP(e, in, 0, LD_GLOBAL_NC_B32, R(v[g]), A(a, 0));
    }
}

static void reduce_setup(Kctx *k, Reduce *rd, const Plan *p) {
    Emit *e = &k->e;
    Reg x = e_reg(e, RC_B32), col = e_reg(e, RC_B32), h_q = kc_u32(k, "h_q");
    rd->s_kv = kc_u32(k, "s_kv"), rd->topk = kc_u32(k, "topk");
    rd->r0w = e_reg(e, RC_B32), rd->nhb = e_reg(e, RC_B32), rd->acc = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(x), SR("%ctaid.x"));
    INS(e, MUL_LO_U32, R(x), R(x), I(MLA_REDUCE_ROWS));
    INS(e, MAD_LO_U32, R(rd->r0w), R(k->warp), I(MLA_REDUCE_WARP_ROWS), R(x));
    rd->lim = e_reg(e, RC_B32);   /* an index is the warp's row iff index - r0w < lim (unsigned): no invalid one is */
    INS(e, SUB_S32, R(rd->lim), R(rd->s_kv), R(rd->r0w));
    INS(e, MIN_S32, R(rd->lim), R(rd->lim), I(MLA_REDUCE_WARP_ROWS));
    INS(e, MAX_S32, R(rd->lim), R(rd->lim), I(0));
    INS(e, ADD_U32, R(rd->nhb), R(h_q), I(rd->d->tile.bm - 1));
    INS(e, DIV_U32, R(rd->nhb), R(rd->nhb), I(rd->d->tile.bm));
    INS(e, MUL_LO_U32, R(x), R(k->lane), I(4 * rd->lc));
    INS(e, ADD_U32, R(x), R(x), R(k->smem));
    INS(e, MAD_LO_U32, R(rd->acc), R(k->warp), I(MLA_REDUCE_WARP_ROWS * 4 * rd->cols), R(x));
    INS(e, ADD_U32, R(rd->acc), R(rd->acc), I(plan_region(p, "dkv")));
    INS(e, MOV_B32, R(col), SR("%ctaid.y"));
    INS(e, MUL_LO_U32, R(col), R(col), I(rd->cols));
    INS(e, MAD_LO_U32, R(col), R(k->lane), I(rd->lc), R(col));
    rd->part_lane = e_reg(e, RC_B64);
    INS(e, MAD_WIDE_U32, R(rd->part_lane), R(col), I(4), R(kc_ptr(k, "dkv_part")));
}

/* The warp's rows' sums over the CTA's token range z to dkv_split[z] (rows past s_kv skipped). */
static void reduce_store(Kctx *k, Reduce *rd, Reg z) {
    Emit *e = &k->e;
    Reg col = e_reg(e, RC_B32), base = e_reg(e, RC_B64), zr = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(col), SR("%ctaid.y"));
    INS(e, MUL_LO_U32, R(col), R(col), I(rd->cols));
    INS(e, MAD_LO_U32, R(col), R(k->lane), I(rd->lc), R(col));
    INS(e, MUL_WIDE_U32, R(base), R(col), I(4));
    INS(e, ADD_U64, R(base), R(base), R(kc_ptr(k, "dkv_split")));
    INS(e, MUL_LO_U32, R(zr), R(z), R(rd->s_kv));                     /* range z's first row */
    for (int i = 0; i < MLA_REDUCE_WARP_ROWS; i++) {
        Reg row = e_reg(e, RC_B32), p = e_reg(e, RC_PRED), a = e_reg(e, RC_B64), zrow = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(row), R(rd->r0w), I(i));
        INS(e, SETP_LT_U32, R(p), R(row), R(rd->s_kv));
        INS(e, ADD_U32, R(zrow), R(zr), R(row));
        INS(e, MAD_WIDE_U32, R(a), R(zrow), I(4 * rd->d->d), R(base));
        for (int c = 0; c < rd->lc; c += 2) {
            Reg v[2] = {e_reg(e, RC_F32), e_reg(e, RC_F32)};
            INS(e, LD_SHARED_V2_F32, V2(v[0], v[1]), A(rd->acc, 4 * (i * rd->cols + c)));
            INSP(e, p, 0, ST_GLOBAL_V2_F32, A(a, 4 * c), V2(v[0], v[1]));
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
    Reg zero = kc_imm32(k, 0);
    for (int i = 0; i < MLA_REDUCE_WARP_ROWS; i++)
        for (int c = 0; c < rd.lc; c += 2) INS(e, ST_SHARED_V2_F32, A(rd.acc, 4 * (i * rd.cols + c)), V2(zero, zero));
    /* every token in order, its selected rows a piece at a time: each warp loads the next piece's indices into its
     * registers under this one's scan, and keeps the slots that are its rows in its list */
    e_comment(e, "every token in order, a piece of its slots at a time");
    Reg t = e_reg(e, RC_B32), c = e_reg(e, RC_B32), eff = e_reg(e, RC_B32), s_q = kc_u32(k, "s_q"), more = e_reg(e, RC_PRED);
    Reg v[MLA_REDUCE_PER_LANE], w[MLA_REDUCE_PER_LANE];
    for (int i = 0; i < MLA_REDUCE_PER_LANE; i++) v[i] = e_reg(e, RC_B32), w[i] = e_reg(e, RC_B32);
    Reg list = e_reg(e, RC_B32);
    INS(e, MAD_LO_U32, R(list), R(k->warp), I(8 * MLA_REDUCE_LIST), R(k->smem));
    INS(e, ADD_U32, R(list), R(list), I(plan_region(p, "matches")));
    Reg n = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(n), I(0));                                        /* the list's entries */
    int piece = e_label(e), pieces_end = e_label(e), same = e_label(e), fetch = e_label(e);
    Reg z = e_reg(e, RC_B32), t_end = e_reg(e, RC_B32);   /* the CTA's tokens: [z s_q / SPLIT, (z + 1) s_q / SPLIT) */
    INS(e, MOV_B32, R(z), SR("%ctaid.z"));
    INS(e, MUL_LO_U32, R(t), R(z), R(s_q));
    INS(e, DIV_U32, R(t), R(t), I(MLA_REDUCE_SPLIT));
    INS(e, MAD_LO_U32, R(t_end), R(z), R(s_q), R(s_q));
    INS(e, DIV_U32, R(t_end), R(t_end), I(MLA_REDUCE_SPLIT));
    INS(e, MOV_B32, R(c), I(0));
    INS(e, SETP_LT_U32, R(more), R(t), R(t_end));
    INSP(e, more, 1, BRA_UNI, L(pieces_end));
    INS(e, MOV_B32, R(eff), R(mla_token_slots(k, t, rd.topk)));
    load_piece(k, t, c, eff, v);
    e_place(e, piece);
    Reg nt = e_reg(e, RC_B32), nc = e_reg(e, RC_B32), neff = e_reg(e, RC_B32), p2 = e_reg(e, RC_PRED);
    INS(e, MOV_B32, R(nt), R(t));
    INS(e, MOV_B32, R(neff), R(eff));
    INS(e, ADD_U32, R(nc), R(c), I(MLA_REDUCE_PIECE));
    INS(e, SETP_LT_U32, R(p2), R(nc), R(eff));
    INSP(e, p2, 0, BRA_UNI, L(same));                                   /* the token's next piece, or the next token */
    INS(e, ADD_U32, R(nt), R(t), I(1));
    INS(e, MOV_B32, R(nc), I(0));
    INS(e, SETP_LT_U32, R(p2), R(nt), R(t_end));
    INSP(e, p2, 1, BRA_UNI, L(fetch));
    INS(e, MOV_B32, R(neff), R(mla_token_slots(k, nt, rd.topk)));
    e_place(e, same);
    load_piece(k, nt, nc, neff, w);
    e_place(e, fetch);
    scan_piece(k, &rd, t, v, list, n, eff, c);
    for (int i = 0; i < MLA_REDUCE_PER_LANE; i++) INS(e, MOV_B32, R(v[i]), R(w[i]));
    INS(e, MOV_B32, R(t), R(nt));
    INS(e, MOV_B32, R(c), R(nc));
    INS(e, MOV_B32, R(eff), R(neff));
    INS(e, SETP_LT_U32, R(more), R(t), R(t_end));
    INSP(e, more, 0, BRA_UNI, L(piece));
    e_place(e, pieces_end);
    drain_list(k, &rd, list, n, 1);
    reduce_store(k, &rd, z);
    kctx_finish(k, module);
}
