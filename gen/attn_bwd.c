/* attn_bwd main kernel, mma.sync family: dK and dV of one key block.
 *
 *   for each CTA (key block n, kv head, batch b):
 *     load K_n, V_n;  dK = dV = 0
 *     for each query head h of the kv head's group, each query block m that sees K_n:
 *       S^T  = K_n Q_m^T                     (masked where causal needs it)
 *       P^T  = exp(scale S^T - lse_m)        (lse along the columns)
 *       dP^T = V_n dO_m^T
 *       dS^T = P^T o (dP^T - delta_m)
 *       dV  += P^T dO_m;   dK += dS^T Q_m
 *       dQ_m += dS K_n                       (dS through shared memory, fp32 atomics;
 *                                             left to the dq kernel when deterministic)
 *     store scale * dK, dV
 *
 * Warp w owns key rows [16 mk w, 16 mk (w+1)) of S^T, dP^T, dK and dV; for
 * dQ the warps split the bm x d tile into 16-row x d/cg-column slices. Q, dO
 * and the statistics are double-buffered: block m+1 streams into the other
 * stage while block m is worked on, one barrier per block. The inner loop
 * is bwd_step() below. */
#include "attn_bwd.h"
#include "attn_bwd_math.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../templates/epilogue.h"
#include "../templates/stages.h"

typedef struct {
    const AttnDesc *d;
    int mk, threads, cg, nq;          /* key m tiles per warp; dQ column groups, n tiles per warp */
    SmemTile sk, sv, sq, sdo, sds;    /* Q and dO: stage 0 */
    int stats_off;                    /* stage 0's [bm] f32 lse, then [bm] f32 delta */
    Stages st;
    BwdStats stats;                   /* this lane's column pair in the current stage's statistics */
    Reg s_q, s_k, off, group;
    int done;                         /* varlen: the label past the end, for a key block past its sequence's keys */
    QueryBlocks blocks;               /* the query blocks this CTA's keys see */
    Reg k_rs, q_rs, do_rs;
    Reg scale_log2, zero, warp_row0;
    TileLoader ld;
    LdsmBases ka, va;                 /* A of S^T and dP^T: this warp's rows of K and V */
    LdsmBases qb, dob;                /* B of S^T and dP^T: rows of Q and dO */
    LdsmBases qt, dot;                /* B of dK and dV: Q and dO read transposed */
    LdsmBases kt, dsa;                /* dQ: K read transposed; A from dS^T read transposed */
    Acc dk, dv;
} Bwd;

typedef struct { Reg h, m_start; } QBlock;

/* The CTA's batch, kv head and first key row, read from %ctaid where they
 * are used rather than held in registers across the loop. */
static Reg cta_batch(Kctx *k) {
    Reg r = e_reg(&k->e, RC_B32);
    INS(&k->e, MOV_B32, R(r), SR("%ctaid.z"));
    return r;
}

static Reg cta_kv_head(Kctx *k) {
    Reg r = e_reg(&k->e, RC_B32);
    INS(&k->e, MOV_B32, R(r), SR("%ctaid.y"));
    return r;
}

static Reg cta_key0(Kctx *k, const Bwd *f) {
    Reg r = e_reg(&k->e, RC_B32);
    INS(&k->e, MOV_B32, R(r), SR("%ctaid.x"));
    INS(&k->e, MUL_LO_U32, R(r), R(r), I(f->d->tile.bn));
    return r;
}

/* iteration it -> (query head, first query row) */
static QBlock qblock(Kctx *k, Bwd *f, Reg it) {
    QBlock q;
    query_block_at(k, &f->blocks, it, cta_kv_head(k), &q.h, &q.m_start);
    return q;
}

