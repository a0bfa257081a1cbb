/* rt_ckpt_hash_isa.c - XXH3-64's bulk work (one-shot hash and streaming update) built
 * for one wider x86-64 vector unit: runtime/meson.build compiles this file once per
 * instruction set with RTP_HASH_ISA set to its name (avx2, avx512) and the matching
 * -m flags, so xxHash's header picks that vector code (XXH_VECTOR follows the compiler's
 * target). rt_ckpt_hash.c calls a variant only on a CPU (and OS) that supports it; the
 * hash is the same on every path, only its speed differs. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "rt_ckpt_internal.h"

#define RTP_CAT2(a, b) a##_##b
#define RTP_CAT(a, b) RTP_CAT2(a, b)

uint64_t RTP_CAT(rtp_ckpt_xxh3, RTP_HASH_ISA)(const void *buf, size_t len)
{
    return XXH3_64bits(buf, len);
}

void RTP_CAT(rtp_ckpt_hash_update, RTP_HASH_ISA)(void *state, const void *buf, size_t len)
{
    XXH3_64bits_update((XXH3_state_t *)state, buf, len);
}
