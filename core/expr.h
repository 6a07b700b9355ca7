/* Launch expressions over named problem sizes, as written in the manifest:
 * integers, names, + - * /, parentheses, cdiv(a,b), min(a,b), max(a,b). */
#ifndef PTXGEN_EXPR_H
#define PTXGEN_EXPR_H
#include <stddef.h>

typedef struct { const char *name; long long value; } ExprVar;

/* 0 on success; otherwise err names the problem (unknown name, syntax, division by zero). */
int expr_eval(const char *text, const ExprVar *vars, int nvars, long long *out, char *err, size_t errlen);
/* Calls fn for each size name text uses (not the function names cdiv, min, max). */
void expr_names(const char *text, void (*fn)(const char *name, size_t len, void *ctx), void *ctx);
#endif
