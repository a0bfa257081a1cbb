/* cpu_dp_gemm.c - the bf16 GEMM on VDPBF16PS and the packing into bf16 pairs (cpu_dp.h).
 *
 * Register blocking as in the fp32 AVX-512 loops: a tile of up to 4 rows of A by 4
 * vectors (64 columns) of B keeps 16 fp32 accumulators in registers; each step loads
 * 4 vectors of B pairs, broadcasts one pair word of A per row and issues 16 VDPBF16PS.
 * The pairs are summed in blocks of KC (the B block, KC x 64 words, stays in L1), each
 * block added to C in order, so an output's sum order is fixed.
 * Packing rounds with VCVTNE2PS2BF16 (nearest even) and interleaves two rows' bf16
 * into pair words with one VPERMW.
 */
#include <immintrin.h>
#include <string.h>

#include "cpu_dp.h"

#define KC 128 /* pairs per block */

typedef void tile_fn(float *C, size_t ldc, const uint32_t *A, size_t lda, const uint32_t *B,
                     size_t ldb, const int *off, int taps, int k2, int acc, __mmask16 last);

/* C (mr x 16nr) (+)= sum over taps t of A[:, t*k2 .. t*k2 + k2) . (B + off[t]) */
static inline __attribute__((always_inline)) void
tile(const int mr, const int nr, float *C, size_t ldc, const uint32_t *A, size_t lda,
     const uint32_t *B, size_t ldb, const int *off, int taps, int k2, int acc, __mmask16 last)
{
    __m512 c[4][4];
#pragma GCC unroll 4
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
        for (int j = 0; j < nr; j++) c[i][j] = _mm512_setzero_ps();
    for (int t = 0; t < taps; t++) {
        const uint32_t *bt = B + off[t], *at = A + (size_t)t * k2;
        for (int k = 0; k < k2; k++) {
            __m512bh bv[4];
            const uint32_t *bk = bt + (size_t)k * ldb;
#pragma GCC unroll 4
            for (int j = 0; j < nr; j++) bv[j] = (__m512bh)_mm512_loadu_si512(bk + 16 * j);
#pragma GCC unroll 4
            for (int i = 0; i < mr; i++) {
                __m512bh a = (__m512bh)_mm512_set1_epi32((int)at[(size_t)i * lda + k]);
#pragma GCC unroll 4
                for (int j = 0; j < nr; j++) c[i][j] = _mm512_dpbf16_ps(c[i][j], a, bv[j]);
            }
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
        for (int j = 0; j < nr; j++) {
            __mmask16 m = j == nr - 1 ? last : (__mmask16)0xFFFF;
            float *p = C + (size_t)i * ldc + 16 * j;
            __m512 v = c[i][j];
            if (acc) v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, p), v);
            _mm512_mask_storeu_ps(p, m, v);
        }
}

#define TILE(m, n)                                                                              \
    static void tile_##m##_##n(float *C, size_t ldc, const uint32_t *A, size_t lda,             \
                               const uint32_t *B, size_t ldb, const int *off, int taps, int k2, \
                               int acc, __mmask16 last)                                         \
    {                                                                                           \
        tile(m, n, C, ldc, A, lda, B, ldb, off, taps, k2, acc, last);                           \
    }
#define TILES(m) TILE(m, 1) TILE(m, 2) TILE(m, 3) TILE(m, 4)
TILES(1)
TILES(2)
TILES(3)
TILES(4)
#define ROW(m)                                                 \
    {                                                          \
        tile_##m##_1, tile_##m##_2, tile_##m##_3, tile_##m##_4 \
    }
static tile_fn *const tiles[4][4] = {ROW(1), ROW(2), ROW(3), ROW(4)};

/* the tiles of C over columns, then rows (the B block stays in L1 across rows) */
static void run_tiles(float *C, size_t ldc, const uint32_t *A, size_t lda, const uint32_t *B,
                      size_t ldb, const int *off, int taps, int M, int j0, int nc, int k2, int acc)
{
    int nr = (nc + 15) / 16;
    __mmask16 last = (__mmask16)((1u << (nc - 16 * (nr - 1))) - 1u);
    for (int i0 = 0; i0 < M; i0 += 4) {
        int mr = M - i0 < 4 ? M - i0 : 4;
        tiles[mr - 1][nr - 1](C + (size_t)i0 * ldc + j0, ldc, A + (size_t)i0 * lda, lda, B + j0,
                              ldb, off, taps, k2, acc, last);
    }
}

