/* attn_fwd, wgmma family: tile keys and defaults, the resource plan (shared
 * memory rings, warp roles and their registers), and the launch ABI with the
 * TMA tensor maps of Q, K, V and O. */
#include "attn_fwd_wg.h"
#include "attn_sched.h"
#include "attn_sparse.h"
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "../templates/wgmma.h"

const TileKey attn_fwd_wg_keys[] = {
    {"bm", offsetof(AttnTile, bm), {64, 128, 192}, 3, "query rows per CTA: 64 per consumer warpgroup"},
    {"bn", offsetof(AttnTile, bn), {64, 80, 96, 112, 128, 160, 176, 192}, 8, "key/value rows per main-loop step (the N of S = Q K^T)"},
    {"stages", offsetof(AttnTile, stages), {2, 3, 4}, 3, "depth of the K and V rings the producer fills"},
    {"pingpong", offsetof(AttnTile, pingpong), {0, 1}, 2, "1: consumer warpgroups take turns issuing their products "
     "(FA3's ping-pong, named barriers), so one's softmax runs under the other's wgmma"},
    {"producer", offsetof(AttnTile, producer), {1, 4}, 2, "warps of the TMA producer: 1 (every thread keeps the "
     "launch's registers, 65536 / threads) or 4 (a warpgroup that gives registers to the consumers by setmaxnreg)"},
    {"persist", offsetof(AttnTile, persist), {0, 1, 2, 3, 4, 78, 114, 132}, 8, "0: a CTA per tile; N: at most N CTAs "
     "that each walk tiles handed out by an atomic counter, loading the next tile while storing the last (the SM count "
     "is the fast N: 132 H100 SXM/H200, 114 H100 PCIe, 78 H20; any N is correct)"},
    {"qbufs", offsetof(AttnTile, qbufs), {1, 2}, 2, "query tile buffers of a persistent CTA: 2 loads the next tile's Q "
     "while this one runs, so a tile starts without waiting for its Q (the default where it fits)"},
};
const int attn_fwd_wg_nkeys = (int)(sizeof attn_fwd_wg_keys / sizeof attn_fwd_wg_keys[0]);

/* Two consumer warpgroups taking turns (ping-pong) and a producer warpgroup that gives its registers to
 * them (setmaxnreg: one producer warp would still leave 168 per thread, since the registers of a wgmma
 * kernel are counted in whole warpgroups). d=256 takes 80-key steps (FA3's), the most for which S, P and the
 * 128-register O fit 240 registers and two stages of K and V shared memory: on the H200 780.7-782.5 TFLOP/s
 * against 740.5-741.0 for 64-key steps, causal 686.7 against 650.0-650.2 (BENCHMARKS.md). Chosen on the H200
 * (BENCHMARKS.md): ping-pong 671 TFLOP/s at d128 against 620 without, and within 3 % of the best tile at d64 and
 * d256. Every exp2 on MUFU: a share of them by polynomial on the FMA units (commit 4e8a7fa) was slower at every
 * shape on the H100 (d64 448 -> 443 TFLOP/s at one in 4, 411 at one in 2; d128 667 -> 618 at one in 4): the
 * consumers' issue slots, not MUFU, bound this softmax (BENCHMARKS.md). */
AttnTile attn_fwd_wg_default_tile(const ArchInfo *a, int d, int dv) {
    (void)dv;
    (void)a;
    return (AttnTile){.bm = 128, .bn = d >= 256 ? WG_D256_BN : 128, .stages = 2, .pingpong = 1, .producer = 4, .qbufs = 1};
}

/* d 256's 80-key step where the request allows it (wg_default_step: block_n 128 is no whole step, stages=3 leaves no
 * room), else the 64-key step; pages are sized before, by page_bn, which keeps to the default's bn or less. */
static void d256_bn(AttnDesc *d, const char *asked) {
    if (d->tile.bn != WG_D256_BN) return;
    wg_default_step(d, &d->tile.bn, "bn", !d->block_n || d->block_n % WG_D256_BN == 0, 64, asked, attn_fwd_wg_plan);
}

static void persist_default(AttnDesc *d, const char *asked) {
    if ((asked && strstr(asked, "persist=")) || d->varlen || d->page_size || d->splitkv) return;
    /* d_v 256 stages O over Q (wg_o_over_q), so the next tile's Q waits for the store: on the H200 persistent was
     * 1-1.5 % faster dense (731-733 TFLOP/s against 722-726) but 3-4 % slower causal (619-622 against 644-646);
     * under a block mask it was not measured */
    if (d->dv > 128 && (d->causal || d->block_m)) return;
    int bm = d->tile.bm;
    Plan p;
    d->tile.persist = WG_PERSIST_CTAS;
    /* persistent d 64 with three consumer warpgroups: 541 TFLOP/s against 476-480 at bm=128 (H100, BENCHMARKS.md);
     * not under a block mask, whose blocks are multiples of 128 rows */
    if (d->d == 64 && !d->block_m && (!asked || !strstr(asked, "bm="))) {
        d->tile.bm = 192;
        attn_fwd_wg_plan(d, &p);
        if (p.ok) return;
        d->tile.bm = bm;   /* the rest of the tile asked leaves it no registers */
    }
    attn_fwd_wg_plan(d, &p);
    if (!p.ok) d->tile.persist = 0;   /* the tile asked leaves no room for O's own staging */
}

