/* test_rng.c - Philox4x32-10 known answers and the properties training relies on:
 * independent streams, bulk == scalar draws, permutations, save/restore. */
#include <stdint.h>
#include <stdlib.h>

#include "rt_rng.h"
#include "t.h"

/* Random123 kat_vectors, "philox4x32 10" lines: counter (4 words), key (2), expected. */
static const uint32_t KAT[3][10] = {
    {0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x6627e8d5, 0xe169c58d,
     0xbc57ac4c, 0x9b00dbd8},
    {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e,
     0xa20bc7c6, 0x6d5451fd},
    {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb,
     0x5001e420, 0x24126ea1},
};

T_TEST(test_kat)
{
    for (int v = 0; v < 3; v++) {
        uint32_t out[4];
        rt_philox4x32_10(KAT[v], KAT[v] + 4, out);
        for (int i = 0; i < 4; i++) ASSERT_EQ(out[i], KAT[v][6 + i]);
    }
}

/* The stream API lays the counter out as documented: word j = lane j%4 of block j/4. */
T_TEST(test_stream_layout)
{
    uint64_t seed = 0x299f31d0a4093822ull;
    rt_rng r = rt_rng_stream(seed, RT_RNG_USER, 0x13198a2e, 0x707344);
    uint32_t key[2] = {0xa4093822, 0x299f31d0};
    for (uint64_t b = 0; b < 3; b++) {
        uint32_t ctr[4] = {(uint32_t)b, 0, 0x13198a2e, (uint32_t)RT_RNG_USER << 24 | 0x707344};
        uint32_t out[4];
        rt_philox4x32_10(ctr, key, out);
        for (int i = 0; i < 4; i++) ASSERT_EQ(rt_rng_u32(&r), out[i]);
    }
}

static int count_equal(const uint32_t *a, const uint32_t *b, int n)
{
    int eq = 0;
    for (int i = 0; i < n; i++) eq += a[i] == b[i];
    return eq;
}

T_TEST(test_streams_independent)
{
    enum { N = 256 };
    rt_rng gens[6] = {
        rt_rng_stream(1, RT_RNG_DROPOUT, 5, 0), rt_rng_stream(1, RT_RNG_DROPOUT, 5, 1),
        rt_rng_stream(1, RT_RNG_DROPOUT, 6, 0), rt_rng_stream(1, RT_RNG_INIT, 5, 0),
        rt_rng_stream(2, RT_RNG_DROPOUT, 5, 0), rt_rng_stream(1ull << 32, RT_RNG_DROPOUT, 5, 0),
    };
    static uint32_t out[6][N];
    for (int g = 0; g < 6; g++)
        for (int i = 0; i < N; i++) out[g][i] = rt_rng_u32(&gens[g]);
    for (int g = 0; g < 6; g++)
        for (int h = g + 1; h < 6; h++) {
            /* equal words by chance: expected 256 / 2^32 */
            if (count_equal(out[g], out[h], N) > 1) T_FAIL_("streams %d and %d overlap", g, h);
        }
    /* same arguments -> the same stream */
    rt_rng again = rt_rng_stream(1, RT_RNG_DROPOUT, 5, 1);
    for (int i = 0; i < N; i++) ASSERT_EQ(rt_rng_u32(&again), out[1][i]);
}

T_TEST(test_uniform_range_and_mean)
{
    rt_rng r = rt_rng_stream(42, RT_RNG_USER, 0, 0);
    double sum = 0;
    enum { N = 100000 };
    for (int i = 0; i < N; i++) {
        float u = rt_rng_uniform(&r);
        ASSERT(u >= 0.0f && u < 1.0f);
        sum += u;
    }
    ASSERT_NEAR(sum / N, 0.5, 0.005); /* std of the mean is 0.29/sqrt(1e5) = 0.0009 */
    for (int i = 0; i < 1000; i++) {
        float v = rt_rng_uniform_range(&r, -3.0f, 2.0f);
        ASSERT(v >= -3.0f && v <= 2.0f);
    }
}

