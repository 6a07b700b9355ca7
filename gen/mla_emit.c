#include "mla_emit.h"
#include <math.h>

void mla_cta_token(Kctx *k, MlaCta *c, int bm, int threads) {
    Emit *e = &k->e;
    *c = (MlaCta){.bm = bm, .threads = threads};
    c->t = e_reg(e, RC_B32), c->h0 = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(c->t), SR("%ctaid.x"));
    INS(e, MOV_B32, R(c->h0), SR("%ctaid.y"));
    INS(e, MUL_LO_U32, R(c->h0), R(c->h0), I(bm));
    c->h_q = kc_u32(k, "h_q");
}

void mla_cta(Kctx *k, MlaCta *c, int bm, int threads) {
    Emit *e = &k->e;
    mla_cta_token(k, c, bm, threads);
    c->pair = e_reg(e, RC_B32), c->half = e_reg(e, RC_B32), c->warp_row0 = e_reg(e, RC_B32);
    INS(e, REM_U32, R(c->pair), R(k->warp), I(bm / 16));
    INS(e, DIV_U32, R(c->half), R(k->warp), I(bm / 16));
    INS(e, MUL_LO_U32, R(c->warp_row0), R(c->pair), I(16));
}

void mla_pair_sync(Kctx *k, const MlaCta *c) {
    Reg id = e_reg(&k->e, RC_B32);
    INS(&k->e, ADD_U32, R(id), R(c->pair), I(1));
    INS(&k->e, BAR_SYNC_N, R(id), I(64));
}

void mla_rows_swap(Kctx *k, Reg *x, Op op, Reg side, Reg warp_row0, int rows, int off, Opnd bar, int threads) {
    Emit *e = &k->e;
    Reg g = e_reg(e, RC_B32), mine = e_reg(e, RC_B32), theirs = e_reg(e, RC_B32), lead = e_reg(e, RC_PRED);
    Reg t = e_reg(e, RC_B32);
    INS(e, SHR_U32, R(g), R(k->lane), I(2));
    INS(e, ADD_U32, R(g), R(g), R(warp_row0));
    INS(e, MAD_LO_U32, R(g), R(g), I(4), R(k->smem));
    INS(e, MAD_LO_U32, R(mine), R(side), I(4 * rows), R(g));
    INS(e, XOR_B32, R(theirs), R(side), I(1));
    INS(e, MAD_LO_U32, R(theirs), R(theirs), I(4 * rows), R(g));
    INS(e, AND_B32, R(t), R(k->lane), I(3));
    INS(e, SETP_EQ_U32, R(lead), R(t), I(0));
    for (int h = 0; h < 2; h++) INSP(e, lead, 0, ST_SHARED_F32, A(mine, off + 32 * h), R(x[h]));
    INS(e, BAR_SYNC_N, bar, I(threads));
    for (int h = 0; h < 2; h++) {
        Reg y = e_reg(e, RC_F32);
        INS(e, LD_SHARED_F32, R(y), A(theirs, off + 32 * h));
        e_insn(e, NOGUARD, 0, op, OPNDS(R(x[h]), R(x[h]), R(y)));
    }
}

void mla_load_heads(Kctx *k, const MlaCta *c, const char *tensor, SmemTile tile) {
    Emit *e = &k->e;
    RowGather g;
    Reg head = e_reg(e, RC_B32), ok = e_reg(e, RC_PRED), sz = e_reg(e, RC_B32), src = e_reg(e, RC_B64);
    rg_init(k, &g, tile.rows, tile.cols, c->threads);
    INS(e, ADD_U32, R(head), R(c->h0), R(g.row));
    INS(e, SETP_LT_U32, R(ok), R(head), R(c->h_q));
    INS(e, SELP_B32, R(sz), I(16), I(0), R(ok));
    INS(e, SELP_B32, R(head), R(g.row), I(0), R(ok));                  /* heads past h_q: row 0, not read */
    INS(e, MUL_WIDE_U32, R(src), R(head), R(stride_bytes(k, tensor, 'h')));
    INS(e, ADD_U64, R(src), R(src), R(tensor_base(k, tensor, 's', c->t, 'h', c->h0)));
    rg_issue(k, &g, tile, NOGUARD, src, sz);
}

Reg mla_token_slots(Kctx *k, Reg t, Reg topk) {
    Emit *e = &k->e;
    Reg given = kc_ptr_set(k, "topk_length"), len = e_reg(e, RC_B32), eff = e_reg(e, RC_B32), a = e_reg(e, RC_B64);
    INS(e, MOV_B32, R(eff), R(topk));
    INS(e, MUL_WIDE_U32, R(a), R(t), I(4));
    INS(e, ADD_U64, R(a), R(a), R(kc_ptr(k, "topk_length")));
    INSP(e, given, 0, LD_GLOBAL_NC_B32, R(len), A(a, 0));
    INSP(e, given, 0, MAX_S32, R(len), R(len), I(0));
    INSP(e, given, 0, MIN_U32, R(eff), R(len), R(topk));
    return eff;
}

