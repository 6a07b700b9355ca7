/* attn_bwd, tcgen05 family (sm_100a / sm_103a): tile keys, the main kernel's
 * plan (shared memory, the TMEM column map, warp roles), its launch ABI, and
 * the set around it, which is the mma.sync family's (bwd_set_build): the pre
 * kernel, this main kernel, then the dQ convert. With deterministic=1 the main
 * kernel adds dQ in key-block order under semaphores the pre kernel zeroes (no
 * dQ kernel). The emitter is attn_bwd_tc.c. */
#include "attn_bwd_tc.h"
#include <stddef.h>
#include <stdio.h>

const TileKey attn_bwd_tc_keys[] = {
    {"bm", offsetof(AttnTile, bm), {TCB_BM}, 1, "query rows per step: the N of S^T = K Q^T, the K of dV and dK, the M of dQ"},
    {"bn", offsetof(AttnTile, bn), {TCB_BN}, 1, "key rows per CTA: the M of S^T, dP^T, dV and dK (one TMEM lane each)"},
    {"stages", offsetof(AttnTile, stages), {1, 2, 3}, 3, "depth of the ring of Q, dO and statistics the producer fills"},
    {"deterministic", offsetof(AttnTile, deterministic), {0, 1}, 2,
     "1: bit-identical across runs: each key block adds its dQ once the key blocks below it have (a semaphore per "
     "block of query rows and part of the columns); 0: dQ added by vector atomics as each key block has it"},
    {"dsplit", offsetof(AttnTile, dsplit), {1, 2, 3, 4}, 4,
     "CTAs per block of keys, each owning d/dsplit columns (a multiple of 64) of dK, dV and dQ in its TMEM and "
     "recomputing S^T and dP^T over the whole d: how d 192 (3) and 256 (2) fit the 512 TMEM columns"},
};
const int attn_bwd_tc_nkeys = (int)(sizeof attn_bwd_tc_keys / sizeof attn_bwd_tc_keys[0]);

/* The TMEM columns a part of dsplit takes: S^T and dP^T (bm each), dV, dK and dQ (dh each). */
static int tmem_cols(int d, int dsplit) { return 2 * TCB_BM + 3 * (d / dsplit); }

/* dsplit: the fewest parts of whole 64-column slabs whose TMEM fits (d 64/128: 1, 192: 3, 256: 2). stages: at
 * d 256 K, V (128 KB) and dS leave room for one ring slot of Q and dO (64 KB) in the 227 KB, not two. */
AttnTile attn_bwd_tc_default_tile(const ArchInfo *a, int d, int dv) {
    (void)a, (void)dv;
    int ds = 1;
    while (ds < 4 && (d % ds || (d / ds) % 64 || tmem_cols(d, ds) > 512)) ds++;
    return (AttnTile){.bm = TCB_BM, .bn = TCB_BN, .stages = d > 192 ? 1 : 2, .warps = TCB_THREADS / 32,
                      .deterministic = 0, .dsplit = ds};
}

int attn_bwd_tc_check_tile(const AttnDesc *d, char *err, size_t errlen) {
    int ds = tcb_dsplit(d);
    if (d->d != d->dv || d->d % 64 || d->d > 256) {
        snprintf(err, errlen, "the tcgen05 attn_bwd takes d = d_v of 64, 128, 192 or 256 (d=%d, dv=%d)", d->d, d->dv);
        return 1;
    }
    if (bwd_dsplit_check(d, ds, 4, err, errlen)) return 1;
    if (d->tile.deterministic && d->block_m) {
        snprintf(err, errlen, "deterministic block-sparse is not in the tcgen05 attn_bwd: its dQ adds wait for every key "
                 "block before them in a fixed order, and the mask takes some of them away; the mma.sync attn_bwd is "
                 "deterministic with a mask (--mma sync), or use deterministic=0");
        return 1;
    }
    return 0;
}

