/* attn_fwd, tcgen05 family (sm_100a / sm_103a): tile keys and defaults, the
 * plan (shared-memory rings, the TMEM column map, warp roles) and the launch
 * ABI with the TMA tensor maps of Q, K and V. The emitter is attn_fwd_tc.c. */
#include "attn_fwd_tc.h"
#include <stddef.h>
#include <stdio.h>
#include <string.h>

const TileKey attn_fwd_tc_keys[] = {
    {"bm", offsetof(AttnTile, bm), {TC_FWD_BM}, 1, "query rows per CTA: the MMAs' M, one TMEM lane and one softmax thread each"},
    {"bn", offsetof(AttnTile, bn), {64, 128}, 2, "key/value rows per step (the N of S = Q K^T, the K of O += P V)"},
    {"stages", offsetof(AttnTile, stages), {2, 3, 4}, 3, "depth of the K/V ring the producer fills (4 fits a CTA pair's "
     "half tiles)"},
    {"pack", offsetof(AttnTile, pack), {1, 2, 4, 8, 16}, 5, "query heads of one kv head sharing the CTA's 128 rows "
     "(128/pack tokens each), so one K/V tile serves all of them: decode-shaped GQA (a group of h_q/h_kv heads not a "
     "multiple of pack leaves rows idle)"},
    {"poly", offsetof(AttnTile, poly), {0, 2, 4, 8}, 4, "0, or every poly-th exp2 of a softmax row by a degree-3 "
     "polynomial on the FMA units instead of MUFU (FA4's answer where MUFU's 16 per clock per SM bound the softmax)"},
    {"qtiles", offsetof(AttnTile, qtiles), {1, 2}, 2, "Q tiles of 128 rows per CTA: 2 is FA4's M = 2 x 128, a softmax "
     "warpgroup per tile so one tile's softmax runs under the other's MMAs, one S per tile with P over it (TMEM: "
     "2 x (bn + d_v) columns)"},
    {"ctas", offsetof(AttnTile, ctas), {1, 2}, 2, "CTAs per MMA: 2 is a CTA pair (a cluster of 2; tcgen05.mma.cta_group::2, "
     "M = 256): each CTA keeps its 128 query rows, S and O, and holds half of every K tile (bn/2 keys) and V tile "
     "(d_v/2 columns), so a step moves half the shared memory per CTA; the even CTA's thread issues for both"},
};
const int attn_fwd_tc_nkeys = (int)(sizeof attn_fwd_tc_keys / sizeof attn_fwd_tc_keys[0]);

/* 128-key steps where they fit: two S buffers (2 bn), two P (bn) and O (d_v) in the 512 TMEM columns, so d_v <= 128;
 * and Q with two K/V slots of 128 rows in shared memory, so d + d_v <= 320 (d 192 with d_v 192 would need 240 KB).
 * Else 64-key steps (d 192 and 256 with d_v = d, d_v 256). */
AttnTile attn_fwd_tc_default_tile(const ArchInfo *a, int d, int dv) {
    (void)a;
    int bn = dv <= 128 && d + dv <= 320 ? 128 : 64;
    return (AttnTile){.bm = TC_FWD_BM, .bn = bn, .stages = 2, .pack = 1, .qtiles = 1, .ctas = 1};
}

int attn_fwd_tc_warps(const AttnTile *t) { return tc_fwd_roles(t).threads / 32; }

