#include "smem_tile.h"
#include <stdio.h>
#include <stdlib.h>

void tl_init(Kctx *k, TileLoader *tl, int cols, int max_rows, int threads) {
    Emit *e = &k->e;
    *tl = (TileLoader){.cols = cols, .threads = threads, .cpr = cols / 8};
    if (threads % tl->cpr || max_rows % (threads / tl->cpr)) {
        fprintf(stderr, "ptxgen internal: %d threads cannot tile %dx%d evenly\n", threads, max_rows, cols);
        abort();
    }
    tl->rpp = threads / tl->cpr;
    tl->row0 = e_reg(e, RC_B32);
    INS(e, DIV_U32, R(tl->row0), R(k->tid), I(tl->cpr));
    Reg col = e_reg(e, RC_B32);
    INS(e, REM_U32, R(col), R(k->tid), I(tl->cpr));
    tl->col64 = e_reg(e, RC_B64);
    INS(e, MUL_WIDE_U32, R(tl->col64), R(col), I(16));
    for (int i = 0; i < max_rows / tl->rpp; i++) {
        int pat = (i * tl->rpp) & 7;
        if (tl->have[pat]) continue;
        /* dst = smem + row0*rb + 16*swz(row0 + pat, col) */
        Reg r = e_reg(e, RC_B32), c = e_reg(e, RC_B32), d = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(r), R(tl->row0), I(pat));
        INS(e, XOR_B32, R(c), R(col), R(r));
        INS(e, AND_B32, R(c), R(c), I(7));
        INS(e, AND_B32, R(r), R(col), I(~7));
        INS(e, OR_B32, R(c), R(c), R(r));
        INS(e, MAD_LO_U32, R(d), R(tl->row0), I(cols * 2), R(k->smem));
        INS(e, MAD_LO_U32, R(d), R(c), I(16), R(d));
        tl->dst[pat] = d;
        tl->have[pat] = 1;
    }
}

void tl_issue(Kctx *k, TileLoader *tl, SmemTile t, Reg base, Reg stride_bytes, Reg row_start, Reg nrows) {
    tl_issue_at(k, tl, t, NOGUARD, base, stride_bytes, row_start, nrows);
}

void tl_issue_at(Kctx *k, TileLoader *tl, SmemTile t, Reg shift, Reg base, Reg stride_bytes, Reg row_start, Reg nrows) {
    Emit *e = &k->e;
    Reg dst[8];
    for (int i = 0; i < 8; i++) {
        dst[i] = tl->dst[i];
        if (!tl->have[i] || shift.cls == NOGUARD.cls) continue;
        dst[i] = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(dst[i]), R(tl->dst[i]), R(shift));
    }
    if (t.cols != tl->cols || t.rows % tl->rpp) {
        fprintf(stderr, "ptxgen internal: loader for %d columns given a %dx%d tile\n", tl->cols, t.rows, t.cols);
        abort();
    }
    Reg rb = e_reg(e, RC_B32), src0 = e_reg(e, RC_B64), last = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(rb), R(row_start), R(tl->row0));
    INS(e, ADD_U64, R(src0), R(base), R(tl->col64));
    INS(e, SUB_U32, R(last), R(nrows), I(1));
    for (int rows = 0; rows < t.rows; rows += tl->rpp) {
        Reg rr = e_reg(e, RC_B32), rc = e_reg(e, RC_B32), sz = e_reg(e, RC_B32);
        Reg p = e_reg(e, RC_PRED), src = e_reg(e, RC_B64);
        INS(e, ADD_U32, R(rr), R(rb), I(rows));
        INS(e, SETP_LT_U32, R(p), R(rr), R(nrows));
        INS(e, MIN_U32, R(rc), R(rr), R(last));
        INS(e, SELP_B32, R(sz), I(16), I(0), R(p));
        INS(e, MAD_WIDE_U32, R(src), R(rc), R(stride_bytes), R(src0));
        INS(e, CP_ASYNC_CG_16, A(dst[rows & 7], t.off + (int64_t)rows * tile_row_bytes(t)), A(src, 0), I(16), R(sz));
    }
}

