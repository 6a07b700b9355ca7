#include "expr.h"
#include <ctype.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    const char *s;
    const ExprVar *vars;
    int nvars;
    char *err;
    size_t errlen;
    int failed;
} Parser;

static long long parse_sum(Parser *p);

static void fail(Parser *p, const char *what) {
    if (!p->failed) snprintf(p->err, p->errlen, "launch expression: %s at '%s'", what, p->s);
    p->failed = 1;
}

static void skip_ws(Parser *p) { while (isspace((unsigned char)*p->s)) p->s++; }

static int accept(Parser *p, char c) {
    skip_ws(p);
    if (*p->s != c) return 0;
    p->s++;
    return 1;
}

static void fail_name(Parser *p, const char *what, const char *name, size_t len) {
    if (!p->failed) snprintf(p->err, p->errlen, "launch expression: %s '%.*s'", what, (int)len, name);
    p->failed = 1;
}

static long long lookup(Parser *p, const char *name, size_t len) {
    for (int i = 0; i < p->nvars; i++)
        if (strlen(p->vars[i].name) == len && !strncmp(p->vars[i].name, name, len)) return p->vars[i].value;
    fail_name(p, "unknown size name", name, len);
    return 0;
}

static long long divide(Parser *p, long long a, long long b, int ceil) {
    if (b == 0) { fail(p, "division by zero"); return 0; }
    long long up;
    if (ceil && __builtin_add_overflow(a, b - 1, &up)) { fail(p, "a value past 64 bits"); return 0; }
    return ceil ? up / b : a / b;
}

/* a op b in 64 bits, or a failure naming the overflow (sizes from a caller can be anything) */
static long long arith(Parser *p, char op, long long a, long long b) {
    long long r = 0;
    int over = op == '*' ? __builtin_mul_overflow(a, b, &r) : op == '+' ? __builtin_add_overflow(a, b, &r)
                                                                         : __builtin_sub_overflow(a, b, &r);
    if (over) fail(p, "a value past 64 bits");
    return over ? 0 : r;
}

static long long call(Parser *p, const char *fn, size_t len) {
    long long a = parse_sum(p), b = 0;
    if (!accept(p, ',')) { fail(p, "expected ','"); return 0; }
    b = parse_sum(p);
    if (!accept(p, ')')) { fail(p, "expected ')'"); return 0; }
    if (len == 4 && !strncmp(fn, "cdiv", 4)) return divide(p, a, b, 1);
    if (len == 3 && !strncmp(fn, "min", 3)) return a < b ? a : b;
    if (len == 3 && !strncmp(fn, "max", 3)) return a > b ? a : b;
    fail_name(p, "unknown function", fn, len);
    return 0;
}

static long long parse_atom(Parser *p) {
    skip_ws(p);
    if (accept(p, '(')) {
        long long v = parse_sum(p);
        if (!accept(p, ')')) fail(p, "expected ')'");
        return v;
    }
    if (isdigit((unsigned char)*p->s)) {
        long long v = 0;
        while (isdigit((unsigned char)*p->s)) v = arith(p, '+', arith(p, '*', v, 10), *p->s++ - '0');
        return v;
    }
    const char *id = p->s;
    while (isalnum((unsigned char)*p->s) || *p->s == '_') p->s++;
    size_t len = (size_t)(p->s - id);
    if (!len) { fail(p, "expected a number or name"); return 0; }
    if (accept(p, '(')) return call(p, id, len);
    return lookup(p, id, len);
}

static long long parse_product(Parser *p) {
    long long v = parse_atom(p);
    for (;;) {
        if (accept(p, '*')) v = arith(p, '*', v, parse_atom(p));
        else if (accept(p, '/')) v = divide(p, v, parse_atom(p), 0);
        else return v;
    }
}

static long long parse_sum(Parser *p) {
    long long v = parse_product(p);
    for (;;) {
        if (accept(p, '+')) v = arith(p, '+', v, parse_product(p));
        else if (accept(p, '-')) v = arith(p, '-', v, parse_product(p));
        else return v;
    }
}

int expr_eval(const char *text, const ExprVar *vars, int nvars, long long *out, char *err, size_t errlen) {
    Parser p = {text, vars, nvars, err, errlen, 0};
    *out = parse_sum(&p);
    skip_ws(&p);
    if (*p.s) fail(&p, "unexpected text");
    return p.failed;
}

/* A scan, not a parse: a name followed by '(' is a function. */
void expr_names(const char *text, void (*fn)(const char *name, size_t len, void *ctx), void *ctx) {
    for (const char *s = text; s && *s;) {
        if (isdigit((unsigned char)*s)) {   /* a number, not a name */
            while (isalnum((unsigned char)*s)) s++;
            continue;
        }
        if (!isalpha((unsigned char)*s) && *s != '_') {
            s++;
            continue;
        }
        const char *id = s;
        while (isalnum((unsigned char)*s) || *s == '_') s++;
        const char *after = s;
        while (isspace((unsigned char)*after)) after++;
        if (*after != '(') fn(id, (size_t)(s - id), ctx);
    }
}
