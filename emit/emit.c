#include "emit.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { const char *text, *sig; } OpInfo;
static const OpInfo op_info[OP_COUNT] = {
#define OP(name, text, sig) [OP_##name] = {text, sig},
#include "ops.def"
#undef OP
};

static const char *const rc_prefix[RC_COUNT] = {"%p", "%r", "%rd", "%f", "%rs"};
static const char *const rc_type[RC_COUNT] = {".pred", ".b32", ".b64", ".f32", ".b16"};

const char *op_text(Op op) { return op_info[op].text; }
const char *op_sig(Op op) { return op_info[op].sig; }

Reg e_reg(Emit *e, RegClass c) { return (Reg){(uint8_t)c, e->nregs[c]++}; }
int e_label(Emit *e) { return e->nlabels++; }
void e_place(Emit *e, int label) { buf_printf(&e->body, "$L%d:\n", label); }

void e_comment(Emit *e, const char *fmt, ...) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    buf_printf(&e->body, "\t// %s\n", line);
}

Opnd R(Reg r) { return (Opnd){.kind = K_REG, .r = r}; }
Opnd I(int64_t v) { return (Opnd){.kind = K_IMM, .imm = v}; }
Opnd IX(uint32_t v) { return (Opnd){.kind = K_IMMX, .imm = v}; }
Opnd FI(float f) { return (Opnd){.kind = K_FIMM, .f = f}; }
Opnd A(Reg base, int64_t off) { return (Opnd){.kind = K_ADDR, .r = base, .imm = off}; }
Opnd AS(const char *sym) { return (Opnd){.kind = K_ADDR, .name = sym}; }
Opnd L(int label) { return (Opnd){.kind = K_LABEL, .imm = label}; }
Opnd SR(const char *sreg) { return (Opnd){.kind = K_SREG, .name = sreg}; }
Opnd SYM(const char *sym) { return (Opnd){.kind = K_SYM, .name = sym}; }

Opnd V(int n, const Reg *regs) {
    Opnd o = {.kind = K_VEC, .n = (uint16_t)n, .v = regs};
    if (n < 1 || n > VEC_MAX) { fprintf(stderr, "ptxgen internal: vector of %d registers\n", n); abort(); }
    return o;
}

Opnd TA(Reg map, int n, const Reg *coords) {
    Opnd o = {.kind = K_TADDR, .r = map, .n = (uint16_t)n, .v = coords};
    if (n < 1 || n > 5) { fprintf(stderr, "ptxgen internal: tensor address of %d coordinates\n", n); abort(); }
    return o;
}

static int is_reg(const Opnd *o, RegClass c) { return o->kind == K_REG && o->r.cls == c; }
static int is_int(const Opnd *o) { return o->kind == K_IMM || o->kind == K_IMMX; }

/* Does operand o satisfy signature letter s? A mismatch is a generator bug. */
static int sig_ok(char s, const Opnd *o) {
    switch (s) {
    case 'R': return is_reg(o, RC_B32);
    case 'H': case 'h': return is_reg(o, RC_B16);
    case 'F': return is_reg(o, RC_F32);
    case 'D': return is_reg(o, RC_B64);
    case 'P': case 'p': return is_reg(o, RC_PRED);
    case 'r': return is_reg(o, RC_B32) || is_int(o) || o->kind == K_SREG;
    case 'f': return is_reg(o, RC_F32) || o->kind == K_FIMM;
    case 'd': return is_reg(o, RC_B64) || is_int(o) || o->kind == K_SYM;
    case 'x': return is_reg(o, RC_B32) || is_reg(o, RC_F32) || is_int(o) || o->kind == K_SREG;
    case 'a': return o->kind == K_ADDR;
    case 'v': return o->kind == K_VEC;
    case 't': return o->kind == K_TADDR && o->r.cls == RC_B64;
    case 'l': return o->kind == K_LABEL;
    case 'i': return is_int(o);
    }
    return 0;
}

