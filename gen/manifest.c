#include "manifest.h"

static const char *const role_names[] = {"input", "output", "size", "stride", "scale", "workspace", "tensor_map"};

static void json_str(Buf *b, const char *s) {
    buf_puts(b, "\"");
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\') buf_printf(b, "\\%c", *s);
        else if ((unsigned char)*s < 0x20) buf_printf(b, "\\u%04x", *s);
        else buf_printf(b, "%c", *s);
    }
    buf_puts(b, "\"");
}

static void field(Buf *b, const char *key, const char *val) {
    if (!val) return;
    buf_puts(b, ", ");
    json_str(b, key);
    buf_puts(b, ": ");
    json_str(b, val);
}

static void write_param(Buf *b, const ParamSpec *p, int last) {
    buf_puts(b, "        {\"name\": ");
    json_str(b, p->name);
    field(b, "ptx_type", param_type_ptx(p->type));
    field(b, "role", role_names[p->role]);
    field(b, "meaning", p->meaning);
    field(b, "shape", p->shape);
    field(b, "dtype", p->dtype);
    field(b, p->role == PR_STRIDE || p->role == PR_TMAP ? "tensor" : p->role == PR_WORKSPACE ? "workspace" : "size", p->of);
    if (p->type == PT_TMAP) buf_puts(b, ", \"bytes\": 128, \"align\": 64");
    field(b, "dim", p->dim);
    buf_printf(b, "}%s\n", last ? "" : ",");
}

static void str_array(Buf *b, const char *const *items, int n) {
    buf_puts(b, "[");
    for (int i = 0; i < n; i++) {
        if (i) buf_puts(b, ", ");
        json_str(b, items[i]);
    }
    buf_puts(b, "]");
}

static void int_array(Buf *b, const int *items, int n) {
    buf_puts(b, "[");
    for (int i = 0; i < n; i++) buf_printf(b, "%s%d", i ? ", " : "", items[i]);
    buf_puts(b, "]");
}

/* One TMA tensor map: what the host passes to cuTensorMapEncodeTiled. */
static void write_tmap(Buf *b, const TensorMapSpec *t) {
    buf_puts(b, "        {\"param\": ");
    json_str(b, t->param);
    field(b, "tensor", t->tensor);
    field(b, "dtype", t->dtype);
    buf_printf(b, ", \"rank\": %d, \"dims\": ", t->rank);
    str_array(b, t->dims, t->rank);
    buf_puts(b, ", \"strides_bytes\": ");
    str_array(b, t->strides, t->rank - 1);
    buf_puts(b, ", \"box\": ");
    int_array(b, t->box, t->rank);
    buf_puts(b, ", \"element_strides\": ");
    int_array(b, t->elem_strides, t->rank);
    field(b, "swizzle", t->swizzle);
    field(b, "interleave", t->interleave);
    field(b, "oob_fill", t->oob_fill);
    buf_puts(b, "}");
}

static void write_tmaps(Buf *b, const KernelSpec *k) {
    buf_puts(b, "      \"tensor_maps\": [");
    for (int i = 0; i < k->ntmaps; i++) {
        buf_puts(b, i ? ",\n" : "\n");
        write_tmap(b, &k->tmaps[i]);
    }
    buf_puts(b, k->ntmaps ? "\n      ],\n" : "],\n");
}

static void write_kernel(Buf *b, const KernelSpec *k, int last) {
    buf_puts(b, "    {\n      \"entry\": ");
    json_str(b, k->entry);
    buf_puts(b, ",\n      \"params\": [\n");
    for (int i = 0; i < k->nparams; i++) write_param(b, &k->params[i], i + 1 == k->nparams);
    buf_printf(b, "      ],\n      \"block\": [%u, %u, %u],\n      \"grid\": ", k->block[0], k->block[1], k->block[2]);
    const char *grid[3] = {k->grid[0], k->grid[1], k->grid[2]};
    const char *cluster[3] = {spec_cluster(k, 0), spec_cluster(k, 1), spec_cluster(k, 2)};
    str_array(b, grid, 3);
    buf_puts(b, ",\n      \"cluster\": ");
    str_array(b, cluster, 3);
    buf_puts(b, ",\n");
    write_tmaps(b, k);
    if (k->pdl) buf_puts(b, "      \"programmatic_dependent\": true,\n");   /* absent: false */
    buf_printf(b, "      \"dynamic_smem_bytes\": %u\n    }%s\n", k->dyn_smem, last ? "" : ",");
}

/* The size names the expressions use, derived from the kernels' specs. */
static void write_sizes(Buf *b, const KernelSet *s) {
    SizeList sizes;
    set_problem_sizes(s, &sizes);
    const char *names[MAX_SIZES];
    for (int i = 0; i < sizes.n; i++) names[i] = sizes.name[i];
    buf_puts(b, "  \"problem_sizes\": ");
    str_array(b, names, sizes.n);
    buf_puts(b, ",\n");
}

void manifest_write(const KernelSet *s, const char *constants_json, Buf *b) {
    buf_puts(b, "{\n  \"generator\": \"ptxgen\",\n  \"kernel\": ");
    json_str(b, s->kernel);
    buf_puts(b, ",\n  \"arch\": ");
    json_str(b, s->arch->name);
    buf_puts(b, ",\n  \"family\": ");
    json_str(b, family_name(s->family));
    buf_puts(b, ",\n  \"summary\": ");
    json_str(b, s->summary);
    buf_printf(b, ",\n  \"constants\": %s,\n", constants_json);
    write_sizes(b, s);
    buf_puts(b, "  \"expression_ops\": [\"+\", \"-\", \"*\", \"/\", \"cdiv\", \"min\", \"max\"],\n");
    buf_puts(b, "  \"launch_order\": \"kernels are launched in the order listed, on one stream\",\n  \"kernels\": [\n");
    for (int i = 0; i < s->nk; i++) write_kernel(b, &s->k[i], i + 1 == s->nk);
    buf_puts(b, "  ],\n  \"workspaces\": [");
    for (int i = 0; i < s->nws; i++) {
        buf_puts(b, i ? ",\n    {\"name\": " : "\n    {\"name\": ");
        json_str(b, s->ws[i].name);
        field(b, "bytes", s->ws[i].bytes);
        buf_printf(b, ", \"zero_init\": %s", s->ws[i].zero ? "true" : "false");
        if (s->ws[i].zero == WS_ZERO_KEPT) buf_puts(b, ", \"kept_zero\": true");
        field(b, "meaning", s->ws[i].meaning);
        buf_puts(b, "}");
    }
    buf_puts(b, s->nws ? "\n  ]\n}\n" : "]\n}\n");
}
