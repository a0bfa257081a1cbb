/* kl_util.c - the engine's two small memory helpers: a growable byte buffer (which
 * remembers an allocation failure instead of crashing, so callers check once at the
 * end) and a bump arena that holds one cell's tokens, AST and decoded strings and is
 * freed in one go (no recursive frees of deep ASTs). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kl_internal.h"

void klp_buf_add(klp_buf *b, const char *s, size_t n)
{
    if (b->oom) return;
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
    b->s[b->n] = 0;
}

void klp_buf_puts(klp_buf *b, const char *s) { klp_buf_add(b, s, strlen(s)); }

void klp_buf_printf(klp_buf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0) return;
    if ((size_t)k < sizeof tmp) {
        klp_buf_add(b, tmp, (size_t)k);
        return;
    }
    char *big = malloc((size_t)k + 1);
    if (!big) {
        b->oom = 1;
        return;
    }
    va_start(ap, fmt);
    vsnprintf(big, (size_t)k + 1, fmt, ap);
    va_end(ap);
    klp_buf_add(b, big, (size_t)k);
    free(big);
}

void klp_buf_free(klp_buf *b)
{
    free(b->s);
    b->s = NULL;
    b->n = b->cap = 0;
}

/* ---- arena ---- */

typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    _Alignas(max_align_t) unsigned char data[];
} chunk;

struct klp_arena {
    chunk *head;
};

klp_arena *klp_arena_create(void) { return calloc(1, sizeof(klp_arena)); }

void klp_arena_destroy(klp_arena *a)
{
    if (!a) return;
    for (chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(a);
}

void *klp_arena_alloc(klp_arena *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    chunk *c = a->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > 65536 ? n : 65536;
        c = malloc(sizeof(chunk) + cap);
        if (!c) return NULL;
        c->next = a->head;
        c->used = 0;
        c->cap = cap;
        a->head = c;
    }
    void *p = c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}
