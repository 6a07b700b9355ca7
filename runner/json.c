/* Strict JSON reader: recursive descent over the text, one Json node per
 * value. Line and column are tracked in the whitespace skipper alone, since
 * raw newlines can appear nowhere else in valid JSON. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json.h"

typedef struct {
    const char *s;
    size_t pos, line_start;
    int line, depth;
    char *err;
    size_t errlen;
    int failed;
} P;

static int col_of(const P *p, size_t pos) { return (int)(pos - p->line_start) + 1; }

static int fail_at(P *p, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail_at(P *p, size_t pos, const char *fmt, ...)
{
    if (p->failed) return -1;
    p->failed = 1;
    int n = snprintf(p->err, p->errlen, "line %d:%d: ", p->line, col_of(p, pos));
    if (n >= 0 && (size_t)n < p->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* What stands at pos, for "expected X, found Y". */
static const char *found(const P *p, char *buf, size_t cap)
{
    unsigned char c = (unsigned char)p->s[p->pos];
    if (!c) return "the end of the text";
    if (c >= 0x20 && c < 0x7F) snprintf(buf, cap, "'%c'", c);
    else snprintf(buf, cap, "byte 0x%02X", c);
    return buf;
}

static void skip_ws(P *p)
{
    for (;;) {
        char c = p->s[p->pos];
        if (c == '\n') p->pos++, p->line++, p->line_start = p->pos;
        else if (c == ' ' || c == '\t' || c == '\r') p->pos++;
        else return;
    }
}

static int parse_value(P *p, Json *j);

static int literal(P *p, const char *word)
{
    size_t n = strlen(word);
    if (strncmp(p->s + p->pos, word, n)) return fail_at(p, p->pos, "unknown literal (true, false or null expected)");
    p->pos += n;
    return 0;
}

static int digits(P *p)   /* one or more */
{
    size_t start = p->pos;
    while (p->s[p->pos] >= '0' && p->s[p->pos] <= '9') p->pos++;
    return p->pos > start;
}

static int parse_number(P *p, Json *j)
{
    size_t start = p->pos;
    j->kind = JSON_NUM;
    j->negative = p->s[p->pos] == '-';
    if (j->negative) p->pos++;
    size_t int_start = p->pos;
    if (!digits(p)) return fail_at(p, p->pos, "a number needs digits after '-'");
    if (p->s[int_start] == '0' && p->pos - int_start > 1) return fail_at(p, int_start, "a number may not have leading zeros");
    size_t int_end = p->pos;
    int frac = 0;
    if (p->s[p->pos] == '.') {
        p->pos++, frac = 1;
        if (!digits(p)) return fail_at(p, p->pos, "a number needs digits after '.'");
    }
    if (p->s[p->pos] == 'e' || p->s[p->pos] == 'E') {
        p->pos++, frac = 1;
        if (p->s[p->pos] == '+' || p->s[p->pos] == '-') p->pos++;
        if (!digits(p)) return fail_at(p, p->pos, "a number needs digits in its exponent");
    }
    char buf[128];
    size_t len = p->pos - start;
    if (len >= sizeof buf) return fail_at(p, start, "a number of %zu characters is too long", len);
    memcpy(buf, p->s + start, len);
    buf[len] = 0;
    j->num = strtod(buf, NULL);
    if (!isfinite(j->num)) return fail_at(p, start, "the number %s is out of range", buf);
    j->integral = !frac;
    for (size_t i = int_start; j->integral && i < int_end; i++) {
        uint64_t d = (uint64_t)(p->s[i] - '0');
        if (j->mag > (UINT64_MAX - d) / 10) j->integral = 0;   /* beyond 64 bits: a double only */
        else j->mag = j->mag * 10 + d;
    }
    if (!j->integral) j->mag = 0, j->negative = j->num < 0;
    return 0;
}

static int hex4(P *p, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->s[p->pos];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return fail_at(p, p->pos, "\\u needs four hex digits");
        *v = *v * 16 + (unsigned)d;
        p->pos++;
    }
    return 0;
}

static void put_utf8(char *out, size_t *n, unsigned cp)
{
    if (cp < 0x80) out[(*n)++] = (char)cp;
    else if (cp < 0x800) out[(*n)++] = (char)(0xC0 | cp >> 6), out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    else if (cp < 0x10000)
        out[(*n)++] = (char)(0xE0 | cp >> 12), out[(*n)++] = (char)(0x80 | (cp >> 6 & 0x3F)), out[(*n)++] = (char)(0x80 | (cp & 0x3F));
    else
        out[(*n)++] = (char)(0xF0 | cp >> 18), out[(*n)++] = (char)(0x80 | (cp >> 12 & 0x3F)),
        out[(*n)++] = (char)(0x80 | (cp >> 6 & 0x3F)), out[(*n)++] = (char)(0x80 | (cp & 0x3F));
}

