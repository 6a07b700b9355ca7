/* mla_bwd, tcgen05 family (sm_100a / sm_103a): tile keys, the main kernel's
 * plan (shared memory, the TMEM column map, the per-step MMA count) and the
 * kind-table entry points. The emitter is mla_bwd_tc.c; every other kernel
 * of the set is the mma.sync family's (they use no tensor cores). */
#include "mla_bwd_tc.h"
#include "mla_bwd_pair.h"
#include <stddef.h>
#include <stdio.h>

const TileKey mla_bwd_tc_keys[] = {
    {"bm", offsetof(AttnTile, bm), {16, 32, 128}, 3,
     "heads of one token per CTA (the MMAs' N; h_q is padded up to it); 128: the CTA-pair plan (cta_group::2 dq kernel, "
     "64 heads per CTA, then a KV-stationary dkv kernel)"},
    {"bn", offsetof(AttnTile, bn), {MLA_TC_BN}, 1, "top-k slots per step: the MMAs' M (one TMEM lane each)"},
    {"deterministic", offsetof(AttnTile, deterministic), {0, 1}, 2,
     MLA_DET_MEANING},
};
const int mla_bwd_tc_nkeys = (int)(sizeof mla_bwd_tc_keys / sizeof mla_bwd_tc_keys[0]);

/* The CTA pair: seed 001's plan for DeepSeek's h_q = 128 (any h_q runs; it is padded to 128 a head
 * block, so bm = 16 or 32 waste less at h_q <= 32 or 64). */
AttnTile mla_bwd_tc_default_tile(const ArchInfo *a, int d, int dv) {
    (void)dv;
    (void)a, (void)d;
    return (AttnTile){.bm = PAIR_HEADS, .bn = MLA_TC_BN, .warps = TC_THREADS / 32};
}

int mla_bwd_tc_check_tile(const AttnDesc *d, char *err, size_t errlen) {
    (void)d, (void)err, (void)errlen;
    return 0;   /* the keys allow only what the MMA shapes take; the plan judges the budgets */
}

/* MMAs (K = 16 each) one thread issues per step of bn slots. */
int mla_bwd_tc_mmas_per_step(const AttnDesc *d) {
    int hb = d->tile.bm, s = d->d / 16, dp = d->dv / 16;
    int dq = MLA_TC_DQ_TILES * (d->tile.bn / 16);
    int dkv = (d->d + MLA_TC_DKV_COLS - 1) / MLA_TC_DKV_COLS * (hb / 16) + (d->dv / MLA_TC_DKV_COLS) * (hb / 16);
    return s + dp + dq + dkv;
}

