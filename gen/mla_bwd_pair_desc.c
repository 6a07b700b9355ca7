/* The CTA-pair plan of the tcgen05 mla_bwd set (bm = 128): the plans of its
 * dq kernel (cta_group::2) and dkv kernel, their launch ABI, and the `ps`
 * workspace between them. The emitters are mla_bwd_pair.c and
 * mla_bwd_pair_dkv.c; the rest of the set is the shared one (mla_bwd_desc.c). */
#include "mla_bwd_pair.h"
#include <stdio.h>

void mla_bwd_pair_dq_plan(const AttnDesc *d, Plan *p) {
    *p = (Plan){.threads = PAIR_DQ_THREADS};
    plan_add_region(p, "Q", PAIR_CTA_HEADS * d->d * 2, 1024, "the CTA's 64 heads, K-major 128B slabs (A of S)");
    plan_add_region(p, "dO", PAIR_CTA_HEADS * d->dv * 2, 1024, "the CTA's 64 heads (A of dP)");
    plan_add_region(p, "X", PAIR_STEP / 2 * d->d * 2, 1024,
                    "loop: the CTA's 32 slots of the step, all columns (B of S, dP: the pair's N split)");
    plan_add_region(p, "Y", PAIR_STEP * PAIR_Y_SLABS * UMMA_SLAB_COLS * 2, 1024,
                    "loop: all 64 slots of the step, the CTA's 4 d_v slabs and the rope (B of dQ, MN-major)");
    plan_add_region(p, "dS", PAIR_CTA_HEADS * PAIR_STEP * 2, 1024, "loop: scale * dS of the CTA's heads (A of dQ)");
    plan_add_region(p, "bars", PAIR_BARS_BYTES, 8, "mbarriers: rows landed, S done, P ready (the pair's), dQ done; TMEM address");
    plan_add_tmem(p, "dQ", 256, "fp32", "[64, 512] as 2 x [128 lanes, 128]", "whole kernel: Layout B of two N=256 MMAs");
    plan_add_tmem(p, "dQ_rope", 64, "fp32", "[64, 64] in both lane halves", "whole kernel: N=128, each CTA supplies the rope");
    plan_add_tmem(p, "S", PAIR_STEP / 2, "fp32", "[64 heads, 64 slots]", "loop: Layout B");
    plan_add_tmem(p, "dP", PAIR_STEP / 2, "fp32", "[64 heads, 64 slots]", "loop: Layout B");
    /* live per compute thread: S and dP of its 32 slots, their rows, the packed P and dS, addresses */
    p->regs_est = 4 * 32 + 32 + 48;
    plan_add_role(p, "compute", 4, 0);    /* P, dS; dq out */
    plan_add_role(p, "mma", 1, 0);        /* the even CTA's lane 0 issues for the pair */
    plan_add_role(p, "producer", 1, 0);   /* X and Y by TMA tile::gather4 */
    char what[128];
    snprintf(what, sizeof what, "mla_bwd dq (tcgen05 CTA pair, cluster 2x1x1) d_qk=%d d_v=%d: %d slots, %d MMAs a step",
             d->d, d->dv, PAIR_STEP, d->d / 16 + d->dv / 16 + 3 * PAIR_STEP / 16);
    plan_finish(p, d->arch, what);
}

void mla_bwd_pair_dkv_plan(const AttnDesc *d, Plan *p) {
    int tile = PAIR_HEADS * PAIR_BLOCK * 2;
    *p = (Plan){.threads = PAIR_DKV_THREADS};
    plan_add_region(p, "Q", PAIR_HEADS * PAIR_DKV_COLS * 2, 1024, "the chunk's columns of all 128 heads (B of dkv, MN-major)");
    plan_add_region(p, "dO", PAIR_HEADS * PAIR_DKV_COLS * 2, 1024, "the same of dO (B of dkv; not the rope chunk)");
    plan_add_region(p, "dS^T.0", tile, 1024, "loop: dS [128 heads, 128 slots] of even blocks from ps (A, MN-major)");
    plan_add_region(p, "P^T.0", tile, 1024, "loop: P of even blocks (A)");
    plan_add_region(p, "dS^T.1", tile, 1024, "loop: odd blocks");
    plan_add_region(p, "P^T.1", tile, 1024, "loop: odd blocks");
    plan_add_region(p, "bars", 24, 8, "mbarriers: each TMEM buffer's MMAs done; TMEM address");
    plan_add_tmem(p, "dKV.0", PAIR_DKV_COLS, "fp32", "[128 slots, 128]", "loop: even blocks");
    plan_add_tmem(p, "dKV.1", PAIR_DKV_COLS, "fp32", "[128 slots, 128]", "loop: odd blocks, read out while the next MMAs run");
    p->regs_est = 32 + 48;
    plan_add_role(p, "all", 4, 0);        /* thread 0 issues; every thread reads out its slot */
    char what[128];
    snprintf(what, sizeof what, "mla_bwd dkv (tcgen05, KV-stationary) d_qk=%d: %d slots x %d columns x %d heads a step",
             d->d, PAIR_BLOCK, PAIR_DKV_COLS, PAIR_HEADS);
    plan_finish(p, d->arch, what);
}

