/* attn_fwd, mma.sync family: FlashAttention-2 forward.
 *
 *   for each CTA (query block m, head h, batch b):
 *     load Q_m; O = 0; m_i = -inf; l_i = 0
 *     for each key block n (unmasked blocks first, then the ragged/causal ones):
 *       S = Q_m K_n^T                     (mask where needed)
 *       m_new = max(m_i, rowmax S); P = exp(scale*(S - m_new))
 *       l_i = e^(m_i - m_new) l_i + rowsum P;  O = e^(m_i - m_new) O + P V_n
 *     O /= l_i;  lse = scale*m_i + log l_i
 *
 * Each warp owns bm/warps query rows. K_{n+1} streams into shared memory
 * while P V_n runs, V_n while Q K_n^T runs (one buffer each, FA2's schedule).
 * Block-sparse, the key blocks are those of the query block's key list (attn_sparse.h), K of the next of them
 * streaming in. Paged, each key block's rows come from the page block_table names (issue_keys), the sequence's
 * length from seqlens_k. Split-KV, num_splits CTAs share a row block's key blocks and store fp32 partials for the
 * combine kernel (attn_splitkv.h). Packed (tile key pack, decode-shaped GQA), the bm rows are bm/pack tokens of pack
 * query heads of one kv head, head innermost (PackedRows), so each K/V tile serves all of them. The inner loop is
 * attn_step() below. */
#include "attn_sparse.h"
#include "attn_splitkv.h"
#include <stdio.h>
#include <stdlib.h>
#include "../templates/epilogue.h"
#include "../templates/softmax.h"

typedef struct {
    const AttnDesc *d;
    int mt, threads;
    SmemTile sq, sk, sv, so;
    Reg s_q, s_k, off;                /* off = s_k - s_q: the causal diagonal */
    Reg q0;                           /* varlen: the sequence's first packed query row */
    int done;                         /* varlen: the label past the end, where a CTA past its sequence's rows goes */
    Reg m_start, warp_row0;           /* first query row of the CTA; of the warp within it */
    Reg q_base, k_base, v_base;
    Reg q_rs, k_rs, v_rs;             /* row strides in bytes */
    Reg scale_log2, zero;
    TileLoader ld;                    /* Q, K and V tiles share one loader: same row width */
    LdsmBases fq, fk, fv;
    Acc o;
    RowStats rows;
    RowBlocks rb;
    KeyList *kl;                      /* block-sparse: the key list being walked (NULL: every key block) */
    Reg b, kvh;                       /* paged: the batch entry and kv head whose pages are read */
    Reg split;                        /* split-KV: this CTA's share of the row block's keys */
    int pack;                         /* query heads per CTA (1: one; else rows are PackedRows pr) */
    PackedRows pr;
} Fwd;

/* batch entry and query head of this CTA (split-KV: %ctaid.z counts splits within batch entries) */
static void fwd_coords(Kctx *k, Fwd *f, Reg *b, Reg *h) {
    cta_coords(k, b, h);
    if (f->d->splitkv) splitkv_coords(k, b, &f->split);
}