static void setup(Kctx *k, Bwd *f) {
    Emit *e = &k->e;
    f->group = e_reg(e, RC_B32);
    attn_lengths(k, f->d, f->d->varlen ? cta_batch(k) : (Reg){0}, &f->s_q, &f->s_k);   /* padded: b unused */
    if (f->d->varlen) {   /* the grid covers the longest sequence: a key block past this one's keys has nothing */
        Reg past = e_reg(e, RC_PRED);
        INS(e, SETP_GE_U32, R(past), R(cta_key0(k, f)), R(f->s_k));
        INSP(e, past, 0, BRA_UNI, L(f->done = e_label(e)));
    }
    INS(e, DIV_U32, R(f->group), R(kc_u32(k, "h_q")), R(kc_u32(k, "h_kv")));
    f->off = e_reg(e, RC_B32);
    INS(e, SUB_S32, R(f->off), R(f->s_k), R(f->s_q));
    f->warp_row0 = e_reg(e, RC_B32);
    INS(e, MUL_LO_U32, R(f->warp_row0), R(k->warp), I(16 * f->mk));
    f->k_rs = row_stride_bytes(k, "k");
    f->q_rs = row_stride_bytes(k, "q");
    f->do_rs = row_stride_bytes(k, "do");
    f->scale_log2 = scale_log2(k);
    f->zero = e_reg(e, RC_F32);
    INS(e, MOV_F32, R(f->zero), FI(0.0f));
    query_blocks(k, f->d->causal, f->d->tile.bm, f->d->tile.bn, cta_key0(k, f), f->s_q, f->off, f->group, &f->blocks);
    if (f->d->block_m) {   /* block-sparse: the key block's query list */
        Reg n = e_reg(e, RC_B32), mt;
        INS(e, MOV_B32, R(n), SR("%ctaid.x"));
        Reg list = sparse_query_list(k, f->d->tile.bm, f->d->tile.bn, cta_batch(k), cta_kv_head(k), n, &mt);
        query_blocks_listed(k, &f->blocks, list, mt);
    }
}

static void fragment_bases(Kctx *k, Bwd *f) {
    Emit *e = &k->e;
    Reg l15, hi, row, brow, bsel, pair = e_reg(e, RC_B32), rg = e_reg(e, RC_B32);
    ldsm_a_lanes(k, f->warp_row0, &l15, &hi, &row);
    /* K and V, Q and dO have the same row width: one base register per pair, the tile offset is an immediate */
    ldsm_bases(k, &f->ka, f->sk, row, hi);
    f->va = (LdsmBases){f->sv, f->ka.base};
    ldsm_bases(k, &f->qt, f->sq, l15, hi);
    f->dot = (LdsmBases){f->sdo, f->qt.base};
    /* lanes 0-15 address rows 0-7 (two 8-column halves), 16-31 rows 8-15: the
     * B operand read as is, and the A operand read transposed from [k][m] */
    ldsm_b_lanes(k, &brow, &bsel);
    ldsm_bases(k, &f->qb, f->sq, brow, bsel);
    f->dob = (LdsmBases){f->sdo, f->qb.base};
    Reg stb = e_reg(e, RC_B32);
    INS(e, AND_B32, R(stb), R(k->lane), I(3));
    INS(e, MAD_LO_U32, R(stb), R(stb), I(8), R(k->smem));
    f->stats = (BwdStats){stb, f->stats_off, f->stats_off + 4 * f->d->tile.bm};
    stages_track(&f->st, f->qt.base);
    stages_track(&f->st, f->qb.base);
    stages_track(&f->st, stb);
    if (f->d->tile.deterministic) return;
    /* dQ slice of this warp: 16 query rows (row group rg), d/cg columns (group warp / rgs) */
    int rgs = f->d->tile.bm / 16;
    INS(e, REM_U32, R(rg), R(k->warp), I(rgs));
    INS(e, DIV_U32, R(pair), R(k->warp), I(rgs));
    INS(e, MUL_LO_U32, R(pair), R(pair), I(f->nq / 2));
    ldsm_bases_at(k, &f->dsa, f->sds, brow, bsel, rg);
    ldsm_bases_at(k, &f->kt, f->sk, l15, hi, pair);
}

