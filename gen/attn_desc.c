/* attn_fwd (mma.sync family): tile keys and defaults, the resource plan, and
 * the launch ABI. */
#include "attn_emit.h"
#include "attn_sparse.h"
#include "attn_sched.h"
#include "attn_splitkv.h"
#include <stddef.h>
#include <stdio.h>
#include <string.h>

const TileKey attn_fwd_keys[] = {
    {"bm", offsetof(AttnTile, bm), {16, 32, 64, 128}, 4, "query rows per CTA"},
    {"bn", offsetof(AttnTile, bn), {32, 64, 128}, 3, "key/value rows per main-loop step"},
    {"warps", offsetof(AttnTile, warps), {1, 2, 4, 8}, 4, "warps per CTA (each owns bm/warps query rows: 16 or 32)"},
    {"pack", offsetof(AttnTile, pack), {1, 2, 4, 8, 16}, 5, "query heads of one kv head sharing the CTA's bm rows "
     "(bm/pack tokens each, head innermost), so one K/V tile serves all of them: decode-shaped GQA (a group of h_q/h_kv "
     "heads not a multiple of pack leaves rows idle)"},
};
const int attn_fwd_nkeys = (int)(sizeof attn_fwd_keys / sizeof attn_fwd_keys[0]);

/* Chosen from H200 sweeps (BENCHMARKS.md): 32 query rows per warp keeps the
 * tensor cores ahead of shared-memory bandwidth (each warp re-reads K and V
 * from shared memory). At d=128 the faster bn=64 step spills under ptxas
 * 13.0, so bn=32; d=256 drops to 16 rows per warp to keep the output
 * accumulator in registers (bm=64 where 128 KB of shared memory is not there). */
AttnTile attn_fwd_default_tile(const ArchInfo *a, int d, int dv) {
    (void)dv;
    if (d >= 256) return a->smem_block_optin >= 128 * 1024 ? (AttnTile){.bm = 128, .bn = 64, .warps = 8, .pack = 1}
                                               : (AttnTile){.bm = 64, .bn = 64, .warps = 4, .pack = 1};
    return (AttnTile){.bm = 128, .bn = d >= 128 ? 32 : 64, .warps = 4, .pack = 1};
}

int attn_fwd_check_tile(const AttnDesc *d, char *err, size_t errlen) {
    const AttnTile *t = &d->tile;
    int rows = t->bm / t->warps;
    if (rows != 16 && rows != 32) {
        snprintf(err, errlen, "tile bm=%d with warps=%d gives %d query rows per warp; the mma.sync attn_fwd needs 16 or 32",
                 t->bm, t->warps, rows);
        return 1;
    }
    if (t->pack > 1 && (d->varlen || d->block_m)) {
        snprintf(err, errlen, "pack=%d: the mma.sync attn_fwd packs query heads without varlen or a block mask (a packed "
                 "head's rows would span sequences, or key lists of several heads); use pack=1", t->pack);
        return 1;
    }
    return attn_check_copy(d, err, errlen);
}

/* s_q tokens of pack heads in the smallest bm that holds them, a warp per 16 rows and 64-key steps (32 in pages of
 * 32), where that is
 * below the default bm: on the H200 a paged decode (b 64, s_k 4k, GQA 64/8) reads K and V at the copy bandwidth so,
 * where bm=128 with the same pack reaches about half of it: its idle rows' MMAs and softmax are the bound
 * (BENCHMARKS.md). */
void attn_fwd_decode_tile(AttnDesc *d) {
    AttnTile *t = &d->tile;
    int rows = d->decode_sq * (t->pack > 1 ? t->pack : 1), bm = 16;
    while (bm < rows) bm *= 2;
    /* 64 keys a step, over pages of 16 and 32 too (four or two pages a step), where one or two warps hold the rows:
     * on the H200 (b 64, s_k 4096, GQA 64/8) they read KV at 101-102 % of the copy's bandwidth against 90-92 % at
     * 32 keys (BENCHMARKS.md). Four warps (s_q 5-16) keep 32 over such pages at d 128 and 256 (89 % against 84 %
     * at 64), and so does d 256 over pages of 32, which ptxas 13.0 spills at 64 (4-12 bytes, sm_80-sm_90); d 64's
     * four warps take 64 (80 % against 59 %, and 32 spilled 4 bytes on sm_90 and sm_100). Found by assembling every
     * decode shape's tile on every mma.sync arch; make test keeps them. */
    int small = d->page_size && d->page_size <= 32;
    int bn = small && ((bm > 32 && d->d >= 128) || (d->page_size == 32 && d->d >= 256)) ? 32 : 64;
    if (bm < t->bm) t->bm = bm, t->warps = bm / 16, t->bn = bn;
}