T_TEST(test_normal_moments)
{
    enum { N = 200000 };
    float *x = malloc(N * sizeof *x);
    ASSERT(x);
    rt_rng r = rt_rng_stream(7, RT_RNG_USER, 0, 0);
    rt_rng_fill_normal(&r, x, N, 1.0f, 2.0f);
    double s = 0, s2 = 0;
    for (int i = 0; i < N; i++) {
        s += x[i];
        s2 += (double)x[i] * x[i];
    }
    double mean = s / N, var = s2 / N - mean * mean;
    free(x);
    ASSERT_NEAR(mean, 1.0, 0.03); /* std of the mean: 2/sqrt(2e5) = 0.0045 */
    ASSERT_NEAR(var, 4.0, 0.08);  /* std of the variance: 4*sqrt(2/2e5) = 0.013 */
}

/* Bulk fills equal the scalar draws, from an unaligned start, across chunk and
 * OpenMP thresholds, and leave the generator at the same position. */
T_TEST(test_bulk_equals_scalar)
{
    size_t sizes[] = {1, 3, 17, 1025, 70001};
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        size_t n = sizes[si];
        float *bulk = malloc(n * sizeof *bulk);
        ASSERT(bulk);
        for (int kind = 0; kind < 3; kind++) {
            rt_rng a = rt_rng_stream(99, RT_RNG_USER, (uint32_t)kind, 1);
            rt_rng_u32(&a); /* start at word 1, mid-block */
            rt_rng b = a;
            if (kind == 0) rt_rng_fill_uniform(&a, bulk, n, -0.5f, 0.25f);
            if (kind == 1) rt_rng_fill_normal(&a, bulk, n, 0.1f, 3.0f);
            if (kind == 2) rt_rng_fill_bernoulli(&a, bulk, n, 0.75f, -4.0f / 3.0f);
            float z1 = 0;
            for (size_t i = 0; i < n; i++) {
                float s = 0, z0;
                if (kind == 0) s = rt_rng_uniform_range(&b, -0.5f, 0.25f);
                if (kind == 1 && i % 2 == 0 && i + 1 < n) {
                    rt_rng_normal2(&b, &z0, &z1);
                    s = 0.1f + 3.0f * z0;
                }
                if (kind == 1 && i % 2 == 1) s = 0.1f + 3.0f * z1;
                if (kind == 1 && i % 2 == 0 && i + 1 == n) s = 0.1f + 3.0f * rt_rng_normal(&b);
                if (kind == 2) s = rt_rng_bernoulli(&b, 0.75f) ? -4.0f / 3.0f : 0.0f;
                if (memcmp(&s, &bulk[i], sizeof s) != 0) { /* bitwise, +0 vs -0 too */
                    float got = bulk[i];
                    free(bulk);
                    T_FAIL_("kind %d n %zu: element %zu bulk %.9g scalar %.9g", kind, n, i, got, s);
                }
            }
            ASSERT_EQ(rt_rng_u32(&a), rt_rng_u32(&b));
        }
        free(bulk);
    }
}

T_TEST(test_bernoulli_edges_and_rate)
{
    enum { N = 100000 };
    float *m = malloc(N * sizeof *m);
    ASSERT(m);
    rt_rng r = rt_rng_stream(3, RT_RNG_DROPOUT, 0, 0);
    rt_rng_fill_bernoulli(&r, m, N, 0.0f, 1.0f);
    int kept = 0;
    for (int i = 0; i < N; i++) kept += m[i] != 0.0f;
    ASSERT_EQ(kept, 0);
    rt_rng_fill_bernoulli(&r, m, N, 1.0f, 2.0f);
    kept = 0;
    for (int i = 0; i < N; i++) kept += m[i] == 2.0f;
    ASSERT_EQ(kept, N);
    rt_rng_fill_bernoulli(&r, m, N, 0.3f, 1.0f);
    kept = 0;
    for (int i = 0; i < N; i++) kept += m[i] == 1.0f;
    free(m);
    ASSERT_NEAR(kept / (double)N, 0.3, 0.006); /* std: sqrt(.21/1e5) = 0.0014 */
}

