/* A growable text buffer: the only way emitted text is accumulated. */
#ifndef PTXGEN_BUF_H
#define PTXGEN_BUF_H
#include <stddef.h>

typedef struct { char *s; size_t len, cap; } Buf;

void buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_puts(Buf *b, const char *s);
void buf_append(Buf *b, const Buf *src);
char *buf_take(Buf *b);   /* hands the text to the caller (never NULL) and empties b */
void buf_free(Buf *b);
#endif
