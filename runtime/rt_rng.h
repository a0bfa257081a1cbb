/* rt_rng.h - counter-based random numbers (Philox4x32-10) for init, shuffling,
 * dropout and augmentation.
 *
 * Philox is a keyed bijection of a 128-bit counter: output block = philox(counter, key).
 * A generator is therefore just integers: key = the 64-bit seed, the stream id (the
 * upper 64 counter bits, derived from (purpose, a, b)) and how many 32-bit words have
 * been consumed. Any position of any stream can be recomputed directly, so:
 *   - checkpoints store a few integers and resume continues bit for bit;
 *   - streams for different purposes never overlap (init does not shift dropout);
 *   - bulk fills are parallel (OpenMP over blocks) yet equal the scalar draws,
 *     whatever the thread count, and a CUDA kernel can produce the same bits.
 *
 * Stream layout of the counter (c0..c3, Random123 word order):
 *   c0,c1 = block index (64 bits), c2 = a, c3 = purpose << 24 | (b & 0xffffff).
 * Word j of a stream is lane j%4 of block j/4.
 *
 * Conversions (the contract a CUDA mirror must follow):
 *   uniform   u = (x >> 8) * 2^-24                      in [0, 1), one word
 *   normal    pairs: words x1, x2 -> z0 = rad cos(theta), z1 = rad sin(theta),
 *             rad = sqrtf(-2 logf(u1)), theta = 2 pi u2, u1 = ((x1 >> 8) + 1) * 2^-24
 *             in (0, 1], u2 = (x2 >> 8) * 2^-24, all in float
 *   bernoulli keep iff (x >> 8) < ceil(p * 2^24)   (== uniform < p exactly), one word
 * Not cryptographic. No allocation, no global state; an rt_rng is plain data
 * (copy it to fork a position).
 */
#ifndef RT_RNG_H
#define RT_RNG_H

#include <stddef.h>
#include <stdint.h>

#include "rt_error.h"

/* What a stream is for; part of the stream id (8 bits). */
typedef enum {
    RT_RNG_INIT = 1,    /* parameter init: a = layer index, b = parameter index */
    RT_RNG_SHUFFLE = 2, /* data order: a = epoch */
    RT_RNG_DROPOUT = 3, /* dropout masks: a = step, b = layer index */
    RT_RNG_AUGMENT = 4, /* augmentation: a = epoch, b = 0; sample i at word 4*i */
    RT_RNG_SPLIT = 5,   /* data set splits / sampling for display */
    RT_RNG_USER = 6     /* anything else (tests, benchmarks) */
} rt_rng_purpose;

typedef struct rt_rng {
    uint32_t key[2];    /* the seed: key[0] = low word, key[1] = high word */
    uint32_t stream[2]; /* counter words c2, c3 */
    uint64_t word;      /* 32-bit words consumed so far */
    /* cache of block word/4 (derived, not state) */
    uint64_t cached_block;
    uint32_t cache[4];
    int cache_valid;
} rt_rng;

/* The raw Philox4x32-10 bijection: out = philox(ctr, key). */
void rt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]);

/* Positions r at word 0 of stream (seed, purpose, a, b). b is masked to 24 bits. */
void rt_rng_init(rt_rng *r, uint64_t seed, rt_rng_purpose purpose, uint32_t a, uint32_t b);
/* The same, returned by value: rt_rng g = rt_rng_stream(seed, RT_RNG_DROPOUT, step, l); */
rt_rng rt_rng_stream(uint64_t seed, rt_rng_purpose purpose, uint32_t a, uint32_t b);

/* ---- scalar draws (each advances the stream by the words noted) ---- */
uint32_t rt_rng_u32(rt_rng *r);                            /* 1 word */
float rt_rng_uniform(rt_rng *r);                           /* [0,1), 1 word */
float rt_rng_uniform_range(rt_rng *r, float lo, float hi); /* lo + (hi-lo)*u, 1 word */
void rt_rng_normal2(rt_rng *r, float *z0, float *z1);      /* 2 x N(0,1), 2 words */
float rt_rng_normal(rt_rng *r);                            /* z0 of normal2, 2 words */
int rt_rng_bernoulli(rt_rng *r, float p);                  /* 1 with probability p, 1 word */
/* Unbiased integer in [0, n), n >= 1 (Lemire's method; 1 word, more on rejection). */
uint32_t rt_rng_below(rt_rng *r, uint32_t n);

/* ---- bulk fills: identical to n consecutive scalar draws, OpenMP-parallel ---- */
void rt_rng_fill_uniform(rt_rng *r, float *out, size_t n, float lo, float hi);
/* out[i] = mean + std * z: out[2k], out[2k+1] = z0, z1 of the k-th rt_rng_normal2
 * (an odd last element is z0 of one more pair; 2*ceil(n/2) words in all) */
void rt_rng_fill_normal(rt_rng *r, float *out, size_t n, float mean, float std);
/* Dropout mask: out[i] = value if the draw keeps (probability p_keep) else 0.
 * With value = 1/p_keep this is the inverted-dropout scale (PyTorch's convention). */
void rt_rng_fill_bernoulli(rt_rng *r, float *out, size_t n, float p_keep, float value);
/* perm = a uniformly random permutation of 0..n-1 (Fisher-Yates, i = n-1 down to 1,
 * j = rt_rng_below(i+1)). n < 2^32. */
void rt_rng_permutation(rt_rng *r, uint32_t *perm, size_t n);

/* ---- state for checkpoints ----
 * The state is 3 integers: seed (key), stream id (c2 | c3 << 32) and words consumed. */
typedef struct rt_rng_state {
    uint64_t seed, stream, word;
} rt_rng_state;

rt_rng_state rt_rng_get_state(const rt_rng *r);
void rt_rng_set_state(rt_rng *r, rt_rng_state s);
/* Text form for checkpoint metadata: "philox4x32-10:<seed>:<stream>:<word>" with
 * 16-digit lowercase hex fields; buf needs RT_RNG_STATE_STRLEN bytes. */
#define RT_RNG_STATE_STRLEN 68
void rt_rng_state_format(rt_rng_state s, char buf[RT_RNG_STATE_STRLEN]);
/* Parses the text form; RT_EFORMAT with the offending text on bad input. */
RT_MUST_USE rt_status rt_rng_state_parse(rt_rng_state *out, const char *text, rt_error *err);

#endif
