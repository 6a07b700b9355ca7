/* mla_fwd, tcgen05 family (sm_100a / sm_103a): sparse MLA forward with the
 * scores and the output transposed in TMEM, so that the top-k slots are the
 * MMAs' M (one TMEM lane and compute thread each) and the head block their N:
 *
 *   for each CTA (token t, heads [h0, h0 + hb)):
 *     load Q[t, hb]
 *     for each step n over the token's slots (128 at a time, up to topk_length):
 *       gather KV_n = kv[indices[t, 128n ...]]      (invalid slots: zero rows, never read)
 *       S^T = KV_n Q^T                              SS MMAs, K = d_qk
 *       m'_h = max(m_h, max over the step's valid slots of S^T[., h])   (across the 128 threads)
 *       P^T = exp2(scale (S^T - m'));  l_h += per-thread sums, O^T rescaled by 2^(scale (m - m'))
 *       O^T += V_n^T P^T                            SS, 4 row tiles of d_v: A = KV_n MN-major, B = P^T rows
 *     O = (O^T / l)^T -> shared -> o;  lse = ln 2 (scale m + log2 l), +inf for a token with no valid slot
 *
 * Warp roles, joined by mbarriers only (mla_fwd_tc.h): the producer (warp 5) gathers step n once step n-1's
 * products are done (one KV buffer: a first schedule, correct before fast), the issuer (warp 4, lane 0) sends
 * S^T and then O^T, the compute warps (0-3) do the softmax. Their steps: produce(), issue(), compute_step(). */
#include "mla_fwd_tc.h"
#include <math.h>
#include <string.h>
#include "attn_tc.h"
#include "../templates/softmax.h"
#include "../templates/epilogue.h"

typedef struct {
    const AttnDesc *d;
    int hb, bn;
    int kv, q, p, red, rows, o;        /* shared regions */
    int c_s, c_o;                      /* TMEM columns */
    Reg t, h0, h_q, s_kv, eff, nsteps, kv_map, idx_row;
    Reg taddr, tq, leader, yes, no;
    Reg bar[MFT_NBARS];
    Reg scale_log2;
    Reg m[MFT_MAX_HB], l[MFT_MAX_HB];  /* per head: running max (every thread the same), this thread's partial sum */
} TcFwd;

/* for (n = 0; n < nsteps; n++) body(n) */
static void step_loop(Kctx *k, TcFwd *f, KeyStep body) {
    Reg n = e_reg(&k->e, RC_B32);
    INS(&k->e, MOV_B32, R(n), I(0));
    key_loop(k, body, f, n, f->nsteps, f->nsteps, 0);
}

/* ---- producer ---- */

/* Step n's rows, once step n-1's products are done with KV (mla_tc_gather). */
static void produce(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    TcFwd *f = ctx;
    (void)n_max, (void)masked;
    MlaTcGather g = {f->kv_map, f->idx_row, f->eff, f->s_kv, f->bar[MFT_KV_FULL], f->bar[MFT_DONE], f->bn, f->d->d, f->kv,
                     f->rows};
    mla_tc_gather(k, &g, n);
}

static void producer_role(Kctx *k, void *ctx) { step_loop(k, ctx, produce); }

/* ---- MMA issuer ---- */

