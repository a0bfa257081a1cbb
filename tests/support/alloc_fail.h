/* alloc_fail.h - allocation-failure injection for the allocation sweeps (after jansson's
 * test_chaos.c): fail the n-th allocation, for every n, and check each run ends in a
 * clean error and frees what it took.
 *
 * A sweep's executable links alloc_fail_dep (tests/meson.build), which adds
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free,--wrap=strdup,--wrap=strndup
 * so every allocation of the code linked into it (Kiln's static libraries and the test)
 * comes here. Shared libraries are routed by hand: jansson with
 * json_set_alloc_funcs(__wrap_malloc or alloc_fail_json_malloc, __wrap_free), OpenSSL
 * with alloc_fail_route_crypto(). Works under ASan and valgrind (__real_malloc is
 * theirs). */
#ifndef ALLOC_FAIL_H
#define ALLOC_FAIL_H

#include <stddef.h>

/* While alloc_fail_at >= 0, allocations are counted in alloc_count and the
 * alloc_fail_at-th one (from 0) returns NULL. alloc_live is the number of blocks
 * allocated here and not yet freed. */
extern long alloc_count, alloc_fail_at, alloc_live;

/* The next n-th allocation fails (from 0), or none with n = -1; alloc_count restarts. */
void alloc_fail_arm(long n);
/* 1 when the armed allocation was reached (the run met its injected failure). */
int alloc_fail_reached(void);

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

/* jansson's allocator for sweeps that parse JSON text (json_set_alloc_funcs(
 * alloc_fail_json_malloc, __wrap_free)). It injects like __wrap_malloc except into the
 * growth of jansson's string buffers (power-of-two sizes from 32): jansson 2.14's lexer
 * ignores a failed strbuffer_append, drops that byte and, when the byte followed a
 * backslash, hits assert(0) in lex_scan_string (an abort, not an error). Checkpoint
 * headers hold escaped JSON strings, so whether a sweep met it depended on where a
 * doubling fell. A library bug we cannot handle from outside; every other jansson
 * allocation still fails in turn. */
void *alloc_fail_json_malloc(size_t n);

/* Routes OpenSSL's allocations here (CRYPTO_set_mem_functions). Call before anything
 * uses OpenSSL; 0 on success, -1 when OpenSSL has already allocated. */
int alloc_fail_route_crypto(void);

#endif