void attn_fwd_wg_refine_tile(AttnDesc *d, const char *asked) {
    d256_bn(d, asked);
    persist_default(d, asked);
    if (!d->tile.persist || wg_o_over_q(d) || (asked && strstr(asked, "qbufs="))) return;
    Plan p;
    d->tile.qbufs = 2;
    attn_fwd_wg_plan(d, &p);
    if (!p.ok) d->tile.qbufs = 1;   /* no room for a second Q beside the rings and O's staging */
}

int attn_fwd_wg_check_tile(const AttnDesc *d, char *err, size_t errlen) {
    if (d->tile.persist && (d->varlen || d->page_size || d->splitkv)) {
        snprintf(err, errlen, "persist=%d: the persistent wgmma attn_fwd walks padded batches over contiguous K/V; "
                 "%s launches a CTA per tile (persist=0)", d->tile.persist,
                 d->varlen ? "varlen" : d->splitkv ? "split-KV" : "a paged cache");
        return 1;
    }
    if (d->tile.qbufs == 2 && (!d->tile.persist || wg_o_over_q(d))) {
        snprintf(err, errlen, "qbufs=2: %s", !d->tile.persist
                 ? "a second Q buffer holds a persistent CTA's next tile (persist > 0); persist=0 loads one Q per CTA"
                 : "d_v > 128 stages O over Q (O's own staging does not fit), so there is no room for a second Q");
        return 1;
    }
    if (d->d % WG_SLAB_COLS || d->dv % WG_SLAB_COLS || !wg_has_n(d->dv)) {
        snprintf(err, errlen, "the wgmma attn_fwd needs head dims that are multiples of 64 and a wgmma N (d=%d, dv=%d)",
                 d->d, d->dv);
        return 1;
    }
    return 0;
}

int wg_consumers(const AttnTile *t) { return t->bm / 64; }

static int producer_regs(const AttnTile *t) { return wg_producer_regs(wg_consumers(t), t->producer); }
static int consumer_regs(const AttnTile *t) { return wg_consumer_regs(wg_consumers(t), t->producer); }

static const char *const k_stage[] = {"K.0", "K.1", "K.2", "K.3"}, *const v_stage[] = {"V.0", "V.1", "V.2", "V.3"};

void attn_fwd_wg_plan(const AttnDesc *d, Plan *p) {
    const AttnTile *t = &d->tile;
    int cw = wg_consumers(t);
    *p = (Plan){.threads = wg_threads(t)};
    int q = plan_add_region(p, "Q", t->bm * d->d * 2, 1024, "query tile, TMA 128B-swizzled slabs of 64 columns");
    if (wg_q_bufs(t) == 2)
        plan_add_region(p, "Q.1", t->bm * d->d * 2, 1024, "the second query tile: tiles alternate, the next one's Q "
                        "loads while this one runs");
    for (int s = 0; s < t->stages; s++) plan_add_region(p, k_stage[s], t->bn * d->d * 2, 1024, "key ring slot");
    for (int s = 0; s < t->stages; s++) plan_add_region(p, v_stage[s], t->bn * d->dv * 2, 1024, "value ring slot");
    if (t->persist) {   /* the next tile's Q loads while this one's O is staged */
        plan_add_region(p, "barriers", 8 * wg_nbars(d), 8, wg_q_bufs(t) == 2
                        ? "each Q's full and empty; K and V full/empty per ring slot; the tile slots' full/empty"
                        : "Q full and empty; K and V full/empty per ring slot; the tile slots' full/empty");
        if (sched_ordered(d))
            plan_add_region(p, "tiles", SCHED_ORDER_BYTES, 16, "two slots of the next tile's index and ring pass, "
                            "producer to consumers; the producer's copy of the tile classes' counts (longest first)");
        else
            plan_add_region(p, "tiles", SCHED_SLOTS_BYTES, 8, "two slots of the next tile's index and ring pass, "
                            "producer to consumers");
        if (wg_o_over_q(d))
            plan_union_region(p, "O", q, t->bm * d->dv * 2, "output staging for the TMA store, over each warpgroup's "
                              "own Q rows, which it frees for the next tile's once the store read them");
        else
            plan_add_region(p, "O", t->bm * d->dv * 2, 1024, "output staging for the TMA store");
    } else {
        plan_add_region(p, "barriers", 8 * wg_nbars(d), 8,
                        d->page_size ? "Q full; K and V full/empty per ring slot; V's tail zeroed"
                                     : "Q full; K and V full/empty per ring slot");
        plan_union_region(p, "O", q, t->bm * d->dv * 2, "output staging for the TMA store, over each warpgroup's own Q rows");
    }
    /* a consumer thread at the peak: O (dv/2), S (bn/2), P (bn/4), softmax state and addresses */
    p->regs_est = d->dv / 2 + t->bn / 2 + t->bn / 4 + 32;
    plan_add_role(p, "producer", t->producer, producer_regs(t));
    plan_add_role(p, "consumer", 4 * cw, producer_regs(t) ? consumer_regs(t) : 0);
    char what[112];
    snprintf(what, sizeof what, "attn_fwd (wgmma) d=%d bm=%d bn=%d stages=%d producer=%d%s", d->d, t->bm, t->bn,
             t->stages, t->producer, t->persist ? " persistent" : "");
    plan_finish(p, d->arch, what);
    if (p->ok && p->regs_est > consumer_regs(t)) {
        p->ok = 0;
        snprintf(p->verdict, sizeof p->verdict, "%s: a consumer thread needs about %d registers (O %d, S %d, P %d); "
                 "%s gives %d with %d consumer warpgroups", what, p->regs_est, d->dv / 2, t->bn / 2, t->bn / 4,
                 producer_regs(t) ? "setmaxnreg" : "the launch (65536 / threads)", consumer_regs(t), cw);
    }
}