/* Step n: S^T once the rows landed; O^T += V^T P^T once P^T is in. */
static void issue(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    TcFwd *f = ctx;
    (void)n_max, (void)masked;
    Emit *e = &k->e;
    DType dt = f->d->dtype;
    umma_wait(k, f->bar[MFT_KV_FULL], mbar_parity(k, n, 0, 0));
    Reg kv_k = umma_desc(k, f->kv, umma_kmajor128()), q_k = umma_desc(k, f->q, umma_kmajor128());
    Reg i_s = kc_imm32(k, umma_idesc_f16(dt, f->bn, f->hb, 0, 0));
    int past = umma_leader_only(k, f->leader);
    for (int c = 0; c < f->d->d / 16; c++) {
        Reg a = umma_desc_at(k, kv_k, (c / 4) * f->bn * 128 + 32 * (c % 4));
        Reg b = umma_desc_at(k, q_k, (c / 4) * f->hb * 128 + 32 * (c % 4));
        INS(e, TC_MMA_1_F16_SS, A(f->taddr, f->c_s), R(a), R(b), R(i_s), R(c ? f->yes : f->no));
    }
    INS(e, TC_COMMIT_1, A(f->bar[MFT_S], 0));
    e_place(e, past);
    umma_wait(k, f->bar[MFT_P], mbar_parity(k, n, 0, 0));
    Reg acc = e_reg(e, RC_PRED);
    INS(e, SETP_NE_U32, R(acc), R(n), I(0));                 /* false on the first step: O^T starts at zero */
    Reg kv_mn = umma_desc(k, f->kv, umma_mn128(f->bn)), p_mn = umma_desc(k, f->p, umma_mn_rows(2 * f->hb));
    Reg i_o = kc_imm32(k, umma_idesc_f16(dt, 128, f->hb, 1, 1));
    past = umma_leader_only(k, f->leader);
    for (int i = 0; i < MFT_O_TILES; i++)                    /* d_v rows 128 i ..: two 64-column slabs of KV */
        for (int kj = 0; kj < f->bn / 16; kj++) {
            Reg a = umma_desc_at(k, kv_mn, 2 * i * f->bn * 128 + kj * 16 * 128);
            Reg b = umma_desc_at(k, p_mn, kj * 16 * 2 * f->hb);
            INS(e, TC_MMA_1_F16_SS, A(f->taddr, f->c_o + i * f->hb), R(a), R(b), R(i_o), R(kj ? f->yes : acc));
        }
    INS(e, TC_COMMIT_1, A(f->bar[MFT_DONE], 0));
    e_place(e, past);
}

static void issuer_role(Kctx *k, void *ctx) {
    TcFwd *f = ctx;
    Emit *e = &k->e;
    f->leader = e_reg(e, RC_PRED);
    INS(e, SETP_EQ_U32, R(f->leader), R(k->tid), I(MFT_ISSUER));
    step_loop(k, f, issue);
}

/* ---- compute ---- */

/* x[h] = op over the CTA's 128 compute threads of x[h], every thread getting the result: a warp's butterfly,
 * then each warp's value through red (lane 0 writes) and a barrier of the 128. */
static void cta_reduce(Kctx *k, TcFwd *f, Reg *x, Op op) {
    Emit *e = &k->e;
    Reg l0 = e_reg(e, RC_PRED), wa = e_reg(e, RC_B32), ra = e_reg(e, RC_B32);
    INS(e, SETP_EQ_U32, R(l0), R(k->lane), I(0));
    INS(e, MAD_LO_U32, R(wa), R(k->warp), I(4 * f->hb), R(k->smem));
    for (int h = 0; h < f->hb; h++) {
        for (int mask = 16; mask >= 1; mask >>= 1) {
            Reg o = e_reg(e, RC_F32);
            INS(e, SHFL_BFLY, R(o), R(x[h]), I(mask), I(31), I(-1));
            e_insn(e, NOGUARD, 0, op, OPNDS(R(x[h]), R(x[h]), R(o)));
        }
        INSP(e, l0, 0, ST_SHARED_F32, A(wa, f->red + 4 * h), R(x[h]));
    }
    INS(e, BAR_SYNC_N, R(kc_imm32(k, 1)), I(128));
    INS(e, ADD_U32, R(ra), R(k->smem), I(f->red));
    for (int h = 0; h < f->hb; h += 4)
        for (int w = 0; w < 4; w++) {
            Reg v[4];
            for (int c = 0; c < 4; c++) v[c] = e_reg(e, RC_F32);
            INS(e, LD_SHARED_V4_B32, V4(v[0], v[1], v[2], v[3]), A(ra, 4 * (w * f->hb + h)));
            for (int c = 0; c < 4; c++)
                if (w) e_insn(e, NOGUARD, 0, op, OPNDS(R(x[h + c]), R(x[h + c]), R(v[c])));
                else INS(e, MOV_F32, R(x[h + c]), R(v[c]));
        }
}

/* Step n for this thread's slot: its S^T row (masked when the slot is not a kv row), the heads' new maxima
 * over the CTA, P^T into its shared row, O^T rescaled (once the step before's products are done). */
