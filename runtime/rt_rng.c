/* rt_rng.c - Philox4x32-10 (Salmon et al., SC'11; Random123) and the draws built on it.
 *
 * Two generators of the same bits: rt_philox4x32_10() for one block (scalar draws) and
 * philox_blocks() that computes many blocks in struct-of-arrays form so the compiler
 * vectorises the 32x32->64 multiplies (pmuludq). Bulk fills split the word range into
 * fixed chunks and run them with OpenMP; each chunk depends only on its word offset,
 * so the result is the same for every thread count and equals the scalar draws.
 */
#include "rt_rng.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u /* golden ratio */
#define PHILOX_W1 0xBB67AE85u /* sqrt(3) - 1 */
#define PHILOX_ROUNDS 10

#define LANES 16            /* blocks computed together (vector width friendly) */
#define CHUNK_WORDS 1024    /* words per OpenMP work item (4 KiB of stack) */
#define PAR_MIN_WORDS 32768 /* below this, threads cost more than they save */

static const double TWO_M24 = 1.0 / 16777216.0; /* 2^-24 */
static const float TWO_M24F = 1.0f / 16777216.0f;
static const float TWO_PI_F = 6.28318530717958647692f;

/* ---- the bijection ---- */

void rt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int round = 0; round < PHILOX_ROUNDS; round++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* Blocks b0 .. b0+nb-1 of stream (key, stream) into out[4*nb]. */
/* The AVX2 clone is chosen at load time (ifunc); integer arithmetic, so every clone
 * produces the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define RNG_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define RNG_CLONES
#endif

RNG_CLONES
static void philox_blocks(const uint32_t key[2], const uint32_t stream[2], uint64_t b0, size_t nb,
                          uint32_t *out)
{
    for (size_t i0 = 0; i0 < nb; i0 += LANES) {
        uint32_t c0[LANES], c1[LANES], c2[LANES], c3[LANES];
        for (int l = 0; l < LANES; l++) {
            uint64_t b = b0 + i0 + (uint64_t)l;
            c0[l] = (uint32_t)b;
            c1[l] = (uint32_t)(b >> 32);
            c2[l] = stream[0];
            c3[l] = stream[1];
        }
        uint32_t k0 = key[0], k1 = key[1];
        for (int round = 0; round < PHILOX_ROUNDS; round++) {
            /* high and low halves written separately: GCC vectorises this form
             * (mult-highpart pattern), not a 64-bit product split afterwards; omp simd
             * keeps the lane loop from being fully unrolled before vectorisation */
#pragma omp simd
            for (int l = 0; l < LANES; l++) {
                uint32_t a = c0[l], b = c2[l];
                uint32_t hi0 = (uint32_t)(((uint64_t)a * PHILOX_M0) >> 32);
                uint32_t hi1 = (uint32_t)(((uint64_t)b * PHILOX_M1) >> 32);
                uint32_t n0 = hi1 ^ c1[l] ^ k0;
                uint32_t n2 = hi0 ^ c3[l] ^ k1;
                c1[l] = b * PHILOX_M1;
                c3[l] = a * PHILOX_M0;
                c0[l] = n0;
                c2[l] = n2;
            }
            k0 += PHILOX_W0;
            k1 += PHILOX_W1;
        }
        size_t m = nb - i0 < LANES ? nb - i0 : LANES;
        for (size_t l = 0; l < m; l++) {
            uint32_t *o = out + 4 * (i0 + l);
            o[0] = c0[l];
            o[1] = c1[l];
            o[2] = c2[l];
            o[3] = c3[l];
        }
    }
}

/* Words [word0, word0+nw) of the stream; scratch holds nw + 8 words. Returns a
 * pointer into scratch. */
static const uint32_t *words_range(const rt_rng *r, uint64_t word0, size_t nw, uint32_t *scratch)
{
    uint64_t b0 = word0 / 4;
    uint64_t b1 = (word0 + nw + 3) / 4;
    philox_blocks(r->key, r->stream, b0, (size_t)(b1 - b0), scratch);
    return scratch + (word0 % 4);
}

/* ---- streams ---- */

void rt_rng_init(rt_rng *r, uint64_t seed, rt_rng_purpose purpose, uint32_t a, uint32_t b)
{
    memset(r, 0, sizeof *r);
    r->key[0] = (uint32_t)seed;
    r->key[1] = (uint32_t)(seed >> 32);
    r->stream[0] = a;
    r->stream[1] = ((uint32_t)purpose & 0xffu) << 24 | (b & 0xffffffu);
}

rt_rng rt_rng_stream(uint64_t seed, rt_rng_purpose purpose, uint32_t a, uint32_t b)
{
    rt_rng r;
    rt_rng_init(&r, seed, purpose, a, b);
    return r;
}

