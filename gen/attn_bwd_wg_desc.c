/* attn_bwd, wgmma family (sm_90a): tile keys and defaults, the main kernel's plan (warp roles and
 * their registers, the Q/dO ring, shared memory) and launch ABI with its TMA maps. The set around it
 * is the mma.sync family's (bwd_set_build): the pre kernel, the main kernel, then the dQ convert. With
 * deterministic=1 the main kernel adds dQ in key-block order (bwg_ordered), or, where it does not compute
 * dQ at all (d 256), the mma.sync dQ kernel recomputes dQ per query block without atomics. */
#include "attn_bwd_wg.h"
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "../templates/wgmma.h"

const TileKey attn_bwd_wg_keys[] = {
    {"bm", offsetof(AttnTile, bm), {32, 64, 80, 128}, 4, "query rows per main-loop step (the N of S^T = K Q^T; 32 and "
     "80: dQ^T = K^T dS^T, each warpgroup 64 columns of dQ on the wgmma's M, where a CTA owns 128 columns)"},
    {"bn", offsetof(AttnTile, bn), {64, 128}, 2, "key rows per CTA: 64 per consumer warpgroup"},
    {"stages", offsetof(AttnTile, stages), {1, 2, 3}, 3, "depth of the ring of Q, dO and statistics the producer fills"},
    {"deterministic", offsetof(AttnTile, deterministic), {0, 1}, 2,
     "1: bit-identical across runs: d 64/128 add dQ in key-block order (a dQ-writer warp waits on a semaphore per "
     "query block); other d take the mma.sync family's dQ kernel, which recomputes dQ per query block"},
    {"dqbufs", offsetof(AttnTile, dqbufs), {1, 2}, 2, "dQ staging buffers in shared memory between the consumers and "
     "the dQ writer: 2 lets the consumers stage a query block while the writer still adds (or, deterministic, waits "
     "its turn for) the one before"},
    {"dsplit", offsetof(AttnTile, dsplit), {1, 2}, 2, "CTAs per block of keys, each owning d/dsplit columns (64 or 128) "
     "of dK, dV and dQ in its registers; each computes S^T and dP^T over all of d (d 256: 2, 1.4x the MMAs)"},
};
const int attn_bwd_wg_nkeys = (int)(sizeof attn_bwd_wg_keys / sizeof attn_bwd_wg_keys[0]);

/* FA3's shapes: two consumer warpgroups own 128 keys; d=64 steps over 128 queries so that dQ (64 x 64 per
 * warpgroup) splits by rows, d=128 over 80 (FA3's non-causal step; dQ^T = K^T dS^T), the most for which dK, dV,
 * S^T and dP^T fit 240 registers and the ring, dS and dQ's staging shared memory. On the H200 against 64-query
 * steps (BENCHMARKS.md): causal 531.3-532.3 TFLOP/s against 512.6-513.4, GQA 64/8 causal 488.6-489.3 against
 * 480.9-482.5, non-causal and deterministic at their fastest 4.51 and 4.65 ms against 4.72 and 5.04. */
AttnTile attn_bwd_wg_default_tile(const ArchInfo *a, int d, int dv) {
    (void)dv;
    (void)a;
    /* d 256: two CTAs a key block, 128 columns each (dK and dV 128 registers a thread); K and V (128 KB) and a ring
     * of two 32-query slots (64 KB) leave room for dS and dQ's staging of 32-query steps only */
    if (d == 256) return (AttnTile){.bm = 32, .bn = 128, .stages = 2, .producer = 4, .deterministic = 0, .dqbufs = 1, .dsplit = 2};
    return (AttnTile){.bm = d <= 64 ? 128 : 80, .bn = 128, .stages = 2, .producer = 4, .deterministic = 0, .dqbufs = 1,
                      .dsplit = 1};
}

/* The 80-query step where the request allows it (wg_default_step: block_m 128 is no whole step, and stages=3 or
 * stages=2 with dqbufs=2 leave no room), and bn=128 (check_tile refuses it with any other), else 64 queries. */
void attn_bwd_wg_refine_tile(AttnDesc *d, const char *asked) {
    AttnTile *t = &d->tile;
    if (!bwg_dq_swap(t) || d->d == 256) return;   /* d 256: 64 queries never fit (K, V and one slot are 256 KB) */
    wg_default_step(d, &t->bm, "bm", t->bn == 128 && (!d->block_m || d->block_m % t->bm == 0), 64, asked,
                    attn_bwd_wg_main_plan);
}

