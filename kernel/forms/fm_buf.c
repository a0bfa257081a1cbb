/* fm_buf.c - a growable NUL-terminated string for building text, HTML and reprs.
 * An allocation failure is remembered (oom) and every later call is a no-op, so
 * callers check once, at fm_buf_take(). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fm_internal.h"

void fm_buf_add(fm_buf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->n + n + 1) {
            if (cap > ((size_t)-1) / 2) {
                b->oom = 1;
                return;
            }
            cap *= 2;
        }
        char *ns = realloc(b->s, cap);
        if (!ns) {
            b->oom = 1;
            return;
        }
        b->s = ns;
        b->cap = cap;
    }
    if (n) memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}

void fm_buf_puts(fm_buf *b, const char *s) { fm_buf_add(b, s, strlen(s)); }

void fm_buf_printf(fm_buf *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (len < 0) {
        b->oom = 1;
        return;
    }
    if ((size_t)len < sizeof small) {
        fm_buf_add(b, small, (size_t)len);
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
    fm_buf_add(b, big, (size_t)len);
    free(big);
}

char *fm_buf_take(fm_buf *b)
{
    if (!b->oom && !b->s) fm_buf_add(b, "", 0);
    if (b->oom) {
        free(b->s);
        b->s = NULL;
        b->n = b->cap = 0;
        return NULL;
    }
    char *s = b->s;
    b->s = NULL;
    b->n = b->cap = 0;
    return s;
}
