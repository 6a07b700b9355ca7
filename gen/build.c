/* The public API: request -> description -> plan -> kernel set. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ptxgen.h"
#include "attn.h"
#include "expr.h"
#include "manifest.h"
#include "kctx.h"

struct ptxgen_set {
    KernelSet ks;
    AttnDesc desc;
    char constants[320];
};

static const int attn_hdims[] = {64, 128, 256};

static int parse_desc(const ptxgen_request *rq, AttnDesc *d, char *err, size_t errlen) {
    if (!rq->arch || !(d->arch = arch_find(rq->arch))) {
        Buf names = {0};
        for (int i = 0; i < arch_count(); i++) buf_printf(&names, "%s%s", i ? ", " : "", arch_at(i)->name);
        snprintf(err, errlen, "unknown arch '%s' (known: %s)", rq->arch ? rq->arch : "(none)", names.s);
        buf_free(&names);
        return 2;
    }
    if (!rq->kernel || strcmp(rq->kernel, "attn_fwd")) {
        int planned = rq->kernel && (!strcmp(rq->kernel, "attn_bwd") || !strcmp(rq->kernel, "mla_fwd") ||
                                     !strcmp(rq->kernel, "mla_bwd"));
        snprintf(err, errlen, planned ? "kernel '%s' is not implemented yet (available: attn_fwd)"
                                      : "unknown kernel '%s' (available: attn_fwd)",
                 rq->kernel ? rq->kernel : "(none)");
        return 2;
    }
    if (!(d->arch->families & FAM_MMA_SYNC)) {
        snprintf(err, errlen, "%s has no mma.sync, which attn_fwd uses", d->arch->name);
        return 2;
    }
    if (!rq->dtype || !strcmp(rq->dtype, "bf16")) d->dtype = DT_BF16;
    else if (!strcmp(rq->dtype, "fp16")) d->dtype = DT_FP16;
    else {
        snprintf(err, errlen, "unknown dtype '%s' (bf16 or fp16)", rq->dtype);
        return 2;
    }
    d->d = d->dv = rq->hdim ? rq->hdim : 128;
    int ok = 0;
    for (size_t i = 0; i < sizeof attn_hdims / sizeof attn_hdims[0]; i++) ok |= d->d == attn_hdims[i];
    if (!ok) {
        snprintf(err, errlen, "head dim %d is not supported by the mma.sync attn_fwd (64, 128 or 256: its swizzled "
                 "shared tiles need d to be a multiple of 64 and whole 16-byte rows per thread group)", d->d);
        return 2;
    }
    d->causal = rq->causal != 0;
    d->tile = attn_fwd_default_tile(d->arch, d->d);
    if (tile_parse(attn_fwd_keys, attn_fwd_nkeys, rq->tile, &d->tile, err, errlen)) return 2;
    return attn_fwd_check_tile(d, err, errlen) ? 2 : 0;
}

static void describe(ptxgen_set *s) {
    const AttnDesc *d = &s->desc;
    Buf tile = {0};
    tile_describe(attn_fwd_keys, attn_fwd_nkeys, &d->tile, &tile);
    snprintf(s->ks.summary, sizeof s->ks.summary, "attn_fwd %s d=%d%s on %s, mma.sync, tile %s", dtype_name(d->dtype),
             d->d, d->causal ? " causal" : "", d->arch->name, tile.s);
    snprintf(s->constants, sizeof s->constants,
             "{\"dtype\": \"%s\", \"d\": %d, \"dv\": %d, \"causal\": %s, \"family\": \"mma.sync\", "
             "\"tile\": {\"bm\": %d, \"bn\": %d, \"warps\": %d}}",
             dtype_name(d->dtype), d->d, d->dv, d->causal ? "true" : "false", d->tile.bm, d->tile.bn, d->tile.warps);
    buf_free(&tile);
}

char *ptxgen_plan_request(const ptxgen_request *rq, int *fits, char *err, size_t errlen) {
    AttnDesc d = {0};
    *fits = 0;
    if (parse_desc(rq, &d, err, errlen)) return NULL;
    Plan p;
    attn_fwd_plan(&d, &p);
    Buf out = {0};
    Buf tile = {0};
    tile_describe(attn_fwd_keys, attn_fwd_nkeys, &d.tile, &tile);
    buf_printf(&out, "attn_fwd %s d=%d%s on %s (mma.sync), tile %s\n", dtype_name(d.dtype), d.d,
               d.causal ? " causal" : "", d.arch->name, tile.s);
    buf_free(&tile);
    plan_print(&p, d.arch, &out);
    *fits = p.ok;
    if (!p.ok) snprintf(err, errlen, "%s", p.verdict);
    return buf_take(&out);
}

int ptxgen_build(const ptxgen_request *rq, ptxgen_set **out, char *err, size_t errlen) {
    *out = NULL;
    ptxgen_set *s = calloc(1, sizeof *s);
    if (!s) { snprintf(err, errlen, "out of memory"); return 2; }
    if (parse_desc(rq, &s->desc, err, errlen)) { free(s); return 2; }
    attn_fwd_plan(&s->desc, &s->ks.plan);
    if (!s->ks.plan.ok) {
        snprintf(err, errlen, "%s", s->ks.plan.verdict);
        free(s);
        return 2;
    }
    snprintf(s->ks.kernel, sizeof s->ks.kernel, "attn_fwd");
    s->ks.arch = s->desc.arch;
    describe(s);
    s->ks.nk = 1;
    attn_fwd_spec(&s->desc, &s->ks.plan, &s->ks.k[0]);
    Buf m = {0};
    module_header(&m, s->desc.arch);
    attn_fwd_emit(&s->desc, &s->ks.k[0], &s->ks.plan, &m);
    s->ks.ptx = buf_take(&m);
    *out = s;
    return 0;
}

void ptxgen_free(ptxgen_set *s) {
    if (!s) return;
    kernel_set_free(&s->ks);
    free(s);
}

const char *ptxgen_ptx(const ptxgen_set *s) { return s->ks.ptx; }

char *ptxgen_plan_text(const ptxgen_set *s) {
    Buf out = {0};
    buf_printf(&out, "%s\n", s->ks.summary);
    plan_print(&s->ks.plan, s->ks.arch, &out);
    return buf_take(&out);
}

char *ptxgen_manifest_json(const ptxgen_set *s) {
    Buf out = {0};
    manifest_write(&s->ks, s->constants, &out);
    return buf_take(&out);
}

int ptxgen_num_kernels(const ptxgen_set *s) { return s->ks.nk; }
const char *ptxgen_entry(const ptxgen_set *s, int k) { return k >= 0 && k < s->ks.nk ? s->ks.k[k].entry : NULL; }
int ptxgen_num_params(const ptxgen_set *s, int k) { return k >= 0 && k < s->ks.nk ? s->ks.k[k].nparams : 0; }

int ptxgen_param_info(const ptxgen_set *s, int k, int i, ptxgen_param *o) {
    if (k < 0 || k >= s->ks.nk || i < 0 || i >= s->ks.k[k].nparams) return 2;
    const ParamSpec *p = &s->ks.k[k].params[i];
    *o = (ptxgen_param){p->name, (ptxgen_param_type)p->type, (ptxgen_param_role)p->role, p->meaning, p->shape, p->dtype,
                        p->of, p->dim};
    return 0;
}

int ptxgen_num_workspaces(const ptxgen_set *s) { return s->ks.nws; }

int ptxgen_workspace_info(const ptxgen_set *s, int i, ptxgen_workspace *out) {
    if (i < 0 || i >= s->ks.nws) return 2;
    const WorkspaceSpec *w = &s->ks.ws[i];
    *out = (ptxgen_workspace){w->name, w->bytes, w->zero, w->meaning};
    return 0;
}

static int size_vars(const ptxgen_size *sizes, int nsizes, ExprVar *vars) {
    int n = nsizes < 16 ? nsizes : 16;
    for (int i = 0; i < n; i++) vars[i] = (ExprVar){sizes[i].name, sizes[i].value};
    return n;
}

int ptxgen_workspace_bytes(const ptxgen_set *s, int i, const ptxgen_size *sizes, int nsizes, unsigned long long *bytes,
                           char *err, size_t errlen) {
    if (i < 0 || i >= s->ks.nws) { snprintf(err, errlen, "no workspace %d", i); return 2; }
    ExprVar vars[16];
    long long v;
    if (expr_eval(s->ks.ws[i].bytes, vars, size_vars(sizes, nsizes, vars), &v, err, errlen)) return 2;
    if (v < 1) { snprintf(err, errlen, "workspace %s = %s = %lld bytes", s->ks.ws[i].name, s->ks.ws[i].bytes, v); return 2; }
    *bytes = (unsigned long long)v;
    return 0;
}

int ptxgen_launch_dims(const ptxgen_set *s, int k, const ptxgen_size *sizes, int nsizes, unsigned grid[3],
                       unsigned block[3], unsigned *dyn_smem, char *err, size_t errlen) {
    if (k < 0 || k >= s->ks.nk) { snprintf(err, errlen, "no kernel %d", k); return 2; }
    const KernelSpec *ks = &s->ks.k[k];
    ExprVar vars[16];
    int n = size_vars(sizes, nsizes, vars);
    for (int i = 0; i < 3; i++) {
        long long v;
        if (expr_eval(ks->grid[i], vars, n, &v, err, errlen)) return 2;
        if (v < 1 || v > (i ? 65535 : 2147483647LL)) {
            snprintf(err, errlen, "grid dimension %d = %s = %lld is outside the launch limits", i, ks->grid[i], v);
            return 2;
        }
        grid[i] = (unsigned)v;
        block[i] = ks->block[i];
    }
    *dyn_smem = ks->dyn_smem;
    return 0;
}