T_TEST(test_permutation)
{
    size_t sizes[] = {0, 1, 2, 10, 60000};
    for (size_t si = 0; si < 5; si++) {
        size_t n = sizes[si];
        uint32_t *p = malloc((n + 1) * sizeof *p);
        unsigned char *seen = calloc(n + 1, 1);
        ASSERT(p && seen);
        rt_rng r = rt_rng_stream(5, RT_RNG_SHUFFLE, 0, 0);
        rt_rng_permutation(&r, p, n);
        int bad = 0, fixed = 0;
        for (size_t i = 0; i < n; i++) {
            if (p[i] >= n || seen[p[i]]) bad = 1;
            else seen[p[i]] = 1;
            fixed += p[i] == i;
        }
        free(p);
        free(seen);
        ASSERT(!bad);
        if (n == 60000) ASSERT(fixed < 10); /* expected number of fixed points is 1 */
    }
    /* all 6 permutations of 3 elements appear, roughly equally often */
    int counts[6] = {0};
    rt_rng r = rt_rng_stream(6, RT_RNG_SHUFFLE, 0, 0);
    for (int t = 0; t < 6000; t++) {
        uint32_t p[3];
        rt_rng_permutation(&r, p, 3);
        counts[p[0] * 2 + (p[1] > p[2])]++;
    }
    for (int i = 0; i < 6; i++) ASSERT(counts[i] > 850 && counts[i] < 1150);
}

T_TEST(test_below_unbiased_bounds)
{
    rt_rng r = rt_rng_stream(8, RT_RNG_USER, 0, 0);
    ASSERT_EQ(rt_rng_below(&r, 1), 0);
    ASSERT_EQ(rt_rng_below(&r, 0), 0);
    uint32_t n = 3000000000u; /* large n: rejection zone is large */
    for (int i = 0; i < 1000; i++) ASSERT(rt_rng_below(&r, n) < n);
    int c[7] = {0};
    for (int i = 0; i < 70000; i++) c[rt_rng_below(&r, 7)]++;
    for (int i = 0; i < 7; i++) ASSERT(c[i] > 9500 && c[i] < 10500);
}

T_TEST(test_state_roundtrip)
{
    rt_rng r = rt_rng_stream(0xdeadbeefcafef00dull, RT_RNG_AUGMENT, 12, 34);
    for (int i = 0; i < 7; i++) rt_rng_u32(&r);
    rt_rng_state s = rt_rng_get_state(&r);
    char text[RT_RNG_STATE_STRLEN];
    rt_rng_state_format(s, text);
    ASSERT_STR_CONTAINS(text, "philox4x32-10:deadbeefcafef00d:");

    uint32_t expect[10];
    for (int i = 0; i < 10; i++) expect[i] = rt_rng_u32(&r);

    rt_rng_state parsed;
    rt_error err;
    ASSERT_EQ(rt_rng_state_parse(&parsed, text, &err), RT_OK);
    rt_rng q;
    rt_rng_set_state(&q, parsed);
    for (int i = 0; i < 10; i++) ASSERT_EQ(rt_rng_u32(&q), expect[i]);

    /* bad input is refused with a message, the output untouched */
    const char *bad[] = {"",
                         "philox4x32-10:",
                         "mt19937:0000000000000000:0:0",
                         "philox4x32-10:deadbeefcafef00d:0000000000000000:000000000000000",
                         "philox4x32-10:deadbeefcafef00d:0000000000000000:00000000000000zz",
                         "philox4x32-10:deadbeefcafef00d:0000000000000000:0000000000000000x"};
    for (int i = 0; i < 6; i++) {
        rt_rng_state keep = parsed;
        ASSERT_EQ(rt_rng_state_parse(&parsed, bad[i], &err), RT_EFORMAT);
        ASSERT_STR_CONTAINS(err.msg, "philox4x32-10:<16 hex>");
        ASSERT_EQ(parsed.word, keep.word);
    }
}

int main(void)
{
    T_RUN(test_kat);
    T_RUN(test_stream_layout);
    T_RUN(test_streams_independent);
    T_RUN(test_uniform_range_and_mean);
    T_RUN(test_normal_moments);
    T_RUN(test_bulk_equals_scalar);
    T_RUN(test_bernoulli_edges_and_rate);
    T_RUN(test_permutation);
    T_RUN(test_below_unbiased_bounds);
    T_RUN(test_state_roundtrip);
    return T_EXIT();
}