/* block-sparse (non-deterministic): the main kernel walks query lists of its 64 x 128 tiles */
void attn_bwd_tc_sparse(const AttnDesc *d, SparseLists *l) {
    (void)d;
    l->queries = (SparseTiles){TCB_BM, TCB_BN};
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
    plan_add_region(p, "dS", TCB_BN * TCB_BM * 2, 1024, "dS^T rows, one per key: the MN-major A of dQ = dS K");
    plan_add_region(p, "bars", 8 * TCB_NBARS(t->stages) + 8, 8,
                    "mbarriers: K/V landed; full and empty per slot; S^T/dP^T done; P^T/dS^T in; step done; TMEM address");
    snprintf(shp[0], sizeof shp[0], "[%d, %d]", TCB_BN, TCB_BM);
    int dh = tcb_dh(d);   /* this CTA's columns of dV, dK and dQ */
    snprintf(shp[1], sizeof shp[1], "[%d, %d]", TCB_BN, dh);
    snprintf(shp[2], sizeof shp[2], "[%d, %d]", TCB_BN, dh);
    snprintf(shp[3], sizeof shp[3], "[%d, %d]", TCB_BM, dh);
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
    plan_add_tmem(p, "dV", dh, "fp32", shp[1], "whole kernel");
    plan_add_tmem(p, "dK", dh, "fp32", shp[2], "whole kernel");
    plan_add_tmem(p, "dQ", dh, "fp32", shp[3], "loop: M=64, lanes 0-15 of each warp's quarter");
    /* a compute thread at its peak: its rows of S^T and dP^T, then P^T and dS^T packed, addresses (ptxas 13.0: 168) */
    p->regs_est = 2 * TCB_BM + 40;
    plan_add_role(p, "compute", 4, 0);   /* P^T, dS^T from S^T, dP^T; dQ out by atomics; dK, dV at the end */
    plan_add_role(p, "mma", 1, 0);       /* lane 0 issues, the warp waits */
    plan_add_role(p, "producer", 1, 0);  /* lane 0 issues the TMA copies */
    char what[256], split[80];   /* the longest: 47 + 79 + 43 bytes */
    bwd_dsplit_note(split, sizeof split, tcb_dsplit(d), dh);
    snprintf(what, sizeof what, "attn_bwd main (tcgen05) d=%d bm=%d bn=%d stages=%d%s%s", d->d, t->bm, t->bn, t->stages,
             split, t->deterministic ? " deterministic (dQ adds in key-block order)" : "");
    plan_finish(p, d->arch, what);
}

void attn_bwd_tc_main_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks) {
    const AttnTile *t = &d->tile;
    const char *dt = dtype_name(d->dtype);
    *ks = (KernelSpec){.block = {TCB_THREADS, 1, 1}, .dyn_smem = (unsigned)p->smem_bytes};
    char split[16] = "";
    if (tcb_dsplit(d) > 1) snprintf(split, sizeof split, "_ds%d", tcb_dsplit(d));
    snprintf(ks->entry, sizeof ks->entry, "attn_bwd_tc_main_%s_d%d_bm%d_bn%d_st%d%s%s%s%s%s", dt, d->d, t->bm, t->bn,
             t->stages, split, d->causal ? "_causal" : "", t->deterministic ? "_det" : "", d->varlen ? "_varlen" : "",
             d->block_m ? "_sparse" : "");
    bwd_tensors(ks, d);
    abi_workspace(ks, "stats", "per block of query rows its lse, then its delta: one TMA copy per step");
    abi_workspace(ks, "dq_accum", "fp32 dQ accumulator [b, h_q, s_q, d], added into here (red.global.add)");
    if (t->deterministic)
        abi_workspace(ks, "dq_sem", "per block of query rows and part of dQ's columns, the key blocks that added: "
                      "waited on before this key block adds and raised after");
    if (d->block_m) abi_sparse_queries(ks);
    bwd_key_grads(ks, d);
    abi_scale(ks, ATTN_SCALE_MEANING);
    bwd_input_maps(ks, d, TCB_BM, TCB_BN);
    bwd_stats_map(ks, TCB_BM);
    if (tcb_dsplit(d) > 1) snprintf(ks->grid[0], sizeof ks->grid[0], "%d * cdiv(s_k, %d)", tcb_dsplit(d), TCB_BN);
    else snprintf(ks->grid[0], sizeof ks->grid[0], "cdiv(s_k, %d)", TCB_BN);
    snprintf(ks->grid[1], sizeof ks->grid[1], "h_kv");
    snprintf(ks->grid[2], sizeof ks->grid[2], "b");
}

static BwdMain tc_main(const AttnDesc *d) {
    return (BwdMain){attn_bwd_tc_main_plan, attn_bwd_tc_main_spec, attn_bwd_tc_main_emit, {TCB_BM, 1, tcb_dsplit(d)}};
}


int attn_bwd_tc_plan(const AttnDesc *d, Plan *plans) {
    BwdMain m = tc_main(d);
    return bwd_set_plan(d, d, &m, plans);   /* no dQ kernel: deterministic orders the main kernel's adds */
}

void attn_bwd_tc_build(const AttnDesc *d, KernelSet *ks, Buf *module) {
    BwdMain m = tc_main(d);
    bwd_set_build(d, d, &m, ks, module);
}