void rtp_dp_gemm(float *C, size_t ldc, const uint32_t *A, size_t lda, const uint32_t *B, size_t ldb,
                 int M, int N, int K2, int acc)
{
    static const int none[1] = {0};
    for (int j0 = 0; j0 < N; j0 += 64) {
        int nc = N - j0 < 64 ? N - j0 : 64;
        for (int k0 = 0; k0 < K2 || k0 == 0; k0 += KC) {
            int kc = K2 - k0 < KC ? K2 - k0 : KC;
            run_tiles(C, ldc, A + k0, lda, B + (size_t)k0 * ldb, ldb, none, 1, M, j0, nc, kc,
                      acc || k0 > 0);
        }
    }
}

void rtp_dp_gemm_taps(float *C, size_t ldc, const uint32_t *A, size_t lda, const uint32_t *B,
                      size_t ldb, const int *off, int taps, int M, int N, int K2)
{
    for (int j0 = 0; j0 < N; j0 += 64)
        run_tiles(C, ldc, A, lda, B, ldb, off, taps, M, j0, N - j0 < 64 ? N - j0 : 64, K2, 0);
}

#define MT_ROWS 16 /* rows of C a thread takes at a time */

void rtp_dp_gemm_mt(int threads, float *C, size_t ldc, const uint32_t *A, size_t lda,
                    const uint32_t *B, size_t ldb, int M, int N, int K2, int acc)
{
    int blocks = (M + MT_ROWS - 1) / MT_ROWS;
#pragma omp parallel for schedule(static) num_threads(threads) if (blocks > 1)
    for (int t = 0; t < blocks; t++) {
        int i0 = t * MT_ROWS, m = M - i0 < MT_ROWS ? M - i0 : MT_ROWS;
        rtp_dp_gemm(C + (size_t)i0 * ldc, ldc, A + (size_t)i0 * lda, lda, B, ldb, m, N, K2, acc);
    }
}

static uint32_t bf16_bits(float f)
{
    uint32_t v;
    memcpy(&v, &f, 4);
    if ((v & 0x7FFFFFFFu) > 0x7F800000u) return (v >> 16) | 0x40u; /* NaN stays NaN */
    return (v + 0x7FFFu + ((v >> 16) & 1u)) >> 16;
}

uint32_t rtp_dp_pair(float a, float b) { return bf16_bits(a) | bf16_bits(b) << 16; }

static __mmask16 first(int n) { return n >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << n) - 1u); }

/* 16 pair words (bf16(a[l]), bf16(b[l])) */
static inline __m512i pairs16(__m512 a, __m512 b)
{
    static const uint16_t il[32] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                    8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
    __m512i v = (__m512i)_mm512_cvtne2ps_pbh(b, a); /* a's 16 in the low half */
    return _mm512_permutexvar_epi16(_mm512_loadu_si512(il), v);
}

/* row[iw .. iw+15], 0 outside [0, W) (never reads outside the row) */
static inline __m512 row16(const float *row, int W, int iw)
{
    int lo = iw < 0 ? -iw : 0, hi = W - iw < 16 ? W - iw : 16;
    if (hi <= lo) return _mm512_setzero_ps();
    __mmask16 m = (__mmask16)(first(hi) & ~first(lo));
    if (lo == 0) return _mm512_maskz_loadu_ps(m, row + iw);
    return _mm512_maskz_expandloadu_ps(m, row); /* lane lo takes row[0] */
}

/* row[iw + st*l] for l < 16, stride 1 or 2 */
static inline __m512 cols16(const float *row, int W, int iw, int st)
{
    static const int even[16] = {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30};
    if (st == 1) return row16(row, W, iw);
    return _mm512_permutex2var_ps(row16(row, W, iw), _mm512_loadu_si512(even),
                                  row16(row, W, iw + 16));
}

