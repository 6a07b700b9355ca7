/* attn_bwd dQ kernel for deterministic=1: dQ of one query block without atomics.
 *
 *   for each CTA (query block m, query head h, batch b):
 *     load Q_m, dO_m;  dQ = 0
 *     for each key block n that Q_m sees (unmasked first, then ragged/causal):
 *       S  = Q_m K_n^T                   (masked where needed)
 *       P  = exp(scale S - lse_m)        (lse along the rows)
 *       dP = dO_m V_n^T
 *       dS = P o (dP - delta_m)
 *       dQ += dS K_n
 *     store scale * dQ
 *
 * S and dP are recomputed here rather than shared with the main kernel: each
 * dQ element is summed by one thread in a fixed order. Each warp keeps its
 * rows of Q and dO in registers as A fragments for the whole loop, so shared
 * memory serves only K and V to the products. K and V are
 * double-buffered: block n+1 lands in the other stage while block n is
 * worked on. The inner loop is dq_step(). */
#include "attn_bwd.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "../templates/epilogue.h"
#include "../templates/softmax.h"
#include "../templates/stages.h"

/* Its own tile, whatever the main kernel's: 64 query rows (16 per warp)
 * against 64 keys per step keeps S, dP and dQ in registers at d = 128 with
 * two CTAs per SM. */
#define DQ_BM BWD_DQ_BM
#define DQ_BN BWD_DQ_BN
#define DQ_WARPS 4

typedef struct {
    const AttnDesc *d;
    int mt, threads;
    SmemTile sq, sdo, sk, sv;         /* K and V: stage 0 */
    Stages st;
    Reg b, h, s_q, s_k, off, m_start, warp_row0;
    Reg k_base, v_base, k_rs, v_rs, scale_log2, zero;
    Reg nl[4], dl[4];                 /* per (m tile, half) row: -lse*log2(e), delta */
    TileLoader ld;
    LdsmBases fq, fdo, fk, fv, fkt;
    Reg *qa, *doa;                    /* this warp's Q and dO rows: A fragments held all along */
    RowBlocks rb;
    Acc dq;
    int done;                         /* varlen: the label past the end, for a block past its sequence's rows */
    KeyList *kl;                      /* block-sparse: the key list being walked (NULL: every key block) */
} Dq;

static void setup(Kctx *k, Dq *f) {
    Emit *e = &k->e;
    Reg mblk = e_reg(e, RC_B32);
    INS(e, MOV_B32, R(mblk), SR("%ctaid.x"));
    cta_coords(k, &f->b, &f->h);
    attn_lengths(k, f->d, f->b, &f->s_q, &f->s_k);
    f->m_start = e_reg(e, RC_B32), f->off = e_reg(e, RC_B32), f->warp_row0 = e_reg(e, RC_B32);
    INS(e, MUL_LO_U32, R(f->m_start), R(mblk), I(DQ_BM));
    if (f->d->varlen) {   /* the grid covers the longest sequence: a block past this one's rows has nothing */
        Reg past = e_reg(e, RC_PRED);
        INS(e, SETP_GE_U32, R(past), R(f->m_start), R(f->s_q));
        INSP(e, past, 0, BRA_UNI, L(f->done = e_label(e)));
    }
    INS(e, SUB_S32, R(f->off), R(f->s_k), R(f->s_q));
    INS(e, MUL_LO_U32, R(f->warp_row0), R(k->warp), I(16 * f->mt));
    Reg kvh = kv_head_of(k, f->h);
    f->k_base = attn_head_base(k, f->d, "k", f->b, kvh);
    f->v_base = attn_head_base(k, f->d, "v", f->b, kvh);
    f->k_rs = row_stride_bytes(k, "k");
    f->v_rs = row_stride_bytes(k, "v");
    f->scale_log2 = scale_log2(k);
    f->zero = e_reg(e, RC_F32);
    INS(e, MOV_F32, R(f->zero), FI(0.0f));
    f->rb = (RowBlocks){f->d->causal, DQ_BM, DQ_BN, 16 * f->mt, f->s_q, f->s_k, f->off, f->m_start, 0, 0, 0, f->d->varlen, 1, 0};
}

