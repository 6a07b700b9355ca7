/* The strict JSON reader: values, exact 64-bit integers, escapes, and the
 * refusals with their line:column. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "json.h"

/* text must parse; returns the tree (or NULL after a FAIL line) */
static Json *ok(const char *name, const char *text)
{
    Json *j;
    char err[256];
    if (json_parse(text, &j, err, sizeof err)) { check(0, name, "refused: %s", err); return NULL; }
    return j;
}

/* text must be refused with a message containing want */
static void refused(const char *name, const char *text, const char *want)
{
    Json *j;
    char err[256];
    if (!json_parse(text, &j, err, sizeof err)) { json_free(j); check(0, name, "accepted"); return; }
    check(strstr(err, want) != NULL, name, "message '%s' lacks '%s'", err, want);
}

static void values(void)
{
    Json *j = ok("json: a record-like object", "{\n \"a\": [1, -2, 3.5e2, true, false, null],\n \"s\": \"x\\\"\\\\\\/\\n\\u00e9\\ud83d\\ude00\",\n \"o\": {}}");
    if (!j) return;
    const Json *a = json_get(j, "a"), *s = json_get(j, "s");
    int64_t v;
    check(a && a->kind == JSON_ARR && a->n == 6 && a->item[2].num == 350 && !a->item[2].integral && a->item[3].boolean &&
              a->item[5].kind == JSON_NULL && !json_i64(&a->item[1], &v) && v == -2,
          "json: array elements and kinds", "got %d elements", a ? a->n : -1);
    check(s && !strcmp(s->str, "x\"\\/\n\xc3\xa9\xf0\x9f\x98\x80"), "json: escapes and a surrogate pair become UTF-8", "got '%s'",
          s ? s->str : "(none)");
    check(a && a->line == 2 && a->col == 7 && json_get(j, "o")->line == 4, "json: values carry their line:column", "a at %d:%d",
          a ? a->line : 0, a ? a->col : 0);
    check(!json_get(j, "nosuch") && !json_get(a, "a"), "json: json_get of a missing key or a non-object is NULL", "found");
    json_free(j);
}

static void integers(void)
{
    Json *j = ok("json: 64-bit extremes", "[18446744073709551615, -9223372036854775808, 9223372036854775807, 18446744073709551616, 1.0]");
    if (!j) return;
    uint64_t u;
    int64_t i;
    check(!json_u64(&j->item[0], &u) && u == UINT64_MAX && json_i64(&j->item[0], &i), "json: u64 max exact, not an i64", "u %llu",
          (unsigned long long)u);
    check(!json_i64(&j->item[1], &i) && i == INT64_MIN && json_u64(&j->item[1], &u), "json: i64 min exact, not a u64", "i %lld",
          (long long)i);
    check(!json_i64(&j->item[2], &i) && i == INT64_MAX, "json: i64 max exact", "i %lld", (long long)i);
    check(json_u64(&j->item[3], &u) && j->item[3].num > 1.8e19, "json: 2^64 is a double, not an integer", "accepted");
    check(json_i64(&j->item[4], &i), "json: 1.0 is not an integer (written with a fraction)", "accepted");
    json_free(j);
}

static void refusals(void)
{
    refused("json refuses a trailing comma (line:col)", "{\"a\": 1,\n \"b\": [1, 2,]}", "line 2:13: trailing ',' before ']'");
    refused("json refuses leading zeros", "[007]", "line 1:2: a number may not have leading zeros");
    refused("json refuses a duplicate member", "{\"a\": 1, \"a\": 2}", "duplicate member \"a\"");
    refused("json refuses an unterminated string", "{\"a\": \"abc", "unterminated string");
    refused("json refuses a raw newline in a string", "[\"a\nb\"]", "control character 0x0A");
    refused("json refuses text after the value", "{} x", "line 1:4: unexpected 'x' after the value");
    refused("json refuses an empty text", "  ", "expected a value, found the end of the text");
    refused("json refuses single quotes", "{'a': 1}", "expected a member name in quotes, found '''");
    refused("json refuses an unknown literal", "[nul]", "unknown literal");
    refused("json refuses NaN", "[NaN]", "expected a value, found 'N'");
    refused("json refuses a missing colon", "{\"a\" 1}", "expected ':' after a member name");
    refused("json refuses a lone low surrogate", "[\"\\udc00\"]", "low surrogate");
    refused("json refuses \\u0000", "[\"\\u0000\"]", "\\u0000 is not allowed");
    refused("json refuses a bad escape", "[\"\\x\"]", "unknown escape '\\x'");
    refused("json refuses a number without digits", "[-]", "a number needs digits after '-'");
    refused("json refuses an exponent without digits", "[1e]", "digits in its exponent");
    refused("json refuses an overflowing number", "[1e999]", "out of range");
    char deep[200];
    memset(deep, '[', 100);
    deep[100] = 0;
    refused("json refuses nesting deeper than JSON_MAX_DEPTH", deep, "nesting deeper than 64 levels");
}

/* An object of many members (the duplicate check once took n^2 / 2 name comparisons: 200k members, a minute):
 * every name found, and a repeat of one far back refused. */
static void wide_object(void)
{
    enum { N = 100000 };
    char *text = malloc((size_t)N * 24 + 64);
    if (!text) { check(0, "json: an object of 100000 members", "out of host memory"); return; }
    size_t at = 0;
    text[at++] = '{';
    for (int i = 0; i < N; i++) at += (size_t)sprintf(text + at, "%s\"k%d\": %d", i ? ", " : "", i, i);
    strcpy(text + at, "}");
    Json *j = ok("json: an object of 100000 members", text);
    if (j) {
        const Json *last = json_get(j, "k99999"), *first = json_get(j, "k0");
        check(j->n == N && last && last->num == N - 1 && first && first->num == 0,
              "json: an object of 100000 members, each name found", "n %d", j->n);
        json_free(j);
    }
    sprintf(text + at, ", \"k17\": 0}");
    refused("json refuses a duplicate of the 18th of 100000 members", text, "duplicate member \"k17\"");
    free(text);
}

int main(void)
{
    values();
    integers();
    refusals();
    wide_object();
    return check_summary();
}
