#include "mla_tc.h"

void mla_tc_gather(Kctx *k, const MlaTcGather *g, Reg n) {
    Emit *e = &k->e;
    Reg first = e_reg(e, RC_PRED);
    int go = e_label(e);
    INS(e, SETP_EQ_U32, R(first), R(n), I(0));
    INSP(e, first, 0, BRA_UNI, L(go));
    umma_wait(k, g->free, mbar_parity(k, n, 0, 1));       /* phase n - 1 */
    e_place(e, go);
    Reg lead = e_reg(e, RC_PRED), rows = e_reg(e, RC_B32), coord[4];
    INS(e, AND_B32, R(rows), R(n), I(1));
    INS(e, MAD_LO_U32, R(rows), R(rows), I(4 * g->bn), R(k->smem));
    for (int r = 0; r < 4; r++) {
        Reg j = e_reg(e, RC_B32), slot = e_reg(e, RC_B32);
        INS(e, MAD_LO_U32, R(j), R(k->lane), I(4), I(r));
        INS(e, MAD_LO_U32, R(slot), R(n), I(g->bn), R(j));
        coord[r] = mla_slot_row(k, g->idx_row, g->eff, g->s_kv, slot, NULL);
    }
    Reg ra = e_reg(e, RC_B32);                             /* the lane's four slots: one 16-byte store */
    INS(e, MAD_LO_U32, R(ra), R(k->lane), I(16), R(rows));
    INS(e, ST_SHARED_V4_B32, A(ra, g->rows), V4(coord[0], coord[1], coord[2], coord[3]));
    Reg st = e_reg(e, RC_B64), dst = e_reg(e, RC_B32), bytes = kc_imm32(k, g->bn * g->d_qk * 2);
    INS(e, SETP_EQ_U32, R(lead), R(k->lane), I(0));
    INSP(e, lead, 0, MBAR_ARRIVE_EXPECT_TX, R(st), A(g->full, 0), R(bytes));
    INS(e, MAD_LO_U32, R(dst), R(k->lane), I(4 * 128), R(k->smem));
    for (int s = 0; s < g->d_qk / UMMA_SLAB_COLS; s++) {
        Reg c[5] = {kc_imm32(k, s * UMMA_SLAB_COLS), coord[0], coord[1], coord[2], coord[3]};
        INS(e, TMA_GATHER4, A(dst, g->kv + s * g->bn * 128), TA(g->kv_map, 5, c), A(g->full, 0));
    }
    INSP(e, lead, 1, MBAR_ARRIVE, R(st), A(g->full, 0));
}

void mla_tc_token(Kctx *k, int hb, int bn, MlaTcToken *tk) {
    Emit *e = &k->e;
    tk->t = e_reg(e, RC_B32), tk->h0 = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(tk->t), SR("%ctaid.x"));
    INS(e, MOV_B32, R(tk->h0), SR("%ctaid.y"));
    INS(e, MUL_LO_U32, R(tk->h0), R(tk->h0), I(hb));
    tk->h_q = kc_u32(k, "h_q"), tk->s_kv = kc_u32(k, "s_kv");
    tk->kv_map = kc_tmap(k, "kv_map");
    tk->idx_row = mla_index_row(k, tk->t);
    tk->eff = mla_token_slots(k, tk->t, kc_u32(k, "topk"));
    tk->nsteps = mla_token_steps(k, tk->eff, bn);
}
