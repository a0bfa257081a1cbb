/* kl_arena.c - a bump arena that holds one cell's tokens, AST and decoded strings and is
 * freed in one go (no recursive frees of deep ASTs). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kl_internal.h"

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
