/* attn_bwd (mma.sync family): tile keys and defaults, the plans of the
 * kernel set, the main kernel's launch ABI, the workspaces, and the set put
 * together from the kernels' files (attn_bwd_rows.c, attn_bwd.c,
 * attn_bwd_dq.c), which never call back here. The wgmma family's set is the
 * same around its own main kernel (bwd_set_plan, bwd_set_build). */
#include "attn_bwd.h"
#include <stddef.h>
#include <stdio.h>

const TileKey attn_bwd_keys[] = {
    {"bm", offsetof(AttnTile, bm), {64, 128}, 2, "query rows per inner step"},
    {"bn", offsetof(AttnTile, bn), {64, 128}, 2, "key rows per CTA (16 or 32 per warp)"},
    {"warps", offsetof(AttnTile, warps), {4, 8}, 2, "warps per CTA"},
    {"deterministic", offsetof(AttnTile, deterministic), {0, 1}, 2,
     "1: dQ from its own kernel, no atomics; bit-identical across runs"},
};
const int attn_bwd_nkeys = (int)(sizeof attn_bwd_keys / sizeof attn_bwd_keys[0]);

AttnTile attn_bwd_default_tile(const ArchInfo *a, int d, int dv) {
    (void)dv;
    (void)a, (void)d;
    return (AttnTile){.bm = 64, .bn = 64, .warps = 4, .deterministic = 1};
}

int attn_bwd_check_tile(const AttnDesc *d, char *err, size_t errlen) {
    const AttnTile *t = &d->tile;
    int kw = t->bn / t->warps, rgs = t->bm / 16;
    if (kw != 16 && kw != 32) {
        snprintf(err, errlen, "tile bn=%d with warps=%d gives %d key rows per warp; the mma.sync attn_bwd needs 16 or 32",
                 t->bn, t->warps, kw);
        return 1;
    }
    if (32 * t->warps < t->bm) {
        snprintf(err, errlen, "tile bm=%d needs at least %d threads to stage the block's statistics; warps=%d gives %d",
                 t->bm, t->bm, t->warps, 32 * t->warps);
        return 1;
    }
    if (!t->deterministic && (t->warps % rgs || (d->d / (t->warps / rgs)) % 64)) {
        snprintf(err, errlen, "tile bm=%d, warps=%d cannot split the %dx%d dQ tile into 16-row slices of whole "
                 "64-column groups, one per warp (use bm=%d)", t->bm, t->warps, t->bm, d->d, 16 * t->warps);
        return 1;
    }
    return attn_check_copy(d, err, errlen);
}

void bwd_main_plan(const AttnDesc *d, Plan *p) {
    const AttnTile *t = &d->tile;
    int mk = t->bn / t->warps / 16;
    *p = (Plan){.threads = 32 * t->warps};
    plan_add_region(p, "K", t->bn * d->d * 2, 128, "key tile, swizzled; dK staging after the loop");
    plan_add_region(p, "V", t->bn * d->dv * 2, 128, "value tile; dV staging after the loop");
    for (int s = 0; s < 2; s++) {
        static const char *const q[2] = {"Q.0", "Q.1"}, *const dout[2] = {"dO.0", "dO.1"}, *const st[2] = {"stats.0", "stats.1"};
        plan_add_region(p, q[s], t->bm * d->d * 2, 128, s ? "the next query block lands here while .0 is used, then they swap"
                                                          : "query block of the step (stage 0)");
        plan_add_region(p, dout[s], t->bm * d->dv * 2, 128, "output-gradient block, staged like Q");
        plan_add_region(p, st[s], 2 * t->bm * 4, 128, "lse, then delta, of the block's rows; staged like Q");
    }
    if (!t->deterministic) plan_add_region(p, "dS", t->bn * t->bm * 2, 128, "dS^T of the step, read transposed for dQ");
    /* live per thread: dK and dV accumulators all along; at the peak either
     * S^T and dP^T (their step) or the dQ slice (after them) */
    int acc = mk * (d->d / 8) * 4 + mk * (d->dv / 8) * 4, sdp = 2 * mk * (t->bm / 8) * 4;
    int dq = t->deterministic ? 0 : t->bm * d->d / (32 * t->warps) + 8;
    /* addresses, loop state and the stage flip: 40; the causal mask's bounds and predicates: 8 more */
    p->regs_est = acc + (sdp > dq ? sdp : dq) + 40 + (d->causal ? 8 : 0);
    char what[96];
    snprintf(what, sizeof what, "attn_bwd main d=%d bm=%d bn=%d warps=%d%s", d->d, t->bm, t->bn, t->warps,
             t->deterministic ? " deterministic" : "");
    plan_finish(p, d->arch, what);
}