/* -lse*log2(e) and delta of this lane's rows; rows past s_q get P = 0 */
static void row_stats(Kctx *k, Dq *f) {
    Emit *e = &k->e;
    Reg g = e_reg(e, RC_B32), first = e_reg(e, RC_B32), lse = kc_ptr(k, "lse"), delta = kc_ptr(k, "delta");
    INS(e, SHR_U32, R(g), R(k->lane), I(2));
    INS(e, ADD_U32, R(first), R(f->m_start), R(f->warp_row0));
    INS(e, ADD_U32, R(first), R(first), R(g));
    Reg srow = attn_stats_row(k, f->d, f->b, f->h);
    for (int r = 0; r < 2 * f->mt; r++) {
        Reg row = e_reg(e, RC_B32), p = e_reg(e, RC_PRED), a = e_reg(e, RC_B64), b = e_reg(e, RC_B64), x = e_reg(e, RC_F32);
        f->nl[r] = e_reg(e, RC_F32), f->dl[r] = e_reg(e, RC_F32);
        INS(e, ADD_U32, R(row), R(first), I(16 * (r >> 1) + 8 * (r & 1)));
        INS(e, SETP_LT_U32, R(p), R(row), R(f->s_q));
        INS(e, ADD_U32, R(row), R(row), R(srow));
        INS(e, MAD_WIDE_U32, R(a), R(row), I(4), R(lse));
        INS(e, MAD_WIDE_U32, R(b), R(row), I(4), R(delta));
        INS(e, MOV_F32, R(f->nl[r]), FI(-INFINITY));
        INS(e, MOV_F32, R(f->dl[r]), FI(0.0f));
        INSP(e, p, 0, LD_GLOBAL_F32, R(x), A(a, 0));
        INSP(e, p, 0, MUL_F32, R(f->nl[r]), R(x), FI((float)-M_LOG2E));
        INSP(e, p, 0, LD_GLOBAL_F32, R(f->dl[r]), A(b, 0));
    }
}

static void fragment_bases(Kctx *k, Dq *f) {
    Reg l15, hi, row, krow, ksel;
    ldsm_a_lanes(k, f->warp_row0, &l15, &hi, &row);
    ldsm_bases(k, &f->fq, f->sq, row, hi);        /* A of S = Q K^T */
    ldsm_bases(k, &f->fdo, f->sdo, row, hi);      /* A of dP = dO V^T */
    ldsm_bases(k, &f->fkt, f->sk, l15, hi);       /* B of dQ += dS K, transposed */
    ldsm_b_lanes(k, &krow, &ksel);
    ldsm_bases(k, &f->fk, f->sk, krow, ksel);     /* B of S: rows of K */
    f->fv = (LdsmBases){f->sv, f->fk.base};       /* B of dP: rows of V (same row width, own offset) */
    stages_track(&f->st, f->fk.base);
    stages_track(&f->st, f->fkt.base);
}

/* P = 2^(S scale log2(e) - lse log2(e)), then dS = P o (dP - delta) into dp */
static void score_grads(Kctx *k, Dq *f, Acc *s, Acc *dp) {
    Emit *e = &k->e;
    for (int i = 0; i < s->mt * s->nt * 4; i++) {
        int r = 2 * (i / (4 * s->nt)) + ((i >> 1) & 1);   /* (m tile, half) of the element */
        INS(e, FMA_F32, R(s->r[i]), R(s->r[i]), R(f->scale_log2), R(f->nl[r]));
        INS(e, EX2_F32, R(s->r[i]), R(s->r[i]));
        INS(e, SUB_F32, R(dp->r[i]), R(dp->r[i]), R(f->dl[r]));
        INS(e, MUL_F32, R(dp->r[i]), R(dp->r[i]), R(s->r[i]));
    }
}

