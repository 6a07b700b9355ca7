/* mla_fwd (mma.sync family): tile keys and defaults, the resource plan, and
 * the launch ABI shared with mla_bwd. */
#include "mla.h"
#include <stddef.h>
#include <stdio.h>
#include "attn_emit.h"

const TileKey mla_fwd_keys[] = {
    {"bm", offsetof(AttnTile, bm), {16, 32, 64}, 3, "heads of one token per CTA (16 per warp pair)"},
    {"bn", offsetof(AttnTile, bn), {32, 64}, 2, "top-k slots gathered per step (half, a whole k step, per warp of a pair)"},
};
const int mla_fwd_nkeys = (int)(sizeof mla_fwd_keys / sizeof mla_fwd_keys[0]);

const char *const mla_size_names[4] = {"s_q", "s_kv", "h_q", "topk"};

/* The query tile (bm x 576) stays in shared memory and two stages of
 * gathered rows (bn x 576 each) stream past it: the largest tile whose plan
 * fits the arch's shared memory. */
AttnTile mla_first_fitting(const ArchInfo *a, const AttnTile *order, int n, void (*plan)(const AttnDesc *, Plan *)) {
    for (int i = 0; i < n; i++) {
        AttnTile t = order[i];
        t.warps = 2 * t.bm / 16;
        AttnDesc probe = {.arch = a, .d = MLA_D_QK, .dv = MLA_D_V, .tile = t};
        Plan p;
        plan(&probe, &p);
        if (p.ok) return t;
    }
    AttnTile last = order[n - 1];   /* none fits: the smallest, which the plan then refuses by its budget */
    last.warps = 2 * last.bm / 16;
    return last;
}

AttnTile mla_fwd_default_tile(const ArchInfo *a, int d, int dv) {
    (void)dv;
    (void)d;
    static const AttnTile order[] = {{.bm = 64, .bn = 64}, {.bm = 64, .bn = 32}, {.bm = 32, .bn = 32}, {.bm = 16, .bn = 32}};
    return mla_first_fitting(a, order, (int)(sizeof order / sizeof order[0]), mla_fwd_plan);
}

int mla_fwd_check_tile(const AttnDesc *d, char *err, size_t errlen) {
    (void)d, (void)err, (void)errlen;
    return 0;   /* every bm x bn pair of the keys is a valid shape; the plan judges the budget */
}

void mla_fwd_plan(const AttnDesc *d, Plan *p) {
    const AttnTile *t = &d->tile;
    *p = (Plan){.threads = 32 * t->warps};
    int q = plan_add_region(p, "Q", t->bm * d->d * 2, 128, "the token's head block, swizzled; read every step");
    plan_add_region(p, "KV.0", t->bn * d->d * 2, 128, "gathered rows of the step (K = all 576 columns, V = the first 512)");
    plan_add_region(p, "bias.0", t->bn * 4, 16, "0 or -inf per slot of the step: its validity");
    plan_add_region(p, "KV.1", t->bn * d->d * 2, 128, "the next step's rows land here while .0 is used, then they swap");
    plan_add_region(p, "bias.1", t->bn * 4, 16, "validity of the next step's slots");
    plan_add_region(p, "P", t->bm * MLA_P_COLS * 2, 128, "probabilities, each warp's half for its partner");
    plan_add_region(p, "rowx", 2 * t->bm * 4, 16, "per-warp row maxima and sums exchanged within a pair");
    plan_union_region(p, "O", q, t->bm * d->dv * 2, "output staging, reuses Q after the loop");
    /* live per thread: the O half (16 x dv/2 fp32), S of the warp's slots, P fragments, softmax state, addresses */
    int o = (d->dv / 2 / 8) * 4, s = (t->bn / 2 / 8) * 4, pf = (t->bn / 16) * 4;
    p->regs_est = o + s + pf + 8 + 48;
    char what[96];
    snprintf(what, sizeof what, "mla_fwd d_qk=%d d_v=%d bm=%d bn=%d warps=%d", d->d, d->dv, t->bm, t->bn, t->warps);
    plan_finish(p, d->arch, what);
}

void mla_abi_selection(KernelSpec *ks) {
    abi_tensor(ks, "indices", PR_IN, "top-k rows of kv per token; a slot is valid iff 0 <= idx < s_kv", "[s_q, topk]",
               "int32", "s");
    abi_tensor(ks, "topk_length", PR_IN, "optional (null: every slot): slot j of token t is used only if j < topk_length[t]",
               "[s_q]", "int32", "");
}

void mla_abi_inputs(KernelSpec *ks, const AttnDesc *d) {
    const char *dt = dtype_name(d->dtype);
    abi_tensor(ks, "q", PR_IN, "queries", "[s_q, h_q, d_qk]", dt, "sh");
    abi_tensor(ks, "kv", PR_IN, "latent keys/values: K = kv[:, :d_qk], V = kv[:, :d_v]", "[s_kv, d_qk]", dt, "s");
    mla_abi_selection(ks);
}

void mla_fwd_abi(KernelSpec *ks, const AttnDesc *d) {
    const char *dt = dtype_name(d->dtype);
    mla_abi_inputs(ks, d);
    abi_tensor(ks, "o", PR_OUT, "attention output", "[s_q, h_q, d_v]", dt, "sh");
    abi_tensor(ks, "lse", PR_OUT, MLA_LSE_MEANING, "[s_q, h_q]", "fp32", "");
    abi_sizes(ks, mla_size_names, 4);
    abi_scale(ks, MLA_SCALE_MEANING);
    snprintf(ks->grid[0], sizeof ks->grid[0], "s_q");
    snprintf(ks->grid[1], sizeof ks->grid[1], "cdiv(h_q, %d)", d->tile.bm);
    snprintf(ks->grid[2], sizeof ks->grid[2], "1");
}

void mla_fwd_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks) {
    *ks = (KernelSpec){.block = {32u * (unsigned)d->tile.warps, 1, 1}, .dyn_smem = (unsigned)p->smem_bytes};
    snprintf(ks->entry, sizeof ks->entry, "mla_fwd_%s_dqk%d_dv%d_bm%d_bn%d", dtype_name(d->dtype), d->d, d->dv,
             d->tile.bm, d->tile.bn);
    mla_fwd_abi(ks, d);
}