void mla_bwd_tc_main_plan(const AttnDesc *d, Plan *p) {
    const AttnTile *t = &d->tile;
    int hb = t->bm;
    static char shp[6][40];
    *p = (Plan){.threads = 32 * t->warps};
    int kv = plan_add_region(p, "KV", t->bn * d->d * 2, 1024,
                             "loop: the step's rows (TMA gather4), K-major 128B slabs (A of S^T, dP^T; MN-major A of dQ^T)");
    plan_add_region(p, "Q", hb * d->d * 2, 1024, "the head block's queries, 128B slabs (B of S^T; MN-major B of dkv)");
    plan_add_region(p, "dO", hb * d->dv * 2, 1024, "the head block's output gradients (B of dP^T; MN-major B of dkv)");
    plan_add_region(p, "dS", t->bn * hb * 2, 1024, "loop: scale * dS^T rows, MN-major (B of dQ^T)");
    plan_add_region(p, "rows", 2 * t->bn * 4, 16, "loop: each slot's kv row (-1: none), two steps (producer -> compute)");
    plan_add_region(p, "bars", TC_BARS_BYTES, 8, "mbarriers: KV full, S done, P ready, dQ done, dkv chunk done/free; TMEM address");
    plan_union_region(p, "dQ", kv, hb * d->d * 2, "epilogue: dq staging for 16-byte stores");
    snprintf(shp[0], sizeof shp[0], "[%d, %d]", t->bn, MLA_TC_DKV_COLS);
    snprintf(shp[1], sizeof shp[1], "%d x [128, %d]", MLA_TC_DQ_TILES, hb);
    snprintf(shp[2], sizeof shp[2], "[%d, %d]", t->bn, hb);
    plan_add_tmem(p, "dKV", MLA_TC_DKV_COLS, "fp32", shp[0], "loop: one column chunk of the step's dkv at a time");
    plan_add_tmem(p, "dQ^T", MLA_TC_DQ_TILES * hb, "fp32", shp[1], "whole kernel: d_qk rows 0-511, 448-575 x heads");
    plan_add_tmem(p, "S^T", hb, "fp32", shp[2], "loop");
    plan_add_tmem(p, "dP^T", hb, "fp32", shp[2], "loop");
    plan_add_tmem(p, "P^T", hb / 2, "bf16", shp[2], "loop: A of dkv (TMEM operand)");
    plan_add_tmem(p, "dS^T", hb / 2, "bf16", shp[2], "loop: A of dkv (TMEM operand)");
    /* live per compute thread: S^T and dP^T rows, lse and delta of the heads, a 32-column chunk, addresses */
    p->regs_est = 4 * hb + 32 + 48;
    plan_add_role(p, "compute", TC_COMPUTE / 32, 0);    /* P^T, dS^T; dkv chunks out; dq */
    plan_add_role(p, "mma", 1, 0);                      /* lane 0 issues, the warp waits */
    plan_add_role(p, "producer", TC_PRODUCERS / 32, 0); /* the gather (TMA tile::gather4) */
    char what[96];
    snprintf(what, sizeof what, "mla_bwd main (tcgen05) d_qk=%d d_v=%d bm=%d bn=%d%s, %d MMAs (K=16) per step", d->d,
             d->dv, hb, t->bn, t->deterministic ? " det" : "", mla_bwd_tc_mmas_per_step(d));
    plan_finish(p, d->arch, what);
}

/* kv by TMA tile::gather4: rows of d_qk elements, one row per box, 64 columns (128 bytes) per
 * box under the 128B swizzle the MMAs read; rows out of the map (invalid slots) are zeros */
void mla_bwd_tc_kv_map(const AttnDesc *d, KernelSpec *ks) {
    static const char *const dims[] = {MLA_D_QK_TEXT, "s_kv"}, *const strides[] = {"kv_stride_s * 2"};
    TensorMapSpec m = {.param = "kv_map", .tensor = "kv", .dtype = dtype_name(d->dtype), .rank = 2,
                       .dims = {dims[0], dims[1]}, .strides = {strides[0]}, .box = {UMMA_SLAB_COLS, 1},
                       .elem_strides = {1, 1}, .swizzle = "128B", .interleave = "none", .oob_fill = "zero"};
    abi_tensor_map(ks, "kv", "kv [s_kv, d_qk] for TMA tile::gather4 (box 64 x 1, 128B swizzle, zero fill); "
                   "the row stride kv_stride_s * 2 bytes must be a multiple of 16", m);
}

static const MlaBwdMain tc_main = {mla_bwd_tc_main_plan, mla_bwd_tc_main_emit, "main_tc", 1, mla_bwd_tc_kv_map, NULL, NULL, NULL};
static const MlaBwdMain *main_of(const AttnDesc *d) { return d->tile.bm == PAIR_HEADS ? &mla_bwd_pair_main : &tc_main; }
int mla_bwd_tc_plan(const AttnDesc *d, Plan *plans) { return mla_bwd_set_plan(d, plans, main_of(d)); }
void mla_bwd_tc_build(const AttnDesc *d, KernelSet *ks, Buf *m) { mla_bwd_set_build(d, ks, m, main_of(d)); }
