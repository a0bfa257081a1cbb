/* cpu_amx_tiles.c - the AMX kernels' shared pieces (cpu_amx_tiles.h): the permission
 * request, tile configuration, AVX-512 fp32 -> bf16 conversion and a one-thread tiled
 * GEMM (blocks of 2 x 2 tiles: 32 x 32 outputs, TDPBF16PS over K in steps of 32), and
 * the weight gradients' sum of their group partials.
 */
#include <immintrin.h>
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cpu_amx_tiles.h"
#include "cpu_conv_amx.h"

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

int rtp_cpu_amx_enable(void)
{
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
}

typedef struct tilecfg {
    uint8_t palette, start;
    uint8_t res[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tilecfg;

void rtp_amx_config(const uint8_t rows[8], const uint16_t colsb[8])
{
    tilecfg c;
    memset(&c, 0, sizeof c);
    c.palette = 1;
    for (int i = 0; i < 8; i++) c.rows[i] = rows[i], c.colsb[i] = colsb[i];
    /* the configuration escapes: GCC does not count LDTILECFG as reading all 64 bytes
     * and dropped the stores above */
    __asm__ volatile("" : : "r"(&c) : "memory");
    _tile_loadconfig(&c);
}

void rtp_amx_config_full(void)
{
    const uint8_t rows[8] = {16, 16, 16, 16, 16, 16, 16, 16};
    const uint16_t colsb[8] = {64, 64, 64, 64, 64, 64, 64, 64};
    rtp_amx_config(rows, colsb);
}

/* 16 fp32 bit patterns -> their bf16 bits in the low halves (rtp_bf16_bits' rule) */
static inline __m512i round16(__m512i v)
{
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(v, 16), _mm512_set1_epi32(1));
    const __m512i r = _mm512_srli_epi32(
        _mm512_add_epi32(v, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(
        _mm512_and_si512(v, _mm512_set1_epi32(0x7FFFFFFF)), _mm512_set1_epi32(0x7F800000));
    return _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(v, 16), _mm512_set1_epi32(0x40));
}

void rtp_amx_bf16_row(uint16_t *o, const float *x, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm256_storeu_si256((__m256i *)(o + i),
                            _mm512_cvtepi32_epi16(round16(_mm512_loadu_si512(x + i))));
    if (i < n) {
        const __mmask16 m = (__mmask16)((1u << (n - i)) - 1u);
        _mm512_mask_cvtepi32_storeu_epi16(o + i, m, round16(_mm512_maskz_loadu_epi32(m, x + i)));
    }
}

void rtp_amx_bf16_pairs(uint32_t *o, const float *a, const float *b, size_t n)
{
    size_t i = 0;
    for (; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
        __m512i v = round16(_mm512_maskz_loadu_epi32(m, a + i));
        if (b)
            v = _mm512_or_si512(v,
                                _mm512_slli_epi32(round16(_mm512_maskz_loadu_epi32(m, b + i)), 16));
        _mm512_mask_storeu_epi32(o + i, m, v);
    }
}

/* the bit patterns of x[0], x[2], ..., x[2(m - 1)] (m <= 16; 0 past them): two loads that
 * read no further than x[2m - 2], and one permutation */
static inline __m512i evens(const float *x, size_t m)
{
    const size_t n = 2 * m - 1; /* the values to read */
    const __mmask16 lo = n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1u);
    const __mmask16 hi = n >= 32  ? (__mmask16)0xFFFF
                         : n > 16 ? (__mmask16)((1u << (n - 16)) - 1u)
                                  : (__mmask16)0;
    const __m512i idx = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    return _mm512_permutex2var_epi32(_mm512_maskz_loadu_epi32(lo, x), idx,
                                     _mm512_maskz_loadu_epi32(hi, x + 16));
}

void rtp_amx_bf16_row_s2(uint16_t *o, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i += 16) {
        const size_t m = n - i < 16 ? n - i : 16;
        const __mmask16 k = m == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << m) - 1u);
        _mm512_mask_cvtepi32_storeu_epi16(o + i, k, round16(evens(x + 2 * i, m)));
    }
}

void rtp_amx_bf16_pairs_s2(uint32_t *o, const float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i += 16) {
        const size_t m = n - i < 16 ? n - i : 16;
        const __mmask16 k = m == 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << m) - 1u);
        __m512i v = round16(evens(a + 2 * i, m));
        if (b) v = _mm512_or_si512(v, _mm512_slli_epi32(round16(evens(b + 2 * i, m)), 16));
        _mm512_mask_storeu_epi32(o + i, k, v);
    }
}

/* r[c] <- column c of the 16 x 16 words in r[0..15] (rows): pairs of rows interleaved,
 * then pairs of pairs, then the 128-bit lanes gathered */
