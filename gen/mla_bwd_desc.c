/* mla_bwd: the mma.sync family's tile keys and defaults, the plans of the
 * kernel set, its launch ABI and workspaces, and the set put together from
 * the kernels' files (mla_bwd.c, mla_bwd_rows.c), which never call back here.
 * The set is the same in every family but for its main kernel (MlaBwdMain):
 * the tcgen05 family's is mla_bwd_tc.c. */
#include "mla_bwd.h"
#include <stddef.h>
#include <stdio.h>

const TileKey mla_bwd_keys[] = {
    {"bm", offsetof(AttnTile, bm), {16, 32, 64}, 3, "heads of one token per CTA (16 per warp pair)"},
    {"bn", offsetof(AttnTile, bn), {32}, 1, "top-k slots gathered per step (16 per warp of a pair)"},
    {"stages", offsetof(AttnTile, stages), {1, 2}, 2,
     "buffers of gathered rows: 2, the next step's land while this one's are read; 1 (for 99 KB parts: sm_86, "
     "sm_89, sm_120), the next step's are gathered once dq = dS K has read this one's, under the dkv products"},
    {"deterministic", offsetof(AttnTile, deterministic), {0, 1}, 2,
     MLA_DET_MEANING},
};
const int mla_bwd_nkeys = (int)(sizeof mla_bwd_keys / sizeof mla_bwd_keys[0]);

static const char *const pre_sizes[] = {"s_q", "h_q"}, *const convert_sizes[] = {"s_kv"};
static const char *const pre_det_sizes[] = {"s_q", "h_q", "s_kv"}, *const convert_det_sizes[] = {"s_kv", "s_q", "h_q"};

AttnTile mla_bwd_default_tile(const ArchInfo *a, int d, int dv) {
    (void)dv;
    (void)d;
    /* the most heads per CTA that fit, two row buffers before one (one gathers under the dkv products only) */
    static const AttnTile order[] = {{.bm = 64, .bn = 32, .stages = 2}, {.bm = 32, .bn = 32, .stages = 2},
                                     {.bm = 16, .bn = 32, .stages = 2}, {.bm = 32, .bn = 32, .stages = 1},
                                     {.bm = 16, .bn = 32, .stages = 1}};
    return mla_first_fitting(a, order, (int)(sizeof order / sizeof order[0]), mla_bwd_main_plan);
}

int mla_bwd_check_tile(const AttnDesc *d, char *err, size_t errlen) {
    (void)d, (void)err, (void)errlen;
    return 0;   /* every key combination splits evenly (mla_dkv_split); the plan judges the budget */
}

/* The main kernel's regions in seed 000's terms (--plan's budget table): the tile's bm heads, bn slots. */
static void budget_formulas(const AttnDesc *d, Plan *p) {
    const AttnTile *t = &d->tile;
    const char *dt = dtype_name(d->dtype);
    char shp[6][32];
    snprintf(shp[0], sizeof shp[0], "[%d, %d] %s", t->bm, d->d, dt);
    snprintf(shp[1], sizeof shp[1], "[%d, %d] %s", t->bm, d->dv, dt);
    snprintf(shp[2], sizeof shp[2], "[%d, %d] %s", t->bn, d->d, dt);
    snprintf(shp[3], sizeof shp[3], "[%d] fp32", t->bn);
    snprintf(shp[5], sizeof shp[5], "[%d] s32", t->bn);
    snprintf(shp[4], sizeof shp[4], "[%d, %d] %s", t->bm, MLA_P_COLS, dt);
    plan_region_formula(p, "Q", shp[0], "bm x d_qk x 2");
    plan_region_formula(p, "dO", shp[1], "bm x d_v x 2");
    for (int s = 0; s < (t->stages == 1 ? 1 : 2); s++) {
        static const char *const kv[2] = {"KV.0", "KV.1"}, *const bias[2] = {"bias.0", "bias.1"},
                          *const rows[2] = {"rows.0", "rows.1"};
        plan_region_formula(p, kv[s], shp[2], "bn x d_qk x 2 (per stage)");
        plan_region_formula(p, bias[s], shp[3], "bn x 4 (per stage)");
        plan_region_formula(p, rows[s], shp[5], "bn x 4 (per stage)");
    }
    plan_region_formula(p, "dS", shp[4], "bm x 64 x 2");
    plan_region_formula(p, "P", shp[4], "bm x 64 x 2");
    plan_region_formula(p, "dQ", shp[0], "bm x d_qk x 2");
}