static void compute_step(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    TcFwd *f = ctx;
    (void)n_max, (void)masked;
    Emit *e = &k->e;
    int hb = f->hb;
    e_comment(e, "compute step n: P^T");
    Reg s[MFT_MAX_HB], mx[MFT_MAX_HB], alpha[MFT_MAX_HB], pk[MFT_MAX_HB / 2];
    Reg ra = e_reg(e, RC_B32), row = e_reg(e, RC_B32), ok = e_reg(e, RC_PRED);
    umma_wait(k, f->bar[MFT_KV_FULL], mbar_parity(k, n, 0, 0));         /* the step's kv rows are recorded */
    INS(e, AND_B32, R(ra), R(n), I(1));
    INS(e, MAD_LO_U32, R(ra), R(ra), I(4 * f->bn), R(k->smem));
    INS(e, MAD_LO_U32, R(ra), R(k->tid), I(4), R(ra));
    INS(e, LD_SHARED_B32, R(row), A(ra, f->rows));
    INS(e, SETP_NE_U32, R(ok), R(row), I(-1));
    umma_wait(k, f->bar[MFT_S], mbar_parity(k, n, 0, 0));
    for (int h = 0; h < hb; h++) s[h] = e_reg(e, RC_F32);
    umma_tmem_load(k, f->tq, f->c_s, s, hb);
    for (int h = 0; h < hb; h++) {
        INS(e, SELP_F32, R(s[h]), R(s[h]), FI(-INFINITY), R(ok));   /* a zero row is no slot */
        mx[h] = e_reg(e, RC_F32);
        INS(e, MOV_F32, R(mx[h]), R(s[h]));
    }
    cta_reduce(k, f, mx, OP_MAX_F32);
    Reg moved = e_reg(e, RC_B32), same = e_reg(e, RC_PRED);
    INS(e, MOV_B32, R(moved), I(0));
    for (int h = 0; h < hb; h++) {
        Reg ms, neg = e_reg(e, RC_F32), eq = e_reg(e, RC_PRED), x = e_reg(e, RC_B32);
        INS(e, MAX_F32, R(mx[h]), R(mx[h]), R(f->m[h]));
        ms = softmax_scaled_max(k, mx[h], f->scale_log2);
        INS(e, SUB_F32, R(neg), FI(0.0f), R(ms));
        alpha[h] = e_reg(e, RC_F32);
        INS(e, FMA_F32, R(alpha[h]), R(f->m[h]), R(f->scale_log2), R(neg));
        INS(e, EX2_F32, R(alpha[h]), R(alpha[h]));
        INS(e, SETP_EQ_F32, R(eq), R(alpha[h]), FI(1.0f));
        INS(e, SELP_B32, R(x), I(0), I(1), R(eq));
        INS(e, OR_B32, R(moved), R(moved), R(x));
        INS(e, MOV_F32, R(f->m[h]), R(mx[h]));
        INS(e, FMA_F32, R(s[h]), R(s[h]), R(f->scale_log2), R(neg));
        INS(e, EX2_F32, R(s[h]), R(s[h]));                      /* P^T */
        INS(e, FMA_F32, R(f->l[h]), R(f->l[h]), R(alpha[h]), R(s[h]));
    }
    INS(e, SETP_EQ_U32, R(same), R(moved), I(0));
    for (int c = 0; c < hb / 8; c++) f32x8_pack(k, f->d->dtype, s + 8 * c, pk + 4 * c);
    /* the step before's products done: P^T's rows and O^T are free */
    Reg first = e_reg(e, RC_PRED);
    int none = e_label(e), kept = e_label(e);
    INS(e, SETP_EQ_U32, R(first), R(n), I(0));
    INSP(e, first, 0, BRA_UNI, L(none));
    e_comment(e, "wait: the step before's products done");
    umma_wait(k, f->bar[MFT_DONE], mbar_parity(k, n, 0, 1));
    INSP(e, same, 0, BRA_UNI, L(kept));                        /* no head's maximum moved: O^T stands (uniform) */
    for (int i = 0; i < MFT_O_TILES; i++) {
        Reg v[MFT_MAX_HB];
        for (int h = 0; h < hb; h++) v[h] = e_reg(e, RC_F32);
        umma_tmem_load(k, f->tq, f->c_o + i * hb, v, hb);
        for (int h = 0; h < hb; h++) INS(e, MUL_F32, R(v[h]), R(v[h]), R(alpha[h]));
        for (int c = 0; c < hb; c += 16) INS(e, TC_ST_32X32B_X16, A(f->tq, f->c_o + i * hb + c), V(16, v + c));
    }
    e_place(e, kept);
    e_place(e, none);
    Reg tile = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(tile), R(k->smem), I(f->p));
    for (int c = 0; c < hb / 8; c++)
        INS(e, ST_SHARED_V4_B32, umma_mn_row_chunk(k, tile, k->tid, 2 * hb, c), V4(pk[4 * c], pk[4 * c + 1], pk[4 * c + 2],
                                                                                    pk[4 * c + 3]));
    INS0(e, FENCE_PROXY_ASYNC_CTA);                           /* the O^T MMAs read what the threads wrote */
    tc_stores_arrive(k, f->bar[MFT_P]);
}