static inline void transpose16(__m512i r[16])
{
    __m512i t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    /* r[4i + c], lane L: rows 4i..4i+3 of column 4L + c */
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    for (int c = 0; c < 4; c++) {
        const __m512i lo01 = _mm512_shuffle_i32x4(r[c], r[4 + c], 0x44),
                      lo23 = _mm512_shuffle_i32x4(r[8 + c], r[12 + c], 0x44),
                      hi01 = _mm512_shuffle_i32x4(r[c], r[4 + c], 0xEE),
                      hi23 = _mm512_shuffle_i32x4(r[8 + c], r[12 + c], 0xEE);
        t[c] = _mm512_shuffle_i32x4(lo01, lo23, 0x88);
        t[4 + c] = _mm512_shuffle_i32x4(lo01, lo23, 0xDD);
        t[8 + c] = _mm512_shuffle_i32x4(hi01, hi23, 0x88);
        t[12 + c] = _mm512_shuffle_i32x4(hi01, hi23, 0xDD);
    }
    for (int i = 0; i < 16; i++) r[i] = t[i];
}

void rtp_amx_transpose32(uint32_t *o, size_t ldo, const uint32_t *x, size_t ldx, int K, size_t J)
{
    __m512i r[16];
    for (int k0 = 0; k0 < K; k0 += 16) {
        const int kn = K - k0 < 16 ? K - k0 : 16;
        const __mmask16 km = (__mmask16)((1u << kn) - 1u);
        for (size_t j0 = 0; j0 < J; j0 += 16) {
            const size_t jn = J - j0 < 16 ? J - j0 : 16;
            const __mmask16 jm = (__mmask16)((1u << jn) - 1u);
            for (int k = 0; k < 16; k++)
                r[k] = k < kn ? _mm512_maskz_loadu_epi32(jm, x + (size_t)(k0 + k) * ldx + j0)
                              : _mm512_setzero_si512();
            transpose16(r);
            for (size_t j = 0; j < jn; j++)
                _mm512_mask_storeu_epi32(o + (j0 + j) * ldo + k0, km, r[j]);
        }
    }
}

/* one block of (two_m + 1) x (two_n + 1) tiles at A, B, C */
static inline __attribute__((always_inline)) void block(const uint16_t *A, size_t lda,
                                                        const uint32_t *B, size_t ldb, float *C,
                                                        size_t ldc, size_t K, int two_m, int two_n,
                                                        int acc)
{
    const size_t as = lda * 2, bs = ldb * 4, cs = ldc * 4;
    if (acc) {
        _tile_loadd(0, C, cs);
        if (two_n) _tile_loadd(1, C + 16, cs);
        if (two_m) _tile_loadd(2, C + 16 * ldc, cs);
        if (two_m && two_n) _tile_loadd(3, C + 16 * ldc + 16, cs);
    } else {
        _tile_zero(0);
        if (two_n) _tile_zero(1);
        if (two_m) _tile_zero(2);
        if (two_m && two_n) _tile_zero(3);
    }
    for (size_t k = 0; k < K; k += 32) {
        const uint16_t *a = A + k;
        const uint32_t *b = B + k / 2 * ldb;
        _tile_loadd(4, a, as);
        _tile_loadd(6, b, bs);
        if (two_n) _tile_loadd(7, b + 16, bs);
        if (two_m) _tile_loadd(5, a + 16 * lda, as);
        _tile_dpbf16ps(0, 4, 6);
        if (two_n) _tile_dpbf16ps(1, 4, 7);
        if (two_m) _tile_dpbf16ps(2, 5, 6);
        if (two_m && two_n) _tile_dpbf16ps(3, 5, 7);
    }
    _tile_stored(0, C, cs);
    if (two_n) _tile_stored(1, C + 16, cs);
    if (two_m) _tile_stored(2, C + 16 * ldc, cs);
    if (two_m && two_n) _tile_stored(3, C + 16 * ldc + 16, cs);
}

/* a row of the partials at a time: reading them down a column cost more than the
 * products on small planes */
void rtp_amx_group_sums(float *dw, const float *accs, size_t accsz, int G, size_t rows, size_t ld,
                        int K, float *sum)
{
#pragma omp for schedule(static)
    for (size_t r = 0; r < rows; r++) {
        memcpy(sum, accs + r * ld, (size_t)K * sizeof *sum);
        for (int gi = 1; gi < G; gi++) {
            const float *a = accs + accsz * (size_t)gi + r * ld;
            for (int k = 0; k < K; k++) sum[k] += a[k];
        }
        for (int k = 0; k < K; k++) dw[(size_t)k * rows + r] = sum[k];
    }
}

void rtp_amx_gemm(const uint16_t *A, size_t lda, const uint32_t *B, size_t ldb, float *C,
                  size_t ldc, size_t M, size_t N, size_t K, int acc)
{
    for (size_t m = 0; m < M; m += 32)
        for (size_t n = 0; n < N; n += 32) {
            const uint16_t *a = A + m * lda;
            const uint32_t *b = B + n;
            float *c = C + m * ldc + n;
            const int tm = m + 32 <= M, tn = n + 32 <= N;
            if (tm && tn) block(a, lda, b, ldb, c, ldc, K, 1, 1, acc);
            else if (tm) block(a, lda, b, ldb, c, ldc, K, 1, 0, acc);
            else if (tn) block(a, lda, b, ldb, c, ldc, K, 0, 1, acc);
            else block(a, lda, b, ldb, c, ldc, K, 0, 0, acc);
        }
}
