/* alloc_fail.c - the --wrap allocator of alloc_fail.h. */
#include "alloc_fail.h"

#include <string.h>

long alloc_count, alloc_fail_at = -1, alloc_live;

static int alloc_fail_inject(void) { return alloc_fail_at >= 0 && alloc_count++ == alloc_fail_at; }

void alloc_fail_arm(long n)
{
    alloc_count = 0;
    alloc_fail_at = n;
}

int alloc_fail_reached(void) { return alloc_fail_at >= 0 && alloc_count > alloc_fail_at; }

void *__wrap_malloc(size_t n)
{
    void *p = alloc_fail_inject() ? NULL : __real_malloc(n);
    alloc_live += p != NULL;
    return p;
}

void *__wrap_calloc(size_t a, size_t b)
{
    void *p = alloc_fail_inject() ? NULL : __real_calloc(a, b);
    alloc_live += p != NULL;
    return p;
}

void *__wrap_realloc(void *p, size_t n)
{
    if (alloc_fail_inject()) return NULL;
    void *q = __real_realloc(p, n);
    alloc_live += q != NULL && p == NULL;
    return q;
}

void __wrap_free(void *p)
{
    alloc_live -= p != NULL;
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

void *alloc_fail_json_malloc(size_t n)
{
    if (n >= 32 && (n & (n - 1)) == 0) {
        void *p = __real_malloc(n);
        alloc_live += p != NULL;
        return p;
    }
    return __wrap_malloc(n);
}
