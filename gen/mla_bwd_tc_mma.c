/* The MMA groups of the tcgen05 mla_bwd main kernel, in the order one thread
 * issues them per step (mla_bwd_tc.h), and the operand descriptors they use. */
#include "mla_bwd_tc.h"

/* The descriptors of every operand, at its first byte; MMAs move them by immediates. */
void tc_descriptors(Kctx *k, TcBwd *f) {
    DType dt = f->d->dtype;
    f->kv_k = umma_desc(k, f->kv, umma_kmajor128());
    f->q_k = umma_desc(k, f->q, umma_kmajor128());
    f->do_k = umma_desc(k, f->dout, umma_kmajor128());
    f->kv_mn = umma_desc(k, f->kv, umma_mn128(f->bn));
    f->q_mn = umma_desc(k, f->q, umma_mn128(f->hb));
    f->do_mn = umma_desc(k, f->dout, umma_mn128(f->hb));
    f->ds_mn = umma_desc(k, f->ds, umma_mn_rows(2 * f->hb));
    f->i_s = umma_idesc_f16(dt, f->bn, f->hb, 0, 0);
    f->i_dq = umma_idesc_f16(dt, f->bn, f->hb, 1, 1);
    f->i_kv[0] = umma_idesc_f16(dt, f->bn, MLA_TC_DKV_COLS, 0, 1);
    f->i_kv[1] = umma_idesc_f16(dt, f->bn, f->d->d % MLA_TC_DKV_COLS, 0, 1);
}

/* S^T = KV Q^T (K = d_qk) and dP^T = V dO^T (K = d_v), 16 at a time along the 128B slabs. */
void tc_issue_scores(Kctx *k, TcBwd *f) {
    Emit *e = &k->e;
    Reg idesc = kc_imm32(k, f->i_s);
    for (int c = 0; c < f->d->d / 16; c++) {
        Reg a = umma_desc_at(k, f->kv_k, (c / 4) * f->bn * 128 + 32 * (c % 4));
        Reg b = umma_desc_at(k, f->q_k, (c / 4) * f->hb * 128 + 32 * (c % 4));
        INS(e, TC_MMA_1_F16_SS, A(f->taddr, f->c_s), R(a), R(b), R(idesc), R(c ? f->yes : f->no));
    }
    for (int c = 0; c < f->d->dv / 16; c++) {
        Reg a = umma_desc_at(k, f->kv_k, (c / 4) * f->bn * 128 + 32 * (c % 4));
        Reg b = umma_desc_at(k, f->do_k, (c / 4) * f->hb * 128 + 32 * (c % 4));
        INS(e, TC_MMA_1_F16_SS, A(f->taddr, f->c_dp), R(a), R(b), R(idesc), R(c ? f->yes : f->no));
    }
    INS(e, TC_COMMIT_1, A(f->bar[BAR_S], 0));
}

/* dQ^T += KV^T dS^T: row tile i covers d_qk rows from 128 i (the last, 448:
 * its upper half is the rope part); A walks two 64-column slabs (LBO), K the
 * step's slots 16 at a time. `acc`: the kernel's first step starts at zero. */
void tc_issue_dq(Kctx *k, TcBwd *f, Reg acc) {
    Emit *e = &k->e;
    Reg idesc = kc_imm32(k, f->i_dq);
    for (int i = 0; i < MLA_TC_DQ_TILES; i++) {
        int slab = i < MLA_TC_DQ_TILES - 1 ? 2 * i : f->d->d / UMMA_SLAB_COLS - 2;
        for (int kj = 0; kj < f->bn / 16; kj++) {
            Reg a = umma_desc_at(k, f->kv_mn, slab * f->bn * 128 + kj * 16 * 128);
            Reg b = umma_desc_at(k, f->ds_mn, kj * 16 * 2 * f->hb);
            INS(e, TC_MMA_1_F16_SS, A(f->taddr, f->c_dq + i * f->hb), R(a), R(b), R(idesc), R(kj ? f->yes : acc));
        }
    }
    INS(e, TC_COMMIT_1, A(f->bar[BAR_DQ], 0));
}

/* dkv chunk ch (columns [256 ch, ...)) = dS^T Q (+ P^T dO on d_v's columns),
 * A from TMEM, B MN-major over the heads 16 at a time. */
int tc_chunks(const TcBwd *f) { return (f->d->d + MLA_TC_DKV_COLS - 1) / MLA_TC_DKV_COLS; }

int tc_chunk_cols(const TcBwd *f, int ch) {
    int left = f->d->d - ch * MLA_TC_DKV_COLS;
    return left < MLA_TC_DKV_COLS ? left : MLA_TC_DKV_COLS;
}

void tc_issue_dkv(Kctx *k, TcBwd *f, int ch) {
    Emit *e = &k->e;
    int n = tc_chunk_cols(f, ch);
    Reg idesc = kc_imm32(k, f->i_kv[n != MLA_TC_DKV_COLS]);
    int slab0 = ch * MLA_TC_DKV_COLS / UMMA_SLAB_COLS, with_do = ch * MLA_TC_DKV_COLS < f->d->dv;
    for (int kh = 0; kh < f->hb / 16; kh++) {
        Reg b = umma_desc_at(k, f->q_mn, slab0 * f->hb * 128 + kh * 16 * 128);
        INS(e, TC_MMA_1_F16_TS, A(f->taddr, f->c_kv), A(f->taddr, f->c_ds + 8 * kh), R(b), R(idesc), R(kh ? f->yes : f->no));
    }
    for (int kh = 0; with_do && kh < f->hb / 16; kh++) {
        Reg b = umma_desc_at(k, f->do_mn, slab0 * f->hb * 128 + kh * 16 * 128);
        INS(e, TC_MMA_1_F16_TS, A(f->taddr, f->c_kv), A(f->taddr, f->c_p + 8 * kh), R(b), R(idesc), R(f->yes));
    }
    INS(e, TC_COMMIT_1, A(f->bar[BAR_KV], 0));
}

