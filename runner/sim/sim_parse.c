/* PTX text -> SimModule. The sim reads a module exactly as shipped, ours or
 * one ptxgen did not write (NVIDIA's compiler output, inline-asm blocks with
 * scoped registers and labels, aggregate .b8 parameters, mangled names,
 * device functions, each call parsed again where it stands: inline_call).
 * Each mnemonic is decoded by emit/isa.c, the table the emitter uses too, so
 * an instruction or modifier outside that vocabulary, or one the instruction
 * does not take, is refused with its line rather than guessed at; so are
 * operands of another count or kind than the instruction's form
 * (sim_form.c), whether the instruction would run or not. The units check
 * the values. */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "dtype.h"
#include "sim.h"

enum { T_EOF, T_ID, T_NUM, T_STR, T_PUNCT };
enum { SIM_INLINE_MAX = 16 };   /* calls inside calls being inlined */
enum { TOK_MAX = 4096 };
typedef struct {
    const char *p;
    int line;
    int kind, tline;
    char tok[TOK_MAX];
} Lex;

typedef struct { char *name; int base, count, bits; } RegFamily;   /* count 0: a single register */
/* A device function (.func) with a body: its return and parameter names in order, and the lexer at its body's '{',
 * from which each call parses the body again where the call stands (inline_call) */
typedef struct { char *name; char **ret, **param; int nret, nparam; Lex body; } FuncDef;
/* While a call's body is parsed: the callee's parameter (or return) name, and the caller's variable it names */
typedef struct { char *name; int local; } Alias;
/* A body's .local or .param variable as the parser sees it: the block depth it was declared at (-1 once that block
 * closed) and whether it is a call's .param (whose address no instruction may take) */
typedef struct { int depth, is_param; } LocalScope;
typedef struct { char *name; int pc, depth; } Label;
typedef struct { int insn, opnd, tline, depth; char *name; } Fixup;

typedef struct {
    Lex lx;
    SimModule *m;
    char *err;
    size_t errlen;
    jmp_buf oom;        /* memory ran out: back to sim_parse, which reports it */
    RegFamily *fam;
    int nfam;
    Label *labels;
    int nlabels;
    Fixup *fix;
    int nfix;
    int depth;          /* nesting of { } blocks inside a body */
    FuncDef *defs;      /* the module's device functions with bodies (scan_funcs) */
    int ndefs;
    Alias *alias;
    int nalias;
    LocalScope *lscope; /* per variable of the current function's locals */
    const char *inl[SIM_INLINE_MAX];   /* the calls being inlined, outermost first */
    char retlab[SIM_INLINE_MAX][24];   /* each one's return label (a name no PTX label can have) */
    int ninl, ncalls;
    struct { int famcap, veccap, velemcap, fixcap, codecap, labcap, pcap, fcap, scap, gcap, lcap, gicap, defcap,
             aliascap, lscap; } caps;   /* of the arrays above */
} Parser;