int attn_bwd_wg_check_tile(const AttnDesc *d, char *err, size_t errlen) {
    const AttnTile *t = &d->tile;
    if (d->d % WG_SLAB_COLS || d->dv != d->d) {
        snprintf(err, errlen, "the wgmma attn_bwd needs d = dv, a multiple of 64 (d=%d, dv=%d)", d->d, d->dv);
        return 1;
    }
    if (bwd_dsplit_check(d, bwg_dsplit(t), 2, err, errlen)) return 1;
    if (bwg_dh(d) > 128) {
        snprintf(err, errlen, "tile dsplit=%d leaves each CTA %d columns of dK and dV: 2 x 64 x %d / 128 = %d fp32 registers "
                 "a consumer thread, past the 240 setmaxnreg gives (use dsplit=%d)", bwg_dsplit(t), bwg_dh(d), bwg_dh(d),
                 bwg_dh(d), d->d / 128);
        return 1;
    }
    if (bwg_dq_swap(t) && (bwg_dh(d) != 128 || t->bn != 128)) {
        snprintf(err, errlen, "tile bm=%d: a step of %d query rows is no multiple of the wgmma's M of 64, so dQ^T = K^T dS^T "
                 "puts 64 of dQ's columns on M per consumer warpgroup, which needs 128 columns a CTA (d / dsplit) and "
                 "bn = 128 (two warpgroups; d=%d, dsplit=%d, bn=%d): use bm=64 or 128", t->bm, t->bm, d->d,
                 bwg_dsplit(t), t->bn);
        return 1;
    }
    if (t->bm / 64 > bwg_consumers(t)) {
        snprintf(err, errlen, "tile bm=%d needs bn >= %d: each 64-row block of dQ = dS K takes one of the bn/64 consumer "
                 "warpgroups (bn=%d has %d)", t->bm, t->bm, t->bn, bwg_consumers(t));
        return 1;
    }
    if (t->deterministic && d->block_m) {
        snprintf(err, errlen, "deterministic block-sparse is not in the wgmma attn_bwd: its dQ adds wait for every key "
                 "block before them in a fixed order, and the mask takes some of them away; the mma.sync attn_bwd is "
                 "deterministic with a mask (--mma sync), or use deterministic=0");
        return 1;
    }
    if (!t->deterministic && !bwg_main_dq(d)) {
        snprintf(err, errlen, "tile bm=%d, bn=%d splits dQ's %d columns a CTA over %d warpgroups, %d each; a part must be "
                 "whole 64-column slabs of K (use bm=%d, or deterministic=1)", t->bm, t->bn, bwg_dh(d), bwg_dq_parts(t),
                 bwg_dh(d) / bwg_dq_parts(t), t->bn);
        return 1;
    }
    return 0;
}

static const char *const q_st[] = {"Q.0", "Q.1", "Q.2"}, *const do_st[] = {"dO.0", "dO.1", "dO.2"},
                  *const stats_st[] = {"stats.0", "stats.1", "stats.2"};

