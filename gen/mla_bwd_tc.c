/* mla_bwd main kernel, tcgen05 family (sm_100a / sm_103a, cta_group::1):
 * dq of one token's head block, and the block's share of dkv. The top-k
 * slots are the MMAs' M (128 per step, one TMEM lane and one compute thread
 * each), the block's heads their N, so every product is transposed:
 *
 *   for each CTA (token t, heads [h0, h0 + hb)):
 *     load Q[t, hb], dO[t, hb]
 *     for each step n over the token's slots (128 at a time, up to topk_length):
 *       gather KV_n = kv[indices[t, 128n ...]]   (invalid slots: zero rows, P = 0)
 *       S^T  = KV_n Q^T;   dP^T = V_n dO^T                    (SS MMAs into TMEM)
 *       P^T  = exp(scale S^T - lse);  dS^T = scale P^T (dP^T - delta)
 *       dQ^T += KV_n^T dS^T                         (A = KV MN-major, B = dS^T in smem)
 *       dkv[idx[j]] += dS^T Q + P^T dO              (A = dS^T, P^T from TMEM, B = Q, dO
 *                                                    MN-major), 256 columns at a time
 *     store dq = (dQ^T)^T
 *
 * Warp roles, joined by mbarriers only (mla_bwd_tc.h names each):
 *   producer (warp 5)     gathers step n's rows (TMA gather4) once dQ^T of step n-1 landed
 *   issuer (warp 4 lane 0) S^T, dP^T | dQ^T, dkv chunk 0 | chunks 1, 2 (tc_issue_*)
 *   compute (warps 0-3)   P^T, dS^T from its lanes of S^T, dP^T; dkv chunks out
 * so step n+1's gather overlaps step n's dkv chunks. The loops are
 * producer_loop(), issuer_loop() and compute_loop(); the math of a step is
 * probabilities() and dkv_out() (compute) and mla_bwd_tc_mma.c (issuer). */
#include "mla_bwd_tc.h"
#include "mla_tc.h"
#include <math.h>
#include <string.h>
#include "../templates/epilogue.h"

/* Barriers and TMEM (umma_prologue), with each barrier's arrival count (mla_bwd_tc.h). */
static void setup(Kctx *k, TcBwd *f, int cols) {
    static const int count[NBARS] = {TC_PRODUCERS, 1, TC_COMPUTE, 1, 1, TC_COMPUTE};
    Opnd c[NBARS];
    for (int i = 0; i < NBARS; i++) c[i] = I(count[i]);
    f->taddr = umma_prologue(k, f->bars, NBARS, c, f->bar, cols, 0, &f->tq);
}

/* (n * per + plus) & 1: the parity of phase n * per + plus of a barrier that completes `per` times a step */
static Reg phase(Kctx *k, Reg n, int per, int plus) {
    Reg p = e_reg(&k->e, RC_B32);
    INS(&k->e, MAD_LO_U32, R(p), R(n), I(per), I(plus));
    INS(&k->e, AND_B32, R(p), R(p), I(1));
    return p;
}

static void arrive(Kctx *k, Reg bar) {
    Reg st = e_reg(&k->e, RC_B64);
    INS(&k->e, MBAR_ARRIVE, R(st), A(bar, 0));
}

/* for (n = 0; n < nsteps; n++) body(n): attn_emit's key loop over the token's steps */
static void step_loop(Kctx *k, TcBwd *f, KeyStep body) {
    Reg n = e_reg(&k->e, RC_B32);
    INS(&k->e, MOV_B32, R(n), I(0));
    key_loop(k, body, f, n, f->nsteps, f->nsteps, 0);
}

/* -lse log2(e) and delta of every head of the block (heads past h_q: -inf and 0, so P = 0). */
static void head_stats(Kctx *k, TcBwd *f) {
    Emit *e = &k->e;
    Reg lse = kc_ptr(k, "lse"), delta = kc_ptr(k, "delta"), row = e_reg(e, RC_B32), a = e_reg(e, RC_B64);
    INS(e, MAD_LO_U32, R(row), R(f->t), R(f->h_q), R(f->h0));
    INS(e, MUL_WIDE_U32, R(a), R(row), I(4));
    Reg al = e_reg(e, RC_B64), ad = e_reg(e, RC_B64), room = e_reg(e, RC_B32);
    INS(e, ADD_U64, R(al), R(a), R(lse));
    INS(e, ADD_U64, R(ad), R(a), R(delta));
    INS(e, SUB_U32, R(room), R(f->h_q), R(f->h0));
    for (int h = 0; h < f->hb; h++) {
        Reg ok = e_reg(e, RC_PRED), l = e_reg(e, RC_F32);
        f->neg_lse2[h] = e_reg(e, RC_F32), f->delta[h] = e_reg(e, RC_F32);
        INS(e, SETP_LT_U32, R(ok), I(h), R(room));
        INS(e, MOV_F32, R(l), FI(INFINITY));
        INS(e, MOV_F32, R(f->delta[h]), FI(0.0f));
        INSP(e, ok, 0, LD_GLOBAL_F32, R(l), A(al, 4 * h));
        INSP(e, ok, 0, LD_GLOBAL_F32, R(f->delta[h]), A(ad, 4 * h));
        INS(e, MUL_F32, R(f->neg_lse2[h]), R(l), FI(-1.4426950408889634f));
    }
}

