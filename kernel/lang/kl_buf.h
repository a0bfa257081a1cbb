/* kl_buf.h - a growable NUL-terminated string for building text, HTML and reprs: the one
 * the cell language and forms both use. An allocation failure is remembered (oom) and
 * every later call is a no-op, so callers check once, at the end (kl_buf_take, or oom).
 * Start from a zeroed kl_buf. */
#ifndef KL_BUF_H
#define KL_BUF_H

#include <stddef.h>

typedef struct kl_buf {
    char *s; /* NULL until the first add */
    size_t n, cap;
    int oom;
} kl_buf;

void kl_buf_add(kl_buf *b, const char *s, size_t n);
void kl_buf_puts(kl_buf *b, const char *s);
void kl_buf_printf(kl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The string (malloc'd, caller frees; "" when nothing was added), or NULL after an
 * allocation failure. b is empty afterwards. */
char *kl_buf_take(kl_buf *b);
/* Frees the string and empties b (an allocation failure stays remembered). */
void kl_buf_free(kl_buf *b);

#endif
