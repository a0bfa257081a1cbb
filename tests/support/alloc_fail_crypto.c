/* alloc_fail_crypto.c - OpenSSL's allocations through alloc_fail.h's counters (its own
 * file, so only the sweeps that call it link libcrypto for it). */
#include <openssl/crypto.h>

#include "alloc_fail.h"

static void *alloc_fail_crypto_malloc(size_t n, const char *file, int line)
{
    (void)file, (void)line;
    return __wrap_malloc(n);
}

static void *alloc_fail_crypto_realloc(void *p, size_t n, const char *file, int line)
{
    (void)file, (void)line;
    return __wrap_realloc(p, n);
}

static void alloc_fail_crypto_free(void *p, const char *file, int line)
{
    (void)file, (void)line;
    __wrap_free(p);
}

int alloc_fail_route_crypto(void)
{
    return CRYPTO_set_mem_functions(alloc_fail_crypto_malloc, alloc_fail_crypto_realloc,
                                    alloc_fail_crypto_free)
               ? 0
               : -1;
}