void tl_issue_packed(Kctx *k, TileLoader *tl, SmemTile t, Reg base, Reg tok_stride, Reg head_stride, int pack,
                     Reg tok_start, Reg ntok, Reg nheads) {
    Emit *e = &k->e;
    Reg src0 = e_reg(e, RC_B64), last_tok = e_reg(e, RC_B32), last_head = e_reg(e, RC_B32);
    INS(e, ADD_U64, R(src0), R(base), R(tl->col64));
    INS(e, SUB_U32, R(last_tok), R(ntok), I(1));
    INS(e, SUB_U32, R(last_head), R(nheads), I(1));
    for (int rows = 0; rows < t.rows; rows += tl->rpp) {
        /* out-of-range rows copy 0 bytes from a clamped, in-range address */
        Reg rr = e_reg(e, RC_B32), tok = e_reg(e, RC_B32), j = e_reg(e, RC_B32), sz = e_reg(e, RC_B32);
        Reg p = e_reg(e, RC_PRED), q = e_reg(e, RC_PRED), src = e_reg(e, RC_B64);
        INS(e, ADD_U32, R(rr), R(tl->row0), I(rows));
        INS(e, SHR_U32, R(tok), R(rr), I(__builtin_ctz((unsigned)pack)));
        INS(e, ADD_U32, R(tok), R(tok), R(tok_start));
        INS(e, AND_B32, R(j), R(rr), I(pack - 1));
        INS(e, SETP_LT_U32, R(p), R(tok), R(ntok));
        INS(e, SETP_LT_U32, R(q), R(j), R(nheads));
        INS(e, AND_PRED, R(p), R(p), R(q));
        INS(e, SELP_B32, R(sz), I(16), I(0), R(p));
        INS(e, MIN_U32, R(tok), R(tok), R(last_tok));
        INS(e, MIN_U32, R(j), R(j), R(last_head));
        INS(e, MAD_WIDE_U32, R(src), R(tok), R(tok_stride), R(src0));
        INS(e, MAD_WIDE_U32, R(src), R(j), R(head_stride), R(src));
        INS(e, CP_ASYNC_CG_16, A(tl->dst[rows & 7], t.off + (int64_t)rows * tile_row_bytes(t)), A(src, 0), I(16), R(sz));
    }
}

void ldsm_bases_at(Kctx *k, LdsmBases *lb, SmemTile t, Reg lane_row, Reg sel, Reg pair) {
    Emit *e = &k->e;
    lb->t = t;
    lb->base = e_reg(e, RC_B32);
    Reg c = e_reg(e, RC_B32), hi = e_reg(e, RC_B32);
    /* chunk 2*pair + sel: its low three bits swizzle with the row, the rest is a 128-byte step */
    INS(e, AND_B32, R(c), R(pair), I(3));
    INS(e, MAD_LO_U32, R(c), R(c), I(2), R(sel));
    INS(e, AND_B32, R(hi), R(k->lane), I(7));
    INS(e, XOR_B32, R(c), R(c), R(hi));
    INS(e, SHR_U32, R(hi), R(pair), I(2));
    INS(e, MAD_LO_U32, R(c), R(hi), I(8), R(c));
    INS(e, MAD_LO_U32, R(lb->base), R(lane_row), I(tile_row_bytes(t)), R(k->smem));
    INS(e, MAD_LO_U32, R(lb->base), R(c), I(16), R(lb->base));
}

void ldsm_bases(Kctx *k, LdsmBases *lb, SmemTile t, Reg lane_row, Reg sel) {
    Emit *e = &k->e;
    lb->t = t;
    lb->base = e_reg(e, RC_B32);
    Reg c = e_reg(e, RC_B32);
    INS(e, AND_B32, R(c), R(k->lane), I(7));
    INS(e, XOR_B32, R(c), R(c), R(sel));
    INS(e, MAD_LO_U32, R(lb->base), R(lane_row), I(tile_row_bytes(t)), R(k->smem));
    INS(e, MAD_LO_U32, R(lb->base), R(c), I(16), R(lb->base));
}

void ldsm_b_lanes(Kctx *k, Reg *row, Reg *sel) {
    Emit *e = &k->e;
    Reg hi = e_reg(e, RC_B32);
    *row = e_reg(e, RC_B32), *sel = e_reg(e, RC_B32);
    INS(e, AND_B32, R(*row), R(k->lane), I(7));
    INS(e, SHR_U32, R(hi), R(k->lane), I(4));
    INS(e, SHL_B32, R(hi), R(hi), I(3));
    INS(e, OR_B32, R(*row), R(*row), R(hi));
    INS(e, SHR_U32, R(*sel), R(k->lane), I(3));
    INS(e, AND_B32, R(*sel), R(*sel), I(1));
}

void ldsm_a_lanes(Kctx *k, Reg row0, Reg *l15, Reg *hi, Reg *row) {
    Emit *e = &k->e;
    *l15 = e_reg(e, RC_B32), *hi = e_reg(e, RC_B32), *row = e_reg(e, RC_B32);
    INS(e, AND_B32, R(*l15), R(k->lane), I(15));
    INS(e, SHR_U32, R(*hi), R(k->lane), I(4));
    INS(e, ADD_U32, R(*row), R(*l15), R(row0));
}

Opnd ldsm_addr(Kctx *k, const LdsmBases *lb, int row_off, int kk) {
    Reg a = lb->base;
    if (kk & 3) {
        a = e_reg(&k->e, RC_B32);
        INS(&k->e, XOR_B32, R(a), R(lb->base), I(32 * (kk & 3)));
    }
    return A(a, lb->t.off + (int64_t)row_off * tile_row_bytes(lb->t) + 128 * (kk >> 2));
}