/* The producer warp's step n: once dQ^T of step n-1 landed (KV and the rows
 * buffer of step n-2 are free), the step's rows by mla_tc_gather onto KV_FULL;
 * each slot's kv row (-1: none) goes to the rows buffer for the compute warps. */
static void produce(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    TcBwd *f = ctx;
    (void)n_max, (void)masked;
    MlaTcGather g = {f->kv_map, f->idx_row, f->eff, f->s_kv, f->bar[BAR_KV_FULL], f->bar[BAR_DQ], f->bn, f->d->d, f->kv,
                     f->rows};
    mla_tc_gather(k, &g, n);
}

/* The issuer warp's step n: every lane waits until an MMA group's inputs are
 * ready and the TMEM it writes has been read out; lane 0 issues the group. */
static void issue(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    TcBwd *f = ctx;
    (void)n_max, (void)masked;
    Emit *e = &k->e;
    int chunks = tc_chunks(f), past;
    Reg acc = e_reg(e, RC_PRED);
    umma_wait(k, f->bar[BAR_KV_FULL], phase(k, n, 1, 0));
    past = umma_leader_only(k, f->leader);
    tc_issue_scores(k, f);
    e_place(e, past);
    /* S^T, dP^T read; P^T, dS^T in. The compute warps arrive here only after
     * step n-1's last dkv chunk is out, so chunk 0 needs no FREE wait of its own. */
    umma_wait(k, f->bar[BAR_P], phase(k, n, 1, 0));
    INS(e, SETP_NE_U32, R(acc), R(n), I(0));               /* false on the first step: dQ^T starts at zero */
    past = umma_leader_only(k, f->leader);
    tc_issue_dq(k, f, acc);
    tc_issue_dkv(k, f, 0);
    e_place(e, past);
    for (int ch = 1; ch < chunks; ch++) {
        umma_wait(k, f->bar[BAR_FREE], phase(k, n, chunks, ch - 1));
        past = umma_leader_only(k, f->leader);
        tc_issue_dkv(k, f, ch);
        e_place(e, past);
    }
}

/* this thread's n TMEM columns from col (its lane) into v, 32 or 16 at a time */
static void tmem_load(Kctx *k, TcBwd *f, int col, Reg *v, int n) {
    for (int c = 0; c < n; c += 32) {
        if (n - c >= 32) INS(&k->e, TC_LD_32X32B_X32, V(32, v + c), A(f->tq, col + c));
        else INS(&k->e, TC_LD_32X32B_X16, V(16, v + c), A(f->tq, col + c));
    }
    INS0(&k->e, TC_WAIT_LD);
}

/* P^T and dS^T of this thread's slot from S^T and dP^T; into TMEM (A of dkv)
 * and dS^T into its shared row (B of dQ^T). */