int attn_fwd_tc_check_tile(const AttnDesc *d, char *err, size_t errlen) {
    if (d->d % 64 || d->dv % 64 || d->dv > 256) {
        snprintf(err, errlen, "the tcgen05 attn_fwd needs head dims that are multiples of 64 and d_v <= 256 (the MMA's N "
                 "at M=128); d=%d, dv=%d", d->d, d->dv);
        return 1;
    }
    const AttnTile *t = &d->tile;
    if (tc_fwd_pair(t) && (tc_fwd_qtiles(t) > 1 || tc_fwd_pack(t) > 1 || d->dv % 128)) {
        snprintf(err, errlen, "ctas=2 (a CTA pair) takes one Q tile of 128 rows per CTA, no pack, and d_v a multiple of "
                 "128 (each CTA holds d_v/2 columns of V in 128-byte-swizzled slabs of 64); got qtiles=%d pack=%d d_v=%d",
                 tc_fwd_qtiles(t), tc_fwd_pack(t), d->dv);
        return 1;
    }
    if (d->varlen && (tc_fwd_pair(t) || tc_fwd_pack(t) > 1)) {
        snprintf(err, errlen, "variable lengths take one query head per CTA and one CTA per MMA in the tcgen05 attn_fwd "
                 "(pack=1, ctas=1): a packed head's or the pair's rows would span sequences; got pack=%d ctas=%d",
                 tc_fwd_pack(t), tc_fwd_pair(t) ? 2 : 1);
        return 1;
    }
    if ((d->page_size || d->splitkv) && (tc_fwd_pair(t) || tc_fwd_qtiles(t) > 1)) {
        snprintf(err, errlen, "a paged KV cache and split-KV take one Q tile and one CTA per MMA in the tcgen05 attn_fwd "
                 "(qtiles=1, ctas=1: the issuer zeroes the rows of V past the sequence before its one P V; a split stores "
                 "one tile's partial rows); got qtiles=%d ctas=%d", tc_fwd_qtiles(t), tc_fwd_pair(t) ? 2 : 1);
        return 1;
    }
    if (d->block_m && (tc_fwd_pair(t) || tc_fwd_pack(t) > 1)) {
        snprintf(err, errlen, "block-sparse takes one query head per CTA and one CTA per MMA in the tcgen05 attn_fwd "
                 "(pack=1, ctas=1): a key list belongs to one head's row block; got pack=%d ctas=%d", tc_fwd_pack(t),
                 tc_fwd_pair(t) ? 2 : 1);
        return 1;
    }
    return 0;
}

/* block-sparse (pack 1, one CTA): the key lists of the CTA's qtiles x 128 rows */
void attn_fwd_tc_sparse(const AttnDesc *d, SparseLists *l) {
    l->keys = (SparseTiles){tc_fwd_qtiles(&d->tile) * TC_FWD_BM, d->tile.bn};
}

static const char *const kv_stage[] = {"KV.0", "KV.1", "KV.2", "KV.3"};

/* Seed 002's comparison for a decode shape: the same packed rows with mma.sync's register accumulators need
 * a cross-warp buffer for the S and O parts, 4 B x (m16 row tiles) x 256 threads x 64 (Mirage's S_O_BUFFER),
 * which TMEM makes unnecessary. ptxgen's own mma.sync attn_fwd packs without it: its warps split the rows, not the
 * keys, so no partial S or O crosses warps. */
static void decode_aside(const AttnDesc *d, Plan *p) {
    int rows = d->decode_sq * d->decode_group, tiles = (rows + 15) / 16, pack = tc_fwd_pack(&d->tile);
    int per_cta = TC_FWD_BM * tc_fwd_qtiles(&d->tile);
    long long so = 4LL * tiles * 256 * 64;
    snprintf(p->aside, sizeof p->aside, "mma.sync for this decode shape (s_q %d x %d query heads per kv head = %d rows): "
             "packed with register accumulators, seed 002's cross-warp S/O buffer takes 4 B x %d m16 tiles x 256 threads "
             "x 64 = %lld B of shared memory, %s the %d B a block may opt into on %s, because its warps split the keys; "
             "ptxgen's mma.sync attn_fwd packs them with none, each warp owning 16 or 32 whole rows over every key. "
             "Here S, P and O live in TMEM (%d columns), %d heads x %d tokens share each CTA and one K/V tile (%d B of "
             "shared memory).", d->decode_sq, d->decode_group, rows, tiles, so,
             so > d->arch->smem_block_optin ? "over" : "within", d->arch->smem_block_optin, d->arch->name, p->tmem_cols,
             pack, per_cta / pack, p->smem_bytes);
}