int bwd_dsplit_check(const AttnDesc *d, int ds, int max_ds, char *err, size_t errlen) {
    if (!(d->d % ds) && !((d->d / ds) % 64)) return 0;
    char ok[32] = "";
    for (int i = 1, n = 0; i <= max_ds; i++)
        if (!(d->d % i) && !((d->d / i) % 64))
            n += snprintf(ok + n, sizeof ok - (size_t)n, "%s%d", n ? ", " : "", i);
    snprintf(err, errlen, "tile dsplit=%d cuts d=%d into parts that are not whole 64-column slabs of K, Q and dO "
             "(the MN-major operands of dK, dV and dQ); use dsplit=%s", ds, d->d, ok);
    return 1;
}

void bwd_dsplit_note(char *buf, size_t n, int ds, int dh) {
    buf[0] = 0;
    if (ds > 1)   /* the price: every part computes S^T and dP^T, 2 of the 5 products a step has */
        snprintf(buf, n, " dsplit=%d (%d columns each; S^T, dP^T in every part: %.2fx the MMAs)", ds, dh,
                 (2.0 * ds + 3.0) / 5.0);
}

AttnDesc bwd_dq_desc(const AttnDesc *d) {
    AttnDesc q = *d;
    q.tile = attn_bwd_default_tile(d->arch, d->d, d->dv);
    q.tile.deterministic = 1;
    return q;
}

int bwd_set_plan(const AttnDesc *d, const AttnDesc *dq, const BwdMain *main, Plan *plans) {
    bwd_rows_plan(d, &plans[BWD_PRE], "pre (delta)");
    main->plan(d, &plans[BWD_MAIN]);
    if (bwd_dq_kernel(d, &main->feed)) bwd_dq_plan(dq, &plans[BWD_DQ]);
    else bwd_rows_plan(d, &plans[BWD_DQ], "dq_convert");
    return BWD_KERNELS;
}

static const BwdMain sync_main = {bwd_main_plan, bwd_main_spec, bwd_main_emit, {0, 0, 0}};

int attn_bwd_plan(const AttnDesc *d, Plan *plans) { return bwd_set_plan(d, d, &sync_main, plans); }

void bwd_main_spec(const AttnDesc *d, const Plan *p, KernelSpec *ks) {
    /* ptxas left to itself packs d = 64 into the same registers with a spill */
    *ks = (KernelSpec){.block = {32u * (unsigned)d->tile.warps, 1, 1}, .dyn_smem = (unsigned)p->smem_bytes,
                       .min_ctas = (unsigned)p->ctas_per_sm};
    bwd_entry(ks, d, "main", 1);
    bwd_inputs(ks, d);
    if (!d->tile.deterministic) abi_workspace(ks, "dq_accum", "fp32 dQ accumulator, added into here (atomics)");
    if (d->block_m) abi_sparse_queries(ks);
    bwd_key_grads(ks, d);
    abi_scale(ks, ATTN_SCALE_MEANING);
    snprintf(ks->grid[0], sizeof ks->grid[0], "cdiv(s_k, %d)", d->tile.bn);
    snprintf(ks->grid[1], sizeof ks->grid[1], "h_kv");
    snprintf(ks->grid[2], sizeof ks->grid[2], "b");
}

