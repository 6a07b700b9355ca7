/* PTX text -> SimModule. The sim reads the module exactly as shipped: the
 * mnemonics and operand signatures are the emitter's op table (emit/ops.def),
 * so an instruction outside it, or one whose operands do not fit, is refused
 * with its line rather than guessed at. */
#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "sim.h"

enum { T_EOF, T_ID, T_NUM, T_PUNCT };
typedef struct {
    const char *p;
    int line;
    int kind, tline;
    char tok[256];
} Lex;

typedef struct { char name[64]; int base, count, bits; } RegFamily;   /* count 0: a single register */
typedef struct { char name[64]; int pc; } Label;
typedef struct { int insn, opnd, tline; char name[64]; } Fixup;

typedef struct {
    Lex lx;
    SimModule *m;
    char *err;
    size_t errlen;
    RegFamily *fam;
    int nfam;
    Label *labels;
    int nlabels;
    Fixup *fix;
    int nfix;
    struct { int famcap, veccap, fixcap, codecap, labcap, pcap, fcap, scap; } caps;   /* of the arrays above */
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

static void *grow(void *p, int n, int *cap, size_t sz)
{
    if (n < *cap) return p;
    *cap = *cap ? *cap * 2 : 64;
    void *q = realloc(p, (size_t)*cap * sz);
    if (!q) { fputs("ptxgen: out of memory in the sim parser\n", stderr); exit(1); }
    return q;
}

/* Names are copied cut to their field; a PTX name that long would be a bug here anyway. */
static void setname(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    if (n >= cap) n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

/* ---- lexer ---- */
static int id_start(int c) { return isalpha(c) || c == '_' || c == '$' || c == '%' || c == '.'; }
static int id_char(int c) { return isalnum(c) || c == '_' || c == '$' || c == '.'; }

static void next(Lex *L)
{
    for (;;) {
        while (isspace((unsigned char)*L->p)) L->line += *L->p++ == '\n';
        if (L->p[0] == '/' && L->p[1] == '/') { while (*L->p && *L->p != '\n') L->p++; continue; }
        if (L->p[0] == '/' && L->p[1] == '*') {
            for (L->p += 2; *L->p && !(L->p[0] == '*' && L->p[1] == '/'); L->p++) L->line += *L->p == '\n';
            if (*L->p) L->p += 2;
            continue;
        }
        break;
    }
    L->tline = L->line;
    size_t n = 0;
    int c = (unsigned char)*L->p;
    if (!c) { L->kind = T_EOF; L->tok[0] = 0; return; }
    if (id_start(c) || isdigit(c)) {
        L->kind = isdigit(c) ? T_NUM : T_ID;
        while ((id_char((unsigned char)*L->p) || (n == 0 && *L->p == '%')) && n + 1 < sizeof L->tok) L->tok[n++] = *L->p++;
    } else {
        L->kind = T_PUNCT;
        L->tok[n++] = *L->p++;
    }
    L->tok[n] = 0;
}

static int is(const Lex *L, const char *t) { return !strcmp(L->tok, t); }
static int expect(Parser *P, const char *t)
{
    if (!is(&P->lx, t)) return perr(P, P->lx.tline, "expected '%s', found '%s'", t, P->lx.tok);
    next(&P->lx);
    return 0;
}

static int parse_int(const char *t, int64_t *v)
{
    char *end;
    if ((t[0] == '0') && (t[1] == 'f' || t[1] == 'F') && strlen(t) == 10) {
        *v = (int64_t)strtoull(t + 2, &end, 16);
        return *end ? -1 : 0;
    }
    if (t[0] == '0' && (t[1] == 'x' || t[1] == 'X')) *v = (int64_t)strtoull(t + 2, &end, 16);
    else *v = (int64_t)strtoull(t, &end, 10);
    if (*end == 'U') end++;
    return *end ? -1 : 0;
}

/* ---- registers, symbols, special registers ---- */
static const char *kSregs[SR_COUNT] = {"%tid.x", "%tid.y", "%tid.z", "%ntid.x", "%ntid.y", "%ntid.z", "%ctaid.x",
                                       "%ctaid.y", "%ctaid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z", "%laneid", "%warpid"};

static int find_reg(const Parser *P, const char *name)
{
    for (int i = 0; i < P->nfam; i++)
        if (!P->fam[i].count && !strcmp(P->fam[i].name, name)) return P->fam[i].base;
    size_t k = strlen(name);
    while (k && isdigit((unsigned char)name[k - 1])) k--;
    if (k == strlen(name)) return -1;
    int idx = atoi(name + k);
    for (int i = 0; i < P->nfam; i++)
        if (P->fam[i].count && strlen(P->fam[i].name) == k && !strncmp(P->fam[i].name, name, k))
            return idx < P->fam[i].count ? P->fam[i].base + idx : -1;
    return -1;
}

static int reg_bits(const char *type)
{
    if (!strcmp(type, ".pred")) return 1;
    if (!strcmp(type, ".b32") || !strcmp(type, ".u32") || !strcmp(type, ".s32") || !strcmp(type, ".f32")) return 32;
    if (!strcmp(type, ".b64") || !strcmp(type, ".u64") || !strcmp(type, ".s64") || !strcmp(type, ".f64")) return 64;
    return 0;
}

static int param_bytes(const char *type)
{
    int b = reg_bits(type);
    if (b == 32 || b == 64) return b / 8;
    if (!strcmp(type, ".b16") || !strcmp(type, ".u16") || !strcmp(type, ".s16")) return 2;
    if (!strcmp(type, ".b8") || !strcmp(type, ".u8") || !strcmp(type, ".s8")) return 1;
    return 0;
}

static SimFunc *cur_fn(Parser *P) { return &P->m->funcs[P->m->nfuncs - 1]; }

/* A symbol operand: a parameter of the current entry or a shared variable. */
static int find_sym(Parser *P, const char *name, SimOpnd *o)
{
    SimFunc *f = cur_fn(P);
    for (int i = 0; i < f->nparams; i++)
        if (!strcmp(f->params[i].name, name)) { o->space = SPACE_PARAM; o->imm = f->params[i].offset; return 0; }
    for (int i = 0; i < P->m->nshared; i++)
        if (!strcmp(P->m->shared[i].name, name)) { o->space = SPACE_SHARED; o->imm = P->m->shared[i].offset; return 0; }
    return -1;
}

static int decl_regs(Parser *P)
{
    char type[32];
    setname(type, sizeof type, P->lx.tok);
    int bits = reg_bits(type), line = P->lx.tline;
    if (!bits) return perr(P, line, "register type %s is not supported", type);
    SimFunc *f = cur_fn(P);
    for (next(&P->lx);; next(&P->lx)) {
        if (P->lx.kind != T_ID || P->lx.tok[0] != '%') return perr(P, line, "expected a register name");
        P->fam = grow(P->fam, P->nfam, &P->caps.famcap, sizeof *P->fam);
        RegFamily *r = &P->fam[P->nfam++];
        setname(r->name, sizeof r->name, P->lx.tok);
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
        int add = r->count ? r->count : 1;
        f->slot_bits = realloc(f->slot_bits, (size_t)(f->nslots + add));
        f->slot_name = realloc(f->slot_name, (size_t)(f->nslots + add) * sizeof *f->slot_name);
        for (int i = 0; i < add; i++) f->slot_bits[f->nslots + i] = (uint8_t)bits, f->slot_name[f->nslots + i] = NULL;
        f->slot_name[f->nslots] = strdup(r->name);
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
    if (s < 0) return perr(P, P->lx.tline, "register %s is not declared", P->lx.tok);
    o->kind = SO_REG, o->reg = s;
    next(&P->lx);
    return 0;
}

static int parse_addr(Parser *P, SimOpnd *o)
{
    next(&P->lx);
    o->kind = SO_ADDR, o->reg = -1, o->imm = 0, o->space = SPACE_NONE;
    if (P->lx.tok[0] == '%') {
        if (parse_reg_or_sreg(P, o) || o->kind != SO_REG) return perr(P, P->lx.tline, "bad address base");
        o->kind = SO_ADDR;
    } else if (P->lx.kind == T_ID) {
        if (find_sym(P, P->lx.tok, o)) return perr(P, P->lx.tline, "unknown symbol %s", P->lx.tok);
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
        o->imm += neg ? -v : v;
        next(&P->lx);
    }
    return expect(P, "]");
}

static int parse_vec(Parser *P, SimOpnd *o)
{
    SimFunc *f = cur_fn(P);
    o->kind = SO_VEC, o->reg = f->nvec, o->n = 0;
    for (next(&P->lx);; next(&P->lx)) {
        SimOpnd e = {0};
        if (parse_reg_or_sreg(P, &e) || e.kind != SO_REG) return perr(P, P->lx.tline, "vector elements must be registers");
        f->vec = grow(f->vec, f->nvec, &P->caps.veccap, sizeof *f->vec);
        f->vec[f->nvec++] = e.reg;
        o->n++;
        if (!is(&P->lx, ",")) break;
    }
    return expect(P, "}");
}

static int parse_opnd(Parser *P, SimOpnd *o, int insn, int k)
{
    if (is(&P->lx, "[")) return parse_addr(P, o);
    if (is(&P->lx, "{")) return parse_vec(P, o);
    if (P->lx.tok[0] == '%') return parse_reg_or_sreg(P, o);
    int neg = is(&P->lx, "-");
    if (neg) next(&P->lx);
    if (P->lx.kind == T_NUM) {
        if (parse_int(P->lx.tok, &o->imm)) return perr(P, P->lx.tline, "bad number %s", P->lx.tok);
        if (neg) o->imm = -o->imm;
        o->kind = SO_IMM;
        next(&P->lx);
        return 0;
    }
    if (P->lx.kind != T_ID || neg) return perr(P, P->lx.tline, "unexpected '%s' in operands", P->lx.tok);
    if (!find_sym(P, P->lx.tok, o)) { o->kind = SO_SYM; next(&P->lx); return 0; }
    /* otherwise a label, resolved when the body ends */
    o->kind = SO_LABEL;
    P->fix = grow(P->fix, P->nfix, &P->caps.fixcap, sizeof *P->fix);
    P->fix[P->nfix++] = (Fixup){insn, k, P->lx.tline, ""};
    setname(P->fix[P->nfix - 1].name, sizeof P->fix[0].name, P->lx.tok);
    next(&P->lx);
    return 0;
}

/* Does operand o fit signature letter s (emit/ops.def)? */
static int fits(const SimFunc *f, char s, const SimOpnd *o)
{
    int bits = o->kind == SO_REG ? f->slot_bits[o->reg] : 0;
    switch (s) {
    case 'R': case 'F': return bits == 32;
    case 'D': return bits == 64;
    case 'P': case 'p': return bits == 1;
    case 'r': case 'f': case 'x': return bits == 32 || o->kind == SO_IMM || o->kind == SO_SREG;
    case 'd': return bits == 64 || o->kind == SO_IMM || o->kind == SO_SYM;
    case 'a': return o->kind == SO_ADDR;
    case 'v': return o->kind == SO_VEC;
    case 'l': return o->kind == SO_LABEL;
    case 'i': return o->kind == SO_IMM;
    }
    return 0;
}

static int sig_matches(const SimFunc *f, Op op, const SimInsn *in)
{
    const char *sig = op_sig(op);
    if ((int)strlen(sig) != in->nops) return 0;
    for (int i = 0; i < in->nops; i++)
        if (!fits(f, sig[i], &in->o[i])) return 0;
    return 1;
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
    char mn[256];
    setname(mn, sizeof mn, P->lx.tok);
    if (P->lx.kind != T_ID) return perr(P, in.line, "expected an instruction, found '%s'", mn);
    next(&P->lx);
    while (!is(&P->lx, ";")) {
        if (P->lx.kind == T_EOF) return perr(P, in.line, "missing ';'");
        if (in.nops == SIM_MAX_OPNDS) return perr(P, in.line, "too many operands");
        if (parse_opnd(P, &in.o[in.nops], f->ncode, in.nops)) return -1;
        in.nops++;
        if (is(&P->lx, ",")) next(&P->lx);
    }
    next(&P->lx);
    int known = 0;
    for (int op = 0; op < OP_COUNT; op++) {
        if (strcmp(op_text((Op)op), mn)) continue;
        known = 1;
        if (sig_matches(f, (Op)op, &in)) { in.op = (uint16_t)op; in.cls = (uint8_t)sim_class_of((Op)op); goto found; }
    }
    return perr(P, in.line, known ? "operands of %s do not fit what the sim supports" : "instruction %s is not supported by the sim", mn);
found:
    f->code = grow(f->code, f->ncode, &P->caps.codecap, sizeof *f->code);
    f->code[f->ncode++] = in;
    return 0;
}

static int parse_label(Parser *P, const char *name)
{
    for (int i = 0; i < P->nlabels; i++)
        if (!strcmp(P->labels[i].name, name)) return perr(P, P->lx.tline, "label %s defined twice", name);
    P->labels = grow(P->labels, P->nlabels, &P->caps.labcap, sizeof *P->labels);
    setname(P->labels[P->nlabels].name, sizeof P->labels[0].name, name);
    P->labels[P->nlabels++].pc = cur_fn(P)->ncode;
    return 0;
}

static int resolve_labels(Parser *P)
{
    SimFunc *f = cur_fn(P);
    for (int i = 0; i < P->nfix; i++) {
        int j = 0;
        while (j < P->nlabels && strcmp(P->labels[j].name, P->fix[i].name)) j++;
        if (j == P->nlabels) return perr(P, P->fix[i].tline, "unknown label or symbol %s", P->fix[i].name);
        f->code[P->fix[i].insn].o[P->fix[i].opnd].imm = P->labels[j].pc;
    }
    P->nfix = P->nlabels = P->nfam = 0;
    return 0;
}

static int parse_body(Parser *P)
{
    if (expect(P, "{")) return -1;
    while (!is(&P->lx, "}")) {
        if (P->lx.kind == T_EOF) return perr(P, P->lx.tline, "unterminated function body");
        if (is(&P->lx, ".reg")) {
            next(&P->lx);
            if (decl_regs(P)) return -1;
            continue;
        }
        if (P->lx.kind == T_ID && P->lx.tok[0] != '.' && P->lx.p[0] == ':') {
            char name[64];
            setname(name, sizeof name, P->lx.tok);
            next(&P->lx), next(&P->lx);
            if (parse_label(P, name)) return -1;
            continue;
        }
        if (P->lx.tok[0] == '.') return perr(P, P->lx.tline, "directive %s inside a body is not supported", P->lx.tok);
        if (parse_insn(P)) return -1;
    }
    next(&P->lx);
    return resolve_labels(P);
}

static int parse_params(Parser *P, SimFunc *f)
{
    if (expect(P, "(")) return -1;
    while (!is(&P->lx, ")")) {
        if (expect(P, ".param")) return -1;
        int bytes = param_bytes(P->lx.tok);
        if (!bytes) return perr(P, P->lx.tline, "parameter type %s is not supported", P->lx.tok);
        next(&P->lx);
        f->params = grow(f->params, f->nparams, &P->caps.pcap, sizeof *f->params);
        SimParam *p = &f->params[f->nparams++];
        setname(p->name, sizeof p->name, P->lx.tok);
        p->bytes = bytes;
        p->offset = (f->param_bytes + bytes - 1) / bytes * bytes;
        f->param_bytes = p->offset + bytes;
        next(&P->lx);
        if (is(&P->lx, ",")) next(&P->lx);
    }
    next(&P->lx);
    return 0;
}

static int parse_entry(Parser *P)
{
    P->m->funcs = grow(P->m->funcs, P->m->nfuncs, &P->caps.fcap, sizeof *P->m->funcs);
    SimFunc *f = &P->m->funcs[P->m->nfuncs++];
    memset(f, 0, sizeof *f);
    P->caps.veccap = P->caps.codecap = P->caps.pcap = 0;
    setname(f->name, sizeof f->name, P->lx.tok);
    next(&P->lx);
    if (parse_params(P, f)) return -1;
    while (P->lx.tok[0] == '.') {   /* performance directives */
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
    return parse_body(P);
}

static int parse_shared(Parser *P, int is_extern)
{
    int align = 1, line = P->lx.tline;
    next(&P->lx);
    if (is(&P->lx, ".align")) {
        next(&P->lx);
        align = atoi(P->lx.tok);
        next(&P->lx);
    }
    int esize = param_bytes(P->lx.tok);
    if (!esize || align < 1 || (align & (align - 1))) return perr(P, line, "unsupported .shared declaration");
    next(&P->lx);
    P->m->shared = grow(P->m->shared, P->m->nshared, &P->caps.scap, sizeof *P->m->shared);
    SimShared *s = &P->m->shared[P->m->nshared];
    memset(s, 0, sizeof *s);
    setname(s->name, sizeof s->name, P->lx.tok);
    s->align = align, s->is_extern = is_extern, s->size = esize;
    next(&P->lx);
    if (is(&P->lx, "[")) {
        next(&P->lx);
        int64_t n = 0;
        if (!is(&P->lx, "]")) {
            if (parse_int(P->lx.tok, &n) || n < 0) return perr(P, line, "bad .shared size");
            next(&P->lx);
        }
        s->size = (int)n * esize;
        if (expect(P, "]")) return -1;
    }
    if (is_extern) {
        if (align > P->m->dyn_align) P->m->dyn_align = align;
    } else {
        s->offset = (P->m->static_smem + align - 1) / align * align;
        P->m->static_smem = s->offset + s->size;
    }
    P->m->nshared++;
    return expect(P, ";");
}

/* The dynamic window (every extern .shared) starts after the static ones. */
static void place_extern(SimModule *m)
{
    int at = (m->static_smem + m->dyn_align - 1) / m->dyn_align * m->dyn_align;
    for (int i = 0; i < m->nshared; i++)
        if (m->shared[i].is_extern) m->shared[i].offset = at;
}

static int parse_module(Parser *P)
{
    for (next(&P->lx); P->lx.kind != T_EOF;) {
        if (is(&P->lx, ".version") || is(&P->lx, ".address_size")) {
            next(&P->lx), next(&P->lx);
        } else if (is(&P->lx, ".target")) {
            next(&P->lx);
            setname(P->m->target, sizeof P->m->target, P->lx.tok);
            for (next(&P->lx); is(&P->lx, ","); next(&P->lx)) next(&P->lx);
        } else if (is(&P->lx, ".extern") || is(&P->lx, ".shared")) {
            int ext = is(&P->lx, ".extern");
            if (ext) next(&P->lx);
            if (!is(&P->lx, ".shared")) return perr(P, P->lx.tline, "only .extern .shared is supported");
            if (parse_shared(P, ext)) return -1;
            place_extern(P->m);
        } else if (is(&P->lx, ".visible") || is(&P->lx, ".entry")) {
            if (is(&P->lx, ".visible")) next(&P->lx);
            if (expect(P, ".entry")) return -1;
            if (parse_entry(P)) return -1;
        } else {
            return perr(P, P->lx.tline, "unsupported top-level '%s'", P->lx.tok);
        }
    }
    if (!P->m->nfuncs) return perr(P, P->lx.tline, "no .entry in the module");
    return 0;
}

static void split_lines(SimModule *m, const char *ptx)
{
    m->text = strdup(ptx);
    int cap = 0;
    for (char *s = m->text; s;) {
        m->lines = grow(m->lines, m->nlines, &cap, sizeof *m->lines);
        m->lines[m->nlines++] = s;
        s = strchr(s, '\n');
        if (s) *s++ = 0;
    }
}

int sim_parse(const char *ptx, SimModule **out, char *err, size_t errlen)
{
    Parser P = {.lx = {.p = ptx, .line = 1}, .err = err, .errlen = errlen};
    P.m = calloc(1, sizeof *P.m);
    if (!P.m || !ptx) { snprintf(err, errlen, "sim: out of memory"); free(P.m); return -1; }
    P.m->dyn_align = 16;
    split_lines(P.m, ptx);
    int rc = parse_module(&P);
    free(P.fam), free(P.labels), free(P.fix);
    if (rc) { sim_module_free(P.m); *out = NULL; return -1; }
    *out = P.m;
    return 0;
}

void sim_module_free(SimModule *m)
{
    if (!m) return;
    for (int i = 0; i < m->nfuncs; i++) {
        SimFunc *f = &m->funcs[i];
        for (int s = 0; s < f->nslots; s++) free(f->slot_name[s]);
        free(f->slot_name), free(f->slot_bits), free(f->params), free(f->code), free(f->vec);
    }
    free(m->funcs), free(m->shared), free(m->lines), free(m->text), free(m);
}

const SimFunc *sim_find(const SimModule *m, const char *entry)
{
    for (int i = 0; i < m->nfuncs; i++)
        if (!strcmp(m->funcs[i].name, entry)) return &m->funcs[i];
    return NULL;
}