/* lse and delta of query rows m_start + tid (tid < bm) into the statistics
 * of the stage at `shift`, in the current cp.async group. Rows past s_q read
 * as 0: harmless, since their Q and dO rows are zero-filled too. */
static void stats_issue(Kctx *k, Bwd *f, QBlock q, Reg shift) {
    Emit *e = &k->e;
    int bm = f->d->tile.bm;
    Reg row = e_reg(e, RC_B32), last = e_reg(e, RC_B32), sz = e_reg(e, RC_B32), dst = e_reg(e, RC_B32);
    Reg mine = e_reg(e, RC_PRED), p = e_reg(e, RC_PRED), a = e_reg(e, RC_B64);
    INS(e, SETP_LT_U32, R(mine), R(k->tid), I(bm));
    INS(e, ADD_U32, R(row), R(q.m_start), R(k->tid));
    INS(e, SETP_LT_U32, R(p), R(row), R(f->s_q));
    INS(e, SELP_B32, R(sz), I(4), I(0), R(p));
    INS(e, SUB_U32, R(last), R(f->s_q), I(1));
    INS(e, MIN_U32, R(row), R(row), R(last));
    INS(e, ADD_U32, R(row), R(row), R(attn_stats_row(k, f->d, cta_batch(k), q.h)));
    INS(e, MUL_WIDE_U32, R(a), R(row), I(4));
    INS(e, MAD_LO_U32, R(dst), R(k->tid), I(4), R(k->smem));
    INS(e, ADD_U32, R(dst), R(dst), R(shift));
    static const char *const src[2] = {"lse", "delta"};
    for (int i = 0; i < 2; i++) {
        Reg g = kc_ptr(k, src[i]);
        INS(e, ADD_U64, R(g), R(g), R(a));
        INSP(e, mine, 0, CP_ASYNC_CA, A(dst, f->stats_off + 4 * bm * i), A(g, 0), I(4), R(sz));
    }
}

/* Q, dO and the statistics of query block q into the stage at `shift`, as one cp.async group. */
static void issue_block(Kctx *k, Bwd *f, QBlock q, Reg shift) {
    Reg b = cta_batch(k);
    tl_issue_at(k, &f->ld, f->sq, shift, attn_head_base(k, f->d, "q", b, q.h), f->q_rs, q.m_start, f->s_q);
    tl_issue_at(k, &f->ld, f->sdo, shift, attn_head_base(k, f->d, "do", b, q.h), f->do_rs, q.m_start, f->s_q);
    stats_issue(k, f, q, shift);
    INS0(&k->e, CP_ASYNC_COMMIT);
}

/* dQ_m += dS K_n for this warp's slice, added into the fp32 accumulator */
static void dq_partial(Kctx *k, Bwd *f, QBlock q) {
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    Acc dq;
    acc_new(k, &dq, 1, f->nq);
    mma_smem_ab(k, &dq, &f->dsa, d->tile.bn / 16, &f->kt, d->dtype, f->zero);
    Reg row = e_reg(e, RC_B32), col = e_reg(e, RC_B32), t = e_reg(e, RC_B32), p0 = e_reg(e, RC_PRED);
    Reg p1 = e_reg(e, RC_PRED), a = e_reg(e, RC_B64);
    int rgs = d->tile.bm / 16;
    /* row m_start + 16 (warp % rgs) + g; column (warp / rgs) * d/cg + 2t */
    INS(e, REM_U32, R(row), R(k->warp), I(rgs));
    INS(e, MAD_LO_U32, R(row), R(row), I(16), R(q.m_start));
    INS(e, SHR_U32, R(t), R(k->lane), I(2));
    INS(e, ADD_U32, R(row), R(row), R(t));
    INS(e, SETP_LT_U32, R(p0), R(row), R(f->s_q));
    INS(e, ADD_U32, R(t), R(row), I(8));
    INS(e, SETP_LT_U32, R(p1), R(t), R(f->s_q));
    INS(e, DIV_U32, R(col), R(k->warp), I(rgs));
    INS(e, AND_B32, R(t), R(k->lane), I(3));
    INS(e, MUL_LO_U32, R(t), R(t), I(2));
    INS(e, MAD_LO_U32, R(col), R(col), I(d->d / f->cg), R(t));
    INS(e, ADD_U32, R(row), R(row), R(attn_stats_row(k, f->d, cta_batch(k), q.h)));
    INS(e, MAD_LO_U32, R(row), R(row), I(d->d), R(col));
    INS(e, MAD_WIDE_U32, R(a), R(row), I(4), R(kc_ptr(k, "dq_accum")));
    for (int j = 0; j < f->nq; j++)
        for (int c = 0; c < 4; c++)
            INSP(e, c < 2 ? p0 : p1, 0, RED_GLOBAL_ADD_F32, A(a, 4 * (8 * (c >> 1) * d->d + 8 * j + (c & 1))),
                 R(ACC(&dq, 0, j, c)));
}

