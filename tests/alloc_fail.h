/* alloc_fail.h - allocation-failure injection for the sweeps of
 * tests/checkpoint/test_ckpt_alloc.c and tests/resume/test_resume_alloc.c (after
 * jansson's test_chaos.c). The test executable is linked with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free,--wrap=strdup,--wrap=strndup
 * so the libraries' own allocations come here (jansson's via json_set_alloc_funcs).
 * While fail_at >= 0, allocations are counted in alloc_count and the fail_at-th one
 * (from 0) returns NULL; live is the number of blocks allocated and not yet freed.
 * Header-only, for one file of each test executable (the __wrap_ functions are the
 * link-time replacements and so cannot be static). */
#ifndef ALLOC_FAIL_H
#define ALLOC_FAIL_H

#include <stddef.h>
#include <string.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t a, size_t b);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t max);

static long alloc_count, fail_at = -1, live;

static int inject(void) { return fail_at >= 0 && alloc_count++ == fail_at; }

void *__wrap_malloc(size_t n)
{
    void *p = inject() ? NULL : __real_malloc(n);
    live += p != NULL;
    return p;
}

void *__wrap_calloc(size_t a, size_t b)
{
    void *p = inject() ? NULL : __real_calloc(a, b);
    live += p != NULL;
    return p;
}

void *__wrap_realloc(void *p, size_t n)
{
    if (inject()) return NULL;
    void *q = __real_realloc(p, n);
    live += q != NULL && p == NULL;
    return q;
}

void __wrap_free(void *p)
{
    live -= p != NULL;
    __real_free(p);
}

char *__wrap_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = __wrap_malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

char *__wrap_strndup(const char *s, size_t max)
{
    size_t n = strnlen(s, max);
    char *p = __wrap_malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

/* jansson's allocator for the sweeps (json_set_alloc_funcs(alloc_fail_json_malloc,
 * __wrap_free)). It injects like __wrap_malloc except into the growth of jansson's
 * string buffers (power-of-two sizes from 32): jansson 2.14's lexer ignores a failed
 * strbuffer_append, drops that byte and, when the byte followed a backslash, hits
 * assert(0) in lex_scan_string (an abort, not an error). Checkpoint headers hold
 * escaped JSON strings, so whether a sweep met it depended on where a doubling fell. A
 * library bug we cannot handle from outside; every other jansson allocation still
 * fails in turn. */
static void *alloc_fail_json_malloc(size_t n)
{
    if (n >= 32 && (n & (n - 1)) == 0) {
        void *p = __real_malloc(n);
        live += p != NULL;
        return p;
    }
    return __wrap_malloc(n);
}

#endif
