#include "buf.h"
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* 0 when extra more bytes fit; else b->oom, and the write is dropped */
static int buf_reserve(Buf *b, size_t extra) {
    if (b->oom) return -1;
    if (b->len + extra + 1 <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra + 1) cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) { b->oom = 1; return -1; }
    b->s = s;
    b->cap = cap;
    return 0;
}

void buf_printf(Buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || buf_reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void buf_puts(Buf *b, const char *s) {
    size_t n = strlen(s);
    if (buf_reserve(b, n)) return;
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
}

void buf_append(Buf *b, const Buf *src) {
    b->oom |= src->oom;   /* a part that lost text makes the whole incomplete */
    if (src->len) buf_puts(b, src->s);
}

char *buf_take(Buf *b) {
    if (!b->s && !buf_reserve(b, 0)) b->s[0] = 0;
    char *s = b->oom ? NULL : b->s;
    if (b->oom) free(b->s);
    *b = (Buf){0};
    return s;
}

void buf_free(Buf *b) {
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

char *buf_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    struct stat st;
    int unstated = fstat(fileno(f), &st);
    if (unstated || !S_ISREG(st.st_mode)) {   /* a directory opens, and its size reads as no file's */
        int why = unstated ? errno : S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        fclose(f);
        errno = why;
        return NULL;
    }
    char *s = NULL;
    long n = fseek(f, 0, SEEK_END) ? -1 : ftell(f);
    if (n >= 0 && !fseek(f, 0, SEEK_SET) && (s = malloc((size_t)n + 1)) && fread(s, 1, (size_t)n, f) == (size_t)n) s[n] = 0;
    else free(s), s = NULL;
    fclose(f);
    if (s && len) *len = (size_t)n;
    return s;
}
