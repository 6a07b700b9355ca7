/* attn_fwd, tcgen05 family (sm_100a / sm_103a): tile keys and defaults, the
 * plan (shared-memory rings, the TMEM column map, warp roles) and the launch
 * ABI with the TMA tensor maps of Q, K and V. The emitter is attn_fwd_tc.c. */
#include "attn_fwd_tc.h"
#include <stddef.h>
#include <stdio.h>

const TileKey attn_fwd_tc_keys[] = {
    {"bm", offsetof(AttnTile, bm), {TC_FWD_BM}, 1, "query rows per CTA: the MMAs' M, one TMEM lane and one softmax thread each"},
    {"bn", offsetof(AttnTile, bn), {64, 128}, 2, "key/value rows per step (the N of S = Q K^T, the K of O += P V)"},
    {"stages", offsetof(AttnTile, stages), {2, 3}, 2, "depth of the K/V ring the producer fills"},
};
const int attn_fwd_tc_nkeys = (int)(sizeof attn_fwd_tc_keys / sizeof attn_fwd_tc_keys[0]);

/* d=256 takes 64-key steps: two S buffers, P and a 256-column O fit the 512 TMEM columns only so. */
AttnTile attn_fwd_tc_default_tile(const ArchInfo *a, int d) {
    (void)a;
    return (AttnTile){.bm = TC_FWD_BM, .bn = d >= 256 ? 64 : 128, .stages = 2, .warps = TC_FWD_THREADS / 32};
}

int attn_fwd_tc_check_tile(const AttnDesc *d, char *err, size_t errlen) {
    if (d->d % 64 || d->dv % 64 || d->dv > 256) {
        snprintf(err, errlen, "the tcgen05 attn_fwd needs head dims that are multiples of 64 and d_v <= 256 (the MMA's N "
                 "at M=128); d=%d, dv=%d", d->d, d->dv);
        return 1;
    }
    return 0;
}

static const char *const kv_stage[] = {"KV.0", "KV.1", "KV.2"};

void attn_fwd_tc_plan(const AttnDesc *d, Plan *p) {
    const AttnTile *t = &d->tile;
    static char shp[3][32];
    *p = (Plan){.threads = TC_FWD_THREADS};
    plan_add_region(p, "Q", t->bm * d->d * 2, 1024, "the CTA's query rows, TMA 128B-swizzled slabs of 64 columns (A of S)");
    for (int s = 0; s < t->stages; s++)
        plan_add_region(p, kv_stage[s], t->bn * (d->d + d->dv) * 2, 1024,
                        "ring slot: K_n (B of S, K-major), then V_n (B of O += P V, MN-major)");
    plan_add_region(p, "bars", 8 * TC_FWD_NBARS(t->stages) + 8, 8,
                    "mbarriers: Q full; K/V full and empty per slot; S full x2; P full; O done; TMEM address");
    snprintf(shp[0], sizeof shp[0], "[%d, %d]", t->bm, t->bn);
    snprintf(shp[1], sizeof shp[1], "[%d, %d]", t->bm, d->dv);
    plan_add_tmem(p, "S.0", t->bn, "fp32", shp[0], "loop: S_n of even n (the issuer writes S_{n+1} into the other "
                  "while the softmax reads this one)");
    plan_add_tmem(p, "S.1", t->bn, "fp32", shp[0], "loop: S_n of odd n");
    plan_add_tmem(p, "P", t->bn / 2, "bf16", shp[0], "loop: exp(S_n - m), A of O += P V (TMEM operand)");
    plan_add_tmem(p, "O", d->dv, "fp32", shp[1], "whole kernel: the output accumulator, rescaled in place");
    /* a softmax thread at its peak: its row of S, P packed, the row state and addresses (ptxas 13.0: 207-236 at bn=128) */
    p->regs_est = t->bn + 108;
    plan_add_role(p, "softmax", 4, 0);   /* one query row per thread: S, P, O's rescale and the epilogue */
    plan_add_role(p, "mma", 1, 0);       /* lane 0 issues, the warp waits */
    plan_add_role(p, "producer", 1, 0);  /* lane 0 issues the TMA copies */
    char what[96];
    snprintf(what, sizeof what, "attn_fwd (tcgen05) d=%d dv=%d bm=%d bn=%d stages=%d", d->d, d->dv, t->bm, t->bn, t->stages);
    plan_finish(p, d->arch, what);
}

void attn_fwd_tc_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks) {
    const AttnTile *t = &d->tile;
    const char *dt = dtype_name(d->dtype);
    *ks = (KernelSpec){.block = {TC_FWD_THREADS, 1, 1}, .dyn_smem = (unsigned)p->smem_bytes};
    snprintf(ks->entry, sizeof ks->entry, "attn_fwd_tc_%s_d%d_bm%d_bn%d_st%d%s", dt, d->d, t->bm, t->bn, t->stages,
             d->causal ? "_causal" : "");
    attn_fwd_abi(ks, dt, t->bm);
    static const char *const qs[] = {"q_stride_h * 2", "q_stride_s * 2", "q_stride_b * 2"};
    static const char *const kst[] = {"k_stride_h * 2", "k_stride_s * 2", "k_stride_b * 2"};
    static const char *const vs[] = {"v_stride_h * 2", "v_stride_s * 2", "v_stride_b * 2"};
    wg_bshd_map(ks, "q_map", "q", dt, d->d, "h_q", "s_q", t->bm, qs);
    wg_bshd_map(ks, "k_map", "k", dt, d->d, "h_kv", "s_k", t->bn, kst);
    wg_bshd_map(ks, "v_map", "v", dt, d->dv, "h_kv", "s_k", t->bn, vs);
}
