/* A growable text buffer: the only way emitted text is accumulated. */
#ifndef PTXGEN_BUF_H
#define PTXGEN_BUF_H
#include <stddef.h>

/* oom: memory ran out; later writes are dropped and buf_take gives NULL (the caller reports it) */
typedef struct { char *s; size_t len, cap; int oom; } Buf;

void buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_puts(Buf *b, const char *s);
void buf_append(Buf *b, const Buf *src);
char *buf_take(Buf *b);   /* hands the text to the caller and empties b; NULL when memory ran out (b->oom) */
void buf_free(Buf *b);
/* A whole file as one NUL-terminated string (malloc'd) and its length (a
 * file may hold NUL bytes: callers that parse text refuse those); NULL with
 * errno set by the failing call when it cannot be read. */
char *buf_read_file(const char *path, size_t *len);
#endif