void mla_bwd_main_plan(const AttnDesc *d, Plan *p) {
    const AttnTile *t = &d->tile;
    *p = (Plan){.threads = 32 * t->warps};
    int q = plan_add_region(p, "Q", t->bm * d->d * 2, 128, "loop: the head block's queries (A of S, B of dkv)");
    plan_add_region(p, "dO", t->bm * d->dv * 2, 128, "loop: the head block's output gradients (A of dP, B of dkv)");
    plan_add_region(p, "KV.0", t->bn * d->d * 2, 128, "loop: gathered rows of the step (K all 576 columns, V the first 512)");
    plan_add_region(p, "bias.0", t->bn * 4, 16, "loop: 0 or -inf per slot of the step");
    plan_add_region(p, "rows.0", t->bn * 4, 16, "loop: the kv row of each slot, where its dkv goes");
    if (t->stages != 1) {
        plan_add_region(p, "KV.1", t->bn * d->d * 2, 128, "loop: the next step's rows land here while .0 is used");
        plan_add_region(p, "bias.1", t->bn * 4, 16, "loop: next step's validity");
        plan_add_region(p, "rows.1", t->bn * 4, 16, "loop: next step's kv rows");
    }
    plan_add_region(p, "dS", t->bm * MLA_P_COLS * 2, 128, "loop: scale * dS of the step (A of dq, A^T of dkv)");
    plan_add_region(p, "P", t->bm * MLA_P_COLS * 2, 128, "loop: P of the step (A^T of dkv)");
    plan_union_region(p, "dQ", q, t->bm * d->d * 2, "epilogue: dq staging for 16-byte stores");
    budget_formulas(d, p);
    /* live per thread: the dq half (16 x 288 fp32), S and dP of the warp's
     * slots, one 64-column dkv chunk, addresses and the loop state */
    p->regs_est = (d->d / 2 / 8) * 4 + 2 * (t->bn / 2 / 8) * 4 + 32 + 48;
    char what[160];
    snprintf(what, sizeof what, "mla_bwd main d_qk=%d d_v=%d bm=%d bn=%d warps=%d%s%s", d->d, d->dv, t->bm, t->bn,
             t->warps, t->stages == 1 ? " stages=1 (rows gathered under the dkv products)" : "",
             t->deterministic ? " deterministic" : "");
    plan_finish(p, d->arch, what);
}

static void rows_plan(const AttnDesc *d, Plan *p, const char *what, int bound) {
    *p = (Plan){.threads = MLA_ROW_THREADS, .regs_est = 40};
    if (bound)   /* deterministic pre: the CTA's maxima of the bound's words, a warp's at a time */
        plan_add_region(p, "bound", MLA_ROW_THREADS / 32 * 4 * MLA_BOUND_WORDS, 16,
                        "each warp's maxima of dkv's bound words (mla_bwd_fixed.c)");
    char name[96];
    snprintf(name, sizeof name, "mla_bwd %s d_qk=%d d_v=%d", what, d->d, d->dv);
    plan_finish(p, d->arch, name);
}

int mla_bwd_set_plan(const AttnDesc *d, Plan *plans, const MlaBwdMain *mk) {
    int n = MLA_BWD_MAIN;
    int det = d->tile.deterministic;
    rows_plan(d, &plans[MLA_BWD_PRE], det ? "pre (delta and dkv's bound, 8 heads per CTA)" : "pre (delta, 8 heads per CTA)",
              det);
    for (const MlaBwdMain *m = mk; m; m = m->then) m->plan(d, &plans[n++]);
    rows_plan(d, &plans[n], "convert (16 kv rows per CTA)", 0);
    return n + 1;
}

void mla_bwd_entry(KernelSpec *ks, const AttnDesc *d, const char *part, int with_tile) {
    char tile[48] = "";
    if (with_tile) snprintf(tile, sizeof tile, "_bm%d_bn%d", d->tile.bm, d->tile.bn);
    snprintf(ks->entry, sizeof ks->entry, "mla_bwd_%s_%s_dqk%d_dv%d%s%s", part, dtype_name(d->dtype), d->d, d->dv, tile,
             d->tile.deterministic ? "_det" : "");
}

