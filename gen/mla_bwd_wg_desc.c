/* mla_bwd, wgmma family (sm_90a): tile keys and the default, the main kernel's plan (Q and dO resident,
 * one slot of gathered rows, P and dS tiles, the warp roles and their registers) and its TMA maps. The
 * emitter is mla_bwd_wg.c; the rest of the set (pre and convert) is the mma.sync family's (they use no
 * tensor cores). */
#include "mla_bwd.h"
#include <stddef.h>
#include <stdio.h>
#include "mla_wg.h"
#include "../templates/wgmma.h"

const TileKey mla_bwd_wg_keys[] = {
    {"bm", offsetof(AttnTile, bm), {MLA_WG_BM}, 1, "heads of one token per CTA: the M of S and dP, the K of dkv; "
     "Q and dO of 64 heads stay in shared memory (136 KB)"},
    {"bn", offsetof(AttnTile, bn), {MLA_WG_BN}, 1, "top-k slots per step: the M of dkv (its rows), 32 per consumer "
     "warpgroup for S and dP; one slot of 64 x 576 rows is what shared memory holds next to Q and dO"},
    {"deterministic", offsetof(AttnTile, deterministic), {0, 1}, 2,
     MLA_DET_MEANING},
};
const int mla_bwd_wg_nkeys = (int)(sizeof mla_bwd_wg_keys / sizeof mla_bwd_wg_keys[0]);

/* 128 producer threads keep 40 registers (the gather; each step's indices read under the wait for the slot),
 * so the consumers get 232: dq's 144, S and dP (32) or a dkv chunk (32), and the rest */
#define MLA_BWD_WG_PRODUCER_REGS 40

AttnTile mla_bwd_wg_default_tile(const ArchInfo *a, int d, int dv) {
    (void)dv;
    (void)a, (void)d;
    return (AttnTile){.bm = MLA_WG_BM, .bn = MLA_WG_BN, .warps = 12, .stages = 1, .producer = 4};
}

int mla_bwd_wg_check_tile(const AttnDesc *d, char *err, size_t errlen) {
    return mla_wg_check_dims(d, "mla_bwd", err, errlen);
}

/* what the producer leaves of the CTA's launch registers, shared by the two consumer warpgroups */
static int consumer_regs(const AttnDesc *d) { return plan_share_regs(d->arch, 32 * d->tile.warps, 4, MLA_BWD_WG_PRODUCER_REGS, 2); }

static void main_plan(const AttnDesc *d, Plan *p) {
    const AttnTile *t = &d->tile;
    *p = (Plan){.threads = 32 * t->warps};
    int q = plan_add_region(p, "Q", t->bm * d->d * 2, 1024, "the head block's queries, TMA 128B-swizzled slabs of 64 "
                            "columns (A of S; MN-major B of dkv)");
    plan_add_region(p, "dO", t->bm * d->dv * 2, 1024, "the head block's output gradients (A of dP; MN-major B of dkv)");
    plan_add_region(p, "KV", t->bn * d->d * 2, 1024, "loop: the step's gathered rows, 9 slabs (B of S and dP; "
                    "MN-major B of dq); the producer refills it once both dq products are done");
    plan_add_region(p, "bias", t->bn * 4, 16, "loop: 0 or -inf per slot of the step");
    plan_add_region(p, "rows", t->bn * 4, 16, "loop: the kv row of each slot, where its dkv goes");
    plan_add_region(p, "dS", t->bm * t->bn * 2, 1024, "loop: scale * dS [heads][slots], one slab (A of dq; MN-major "
                    "A of dkv)");
    plan_add_region(p, "P", t->bm * t->bn * 2, 1024, "loop: P [heads][slots] (MN-major A of dkv's d_v columns)");
    plan_add_region(p, "barriers", 8 * 3, 8, "Q and dO landed; the slot full (the 128 producer threads) and empty "
                    "(the 256 consumer threads)");
    plan_union_region(p, "dQ", q, t->bm * d->d * 2, "epilogue: dq staging for the TMA store, over Q");
    /* a consumer thread: its dq columns (288 of 64 rows: 144), S and dP of its 32 slots or one 64-column dkv
     * chunk (32), row stats, descriptors and addresses */
    p->regs_est = d->d / 4 + t->bn / 2 + 40;
    plan_add_role(p, "producer", 4, MLA_BWD_WG_PRODUCER_REGS);
    plan_add_role(p, "consumer", 8, consumer_regs(d));
    char what[96];
    snprintf(what, sizeof what, "mla_bwd main (wgmma) d_qk=%d d_v=%d bm=%d bn=%d%s", d->d, d->dv, t->bm, t->bn,
             t->deterministic ? " deterministic" : "");
    plan_finish(p, d->arch, what);
    if (p->ok && p->regs_est > consumer_regs(d)) {
        p->ok = 0;
        snprintf(p->verdict, sizeof p->verdict, "%s: a consumer thread needs about %d registers; setmaxnreg gives %d",
                 what, p->regs_est, consumer_regs(d));
    }
}

static void maps(const AttnDesc *d, KernelSpec *ks) {
    const char *dt = dtype_name(d->dtype);
    static const char *const qs[] = {"q_stride_h * 2", "q_stride_s * 2", "q_stride_s * 2 * s_q"};
    static const char *const ds[] = {"do_stride_h * 2", "do_stride_s * 2", "do_stride_s * 2 * s_q"};
    static const char *const dqs[] = {"dq_stride_h * 2", "dq_stride_s * 2", "dq_stride_s * 2 * s_q"};
    mla_wg_head_map(ks, "q_map", "q", dt, MLA_D_QK_TEXT, d->tile.bm, qs);
    mla_wg_head_map(ks, "do_map", "do", dt, "512", d->tile.bm, ds);
    mla_wg_head_map(ks, "dq_map", "dq", dt, MLA_D_QK_TEXT, d->tile.bm, dqs);
}

static const MlaBwdMain wg_main = {main_plan, mla_bwd_wg_main_emit, "main_wg", 1, maps, NULL, NULL, NULL};
int mla_bwd_wg_plan(const AttnDesc *d, Plan *plans) { return mla_bwd_set_plan(d, plans, &wg_main); }
void mla_bwd_wg_build(const AttnDesc *d, KernelSet *ks, Buf *m) { mla_bwd_set_build(d, ks, m, &wg_main); }