void attn_bwd_wg_main_plan(const AttnDesc *d, Plan *p) {
    const AttnTile *t = &d->tile;
    int cw = bwg_consumers(t), dh = bwg_dh(d), dqn = dh / bwg_dq_parts(t);
    *p = (Plan){.threads = bwg_threads(t)};
    plan_add_region(p, "K", t->bn * d->d * 2, 1024, "key tile, TMA 128B-swizzled slabs of 64 columns; dK staging after the loop");
    plan_add_region(p, "V", t->bn * d->dv * 2, 1024, "value tile; dV staging after the loop");
    for (int s = 0; s < t->stages; s++) {
        plan_add_region(p, q_st[s], t->bm * d->d * 2, 1024, "ring slot: query block");
        plan_add_region(p, do_st[s], t->bm * d->dv * 2, 1024, "ring slot: its output gradient");
        plan_add_region(p, stats_st[s], 2 * t->bm * 4, 128, "ring slot: its lse, then delta (a TMA copy of its stats block)");
    }
    if (bwg_main_dq(d)) {
        int dq_bytes = cw * bwg_dq_part_bytes(d);
        plan_add_region(p, "dS.0", t->bn * t->bm * 2, 1024, bwg_dq_swap(t)
                        ? "dS of even steps, the B of dQ^T = K^T dS^T (K-major: [query][key], by stmatrix.trans)"
                        : "dS^T of even steps, the A of dQ = dS K (MN-major)");
        plan_add_region(p, "dS.1", t->bn * t->bm * 2, 1024, bwg_dq_swap(t) ? "dS of odd steps: one barrier per step, not two"
                                                                             : "dS^T of odd steps: one barrier per step, not two");
        plan_add_region(p, bwg_dq_bufs(t) == 2 ? "dQ.0" : "dQ", dq_bytes, 1024, "each consumer's fp32 dQ "
                        "part, 128B-swizzled boxes of 32 columns, which the dQ writer sends to the accumulator by one TMA "
                        "reduce-add per box");
        if (bwg_dq_bufs(t) == 2)
            plan_add_region(p, "dQ.1", dq_bytes, 1024, "the same for odd query blocks");
    }
    plan_add_region(p, "barriers", 8 * BWG_NBARS(t->stages), 8, "K/V landed; full and empty per ring slot");
    /* a consumer thread at the peak: dK and dV all along, then S^T and dP^T (their products), or P^T and
     * dS^T packed and the dQ part (after them) */
    int sdp = t->bm, dq = t->bm / 2 + (bwg_main_dq(d) ? (bwg_dq_swap(t) ? t->bm : dqn) / 2 : 0);   /* dQ^T: bm columns */
    p->regs_est = dh / 2 + dh / 2 + (sdp > dq ? sdp : dq) + 32;
    if (bwg_main_dq(d)) {   /* one warpgroup, one setmaxnreg: the writer warp keeps the producer's registers */
        plan_add_role(p, "producer", 3, wg_producer_regs(cw, 4));
        plan_add_role(p, "dq writer", 1, wg_producer_regs(cw, 4));
    } else
        plan_add_role(p, "producer", 4, wg_producer_regs(cw, 4));
    plan_add_role(p, "consumer", 4 * cw, wg_producer_regs(cw, 4) ? wg_consumer_regs(cw, 4) : 0);
    char what[192], split[80];
    bwd_dsplit_note(split, sizeof split, bwg_dsplit(t), dh);
    snprintf(what, sizeof what, "attn_bwd main (wgmma) d=%d bm=%d bn=%d stages=%d%s%s", d->d, t->bm, t->bn, t->stages,
             split, bwg_ordered(d) ? " deterministic (dQ added in key-block order)" : t->deterministic ? " deterministic (no dQ)" : "");
    plan_finish(p, d->arch, what);
    if (p->ok && p->regs_est > wg_consumer_regs(cw, 4)) {
        p->ok = 0;
        snprintf(p->verdict, sizeof p->verdict, "%s: a consumer thread needs about %d registers (dK %d, dV %d, S^T and "
                 "dP^T %d); %s gives %d with %d consumer warpgroups", what, p->regs_est, dh / 2, dh / 2, sdp,
                 wg_producer_regs(cw, 4) ? "setmaxnreg" : "the launch (65536 / threads)", wg_consumer_regs(cw, 4), cw);
    }
}