/* One key block: the inner loop of the kernel. */
static void dq_step(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    Dq *f = ctx;
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    Reg n_start = e_reg(e, RC_B32), next = e_reg(e, RC_B32), last = e_reg(e, RC_PRED);
    e_comment(e, "key block: %s", masked ? "ragged or causal, masked" : "fully visible");
    sync_tiles(k);                            /* K_n and V_n landed; everyone is done with block n-1's stage */
    int skip = e_label(e);
    if (f->kl) sparse_next(k, f->kl, next, skip);
    else {
        INS(e, ADD_U32, R(next), R(n), I(1));
        INS(e, SETP_GE_U32, R(last), R(next), R(n_max));
        INSP(e, last, 0, BRA_UNI, L(skip));
    }
    INS(e, MUL_LO_U32, R(next), R(next), I(DQ_BN));
    Reg shift = stages_other(k, &f->st);
    tl_issue_at(k, &f->ld, f->sk, shift, f->k_base, f->k_rs, next, f->s_k);
    tl_issue_at(k, &f->ld, f->sv, shift, f->v_base, f->v_rs, next, f->s_k);
    INS0(e, CP_ASYNC_COMMIT);
    e_place(e, skip);
    INS(e, MUL_LO_U32, R(n_start), R(n), I(DQ_BN));
    Acc s, dp;
    acc_new(k, &s, f->mt, DQ_BN / 8);
    mma_abt_regs(k, &s, f->qa, d->d / 16, &f->fk, d->dtype, f->zero);      /* S = Q K^T */
    if (masked) {
        Reg room[4];
        row_room(k, &f->rb, n_start, room);
        softmax_mask(k, &s, room);
    }
    acc_new(k, &dp, f->mt, DQ_BN / 8);
    mma_abt_regs(k, &dp, f->doa, d->dv / 16, &f->fv, d->dtype, f->zero);   /* dP = dO V^T */
    score_grads(k, f, &s, &dp);
    Reg *ps = pack_a_from_acc(k, &dp, d->dtype);
    mma_ab_trans(k, &f->dq, ps, DQ_BN / 16, &f->fkt, d->dtype);            /* dQ += dS K */
    stages_advance(k, &f->st);
}

static void epilogue(Kctx *k, Dq *f) {
    Emit *e = &k->e;
    Reg rows_left = e_reg(e, RC_B32), base = e_reg(e, RC_B64), rs = row_stride_bytes(k, "dq");
    sync_tiles(k);                            /* dQ staging reuses Q's shared memory */
    acc_scale(k, &f->dq, kc_f32(k, "softmax_scale"));
    acc_to_smem(k, &f->dq, f->d->dtype, f->sq, f->warp_row0);
    INS(e, BAR_SYNC, I(0));
    INS(e, SUB_U32, R(rows_left), R(f->s_q), R(f->m_start));
    INS(e, MAD_WIDE_U32, R(base), R(f->m_start), R(rs), R(attn_head_base(k, f->d, "dq", f->b, f->h)));
    smem_to_global(k, f->sq, f->threads, base, rs, rows_left);
}

