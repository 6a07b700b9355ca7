#include "plan.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void room_for_region(const Plan *p) {
    if (p->nregions >= MAX_REGIONS) {
        fprintf(stderr, "ptxgen internal: more than %d shared-memory regions\n", MAX_REGIONS);
        abort();
    }
}

int plan_add_region(Plan *p, const char *name, int bytes, int align, const char *note) {
    room_for_region(p);
    int off = (p->smem_bytes + align - 1) / align * align;
    p->region[p->nregions++] = (SmemRegion){name, off, bytes, note, -1, "", ""};
    p->smem_bytes = off + bytes;
    return off;
}

void plan_union_region(Plan *p, const char *name, int over, int bytes, const char *note) {
    room_for_region(p);
    SmemRegion base = p->region[over];
    p->region[p->nregions++] = (SmemRegion){name, base.offset, bytes, note, over, "", ""};
    if (base.offset + bytes > p->smem_bytes) p->smem_bytes = base.offset + bytes;
}

void plan_region_formula(Plan *p, const char *name, const char *shape, const char *formula) {
    for (int i = 0; i < p->nregions; i++)
        if (!strcmp(p->region[i].name, name)) {
            snprintf(p->region[i].shape, sizeof p->region[i].shape, "%s", shape);
            snprintf(p->region[i].formula, sizeof p->region[i].formula, "%s", formula);
            return;
        }
    fprintf(stderr, "ptxgen internal: plan has no region %s\n", name);
    abort();
}

int plan_region(const Plan *p, const char *name) {
    for (int i = 0; i < p->nregions; i++)
        if (!strcmp(p->region[i].name, name)) return p->region[i].offset;
    fprintf(stderr, "ptxgen internal: plan has no region %s\n", name);
    abort();
}

int plan_stage_stride(const Plan *p) {
    int stride = -1;
    for (int i = 0; i < p->nregions; i++) {
        const char *n = p->region[i].name;
        size_t len = strlen(n);
        if (len < 3 || strcmp(n + len - 2, ".1")) continue;
        char first[32];
        snprintf(first, sizeof first, "%.*s.0", (int)(len - 2), n);
        int s = p->region[i].offset - plan_region(p, first);
        if (stride >= 0 && s != stride) {
            fprintf(stderr, "ptxgen internal: region %s is %d B past its stage 0, others %d B\n", n, s, stride);
            abort();
        }
        stride = s;
    }
    if (stride <= 0) {
        fprintf(stderr, "ptxgen internal: plan has no two-stage regions\n");
        abort();
    }
    return stride;
}

static int min_i(int a, int b) { return a < b ? a : b; }

static void occupancy(Plan *p, const ArchInfo *a) {
    /* registers are handed out per warp in units of 256 */
    int regs_warp = (p->regs_est * 32 + 255) / 256 * 256;
    int warps = (p->threads + 31) / 32, roles = plan_roles_setmaxnreg(p);
    /* with setmaxnreg in every role the CTA holds what the roles ask, whatever one thread's estimate */
    int by_regs = a->regs_sm / (roles ? roles : regs_warp * warps);
    int by_smem = a->smem_sm / (p->smem_bytes + a->smem_reserved);
    int by_threads = a->threads_sm / p->threads;
    int n = min_i(min_i(by_regs, by_smem), min_i(by_threads, a->ctas_sm));
    p->ctas_per_sm = n;
    p->occ_limiter = n == by_regs ? "registers" : n == by_smem ? "shared memory" : n == by_threads ? "threads" : "blocks";
}

void plan_finish(Plan *p, const ArchInfo *a, const char *what) {
    p->ok = 0;
    snprintf(p->what, sizeof p->what, "%s", what);
    if (p->threads < 1 || p->regs_est < 1) {
        fprintf(stderr, "ptxgen internal: plan for %s has no threads or registers\n", what);
        abort();
    }
    if (p->smem_bytes > a->smem_block_optin) {
        snprintf(p->verdict, sizeof p->verdict,
                 "%s needs %d B (%.1f KB) of shared memory per block; %s allows %d B (%.1f KB) with opt-in",
                 what, p->smem_bytes, p->smem_bytes / 1024.0, a->name, a->smem_block_optin, a->smem_block_optin / 1024.0);
        return;
    }
    if (p->regs_est > a->regs_thread) {
        snprintf(p->verdict, sizeof p->verdict,
                 "%s keeps about %d registers per thread live (accumulators + fragments); %s allows %d, so it would spill",
                 what, p->regs_est, a->name, a->regs_thread);
        return;
    }
    if (plan_tmem_check(p, a, p->verdict, sizeof p->verdict) || plan_roles_check(p, a, p->verdict, sizeof p->verdict))
        return;
    occupancy(p, a);
    if (p->ctas_per_sm < 1) {
        snprintf(p->verdict, sizeof p->verdict, "%s does not fit one block per SM on %s (limited by %s)",
                 what, a->name, p->occ_limiter);
        return;
    }
    p->ok = 1;
    snprintf(p->verdict, sizeof p->verdict, "fits: %d B shared memory of %d, ~%d registers of %d, %d CTA(s)/SM (limited by %s)",
             p->smem_bytes, a->smem_block_optin, p->regs_est, a->regs_thread, p->ctas_per_sm, p->occ_limiter);
    if (p->ntmem) {
        size_t n = strlen(p->verdict);
        snprintf(p->verdict + n, sizeof p->verdict - n, ", %d TMEM columns of %d", p->tmem_cols, a->tmem_cols);
    }
}