static void setup_problem(Kctx *k, Fwd *f) {
    Emit *e = &k->e;
    Reg mblk = e_reg(e, RC_B32), b, h;
    INS(e, MOV_B32, R(mblk), SR("%ctaid.x"));
    fwd_coords(k, f, &b, &h);
    f->s_q = kc_u32(k, "s_q");
    f->s_k = kc_u32(k, "s_k");
    Reg kvh;
    if (f->pack == 1) kvh = kv_head_of(k, h);
    else {   /* heads h0 .. h0 + pack - 1, as many of them as the group has from j0 */
        Reg group, j0;
        packed_heads(k, f->pack, h, &group, &kvh, &j0, &h);
        f->pr = (PackedRows){f->pack, .s_q = f->s_q, .h0 = h, .heads = e_reg(e, RC_B32)};
        INS(e, SUB_U32, R(f->pr.heads), R(group), R(j0));
        INS(e, MIN_U32, R(f->pr.heads), R(f->pr.heads), I(f->pack));
    }
    f->m_start = e_reg(e, RC_B32);   /* packed: the first token */
    INS(e, MUL_LO_U32, R(f->m_start), R(mblk), I(f->d->tile.bm / f->pack));
    f->pr.tok0 = f->m_start;
    SeqSpan sp = {0};
    if (f->d->varlen) {   /* the sequence's own lengths; the grid's rows past them have nothing to do */
        Reg past = e_reg(e, RC_PRED);
        sp = seq_span(k, b);
        f->s_q = sp.s_q, f->s_k = sp.s_k, f->q0 = sp.q0;
        INS(e, SETP_GE_U32, R(past), R(f->m_start), R(f->s_q));
        INSP(e, past, 0, BRA_UNI, L(f->done = e_label(e)));
    }
    f->off = e_reg(e, RC_B32);
    INS(e, SUB_S32, R(f->off), R(f->s_k), R(f->s_q));
    f->warp_row0 = e_reg(e, RC_B32);
    INS(e, MUL_LO_U32, R(f->warp_row0), R(k->warp), I(16 * f->mt));

    if (f->d->page_size) {   /* the sequence's keys: seqlens_k[b]; k, v by page (issue_keys) */
        f->s_k = paged_seqlen(k, b), f->b = b, f->kvh = kvh;
        INS(e, SUB_S32, R(f->off), R(f->s_k), R(f->s_q));
    }
    f->q_base = f->d->varlen ? tensor_base(k, "q", 's', sp.q0, 'h', h) : head_base(k, "q", b, h);
    if (!f->d->page_size) {
        f->k_base = f->d->varlen ? tensor_base(k, "k", 's', sp.k0, 'h', kvh) : head_base(k, "k", b, kvh);
        f->v_base = f->d->varlen ? tensor_base(k, "v", 's', sp.k0, 'h', kvh) : head_base(k, "v", b, kvh);
    }
    f->q_rs = row_stride_bytes(k, "q");
    f->k_rs = row_stride_bytes(k, "k");
    f->v_rs = row_stride_bytes(k, "v");

    f->scale_log2 = scale_log2(k);
    f->zero = e_reg(e, RC_F32);
    INS(e, MOV_F32, R(f->zero), FI(0.0f));
    f->rb = (RowBlocks){f->d->causal, f->d->tile.bm / f->pack, f->d->tile.bn, 16 * f->mt, f->s_q, f->s_k, f->off, f->m_start,
                        0, 0, 0, f->d->varlen || f->d->page_size, f->pack, 0};
}

/* K or V (v) rows [n_start, n_start + bn) into tile, rows at or past s_k zero-filled. Paged: they are rows
 * n_start % page_size .. of page block_table[b][n_start / page_size] (bn divides the page), or, in pages shorter than
 * bn, each page's rows into its part of the tile (the loader's passes of rows divide the page: paged_tiles). */
static void issue_keys(Kctx *k, Fwd *f, SmemTile tile, int v, Reg n_start) {
    Reg base = v ? f->v_base : f->k_base, rs = v ? f->v_rs : f->k_rs;
    if (!f->d->page_size) {
        tl_issue(k, &f->ld, tile, base, rs, n_start, f->s_k);
        return;
    }
    Emit *e = &k->e;
    int page = f->d->page_size;
    if (page < tile.rows) {
        Reg zero = e_reg(e, RC_B32);
        INS(e, MOV_B32, R(zero), I(0));
        for (int j = 0; j < tile.rows / page; j++) {   /* a page past the keys: no table entry, no row read */
            Reg in, start, left = e_reg(e, RC_B32);
            Reg id = paged_sub_page(k, page, f->b, n_start, j, f->s_k, zero, &in, &start);
            INS(e, SUB_U32, R(left), R(f->s_k), R(start));   /* the page's keys left, 0 past the sequence */
            INS(e, SELP_B32, R(left), R(left), I(0), R(in));
            SmemTile sub = {page, tile.cols, tile.off + j * page * tile_row_bytes(tile)};
            tl_issue(k, &f->ld, sub, tensor_base(k, v ? "v" : "k", 'b', id, 'h', f->kvh), rs, zero, left);
        }
        return;
    }
    int shift = __builtin_ctz((unsigned)f->d->page_size);
    Reg pg = e_reg(e, RC_B32), first = e_reg(e, RC_B32), row = e_reg(e, RC_B32), left = e_reg(e, RC_B32);
    Reg id = e_reg(e, RC_B32), in = e_reg(e, RC_PRED);
    INS(e, SHR_U32, R(pg), R(n_start), I(shift));
    INS(e, SETP_LT_U32, R(in), R(n_start), R(f->s_k));   /* a block past the keys reads no table entry, no row */
    Reg a = block_table_at(k, f->b, pg);
    INS(e, MOV_B32, R(id), I(0));
    INSP(e, in, 0, LD_GLOBAL_NC_B32, R(id), A(a, 0));
    INS(e, SHL_B32, R(first), R(pg), I(shift));
    INS(e, SUB_U32, R(row), R(n_start), R(first));
    INS(e, SUB_U32, R(left), R(f->s_k), R(first));
    INS(e, SELP_B32, R(left), R(left), I(0), R(in));
    tl_issue(k, &f->ld, tile, tensor_base(k, v ? "v" : "k", 'b', id, 'h', f->kvh), rs, row, left);
}