void bwd_dq_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module) {
    Kctx kc;
    kctx_begin(&kc, ks);
    Dq f = {.d = d, .mt = DQ_BM / DQ_WARPS / 16, .threads = 32 * DQ_WARPS};
    f.sq = (SmemTile){DQ_BM, d->d, plan_region(p, "Q")};
    f.sdo = (SmemTile){DQ_BM, d->dv, plan_region(p, "dO")};
    f.sk = (SmemTile){DQ_BN, d->d, plan_region(p, "K.0")};
    f.sv = (SmemTile){DQ_BN, d->dv, plan_region(p, "V.0")};
    setup(&kc, &f);
    stages_init(&kc, &f.st, plan_stage_stride(p));
    Reg zero_u = kc_imm32(&kc, 0), k0 = zero_u;
    KeyList kl;
    if (d->block_m) {   /* the first key block is the list's */
        Reg m = e_reg(&kc.e, RC_B32);
        INS(&kc.e, MOV_B32, R(m), SR("%ctaid.x"));
        sparse_key_list_at(&kc, &kl, DQ_BM, DQ_BN, f.b, f.h, m);
        INS(&kc.e, MUL_LO_U32, R(k0 = e_reg(&kc.e, RC_B32)), R(sparse_entry_or0(&kc, kl.list, kl.count, zero_u)), I(DQ_BN));
        f.kl = &kl;
    }
    tl_init(&kc, &f.ld, d->d, DQ_BM > DQ_BN ? DQ_BM : DQ_BN, f.threads);
    e_comment(&kc.e, "prologue: Q_m, dO_m and the first K, V in flight");
    tl_issue(&kc, &f.ld, f.sq, attn_head_base(&kc, d, "q", f.b, f.h), row_stride_bytes(&kc, "q"), f.m_start, f.s_q);
    tl_issue(&kc, &f.ld, f.sdo, attn_head_base(&kc, d, "do", f.b, f.h), row_stride_bytes(&kc, "do"), f.m_start, f.s_q);
    INS0(&kc.e, CP_ASYNC_COMMIT);
    tl_issue(&kc, &f.ld, f.sk, f.k_base, f.k_rs, k0, f.s_k);
    tl_issue(&kc, &f.ld, f.sv, f.v_base, f.v_rs, k0, f.s_k);
    INS0(&kc.e, CP_ASYNC_COMMIT);
    row_stats(&kc, &f);
    fragment_bases(&kc, &f);
    INS(&kc.e, CP_ASYNC_WAIT, I(1));              /* Q_m and dO_m landed; K, V may still be in flight */
    INS(&kc.e, BAR_SYNC, I(0));
    f.qa = frag_a_load(&kc, &f.fq, f.mt, d->d / 16);
    f.doa = frag_a_load(&kc, &f.fdo, f.mt, d->dv / 16);
    acc_new(&kc, &f.dq, f.mt, d->d / 8);
    acc_fill(&kc, &f.dq, 0.0f);
    Reg n = e_reg(&kc.e, RC_B32), n_full = e_reg(&kc.e, RC_B32), n_max = e_reg(&kc.e, RC_B32);
    key_blocks(&kc, &f.rb, n_full, n_max);
    if (f.kl) sparse_key_loop(&kc, dq_step, &f, f.kl, 0, n_full, n_max);
    else {
        INS(&kc.e, MOV_B32, R(n), I(0));
        key_loop(&kc, dq_step, &f, n, n_full, n_max, 0);
        key_loop(&kc, dq_step, &f, n, n_max, n_max, 1);
    }
    epilogue(&kc, &f);
    if (d->varlen) e_place(&kc.e, f.done);
    kctx_finish(&kc, module);
}

void bwd_dq_plan(const AttnDesc *d, Plan *p) {
    int mt = DQ_BM / DQ_WARPS / 16;
    *p = (Plan){.threads = 32 * DQ_WARPS};
    plan_add_region(p, "Q", DQ_BM * d->d * 2, 128, "query block, swizzled; dQ staging after the loop");
    plan_add_region(p, "dO", DQ_BM * d->dv * 2, 128, "output-gradient block");
    plan_add_region(p, "K.0", DQ_BN * d->d * 2, 128, "key tile of the step (stage 0)");
    plan_add_region(p, "V.0", DQ_BN * d->dv * 2, 128, "value tile, staged like K");
    plan_add_region(p, "K.1", DQ_BN * d->d * 2, 128, "the next key tile lands here while .0 is used, then they swap");
    plan_add_region(p, "V.1", DQ_BN * d->dv * 2, 128, "the next value tile, staged like K");
    /* dQ accumulator, Q and dO fragments all along; S and dP of the step; dS fragments */
    p->regs_est = mt * (d->d / 8) * 4 + mt * (d->d / 16) * 4 + mt * (d->dv / 16) * 4 + 2 * mt * (DQ_BN / 8) * 4 +
                  mt * (DQ_BN / 16) * 4 + 4 * mt + 40;
    char what[96];
    snprintf(what, sizeof what, "attn_bwd dq (deterministic) d=%d bm=%d bn=%d warps=%d", d->d, DQ_BM, DQ_BN, DQ_WARPS);
    plan_finish(p, d->arch, what);
}

void bwd_dq_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks) {
    *ks = (KernelSpec){.block = {32u * DQ_WARPS, 1, 1}, .dyn_smem = (unsigned)p->smem_bytes};
    bwd_entry(ks, d, "dq", 0);
    bwd_inputs(ks, d);
    attn_tensor(ks, d, "dq", PR_OUT, "gradient of the queries");
    if (d->block_m) abi_sparse_keys(ks);
    if (d->varlen) abi_varlen(ks);
    abi_sizes(ks, attn_size_names, 4);
    abi_scale(ks, ATTN_SCALE_MEANING);
    snprintf(ks->grid[0], sizeof ks->grid[0], "cdiv(s_q, %d)", DQ_BM);
    snprintf(ks->grid[1], sizeof ks->grid[1], "h_q");
    snprintf(ks->grid[2], sizeof ks->grid[2], "b");
}