static void probabilities(Kctx *k, TcBwd *f, Reg ok) {
    Emit *e = &k->e;
    int hb = f->hb;
    Reg s[MAX_HB], dp[MAX_HB], p[MAX_HB / 2], ds[MAX_HB / 2];
    for (int h = 0; h < hb; h++) s[h] = e_reg(e, RC_F32), dp[h] = e_reg(e, RC_F32);
    tmem_load(k, f, f->c_s, s, hb);
    tmem_load(k, f, f->c_dp, dp, hb);
    for (int h = 0; h < hb; h++) {
        Reg sp = e_reg(e, RC_F32);
        INS(e, FMA_F32, R(s[h]), R(s[h]), R(f->scale_log2), R(f->neg_lse2[h]));
        INS(e, EX2_F32, R(s[h]), R(s[h]));
        INS(e, SELP_F32, R(s[h]), R(s[h]), FI(0.0f), R(ok));        /* a zero row is no slot */
        INS(e, SUB_F32, R(dp[h]), R(dp[h]), R(f->delta[h]));
        INS(e, MUL_F32, R(sp), R(s[h]), R(f->scale));
        INS(e, MUL_F32, R(dp[h]), R(dp[h]), R(sp));
    }
    for (int c = 0; c < hb / 8; c++) {
        f32x8_pack(k, f->d->dtype, s + 8 * c, p + 4 * c);
        f32x8_pack(k, f->d->dtype, dp + 8 * c, ds + 4 * c);
    }
    if (hb == 32) {
        INS(e, TC_ST_32X32B_X16, A(f->tq, f->c_p), V(16, p));
        INS(e, TC_ST_32X32B_X16, A(f->tq, f->c_ds), V(16, ds));
    } else {
        INS(e, TC_ST_32X32B_X8, A(f->tq, f->c_p), V(8, p));
        INS(e, TC_ST_32X32B_X8, A(f->tq, f->c_ds), V(8, ds));
    }
    Reg tile = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(tile), R(k->smem), I(f->ds));
    for (int c = 0; c < hb / 8; c++)
        INS(e, ST_SHARED_V4_B32, umma_mn_row_chunk(k, tile, k->tid, 2 * hb, c),
            V4(ds[4 * c], ds[4 * c + 1], ds[4 * c + 2], ds[4 * c + 3]));
    INS0(e, TC_WAIT_ST);
}

/* The dkv chunk out of TMEM into global memory, for a valid slot only: a
 * vector reduction into the fp32 accumulator. */
static void dkv_out(Kctx *k, TcBwd *f, int ch, Reg ok, Reg dst) {
    Emit *e = &k->e;
    int n = tc_chunk_cols(f, ch);
    for (int c = 0; c < n; c += 32) {
        Reg v[32];
        for (int i = 0; i < 32; i++) v[i] = e_reg(e, RC_F32);
        tmem_load(k, f, f->c_kv + c, v, 32);
        for (int i = 0; i < 8; i++) {
            Opnd a = A(dst, 4 * (ch * MLA_TC_DKV_COLS + c + 4 * i));
            INSP(e, ok, 0, RED_GLOBAL_ADD_V4_F32, a, V4(v[4 * i], v[4 * i + 1], v[4 * i + 2], v[4 * i + 3]));
        }
    }
}

/* The compute warps' step n: P^T and dS^T of the thread's slot (its lane),
 * then each dkv chunk out of TMEM. */
static void compute(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    TcBwd *f = ctx;
    (void)n_max, (void)masked;
    Emit *e = &k->e;
    int chunks = tc_chunks(f);
    Reg par = phase(k, n, 1, 0), ra = e_reg(e, RC_B32), row = e_reg(e, RC_B32), ok = e_reg(e, RC_PRED);
    e_comment(e, "compute step n: P^T, dS^T");
    umma_wait(k, f->bar[BAR_KV_FULL], par);                /* the step's kv rows are recorded */
    INS(e, AND_B32, R(ra), R(n), I(1));
    INS(e, MAD_LO_U32, R(ra), R(ra), I(4 * f->bn), R(k->smem));
    INS(e, MAD_LO_U32, R(ra), R(k->tid), I(4), R(ra));
    INS(e, LD_SHARED_B32, R(row), A(ra, f->rows));
    INS(e, SETP_NE_U32, R(ok), R(row), I(-1));
    umma_wait(k, f->bar[BAR_S], par);
    probabilities(k, f, ok);
    INS0(e, FENCE_PROXY_ASYNC_CTA);                        /* the dS^T rows, read by the dQ^T MMAs */
    INS0(e, TC_FENCE_BEFORE);
    arrive(k, f->bar[BAR_P]);
    /* where this slot's dkv goes: its kv row of the accumulator (deterministic: mla_dkv_fixed_tmem's lines) */
    Reg dst = e_reg(e, RC_B64);
    if (!f->det) INS(e, MAD_WIDE_U32, R(dst), R(row), I(4 * f->d->d), R(f->dkv_base));
    for (int ch = 0; ch < chunks; ch++) {
        e_comment(e, "dkv chunk %d", ch);
        umma_wait(k, f->bar[BAR_KV], phase(k, n, chunks, ch));
        if (f->det)
            mla_dkv_fixed_tmem(k, f->tq, f->c_kv, tc_chunk_cols(f, ch), ch * MLA_TC_DKV_COLS, row, f->s_kv, f->dkv_base,
                               f->mul);
        else dkv_out(k, f, ch, ok, dst);
        INS0(e, TC_FENCE_BEFORE);
        arrive(k, f->bar[BAR_FREE]);
    }
}