static void pre_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks) {
    const char *dt = dtype_name(d->dtype);
    int det = d->tile.deterministic;
    *ks = (KernelSpec){.block = {MLA_ROW_THREADS, 1, 1}, .dyn_smem = (unsigned)p->smem_bytes};
    mla_bwd_entry(ks, d, "pre", 0);
    abi_tensor(ks, "o", PR_IN, "forward output", "[s_q, h_q, d_v]", dt, "sh");
    abi_tensor(ks, "do", PR_IN, "gradient of the output", "[s_q, h_q, d_v]", dt, "sh");
    if (det) {   /* what bounds dkv (mla_bwd_fixed.c) */
        abi_tensor(ks, "q", PR_IN, "queries", "[s_q, h_q, d_qk]", dt, "sh");
        abi_tensor(ks, "kv", PR_IN, "latent keys/values: V = kv[:, :d_v]", "[s_kv, d_qk]", dt, "s");
        abi_tensor(ks, "lse", PR_IN, MLA_LSE_MEANING " (from the forward)", "[s_q, h_q]", "fp32", "");
    }
    abi_workspace(ks, "delta", "rowsum(dO * o), written here");
    if (det) abi_workspace(ks, "dkv_bound", "the maxima that bound dkv, raised here");
    abi_sizes(ks, det ? pre_det_sizes : pre_sizes, det ? 3 : 2);
    if (det) abi_scale(ks, MLA_SCALE_MEANING);
    snprintf(ks->grid[0], sizeof ks->grid[0], "s_q");
    snprintf(ks->grid[1], sizeof ks->grid[1], "cdiv(h_q, %d)", MLA_PRE_HEADS);
    snprintf(ks->grid[2], sizeof ks->grid[2], "1");
}

void mla_bwd_dkv_workspace(const AttnDesc *d, KernelSpec *ks) {
    if (d->tile.deterministic) {
        abi_workspace(ks, "dkv_fixed", "s64 dkv accumulator in fixed point, added into here (integer atomics)");
        abi_workspace(ks, "dkv_bound", "the maxima that fix the point, read here");
    } else abi_workspace(ks, "dkv_accum", "fp32 dkv accumulator, added into here (atomics)");
}

void mla_bwd_main_spec(const AttnDesc *d, const Plan *p, const MlaBwdMain *mk, KernelSpec *ks) {
    const char *dt = dtype_name(d->dtype);
    *ks = (KernelSpec){.block = {32u * (unsigned)d->tile.warps, 1, 1}, .dyn_smem = (unsigned)p->smem_bytes};
    mla_bwd_entry(ks, d, mk->part, 1);
    if (mk->pin_ctas) ks->min_ctas = (unsigned)p->ctas_per_sm;
    mla_abi_inputs(ks, d);
    abi_tensor(ks, "do", PR_IN, "gradient of the output", "[s_q, h_q, d_v]", dt, "sh");
    abi_tensor(ks, "lse", PR_IN, MLA_LSE_MEANING " (from the forward)", "[s_q, h_q]", "fp32", "");
    abi_workspace(ks, "delta", "rowsum(dO * o), read here");
    mla_bwd_dkv_workspace(d, ks);
    abi_tensor(ks, "dq", PR_OUT, "gradient of the queries", "[s_q, h_q, d_qk]", dt, "sh");
    abi_sizes(ks, mla_size_names, 4);
    abi_scale(ks, MLA_SCALE_MEANING);
    if (mk->abi) mk->abi(d, ks);
    snprintf(ks->grid[0], sizeof ks->grid[0], "s_q");
    snprintf(ks->grid[1], sizeof ks->grid[1], "cdiv(h_q, %d)", d->tile.bm);
    snprintf(ks->grid[2], sizeof ks->grid[2], "1");
}

#define DKV_MEANING "gradient of the latent kv: every (token, head, valid slot) that selected the row; rows nobody selected are 0"

