/* A small strict JSON reader (RFC 8259): the whole text becomes a tree of
 * values; anything else (trailing commas, comments, single quotes, leading
 * zeros, control characters in strings, duplicate keys, NaN, text after the
 * value, nesting deeper than JSON_MAX_DEPTH) is an error naming line:column.
 * Numbers keep their exact integer value when they are integers (64-bit,
 * signed or unsigned), because launch records carry addresses and sizes;
 * hex inside strings ("0x1000...") is the caller's business. */
#ifndef PTXGEN_JSON_H
#define PTXGEN_JSON_H
#include <stddef.h>
#include <stdint.h>

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUM, JSON_STR, JSON_ARR, JSON_OBJ } JsonKind;
enum { JSON_MAX_DEPTH = 64 };

typedef struct Json Json;
struct Json {
    JsonKind kind;
    int line, col;          /* where the value starts (1-based), for the callers' messages */
    int boolean;            /* JSON_BOOL */
    double num;             /* JSON_NUM, as a double */
    int integral;           /* JSON_NUM written without fraction or exponent and within 64 bits: */
    int negative;           /*   its exact value is (negative ? -mag : mag) */
    uint64_t mag;
    char *str;              /* JSON_STR: UTF-8, NUL-terminated (\u0000 is refused) */
    Json *item;             /* JSON_ARR elements / JSON_OBJ member values, n of them */
    char **key;             /* JSON_OBJ member names, in text order */
    int n;
};

/* Parses text; 0 and *out (free with json_free), or -1 and "line L:C: why" in err. */
int  json_parse(const char *text, Json **out, char *err, size_t errlen);
void json_free(Json *j);

const char *json_kind_name(JsonKind k);            /* "a number", "an object", ... for messages */
const Json *json_get(const Json *obj, const char *key);   /* member value, or NULL (also when obj is no object) */
/* Exact integer values: 0, or -1 when j is not an integer number in range. */
int json_i64(const Json *j, int64_t *v);
int json_u64(const Json *j, uint64_t *v);
#endif