/* dq = (dQ^T)^T: each warp's lanes of each row tile (a d_qk row, all heads)
 * into the staging tile, then 16-byte rows out. No step: dq = 0. */
static void epilogue(Kctx *k, TcBwd *f) {
    Emit *e = &k->e;
    SmemTile st = {f->hb, f->d->d, f->dq};
    Reg has = e_reg(e, RC_PRED), cw = e_reg(e, RC_PRED);
    int staged = e_label(e);
    INS(e, SETP_NE_U32, R(has), R(f->nsteps), I(0));
    INS(e, SETP_LT_U32, R(cw), R(k->tid), I(TC_COMPUTE));
    INSP(e, cw, 1, BRA_UNI, L(staged));                    /* the compute warps own the TMEM lanes */
    for (int i = 0; i < MLA_TC_DQ_TILES; i++) {
        int d0 = i < MLA_TC_DQ_TILES - 1 ? 128 * i : f->d->d - 128, skip = e_label(e);
        Reg v[MAX_HB], dd = e_reg(e, RC_B32), mine = e_reg(e, RC_PRED);
        e_comment(e, "dq rows %d-%d", d0, d0 + 127);
        INS(e, MAD_LO_U32, R(dd), R(k->warp), I(32), R(k->lane));
        INS(e, ADD_U32, R(dd), R(dd), I(d0));
        /* the last tile's lower half repeats rows of the one before */
        INS(e, SETP_GE_U32, R(mine), R(dd), I(i < MLA_TC_DQ_TILES - 1 ? 0 : 128 * (MLA_TC_DQ_TILES - 1)));
        INSP(e, mine, 1, BRA_UNI, L(skip));                /* warp-uniform: rows 32 w .. 32 w + 31 */
        for (int h = 0; h < f->hb; h++) {
            v[h] = e_reg(e, RC_F32);
            INS(e, MOV_F32, R(v[h]), FI(0.0f));
        }
        int none = e_label(e);
        INSP(e, has, 1, BRA_UNI, L(none));
        tmem_load(k, f, f->c_dq + i * f->hb, v, f->hb);
        e_place(e, none);
        /* element (h, d) of the staging tile: row h, chunk swz_chunk(h, d / 8), d % 8 */
        Reg cd = e_reg(e, RC_B32), hi = e_reg(e, RC_B32), lo = e_reg(e, RC_B32);
        INS(e, SHR_U32, R(cd), R(dd), I(3));
        INS(e, AND_B32, R(hi), R(cd), I(~7));
        INS(e, AND_B32, R(lo), R(dd), I(7));
        INS(e, SHL_B32, R(lo), R(lo), I(1));
        INS(e, ADD_U32, R(lo), R(lo), R(k->smem));
        for (int h = 0; h < f->hb; h++) {
            Reg c = e_reg(e, RC_B32), x = e_reg(e, RC_B16);
            INS(e, XOR_B32, R(c), R(cd), I(h));
            INS(e, AND_B32, R(c), R(c), I(7));
            INS(e, OR_B32, R(c), R(c), R(hi));
            INS(e, MAD_LO_U32, R(c), R(c), I(16), R(lo));
            if (f->d->dtype == DT_BF16) INS(e, CVT_BF16_F32, R(x), R(v[h]));
            else INS(e, CVT_F16_F32, R(x), R(v[h]));
            INS(e, ST_SHARED_B16, A(c, st.off + h * tile_row_bytes(st)), R(x));
        }
        e_place(e, skip);
    }
    e_place(e, staged);
    INS(e, BAR_SYNC, I(0));
    Reg rows_left = e_reg(e, RC_B32);
    INS(e, SUB_U32, R(rows_left), R(f->h_q), R(f->h0));
    smem_to_global(k, st, TC_THREADS, tensor_base(k, "dq", 's', f->t, 'h', f->h0),
                   stride_bytes(k, "dq", 'h'), rows_left);
}

static void dkv_base(Kctx *k, TcBwd *f) {
    f->dkv_base = kc_ptr(k, f->det ? "dkv_fixed" : "dkv_accum");
    if (!f->det) return;
    f->mul = mla_dkv_fixed(k).mul;
    Reg b = e_reg(&k->e, RC_B64);   /* at mla_dkv_fixed_col */
    INS(&k->e, MAD_WIDE_U32, R(b), R(mla_dkv_fixed_col(k)), I(8), R(f->dkv_base));
    f->dkv_base = b;
}