/* Block-sparse (the only case this is called in), the main kernel is a programmatic dependent of the key-list kernel
 * (sparse_follows), which lets it launch as the lists are begun (H200: 0.3-1.9 % at 10 %, BENCHMARKS.md); its threads
 * wait for them as they start. */
void attn_fwd_wg_sparse(const AttnDesc *d, SparseLists *l) {
    attn_fwd_sparse(d, l);
    l->early = 1;
}

void attn_fwd_wg_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks) {
    const AttnTile *t = &d->tile;
    const char *dt = dtype_name(d->dtype);
    /* one producer warp: the launch's share of the register file, named (ptxas would count 288 threads as 384);
     * a producer warpgroup: the launch's 168, and setmaxnreg moves them */
    *ks = (KernelSpec){.block = {(unsigned)wg_threads(t), 1, 1}, .dyn_smem = (unsigned)p->smem_bytes,
                       .min_ctas = producer_regs(t) ? 1 : 0, .max_regs = producer_regs(t) ? 0 : (unsigned)consumer_regs(t)};
    char paged[16] = "";
    paged_suffix(d, paged, sizeof paged);
    char persist[16] = "";
    if (t->persist) snprintf(persist, sizeof persist, "_ps%d%s", t->persist, wg_q_bufs(t) == 2 ? "_qb2" : "");
    snprintf(ks->entry, sizeof ks->entry, "attn_fwd_wg_%s_d%d_bm%d_bn%d_st%d_p%d%s%s%s%s%s%s", dt, d->d, t->bm, t->bn,
             t->stages, t->producer, t->pingpong ? "_pp" : "", d->causal ? "_causal" : "", d->varlen ? "_varlen" : "",
             d->block_m ? "_sparse" : "", paged, persist);
    attn_fwd_abi(ks, d, t->bm);
    if (d->block_m) abi_sparse_keys(ks);
    ks->pdl = sparse_follows(d);
    if (t->persist) sched_abi(ks, t->bm, t->persist);
    if (sched_ordered(d)) sched_order_abi(ks, "read here, the longest tiles handed out first; the counts set back to 0");
    if (d->varlen) {   /* O by plain stores (a TMA store would reach the next sequence): no o_map */
        wg_packed_map(ks, "q_map", "q", dt, d->d, "h_q", "total_q", t->bm);
        wg_packed_map(ks, "k_map", "k", dt, d->d, "h_kv", "total_k", t->bn);
        wg_packed_map(ks, "v_map", "v", dt, d->dv, "h_kv", "total_k", t->bn);
        return;
    }
    static const char *const qs[] = {"q_stride_h * 2", "q_stride_s * 2", "q_stride_b * 2"};
    static const char *const kst[] = {"k_stride_h * 2", "k_stride_s * 2", "k_stride_b * 2"};
    static const char *const vs[] = {"v_stride_h * 2", "v_stride_s * 2", "v_stride_b * 2"};
    static const char *const os[] = {"o_stride_h * 2", "o_stride_s * 2", "o_stride_b * 2"};
    wg_bshd_map(ks, "q_map", "q", dt, d->d, "h_q", "s_q", t->bm, qs);
    if (d->page_size) {   /* whole key tiles of a page, or whole pages of a key tile */
        int box = d->page_size < t->bn ? d->page_size : t->bn;   /* a block spanning pages: a box a page */
        wg_paged_map(ks, "k_map", "k", dt, d->d, d->page_size, box);
        wg_paged_map(ks, "v_map", "v", dt, d->dv, d->page_size, box);
    } else {
        wg_bshd_map(ks, "k_map", "k", dt, d->d, "h_kv", "s_k", t->bn, kst);
        wg_bshd_map(ks, "v_map", "v", dt, d->dv, "h_kv", "s_k", t->bn, vs);
    }
    wg_bshd_map(ks, "o_map", "o", dt, d->dv, "h_q", "s_q", 64, os);
}