#define PS_MEANING "bf16 [s_q, cdiv(h_q, 128), 2, 128, cdiv(topk, 128) * 128]: P and scale * dS of every (head, slot)"

static void dq_spec(const AttnDesc *d, const Plan *p, const MlaBwdMain *mk, KernelSpec *ks) {
    const char *dt = dtype_name(d->dtype);
    *ks = (KernelSpec){.block = {PAIR_DQ_THREADS, 1, 1}, .dyn_smem = (unsigned)p->smem_bytes, .min_ctas = 1};
    mla_bwd_entry(ks, d, mk->part, 0);
    mla_abi_inputs(ks, d);
    abi_tensor(ks, "do", PR_IN, "gradient of the output", "[s_q, h_q, d_v]", dt, "sh");
    abi_tensor(ks, "lse", PR_IN, MLA_LSE_MEANING " (from the forward)", "[s_q, h_q]", "fp32", "");
    abi_workspace(ks, "delta", "rowsum(dO * o), read here");
    abi_workspace(ks, "ps", "P and dS per (head, slot), written here");
    abi_tensor(ks, "dq", PR_OUT, "gradient of the queries", "[s_q, h_q, d_qk]", dt, "sh");
    abi_sizes(ks, mla_size_names, 4);
    abi_scale(ks, MLA_SCALE_MEANING);
    mla_bwd_tc_kv_map(d, ks);
    snprintf(ks->grid[0], sizeof ks->grid[0], "2 * s_q");
    snprintf(ks->grid[1], sizeof ks->grid[1], "cdiv(h_q, %d)", PAIR_HEADS);
    snprintf(ks->grid[2], sizeof ks->grid[2], "1");
    snprintf(ks->cluster[0], sizeof ks->cluster[0], "2");
}

static void dkv_spec(const AttnDesc *d, const Plan *p, const MlaBwdMain *mk, KernelSpec *ks) {
    const char *dt = dtype_name(d->dtype);
    *ks = (KernelSpec){.block = {PAIR_DKV_THREADS, 1, 1}, .dyn_smem = (unsigned)p->smem_bytes, .min_ctas = 1};
    mla_bwd_entry(ks, d, mk->part, 0);
    abi_tensor(ks, "q", PR_IN, "queries", "[s_q, h_q, d_qk]", dt, "sh");
    mla_abi_selection(ks);
    abi_tensor(ks, "do", PR_IN, "gradient of the output", "[s_q, h_q, d_v]", dt, "sh");
    abi_workspace(ks, "ps", "P and dS per (head, slot), read here");
    mla_bwd_dkv_workspace(d, ks);
    abi_sizes(ks, mla_size_names, 4);
    snprintf(ks->grid[0], sizeof ks->grid[0], "s_q");
    snprintf(ks->grid[1], sizeof ks->grid[1], "%d", (d->d + PAIR_DKV_COLS - 1) / PAIR_DKV_COLS);
    snprintf(ks->grid[2], sizeof ks->grid[2], "cdiv(h_q, %d)", PAIR_HEADS);
}

static void ps_workspace(const AttnDesc *d, KernelSet *ks) {
    (void)d;
    WorkspaceSpec *w = &ks->ws[ks->nws++];
    *w = (WorkspaceSpec){"ps", "", 0, PS_MEANING ", written by dq for every slot of the token's 128-slot blocks, "
                         "read by dkv"};
    snprintf(w->bytes, sizeof w->bytes, "s_q * cdiv(h_q, %d) * %d * cdiv(topk, %d)", PAIR_HEADS,
             2 * PAIR_HEADS * PAIR_BLOCK * 2, PAIR_BLOCK);
}

static const MlaBwdMain pair_dkv = {mla_bwd_pair_dkv_plan, mla_bwd_pair_dkv_emit, "dkv_pair", 0, NULL, dkv_spec, NULL, NULL};
const MlaBwdMain mla_bwd_pair_main = {mla_bwd_pair_dq_plan, mla_bwd_pair_dq_emit, "dq_pair", 0, NULL, dq_spec, &pair_dkv,
                                      ps_workspace};