void attn_bwd_wg_main_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks) {
    const AttnTile *t = &d->tile;
    const char *dt = dtype_name(d->dtype);
    int cw = bwg_consumers(t), pr = wg_producer_regs(cw, 4);
    *ks = (KernelSpec){.block = {(unsigned)bwg_threads(t), 1, 1}, .dyn_smem = (unsigned)p->smem_bytes,
                       .min_ctas = pr ? 1 : 0, .max_regs = pr ? 0 : (unsigned)wg_consumer_regs(cw, 4)};
    char split[16] = "";
    if (bwg_dsplit(t) > 1) snprintf(split, sizeof split, "_ds%d", bwg_dsplit(t));
    snprintf(ks->entry, sizeof ks->entry, "attn_bwd_wg_main_%s_d%d_bm%d_bn%d_st%d%s%s%s%s%s%s", dt, d->d, t->bm, t->bn,
             t->stages, split, bwg_dq_bufs(t) == 2 ? "_dq2" : "", d->causal ? "_causal" : "", t->deterministic ? "_det" : "",
             d->varlen ? "_varlen" : "", d->block_m ? "_sparse" : "");
    bwd_tensors(ks, d);
    abi_workspace(ks, "stats", "per block of query rows its lse, then its delta: one TMA copy per step");
    if (bwg_main_dq(d)) abi_workspace(ks, "dq_accum", "fp32 dQ accumulator, added into here (TMA reduce-add)");
    if (bwg_ordered(d)) abi_workspace(ks, "dq_sem", "per block of query rows the key blocks whose dQ adds are done: "
                                      "waited on until it counts this CTA's key block, then raised");
    if (d->block_m) abi_sparse_queries(ks);
    bwd_key_grads(ks, d);
    abi_scale(ks, ATTN_SCALE_MEANING);
    static const char *const dks[] = {"dk_stride_h * 2", "dk_stride_s * 2", "dk_stride_b * 2"};
    static const char *const dvs[] = {"dv_stride_h * 2", "dv_stride_s * 2", "dv_stride_b * 2"};
    bwd_input_maps(ks, d, t->bm, t->bn);
    if (!d->varlen) {   /* varlen stores dK and dV by plain stores of the sequence's keys */
        wg_bshd_map(ks, "dk_map", "dk", dt, d->d, "h_kv", "s_k", 64, dks);
        wg_bshd_map(ks, "dv_map", "dv", dt, d->dv, "h_kv", "s_k", 64, dvs);
    }
    bwd_stats_map(ks, t->bm);
    if (bwg_main_dq(d) && d->varlen) {   /* over the workspace [h_q, total_q, d] fp32: innermost d, then rows, h_q */
        static const char *const d64[] = {"64", "256", "max(total_q, 1) * 256", "h_q * max(total_q, 1) * 256"};
        static const char *const d128[] = {"128", "512", "max(total_q, 1) * 512", "h_q * max(total_q, 1) * 512"};
        static const char *const d256[] = {"256", "1024", "max(total_q, 1) * 1024", "h_q * max(total_q, 1) * 1024"};
        const char *const *x = d->d == 64 ? d64 : d->d == 128 ? d128 : d256;
        TensorMapSpec m = {.param = "dq_map", .tensor = "dq_accum", .dtype = "fp32", .rank = 4,
                           .dims = {x[0], "max(total_q, 1)", "h_q", "1"}, .strides = {x[1], x[2], x[3]},
                           .box = {32, bwg_dq_rows(t), 1, 1}, .elem_strides = {1, 1, 1, 1}, .swizzle = "128B",
                           .interleave = "none", .oob_fill = "zero"};
        abi_tensor_map(ks, "dq_accum", "TMA map over the fp32 dQ accumulator [h_q, total_q, d], box 32 columns x a "
                       "warpgroup's rows, 128B swizzle: the target of the reduce-adds (a sequence's rows past its end add 0)", m);
    } else if (bwg_main_dq(d)) {   /* over the workspace [b, h_q, s_q, d] fp32: innermost d, then s_q, h_q, b */
        static const char *const d64[] = {"64", "256", "s_q * 256", "h_q * s_q * 256"};
        static const char *const d128[] = {"128", "512", "s_q * 512", "h_q * s_q * 512"};
        static const char *const d256[] = {"256", "1024", "s_q * 1024", "h_q * s_q * 1024"};
        const char *const *x = d->d == 64 ? d64 : d->d == 128 ? d128 : d256;
        TensorMapSpec m = {.param = "dq_map", .tensor = "dq_accum", .dtype = "fp32", .rank = 4,
                           .dims = {x[0], "s_q", "h_q", "b"}, .strides = {x[1], x[2], x[3]}, .box = {32, bwg_dq_rows(t), 1, 1},
                           .elem_strides = {1, 1, 1, 1}, .swizzle = "128B", .interleave = "none", .oob_fill = "zero"};
        abi_tensor_map(ks, "dq_accum", "TMA map over the fp32 dQ accumulator, box 32 columns x a warpgroup's rows, 128B "
                       "swizzle: "
                       "the target of the reduce-adds; rows past s_q are not written", m);
    }
    if (bwg_dsplit(t) > 1) snprintf(ks->grid[0], sizeof ks->grid[0], "%d * cdiv(s_k, %d)", bwg_dsplit(t), t->bn);
    else snprintf(ks->grid[0], sizeof ks->grid[0], "cdiv(s_k, %d)", t->bn);
    snprintf(ks->grid[1], sizeof ks->grid[1], "h_kv");
    snprintf(ks->grid[2], sizeof ks->grid[2], "b");
}

/* The main kernel's producer brings each step's lse and delta in with one TMA copy of a padded block. */
static BwdMain wg_main(const AttnDesc *d) {
    return (BwdMain){attn_bwd_wg_main_plan, attn_bwd_wg_main_spec, attn_bwd_wg_main_emit,
                     {d->tile.bm, bwg_ordered(d), bwg_dsplit(&d->tile)}};
}


int attn_bwd_wg_plan(const AttnDesc *d, Plan *plans) {
    AttnDesc q = bwd_dq_desc(d);
    BwdMain m = wg_main(d);
    return bwd_set_plan(d, &q, &m, plans);
}

/* block-sparse (non-deterministic): the main kernel walks query lists */
void attn_bwd_wg_sparse(const AttnDesc *d, SparseLists *l) { l->queries = (SparseTiles){d->tile.bm, d->tile.bn}; }

void attn_bwd_wg_build(const AttnDesc *d, KernelSet *ks, Buf *module) {
    AttnDesc q = bwd_dq_desc(d);
    BwdMain m = wg_main(d);
    bwd_set_build(d, &q, &m, ks, module);
}