/* \uXXXX (the backslash and u consumed), a surrogate pair joined. */
static int unicode_escape(P *p, unsigned *cp)
{
    size_t at = p->pos - 2;
    if (hex4(p, cp)) return -1;
    if (*cp >= 0xDC00 && *cp <= 0xDFFF) return fail_at(p, at, "a low surrogate \\u%04X without a high one", *cp);
    if (*cp >= 0xD800 && *cp <= 0xDBFF) {
        unsigned lo;
        if (p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u') return fail_at(p, at, "a high surrogate \\u%04X without a low one", *cp);
        p->pos += 2;
        if (hex4(p, &lo)) return -1;
        if (lo < 0xDC00 || lo > 0xDFFF) return fail_at(p, at, "a high surrogate \\u%04X without a low one", *cp);
        *cp = 0x10000 + ((*cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    if (!*cp) return fail_at(p, at, "\\u0000 is not allowed (strings are NUL-terminated)");
    return 0;
}

/* A string at p->pos (the opening quote); the UTF-8 result is at most as long as the text. */
static int parse_string(P *p, char **out)
{
    size_t start = p->pos++, end = p->pos;
    while (p->s[end] && p->s[end] != '"') end += p->s[end] == '\\' && p->s[end + 1] ? 2 : 1;
    char *s = malloc(end - start + 1);
    size_t n = 0;
    if (!s) return fail_at(p, start, "out of memory");
    for (;;) {
        unsigned char c = (unsigned char)p->s[p->pos];
        if (!c) { free(s); return fail_at(p, start, "unterminated string"); }
        if (c == '"') break;
        if (c < 0x20) { free(s); return fail_at(p, p->pos, "control character 0x%02X inside a string", c); }
        p->pos++;
        if (c != '\\') { s[n++] = (char)c; continue; }
        char e = p->s[p->pos++];
        const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t", *k = e ? strchr(from, e) : NULL;
        if (k) { s[n++] = to[k - from]; continue; }
        unsigned cp;
        if (e != 'u') { free(s); return fail_at(p, p->pos - 2, "unknown escape '\\%c'", e ? e : '0'); }
        if (unicode_escape(p, &cp)) { free(s); return -1; }
        put_utf8(s, &n, cp);
    }
    p->pos++;
    s[n] = 0;
    *out = s;
    return 0;
}

/* Grows an array of count elements of size bytes by one (zeroed); NULL when out of memory. */
static void *grow(void *arr, int count, size_t size)
{
    char *a = realloc(arr, (size_t)(count + 1) * size);
    if (a) memset(a + (size_t)count * size, 0, size);
    return a;
}

static int parse_array(P *p, Json *j)
{
    j->kind = JSON_ARR;
    p->pos++;
    skip_ws(p);
    if (p->s[p->pos] == ']') { p->pos++; return 0; }
    for (;;) {
        Json *it = grow(j->item, j->n, sizeof *j->item);
        if (!it) return fail_at(p, p->pos, "out of memory");
        j->item = it;
        if (parse_value(p, &j->item[j->n++])) return -1;
        skip_ws(p);
        char c = p->s[p->pos], buf[16];
        if (c == ']') { p->pos++; return 0; }
        if (c != ',') return fail_at(p, p->pos, "expected ',' or ']' in an array, found %s", found(p, buf, sizeof buf));
        p->pos++;
        skip_ws(p);
        if (p->s[p->pos] == ']') return fail_at(p, p->pos, "trailing ',' before ']'");
    }
}

/* An object's member names so far, for the duplicate check: an open-addressed set of indices into j->key (-1 free),
 * kept under half full, so that an object of n members costs O(n), not n^2 / 2 comparisons. */
typedef struct { int *slot; size_t cap; } Names;

static size_t name_hash(const char *s)
{
    size_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Adds key i of j; 1 when an earlier member has its name, -1 out of memory. */
static int names_add(Names *nm, const Json *j, int i)
{
    if (2 * (size_t)(i + 1) > nm->cap) {   /* rehash into twice the slots */
        size_t cap = nm->cap ? 2 * nm->cap : 16;
        int *slot = malloc(cap * sizeof *slot);
        if (!slot) return -1;
        for (size_t s = 0; s < cap; s++) slot[s] = -1;
        for (size_t s = 0; s < nm->cap; s++)
            if (nm->slot[s] >= 0) {
                size_t h = name_hash(j->key[nm->slot[s]]) & (cap - 1);
                while (slot[h] >= 0) h = (h + 1) & (cap - 1);
                slot[h] = nm->slot[s];
            }
        free(nm->slot);
        nm->slot = slot, nm->cap = cap;
    }
    size_t h = name_hash(j->key[i]) & (nm->cap - 1);
    for (; nm->slot[h] >= 0; h = (h + 1) & (nm->cap - 1))
        if (!strcmp(j->key[nm->slot[h]], j->key[i])) return 1;
    nm->slot[h] = i;
    return 0;
}

static int parse_member(P *p, Json *j, Names *nm)
{
    char buf[16];
    size_t at = p->pos;
    if (p->s[p->pos] != '"') return fail_at(p, p->pos, "expected a member name in quotes, found %s", found(p, buf, sizeof buf));
    char **k = grow(j->key, j->n, sizeof *j->key);
    if (k) j->key = k;
    Json *it = k ? grow(j->item, j->n, sizeof *j->item) : NULL;
    if (!it) return fail_at(p, p->pos, "out of memory");
    j->item = it;
    if (parse_string(p, &j->key[j->n])) return -1;
    j->n++;   /* counted now, so json_free frees the name even if the value fails */
    int dup = names_add(nm, j, j->n - 1);
    if (dup < 0) return fail_at(p, at, "out of memory");
    if (dup) return fail_at(p, at, "duplicate member \"%s\"", j->key[j->n - 1]);
    skip_ws(p);
    if (p->s[p->pos] != ':') return fail_at(p, p->pos, "expected ':' after a member name, found %s", found(p, buf, sizeof buf));
    p->pos++;
    return parse_value(p, &j->item[j->n - 1]);
}

static int parse_object(P *p, Json *j)
{
    j->kind = JSON_OBJ;
    p->pos++;
    skip_ws(p);
    if (p->s[p->pos] == '}') { p->pos++; return 0; }
    Names nm = {NULL, 0};
    int rc;
    for (;;) {
        if ((rc = parse_member(p, j, &nm))) break;
        skip_ws(p);
        char c = p->s[p->pos], buf[16];
        if (c == '}') { p->pos++; break; }
        if (c != ',') { rc = fail_at(p, p->pos, "expected ',' or '}' in an object, found %s", found(p, buf, sizeof buf)); break; }
        p->pos++;
        skip_ws(p);
        if (p->s[p->pos] == '}') { rc = fail_at(p, p->pos, "trailing ',' before '}'"); break; }
    }
    free(nm.slot);
    return rc;
}

static int parse_value(P *p, Json *j)
{
    skip_ws(p);
    j->line = p->line, j->col = col_of(p, p->pos);
    if (p->depth >= JSON_MAX_DEPTH) return fail_at(p, p->pos, "nesting deeper than %d levels", JSON_MAX_DEPTH);
    char c = p->s[p->pos], buf[16];
    int rc;
    p->depth++;
    switch (c) {
    case '{': rc = parse_object(p, j); break;
    case '[': rc = parse_array(p, j); break;
    case '"': j->kind = JSON_STR; rc = parse_string(p, &j->str); break;
    case 't': j->kind = JSON_BOOL, j->boolean = 1; rc = literal(p, "true"); break;
    case 'f': j->kind = JSON_BOOL; rc = literal(p, "false"); break;
    case 'n': j->kind = JSON_NULL; rc = literal(p, "null"); break;
    default:
        if (c == '-' || (c >= '0' && c <= '9')) rc = parse_number(p, j);
        else rc = fail_at(p, p->pos, "expected a value, found %s", found(p, buf, sizeof buf));
    }
    p->depth--;
    return rc;
}

static void free_members(Json *j)
{
    for (int i = 0; i < j->n; i++) {
        if (j->item) free_members(&j->item[i]);
        if (j->key) free(j->key[i]);
    }
    free(j->item);
    free(j->key);
    free(j->str);
}

void json_free(Json *j)
{
    if (!j) return;
    free_members(j);
    free(j);
}

int json_parse(const char *text, Json **out, char *err, size_t errlen)
{
    P p = {.s = text, .line = 1, .err = err, .errlen = errlen};
    Json *j = calloc(1, sizeof *j);
    *out = NULL;
    if (!j) return snprintf(err, errlen, "out of memory"), -1;
    if (!parse_value(&p, j)) {
        skip_ws(&p);
        char buf[16];
        if (p.s[p.pos]) fail_at(&p, p.pos, "unexpected %s after the value", found(&p, buf, sizeof buf));
    }
    if (p.failed) { json_free(j); return -1; }
    *out = j;
    return 0;
}

const char *json_kind_name(JsonKind k)
{
    static const char *names[] = {"null", "a boolean", "a number", "a string", "an array", "an object"};
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

const Json *json_get(const Json *obj, const char *key)
{
    if (!obj || obj->kind != JSON_OBJ) return NULL;
    for (int i = 0; i < obj->n; i++)
        if (!strcmp(obj->key[i], key)) return &obj->item[i];
    return NULL;
}

int json_i64(const Json *j, int64_t *v)
{
    if (!j || j->kind != JSON_NUM || !j->integral) return -1;
    if (j->negative ? j->mag > (uint64_t)INT64_MAX + 1 : j->mag > (uint64_t)INT64_MAX) return -1;
    *v = j->negative ? (int64_t)(0 - j->mag) : (int64_t)j->mag;
    return 0;
}

int json_u64(const Json *j, uint64_t *v)
{
    if (!j || j->kind != JSON_NUM || !j->integral || (j->negative && j->mag)) return -1;
    *v = j->mag;
    return 0;
}