void attn_fwd_tc_plan(const AttnDesc *d, Plan *p) {
    const AttnTile *t = &d->tile;
    static char shp[3][32];
    int q = tc_fwd_qtiles(t);
    TcFwdRoles ro = tc_fwd_roles(t);
    *p = (Plan){.threads = ro.threads};
    plan_add_region(p, "Q", q * t->bm * d->d * 2, 1024, q == 1 ? "the CTA's query rows, TMA 128B-swizzled slabs of 64 "
                    "columns (A of S)" : "the CTA's two Q tiles of 128 rows, TMA 128B-swizzled slabs of 64 columns (A of S)");
    int pair = tc_fwd_pair(t);
    for (int s = 0; s < t->stages; s++)
        plan_add_region(p, kv_stage[s], t->bn * (d->d + d->dv) * 2 / (pair + 1), 1024, pair ? "ring slot: this CTA's half "
                        "of K_n (bn/2 keys; B of S, K-major), then of V_n (d_v/2 columns; B of O += P V, MN-major)" :
                        "ring slot: K_n (B of S, K-major), then V_n (B of O += P V, MN-major)");
    plan_add_region(p, "alpha", 2 * q * TC_FWD_BM * 4, 16, "each row's factor for O, two key blocks (softmax -> correction)");
    plan_add_region(p, "bars", 8 * tc_fwd_nbars(t) + 8, 8, pair ? "mbarriers: Q full; K/V full and empty per slot; S "
                    "full and P free x2; factors published; P in and O rescaled (this CTA; and the pair's, in the even "
                    "CTA); O done; TMEM address" : q == 1 ? "mbarriers: Q full; K/V full and empty per "
                    "slot; S full and P free x2; factors published; P in and O rescaled; O done; TMEM address" : "mbarriers: Q "
                    "full; K/V full and empty per slot; per Q tile S full, P V done, factors published, P in and O "
                    "rescaled; TMEM address");
    snprintf(shp[0], sizeof shp[0], "[%d, %d]", t->bm, t->bn);
    snprintf(shp[1], sizeof shp[1], "[%d, %d]", t->bm, d->dv);
    if (q == 2) {
        plan_add_tmem(p, "S.0", t->bn, "fp32", shp[0], "loop: Q tile 0's S_n, then its P_n (bf16) over the upper half, "
                      "A of O.0 += P V; S_{n+1} waits for that P V's commit");
        plan_add_tmem(p, "S.1", t->bn, "fp32", shp[0], "loop: the same for Q tile 1 (its MMAs run under tile 0's softmax)");
        plan_add_tmem(p, "O.0", d->dv, "fp32", shp[1], "whole kernel: Q tile 0's output accumulator, rescaled in place");
        plan_add_tmem(p, "O.1", d->dv, "fp32", shp[1], "whole kernel: Q tile 1's");
        /* a softmax thread at its peak: its row of S and the row state (the max by 8 chains, P stored as packed) */
        p->regs_est = t->bn + 56;
    } else {
    plan_add_tmem(p, "S.0", t->bn, "fp32", shp[0], "loop: S_n of even n (the issuer writes S_{n+1} into the other "
                  "while the softmax reads this one)");
    plan_add_tmem(p, "S.1", t->bn, "fp32", shp[0], "loop: S_n of odd n");
    plan_add_tmem(p, "P.0", t->bn / 2, "bf16", shp[0], "loop: exp(S_n - m) of even n, A of O += P V (TMEM operand)");
    plan_add_tmem(p, "P.1", t->bn / 2, "bf16", shp[0], "loop: of odd n (the softmax writes one while P V reads the other)");
    plan_add_tmem(p, "O", d->dv, "fp32", shp[1], "whole kernel: the output accumulator, rescaled in place");
    /* a softmax thread at its peak: its row of S, P packed, the row state and addresses (ptxas 13.0: 207-236 at bn=128) */
    p->regs_est = t->bn + 108;
    }
    plan_add_role(p, "softmax", 4 * q, ro.softmax_regs);         /* one query row per thread: S, P and the epilogue */
    plan_add_role(p, "correction", 4, ro.correction_regs);       /* the same rows: O rescaled in TMEM between its products */
    plan_add_role(p, "mma, producer", 4, ro.tail_regs);          /* lane 0 of the first warp issues the MMAs, lane 0 of
                                                                  * the second the TMA copies; the last two idle */
    char what[160], pk[64] = "";
    if (tc_fwd_pack(t) > 1) snprintf(pk, sizeof pk, " pack=%d (%d heads x %d tokens a CTA)", t->pack, t->pack, q * TC_FWD_BM / t->pack);
    if (t->poly) snprintf(pk + strlen(pk), sizeof pk - strlen(pk), " poly=%d", t->poly);
    if (q > 1) snprintf(pk + strlen(pk), sizeof pk - strlen(pk), " qtiles=%d", q);
    if (pair) snprintf(pk + strlen(pk), sizeof pk - strlen(pk), " ctas=2 (a cluster of 2, M = 256)");
    snprintf(what, sizeof what, "attn_fwd (tcgen05) d=%d dv=%d bm=%d bn=%d stages=%d%s", d->d, d->dv, t->bm, t->bn,
             t->stages, pk);
    plan_finish(p, d->arch, what);
    if (d->decode_group) decode_aside(d, p);
}