static void fragment_bases(Kctx *k, Fwd *f) {
    Reg l15, hi, qrow, krow, ksel;
    ldsm_a_lanes(k, f->warp_row0, &l15, &hi, &qrow);
    ldsm_bases(k, &f->fq, f->sq, qrow, hi);        /* A of S = Q K^T: rows of Q */
    ldsm_bases(k, &f->fv, f->sv, l15, hi);         /* B of O = P V, transposed */
    ldsm_b_lanes(k, &krow, &ksel);                 /* B of S = Q K^T: rows of K */
    ldsm_bases(k, &f->fk, f->sk, krow, ksel);
}

/* One key block: the inner loop of the kernel. */
static void attn_step(Kctx *k, void *ctx, Reg n, Reg n_max, int masked) {
    Fwd *f = ctx;
    Emit *e = &k->e;
    const AttnDesc *d = f->d;
    int bn = d->tile.bn;
    Reg n_start = e_reg(e, RC_B32), next = e_reg(e, RC_B32), last = e_reg(e, RC_PRED);
    e_comment(e, "key block n: %s", masked ? "ragged or causal, masked" : "fully visible");
    sync_tiles(k);                               /* K_n landed; everyone is done with V_{n-1} */
    INS(e, MUL_LO_U32, R(n_start), R(n), I(bn));
    issue_keys(k, f, f->sv, 1, n_start);
    INS0(e, CP_ASYNC_COMMIT);

    Acc s;
    acc_new(k, &s, f->mt, bn / 8);
    mma_abt(k, &s, &f->fq, &f->fk, d->d / 16, d->dtype, f->zero);     /* S = Q K^T */
    if (masked) {
        Reg room[4];
        row_room(k, &f->rb, n_start, room);
        softmax_mask(k, &s, room);
    }
    softmax_update(k, &s, &f->rows, &f->o, f->scale_log2);
    Reg *p = pack_a_from_acc(k, &s, d->dtype);

    sync_tiles(k);                               /* V_n landed; everyone is done with K_n */
    int skip = e_label(e);
    if (f->kl) sparse_next(k, f->kl, next, skip);
    else {
        INS(e, ADD_U32, R(next), R(n), I(1));
        INS(e, SETP_GE_U32, R(last), R(next), R(n_max));
        INSP(e, last, 0, BRA_UNI, L(skip));
    }
    INS(e, MUL_LO_U32, R(next), R(next), I(bn));
    issue_keys(k, f, f->sk, 0, next);
    INS0(e, CP_ASYNC_COMMIT);
    e_place(e, skip);

    mma_ab_trans(k, &f->o, p, bn / 16, &f->fv, d->dtype);              /* O += P V */
}

/* Packed rows go straight from registers to their (token, head): each row's O is a few hundred bytes, and a
 * staged tile's rows would not be one stride apart. O pairs of columns 2t, 2t + 1; LSE by the quad's lead lane. */