/* O = (O^T / l)^T into the staging tile (thread r: d_v row r of each O^T tile), then 16-byte rows out; lse per
 * head. A token with no step writes 0 and +inf. */
static void epilogue(Kctx *k, TcFwd *f) {
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    int hb = f->hb;
    Reg has = e_reg(e, RC_PRED), last = e_reg(e, RC_B32);
    int none = e_label(e);
    INS(e, SETP_NE_U32, R(has), R(f->nsteps), I(0));
    INSP(e, has, 1, BRA_UNI, L(none));
    INS(e, SUB_U32, R(last), R(f->nsteps), I(1));
    umma_wait(k, f->bar[MFT_DONE], mbar_parity(k, last, 0, 0));         /* every product done: KV (the staging) and red free */
    e_place(e, none);
    cta_reduce(k, f, f->l, OP_ADD_F32);
    Reg inv[MFT_MAX_HB], lse[MFT_MAX_HB];
    for (int h = 0; h < hb; h++) {
        Reg empty = e_reg(e, RC_PRED);
        inv[h] = e_reg(e, RC_F32), lse[h] = e_reg(e, RC_F32);
        INS(e, SETP_EQ_F32, R(empty), R(f->l[h]), FI(0.0f));
        INS(e, RCP_F32, R(inv[h]), R(f->l[h]));
        INS(e, SELP_F32, R(inv[h]), FI(0.0f), R(inv[h]), R(empty));
        INS(e, LG2_F32, R(lse[h]), R(f->l[h]));
        INS(e, ADD_F32, R(lse[h]), R(lse[h]), R(softmax_scaled_max(k, f->m[h], f->scale_log2)));
        INS(e, MUL_F32, R(lse[h]), R(lse[h]), FI((float)M_LN2));
        INS(e, SELP_F32, R(lse[h]), FI(INFINITY), R(lse[h]), R(empty));
    }
    /* lse[t, h0 + h] by thread h, heads below h_q */
    Reg room = e_reg(e, RC_B32), li = e_reg(e, RC_B32), la = e_reg(e, RC_B64);
    INS(e, SUB_U32, R(room), R(f->h_q), R(f->h0));
    INS(e, MAD_LO_U32, R(li), R(f->t), R(f->h_q), R(f->h0));
    INS(e, ADD_U32, R(li), R(li), R(k->tid));
    INS(e, MAD_WIDE_U32, R(la), R(li), I(4), R(kc_ptr(k, "lse")));
    for (int h = 0; h < hb; h++) {
        Reg mine = e_reg(e, RC_PRED), in = e_reg(e, RC_PRED), want = e_reg(e, RC_B32);
        INS(e, SETP_GE_U32, R(in), R(room), I(h + 1));
        INS(e, SELP_B32, R(want), I(h), I(-1), R(in));           /* a head past h_q: no thread */
        INS(e, SETP_EQ_U32, R(mine), R(k->tid), R(want));
        INSP(e, mine, 0, ST_GLOBAL_F32, A(la, 0), R(lse[h]));
    }
    /* element (h, c) of the staging tile: row h, 16-byte chunk swz_chunk(h, c / 8), c % 8 */
    SmemTile st = {hb, d->dv, f->o};
    Reg cl = e_reg(e, RC_B32), hi8 = e_reg(e, RC_B32), lo = e_reg(e, RC_B32), byte = e_reg(e, RC_B32);
    INS(e, SHR_U32, R(cl), R(k->tid), I(3));
    INS(e, AND_B32, R(hi8), R(cl), I(8));
    INS(e, AND_B32, R(lo), R(cl), I(7));
    INS(e, AND_B32, R(byte), R(k->tid), I(7));
    INS(e, MAD_LO_U32, R(byte), R(byte), I(2), R(k->smem));
    for (int i = 0; i < MFT_O_TILES; i++) {
        Reg v[MFT_MAX_HB];
        int zero = e_label(e), ready = e_label(e);
        for (int h = 0; h < hb; h++) v[h] = e_reg(e, RC_F32);
        INSP(e, has, 1, BRA_UNI, L(zero));
        umma_tmem_load(k, f->tq, f->c_o + i * hb, v, hb);
        INS(e, BRA_UNI, L(ready));
        e_place(e, zero);
        for (int h = 0; h < hb; h++) INS(e, MOV_F32, R(v[h]), FI(0.0f));
        e_place(e, ready);
        for (int h = 0; h < hb; h++) {
            Reg c = e_reg(e, RC_B32), x = e_reg(e, RC_B16);
            INS(e, XOR_B32, R(c), R(lo), I(h & 7));
            INS(e, ADD_U32, R(c), R(c), R(hi8));
            INS(e, MAD_LO_U32, R(c), R(c), I(16), R(byte));
            INS(e, MUL_F32, R(v[h]), R(v[h]), R(inv[h]));
            if (d->dtype == DT_BF16) INS(e, CVT_BF16_F32, R(x), R(v[h]));
            else INS(e, CVT_F16_F32, R(x), R(v[h]));
            INS(e, ST_SHARED_B16, A(c, st.off + h * tile_row_bytes(st) + 16 * 16 * i), R(x));
        }
    }
    INS(e, BAR_SYNC_N, R(kc_imm32(k, 1)), I(128));
    smem_to_global(k, st, 128, tensor_base(k, "o", 's', f->t, 'h', f->h0), stride_bytes(k, "o", 'h'), room);
}