/* ---- scalar draws ---- */

uint32_t rt_rng_u32(rt_rng *r)
{
    uint64_t block = r->word / 4;
    if (!r->cache_valid || r->cached_block != block) {
        uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), r->stream[0], r->stream[1]};
        rt_philox4x32_10(ctr, r->key, r->cache);
        r->cached_block = block;
        r->cache_valid = 1;
    }
    return r->cache[r->word++ % 4];
}

static inline float to_uniform(uint32_t x) { return (float)((x >> 8) * TWO_M24); }

/* Box-Muller on words x1, x2: z0 = r cos(theta), z1 = r sin(theta), in float. */
static inline void box_muller(uint32_t x1, uint32_t x2, float *z0, float *z1)
{
    float u1 = (float)((x1 >> 8) + 1u) * TWO_M24F; /* (0, 1]: log is finite */
    float u2 = (float)(x2 >> 8) * TWO_M24F;
    float rad = sqrtf(-2.0f * logf(u1));
    float theta = TWO_PI_F * u2;
    *z0 = rad * cosf(theta);
    *z1 = rad * sinf(theta);
}

/* keep iff (x >> 8) < threshold, equal to uniform < p for every p */
static inline uint32_t bernoulli_threshold(float p)
{
    if (!(p > 0.0f)) return 0;
    if (p >= 1.0f) return 1u << 24;
    return (uint32_t)ceil((double)p * 16777216.0);
}

float rt_rng_uniform(rt_rng *r) { return to_uniform(rt_rng_u32(r)); }

float rt_rng_uniform_range(rt_rng *r, float lo, float hi)
{
    return lo + (hi - lo) * rt_rng_uniform(r);
}

void rt_rng_normal2(rt_rng *r, float *z0, float *z1)
{
    uint32_t x1 = rt_rng_u32(r);
    uint32_t x2 = rt_rng_u32(r);
    box_muller(x1, x2, z0, z1);
}

float rt_rng_normal(rt_rng *r)
{
    float z0, z1;
    rt_rng_normal2(r, &z0, &z1);
    return z0;
}

int rt_rng_bernoulli(rt_rng *r, float p) { return (rt_rng_u32(r) >> 8) < bernoulli_threshold(p); }

