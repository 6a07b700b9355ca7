/* attn_bwd, tcgen05 family (sm_100a / sm_103a): tile keys, the main kernel's
 * plan (shared memory, the TMEM column map, warp roles), its launch ABI, and
 * the set around it, which is the mma.sync family's (bwd_set_build): the pre
 * kernel, this main kernel, then the dQ convert, or with deterministic=1 the
 * mma.sync dQ kernel, which recomputes dQ per query block. The emitter is
 * attn_bwd_tc.c. */
#include "attn_bwd_tc.h"
#include <stddef.h>
#include <stdio.h>

const TileKey attn_bwd_tc_keys[] = {
    {"bm", offsetof(AttnTile, bm), {TCB_BM}, 1, "query rows per step: the N of S^T = K Q^T, the K of dV and dK, the M of dQ"},
    {"bn", offsetof(AttnTile, bn), {TCB_BN}, 1, "key rows per CTA: the M of S^T, dP^T, dV and dK (one TMEM lane each)"},
    {"stages", offsetof(AttnTile, stages), {1, 2, 3}, 3, "depth of the ring of Q, dO and statistics the producer fills"},
    {"deterministic", offsetof(AttnTile, deterministic), {0, 1}, 2,
     "1: bit-identical across runs: the main kernel leaves dQ to the mma.sync family's dQ kernel, which recomputes it "
     "per query block; 0: dQ added by vector atomics from the main kernel"},
};
const int attn_bwd_tc_nkeys = (int)(sizeof attn_bwd_tc_keys / sizeof attn_bwd_tc_keys[0]);

AttnTile attn_bwd_tc_default_tile(const ArchInfo *a, int d, int dv) {
    (void)dv;
    (void)a, (void)d;
    return (AttnTile){.bm = TCB_BM, .bn = TCB_BN, .stages = 2, .warps = TCB_THREADS / 32, .deterministic = 0};
}

int attn_bwd_tc_check_tile(const AttnDesc *d, char *err, size_t errlen) {
    if (d->d != d->dv || (d->d != 64 && d->d != 128)) {
        snprintf(err, errlen, "the tcgen05 attn_bwd takes d = d_v = 64 or 128: dK and dV (d + d_v columns), S^T, dP^T "
                 "and dQ share the 512 TMEM columns (d=%d, dv=%d)", d->d, d->dv);
        return 1;
    }
    return 0;
}

static const char *const q_st[] = {"Q.0", "Q.1", "Q.2"}, *const do_st[] = {"dO.0", "dO.1", "dO.2"},
                  *const stats_st[] = {"stats.0", "stats.1", "stats.2"};

