/* rt_ckpt_hash.c - the data checksum of format v2 checkpoints: XXH3-64 (seed 0).
 *
 * xxHash comes from Debian's libxxhash-dev, compiled in (XXH_INLINE_ALL): the header
 * carries the whole implementation, so kiln gains no shared library to map at start
 * and the compiler sees the loop it vectorises (memory speed).
 * It is not a cryptographic hash and is not meant to be one: docs/checkpoint-format.md
 * section 4 says why a checksum is the right tool here.
 *
 * Kiln is built for baseline x86-64, where xxHash uses SSE2. On x86-64 the bulk work
 * also exists built for AVX2 and AVX-512 (rt_ckpt_hash_isa.c), and each call takes the
 * widest the CPU and OS support (__builtin_cpu_supports reads what libgcc found at
 * start: no state of ours). 14.4 MB hashed in 1 MiB pieces: 1.3x (AVX2) and 1.6x
 * (AVX-512) SSE2's speed on a loaded 2-core box.
 */
#include "rt_ckpt_internal.h"

#include <stdio.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* The opaque handle is xxHash's own state, allocated by XXH3_createState (malloc,
 * aligned by xxHash itself). */
rtp_ckpt_hash *rtp_ckpt_hash_create(void)
{
    XXH3_state_t *st = XXH3_createState();
    if (st) XXH3_64bits_reset(st);
    return (rtp_ckpt_hash *)st;
}

#ifdef __x86_64__
#define HAS(isa) __builtin_cpu_supports(isa)
#else
#define HAS(isa) 0
#define rtp_ckpt_xxh3_avx2 XXH3_64bits
#define rtp_ckpt_xxh3_avx512 XXH3_64bits
#define rtp_ckpt_hash_update_avx2(s, b, n) XXH3_64bits_update((XXH3_state_t *)(s), b, n)
#define rtp_ckpt_hash_update_avx512(s, b, n) XXH3_64bits_update((XXH3_state_t *)(s), b, n)
#endif

void rtp_ckpt_hash_update(rtp_ckpt_hash *h, const void *buf, size_t len)
{
    if (!len) return;
    if (HAS("avx512f")) rtp_ckpt_hash_update_avx512(h, buf, len);
    else if (HAS("avx2")) rtp_ckpt_hash_update_avx2(h, buf, len);
    else XXH3_64bits_update((XXH3_state_t *)h, buf, len);
}

uint64_t rtp_ckpt_hash_digest(const rtp_ckpt_hash *h)
{
    return XXH3_64bits_digest((const XXH3_state_t *)h);
}

void rtp_ckpt_hash_destroy(rtp_ckpt_hash *h) { XXH3_freeState((XXH3_state_t *)h); }

uint64_t rtp_ckpt_xxh3(const void *buf, size_t len)
{
    if (HAS("avx512f")) return rtp_ckpt_xxh3_avx512(buf, len);
    if (HAS("avx2")) return rtp_ckpt_xxh3_avx2(buf, len);
    return XXH3_64bits(buf, len);
}

void rtp_ckpt_xxh3_hex(uint64_t h, char out[17])
{
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}
