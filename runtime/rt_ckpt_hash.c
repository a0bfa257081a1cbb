/* rt_ckpt_hash.c - the data checksum of format v2 checkpoints: XXH3-64 (seed 0).
 *
 * xxHash comes from Debian's libxxhash-dev, compiled in (XXH_INLINE_ALL): the header
 * carries the whole implementation, so kiln gains no shared library to map at start
 * and the compiler sees the loop it vectorises (AVX2/SSE2; tens of GB/s, memory speed).
 * It is not a cryptographic hash and is not meant to be one: docs/checkpoint-format.md
 * section 4 says why a checksum is the right tool here.
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

void rtp_ckpt_hash_update(rtp_ckpt_hash *h, const void *buf, size_t len)
{
    if (len) XXH3_64bits_update((XXH3_state_t *)h, buf, len);
}

uint64_t rtp_ckpt_hash_digest(const rtp_ckpt_hash *h)
{
    return XXH3_64bits_digest((const XXH3_state_t *)h);
}

void rtp_ckpt_hash_destroy(rtp_ckpt_hash *h) { XXH3_freeState((XXH3_state_t *)h); }

uint64_t rtp_ckpt_xxh3(const void *buf, size_t len) { return XXH3_64bits(buf, len); }

void rtp_ckpt_xxh3_hex(uint64_t h, char out[17])
{
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}
