#include "manifest.h"

static const char *const role_names[] = {"input", "output", "size", "stride", "scale", "workspace"};

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
    field(b, p->role == PR_STRIDE ? "tensor" : p->role == PR_WORKSPACE ? "workspace" : "size", p->of);
    field(b, "dim", p->dim);
    buf_printf(b, "}%s\n", last ? "" : ",");
}

static void write_kernel(Buf *b, const KernelSpec *k, int last) {
    buf_puts(b, "    {\n      \"entry\": ");
    json_str(b, k->entry);
    buf_puts(b, ",\n      \"params\": [\n");
    for (int i = 0; i < k->nparams; i++) write_param(b, &k->params[i], i + 1 == k->nparams);
    buf_printf(b, "      ],\n      \"block\": [%u, %u, %u],\n      \"grid\": [", k->block[0], k->block[1], k->block[2]);
    for (int i = 0; i < 3; i++) {
        json_str(b, k->grid[i]);
        buf_puts(b, i < 2 ? ", " : "],\n");
    }
    buf_printf(b, "      \"cluster\": [\"1\", \"1\", \"1\"],\n      \"dynamic_smem_bytes\": %u\n    }%s\n", k->dyn_smem,
               last ? "" : ",");
}

void manifest_write(const KernelSet *s, const char *constants_json, Buf *b) {
    buf_puts(b, "{\n  \"generator\": \"ptxgen\",\n  \"kernel\": ");
    json_str(b, s->kernel);
    buf_puts(b, ",\n  \"arch\": ");
    json_str(b, s->arch->name);
    buf_puts(b, ",\n  \"summary\": ");
    json_str(b, s->summary);
    buf_printf(b, ",\n  \"constants\": %s,\n", constants_json);
    buf_puts(b, "  \"problem_sizes\": [\"b\", \"s_q\", \"s_k\", \"h_q\", \"h_kv\"],\n");
    buf_puts(b, "  \"expression_ops\": [\"+\", \"-\", \"*\", \"/\", \"cdiv\", \"min\", \"max\"],\n");
    buf_puts(b, "  \"launch_order\": \"kernels are launched in the order listed, on one stream\",\n  \"kernels\": [\n");
    for (int i = 0; i < s->nk; i++) write_kernel(b, &s->k[i], i + 1 == s->nk);
    buf_puts(b, "  ],\n  \"workspaces\": [");
    for (int i = 0; i < s->nws; i++) {
        buf_puts(b, i ? ",\n    {\"name\": " : "\n    {\"name\": ");
        json_str(b, s->ws[i].name);
        field(b, "bytes", s->ws[i].bytes);
        buf_printf(b, ", \"zero_init\": %s", s->ws[i].zero ? "true" : "false");
        field(b, "meaning", s->ws[i].meaning);
        buf_puts(b, "}");
    }
    buf_puts(b, s->nws ? "\n  ]\n}\n" : "]\n}\n");
}
