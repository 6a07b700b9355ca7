/* The backward's shared math (attn_bwd_math.h). */
#include "attn_bwd_math.h"
#include <math.h>
#include <stddef.h>

/* The blocks' bounds: [m_lo, m_end), masked below m_full. */
static void block_bounds(Kctx *k, QueryBlocks *qb, int bn, Reg key0, Reg s_q, Reg off, Reg m_end) {
    Emit *e = &k->e;
    int bm = qb->bm;
    Reg t = e_reg(e, RC_B32);
    qb->m_lo = e_reg(e, RC_B32), qb->m_full = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(m_end), R(s_q), I(bm - 1));
    INS(e, DIV_U32, R(m_end), R(m_end), I(bm));
    if (!qb->causal) {
        INS(e, MOV_B32, R(qb->m_lo), I(0));
        INS(e, MOV_B32, R(qb->m_full), I(0));
        return;
    }
    /* query q sees key j iff j <= q + off: the first query that sees key0 is key0 - off */
    INS(e, SUB_S32, R(t), R(key0), R(off));
    INS(e, MAX_S32, R(t), R(t), I(0));
    INS(e, DIV_U32, R(qb->m_lo), R(t), I(bm));
    INS(e, MIN_U32, R(qb->m_lo), R(qb->m_lo), R(m_end));
    /* and the first that sees all bn keys is key0 + bn - 1 - off */
    INS(e, ADD_S32, R(t), R(key0), I(bn - 1));
    INS(e, SUB_S32, R(t), R(t), R(off));
    INS(e, MAX_S32, R(t), R(t), I(0));
    INS(e, ADD_U32, R(t), R(t), I(bm - 1));
    INS(e, DIV_U32, R(qb->m_full), R(t), I(bm));
}

void key_block_order(Kctx *k, int ctas_per_sm, Reg group, Reg b, Reg kvh, Reg kb) {
    Emit *e = &k->e;
    if (!ctas_per_sm) {
        INS(e, MOV_B32, R(b), SR("%ctaid.z"));
        INS(e, MOV_B32, R(kvh), SR("%ctaid.y"));
        INS(e, MOV_B32, R(kb), SR("%ctaid.x"));
        return;
    }
    Reg nkb = e_reg(e, RC_B32), nh = e_reg(e, RC_B32), pairs = e_reg(e, RC_B32), lin = e_reg(e, RC_B32);
    Reg per = e_reg(e, RC_B32), g0 = e_reg(e, RC_B32), r = e_reg(e, RC_B32), in = e_reg(e, RC_B32);
    Reg t = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(nkb), SR("%nctaid.x"));
    INS(e, MOV_B32, R(nh), SR("%nctaid.y"));
    INS(e, MOV_B32, R(t), SR("%nctaid.z"));
    INS(e, MUL_LO_U32, R(pairs), R(nh), R(t));
    INS(e, MOV_B32, R(t), SR("%ctaid.z"));
    INS(e, MOV_B32, R(lin), SR("%ctaid.y"));
    INS(e, MAD_LO_U32, R(lin), R(t), R(nh), R(lin));
    INS(e, MOV_B32, R(t), SR("%ctaid.x"));
    INS(e, MAD_LO_U32, R(lin), R(lin), R(nkb), R(t));
    /* (kv head, batch) pairs a chunk: the slots over the key blocks, at least 1 */
    Reg mha = e_reg(e, RC_PRED), tail = e_reg(e, RC_PRED), tn = e_reg(e, RC_B32), st = e_reg(e, RC_B32);
    Reg gg = e_reg(e, RC_B32), ig = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(per), SR("%nsmid"));
    if (ctas_per_sm > 1) INS(e, MUL_LO_U32, R(per), R(per), I(ctas_per_sm));
    INS(e, DIV_U32, R(per), R(per), R(nkb));
    INS(e, MAX_U32, R(per), R(per), I(1));
    INS(e, SETP_EQ_U32, R(mha), R(group), I(1));
    /* without GQA, chunks: the chunk's first pair g0 and the CTA's place r in it; the last chunk may hold fewer */
    INS(e, MUL_LO_U32, R(t), R(per), R(nkb));
    INS(e, DIV_U32, R(g0), R(lin), R(t));
    INS(e, MUL_LO_U32, R(g0), R(g0), R(per));
    INS(e, SUB_U32, R(in), R(pairs), R(g0));
    INS(e, MIN_U32, R(in), R(in), R(per));
    /* with GQA, one pair at a time (g0 = lin / nkb) up to the last tn pairs, which from gg on go as a chunk */
    INS(e, MIN_U32, R(tn), R(per), R(pairs));
    INS(e, SUB_U32, R(gg), R(pairs), R(tn));
    INS(e, MUL_LO_U32, R(st), R(gg), R(nkb));
    INS(e, SETP_GE_U32, R(tail), R(lin), R(st));
    INS(e, DIV_U32, R(t), R(lin), R(nkb));
    INS(e, SELP_B32, R(gg), R(gg), R(t), R(tail));
    INS(e, SELP_B32, R(ig), R(tn), I(1), R(tail));
    INS(e, SELP_B32, R(g0), R(g0), R(gg), R(mha));
    INS(e, SELP_B32, R(in), R(in), R(ig), R(mha));
    INS(e, MUL_LO_U32, R(t), R(g0), R(nkb));
    INS(e, SUB_U32, R(r), R(lin), R(t));
    INS(e, DIV_U32, R(kb), R(r), R(in));
    INS(e, REM_U32, R(t), R(r), R(in));
    INS(e, ADD_U32, R(t), R(t), R(g0));
    INS(e, REM_U32, R(kvh), R(t), R(nh));
    INS(e, DIV_U32, R(b), R(t), R(nh));
}