static int perr(Parser *P, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int perr(Parser *P, int line, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *text = line >= 1 && line <= P->m->nlines ? P->m->lines[line - 1] : "";
    while (*text == ' ' || *text == '\t') text++;
    snprintf(P->err, P->errlen, "sim: PTX line %d: %s (\"%.160s\")", line, msg, text);
    return -1;
}

static void *grow(Parser *P, void *p, int n, int *cap, size_t sz)
{
    if (n < *cap) return p;
    int want = *cap ? *cap * 2 : 64;
    void *q = realloc(p, (size_t)want * sz);
    if (!q) longjmp(P->oom, 1);   /* p stays owned by its module field, which sim_module_free frees */
    *cap = want;
    return q;
}

static char *dup(Parser *P, const char *s)
{
    char *d = strdup(s);
    if (!d) longjmp(P->oom, 1);
    return d;
}

/* ---- lexer ---- */
static int id_start(int c) { return isalpha(c) || c == '_' || c == '$' || c == '%' || c == '.'; }
static int id_char(int c) { return isalnum(c) || c == '_' || c == '$' || c == '.'; }

static void skip_space(Lex *L)
{
    for (;;) {
        while (isspace((unsigned char)*L->p)) L->line += *L->p++ == '\n';
        if (L->p[0] == '/' && L->p[1] == '/') { while (*L->p && *L->p != '\n') L->p++; continue; }
        if (L->p[0] == '/' && L->p[1] == '*') {
            for (L->p += 2; *L->p && !(L->p[0] == '*' && L->p[1] == '/'); L->p++) L->line += *L->p == '\n';
            if (*L->p) L->p += 2;
            continue;
        }
        return;
    }
}

static void next(Lex *L)
{
    skip_space(L);
    L->tline = L->line;
    size_t n = 0;
    int c = (unsigned char)*L->p;
    if (!c) { L->kind = T_EOF; L->tok[0] = 0; return; }
    if (c == '"') {
        L->kind = T_STR;
        for (L->p++; *L->p && *L->p != '"' && *L->p != '\n'; L->p++)
            if (n + 1 < sizeof L->tok) L->tok[n++] = *L->p;
        if (*L->p == '"') L->p++;
    } else if (id_start(c) || isdigit(c)) {
        L->kind = isdigit(c) ? T_NUM : T_ID;
        /* "::" joins the parts of one modifier (shared::cta, mbarrier::arrive::one) */
        for (;;) {
            int ok = id_char((unsigned char)*L->p) || (n == 0 && *L->p == '%');
            int dc = L->p[0] == ':' && L->p[1] == ':' && L->kind == T_ID;
            /* a decimal float's signed exponent (2.5e-3); not in hex forms (0x.., 0f.., 0d..) */
            int sign = L->kind == T_NUM && (*L->p == '-' || *L->p == '+') && n > 0 && (L->tok[n - 1] | 32) == 'e' &&
                       !(n > 1 && isalpha((unsigned char)L->tok[1]));
            if (!ok && !dc && !sign) break;
            int take = dc ? 2 : 1;
            if (n + (size_t)take < sizeof L->tok) memcpy(L->tok + n, L->p, (size_t)take), n += (size_t)take;
            L->p += take;
        }
    } else {
        L->kind = T_PUNCT;
        L->tok[n++] = *L->p++;
    }
    L->tok[n] = 0;
}

static int is(const Lex *L, const char *t) { return !strcmp(L->tok, t); }
static int expect(Parser *P, const char *t)
{
    if (!is(&P->lx, t)) return perr(P, P->lx.tline, "expected '%s', found '%.60s'", t, P->lx.tok);
    next(&P->lx);
    return 0;
}

/* Integers (decimal, 0x hex, optional U suffix) and float bits (0fXXXXXXXX, 0dXXXXXXXXXXXXXXXX). */
static int parse_int(const char *t, int64_t *v)
{
    char *end;
    size_t n = strlen(t);
    if (t[0] == '0' && (t[1] == 'f' || t[1] == 'F') && n == 10) {
        *v = (int64_t)strtoull(t + 2, &end, 16);
        return *end ? -1 : 0;
    }
    if (t[0] == '0' && (t[1] == 'd' || t[1] == 'D') && n == 18) {
        *v = (int64_t)strtoull(t + 2, &end, 16);
        return *end ? -1 : 0;
    }
    if (t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) *v = (int64_t)strtoull(t + 2, &end, 16);
    else *v = (int64_t)strtoull(t, &end, 10);
    if (*end == 'U') end++;
    return *end ? -1 : 0;
}

static int parse_shared(Parser *P, int is_extern);
static int parse_local(Parser *P, const char *space);

/* A decimal floating-point literal (1.0, 2.5e-3): PTX reads it as a double, whose bits *v gets (an operand's
 * conversion to its type: sim_types.c; an initializer's: init_value). 0 and *v set, or -1 if t is not one. */
static int parse_decimal_float(const char *t, int neg, int64_t *v)
{
    if (!strpbrk(t, ".eE") || (t[0] == '0' && (t[1] == 'x' || t[1] == 'X'))) return -1;
    char *end;
    double x = strtod(t, &end);
    if (*end) return -1;
    if (neg) x = -x;
    memcpy(v, &x, 8);
    return 0;
}

/* How a number token is written (SimLit): 0f and 0d forms have a fixed length, a decimal float a '.' or exponent. */
static int lit_kind(const char *t)
{
    size_t n = strlen(t);
    if (t[0] == '0' && (t[1] == 'f' || t[1] == 'F') && n == 10) return LIT_F32;
    if (t[0] == '0' && (t[1] == 'd' || t[1] == 'D') && n == 18) return LIT_F64;
    if (t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) return LIT_INT;
    return strpbrk(t, ".eE") ? LIT_DEC : LIT_INT;
}

/* ---- registers, symbols, special registers ---- */
static const char *kSregs[SR_COUNT] = {
    "%tid.x", "%tid.y", "%tid.z", "%ntid.x", "%ntid.y", "%ntid.z", "%ctaid.x", "%ctaid.y", "%ctaid.z",
    "%nctaid.x", "%nctaid.y", "%nctaid.z", "%laneid", "%warpid", "%nwarpid",
    "%cluster_ctarank", "%cluster_nctarank", "%cluster_ctaid.x", "%cluster_ctaid.y", "%cluster_ctaid.z",
    "%cluster_nctaid.x", "%cluster_nctaid.y", "%cluster_nctaid.z", "%clusterid.x", "%clusterid.y", "%clusterid.z",
    "%nclusterid.x", "%nclusterid.y", "%nclusterid.z", "%is_explicit_cluster",
    "%lanemask_eq", "%lanemask_lt", "%lanemask_le", "%lanemask_gt", "%lanemask_ge",
    "%dynamic_smem_size", "%total_smem_size", "%clock", "%clock64", "%globaltimer", "%nsmid"};

/* The innermost declaration wins: inline-asm blocks (and inlined calls) redeclare names. A family %r<N> names %r0 ..
 * %r(N-1) only: an inner %r<2> leaves an outer %r5 visible. */
static int find_reg(const Parser *P, const char *name)
{
    size_t len = strlen(name), k = len;
    while (k && isdigit((unsigned char)name[k - 1])) k--;
    for (int i = P->nfam - 1; i >= 0; i--) {
        const RegFamily *r = &P->fam[i];
        if (!r->count && !strcmp(r->name, name)) return r->base;
        if (r->count && k < len && strlen(r->name) == k && !strncmp(r->name, name, k)) {
            long idx = atol(name + k);
            if (idx < r->count) return r->base + (int)idx * (r->bits == 128 ? 2 : 1);   /* .b128: two slots */
        }
    }
    return -1;
}

/* The types a register may be declared with (PTX has no .bf16 or .bf16x2 registers: ptxas refuses them; such
 * values live in .b16 and .b32 ones), and the element types of .shared/.local/.global arrays. */
static const struct { const char *text; uint8_t type; } kRegTypes[] = {
    {".pred", T_PRED}, {".b16", T_B16}, {".u16", T_U16}, {".s16", T_S16}, {".f16", T_F16}, {".b32", T_B32},
    {".u32", T_U32}, {".s32", T_S32}, {".f32", T_F32}, {".f16x2", T_F16X2}, {".b64", T_B64}, {".u64", T_U64},
    {".s64", T_S64}, {".f64", T_F64}, {".b128", T_B128}};

static int reg_type(const char *type)
{
    for (size_t i = 0; i < sizeof kRegTypes / sizeof *kRegTypes; i++)
        if (!strcmp(type, kRegTypes[i].text)) return kRegTypes[i].type;
    return T_NONE;
}

static int elem_bytes(const char *type)
{
    int b = isa_type_bits(reg_type(type));
    if (b >= 16) return b / 8;
    if (!strcmp(type, ".b8") || !strcmp(type, ".u8") || !strcmp(type, ".s8")) return 1;
    if (!strcmp(type, ".bf16")) return 2;
    if (!strcmp(type, ".bf16x2")) return 4;
    return 0;
}

static SimFunc *cur_fn(Parser *P) { return &P->m->funcs[P->m->nfuncs - 1]; }

/* The innermost visible .local or .param variable of the body named name (a callee's parameter: the caller's
 * variable it stands for), or -1 */
static int find_local(const Parser *P, const char *name)
{
    for (int i = P->nalias - 1; i >= 0; i--)
        if (!strcmp(P->alias[i].name, name)) return P->alias[i].local;
    const SimFunc *f = &P->m->funcs[P->m->nfuncs - 1];
    for (int i = f->nlocals - 1; i >= 0; i--)
        if (P->lscope[i].depth >= 0 && !strcmp(f->locals[i].name, name)) return i;
    return -1;
}

/* A symbol operand: a parameter of the current entry, one of its local variables, or a shared variable. */
static int find_sym(Parser *P, const char *name, SimOpnd *o)
{
    SimFunc *f = cur_fn(P);
    int v = find_local(P, name);
    if (v >= 0) {
        o->space = SPACE_LOCAL, o->imm = f->locals[v].offset, o->param_var = (uint8_t)P->lscope[v].is_param;
        return 0;
    }
    for (int i = 0; i < f->nparams; i++)
        if (!strcmp(f->params[i].name, name)) { o->space = SPACE_PARAM; o->imm = f->params[i].offset; return 0; }
    for (int i = 0; i < P->m->nshared; i++)
        if (!strcmp(P->m->shared[i].name, name)) {   /* the dynamic window's offset is added by place_extern */
            o->space = SPACE_SHARED, o->dyn = (uint8_t)P->m->shared[i].is_extern;
            o->imm = o->dyn ? 0 : P->m->shared[i].offset;
            return 0;
        }
    for (int i = 0; i < P->m->ngvars; i++)   /* its address in the module's block, placed at launch */
        if (!strcmp(P->m->gvars[i].name, name)) { o->space = SPACE_GLOBAL; o->imm = P->m->gvars[i].offset; return 0; }
    return -1;
}

static int decl_regs(Parser *P)
{
    char type[32];
    snprintf(type, sizeof type, "%.31s", P->lx.tok);
    int rtype = reg_type(type), bits = isa_type_bits(rtype), line = P->lx.tline;
    if (!strcmp(type, ".bf16") || !strcmp(type, ".bf16x2"))
        return perr(P, line, "no register is declared %s (ptxas refuses it): bf16 values live in %s registers", type,
                    type[5] ? ".b32" : ".b16");
    if (!bits) return perr(P, line, "register type %s is not supported", type);
    SimFunc *f = cur_fn(P);
    for (next(&P->lx);; next(&P->lx)) {
        if (P->lx.kind != T_ID || P->lx.tok[0] == '.') return perr(P, line, "expected a register name");
        P->fam = grow(P, P->fam, P->nfam, &P->caps.famcap, sizeof *P->fam);
        RegFamily *r = &P->fam[P->nfam++];
        r->name = dup(P, P->lx.tok);
        r->base = f->nslots, r->bits = bits, r->count = 0;
        next(&P->lx);
        if (is(&P->lx, "<")) {
            next(&P->lx);
            int64_t n;
            if (P->lx.kind != T_NUM || parse_int(P->lx.tok, &n) || n < 1 || n > 1 << 20)
                return perr(P, line, "bad register count");
            r->count = (int)n;
            next(&P->lx);
            if (expect(P, ">")) return -1;
        }
        int add = (r->count ? r->count : 1) * (bits == 128 ? 2 : 1);   /* a .b128 register is two 64-bit slots */
        f->slot_bits = realloc(f->slot_bits, (size_t)(f->nslots + add));
        f->slot_type = realloc(f->slot_type, (size_t)(f->nslots + add));
        f->slot_name = realloc(f->slot_name, (size_t)(f->nslots + add) * sizeof *f->slot_name);
        if (!f->slot_bits || !f->slot_type || !f->slot_name) longjmp(P->oom, 1);
        for (int i = 0; i < add; i++)
            f->slot_bits[f->nslots + i] = (uint8_t)bits, f->slot_type[f->nslots + i] = (uint8_t)rtype,
            f->slot_name[f->nslots + i] = NULL;
        f->slot_name[f->nslots] = dup(P, r->name);
        f->nslots += add;
        if (!is(&P->lx, ",")) break;
    }
    return expect(P, ";");
}

/* ---- operands ---- */
static int parse_reg_or_sreg(Parser *P, SimOpnd *o)
{
    for (int i = 0; i < SR_COUNT; i++)
        if (is(&P->lx, kSregs[i])) { o->kind = SO_SREG, o->imm = i; next(&P->lx); return 0; }
    int s = find_reg(P, P->lx.tok);
    if (s < 0) return perr(P, P->lx.tline, "register %.60s is not declared", P->lx.tok);
    o->kind = SO_REG, o->reg = s, o->reg2 = -1;
    next(&P->lx);
    return 0;
}

/* A constant, optionally negated: an integer, or a float as written (0f, 0d, decimal: a negated one has its sign
 * flipped), which sim_types.c converts to its operand's type. */
static int parse_const(Parser *P, SimOpnd *o)
{
    int neg = is(&P->lx, "-");
    if (neg) next(&P->lx);
    if (P->lx.kind != T_NUM) return perr(P, P->lx.tline, "unexpected '%.60s' in operands", P->lx.tok);
    o->kind = SO_IMM, o->reg2 = -1, o->lit = (uint8_t)lit_kind(P->lx.tok);
    if (o->lit == LIT_DEC ? parse_decimal_float(P->lx.tok, neg, &o->imm) : parse_int(P->lx.tok, &o->imm))
        return perr(P, P->lx.tline, "bad number %.60s", P->lx.tok);
    if (neg && o->lit != LIT_DEC)
        o->imm = o->lit == LIT_F32 ? o->imm ^ 0x80000000ll
               : o->lit == LIT_F64 ? (int64_t)((uint64_t)o->imm ^ (1ull << 63))
                                   : (int64_t)(0 - (uint64_t)o->imm);   /* -9223372036854775808 too */
    next(&P->lx);
    return 0;
}

/* The slots of "{a, b, _}" appended to the function's vec array: a register's slot, -1 for _, -2 - i for an element
 * that is a constant or a special register (velem[i]); returns the count or -1. */
static int parse_reg_list(Parser *P)
{
    SimFunc *f = cur_fn(P);
    int n = 0;
    for (next(&P->lx);; next(&P->lx)) {
        int slot = -1;
        if (!is(&P->lx, "_")) {
            SimOpnd e = {0};
            if (is(&P->lx, "-") || P->lx.kind == T_NUM) {
                if (parse_const(P, &e)) return -1;
            } else if (P->lx.kind != T_ID || parse_reg_or_sreg(P, &e)) {
                return P->err[0] ? -1 : perr(P, P->lx.tline, "vector elements must be registers, constants or _");
            }
            if (e.kind == SO_REG) {
                slot = e.reg;
            } else {
                f->velem = grow(P, f->velem, f->nvelem, &P->caps.velemcap, sizeof *f->velem);
                f->velem[f->nvelem] = e;
                slot = -2 - f->nvelem++;
            }
        } else {
            next(&P->lx);
        }
        f->vec = grow(P, f->vec, f->nvec, &P->caps.veccap, sizeof *f->vec);
        f->vec[f->nvec++] = slot;
        if (++n > 255) return perr(P, P->lx.tline, "vector of more than 255 registers");
        if (!is(&P->lx, ",")) break;
    }
    return expect(P, "}") ? -1 : n;
}

static int parse_addr(Parser *P, SimOpnd *o)
{
    next(&P->lx);
    o->kind = SO_ADDR, o->reg = -1, o->reg2 = -1, o->imm = 0, o->space = SPACE_NONE;
    if (P->lx.tok[0] == '%' || (P->lx.kind == T_ID && find_reg(P, P->lx.tok) >= 0)) {
        if (parse_reg_or_sreg(P, o) || o->kind != SO_REG) return perr(P, P->lx.tline, "bad address base");
        o->kind = SO_ADDR, o->reg2 = -1;
    } else if (P->lx.kind == T_ID) {
        if (find_sym(P, P->lx.tok, o)) return P->err[0] ? -1 : perr(P, P->lx.tline, "unknown symbol %.60s", P->lx.tok);
        next(&P->lx);
    } else if (P->lx.kind == T_NUM) {
        if (parse_int(P->lx.tok, &o->imm)) return perr(P, P->lx.tline, "bad address");
        next(&P->lx);
    } else {
        return perr(P, P->lx.tline, "bad address");
    }
    if (is(&P->lx, "+")) {
        next(&P->lx);
        int neg = is(&P->lx, "-");
        if (neg) next(&P->lx);
        int64_t v;
        if (P->lx.kind != T_NUM || parse_int(P->lx.tok, &v)) return perr(P, P->lx.tline, "bad address offset");
        o->imm = (int64_t)((uint64_t)o->imm + (neg ? 0 - (uint64_t)v : (uint64_t)v));   /* wraps, as the address does */
        next(&P->lx);
    }
    if (is(&P->lx, ",")) {   /* [tensor map, {coordinates}] of a bulk tensor copy */
        next(&P->lx);
        if (!is(&P->lx, "{")) return perr(P, P->lx.tline, "expected {coordinates} after the tensor map");
        o->reg2 = cur_fn(P)->nvec;
        int n = parse_reg_list(P);
        if (n < 0) return -1;
        o->n = (uint8_t)n;
    }
    return expect(P, "]");
}

static int parse_opnd(Parser *P, SimOpnd *o, int insn, int k)
{
    o->reg2 = -1;
    if (is(&P->lx, "[")) return parse_addr(P, o);
    if (is(&P->lx, "{")) {
        o->kind = SO_VEC, o->reg = cur_fn(P)->nvec;
        int n = parse_reg_list(P);
        if (n < 0) return -1;
        o->n = (uint8_t)n;
        return 0;
    }
    if (is(&P->lx, "_")) {
        o->kind = SO_SINK;
        next(&P->lx);
        if (!is(&P->lx, "|")) return 0;
        next(&P->lx);   /* "_|p": only the predicate is kept */
        SimOpnd q = {0};
        if (parse_reg_or_sreg(P, &q) || q.kind != SO_REG) return perr(P, P->lx.tline, "bad register after '|'");
        o->reg2 = q.reg;
        return 0;
    }
    if (is(&P->lx, "!")) {   /* a predicate source negated; which operands take one: sim_form.c */
        next(&P->lx);
        if (parse_reg_or_sreg(P, o)) return -1;
        if (o->kind != SO_REG || cur_fn(P)->slot_bits[o->reg] != 1)
            return perr(P, P->lx.tline, "only a predicate register may be negated ('!')");
        o->neg = 1;
        return 0;
    }
    if (P->lx.tok[0] == '%' || (P->lx.kind == T_ID && find_reg(P, P->lx.tok) >= 0)) {
        if (parse_reg_or_sreg(P, o)) return -1;
        if (o->kind == SO_REG && is(&P->lx, "|")) {   /* setp's and elect's second destination */
            next(&P->lx);
            SimOpnd q = {0};
            if (parse_reg_or_sreg(P, &q) || q.kind != SO_REG) return perr(P, P->lx.tline, "bad register after '|'");
            o->reg2 = q.reg;
        }
        return 0;
    }
    if (is(&P->lx, "-") || P->lx.kind == T_NUM) return parse_const(P, o);
    if (is(&P->lx, "WARP_SZ")) {   /* PTX's predefined constant: the warp's size */
        o->kind = SO_IMM, o->reg2 = -1, o->lit = LIT_INT, o->imm = 32;
        next(&P->lx);
        return 0;
    }
    if (P->lx.kind != T_ID) return perr(P, P->lx.tline, "unexpected '%.60s' in operands", P->lx.tok);
    if (!find_sym(P, P->lx.tok, o)) { o->kind = SO_SYM; next(&P->lx); return 0; }
    if (P->err[0]) return -1;
    /* otherwise a label, resolved when its block ends */
    o->kind = SO_LABEL;
    P->fix = grow(P, P->fix, P->nfix, &P->caps.fixcap, sizeof *P->fix);
    P->fix[P->nfix++] = (Fixup){insn, k, P->lx.tline, P->depth, dup(P, P->lx.tok)};
    next(&P->lx);
    return 0;
}

/* ---- calls of device functions: each call parses its callee's body again where it stands, a block of its own
 * whose parameters name the caller's .param variables; ret leaves that block. No call stack: a recursive call, a
 * call through a pointer and one of a function without a body here (printf's vprintf, malloc, free, assert's
 * __assertfail) are refused. */
static int parse_block(Parser *P);
static int parse_label(Parser *P, const char *name);

/* An unconditional (guard < 0) or guarded branch to a label of the caller's, resolved as its block closes */
static int emit_branch(Parser *P, int guard, int neg, const char *label, int line)
{
    SimFunc *f = cur_fn(P);
    SimInsn in = {.guard = guard, .guard_neg = (uint8_t)neg, .line = line, .nops = 1};
    char why[256];
    if (isa_decode("bra", &in.d, why, sizeof why)) return perr(P, line, "%s", why);
    in.o[0] = (SimOpnd){.kind = SO_LABEL, .reg2 = -1};
    P->fix = grow(P, P->fix, P->nfix, &P->caps.fixcap, sizeof *P->fix);
    P->fix[P->nfix++] = (Fixup){f->ncode, 0, line, P->depth, dup(P, label)};
    f->code = grow(P, f->code, f->ncode, &P->caps.codecap, sizeof *f->code);
    f->code[f->ncode++] = in;
    return 0;
}

/* "(a, b, ...)" of a call: each the calling block's .param variable, into local[] (at most max); returns the count
 * or -1 */
static int param_list(Parser *P, int *local, int max)
{
    int n = 0, line = P->lx.tline;
    if (expect(P, "(")) return -1;
    while (!is(&P->lx, ")")) {
        if (P->lx.kind != T_ID || P->lx.tok[0] == '%') return perr(P, line, "a call's arguments and results must be .param variables");
        if (n == max) return perr(P, line, "a call of more than %d arguments", max);
        local[n] = find_local(P, P->lx.tok);
        if (local[n] < 0 || !P->lscope[local[n]].is_param)
            return perr(P, line, "call argument %.60s is not a .param variable of the calling block", P->lx.tok);
        n++;
        next(&P->lx);
        if (is(&P->lx, ",")) next(&P->lx);
        else if (!is(&P->lx, ")")) return perr(P, line, "expected ',' or ')' in a call");
    }
    next(&P->lx);
    return n;
}

/* call{.uni} {(results),} name{, (arguments)}; guarded by in's guard, at the lexer's mnemonic */
static int inline_call(Parser *P, const SimInsn *in)
{
    enum { MAXA = 32 };
    char fname[128];
    int line = in->line, nret = 0, narg = 0, local[2 * MAXA];   /* the results', then the arguments' variables */
    next(&P->lx);
    if (is(&P->lx, "(")) {
        if ((nret = param_list(P, local, MAXA)) < 0 || expect(P, ",")) return -1;
    }
    if (P->lx.kind != T_ID || P->lx.tok[0] == '%' || find_reg(P, P->lx.tok) >= 0)
        return perr(P, line, "a call through a pointer (or .callprototype) is not modelled: the sim inlines each call");
    if (strlen(P->lx.tok) >= sizeof fname) return perr(P, line, "a called function's name of 128 characters or more");
    snprintf(fname, sizeof fname, "%.127s", P->lx.tok);
    next(&P->lx);
    if (is(&P->lx, ",")) {
        next(&P->lx);
        if ((narg = param_list(P, local + nret, MAXA)) < 0) return -1;
    }
    if (is(&P->lx, ",")) return perr(P, line, "a call with a prototype (through a pointer) is not modelled");
    if (expect(P, ";")) return -1;
    const FuncDef *d = NULL;
    for (int i = 0; i < P->ndefs && !d; i++)
        if (!strcmp(P->defs[i].name, fname)) d = &P->defs[i];
    if (!d)
        return perr(P, line, "call of %s, which has no body in the module (an .extern function: printf's vprintf, malloc, "
                    "free and assert's __assertfail are not modelled)", fname);
    for (int i = 0; i < P->ninl; i++)
        if (!strcmp(P->inl[i], fname))
            return perr(P, line, "recursive call of %s: the sim inlines each call and has no call stack", fname);
    if (P->ninl == SIM_INLINE_MAX) return perr(P, line, "calls nested more than %d deep", SIM_INLINE_MAX);
    if (nret != d->nret || narg != d->nparam)
        return perr(P, line, "call of %s with %d result(s) and %d argument(s); it has %d and %d", fname, nret, narg,
                    d->nret, d->nparam);
    char skip[24] = "";
    if (in->guard >= 0) {   /* @p call: around the callee's body where p does not hold */
        snprintf(skip, sizeof skip, "call#%d", P->ncalls);
        if (emit_branch(P, in->guard, !in->guard_neg, skip, line)) return -1;
    }
    int mark = P->nalias;
    for (int i = 0; i < nret + narg; i++) {
        P->alias = grow(P, P->alias, P->nalias, &P->caps.aliascap, sizeof *P->alias);
        P->alias[P->nalias++] = (Alias){i < nret ? d->ret[i] : d->param[i - nret], local[i]};
    }
    P->inl[P->ninl] = d->name;
    snprintf(P->retlab[P->ninl], sizeof P->retlab[0], "ret#%d", P->ncalls++);
    P->ninl++;
    Lex caller = P->lx;
    P->lx = d->body;
    P->depth++;
    int rc = parse_block(P);
    P->lx = caller;
    P->ninl--;
    P->nalias = mark;
    if (rc || parse_label(P, P->retlab[P->ninl])) return -1;
    return skip[0] ? parse_label(P, skip) : 0;
}

/* ld.param/st.param of a body's .param variable (a call's argument or result, or a callee's view of one) read and
 * write the thread's frame, where the sim keeps those variables; no other operand may name one (its address would
 * be taken, which PTX allows only in the callee and the sim does not model) */
static int param_to_local(Parser *P, SimInsn *in)
{
    for (int k = 0; k < in->nops; k++) {
        const SimOpnd *o = &in->o[k];
        if (o->kind != SO_SYM && o->kind != SO_ADDR) continue;
        if (o->space != SPACE_LOCAL || !o->param_var || (o->kind == SO_ADDR && o->reg >= 0)) continue;
        int access = o->kind == SO_ADDR && (in->d.op == I_LD || in->d.op == I_ST) && in->d.nspace == 1 &&
                     in->d.space[0] == SP_PARAM;
        if (!access) return perr(P, in->line, "only ld.param and st.param may name a .param variable of a body (its "
                                 "address is not modelled)");
        if (in->guard >= 0) return perr(P, in->line, "a guarded ld.param or st.param of a body's .param variable (ptxas "
                                        "refuses it: branch around it)");
        in->d.space[0] = SP_LOCAL;
        in->d.cls = CL_GLOBAL;   /* as isa_decode classes ld.local */
    }
    return 0;
}

static int parse_insn(Parser *P)
{
    SimFunc *f = cur_fn(P);
    SimInsn in = {.guard = -1, .line = P->lx.tline};
    if (is(&P->lx, "@")) {
        next(&P->lx);
        if (is(&P->lx, "!")) { in.guard_neg = 1; next(&P->lx); }
        SimOpnd g = {0};
        if (parse_reg_or_sreg(P, &g) || g.kind != SO_REG || f->slot_bits[g.reg] != 1)
            return perr(P, in.line, "guard must be a predicate register");
        in.guard = g.reg;
    }
    if (P->lx.kind != T_ID) return perr(P, in.line, "expected an instruction, found '%.60s'", P->lx.tok);
    if (is(&P->lx, "call") || is(&P->lx, "call.uni")) return inline_call(P, &in);
    if (P->ninl && (is(&P->lx, "ret") || is(&P->lx, "ret.uni"))) {   /* a callee's return: past its body */
        next(&P->lx);
        return emit_branch(P, in.guard, in.guard_neg, P->retlab[P->ninl - 1], in.line) || expect(P, ";");
    }
    char why[256];
    if (isa_decode(P->lx.tok, &in.d, why, sizeof why)) return perr(P, in.line, "%s", why);
    next(&P->lx);
    while (!is(&P->lx, ";")) {
        if (P->lx.kind == T_EOF) return perr(P, in.line, "missing ';'");
        if (in.nops == SIM_MAX_OPNDS) return perr(P, in.line, "too many operands");
        if (parse_opnd(P, &in.o[in.nops], f->ncode, in.nops)) return -1;
        in.nops++;
        if (is(&P->lx, ",")) next(&P->lx);
    }
    if (param_to_local(P, &in)) return -1;
    if (sim_form_check(f, &in, why, sizeof why) || sim_type_check(f, &in, why, sizeof why))
        return perr(P, in.line, "%s", why);
    next(&P->lx);
    f->code = grow(P, f->code, f->ncode, &P->caps.codecap, sizeof *f->code);
    f->code[f->ncode++] = in;
    return 0;
}

static int parse_label(Parser *P, const char *name)
{
    for (int i = 0; i < P->nlabels; i++)
        if (P->labels[i].depth == P->depth && !strcmp(P->labels[i].name, name))
            return perr(P, P->lx.tline, "label %s defined twice", name);
    P->labels = grow(P, P->labels, P->nlabels, &P->caps.labcap, sizeof *P->labels);
    P->labels[P->nlabels++] = (Label){dup(P, name), cur_fn(P)->ncode, P->depth};
    return 0;
}

/* Closing a block: its fixups resolve against its own labels first (a
 * nested block sees its enclosing blocks' labels too, resolved when those
 * close); the block's labels then go out of scope. */
static int close_scope(Parser *P, int fam_mark, int final)
{
    SimFunc *f = cur_fn(P);
    int k = 0, unknown = -1;
    for (int i = 0; i < P->nfix; i++) {
        Fixup *x = &P->fix[i];
        int j = P->nlabels - 1;
        while (j >= 0 && !(P->labels[j].depth == P->depth && !strcmp(P->labels[j].name, x->name))) j--;
        if (x->depth >= P->depth && j >= 0) {
            f->code[x->insn].o[x->opnd].imm = P->labels[j].pc;
            free(x->name);
        } else {
            /* an unknown label is reported only once the list is compacted: the names freed above
             * must leave it, or parser_free frees them again */
            if (final && unknown < 0) unknown = k;
            if (!final) x->depth = x->depth < P->depth ? x->depth : P->depth - 1;
            P->fix[k++] = *x;
        }
    }
    P->nfix = k;
    if (unknown >= 0) return perr(P, P->fix[unknown].tline, "unknown label or symbol %.60s", P->fix[unknown].name);
    while (P->nlabels && P->labels[P->nlabels - 1].depth == P->depth) free(P->labels[--P->nlabels].name);
    while (P->nfam > fam_mark) free(P->fam[--P->nfam].name);
    for (int i = 0; i < f->nlocals; i++)   /* the block's variables keep their frame bytes, not their names */
        if (P->lscope[i].depth >= P->depth) P->lscope[i].depth = -1;
    return 0;
}

static int skip_statement(Parser *P)
{
    while (!is(&P->lx, ";")) {
        if (P->lx.kind == T_EOF) return perr(P, P->lx.tline, "missing ';'");
        next(&P->lx);
    }
    next(&P->lx);
    return 0;
}

/* Debug information, which changes no result: .loc and .file end at their line (no ';'), .section's data is a
 * braced block (nvcc -lineinfo writes all three) */
static void skip_line(Parser *P)
{
    int line = P->lx.tline;
    while (P->lx.kind != T_EOF && P->lx.tline == line) next(&P->lx);
}

/* At '{': past its matching '}' (what: the construct it belongs to, for the error of one left open) */
static int skip_braces(Parser *P, const char *what)
{
    int line = P->lx.tline, depth = 0;
    do {
        if (P->lx.kind == T_EOF) return perr(P, line, "unterminated %s", what);
        depth += is(&P->lx, "{") - is(&P->lx, "}");
        next(&P->lx);
    } while (depth > 0);
    return 0;
}

static int skip_section(Parser *P)
{
    int line = P->lx.tline;
    next(&P->lx);   /* its name */
    next(&P->lx);
    if (!is(&P->lx, "{")) return perr(P, line, ".section needs a name and then its {...}");
    return skip_braces(P, ".section");
}

static int parse_block(Parser *P)
{
    int fam_mark = P->nfam;
    if (expect(P, "{")) return -1;
    while (!is(&P->lx, "}")) {
        if (P->lx.kind == T_EOF) return perr(P, P->lx.tline, "unterminated block");
        if (is(&P->lx, "{")) {
            P->depth++;
            if (parse_block(P)) return -1;
            continue;
        }
        if (is(&P->lx, ".reg")) {
            next(&P->lx);
            if (decl_regs(P)) return -1;
            continue;
        }
        if (!strncmp(P->lx.tok, ".reg.", 5)) {   /* ".reg.b32 f;" as cuda_fp16.hpp's inline PTX writes it: the type */
            memmove(P->lx.tok, P->lx.tok + 4, strlen(P->lx.tok + 4) + 1);
            if (decl_regs(P)) return -1;
            continue;
        }
        if (is(&P->lx, ".pragma")) { if (skip_statement(P)) return -1; continue; }
        if (is(&P->lx, ".loc")) { skip_line(P); continue; }
        if (is(&P->lx, ".shared")) {   /* a function-scope __shared__ (nvcc's): static, like a module-scope one */
            if (parse_shared(P, 0)) return -1;
            continue;
        }
        if (is(&P->lx, ".local") || is(&P->lx, ".param")) {
            if (parse_local(P, P->lx.tok[1] == 'l' ? ".local" : ".param")) return -1;
            continue;
        }
        if (P->lx.kind == T_ID && P->lx.tok[0] != '.' && P->lx.tok[0] != '%' && P->lx.p[0] == ':') {
            char *name = dup(P, P->lx.tok);
            next(&P->lx), next(&P->lx);
            int rc = parse_label(P, name);
            free(name);
            if (rc) return -1;
            continue;
        }
        if (P->lx.tok[0] == '.') return perr(P, P->lx.tline, "directive %.60s inside a body is not supported", P->lx.tok);
        if (parse_insn(P)) return -1;
    }
    next(&P->lx);
    int rc = close_scope(P, fam_mark, P->depth == 0);
    if (P->depth) P->depth--;
    return rc;
}

/* .param [.align N] .type [.ptr .space [.align N]] name[[count]] */
static int parse_params(Parser *P, SimFunc *f)
{
    if (expect(P, "(")) return -1;
    while (!is(&P->lx, ")")) {
        if (expect(P, ".param")) return -1;
        int align = 0, bytes = 0, line = P->lx.tline;
        while (P->lx.tok[0] == '.') {
            if (is(&P->lx, ".align")) {
                next(&P->lx);
                align = atoi(P->lx.tok);
            } else if (!bytes) {
                bytes = elem_bytes(P->lx.tok);
                if (!bytes) return perr(P, line, "parameter type %.60s is not supported", P->lx.tok);
            }   /* .ptr and its state space only describe the pointee */
            next(&P->lx);
        }
        if (!bytes || P->lx.kind != T_ID) return perr(P, line, "malformed parameter");
        f->params = grow(P, f->params, f->nparams, &P->caps.pcap, sizeof *f->params);
        SimParam *p = &f->params[f->nparams++];
        p->name = dup(P, P->lx.tok);
        next(&P->lx);
        int count = 1;
        if (is(&P->lx, "[")) {
            next(&P->lx);
            int64_t n;
            if (P->lx.kind != T_NUM || parse_int(P->lx.tok, &n) || n < 1 || n > 1 << 16)
                return perr(P, line, "bad parameter array size");
            count = (int)n;
            next(&P->lx);
            if (expect(P, "]")) return -1;
        }
        if (align < bytes) align = bytes;
        if (align < 1 || (align & (align - 1))) return perr(P, line, "bad parameter alignment %d", align);
        p->align = align;
        p->bytes = bytes * count;
        p->offset = (f->param_bytes + align - 1) / align * align;
        f->param_bytes = p->offset + p->bytes;
        if (is(&P->lx, ",")) {
            next(&P->lx);
            if (is(&P->lx, ")")) return perr(P, line, "a ',' after the last parameter");
        } else if (!is(&P->lx, ")")) return perr(P, line, "parameters are separated by ','");
    }
    next(&P->lx);
    return 0;
}

static int parse_entry(Parser *P)
{
    P->m->funcs = grow(P, P->m->funcs, P->m->nfuncs, &P->caps.fcap, sizeof *P->m->funcs);
    SimFunc *f = &P->m->funcs[P->m->nfuncs++];
    memset(f, 0, sizeof *f);
    P->caps.veccap = P->caps.velemcap = P->caps.codecap = P->caps.pcap = P->caps.lcap = 0;   /* lscope is the parser's */
    f->name = dup(P, P->lx.tok);
    next(&P->lx);
    if (parse_params(P, f)) return -1;
    while (P->lx.tok[0] == '.') {   /* performance and cluster directives */
        int maxntid = is(&P->lx, ".maxntid") || is(&P->lx, ".reqntid");
        int64_t v, prod = 1;
        for (next(&P->lx); P->lx.kind == T_NUM; next(&P->lx)) {
            if (parse_int(P->lx.tok, &v)) return perr(P, P->lx.tline, "bad number");
            prod *= v;
            next(&P->lx);
            if (!is(&P->lx, ",")) break;
        }
        if (maxntid) f->maxntid = (int)prod;
    }
    P->depth = 0;
    return parse_block(P);
}

/* A .shared, .local or .global declaration after its state space up to its end or initializer:
 * {.align N} type name{[count]} (count may be left out); *esize: the element's bytes, *fl: a float type. */
static int parse_var_head(Parser *P, const char *space, SimShared *v, int *esize_out, int *fl)
{
    int align = 1, line = P->lx.tline;
    next(&P->lx);
    if (is(&P->lx, ".align")) {
        next(&P->lx);
        align = atoi(P->lx.tok);
        next(&P->lx);
    }
    int esize = elem_bytes(P->lx.tok);
    if (!esize || align < 1 || (align & (align - 1))) return perr(P, line, "unsupported %s declaration", space);
    *esize_out = esize, *fl = P->lx.tok[1] == 'f';
    next(&P->lx);
    memset(v, 0, sizeof *v);
    v->name = dup(P, P->lx.tok);
    v->align = align, v->size = esize;
    next(&P->lx);
    if (is(&P->lx, "[")) {
        next(&P->lx);
        int64_t n = 0;
        if (!is(&P->lx, "]")) {
            if (parse_int(P->lx.tok, &n) || n < 0 || n > 1 << 20) return perr(P, line, "bad %s size", space);
            next(&P->lx);
        }
        v->size = (int)n * esize;
        if (expect(P, "]")) return -1;
        if (is(&P->lx, "[")) return perr(P, line, "%s arrays of more than one dimension are not supported", space);
    }
    return 0;
}

static int parse_var(Parser *P, const char *space, SimShared *v)
{
    int esize, fl;
    return parse_var_head(P, space, v, &esize, &fl) || expect(P, ";");
}

static int parse_shared(Parser *P, int is_extern)
{
    P->m->shared = grow(P, P->m->shared, P->m->nshared, &P->caps.scap, sizeof *P->m->shared);
    SimShared *s = &P->m->shared[P->m->nshared];
    int line = P->lx.tline;
    if (parse_var(P, ".shared", s)) return -1;
    P->m->nshared++;
    if (!is_extern && !s->size)   /* name[] is the dynamic window's, which only .extern declares */
        return perr(P, line, ".shared %s has no size: an array of none is .extern .shared", s->name);
    s->is_extern = is_extern;
    if (is_extern) {
        if (s->align > P->m->dyn_align) P->m->dyn_align = s->align;
    } else {
        s->offset = (P->m->static_smem + s->align - 1) / s->align * s->align;
        P->m->static_smem = s->offset + s->size;
    }
    return 0;
}

/* A function's .local variable (nvcc's stack frame, __local_depot), or a .param one a body declares for a call's
 * arguments and results: per thread, at its offset in the frame, named in its block. */
static int parse_local(Parser *P, const char *space)
{
    SimFunc *f = cur_fn(P);
    f->locals = grow(P, f->locals, f->nlocals, &P->caps.lcap, sizeof *f->locals);
    P->lscope = grow(P, P->lscope, f->nlocals, &P->caps.lscap, sizeof *P->lscope);
    SimShared *v = &f->locals[f->nlocals];
    int esize, fl;
    if (parse_var_head(P, space, v, &esize, &fl) || expect(P, ";")) return -1;
    if (v->align < esize) v->align = esize;   /* a variable is aligned to its type's size unless told more */
    P->lscope[f->nlocals] = (LocalScope){P->depth, !strcmp(space, ".param")};
    f->nlocals++;
    v->offset = (f->local_bytes + v->align - 1) / v->align * v->align;
    f->local_bytes = v->offset + v->size;
    return 0;
}

/* One initializer value of an element of esize bytes (fl: a float type) at out, little-endian. */
static int init_value(Parser *P, int esize, int fl, uint8_t *out)
{
    int line = P->lx.tline, neg = is(&P->lx, "-");
    int64_t v;
    if (neg) next(&P->lx);
    if (P->lx.kind != T_NUM)
        return perr(P, line, "module .global initializer '%.60s': only numbers are supported (no addresses)", P->lx.tok);
    if (!parse_int(P->lx.tok, &v)) {
        if (neg) v = (int64_t)(0 - (uint64_t)v);   /* in unsigned arithmetic: -9223372036854775808 too */
    } else if (!fl || parse_decimal_float(P->lx.tok, neg, &v)) {
        return perr(P, line, "bad initializer value %.60s", P->lx.tok);
    } else if (esize != 8) {   /* a float's bits */
        double x;
        memcpy(&x, &v, 8);
        v = f32_bits((float)x);
    }
    for (int b = 0; b < esize; b++) out[b] = (uint8_t)((uint64_t)v >> (8 * b));
    next(&P->lx);
    return 0;
}

/* The module's initial .global bytes cover [0, bytes), the new ones zero. */
static void gvar_room(Parser *P, int bytes)
{
    int had = P->caps.gicap;
    while (P->caps.gicap < bytes) P->m->gvar_init = grow(P, P->m->gvar_init, P->caps.gicap, &P->caps.gicap, 1);
    if (P->caps.gicap > had) memset(P->m->gvar_init + had, 0, (size_t)(P->caps.gicap - had));
}

/* A module-scope .global or .const variable, {.align N} type name{[count]} {= value | = {value, ...}}; (no
 * initializer: zeros), in the module's block at its alignment, its initializer written straight into the block's
 * initial bytes. The sim keeps .const variables in the same global-memory block: ld.const reads them there, and no
 * instruction stores to them. */
static int parse_global(Parser *P)
{
    enum { MAX_UNSIZED = 1 << 20 };   /* bytes of an array sized by its initializer */
    SimModule *m = P->m;
    int line = P->lx.tline, esize, fl;
    m->gvars = grow(P, m->gvars, m->ngvars, &P->caps.gcap, sizeof *m->gvars);
    SimShared *v = &m->gvars[m->ngvars];
    *v = (SimShared){0};
    m->ngvars++;   /* the module owns its name from here, whatever follows */
    if (parse_var_head(P, is(&P->lx, ".const") ? ".const" : ".global", v, &esize, &fl)) return -1;
    v->offset = (m->gvar_bytes + v->align - 1) / v->align * v->align;
    gvar_room(P, v->offset + v->size);
    int n = 0;
    if (is(&P->lx, "=")) {
        next(&P->lx);
        int braces = is(&P->lx, "{");
        if (braces) next(&P->lx);
        for (;;) {
            int end = (n + 1) * esize;
            if (v->size ? end > v->size : end > MAX_UNSIZED)
                return perr(P, line, "module .global %s: more initializer values than elements", v->name);
            gvar_room(P, v->offset + end);
            if (init_value(P, esize, fl, m->gvar_init + v->offset + end - esize)) return -1;
            n++;
            if (!braces || !is(&P->lx, ",")) break;
            next(&P->lx);
        }
        if (braces && expect(P, "}")) return -1;
    }
    if (!v->size) v->size = n * esize;   /* name[] = {...}: as many as given */
    if (!v->size) return perr(P, line, "module .global %s has no size", v->name);
    m->gvar_bytes = v->offset + v->size;
    return expect(P, ";");
}

/* The dynamic window (every extern .shared) starts after all the static ones, the .shared a body declares
 * (nvcc's function-scope __shared__) among them, so it is placed once the module is read and added to the operands
 * that name it (each read as its offset in the window until then). */
static void place_extern(SimModule *m)
{
    int at = (m->static_smem + m->dyn_align - 1) / m->dyn_align * m->dyn_align;
    for (int i = 0; i < m->nshared; i++)
        if (m->shared[i].is_extern) m->shared[i].offset = at;
    for (int f = 0; f < m->nfuncs; f++) {
        SimFunc *fn = &m->funcs[f];
        for (int i = 0; i < fn->ncode; i++)
            for (int k = 0; k < SIM_MAX_OPNDS; k++)
                if (fn->code[i].o[k].dyn) fn->code[i].o[k].imm += at;
    }
}

/* ---- device functions: their headers and bodies, found before any entry is parsed (a call may come first) ---- */

/* "(.param .type {.align N} name{[N]}, ...)" of a .func header into names[], *n of them */
static int func_params(Parser *P, Lex *L, char ***names, int *n)
{
    int cap = 0;
    next(L);
    while (!is(L, ")")) {
        if (L->kind == T_EOF || !is(L, ".param")) return perr(P, L->tline, "malformed .func parameter list");
        next(L);
        while (L->tok[0] == '.' || L->kind == T_NUM) next(L);   /* .align N, the type, .ptr and its space */
        if (L->kind != T_ID) return perr(P, L->tline, "malformed .func parameter");
        *names = grow(P, *names, *n, &cap, sizeof **names);
        (*names)[(*n)++] = dup(P, L->tok);
        next(L);
        if (is(L, "[")) {
            while (L->kind != T_EOF && !is(L, "]")) next(L);
            next(L);
        }
        if (is(L, ",")) next(L);
        else if (!is(L, ")")) return perr(P, L->tline, "malformed .func parameter list");
    }
    next(L);
    return 0;
}

/* At ".func": its header, and (a definition) its body's place; *L past the header (at '{' or ';') */
static int func_head(Parser *P, Lex *L, FuncDef *d)
{
    *d = (FuncDef){0};
    next(L);
    if (is(L, "(") && func_params(P, L, &d->ret, &d->nret)) return -1;
    if (L->kind != T_ID || L->tok[0] == '.') return perr(P, L->tline, "a .func needs a name");
    d->name = dup(P, L->tok);
    next(L);
    if (is(L, "(") && func_params(P, L, &d->param, &d->nparam)) return -1;
    while (!is(L, "{") && !is(L, ";")) {   /* .noreturn, .attribute(...), .maxntid ... */
        if (L->kind == T_EOF) return perr(P, L->tline, ".func %s has neither a body nor a ';'", d->name);
        next(L);
    }
    return 0;
}

static void func_free(FuncDef *d)
{
    for (int j = 0; j < d->nret; j++) free(d->ret[j]);
    for (int j = 0; j < d->nparam; j++) free(d->param[j]);
    free(d->ret), free(d->param), free(d->name);
}

/* Every .func with a body at module scope (declarations only name one defined elsewhere or an .extern one) */
static int scan_funcs(Parser *P, const char *ptx)
{
    Lex *L = calloc(1, sizeof *L);
    if (!L) longjmp(P->oom, 1);
    *L = (Lex){.p = ptx, .line = 1};
    int depth = 0, rc = 0;
    for (next(L); L->kind != T_EOF && !rc; next(L)) {
        depth += is(L, "{") - is(L, "}");
        if (depth || !is(L, ".func")) continue;
        FuncDef d;
        if ((rc = func_head(P, L, &d))) { func_free(&d); break; }
        if (!is(L, "{")) { func_free(&d); continue; }
        for (int i = 0; i < P->ndefs && !rc; i++)
            if (!strcmp(P->defs[i].name, d.name)) rc = perr(P, L->tline, ".func %s is defined twice", d.name);
        if (rc) { func_free(&d); break; }
        d.body = *L;
        P->defs = grow(P, P->defs, P->ndefs, &P->caps.defcap, sizeof *P->defs);
        P->defs[P->ndefs++] = d;
        depth = 1;   /* inside its body: the '{' the loop steps over */
    }
    free(L);
    return rc;
}

/* parse_module at ".func": past its header and body, which calls parse where they stand */
static int skip_func(Parser *P)
{
    FuncDef d;
    int rc = func_head(P, &P->lx, &d);
    func_free(&d);
    if (rc) return -1;
    if (is(&P->lx, ";")) { next(&P->lx); return 0; }
    return skip_braces(P, ".func body");
}

/* ".version MAJOR.MINOR" (digits, a dot, digits) */
static int version_text(const char *t)
{
    const char *s = t;
    while (isdigit((unsigned char)*s)) s++;
    if (s == t || *s != '.' || !isdigit((unsigned char)s[1])) return 0;
    for (s++; isdigit((unsigned char)*s); s++) {}
    return !*s && s - t < 8;
}

static int parse_module(Parser *P)
{
    for (next(&P->lx); P->lx.kind != T_EOF;) {
        if (is(&P->lx, ".version")) {
            next(&P->lx);
            if (!version_text(P->lx.tok)) return perr(P, P->lx.tline, ".version needs MAJOR.MINOR, found '%.32s'", P->lx.tok);
            next(&P->lx);
        } else if (is(&P->lx, ".address_size")) {
            next(&P->lx);
            if (strcmp(P->lx.tok, "64"))   /* its generic and global addresses are 64 bits */
                return perr(P, P->lx.tline, ".address_size %.32s: the sim models 64-bit addresses only", P->lx.tok);
            next(&P->lx);
        } else if (is(&P->lx, ".target")) {
            next(&P->lx);
            snprintf(P->m->target, sizeof P->m->target, "%.31s", P->lx.tok);
            for (next(&P->lx); is(&P->lx, ","); next(&P->lx)) next(&P->lx);
        } else if (is(&P->lx, ".extern") || is(&P->lx, ".shared")) {
            int ext = is(&P->lx, ".extern");
            if (ext) next(&P->lx);
            if (is(&P->lx, ".func")) {   /* a declaration: a call of it is refused where it stands */
                if (skip_func(P)) return -1;
                continue;
            }
            if (!is(&P->lx, ".shared")) return perr(P, P->lx.tline, "only .extern .shared and .extern .func are supported");
            if (parse_shared(P, ext)) return -1;
        } else if (is(&P->lx, ".global") || is(&P->lx, ".const")) {   /* __device__, __constant__ */
            if (parse_global(P)) return -1;
        } else if (is(&P->lx, ".visible") || is(&P->lx, ".weak") || is(&P->lx, ".entry")) {
            while (is(&P->lx, ".visible") || is(&P->lx, ".weak")) next(&P->lx);
            if (is(&P->lx, ".func")) {
                if (skip_func(P)) return -1;
                continue;
            }
            if (expect(P, ".entry")) return -1;
            if (parse_entry(P)) return -1;
        } else if (is(&P->lx, ".func")) {
            if (skip_func(P)) return -1;
        } else if (is(&P->lx, ".file")) {
            skip_line(P);
        } else if (is(&P->lx, ".section")) {
            if (skip_section(P)) return -1;
        } else {
            return perr(P, P->lx.tline, "unsupported top-level '%.60s'", P->lx.tok);
        }
    }
    if (!P->m->nfuncs) return perr(P, P->lx.tline, "no .entry in the module");
    place_extern(P->m);   /* after the .shared a body declares too (nvcc's function-scope __shared__) */
    return 0;
}

static void split_lines(Parser *P, SimModule *m, const char *ptx)
{
    m->text = dup(P, ptx);
    int cap = 0;
    for (char *s = m->text; s;) {
        m->lines = grow(P, m->lines, m->nlines, &cap, sizeof *m->lines);
        m->lines[m->nlines++] = s;
        s = strchr(s, '\n');
        if (s) *s++ = 0;
    }
}

static void parser_free(Parser *P)
{
    for (int i = 0; i < P->nfam; i++) free(P->fam[i].name);
    for (int i = 0; i < P->nlabels; i++) free(P->labels[i].name);
    for (int i = 0; i < P->nfix; i++) free(P->fix[i].name);
    free(P->fam), free(P->labels), free(P->fix);
    for (int i = 0; i < P->ndefs; i++) func_free(&P->defs[i]);
    free(P->defs), free(P->alias), free(P->lscope);
}

int sim_parse(const char *ptx, SimModule **out, char *err, size_t errlen)
{
    Parser *P = calloc(1, sizeof *P);
    if (!P || !ptx) { snprintf(err, errlen, "sim: out of memory"); free(P); return -1; }
    *P = (Parser){.lx = {.p = ptx, .line = 1}, .err = err, .errlen = errlen};
    err[0] = 0;
    P->m = calloc(1, sizeof *P->m);
    if (!P->m) { snprintf(err, errlen, "sim: out of memory"); free(P); return -1; }
    P->m->dyn_align = 16;
    if (setjmp(P->oom)) {
        snprintf(err, errlen, "sim: out of memory parsing the PTX");
        parser_free(P);
        sim_module_free(P->m);
        *out = NULL;
        free(P);
        return -1;
    }
    split_lines(P, P->m, ptx);
    int rc = scan_funcs(P, ptx) || parse_module(P);
    parser_free(P);
    if (rc) { sim_module_free(P->m); *out = NULL; free(P); return -1; }
    *out = P->m;
    free(P);
    return 0;
}

void sim_module_free(SimModule *m)
{
    if (!m) return;
    for (int i = 0; i < m->nfuncs; i++) {
        SimFunc *f = &m->funcs[i];
        for (int s = 0; s < f->nslots; s++) free(f->slot_name[s]);
        for (int p = 0; p < f->nparams; p++) free(f->params[p].name);
        for (int v = 0; v < f->nlocals; v++) free(f->locals[v].name);
        free(f->locals);
        free(f->name), free(f->slot_name), free(f->slot_bits), free(f->slot_type), free(f->velem), free(f->params), free(f->code), free(f->vec);
    }
    for (int i = 0; i < m->nshared; i++) free(m->shared[i].name);
    for (int i = 0; i < m->ngvars; i++) free(m->gvars[i].name);
    free(m->gvars), free(m->gvar_init);
    free(m->funcs), free(m->shared), free(m->lines), free(m->text), free(m);
}

const SimFunc *sim_find(const SimModule *m, const char *entry)
{
    for (int i = 0; i < m->nfuncs; i++)
        if (!strcmp(m->funcs[i].name, entry)) return &m->funcs[i];
    return NULL;
}