Reg mla_token_steps(Kctx *k, Reg eff, int bn) {
    Reg n = e_reg(&k->e, RC_B32);
    INS(&k->e, ADD_U32, R(n), R(eff), I(bn - 1));
    INS(&k->e, DIV_U32, R(n), R(n), I(bn));
    return n;
}

static void slot_count(Kctx *k, MlaSlots *s, Reg t) {
    s->eff = mla_token_slots(k, t, kc_u32(k, "topk"));
    s->nsteps = mla_token_steps(k, s->eff, s->bn);
}

static void slots_init(Kctx *k, MlaSlots *s, Reg t, int threads, int slabs) {
    Emit *e = &k->e;
    s->s_kv = kc_u32(k, "s_kv");
    s->kv = kc_ptr(k, "kv");
    s->kv_rs = row_stride_bytes(k, "kv");
    Reg a = e_reg(e, RC_B64);
    INS(e, CVT_U64_U32, R(a), R(t));
    INS(e, MUL_LO_U64, R(a), R(a), R(kc_u64(k, "indices_stride_s")));
    s->idx_row = kc_ptr(k, "indices");
    INS(e, MUL_LO_U64, R(a), R(a), I(4));
    INS(e, ADD_U64, R(s->idx_row), R(s->idx_row), R(a));
    slot_count(k, s, t);
    if (slabs) rg_init_slabs(k, &s->g, s->bn, s->skv.cols, threads, 8);
    else rg_init(k, &s->g, s->bn, s->skv.cols, threads);
}

void mla_slots_init(Kctx *k, MlaSlots *s, const MlaCta *c) { slots_init(k, s, c->t, c->threads, 0); }
void mla_slots_init_slabs(Kctx *k, MlaSlots *s, Reg t, int threads) { slots_init(k, s, t, threads, 1); }

/* this thread's gather row in pass `pass` */
static Reg pass_row(Kctx *k, const MlaSlots *s, int pass) {
    if (!pass) return s->g.row;
    Reg r = e_reg(&k->e, RC_B32);
    INS(&k->e, ADD_U32, R(r), R(s->g.row), I(pass * s->g.pass_rows));
    return r;
}

Reg mla_slot_index_pass(Kctx *k, const MlaSlots *s, Reg n, int pass) {
    Emit *e = &k->e;
    Reg slot = e_reg(e, RC_B32), in = e_reg(e, RC_PRED), idx = e_reg(e, RC_B32), a = e_reg(e, RC_B64);
    INS(e, MAD_LO_U32, R(slot), R(n), I(s->bn), R(pass_row(k, s, pass)));
    INS(e, SETP_LT_U32, R(in), R(slot), R(s->eff));
    INS(e, MOV_B32, R(idx), I(-1));
    INS(e, MAD_WIDE_U32, R(a), R(slot), I(4), R(s->idx_row));
    INSP(e, in, 0, LD_GLOBAL_NC_B32, R(idx), A(a, 0));
    return idx;
}

Reg mla_slot_index(Kctx *k, const MlaSlots *s, Reg n) { return mla_slot_index_pass(k, s, n, 0); }

void mla_slot_gather(Kctx *k, const MlaSlots *s, Reg idx, Reg shift) { mla_slot_gather_pass(k, s, idx, shift, 0); }

void mla_slot_gather_pass(Kctx *k, const MlaSlots *s, Reg idx, Reg shift, int pass) {
    mla_slot_gather_cols(k, s, idx, shift, pass, 0, s->skv.cols, 1);
}

void mla_slot_gather_cols(Kctx *k, const MlaSlots *s, Reg idx, Reg shift, int pass, int col0, int ncols, int bias_too) {
    Emit *e = &k->e;
    Reg ok = e_reg(e, RC_PRED), row = e_reg(e, RC_B32), sz = e_reg(e, RC_B32), src = e_reg(e, RC_B64);
    Reg bias = e_reg(e, RC_F32), lead = e_reg(e, RC_PRED), ba = e_reg(e, RC_B32);
    INS(e, SETP_LT_U32, R(ok), R(idx), R(s->s_kv));          /* unsigned: negative indices fail too */
    INS(e, SELP_B32, R(row), R(idx), I(0), R(ok));
    INS(e, SELP_B32, R(sz), I(16), I(0), R(ok));
    INS(e, MAD_WIDE_U32, R(src), R(row), R(s->kv_rs), R(s->kv));
    rg_issue_cols(k, &s->g, s->skv, shift, pass, src, sz, col0, ncols);
    if (!bias_too) return;
    INS(e, SELP_F32, R(bias), FI(0.0f), FI(-INFINITY), R(ok));
    INS(e, SETP_EQ_U32, R(lead), R(s->g.part), I(0));
    INS(e, MAD_LO_U32, R(ba), R(pass_row(k, s, pass)), I(4), R(k->smem));
    if (shift.cls != NOGUARD.cls) INS(e, ADD_U32, R(ba), R(ba), R(shift));
    INSP(e, lead, 0, ST_SHARED_F32, A(ba, s->bias_off), R(bias));
    if (s->rows_off >= 0) INSP(e, lead, 0, ST_SHARED_B32, A(ba, s->rows_off), R(idx));
}