/* Branches to the returned label (placed by the caller) when it is the last
 * iteration; *next = it + 1. */
static int skip_if_last(Kctx *k, Bwd *f, Reg it, Reg *next) {
    Emit *e = &k->e;
    Reg last = e_reg(e, RC_PRED);
    int skip = e_label(e);
    *next = e_reg(e, RC_B32);
    INS(e, ADD_U32, R(*next), R(it), I(1));
    INS(e, SETP_GE_U32, R(last), R(*next), R(f->blocks.total));
    INSP(e, last, 0, BRA_UNI, L(skip));
    return skip;
}

/* Q, dO and the statistics of block it+1 into the other stage, unless it is the last. */
static void prefetch(Kctx *k, Bwd *f, Reg it) {
    Reg next;
    int skip = skip_if_last(k, f, it, &next);
    issue_block(k, f, qblock(k, f, next), stages_other(k, &f->st));
    e_place(&k->e, skip);
}

/* One query block: the inner loop of the kernel. Block it+1 streams into
 * the other stage meanwhile. */
static void bwd_step(Kctx *k, void *ctx, Reg it, int masked) {
    Bwd *f = ctx;
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    int bm = d->tile.bm, mk = f->mk;
    e_comment(e, "query block: %s", masked ? "causal, masked" : "fully visible");
    sync_tiles(k);                            /* block it is in; everyone is done with block it-1's stage */
    prefetch(k, f, it);
    Acc s, dp;
    acc_new(k, &s, mk, bm / 8);
    mma_abt(k, &s, &f->ka, &f->qb, d->d / 16, d->dtype, f->zero);          /* S^T = K Q^T */
    if (masked) {
        Reg key_row0 = e_reg(e, RC_B32);
        INS(e, ADD_U32, R(key_row0), R(cta_key0(k, f)), R(f->warp_row0));
        mask_future_keys(k, &s, qblock(k, f, it).m_start, f->off, key_row0);
    }
    bwd_probabilities(k, &f->stats, &s, f->scale_log2);
    acc_new(k, &dp, mk, bm / 8);
    mma_abt(k, &dp, &f->va, &f->dob, d->dv / 16, d->dtype, f->zero);       /* dP^T = V dO^T */
    bwd_score_grads(k, &f->stats, &s, &dp);
    Reg *pp = pack_a_from_acc(k, &s, d->dtype);
    mma_ab_trans(k, &f->dv, pp, bm / 16, &f->dot, d->dtype);               /* dV += P^T dO */
    Reg *ps = pack_a_from_acc(k, &dp, d->dtype);
    mma_ab_trans(k, &f->dk, ps, bm / 16, &f->qt, d->dtype);                /* dK += dS^T Q */
    if (!d->tile.deterministic) {
        packed_to_smem(k, ps, mk, bm / 8, f->sds, f->warp_row0);
        INS(e, BAR_SYNC, I(0));                  /* dS^T complete */
        dq_partial(k, f, qblock(k, f, it));
    }
    stages_advance(k, &f->st);
}