static void compute_role(Kctx *k, void *ctx) {
    TcFwd *f = ctx;
    Emit *e = &k->e;
    f->scale_log2 = scale_log2(k);
    for (int h = 0; h < f->hb; h++) {
        f->m[h] = e_reg(e, RC_F32), f->l[h] = e_reg(e, RC_F32);
        INS(e, MOV_F32, R(f->m[h]), FI(-INFINITY));
        INS(e, MOV_F32, R(f->l[h]), FI(0.0f));
    }
    step_loop(k, f, compute_step);
    epilogue(k, f);
}

void mla_fwd_tc_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module) {
    Kctx kc;
    kctx_begin(&kc, ks);
    Kctx *k = &kc;
    Emit *e = &k->e;
    TcFwd f = {.d = d, .hb = d->tile.bm, .bn = d->tile.bn, .kv = plan_region(p, "KV"), .q = plan_region(p, "Q"),
               .p = plan_region(p, "P"), .red = plan_region(p, "red"), .rows = plan_region(p, "rows"),
               .o = plan_region(p, "O")};
    for (int i = 0; i < p->ntmem; i++) {
        if (!strcmp(p->tmem[i].name, "S^T")) f.c_s = p->tmem[i].col;
        if (!strcmp(p->tmem[i].name, "O^T")) f.c_o = p->tmem[i].col;
    }
    MlaTcToken tk;
    mla_tc_token(k, f.hb, f.bn, &tk);
    f.t = tk.t, f.h0 = tk.h0, f.h_q = tk.h_q, f.s_kv = tk.s_kv, f.kv_map = tk.kv_map, f.idx_row = tk.idx_row;
    f.eff = tk.eff, f.nsteps = tk.nsteps;
    f.yes = umma_const_pred(k, 1), f.no = umma_const_pred(k, 0);

    e_comment(e, "prologue: barriers, TMEM, Q landed and visible to the MMAs");
    Opnd counts[MFT_NBARS] = {I(32), I(1), I(128), I(1)};   /* the gathering lanes; commit; compute threads; commit */
    f.taddr = umma_prologue(k, plan_region(p, "bars"), MFT_NBARS, counts, f.bar, plan_tmem_alloc(p), 0, &f.tq);
    Reg room = e_reg(e, RC_B32), tile = e_reg(e, RC_B32);
    INS(e, SUB_U32, R(room), R(f.h_q), R(f.h0));
    INS(e, ADD_U32, R(tile), R(k->smem), I(f.q));
    umma_tile_copy(k, tile, f.hb, d->d, MFT_THREADS, tensor_base(k, "q", 's', f.t, 'h', f.h0), stride_bytes(k, "q", 'h'),
                   room);
    INS0(e, CP_ASYNC_COMMIT);
    INS(e, CP_ASYNC_WAIT, I(0));
    INS0(e, FENCE_PROXY_ASYNC_CTA);
    umma_sync(k);
    umma_roles6(k, "compute", compute_role, issuer_role, producer_role, &f);
    umma_epilogue(k, f.taddr, plan_tmem_alloc(p), 0);
    kctx_finish(k, module);
}