static void packed_store(Kctx *k, Fwd *f, const Reg *lse) {
    Emit *e = &k->e;
    Reg b, y, t = e_reg(e, RC_B32), lead = e_reg(e, RC_PRED), o_rs = row_stride_bytes(k, "o");
    Op cvt = f->d->dtype == DT_FP16 ? OP_CVT_F16X2 : OP_CVT_BF16X2;
    cta_coords(k, &b, &y);
    INS(e, AND_B32, R(t), R(k->lane), I(3));
    INS(e, SETP_EQ_U32, R(lead), R(t), I(0));
    for (int r = 0; r < 2 * f->mt; r++) {
        Reg tok, head, ok, w = e_reg(e, RC_B32), a = e_reg(e, RC_B64), lp = e_reg(e, RC_PRED);
        packed_row(k, &f->pr, f->warp_row0, r, &tok, &head, &ok);
        Reg ob = head_base(k, "o", b, head);
        INS(e, MAD_WIDE_U32, R(a), R(tok), R(o_rs), R(ob));
        INS(e, MAD_WIDE_U32, R(a), R(t), I(4), R(a));
        for (int j = 0; j < f->o.nt; j++) {
            Reg pair = e_reg(e, RC_B32);
            e_insn(e, NOGUARD, 0, cvt, OPNDS(R(pair), R(ACC(&f->o, r >> 1, j, 2 * (r & 1) + 1)), R(ACC(&f->o, r >> 1, j, 2 * (r & 1)))));
            INSP(e, ok, 0, ST_GLOBAL_B32, A(a, 16 * j), R(pair));
        }
        INS(e, ADD_U32, R(w), R(stats_row(k, b, head)), R(tok));   /* lse[b][head][tok] */
        INS(e, MAD_WIDE_U32, R(a), R(w), I(4), R(kc_ptr(k, "lse")));
        INS(e, AND_PRED, R(lp), R(ok), R(lead));
        INSP(e, lp, 0, ST_GLOBAL_F32, A(a, 0), R(lse[r]));
    }
}

/* Output addresses are formed here, not kept live through the key loop. */
static void epilogue(Kctx *k, Fwd *f) {
    Emit *e = &k->e;
    Reg lse[4], b, h, rows_left = e_reg(e, RC_B32), o_rows = e_reg(e, RC_B64), row = e_reg(e, RC_B32);
    softmax_finish(k, &f->rows, &f->o, f->scale_log2, lse);
    if (f->d->splitkv) {   /* the split's partials, for the combine; one head: the CTA's, reread here */
        PackedRows one = {.pack = 1, .tok0 = f->m_start, .s_q = f->s_q};
        if (f->pack == 1) cta_coords(k, &b, &one.h0);
        splitkv_store(k, &f->o, lse, f->mt, f->warp_row0, f->pack > 1 ? &f->pr : &one);
        return;
    }
    if (f->pack > 1) {
        packed_store(k, f, lse);
        return;
    }
    sync_tiles(k);                               /* O staging reuses Q's shared memory */
    acc_to_smem(k, &f->o, f->d->dtype, f->so, f->warp_row0);
    INS(e, BAR_SYNC, I(0));
    cta_coords(k, &b, &h);
    Reg o_rs = row_stride_bytes(k, "o"), lse_base = kc_ptr(k, "lse");
    INS(e, SUB_U32, R(rows_left), R(f->s_q), R(f->m_start));
    INS(e, MUL_WIDE_U32, R(o_rows), R(f->m_start), R(o_rs));
    INS(e, ADD_U64, R(o_rows), R(o_rows), R(f->d->varlen ? tensor_base(k, "o", 's', f->q0, 'h', h) : head_base(k, "o", b, h)));
    smem_to_global(k, f->so, f->threads, o_rows, o_rs, rows_left);
    /* lse[b][h][m_start + r], varlen lse[h][q0 + m_start + r] */
    INS(e, ADD_U32, R(row), R(f->d->varlen ? varlen_stats_row(k, h, f->q0) : stats_row(k, b, h)), R(f->m_start));
    INS(e, MAD_WIDE_U32, R(lse_base), R(row), I(4), R(lse_base));
    rows_to_global_f32(k, f->mt, lse, f->warp_row0, lse_base, rows_left);
}

