/* The plan's TMEM column map: regions placed side by side or aliased over an
 * earlier one's columns, checked against the arch's TMEM and printed. */
#include "plan.h"
#include <stdio.h>
#include <stdlib.h>

static void room_for_tmem(const Plan *p) {
    if (p->ntmem >= MAX_TMEM_REGIONS) {
        fprintf(stderr, "ptxgen internal: more than %d TMEM regions\n", MAX_TMEM_REGIONS);
        abort();
    }
}

int plan_add_tmem(Plan *p, const char *name, int cols, const char *dtype, const char *shape, const char *phase) {
    room_for_tmem(p);
    int col = p->tmem_cols;
    p->tmem[p->ntmem++] = (TmemRegion){name, col, cols, dtype, shape, 0, phase};
    p->tmem_cols = col + cols;
    return col;
}

static int next_alias_group(const Plan *p) {
    int g = 0;
    for (int i = 0; i < p->ntmem; i++)
        if (p->tmem[i].alias > g) g = p->tmem[i].alias;
    return g + 1;
}

void plan_alias_tmem(Plan *p, const char *name, int over, int cols, const char *dtype, const char *shape,
                     const char *phase) {
    room_for_tmem(p);
    TmemRegion *base = &p->tmem[over];
    if (!base->alias) base->alias = next_alias_group(p);
    p->tmem[p->ntmem++] = (TmemRegion){name, base->col, cols, dtype, shape, base->alias, phase};
    if (base->col + cols > p->tmem_cols) p->tmem_cols = base->col + cols;
}

int plan_tmem_alloc(const Plan *p) {
    if (!p->tmem_cols) return 0;
    int n = 32;
    while (n < p->tmem_cols) n *= 2;
    return n;
}

int plan_tmem_check(const Plan *p, const ArchInfo *a, char *verdict, size_t len) {
    for (int i = 0; i < p->ntmem; i++) {
        const TmemRegion *r = &p->tmem[i];
        if (r->col + r->cols <= a->tmem_cols) continue;
        if (!a->tmem_cols) {
            Buf archs = {0};
            arch_names_with(FAM_TCGEN05, &archs);
            snprintf(verdict, len, "%s needs %d TMEM columns (region %s at columns %d-%d first); %s has no TMEM, "
                     "which needs %s", p->what, p->tmem_cols, r->name, r->col, r->col + r->cols - 1, a->name,
                     archs.s ? archs.s : "none");
            buf_free(&archs);
        } else {
            snprintf(verdict, len, "%s needs %d TMEM columns: region %s at columns %d-%d ends past the %d columns "
                     "%s has per CTA", p->what, p->tmem_cols, r->name, r->col, r->col + r->cols - 1, a->tmem_cols,
                     a->name);
        }
        return 1;
    }
    return 0;
}

static void print_aliases(const Plan *p, Buf *out) {
    int any = 0;
    for (int i = 0; i < p->ntmem; i++)
        for (int j = 0; j < i; j++) {
            const TmemRegion *r = &p->tmem[i], *b = &p->tmem[j];
            if (!r->alias || r->alias != b->alias || r->col != b->col) continue;
            buf_printf(out, "%s  %s shares columns [%d, %d) with %s in another phase: %d columns saved\n",
                       any ? "" : "column aliases:\n", r->name, r->col, r->col + r->cols, b->name, r->cols);
            any = 1;
            break;
        }
}

void plan_tmem_print(const Plan *p, const ArchInfo *a, Buf *out) {
    if (!p->ntmem) return;
    buf_printf(out, "tensor memory (TMEM: 128 lanes x 32-bit columns) on %s:\n", a->name);
    buf_printf(out, "  %-10s %6s %6s %6s  %-6s %-12s %s\n", "region", "start", "end", "cols", "dtype", "shape", "phase");
    for (int i = 0; i < p->ntmem; i++) {
        const TmemRegion *r = &p->tmem[i];
        Buf alias = {0};
        if (r->alias) buf_printf(&alias, "%s[alias group %d]", r->phase ? " " : "", r->alias);
        buf_printf(out, "  %-10s %6d %6d %6d  %-6s %-12s %s%s\n", r->name, r->col, r->col + r->cols, r->cols,
                   r->dtype ? r->dtype : "", r->shape ? r->shape : "", r->phase ? r->phase : "", alias.s ? alias.s : "");
        buf_free(&alias);
    }
    print_aliases(p, out);
    if (a->tmem_cols)
        buf_printf(out, "  %-10s %6s %6s %6d  %.1f%% of the %d columns a CTA may allocate on %s; tcgen05.alloc of %d\n",
                   "total", "", "", p->tmem_cols, 100.0 * p->tmem_cols / a->tmem_cols, a->tmem_cols, a->name,
                   plan_tmem_alloc(p));
    else
        buf_printf(out, "  %-10s %6s %6s %6d  %s has no TMEM\n", "total", "", "", p->tmem_cols, a->name);
}