void query_blocks(Kctx *k, int causal, int bm, int bn, Reg key0, Reg s_q, Reg off, Reg group, QueryBlocks *qb) {
    Emit *e = &k->e;
    Reg m_end = e_reg(e, RC_B32);
    *qb = (QueryBlocks){.causal = causal, .bm = bm, .group = group};
    block_bounds(k, qb, bn, key0, s_q, off, m_end);
    qb->per_head = e_reg(e, RC_B32), qb->total = e_reg(e, RC_B32);
    INS(e, SUB_U32, R(qb->per_head), R(m_end), R(qb->m_lo));
    INS(e, MUL_LO_U32, R(qb->total), R(qb->per_head), R(group));
    qb->per_head_div = e_reg(e, RC_B32);
    INS(e, MAX_S32, R(qb->per_head_div), R(qb->per_head), I(1));
}

void query_blocks_listed(Kctx *k, QueryBlocks *qb, Reg list, Reg mt) {
    qb->listed = 1, qb->list = list, qb->mt = mt;
    INS(&k->e, LD_GLOBAL_NC_B32, R(qb->total), A(list, 0));
}

/* a listed step it -> its block (returned) and head in the group (into *hl unless NULL); block 0 of head 0 for a
 * step past the list (a prologue's first step when the list is empty) */
static Reg listed_block(Kctx *k, const QueryBlocks *qb, Reg it, const Reg *hl) {
    Emit *e = &k->e;
    Reg v = e_reg(e, RC_B32), h = hl ? *hl : e_reg(e, RC_B32), t = e_reg(e, RC_B32), a = e_reg(e, RC_B64);
    Reg in = e_reg(e, RC_PRED);
    INS(e, MOV_B32, R(v), I(0));
    INS(e, SETP_LT_U32, R(in), R(it), R(qb->total));
    INS(e, MAD_WIDE_U32, R(a), R(it), I(4), R(qb->list));
    INSP(e, in, 0, LD_GLOBAL_NC_B32, R(v), A(a, 4));
    INS(e, DIV_U32, R(h), R(v), R(qb->mt));
    INS(e, MUL_LO_U32, R(t), R(h), R(qb->mt));
    INS(e, SUB_U32, R(v), R(v), R(t));
    return v;
}

/* chain order: step it -> block m_lo + it / group up, m_lo + per_head - 1 - it / group down (returned), head
 * it % group (into *hi unless NULL) */
static Reg chain_block(Kctx *k, const QueryBlocks *qb, Reg it, const Reg *hi) {
    Emit *e = &k->e;
    Reg r = e_reg(e, RC_B32), down = e_reg(e, RC_B32);
    if (hi) INS(e, REM_U32, R(*hi), R(it), R(qb->group));
    INS(e, DIV_U32, R(r), R(it), R(qb->group));
    INS(e, SUB_U32, R(down), R(qb->per_head), I(1));
    INS(e, SUB_U32, R(down), R(down), R(r));
    INS(e, SELP_B32, R(r), R(r), R(down), R(qb->up));
    INS(e, ADD_U32, R(r), R(r), R(qb->m_lo));
    return r;
}