void mla_stream_begin(Kctx *k, const AttnDesc *d, const Plan *p, int keep_rows, MlaCta *c, MlaSlots *s, Stages *st) {
    const AttnTile *t = &d->tile;
    *s = (MlaSlots){.bn = t->bn, .skv = {t->bn, d->d, plan_region(p, "KV.0")}, .bias_off = plan_region(p, "bias.0"),
                    .rows_off = keep_rows ? plan_region(p, "rows.0") : -1};
    mla_cta(k, c, t->bm, 32 * t->warps);
    mla_slots_init(k, s, c);
    stages_init(k, st, t->stages == 1 ? 0 : plan_stage_stride(p));   /* one stage: the next rows go where these were */
}

void mla_slot_loop(Kctx *k, const MlaSlots *s, KeyStep step, void *ctx) {
    Reg n = e_reg(&k->e, RC_B32);
    INS(&k->e, MOV_B32, R(n), I(0));
    key_loop(k, step, ctx, n, s->nsteps, s->nsteps, 0);
}

void mla_slots_start(Kctx *k, MlaSlots *s) {
    Emit *e = &k->e;
    mla_slot_gather(k, s, mla_slot_index(k, s, kc_imm32(k, 0)), NOGUARD);
    INS0(e, CP_ASYNC_COMMIT);
    s->idx_next = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(s->idx_next), R(mla_slot_index(k, s, kc_imm32(k, 1))));
}

void mla_slots_prefetch(Kctx *k, MlaSlots *s, const Stages *st, Reg n) {
    Emit *e = &k->e;
    Reg next = e_reg(e, RC_B32), last = e_reg(e, RC_PRED), n2 = e_reg(e, RC_B32);
    int skip = e_label(e);
    INS(e, ADD_U32, R(next), R(n), I(1));
    INS(e, SETP_GE_U32, R(last), R(next), R(s->nsteps));
    INSP(e, last, 0, BRA_UNI, L(skip));
    mla_slot_gather(k, s, s->idx_next, stages_other(k, st));
    INS0(e, CP_ASYNC_COMMIT);
    INS(e, ADD_U32, R(n2), R(n), I(2));
    INS(e, MOV_B32, R(s->idx_next), R(mla_slot_index(k, s, n2)));
    e_place(e, skip);
}

Reg mla_bias_lane(Kctx *k, const MlaSlots *s, Reg first) {
    Emit *e = &k->e;
    Reg b = e_reg(e, RC_B32);
    (void)s;
    INS(e, AND_B32, R(b), R(k->lane), I(3));
    INS(e, MAD_LO_U32, R(b), R(b), I(8), R(k->smem));
    INS(e, MAD_LO_U32, R(b), R(first), I(4), R(b));
    return b;
}

void mla_add_bias(Kctx *k, const MlaSlots *s, Reg bias_lane, Acc *acc) {
    for (int j = 0; j < acc->nt; j++) {
        Reg b[2] = {e_reg(&k->e, RC_F32), e_reg(&k->e, RC_F32)};
        INS(&k->e, LD_SHARED_V2_F32, V2(b[0], b[1]), A(bias_lane, s->bias_off + 32 * j));
        for (int c = 0; c < 4; c++) INS(&k->e, ADD_F32, R(ACC(acc, 0, j, c)), R(ACC(acc, 0, j, c)), R(b[c & 1]));
    }
}

Reg mla_slot_row(Kctx *k, Reg idx_row, Reg eff, Reg s_kv, Reg slot, Reg *ok_out) {
    Emit *e = &k->e;
    Reg in = e_reg(e, RC_PRED), a = e_reg(e, RC_B64), ok = e_reg(e, RC_PRED), row = e_reg(e, RC_B32);
    INS(e, SETP_LT_U32, R(in), R(slot), R(eff));
    INS(e, MOV_B32, R(row), I(-1));
    INS(e, MAD_WIDE_U32, R(a), R(slot), I(4), R(idx_row));
    INSP(e, in, 0, LD_GLOBAL_NC_B32, R(row), A(a, 0));
    INS(e, SETP_LT_U32, R(ok), R(row), R(s_kv));   /* unsigned: negative indices fail too */
    INS(e, SELP_B32, R(row), R(row), I(-1), R(ok));
    if (ok_out) *ok_out = ok;
    return row;
}

Reg mla_index_row(Kctx *k, Reg t) {
    Emit *e = &k->e;
    Reg a = e_reg(e, RC_B64), row;
    INS(e, CVT_U64_U32, R(a), R(t));
    INS(e, MUL_LO_U64, R(a), R(a), R(kc_u64(k, "indices_stride_s")));
    INS(e, MUL_LO_U64, R(a), R(a), I(4));
    row = kc_ptr(k, "indices");
    INS(e, ADD_U64, R(row), R(row), R(a));
    return row;
}
