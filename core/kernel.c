#include "kernel.h"
#include "expr.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *param_type_ptx(ParamType t) {
    static const char *const names[] = {".u64", ".u32", ".u64", ".f32", ".align 64 .b8"};
    return names[t];
}

const ParamSpec *spec_param(const KernelSpec *k, const char *name) {
    for (int i = 0; i < k->nparams; i++)
        if (!strcmp(k->params[i].name, name)) return &k->params[i];
    return NULL;
}

void kernel_set_free(KernelSet *s) {
    free(s->ptx);
    s->ptx = NULL;
}

const char *spec_cluster(const KernelSpec *k, int i) { return k->cluster[i][0] ? k->cluster[i] : "1"; }

/* Each name once; one past MAX_SIZES or longer than a slot is a generator bug. */
static void add_size(const char *name, size_t len, void *ctx) {
    SizeList *l = ctx;
    for (int i = 0; i < l->n; i++)
        if (strlen(l->name[i]) == len && !strncmp(l->name[i], name, len)) return;
    if (l->n >= MAX_SIZES || len >= sizeof l->name[0]) {
        fprintf(stderr, "ptxgen internal: problem size '%.*s' does not fit the size list\n", (int)len, name);
        abort();
    }
    snprintf(l->name[l->n++], sizeof l->name[0], "%.*s", (int)len, name);
}

/* A tensor map's expressions may also name the kernel's stride parameters
 * (a row stride the host passes anyway): those are not problem sizes. */
typedef struct { const KernelSpec *k; SizeList *out; } TmapNames;

static void add_tmap_name(const char *name, size_t len, void *ctx) {
    TmapNames *t = ctx;
    for (int i = 0; i < t->k->nparams; i++) {
        const ParamSpec *p = &t->k->params[i];
        if (p->role == PR_STRIDE && strlen(p->name) == len && !strncmp(p->name, name, len)) return;
    }
    add_size(name, len, t->out);
}

static void kernel_sizes(const KernelSpec *k, SizeList *out) {
    TmapNames tn = {k, out};
    for (int i = 0; i < k->nparams; i++)
        if (k->params[i].role == PR_SIZE) add_size(k->params[i].of, strlen(k->params[i].of), out);
    for (int i = 0; i < 3; i++) expr_names(k->grid[i], add_size, out);
    for (int i = 0; i < 3; i++) expr_names(spec_cluster(k, i), add_size, out);
    for (int t = 0; t < k->ntmaps; t++)
        for (int i = 0; i < k->tmaps[t].rank; i++) {
            expr_names(k->tmaps[t].dims[i], add_tmap_name, &tn);
            if (i + 1 < k->tmaps[t].rank) expr_names(k->tmaps[t].strides[i], add_tmap_name, &tn);
        }
}

void set_problem_sizes(const KernelSet *s, SizeList *out) {
    out->n = 0;
    for (int k = 0; k < s->nk; k++) kernel_sizes(&s->k[k], out);
    for (int w = 0; w < s->nws; w++) expr_names(s->ws[w].bytes, add_size, out);
}
