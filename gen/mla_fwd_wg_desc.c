/* mla_fwd, wgmma family: tile keys and the default, the resource plan (the ring of gathered rows, the
 * warp roles and their registers), and the launch ABI with the TMA maps of q and o. */
#include "mla.h"
#include <stddef.h>
#include <stdio.h>
#include "mla_wg.h"
#include "../templates/wgmma.h"

const TileKey mla_fwd_wg_keys[] = {
    {"bm", offsetof(AttnTile, bm), {MLA_WG_BM}, 1, "heads of one token per CTA: the M of every wgmma, shared by the "
     "two consumer warpgroups (h_q < 64 leaves rows idle)"},
    {"bn", offsetof(AttnTile, bn), {MLA_WG_BN}, 1, "top-k slots per block: each consumer warpgroup's S is one block "
     "(m64n64), two blocks a pair; slot 0's P takes its rope slab once S is done"},
};
const int mla_fwd_wg_nkeys = (int)(sizeof mla_fwd_wg_keys / sizeof mla_fwd_wg_keys[0]);

/* 128 producer threads keep 56 registers: a gather row's swizzled chunk address, the four rows' sources and
 * next indices, the ring's counters */
#define MLA_WG_PRODUCER_REGS 56
#define MLA_WG_STAGES 2        /* two slots of 64 x 576 rows next to Q fill the 227 KB of an SM90 CTA */

AttnTile mla_fwd_wg_default_tile(const ArchInfo *a, int d, int dv) {
    (void)dv;
    (void)a, (void)d;
    return (AttnTile){.bm = MLA_WG_BM, .bn = MLA_WG_BN, .warps = 12, .stages = MLA_WG_STAGES, .producer = 4};
}

int mla_fwd_wg_check_tile(const AttnDesc *d, char *err, size_t errlen) {
    return mla_wg_check_dims(d, "mla_fwd", err, errlen);
}

/* what the producer leaves of the CTA's launch registers, shared by the two consumer warpgroups */
static int consumer_regs(const AttnDesc *d) { return plan_share_regs(d->arch, 32 * d->tile.warps, 4, MLA_WG_PRODUCER_REGS, 2); }

void mla_fwd_wg_plan(const AttnDesc *d, Plan *p) {
    const AttnTile *t = &d->tile;
    *p = (Plan){.threads = 32 * t->warps};
    int q = plan_add_region(p, "Q", t->bm * d->d * 2, 1024, "the token's heads, TMA 128B-swizzled slabs of 64 columns");
    plan_add_region(p, "KV.0", t->bn * d->d * 2 + t->bn * 4, 1024,
                    "block 2n's gathered rows (cp.async into 9 slabs, in halves: slabs 0-3 and 4-8; K = 576 columns, "
                    "V = the first 512), then 0 or -inf per slot; once its S is done the rope slab holds its P");
    /* the small regions fill the alignment gaps before KV.1 and P1 */
    plan_add_region(p, "rowx", 6 * t->bm * 4, 16, "row maxima of the two warpgroups (m_0 and m_1) for two pairs "
                    "(by the pair's parity), then their row sums at the end");
    plan_add_region(p, "KV.1", t->bn * d->d * 2 + t->bn * 4, 1024, "block 2n+1's, the same way");
    plan_add_region(p, "barriers", 8 * (4 + 4 * t->stages), 8, "Q full; per slot and half full (the 128 producer "
                    "threads) and empty (the 128 threads of the warpgroup that reads the half last); each side's "
                    "maxima, and the sums, written");
    plan_add_region(p, "P1", t->bm * t->bn * 2, 1024, "block 2n+1's P for warpgroup 0 (K-major, one slab)");
    plan_union_region(p, "O", q, t->bm * d->dv * 2, "output staging for the TMA store, over Q after the loop");
    /* a consumer thread: its O half (d_v/2 columns of 64 rows: 128), S of its block (32), P packed (16),
     * softmax state, descriptors and addresses */
    p->regs_est = d->dv / 4 + t->bn / 2 + t->bn / 4 + 40;
    plan_add_role(p, "producer", 4, MLA_WG_PRODUCER_REGS);
    plan_add_role(p, "consumer", 8, consumer_regs(d));
    char what[96];
    snprintf(what, sizeof what, "mla_fwd (wgmma) d_qk=%d d_v=%d bm=%d bn=%d stages=%d", d->d, d->dv, t->bm, t->bn,
             t->stages);
    plan_finish(p, d->arch, what);
    if (p->ok && p->regs_est > consumer_regs(d)) {
        p->ok = 0;
        snprintf(p->verdict, sizeof p->verdict, "%s: a consumer thread needs about %d registers; setmaxnreg gives %d",
                 what, p->regs_est, consumer_regs(d));
    }
}

void mla_fwd_wg_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks) {
    const char *dt = dtype_name(d->dtype);
    *ks = (KernelSpec){.block = {32u * (unsigned)d->tile.warps, 1, 1}, .dyn_smem = (unsigned)p->smem_bytes, .min_ctas = 1};
    snprintf(ks->entry, sizeof ks->entry, "mla_fwd_wg_%s_dqk%d_dv%d_bm%d_bn%d", dt, d->d, d->dv, d->tile.bm, d->tile.bn);
    mla_fwd_abi(ks, d);
    static const char *const qs[] = {"q_stride_h * 2", "q_stride_s * 2", "q_stride_s * 2 * s_q"};
    static const char *const os[] = {"o_stride_h * 2", "o_stride_s * 2", "o_stride_s * 2 * s_q"};
    mla_wg_head_map(ks, "q_map", "q", dt, MLA_D_QK_TEXT, d->tile.bm, qs);
    mla_wg_head_map(ks, "o_map", "o", dt, "512", d->tile.bm, os);
}
