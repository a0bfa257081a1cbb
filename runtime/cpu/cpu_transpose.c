/* cpu_transpose.c - the layout changes of the small-plane convolutions: a matrix of
 * blocks transposed (cpu_conv_dw_lanes.c: an image's (C, H*W) planes to (H*W, C), blocks
 * of one float; cpu_conv_1x1.c: a batch (N, C, P*Q) to (C, N, P*Q), blocks of P*Q).
 *
 * With blocks of one float the matrix goes in 8 x 8 tiles, each transposed in AVX
 * registers (8 loads, 24 shuffles, 8 stores) on a CPU with AVX2, element by element
 * otherwise and at the edges. Short blocks (1x1 convolutions on 1x1 to 4x4 planes) are
 * copied by a loop, not a libc call each: copying 4 bytes through memcpy cost more than
 * the product. Only data moves: the bits are the same on every path.
 */
#include <string.h>

#include "cpu_internal.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_TILE() __builtin_cpu_supports("avx2")
/* t[k * ts + i] <- a[i * as + k], i, k < 8 */
__attribute__((target("avx2"))) static void tile8(float *t, size_t ts, const float *a, size_t as)
{
    __m256 r[8], u[8], s[8];
    for (int k = 0; k < 8; k++) r[k] = _mm256_loadu_ps(a + (size_t)k * as);
    for (int k = 0; k < 8; k += 2) {
        u[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
        u[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
    }
    for (int k = 0; k < 8; k += 4) {
        s[k] = _mm256_shuffle_ps(u[k], u[k + 2], _MM_SHUFFLE(1, 0, 1, 0));
        s[k + 1] = _mm256_shuffle_ps(u[k], u[k + 2], _MM_SHUFFLE(3, 2, 3, 2));
        s[k + 2] = _mm256_shuffle_ps(u[k + 1], u[k + 3], _MM_SHUFFLE(1, 0, 1, 0));
        s[k + 3] = _mm256_shuffle_ps(u[k + 1], u[k + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (int k = 0; k < 4; k++) {
        _mm256_storeu_ps(t + (size_t)k * ts, _mm256_permute2f128_ps(s[k], s[k + 4], 0x20));
        _mm256_storeu_ps(t + (size_t)(k + 4) * ts, _mm256_permute2f128_ps(s[k], s[k + 4], 0x31));
    }
}
#else
#define HAVE_TILE() 0
static void tile8(float *t, size_t ts, const float *a, size_t as) {}
#endif

/* t (n, m) <- a (m, n), floats */
static void floats(float *restrict t, const float *restrict a, int m, int n)
{
    const int tiles = HAVE_TILE();
    for (int i0 = 0; i0 < m; i0 += 8)
        for (int j0 = 0; j0 < n; j0 += 8) {
            if (tiles && i0 + 8 <= m && j0 + 8 <= n) {
                tile8(t + (size_t)j0 * m + i0, (size_t)m, a + (size_t)i0 * n + j0, (size_t)n);
                continue;
            }
            const int i1 = i0 + 8 < m ? i0 + 8 : m, j1 = j0 + 8 < n ? j0 + 8 : n;
            for (int j = j0; j < j1; j++)
                for (int i = i0; i < i1; i++) t[(size_t)j * m + i] = a[(size_t)i * n + j];
        }
}

void rtp_cpu_transpose(float *restrict t, const float *restrict a, int m, int n, int blk)
{
    if (m == 1 || n == 1) {
        memcpy(t, a, (size_t)m * n * blk * sizeof *t);
        return;
    }
    if (blk == 1) {
        floats(t, a, m, n);
        return;
    }
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            float *restrict o = t + ((size_t)j * m + i) * blk;
            const float *restrict s = a + ((size_t)i * n + j) * blk;
            if (blk >= 16) memcpy(o, s, (size_t)blk * sizeof *o);
            else
                for (int k = 0; k < blk; k++) o[k] = s[k];
        }
}