void attn_fwd_plan(const AttnDesc *d, Plan *p) {
    const AttnTile *t = &d->tile;
    int mt = t->bm / t->warps / 16;
    *p = (Plan){.threads = 32 * t->warps};
    int q = plan_add_region(p, "Q", t->bm * d->d * 2, 128, "query tile, swizzled; read every step");
    plan_add_region(p, "K", t->bn * d->d * 2, 128, "key tile; next tile lands during P V");
    plan_add_region(p, "V", t->bn * d->dv * 2, 128, "value tile; lands during Q K^T");
    plan_union_region(p, "O", q, t->bm * d->dv * 2, "output staging, reuses Q after the loop");
    /* live per thread at the peak (during P V): O accumulator, P fragments,
     * the S tile being consumed, softmax state, addresses */
    int o = mt * (d->dv / 8) * 4, s = mt * (t->bn / 8) * 4, pfrag = mt * (t->bn / 16) * 4;
    p->regs_est = o + s / 2 + pfrag + 4 * mt + 40;
    char what[96];
    snprintf(what, sizeof what, "attn_fwd d=%d bm=%d bn=%d warps=%d", d->d, t->bm, t->bn, t->warps);
    plan_finish(p, d->arch, what);
}

void attn_fwd_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks) {
    const char *dt = dtype_name(d->dtype);
    /* decode tiles: without a CTAs-per-SM bound ptxas 13.0 holds one or two warps at 128 registers a thread and
     * spills (4-24 bytes, d 64 and 128, over pages of 16 and 32, sm_80-sm_120); .minnctapersm 1 lets them take
     * the 110-160 they need (H200, b 64, s_k 4096, GQA 64/8: KV read as fast as before where nothing spilled).
     * Four warps of packed heads only at d 128's 64-key step: 85 % of the copy's bandwidth against 78 % (s_q 8,
     * pages of 64); d 128's 32-key step fell to 58 % from 89 % with it, d 64's 64-key step to 54 % from 82 % */
    int pack4 = d->tile.pack > 1 && d->tile.bn == 64 && d->d == 128;
    *ks = (KernelSpec){.block = {32u * (unsigned)d->tile.warps, 1, 1}, .dyn_smem = (unsigned)p->smem_bytes,
                       .min_ctas = d->tile.warps <= 2 || pack4 ? 1 : 0, .pdl = sparse_follows(d)};
    char paged[32] = "";
    if (d->tile.pack > 1) snprintf(paged, sizeof paged, "_pack%d", d->tile.pack);
    paged_suffix(d, paged, sizeof paged);
    snprintf(ks->entry, sizeof ks->entry, "attn_fwd_%s_d%d_bm%d_bn%d_w%d%s%s%s%s", dt, d->d, d->tile.bm, d->tile.bn,
             d->tile.warps, d->causal ? "_causal" : "", d->varlen ? "_varlen" : "", d->block_m ? "_sparse" : "", paged);
    attn_fwd_abi(ks, d, d->tile.bm / (d->tile.pack > 1 ? d->tile.pack : 1));
    if (d->block_m) abi_sparse_keys(ks);
}

void attn_fwd_sparse(const AttnDesc *d, SparseLists *l) {
    l->keys = (SparseTiles){d->tile.bm, d->tile.bn};
    l->order = sched_ordered(d);
}

/* bm: tokens per CTA. Varlen: the same tensors packed over the sequences (no batch stride), the offsets, LSE by head
 * then packed row; the grid covers the longest sequence (s_q, s_k: the longest lengths), its CTAs past a shorter one's rows exit. */
void attn_fwd_abi(KernelSpec *ks, const AttnDesc *d, int bm) {
    attn_tensor(ks, d, "q", PR_IN, "queries");
    attn_tensor(ks, d, "k", PR_IN, "keys");
    attn_tensor(ks, d, "v", PR_IN, "values");
    attn_tensor(ks, d, "o", PR_OUT, "attention output");
    attn_tensor(ks, d, "lse", PR_OUT, ATTN_LSE_MEANING);
    if (d->varlen) abi_varlen(ks);
    if (d->page_size) abi_paged(ks);
    if (d->splitkv) abi_splitkv(ks);
    abi_sizes(ks, attn_size_names, 4);
    abi_scale(ks, ATTN_SCALE_MEANING);
    snprintf(ks->grid[0], sizeof ks->grid[0], "cdiv(s_q, %d)", bm);
    snprintf(ks->grid[1], sizeof ks->grid[1], "h_q");
    if (d->tile.pack > 1)   /* CTA y: kv head y / cdiv(g, pack), its heads pack (y % cdiv(g, pack)) .. (packed_heads) */
        snprintf(ks->grid[1], sizeof ks->grid[1], "h_kv * cdiv(h_q / h_kv, %d)", d->tile.pack);
    snprintf(ks->grid[2], sizeof ks->grid[2], d->splitkv ? "b * num_splits" : "b");
}
