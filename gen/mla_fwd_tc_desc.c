/* mla_fwd, tcgen05 family (sm_100a / sm_103a): tile keys, the plan (the gathered step, Q, P^T, the TMEM
 * map) and the launch ABI (mla_fwd_abi and kv's gather4 map). The emitter is mla_fwd_tc.c. */
#include "mla_fwd_tc.h"
#include <stddef.h>
#include <stdio.h>

const TileKey mla_fwd_tc_keys[] = {
    {"bm", offsetof(AttnTile, bm), {16, 32}, 2, "heads of one token per CTA: the N of S^T = KV Q^T and of O^T += V^T P^T "
     "(h_q is padded up to it)"},
    {"bn", offsetof(AttnTile, bn), {MLA_TC_BN}, 1, "top-k slots per step: the M of S^T (one TMEM lane and compute thread each)"},
};
const int mla_fwd_tc_nkeys = (int)(sizeof mla_fwd_tc_keys / sizeof mla_fwd_tc_keys[0]);

AttnTile mla_fwd_tc_default_tile(const ArchInfo *a, int d, int dv) {
    (void)dv;
    (void)a, (void)d;
    return (AttnTile){.bm = MFT_MAX_HB, .bn = MLA_TC_BN, .warps = MFT_THREADS / 32};
}

int mla_fwd_tc_check_tile(const AttnDesc *d, char *err, size_t errlen) {
    (void)d, (void)err, (void)errlen;
    return 0;   /* the keys allow only what the MMA shapes take; the plan judges the budgets */
}

void mla_fwd_tc_plan(const AttnDesc *d, Plan *p) {
    const AttnTile *t = &d->tile;
    int hb = t->bm;
    static char shp[2][32];
    *p = (Plan){.threads = MFT_THREADS};
    int kv = plan_add_region(p, "KV", t->bn * d->d * 2, 1024, "the step's rows (TMA gather4), K-major 128B slabs "
                             "(A of S^T; MN-major A of O^T = V^T P^T)");
    plan_add_region(p, "Q", hb * d->d * 2, 1024, "the head block's queries, 128B slabs (B of S^T)");
    plan_add_region(p, "P", t->bn * hb * 2, 1024, "P^T rows, one per slot, MN-major (B of O^T)");
    plan_add_region(p, "red", 4 * hb * 4, 16, "per warp and head: the step's slot maximum, at the end the row sum");
    plan_add_region(p, "rows", 2 * t->bn * 4, 16, "each slot's kv row (-1: none), two steps (producer -> compute)");
    plan_add_region(p, "bars", 8 * MFT_NBARS + 8, 8, "mbarriers: rows landed, S^T done, P^T in, O^T done; TMEM address");
    plan_union_region(p, "O", kv, hb * d->dv * 2, "epilogue: O staging for 16-byte stores");
    snprintf(shp[0], sizeof shp[0], "[%d, %d]", t->bn, hb);
    snprintf(shp[1], sizeof shp[1], "%d x [128, %d]", MFT_O_TILES, hb);
    plan_add_tmem(p, "S^T", hb, "fp32", shp[0], "loop: slots x heads");
    plan_add_tmem(p, "O^T", MFT_O_TILES * hb, "fp32", shp[1], "whole kernel: d_v rows x heads, rescaled in place");
    /* a compute thread: S^T's row, the heads' maxima, factors and partial sums, an O^T row tile, addresses */
    p->regs_est = 5 * hb + 48;
    plan_add_role(p, "compute", 4, 0);   /* P^T per slot; O^T rescaled; O and lse out */
    plan_add_role(p, "mma", 1, 0);       /* lane 0 issues, the warp waits */
    plan_add_role(p, "producer", 1, 0);  /* the gather (TMA tile::gather4) */
    char what[96];
    snprintf(what, sizeof what, "mla_fwd (tcgen05) d_qk=%d d_v=%d bm=%d bn=%d", d->d, d->dv, hb, t->bn);
    plan_finish(p, d->arch, what);
}

void mla_fwd_tc_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks) {
    *ks = (KernelSpec){.block = {MFT_THREADS, 1, 1}, .dyn_smem = (unsigned)p->smem_bytes};
    snprintf(ks->entry, sizeof ks->entry, "mla_fwd_tc_%s_dqk%d_dv%d_bm%d_bn%d", dtype_name(d->dtype), d->d, d->dv,
             d->tile.bm, d->tile.bn);
    mla_fwd_abi(ks, d);
    mla_bwd_tc_kv_map(d, ks);
}