static void convert_spec(const AttnDesc *d, KernelSpec *ks) {
    int det = d->tile.deterministic;
    *ks = (KernelSpec){.block = {MLA_ROW_THREADS, 1, 1}};
    mla_bwd_entry(ks, d, "convert", 0);
    if (det) {
        abi_workspace(ks, "dkv_fixed", "s64 dkv accumulator in fixed point, read here");
        abi_workspace(ks, "dkv_bound", "the maxima that fix the point, read here");
    } else abi_workspace(ks, "dkv_accum", "fp32 dkv accumulator, read here");
    abi_tensor(ks, "dkv", PR_OUT, DKV_MEANING, "[s_kv, d_qk]", dtype_name(d->dtype), "s");
    abi_sizes(ks, det ? convert_det_sizes : convert_sizes, det ? 3 : 1);
    snprintf(ks->grid[0], sizeof ks->grid[0], "cdiv(s_kv, %d)", MLA_CONVERT_ROWS);
    snprintf(ks->grid[1], sizeof ks->grid[1], "1");
    snprintf(ks->grid[2], sizeof ks->grid[2], "1");
}

static void workspaces(const AttnDesc *d, KernelSet *ks) {
    ks->ws[ks->nws++] = (WorkspaceSpec){"delta", "s_q * h_q * 4", 0, "fp32 [s_q, h_q]: rowsum(dO * o), written by pre"};
    WorkspaceSpec *w = &ks->ws[ks->nws++];
    if (d->tile.deterministic) {
        *w = (WorkspaceSpec){"dkv_fixed", "", 1, "s64 [s_kv, d_qk]: dkv times 2^S summed by integer atomics (the same "
                             "bits in any order; S from dkv_bound, mla_bwd_fixed.c); must start zeroed"};
        snprintf(w->bytes, sizeof w->bytes, "s_kv * %d", 8 * d->d);
        ks->ws[ks->nws++] = (WorkspaceSpec){"dkv_bound", MLA_STR(MLA_BOUND_WORDS) " * 4", 1, "u32 [4]: the bit patterns "
                                            "of the fp32 maxima that bound dkv, raised by pre; must start zeroed"};
    } else {
        *w = (WorkspaceSpec){"dkv_accum", "", 1, "fp32 [s_kv, d_qk]: dkv summed by atomics; must start zeroed"};
        snprintf(w->bytes, sizeof w->bytes, "s_kv * %d", 4 * d->d);
    }
}

void mla_bwd_set_build(const AttnDesc *d, KernelSet *ks, Buf *m, const MlaBwdMain *mk) {
    int n = MLA_BWD_MAIN;
    ks->deterministic = d->tile.deterministic;
    workspaces(d, ks);
    pre_spec(d, &ks->plan[MLA_BWD_PRE], &ks->k[MLA_BWD_PRE]);
    for (const MlaBwdMain *x = mk; x; x = x->then, n++) {
        (x->spec ? x->spec : mla_bwd_main_spec)(d, &ks->plan[n], x, &ks->k[n]);
        ks->k[n].pdl = arch_has_pdl(d->arch);   /* as in the attn_bwd set (bwd_set_build) */
        if (x->workspaces) x->workspaces(d, ks);
    }
    convert_spec(d, &ks->k[n]);
    ks->k[n].pdl = arch_has_pdl(d->arch);
    ks->nk = n + 1;
    mla_bwd_pre_emit(d, &ks->k[MLA_BWD_PRE], &ks->plan[MLA_BWD_PRE], m);
    n = MLA_BWD_MAIN;
    for (const MlaBwdMain *x = mk; x; x = x->then, n++) {
        buf_puts(m, "\n");
        x->emit(d, &ks->k[n], &ks->plan[n], m);
    }
    buf_puts(m, "\n");
    mla_bwd_convert_emit(d, &ks->k[n], m);
}

static const MlaBwdMain sync_main = {mla_bwd_main_plan, mla_bwd_main_emit, "main", 0, NULL, NULL, NULL, NULL},
                         sync_main1 = {mla_bwd_main_plan, mla_bwd_main_emit, "main_st1", 0, NULL, NULL, NULL, NULL};
static const MlaBwdMain *sync_of(const AttnDesc *d) { return d->tile.stages == 1 ? &sync_main1 : &sync_main; }
int mla_bwd_plan(const AttnDesc *d, Plan *plans) { return mla_bwd_set_plan(d, plans, sync_of(d)); }
void mla_bwd_build(const AttnDesc *d, KernelSet *ks, Buf *m) { mla_bwd_set_build(d, ks, m, sync_of(d)); }