/* The unions: which regions share bytes with an earlier phase's. */
static void print_unions(const Plan *p, Buf *out) {
    int any = 0;
    for (int i = 0; i < p->nregions; i++) {
        const SmemRegion *r = &p->region[i];
        if (r->over < 0) continue;
        const SmemRegion *b = &p->region[r->over];
        buf_printf(out, "%s  %s reuses %s's bytes [%d, %d) in a later phase: %d B saved\n",
                   any ? "" : "phase unions:\n", r->name, b->name, r->offset, r->offset + r->bytes, r->bytes);
        any = 1;
    }
}

/* Where regions carry formulas: seed 000's budget table, each buffer's shape and formula, then the total against
 * the opt-in limit and the headroom left. */
static void print_budget(const Plan *p, const ArchInfo *a, Buf *out) {
    int any = 0;
    for (int i = 0; i < p->nregions; i++) any |= p->region[i].formula[0] != 0;
    if (!any) return;
    buf_printf(out, "budget (buffer, shape, formula, bytes):\n");
    for (int i = 0; i < p->nregions; i++) {
        const SmemRegion *r = &p->region[i];
        char reuse[48];
        snprintf(reuse, sizeof reuse, "reuses %s's bytes", r->over >= 0 ? p->region[r->over].name : "");
        buf_printf(out, "  %-10s %-18s %-34s %8d%s\n", r->name, r->shape, r->over >= 0 ? reuse : r->formula, r->bytes,
                   r->over >= 0 ? " (not counted)" : "");
    }
    buf_printf(out, "  %-10s %-18s %-34s %8d\n", "total", "", "the regions, aligned", p->smem_bytes);
    buf_printf(out, "  %-10s %-18s %-34s %8d\n", "limit", "", "the opt-in maximum per block", a->smem_block_optin);
    buf_printf(out, "  %-10s %-18s %-34s %8d%s\n", "headroom", "", "limit - total", a->smem_block_optin - p->smem_bytes,
                   p->smem_bytes > a->smem_block_optin ? " (over: refused)" : "");
}

void plan_print(const Plan *p, const ArchInfo *a, Buf *out) {
    buf_printf(out, "kernel %s\n", p->what);
    buf_printf(out, "shared memory (dynamic, per CTA) on %s:\n", a->name);
    buf_printf(out, "  %-10s %8s %8s %8s %7s  %s\n", "region", "offset", "end", "bytes", "KB", "note");
    for (int i = 0; i < p->nregions; i++) {
        const SmemRegion *r = &p->region[i];
        buf_printf(out, "  %-10s %8d %8d %8d %7.1f  %s%s%s%s\n", r->name, r->offset, r->offset + r->bytes, r->bytes,
                   r->bytes / 1024.0, r->note ? r->note : "", r->over >= 0 ? " [union over " : "",
                   r->over >= 0 ? p->region[r->over].name : "", r->over >= 0 ? "]" : "");
    }
    print_unions(p, out);
    int budget = a->smem_block_optin;
    buf_printf(out, "  %-10s %8s %8s %8d %7.1f  %.1f%% of the %d B (%.1f KB) a block may opt into on %s, %d B free "
               "(+%d B reserved per block)\n", "total", "", "", p->smem_bytes, p->smem_bytes / 1024.0,
               100.0 * p->smem_bytes / budget, budget, budget / 1024.0, a->name, budget - p->smem_bytes, a->smem_reserved);
    print_budget(p, a, out);
    plan_tmem_print(p, a, out);
    buf_printf(out, "threads per CTA:        %d\n", p->threads);
    buf_printf(out, "registers (estimate):   %d per thread of %d\n", p->regs_est, a->regs_thread);
    plan_roles_print(p, a, out);
    if (p->ok) buf_printf(out, "CTAs per SM:            %d (limited by %s)\n", p->ctas_per_sm, p->occ_limiter);
    buf_printf(out, "verdict:                %s%s\n", p->ok ? "" : "REFUSED: ", p->verdict);
    if (*p->aside) buf_printf(out, "beside it:              %s\n", p->aside);
}