static void workspaces(const AttnDesc *d, const BwdFeed *fd, KernelSet *ks) {
    int stats_block = fd->stats_block;
    if (bwd_delta_ws(d, fd) && d->varlen)   /* packed: by head, then the sequences' rows */
        ks->ws[ks->nws++] = (WorkspaceSpec){"delta", "h_q * total_q * 4", 0, "fp32 [h_q, total_q]: rowsum(dO * O), written by the pre kernel"};
    else if (bwd_delta_ws(d, fd))
        ks->ws[ks->nws++] = (WorkspaceSpec){"delta", "b * h_q * s_q * 4", 0, "fp32 [b, h_q, s_q]: rowsum(dO * O), written by the pre kernel"};
    if (stats_block) {
        WorkspaceSpec *w = &ks->ws[ks->nws++];
        *w = (WorkspaceSpec){"stats", "", 0, "fp32 [b, h_q, cdiv(s_q, block), 2, block]: per block of query rows its lse, "
                             "then its delta, 0 past s_q; written by the pre kernel, read by the main kernel's TMA copies"};
        snprintf(w->bytes, sizeof w->bytes, BWD_STATS_BYTES, stats_block, 8 * stats_block);
    }
    if (bwd_dq_kernel(d, fd)) return;
    WorkspaceSpec *w = &ks->ws[ks->nws++];
    *w = (WorkspaceSpec){"dq_accum", "", 0, bwd_dq_sems(d, fd)
                         ? "fp32 [b, h_q, s_q, d]: dQ / scale, zeroed by the pre kernel, summed by reduce-adds in key-block order"
                         : "fp32 [b, h_q, s_q, d]: dQ / scale, zeroed by the pre kernel, summed by atomics"};
    if (d->varlen) w->meaning = bwd_dq_sems(d, fd) ? "fp32 [h_q, total_q, d]: dQ / scale, zeroed by the pre kernel, summed "
                                                     "by reduce-adds in key-block order"
                                                   : "fp32 [h_q, total_q, d]: dQ / scale, zeroed by the pre kernel, summed "
                                                     "by atomics";
    snprintf(w->bytes, sizeof w->bytes, d->varlen ? "h_q * total_q * %d" : "b * h_q * s_q * %d", 4 * d->d);
    if (!bwd_dq_sems(d, fd)) return;
    w = &ks->ws[ks->nws++];
    *w = (WorkspaceSpec){"dq_sem", "", 0, "u32 [b, h_q, cdiv(s_q, block)]: per block of query rows the number of key "
                         "blocks whose dQ adds are done; zeroed by the pre kernel, waited on and raised by the main kernel"};
    if (bwd_sem_parts(fd) > 1) snprintf(w->bytes, sizeof w->bytes, BWD_SEM_PARTS_BYTES, stats_block, 4 * bwd_sem_parts(fd));
    else snprintf(w->bytes, sizeof w->bytes, BWD_SEM_BYTES, stats_block);
}

void bwd_set_build(const AttnDesc *d, const AttnDesc *dq, const BwdMain *main, KernelSet *ks, Buf *m) {
    ks->nk = BWD_KERNELS;
    ks->deterministic = d->tile.deterministic;
    workspaces(d, &main->feed, ks);
    bwd_pre_spec(d, &main->feed, &ks->k[BWD_PRE]);
    main->spec(d, &ks->plan[BWD_MAIN], &ks->k[BWD_MAIN]);
    if (bwd_dq_kernel(d, &main->feed)) bwd_dq_spec(dq, &ks->plan[BWD_DQ], &ks->k[BWD_DQ]);
    else bwd_convert_spec(d, &ks->k[BWD_DQ]);
    /* sm_90+: main and the dQ kernel after it are programmatic dependents of the kernel before each, so that each
     * launches as the CTAs before it exit and waits for their memory as it starts (FA4's SM90 set does the same).
     * No kernel triggers its dependent early: on the H200 a trigger as pre and main start cost 2-6 % at small
     * shapes, where without it the wgmma set ran 1-6 % faster (BENCHMARKS.md) */
    ks->k[BWD_MAIN].pdl = ks->k[BWD_DQ].pdl = arch_has_pdl(d->arch);
    bwd_pre_emit(d, &main->feed, &ks->k[BWD_PRE], m);
    buf_puts(m, "\n");
    main->emit(d, &ks->k[BWD_MAIN], &ks->plan[BWD_MAIN], m);
    buf_puts(m, "\n");
    if (bwd_dq_kernel(d, &main->feed)) bwd_dq_emit(dq, &ks->k[BWD_DQ], &ks->plan[BWD_DQ], m);
    else bwd_convert_emit(d, &ks->k[BWD_DQ], m);
}

void attn_bwd_build(const AttnDesc *d, KernelSet *ks, Buf *m) { bwd_set_build(d, d, &sync_main, ks, m); }

/* the main kernel walks query lists; the deterministic dQ kernel key lists at its own tile */
void attn_bwd_sparse(const AttnDesc *d, SparseLists *l) {
    l->queries = (SparseTiles){d->tile.bm, d->tile.bn};
    if (d->tile.deterministic) l->keys = (SparseTiles){BWD_DQ_BM, BWD_DQ_BN};
}