void rtp_dp_pack_cols(uint32_t *B, size_t ldb, const float *x, const rtp_dp_geom *g)
{
    const int RS = g->R * g->S, CRS = g->C * RS, K2 = (CRS + 1) / 2;
    for (int k2 = 0; k2 < K2; k2++) {
        int i[2] = {2 * k2, 2 * k2 + 1};
        const float *plane[2];
        int r[2], s[2];
        for (int h = 0; h < 2; h++) {
            plane[h] = i[h] < CRS ? x + (size_t)(i[h] / RS) * g->H * g->W : NULL;
            r[h] = i[h] % RS / g->S, s[h] = i[h] % g->S;
        }
        uint32_t *dst = B + (size_t)k2 * ldb;
        for (int p = 0; p < g->P; p++) {
            const float *row[2];
            for (int h = 0; h < 2; h++) {
                int ih = p * g->st - g->pad + r[h];
                row[h] = plane[h] && ih >= 0 && ih < g->H ? plane[h] + (size_t)ih * g->W : NULL;
            }
            for (int q = 0; q < g->Q; q += 16) {
                __m512 v[2];
                for (int h = 0; h < 2; h++)
                    v[h] = row[h] ? cols16(row[h], g->W, q * g->st - g->pad + s[h], g->st)
                                  : _mm512_setzero_ps();
                _mm512_mask_storeu_epi32(dst + (size_t)p * g->Q + q, first(g->Q - q),
                                         pairs16(v[0], v[1]));
            }
        }
    }
}

void rtp_dp_pack_plane(uint32_t *B, size_t ldb, const float *x, int C, int H, int W, int pad)
{
    const int Hp = H + 2 * pad, Wp = W + 2 * pad;
    for (int c2 = 0; c2 < (C + 1) / 2; c2++) {
        const float *pa = x + (size_t)(2 * c2) * H * W;
        const float *pb = 2 * c2 + 1 < C ? pa + (size_t)H * W : NULL;
        uint32_t *dst = B + (size_t)c2 * ldb;
        for (int ih = 0; ih < Hp; ih++) {
            int h = ih - pad, in = h >= 0 && h < H;
            for (int iw = 0; iw < Wp; iw += 16) {
                __m512 a = in ? row16(pa + (size_t)h * W, W, iw - pad) : _mm512_setzero_ps();
                __m512 b = in && pb ? row16(pb + (size_t)h * W, W, iw - pad) : _mm512_setzero_ps();
                _mm512_mask_storeu_epi32(dst + (size_t)ih * Wp + iw, first(Wp - iw), pairs16(a, b));
            }
        }
        memset(dst + (size_t)Hp * Wp, 0, (ldb - (size_t)Hp * Wp) * sizeof *dst);
    }
}

/* 16 pair words of s[t .. t+31] (0 past L - t) */
static inline __m512i row_pairs(const float *s, int t, int L)
{
    int n = L - t;
    __m512 lo = _mm512_maskz_loadu_ps(first(n), s + t);
    __m512 hi = n > 16 ? _mm512_maskz_loadu_ps(first(n - 16), s + t + 16) : _mm512_setzero_ps();
    return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

void rtp_dp_pack_rows(uint32_t *A, size_t lda, const float *S, size_t lds, int M, int L)
{
    for (int m = 0; m < M; m++)
        for (int t = 0; t < L; t += 32)
            _mm512_mask_storeu_epi32(A + (size_t)m * lda + t / 2, first((L - t + 1) / 2),
                                     row_pairs(S + (size_t)m * lds, t, L));
}

void rtp_dp_pack_rows_t(uint32_t *D, size_t ldd, const float *S, size_t lds, int R, int L)
{
    uint32_t tmp[16];
    for (int r = 0; r < R; r++)
        for (int t = 0; t < L; t += 32) {
            _mm512_storeu_si512(tmp, row_pairs(S + (size_t)r * lds, t, L));
            int n = (L - t + 1) / 2 < 16 ? (L - t + 1) / 2 : 16;
            for (int l = 0; l < n; l++) D[(size_t)(t / 2 + l) * ldd + r] = tmp[l];
        }
}

void rtp_dp_pack_cols_t(uint32_t *D, size_t ldd, const float *S, size_t lds, int R, int L)
{
    uint32_t tmp[16];
    for (int r2 = 0; r2 < (R + 1) / 2; r2++) {
        const float *a = S + (size_t)(2 * r2) * lds, *b = 2 * r2 + 1 < R ? a + lds : NULL;
        for (int c = 0; c < L; c += 16) {
            __mmask16 m = first(L - c);
            __m512 va = _mm512_maskz_loadu_ps(m, a + c);
            __m512 vb = b ? _mm512_maskz_loadu_ps(m, b + c) : _mm512_setzero_ps();
            _mm512_storeu_si512(tmp, pairs16(va, vb));
            int n = L - c < 16 ? L - c : 16;
            for (int l = 0; l < n; l++) D[(size_t)(c + l) * ldd + r2] = tmp[l];
        }
    }
}
