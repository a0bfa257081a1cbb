/* kl_buf.c - the growable string of kl_buf.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kl_buf.h"

void kl_buf_add(kl_buf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (n > ((size_t)-1) / 2 - b->n) {
        b->oom = 1;
        return;
    }
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->s, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    if (n) memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}

void kl_buf_puts(kl_buf *b, const char *s) { kl_buf_add(b, s, strlen(s)); }

void kl_buf_printf(kl_buf *b, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (len < 0) {
        b->oom = 1;
        return;
    }
    if ((size_t)len < sizeof small) {
        kl_buf_add(b, small, (size_t)len);
        return;
    }
    char *big = malloc((size_t)len + 1);
    if (!big) {
        b->oom = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)len + 1, fmt, ap);
    va_end(ap);
    kl_buf_add(b, big, (size_t)len);
    free(big);
}

char *kl_buf_take(kl_buf *b)
{
    if (!b->oom && !b->s) kl_buf_add(b, "", 0);
    char *s = b->oom ? NULL : b->s;
    if (!s) free(b->s);
    b->s = NULL;
    b->n = b->cap = 0;
    b->oom = 0;
    return s;
}

void kl_buf_free(kl_buf *b)
{
    free(b->s);
    b->s = NULL;
    b->n = b->cap = 0;
}
