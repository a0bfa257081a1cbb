/* test_ckpt_hash.c - the v2 data checksum gives the same XXH3-64 on every code path:
 * the one-shot and streaming hash as Kiln calls them (the widest vector unit the CPU
 * has) and, one by one, the AVX2 and AVX-512 builds (where this CPU runs them), all
 * equal to xxHash's baseline build compiled into this test, for lengths around xxHash's
 * internal block sizes and for updates in uneven pieces. A path this CPU cannot run
 * is reported as skipped. */
#include <stdint.h>
#include <stdlib.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "rt_ckpt_internal.h"
#include "t.h"

static const size_t lens[] = {0,
                              1,
                              3,
                              16,
                              17,
                              128,
                              129,
                              240,
                              241,
                              1023,
                              1024,
                              1025,
                              4103,
                              65536,
                              99991,
                              (size_t)1 << 20,
                              ((size_t)3 << 20) + 13};
#define NLENS (sizeof lens / sizeof *lens)
#define MAXLEN (((size_t)3 << 20) + 13)

static unsigned char *data(void)
{
    unsigned char *b = malloc(MAXLEN);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; b && i < MAXLEN; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        b[i] = (unsigned char)x;
    }
    return b;
}

typedef void (*update_fn)(void *state, const void *buf, size_t len);

static void kiln_update(void *state, const void *buf, size_t len)
{
    rtp_ckpt_hash_update(state, buf, len);
}

/* The streaming hash of b[0..len) through update in uneven pieces. */
static uint64_t streamed(update_fn update, const unsigned char *b, size_t len)
{
    rtp_ckpt_hash *h = rtp_ckpt_hash_create();
    if (!h) return 0;
    static const size_t pieces[] = {1, 63, 64, 257, 4096, 100003, (size_t)1 << 20};
    for (size_t off = 0, i = 0; off < len; i++) {
        size_t n = pieces[i % (sizeof pieces / sizeof *pieces)];
        if (n > len - off) n = len - off;
        update(h, b + off, n);
        off += n;
    }
    uint64_t d = rtp_ckpt_hash_digest(h);
    rtp_ckpt_hash_destroy(h);
    return d;
}

static void check(int *t_failed_, const char *isa, uint64_t (*oneshot)(const void *, size_t),
                  update_fn update)
{
    unsigned char *b = data();
    if (!b) T_FAIL_("out of memory");
    for (size_t i = 0; i < NLENS; i++) {
        uint64_t want = XXH3_64bits(b, lens[i]);
        if (oneshot(b, lens[i]) != want || streamed(update, b, lens[i]) != want) {
            free(b);
            T_FAIL_("%s: XXH3-64 of %zu bytes differs from xxHash's baseline build", isa, lens[i]);
        }
    }
    free(b);
}

T_TEST(kiln_paths_equal_baseline) { check(t_failed_, "rtp_ckpt_xxh3", rtp_ckpt_xxh3, kiln_update); }

#ifdef __x86_64__
T_TEST(avx2_equals_baseline)
{
    if (!__builtin_cpu_supports("avx2")) {
        printf("skip avx2_equals_baseline: this CPU has no AVX2\n");
        return;
    }
    check(t_failed_, "avx2", rtp_ckpt_xxh3_avx2, rtp_ckpt_hash_update_avx2);
}

T_TEST(avx512_equals_baseline)
{
    if (!__builtin_cpu_supports("avx512f")) {
        printf("skip avx512_equals_baseline: this CPU has no AVX-512\n");
        return;
    }
    check(t_failed_, "avx512", rtp_ckpt_xxh3_avx512, rtp_ckpt_hash_update_avx512);
}
#endif

int main(void)
{
    T_RUN(kiln_paths_equal_baseline);
#ifdef __x86_64__
    T_RUN(avx2_equals_baseline);
    T_RUN(avx512_equals_baseline);
#endif
    return T_EXIT();
}