void attn_bwd_tc_main_plan(const AttnDesc *d, Plan *p) {
    const AttnTile *t = &d->tile;
    static char shp[4][32];
    *p = (Plan){.threads = TCB_THREADS};
    plan_add_region(p, "K", TCB_BN * d->d * 2, 1024, "the CTA's keys, TMA 128B-swizzled slabs (A of S^T; MN-major B of dQ)");
    plan_add_region(p, "V", TCB_BN * d->dv * 2, 1024, "the CTA's values (A of dP^T)");
    for (int s = 0; s < t->stages; s++) {
        plan_add_region(p, q_st[s], TCB_BM * d->d * 2, 1024, "ring slot: query block (B of S^T; MN-major B of dK)");
        plan_add_region(p, do_st[s], TCB_BM * d->dv * 2, 1024, "ring slot: its output gradient (B of dP^T; MN-major B of dV)");
        plan_add_region(p, stats_st[s], 2 * TCB_BM * 4, 128, "ring slot: its lse, then delta (a TMA copy of its stats block)");
    }
    if (tcb_main_dq(d))
        plan_add_region(p, "dS", TCB_BN * TCB_BM * 2, 1024, "dS^T rows, one per key: the MN-major A of dQ = dS K");
    plan_add_region(p, "bars", 8 * TCB_NBARS(t->stages) + 8, 8,
                    "mbarriers: K/V landed; full and empty per slot; S^T/dP^T done; P^T/dS^T in; step done; TMEM address");
    snprintf(shp[0], sizeof shp[0], "[%d, %d]", TCB_BN, TCB_BM);
    snprintf(shp[1], sizeof shp[1], "[%d, %d]", TCB_BN, d->dv);
    snprintf(shp[2], sizeof shp[2], "[%d, %d]", TCB_BN, d->d);
    snprintf(shp[3], sizeof shp[3], "[%d, %d]", TCB_BM, d->d);
    int s_reg = p->ntmem, dp_reg = p->ntmem + 1;
    plan_add_tmem(p, "S^T", TCB_BM, "fp32", shp[0], "loop: keys x queries");
    plan_add_tmem(p, "dP^T", TCB_BM, "fp32", shp[0], "loop");
    if (tcb_own_p(d)) {   /* then the next step's S^T and dP^T need not wait for dV and dK */
        plan_add_tmem(p, "P^T", TCB_BM / 2, "bf16", shp[0], "loop: A of dV += P^T dO");
        plan_add_tmem(p, "dS^T", TCB_BM / 2, "bf16", shp[0], "loop: A of dK += dS^T Q");
    } else {
        plan_alias_tmem(p, "P^T", s_reg, TCB_BM / 2, "bf16", shp[0], "loop, once S^T is read: A of dV += P^T dO");
        plan_alias_tmem(p, "dS^T", dp_reg, TCB_BM / 2, "bf16", shp[0], "loop, once dP^T is read: A of dK += dS^T Q");
    }
    plan_add_tmem(p, "dV", d->dv, "fp32", shp[1], "whole kernel");
    plan_add_tmem(p, "dK", d->d, "fp32", shp[2], "whole kernel");
    if (tcb_main_dq(d)) plan_add_tmem(p, "dQ", d->d, "fp32", shp[3], "loop: M=64, lanes 0-15 of each warp's quarter");
    /* a compute thread at its peak: its rows of S^T and dP^T, then P^T and dS^T packed, addresses (ptxas 13.0: 168) */
    p->regs_est = 2 * TCB_BM + 40;
    plan_add_role(p, "compute", 4, 0);   /* P^T, dS^T from S^T, dP^T; dQ out by atomics; dK, dV at the end */
    plan_add_role(p, "mma", 1, 0);       /* lane 0 issues, the warp waits */
    plan_add_role(p, "producer", 1, 0);  /* lane 0 issues the TMA copies */
    char what[112];
    snprintf(what, sizeof what, "attn_bwd main (tcgen05) d=%d bm=%d bn=%d stages=%d%s", d->d, t->bm, t->bn, t->stages,
             tcb_main_dq(d) ? "" : " deterministic (no dQ)");
    plan_finish(p, d->arch, what);
}

void attn_bwd_tc_main_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks) {
    const AttnTile *t = &d->tile;
    const char *dt = dtype_name(d->dtype);
    *ks = (KernelSpec){.block = {TCB_THREADS, 1, 1}, .dyn_smem = (unsigned)p->smem_bytes};
    snprintf(ks->entry, sizeof ks->entry, "attn_bwd_tc_main_%s_d%d_bm%d_bn%d_st%d%s%s", dt, d->d, t->bm, t->bn, t->stages,
             d->causal ? "_causal" : "", t->deterministic ? "_det" : "");
    bwd_tensors(ks, d);
    abi_workspace(ks, "stats", "per block of query rows its lse, then its delta: one TMA copy per step");
    if (tcb_main_dq(d)) abi_workspace(ks, "dq_accum", "fp32 dQ accumulator [b, h_q, s_q, d], added into here (red.global.add)");
    abi_tensor(ks, "dk", PR_OUT, "gradient of the keys, summed over the query heads of each kv head", "[b, s_k, h_kv, d]", dt, "bsh");
    abi_tensor(ks, "dv", PR_OUT, "gradient of the values, summed over the query heads of each kv head", "[b, s_k, h_kv, dv]", dt, "bsh");
    abi_sizes(ks, attn_size_names, 4);
    abi_scale(ks, ATTN_SCALE_MEANING);
    bwd_input_maps(ks, d, TCB_BM, TCB_BN);
    bwd_stats_map(ks, TCB_BM);
    snprintf(ks->grid[0], sizeof ks->grid[0], "cdiv(s_k, %d)", TCB_BN);
    snprintf(ks->grid[1], sizeof ks->grid[1], "h_kv");
    snprintf(ks->grid[2], sizeof ks->grid[2], "b");
}

static BwdMain tc_main(void) {
    return (BwdMain){attn_bwd_tc_main_plan, attn_bwd_tc_main_spec, attn_bwd_tc_main_emit, {TCB_BM, 0}};
}


int attn_bwd_tc_plan(const AttnDesc *d, Plan *plans) {
    AttnDesc q = bwd_dq_desc(d);
    BwdMain m = tc_main();
    return bwd_set_plan(d, &q, &m, plans);
}

void attn_bwd_tc_build(const AttnDesc *d, KernelSet *ks, Buf *module) {
    AttnDesc q = bwd_dq_desc(d);
    BwdMain m = tc_main();
    bwd_set_build(d, &q, &m, ks, module);
}