uint32_t rt_rng_below(rt_rng *r, uint32_t n)
{
    if (n <= 1) return 0;
    uint64_t m = (uint64_t)rt_rng_u32(r) * n;
    uint32_t low = (uint32_t)m;
    if (low < n) {
        uint32_t t = (uint32_t)(-n) % n; /* 2^32 mod n: the biased low values */
        while (low < t) {
            m = (uint64_t)rt_rng_u32(r) * n;
            low = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

/* ---- bulk fills ----
 * Chunk c covers elements [c*CHUNK_WORDS, ...) and starts at word c*CHUNK_WORDS:
 * uniform and bernoulli use one word per element, normal one word per element in
 * pairs (2 words -> 2 values; an odd last element still uses a whole pair), and
 * CHUNK_WORDS is even, so chunks never split a pair. */

typedef enum { FILL_UNIFORM, FILL_NORMAL, FILL_BERNOULLI } fill_kind;

typedef struct {
    fill_kind kind;
    float a, b;         /* uniform: lo, hi; normal: mean, std; bernoulli: -, value */
    uint32_t threshold; /* bernoulli */
} fill_desc;

static size_t words_for(fill_kind kind, size_t m)
{
    return kind == FILL_NORMAL ? (m + 1) / 2 * 2 : m;
}

static void fill_chunk(const rt_rng *r, const fill_desc *d, uint64_t word0, float *out, size_t m)
{
    uint32_t scratch[CHUNK_WORDS + 8];
    const uint32_t *x = words_range(r, word0, words_for(d->kind, m), scratch);
    const float a = d->a, b = d->b;
    const uint32_t t = d->threshold;
    switch (d->kind) {
    case FILL_UNIFORM:
        for (size_t i = 0; i < m; i++) out[i] = a + (b - a) * to_uniform(x[i]);
        break;
    case FILL_NORMAL:
        for (size_t i = 0; i < m; i += 2) {
            float z0, z1;
            box_muller(x[i], x[i + 1], &z0, &z1);
            out[i] = a + b * z0;
            if (i + 1 < m) out[i + 1] = a + b * z1;
        }
        break;
    case FILL_BERNOULLI: {
        /* branch-free bit select (value or +0): a data-dependent branch
             * mispredicts half the time */
        uint32_t vb, *o = (uint32_t *)out;
        memcpy(&vb, &b, sizeof vb);
        for (size_t i = 0; i < m; i++) o[i] = (0u - (uint32_t)((x[i] >> 8) < t)) & vb;
        break;
    }
    }
}

static void fill(rt_rng *r, const fill_desc *d, float *out, size_t n)
{
    size_t nchunks = (n + CHUNK_WORDS - 1) / CHUNK_WORDS;
    uint64_t word0 = r->word;
    const rt_rng *rc = r;
#pragma omp parallel for schedule(static) if (n >= PAR_MIN_WORDS)
    for (size_t c = 0; c < nchunks; c++) {
        size_t e0 = c * CHUNK_WORDS;
        size_t m = n - e0 < CHUNK_WORDS ? n - e0 : CHUNK_WORDS;
        fill_chunk(rc, d, word0 + (uint64_t)e0, out + e0, m);
    }
    r->word += (uint64_t)words_for(d->kind, n);
}

void rt_rng_fill_uniform(rt_rng *r, float *out, size_t n, float lo, float hi)
{
    fill_desc d = {FILL_UNIFORM, lo, hi, 0};
    fill(r, &d, out, n);
}

void rt_rng_fill_normal(rt_rng *r, float *out, size_t n, float mean, float std)
{
    fill_desc d = {FILL_NORMAL, mean, std, 0};
    fill(r, &d, out, n);
}

void rt_rng_fill_bernoulli(rt_rng *r, float *out, size_t n, float p_keep, float value)
{
    fill_desc d = {FILL_BERNOULLI, 0.0f, value, bernoulli_threshold(p_keep)};
    fill(r, &d, out, n);
}

void rt_rng_permutation(rt_rng *r, uint32_t *perm, size_t n)
{
    for (size_t i = 0; i < n; i++) perm[i] = (uint32_t)i;
    for (size_t i = n; i > 1; i--) {
        uint32_t j = rt_rng_below(r, (uint32_t)i);
        uint32_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
}

/* ---- state ---- */

rt_rng_state rt_rng_get_state(const rt_rng *r)
{
    rt_rng_state s;
    s.seed = (uint64_t)r->key[0] | (uint64_t)r->key[1] << 32;
    s.stream = (uint64_t)r->stream[0] | (uint64_t)r->stream[1] << 32;
    s.word = r->word;
    return s;
}

void rt_rng_set_state(rt_rng *r, rt_rng_state s)
{
    memset(r, 0, sizeof *r);
    r->key[0] = (uint32_t)s.seed;
    r->key[1] = (uint32_t)(s.seed >> 32);
    r->stream[0] = (uint32_t)s.stream;
    r->stream[1] = (uint32_t)(s.stream >> 32);
    r->word = s.word;
}

static const char STATE_PREFIX[] = "philox4x32-10:";

void rt_rng_state_format(rt_rng_state s, char buf[RT_RNG_STATE_STRLEN])
{
    snprintf(buf, RT_RNG_STATE_STRLEN, "%s%016llx:%016llx:%016llx", STATE_PREFIX,
             (unsigned long long)s.seed, (unsigned long long)s.stream, (unsigned long long)s.word);
}

/* Exactly 16 hex digits at p; returns the end or NULL. */
static const char *parse_hex16(const char *p, uint64_t *v)
{
    uint64_t x = 0;
    for (int i = 0; i < 16; i++, p++) {
        int d;
        if (*p >= '0' && *p <= '9') d = *p - '0';
        else if (*p >= 'a' && *p <= 'f') d = *p - 'a' + 10;
        else if (*p >= 'A' && *p <= 'F') d = *p - 'A' + 10;
        else return NULL;
        x = x << 4 | (uint64_t)d;
    }
    *v = x;
    return p;
}

rt_status rt_rng_state_parse(rt_rng_state *out, const char *text, rt_error *err)
{
    const char *p = text;
    rt_rng_state s;
    uint64_t *fields[3] = {&s.seed, &s.stream, &s.word};
    if (!text || strncmp(text, STATE_PREFIX, sizeof STATE_PREFIX - 1) != 0) goto bad;
    p += sizeof STATE_PREFIX - 1;
    for (int i = 0; i < 3; i++) {
        if (i > 0 && *p++ != ':') goto bad;
        p = parse_hex16(p, fields[i]);
        if (!p) goto bad;
    }
    if (*p != '\0') goto bad;
    *out = s;
    return RT_OK;
bad:
    return RT_ERR(err, RT_EFORMAT,
                  "RNG state \"%.80s\" is not of the form "
                  "philox4x32-10:<16 hex>:<16 hex>:<16 hex>",
                  text ? text : "(null)");
}