static void put_reg(Buf *b, Reg r) { buf_printf(b, "%s%u", rc_prefix[r.cls], r.id); }

static void put_opnd(Buf *b, const Opnd *o) {
    switch (o->kind) {
    case K_REG: put_reg(b, o->r); break;
    case K_IMM: buf_printf(b, "%lld", (long long)o->imm); break;
    case K_IMMX: buf_printf(b, "0x%llx", (unsigned long long)o->imm); break;
    case K_FIMM: {
        uint32_t bits;
        memcpy(&bits, &o->f, 4);
        buf_printf(b, "0f%08X", bits);
        break;
    }
    case K_ADDR:
        buf_puts(b, "[");
        if (o->name) buf_puts(b, o->name);
        else put_reg(b, o->r);
        if (o->imm) buf_printf(b, "%+lld", (long long)o->imm);
        buf_puts(b, "]");
        break;
    case K_VEC:
        buf_puts(b, "{");
        for (int i = 0; i < o->n; i++) {
            if (i) buf_puts(b, ", ");
            put_reg(b, o->v[i]);
        }
        buf_puts(b, "}");
        break;
    case K_TADDR:
        buf_puts(b, "[");
        put_reg(b, o->r);
        buf_puts(b, ", {");
        for (int i = 0; i < o->n; i++) {
            if (i) buf_puts(b, ", ");
            put_reg(b, o->v[i]);
        }
        buf_puts(b, "}]");
        break;
    case K_LABEL: buf_printf(b, "$L%lld", (long long)o->imm); break;
    case K_SREG: case K_SYM: buf_puts(b, o->name); break;
    }
}

void e_insn(Emit *e, Reg guard, int neg, Op op, int n, const Opnd *ops) {
    const OpInfo *info = &op_info[op];
    int want = (int)strlen(info->sig);
    if (n != want) {
        fprintf(stderr, "ptxgen internal: %s takes %d operands, got %d\n", info->text, want, n);
        abort();
    }
    for (int i = 0; i < n; i++)
        if (!sig_ok(info->sig[i], &ops[i])) {
            fprintf(stderr, "ptxgen internal: %s operand %d does not fit '%c'\n", info->text, i, info->sig[i]);
            abort();
        }
    Buf *b = &e->body;
    buf_puts(b, "\t");
    if (guard.cls != 0xff) {
        buf_puts(b, neg ? "@!" : "@");
        put_reg(b, guard);
        buf_puts(b, " ");
    }
    buf_puts(b, info->text);
    for (int i = 0; i < n; i++) {
        buf_puts(b, i ? ", " : " ");
        put_opnd(b, &ops[i]);
    }
    buf_puts(b, ";\n");
    e->ninstr++;
}

void e_decls(const Emit *e, Buf *out) {
    for (int c = 0; c < RC_COUNT; c++)
        if (e->nregs[c]) buf_printf(out, "\t.reg %s %s<%u>;\n", rc_type[c], rc_prefix[c], e->nregs[c]);
}

struct RegBlock { RegBlock *next; int cap, used; Reg r[]; };

Reg *e_regs(Emit *e, int n) {
    RegBlock *b = e->blocks;
    if (n > EMIT_FALLBACK_REGS) {   /* no template asks for this many: a generator bug */
        fprintf(stderr, "ptxgen internal: a register array of %d\n", n);
        abort();
    }
    if (!b || b->cap - b->used < n) {
        int cap = n > 1024 ? n : 1024;
        b = malloc(sizeof *b + sizeof(Reg) * (size_t)cap);
        if (!b) { e->oom = 1; return e->fallback; }
        *b = (RegBlock){e->blocks, cap, 0};
        e->blocks = b;
    }
    b->used += n;
    return b->r + b->used - n;
}

void e_free(Emit *e) {
    buf_free(&e->body);
    while (e->blocks) {
        RegBlock *next = e->blocks->next;
        free(e->blocks);
        e->blocks = next;
    }
}