void attn_fwd_emit(const AttnDesc *d, const KernelSpec *ks, const Plan *p, Buf *module) {
    Kctx kc;
    kctx_begin(&kc, ks);
    Emit *e = &kc.e;
    Fwd f = {.d = d, .mt = d->tile.bm / d->tile.warps / 16, .threads = 32 * d->tile.warps, .pack = d->tile.pack > 1 ? d->tile.pack : 1};
    f.sq = (SmemTile){d->tile.bm, d->d, p->region[0].offset};
    f.sk = (SmemTile){d->tile.bn, d->d, p->region[1].offset};
    f.sv = (SmemTile){d->tile.bn, d->dv, p->region[2].offset};
    f.so = (SmemTile){d->tile.bm, d->dv, p->region[3].offset};
    setup_problem(&kc, &f);

    Reg zero_u = kc_imm32(&kc, 0), k0 = zero_u, lo = zero_u, hi = zero_u, s_full = zero_u, s_max = zero_u;
    if (d->splitkv) {   /* the split's key blocks [lo, hi), the first of them loaded with Q */
        s_full = e_reg(e, RC_B32), s_max = e_reg(e, RC_B32);
        key_blocks(&kc, &f.rb, s_full, s_max);
        splitkv_range(&kc, f.split, s_max, s_full, &lo, &hi);
        INS(e, MUL_LO_U32, R(k0 = e_reg(e, RC_B32)), R(lo), I(d->tile.bn));
    }
    KeyList kl;
    if (d->block_m) {   /* the first key block is the list's */
        Reg b, h, m = e_reg(e, RC_B32);
        cta_coords(&kc, &b, &h);
        INS(e, MOV_B32, R(m), SR("%ctaid.x"));
        sparse_key_list_at(&kc, &kl, d->tile.bm, d->tile.bn, b, h, m);
        INS(e, MUL_LO_U32, R(k0 = e_reg(e, RC_B32)), R(sparse_entry_or0(&kc, kl.list, kl.count, zero_u)), I(d->tile.bn));
        f.kl = &kl;
    }
    tl_init(&kc, &f.ld, d->d, d->tile.bm > d->tile.bn ? d->tile.bm : d->tile.bn, f.threads);
    e_comment(e, "prologue: Q_m and K_0 in flight");
    if (f.pack > 1)
        tl_issue_packed(&kc, &f.ld, f.sq, f.q_base, f.q_rs, stride_bytes(&kc, "q", 'h'), f.pack, f.m_start, f.s_q, f.pr.heads);
    else tl_issue(&kc, &f.ld, f.sq, f.q_base, f.q_rs, f.m_start, f.s_q);
    issue_keys(&kc, &f, f.sk, 0, k0);
    INS0(e, CP_ASYNC_COMMIT);

    fragment_bases(&kc, &f);
    acc_new(&kc, &f.o, f.mt, d->dv / 8);
    acc_fill(&kc, &f.o, 0.0f);
    rows_init(&kc, &f.rows, f.mt);

    Reg n = e_reg(e, RC_B32), n_full = e_reg(e, RC_B32), n_max = e_reg(e, RC_B32);
    if (d->splitkv) {   /* [lo, s_full) unmasked, [s_full, hi) masked: the split's share of key_blocks' ranges */
        INS(e, MOV_B32, R(n), R(lo));
        key_loop(&kc, attn_step, &f, n, s_full, hi, 0);
        key_loop(&kc, attn_step, &f, n, hi, hi, 1);
        epilogue(&kc, &f);
        kctx_finish(&kc, module);
        return;
    }
    key_blocks(&kc, &f.rb, n_full, n_max);
    if (f.kl) sparse_key_loop(&kc, attn_step, &f, f.kl, 0, n_full, n_max);
    else {
        INS(e, MOV_B32, R(n), I(0));
        key_loop(&kc, attn_step, &f, n, n_full, n_max, 0);
        key_loop(&kc, attn_step, &f, n, n_max, n_max, 1);
    }
    epilogue(&kc, &f);
    if (d->varlen) e_place(e, f.done);

    kctx_finish(&kc, module);
}