void attn_fwd_tc_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks) {
    const AttnTile *t = &d->tile;
    const char *dt = dtype_name(d->dtype);
    /* one CTA per SM: the launch's 168 registers a thread, which setmaxnreg moves between the roles */
    int pack = tc_fwd_pack(t), q = tc_fwd_qtiles(t);
    *ks = (KernelSpec){.block = {(unsigned)tc_fwd_roles(t).threads, 1, 1}, .dyn_smem = (unsigned)p->smem_bytes, .min_ctas = 1,
                       .pdl = sparse_follows(d)};
    char pk[48] = "";
    if (pack > 1) snprintf(pk, sizeof pk, "_pack%d", pack);
    if (t->poly) snprintf(pk + strlen(pk), sizeof pk - strlen(pk), "_poly%d", t->poly);
    if (q > 1) snprintf(pk + strlen(pk), sizeof pk - strlen(pk), "_q%d", q);
    if (tc_fwd_pair(t)) snprintf(pk + strlen(pk), sizeof pk - strlen(pk), "_cta2");
    char dv[16] = "";
    if (d->dv != d->d) snprintf(dv, sizeof dv, "_dv%d", d->dv);
    paged_suffix(d, pk, sizeof pk);
    snprintf(ks->entry, sizeof ks->entry, "attn_fwd_tc_%s_d%d%s_bm%d_bn%d_st%d%s%s%s%s", dt, d->d, dv, t->bm, t->bn,
             t->stages, pk, d->causal ? "_causal" : "", d->varlen ? "_varlen" : "", d->block_m ? "_sparse" : "");
    attn_fwd_abi(ks, d, q * TC_FWD_BM / pack);
    if (d->block_m) abi_sparse_keys(ks);
    if (d->varlen) {   /* one CTA, one head per row block (check_tile): maps over the packed tensors */
        wg_packed_map(ks, "q_map", "q", dt, d->d, "h_q", "total_q", TC_FWD_BM);
        wg_packed_map(ks, "k_map", "k", dt, d->d, "h_kv", "total_k", t->bn);
        wg_packed_map(ks, "v_map", "v", dt, d->dv, "h_kv", "total_k", t->bn);
        return;
    }
    if (tc_fwd_pair(t)) {   /* pairs of CTAs (x even, x + 1) over 256 query rows */
        snprintf(ks->grid[0], sizeof ks->grid[0], "2 * cdiv(s_q, %d)", 2 * TC_FWD_BM);
        snprintf(ks->cluster[0], sizeof ks->cluster[0], "2");
    }
    static const char *const qs[] = {"q_stride_h * 2", "q_stride_s * 2", "q_stride_b * 2"};
    static const char *const kst[] = {"k_stride_h * 2", "k_stride_s * 2", "k_stride_b * 2"};
    static const char *const vs[] = {"v_stride_h * 2", "v_stride_s * 2", "v_stride_b * 2"};
    wg_bshd_map_heads(ks, "q_map", "q", dt, d->d, "h_q", "s_q", pack, TC_FWD_BM / pack, qs);
    if (d->page_size) {   /* one CTA per MMA (check_tile): whole key tiles of a page, or whole pages of a key tile */
        int box = d->page_size < t->bn ? d->page_size : t->bn;   /* a block spanning pages: a box a page */
        wg_paged_map(ks, "k_map", "k", dt, d->d, d->page_size, box);
        wg_paged_map(ks, "v_map", "v", dt, d->dv, d->page_size, box);
        return;
    }
    wg_bshd_map(ks, "k_map", "k", dt, d->d, "h_kv", "s_k", t->bn / (tc_fwd_pair(t) + 1), kst);
    wg_bshd_map(ks, "v_map", "v", dt, d->dv, "h_kv", "s_k", t->bn, vs);
}