static void epilogue(Kctx *k, Bwd *f) {
    Emit *e = &k->e;
    Reg rows_left = e_reg(e, RC_B32), base = e_reg(e, RC_B64);
    sync_tiles(k);                            /* K and V become the staging tiles */
    acc_scale(k, &f->dk, kc_f32(k, "softmax_scale"));
    acc_to_smem(k, &f->dk, f->d->dtype, f->sk, f->warp_row0);
    acc_to_smem(k, &f->dv, f->d->dtype, f->sv, f->warp_row0);
    INS(e, BAR_SYNC, I(0));
    Reg n0 = cta_key0(k, f), b = cta_batch(k), kvh = cta_kv_head(k);
    INS(e, SUB_U32, R(rows_left), R(f->s_k), R(n0));
    static const char *const out[2] = {"dk", "dv"};
    for (int i = 0; i < 2; i++) {
        Reg rs = row_stride_bytes(k, out[i]);
        INS(e, MAD_WIDE_U32, R(base), R(n0), R(rs), R(attn_head_base(k, f->d, out[i], b, kvh)));
        smem_to_global(k, i ? f->sv : f->sk, f->threads, base, rs, rows_left);
    }
}

void bwd_main_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module) {
    Kctx kc;
    kctx_begin(&kc, ks);
    const AttnTile *t = &d->tile;
    Bwd f = {.d = d, .mk = t->bn / t->warps / 16, .threads = 32 * t->warps};
    if (!t->deterministic) {   /* the dQ slices (check_tile: whole ones); deterministic leaves dQ to its own kernel */
        f.cg = t->warps / (t->bm / 16);
        f.nq = d->d / f.cg / 8;
    }
    f.sk = (SmemTile){t->bn, d->d, plan_region(p, "K")};
    f.sv = (SmemTile){t->bn, d->dv, plan_region(p, "V")};
    f.sq = (SmemTile){t->bm, d->d, plan_region(p, "Q.0")};
    f.sdo = (SmemTile){t->bm, d->dv, plan_region(p, "dO.0")};
    if (!t->deterministic) f.sds = (SmemTile){t->bn, t->bm, plan_region(p, "dS")};
    f.stats_off = plan_region(p, "stats.0");
    setup(&kc, &f);
    stages_init(&kc, &f.st, plan_stage_stride(p));
    tl_init(&kc, &f.ld, d->d, t->bm > t->bn ? t->bm : t->bn, f.threads);
    e_comment(&kc.e, "prologue: K_n, V_n, Q and dO of the first block in flight");
    Reg b = cta_batch(&kc), kvh = cta_kv_head(&kc), n0 = cta_key0(&kc, &f);
    tl_issue(&kc, &f.ld, f.sk, attn_head_base(&kc, d, "k", b, kvh), f.k_rs, n0, f.s_k);
    tl_issue(&kc, &f.ld, f.sv, attn_head_base(&kc, d, "v", b, kvh), row_stride_bytes(&kc, "v"), n0, f.s_k);
    Reg zero_u = kc_imm32(&kc, 0);
    issue_block(&kc, &f, qblock(&kc, &f, zero_u), zero_u);
    fragment_bases(&kc, &f);
    acc_new(&kc, &f.dk, f.mk, d->d / 8);
    acc_new(&kc, &f.dv, f.mk, d->dv / 8);
    acc_fill(&kc, &f.dk, 0.0f);
    acc_fill(&kc, &f.dv, 0.0f);
    query_loop(&kc, &f.blocks, bwd_step, &f, 0);
    epilogue(&kc, &f);
    if (d->varlen) e_place(&kc.e, f.done);
    kctx_finish(&kc, module);
}