void query_block_at(Kctx *k, const QueryBlocks *qb, Reg it, Reg kvh, Reg *h, Reg *m_start) {
    Emit *e = &k->e;
    Reg r = e_reg(e, RC_B32);
    *h = e_reg(e, RC_B32), *m_start = e_reg(e, RC_B32);
    if (qb->listed) {
        r = listed_block(k, qb, it, h);
        INS(e, MAD_LO_U32, R(*h), R(kvh), R(qb->group), R(*h));
        INS(e, MUL_LO_U32, R(*m_start), R(r), I(qb->bm));
        return;
    }
    if (qb->chain) {
        r = chain_block(k, qb, it, h);
        INS(e, MAD_LO_U32, R(*h), R(kvh), R(qb->group), R(*h));
        INS(e, MUL_LO_U32, R(*m_start), R(r), I(qb->bm));
        return;
    }
    INS(e, DIV_U32, R(*h), R(it), R(qb->per_head_div));
    INS(e, REM_U32, R(r), R(it), R(qb->per_head_div));
    INS(e, MAD_LO_U32, R(*h), R(kvh), R(qb->group), R(*h));
    INS(e, ADD_U32, R(r), R(r), R(qb->m_lo));
    INS(e, MUL_LO_U32, R(*m_start), R(r), I(qb->bm));
}

void query_loop(Kctx *k, const QueryBlocks *qb, QueryStep step, void *ctx, int advances) {
    Emit *e = &k->e;
    Reg it = e_reg(e, RC_B32), p = e_reg(e, RC_PRED), r = e_reg(e, RC_B32);
    int top = e_label(e), done = e_label(e), masked = e_label(e), next = e_label(e);
    INS(e, MOV_B32, R(it), I(0));
    e_place(e, top);
    INS(e, SETP_GE_U32, R(p), R(it), R(qb->total));
    INSP(e, p, 0, BRA_UNI, L(done));
    if (qb->causal) {
        if (qb->listed) r = listed_block(k, qb, it, NULL);
        else if (qb->chain) r = chain_block(k, qb, it, NULL);
        else {
            INS(e, REM_U32, R(r), R(it), R(qb->per_head_div));
            INS(e, ADD_U32, R(r), R(r), R(qb->m_lo));
        }
        INS(e, SETP_LT_U32, R(p), R(r), R(qb->m_full));
        INSP(e, p, 0, BRA_UNI, L(masked));
    }
    step(k, ctx, it, 0);
    INS(e, BRA_UNI, L(next));
    e_place(e, masked);
    if (qb->causal) step(k, ctx, it, 1);
    e_place(e, next);
    if (!advances) INS(e, ADD_U32, R(it), R(it), I(1));
    INS(e, BRA_UNI, L(top));
    e_place(e, done);
}

/* Per lane, with base = m_start + 2t - (key_row0 + g) + off, element (i, j, c) is visible iff
 * base >= 16i + 8(c/2) - 8j - (c%2). */
void mask_future_keys(Kctx *k, Acc *s, Reg m_start, Reg off, Reg key_row0) {
    Emit *e = &k->e;
    Reg base = e_reg(e, RC_B32), t = e_reg(e, RC_B32), g = e_reg(e, RC_B32);
    INS(e, AND_B32, R(t), R(k->lane), I(3));
    INS(e, SHR_U32, R(g), R(k->lane), I(2));
    INS(e, MAD_LO_U32, R(base), R(t), I(2), R(m_start));
    INS(e, ADD_S32, R(base), R(base), R(off));
    INS(e, SUB_S32, R(base), R(base), R(key_row0));
    INS(e, SUB_S32, R(base), R(base), R(g));
    for (int i = 0; i < s->mt; i++)
        for (int j = 0; j < s->nt; j++)
            for (int c = 0; c < 4; c++) {
                Reg p = e_reg(e, RC_PRED);
                INS(e, SETP_LT_S32, R(p), R(base), I(16 * i + 8 * (c >> 1) - 8 * j - (c & 1)));
                INS(e, SELP_F32, R(ACC(s, i, j, c)), FI(-INFINITY), R(ACC(s, i, j, c)), R(p));
            }
}