void mla_bwd_tc_main_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module) {
    Kctx kc;
    kctx_begin(&kc, ks);
    Kctx *k = &kc;
    Emit *e = &k->e;
    TcBwd f = {.d = d, .hb = d->tile.bm, .bn = d->tile.bn, .det = d->tile.deterministic,
               .kv = plan_region(p, "KV"), .q = plan_region(p, "Q"), .dout = plan_region(p, "dO"),
               .ds = plan_region(p, "dS"), .dq = plan_region(p, "dQ"), .bars = plan_region(p, "bars"),
               .rows = plan_region(p, "rows")};
    for (int i = 0; i < p->ntmem; i++) {
        const TmemRegion *r = &p->tmem[i];
        int *col = !strcmp(r->name, "dKV") ? &f.c_kv : !strcmp(r->name, "dQ^T") ? &f.c_dq : !strcmp(r->name, "S^T") ? &f.c_s
                   : !strcmp(r->name, "dP^T") ? &f.c_dp : !strcmp(r->name, "P^T") ? &f.c_p : &f.c_ds;
        *col = r->col;
    }
    MlaTcToken tk;
    mla_tc_token(k, f.hb, f.bn, &tk);
    f.t = tk.t, f.h0 = tk.h0, f.h_q = tk.h_q, f.s_kv = tk.s_kv, f.kv_map = tk.kv_map, f.idx_row = tk.idx_row;
    f.eff = tk.eff, f.nsteps = tk.nsteps;
    f.scale = kc_f32(k, "softmax_scale");
    f.scale_log2 = scale_log2(k);
    f.yes = umma_const_pred(k, 1), f.no = umma_const_pred(k, 0);

    e_comment(e, "prologue: barriers, TMEM, Q and dO landed and visible to the MMAs");
    setup(k, &f, plan_tmem_alloc(p));
    Reg room = e_reg(e, RC_B32), tile = e_reg(e, RC_B32);
    INS(e, SUB_U32, R(room), R(f.h_q), R(f.h0));
    INS(e, ADD_U32, R(tile), R(k->smem), I(f.q));
    umma_tile_copy(k, tile, f.hb, d->d, TC_THREADS, tensor_base(k, "q", 's', f.t, 'h', f.h0), stride_bytes(k, "q", 'h'),
                   room);
    Reg tile2 = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(tile2), R(k->smem), I(f.dout));
    umma_tile_copy(k, tile2, f.hb, d->dv, TC_THREADS, tensor_base(k, "do", 's', f.t, 'h', f.h0),
                   stride_bytes(k, "do", 'h'), room);
    INS0(e, CP_ASYNC_COMMIT);
    INS(e, CP_ASYNC_WAIT, I(0));
    INS0(e, FENCE_PROXY_ASYNC_CTA);
    umma_sync(k);

    /* the roles: branches uniform per warp; in the MMA warp every lane waits and lane 0 issues */
    Reg role = e_reg(e, RC_PRED);
    int not_compute = e_label(e), not_issuer = e_label(e), roles_done = e_label(e);
    INS(e, SETP_LT_U32, R(role), R(k->tid), I(TC_COMPUTE));
    INSP(e, role, 1, BRA_UNI, L(not_compute));
    e_comment(e, "role: compute (warps 0-3)");
    head_stats(k, &f);
    dkv_base(k, &f);
    step_loop(k, &f, compute);
    INS(e, BRA_UNI, L(roles_done));
    e_place(e, not_compute);
    INS(e, SETP_GE_U32, R(role), R(k->tid), I(TC_PRODUCER0));
    INSP(e, role, 1, BRA_UNI, L(not_issuer));
    e_comment(e, "role: producer (warp 5)");
    step_loop(k, &f, produce);
    INS(e, BRA_UNI, L(roles_done));
    e_place(e, not_issuer);
    e_comment(e, "role: MMA issuer (warp 4; lane 0 issues)");
    f.leader = e_reg(e, RC_PRED);
    INS(e, SETP_EQ_U32, R(f.leader), R(k->tid), I(TC_ISSUER));
    tc_descriptors(k, &f);
    step_loop(k, &f, issue);
    e_place(e, roles_done);
    umma_sync(k);

    e_comment(e, "epilogue: dq out, TMEM back");
    epilogue(k, &f);
    umma_epilogue(k, f.taddr, plan_tmem_alloc(p), 0);
    kctx_finish(k, module);
}
