/* mg_session.c - per-engine key/value slots where magics keep state between cells
 * (models, data sets, the last run), each with its own destructor. A small array:
 * a session holds a handful of slots. */
#include <stdlib.h>
#include <string.h>

#include "mg.h"

typedef struct slot {
    char *key;
    void *ptr;
    void (*destroy)(void *);
} slot;

struct mg_session {
    slot *v;
    size_t n, cap;
};

mg_session *mg_session_create(void) { return calloc(1, sizeof(mg_session)); }

void mg_session_destroy(mg_session *s)
{
    if (!s) return;
    /* newest first, so later state that refers to earlier state goes first */
    for (size_t i = s->n; i-- > 0;) {
        if (s->v[i].destroy && s->v[i].ptr) s->v[i].destroy(s->v[i].ptr);
        free(s->v[i].key);
    }
    free(s->v);
    free(s);
}

void *mg_session_get(mg_session *s, const char *key)
{
    for (size_t i = 0; s && key && i < s->n; i++)
        if (!strcmp(s->v[i].key, key)) return s->v[i].ptr;
    return NULL;
}

int mg_session_set(mg_session *s, const char *key, void *ptr, void (*destroy)(void *))
{
    if (!s || !key) {
        if (destroy && ptr) destroy(ptr);
        return -1;
    }
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->v[i].key, key)) {
            void *old = s->v[i].ptr;
            void (*old_destroy)(void *) = s->v[i].destroy;
            s->v[i].ptr = ptr;
            s->v[i].destroy = destroy;
            if (old && old != ptr && old_destroy) old_destroy(old);
            return 0;
        }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 8;
        slot *v = realloc(s->v, cap * sizeof *v);
        if (!v) {
            if (destroy && ptr) destroy(ptr);
            return -1;
        }
        s->v = v;
        s->cap = cap;
    }
    char *k = strdup(key);
    if (!k) {
        if (destroy && ptr) destroy(ptr);
        return -1;
    }
    s->v[s->n++] = (slot){k, ptr, destroy};
    return 0;
}