void mask_outside(Kctx *k, Acc *s, Reg m_start, Reg s_q, Reg s_k, Reg key_row0) {
    Emit *e = &k->e;
    Reg qlim = e_reg(e, RC_B32), t = e_reg(e, RC_B32), g = e_reg(e, RC_B32), key = e_reg(e, RC_B32);
    INS(e, AND_B32, R(t), R(k->lane), I(3));
    INS(e, SHR_U32, R(g), R(k->lane), I(2));
    INS(e, SUB_S32, R(qlim), R(s_q), R(m_start));                /* the lane's columns 8j + 2t (+1) below qlim - 2t */
    INS(e, SHL_B32, R(t), R(t), I(1));
    INS(e, SUB_S32, R(qlim), R(qlim), R(t));
    INS(e, ADD_U32, R(key), R(key_row0), R(g));
    for (int i = 0; i < s->mt; i++)
        for (int h = 0; h < 2; h++) {   /* its key rows 16i + g (+8): a key past s_k sees no query at all */
            Reg lim = e_reg(e, RC_B32), row = e_reg(e, RC_B32), kin = e_reg(e, RC_PRED);
            INS(e, ADD_U32, R(row), R(key), I(16 * i + 8 * h));
            INS(e, SETP_LT_U32, R(kin), R(row), R(s_k));
            INS(e, SELP_B32, R(lim), R(qlim), I(0), R(kin));
            for (int j = 0; j < s->nt; j++)
                for (int c = 0; c < 2; c++) {
                    Reg p = e_reg(e, RC_PRED);
                    INS(e, SETP_GT_S32, R(p), R(lim), I(8 * j + c));
                    INS(e, SELP_F32, R(ACC(s, i, j, 2 * h + c)), R(ACC(s, i, j, 2 * h + c)), FI(-INFINITY), R(p));
                }
        }
}

/* This lane's two values of a [bm] f32 row for n tile j: columns 8j + 2t and 8j + 2t + 1. Loaded per
 * tile, next to their use, so that they are not all live at once. */
static void column_pair(Kctx *k, const BwdStats *st, int off, int j, Reg *v) {
    v[0] = e_reg(&k->e, RC_F32), v[1] = e_reg(&k->e, RC_F32);
    INS(&k->e, LD_SHARED_V2_F32, V2(v[0], v[1]), A(st->lane_cols, off + 32 * j));
}

void bwd_probabilities(Kctx *k, const BwdStats *st, Acc *s, Reg scale_log2) {
    for (int j = 0; j < s->nt; j++) {
        Reg nl[2];
        column_pair(k, st, st->lse_off, j, nl);
        for (int c = 0; c < 2; c++) INS(&k->e, MUL_F32, R(nl[c]), R(nl[c]), FI((float)-M_LOG2E));
        for (int i = 0; i < s->mt; i++)
            for (int c = 0; c < 4; c++) {
                Reg x = ACC(s, i, j, c);
                INS(&k->e, FMA_F32, R(x), R(x), R(scale_log2), R(nl[c & 1]));
                INS(&k->e, EX2_F32, R(x), R(x));
            }
    }
}

void bwd_score_grads(Kctx *k, const BwdStats *st, const Acc *p, Acc *dp) {
    for (int j = 0; j < p->nt; j++) {
        Reg dl[2];
        column_pair(k, st, st->delta_off, j, dl);
        for (int i = 0; i < p->mt; i++)
            for (int c = 0; c < 4; c++) {
                Reg x = ACC(dp, i, j, c);
                INS(&k->e, SUB_F32, R(x), R(x), R(dl[c & 1]));
                INS(&k->e, MUL_F32, R(x), R(x), R(ACC(p, i, j, c)));
            }
    }
}

void bwd_copy_stats(Kctx *k, int bm, Reg s_q, Reg b, Reg h, Reg m_start, int dst_off, Reg stage, Reg full) {
    Emit *e = &k->e;
    Reg nblk = e_reg(e, RC_B32), idx = e_reg(e, RC_B32), blk = e_reg(e, RC_B32), dst = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(nblk), R(s_q), I(bm - 1));
    INS(e, DIV_U32, R(nblk), R(nblk), I(bm));
    INS(e, MAD_LO_U32, R(idx), R(b), R(kc_u32(k, "h_q")), R(h));
    INS(e, DIV_U32, R(blk), R(m_start), I(bm));
    INS(e, MAD_LO_U32, R(idx), R(idx), R(nblk), R(blk));
    INS(e, ADD_U32, R(dst), R(k->smem), R(stage));
    Reg c[2] = {kc_imm32(k, 0), idx};
    INS(e, TMA_LOAD_2D, A(dst, dst_off), TA(kc_tmap(k, "stats_map"), 2, c), A(full, 0));
}
