/* cpu_conv_layout.c - the layout helpers of the direct convolutions (cpu_conv_layout.h). */
#include "cpu_conv_layout.h"

#include <assert.h>
#include <omp.h>
#include <string.h>

#include "cpu_conv_kern.h"
#include "cpu_internal.h"

void rtp_conv_pack(float *restrict wpk, const float *restrict Wt, int rows, int rows_r, int ins,
                   int RS, const int *tap, int T, int transposed)
{
    for (int rb = 0; rb < rows_r; rb += RTP_CONVK_KB)
        for (int i = 0; i < ins; i++)
            for (int t = 0; t < T; t++)
                for (int j = 0; j < RTP_CONVK_KB; j++) {
                    int r = rb + j;
                    size_t at = transposed ? ((size_t)i * rows + r) * RS + tap[t]
                                           : ((size_t)r * ins + i) * RS + tap[t];
                    wpk[((size_t)rb * ins + (size_t)i * RTP_CONVK_KB) * T +
                        (size_t)t * RTP_CONVK_KB + j] = r < rows ? Wt[at] : 0.0f;
                }
}

/* GCC would turn these loops back into memcpy calls (a call per row) */
#if defined(__clang__)
#define COPY_LOOP RTP_SPAN
#else
#define COPY_LOOP RTP_SPAN __attribute__((optimize("no-tree-loop-distribute-patterns")))
#endif

COPY_LOOP static void rows1(float *restrict o, size_t os, const float *restrict x, size_t xs,
                            int rows, int cols)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) o[(size_t)r * os + c] = x[(size_t)r * xs + c];
}

COPY_LOOP static void rows2(float *restrict o, size_t os, const float *restrict x, size_t xs,
                            int rows, int cols)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) o[(size_t)r * os + c] = x[(size_t)r * xs + 2 * c];
}

void rtp_conv_copy_rows(float *o, size_t os, const float *x, size_t xs, int rows, int cols,
                        int step)
{
    assert(step == 1 || step == 2);
    if (rows < 1 || cols < 1) return;
    if (step == 2) rows2(o, os, x, xs, rows, cols);
    else rows1(o, os, x, xs, rows, cols);
}

COPY_LOOP static void rows_to2(float *restrict o, size_t os, const float *restrict x, size_t xs,
                               int rows, int cols)
{
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) o[(size_t)r * os + 2 * c] = x[(size_t)r * xs + c];
}

void rtp_conv_scatter_rows2(float *o, size_t os, const float *x, size_t xs, int rows, int cols)
{
    if (rows > 0 && cols > 0) rows_to2(o, os, x, xs, rows, cols);
}

COPY_LOOP void rtp_conv_copy3(float *restrict a, float *restrict b, float *restrict c,
                              const float *restrict x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        a[i] = v, b[i] = v, c[i] = v;
    }
}

void rtp_conv_compact(float *restrict out, const float *restrict grid, int K, int H, int W, int wp,
                      size_t ys, const float *bias)
{
    for (int k = 0; k < K; k++) {
        const float *src = grid + (size_t)k * ys;
        float *dst = out + (size_t)k * H * W;
        float bk = bias ? bias[k] : 0.0f;
        if (!bias) { /* the vector row copy: a memcpy call per short row cost more */
            rows1(dst, (size_t)W, src, (size_t)wp, H, W);
            continue;
        }
        for (int h = 0; h < H; h++, src += wp, dst += W)
            for (int w = 0; w < W; w++) dst[w] = src[w] + bk;
    }
}

typedef float v4 __attribute__((vector_size(16)));
typedef float v4u __attribute__((vector_size(16), aligned(4))); /* unaligned access */

/* o[j*os + i] <- s[i*ss + j] for i, j < 4: a 4x4 transpose in registers (12 vector
 * operations where the scalar copy takes 32). */
static inline void t4x4(float *restrict o, size_t os, const float *restrict s, size_t ss)
{
    v4 a = *(const v4u *)s, b = *(const v4u *)(s + ss);
    v4 c = *(const v4u *)(s + 2 * ss), d = *(const v4u *)(s + 3 * ss);
    v4 ab0 = __builtin_shufflevector(a, b, 0, 4, 1, 5),
       ab1 = __builtin_shufflevector(a, b, 2, 6, 3, 7);
    v4 cd0 = __builtin_shufflevector(c, d, 0, 4, 1, 5),
       cd1 = __builtin_shufflevector(c, d, 2, 6, 3, 7);
    *(v4u *)o = __builtin_shufflevector(ab0, cd0, 0, 1, 4, 5);
    *(v4u *)(o + os) = __builtin_shufflevector(ab0, cd0, 2, 3, 6, 7);
    *(v4u *)(o + 2 * os) = __builtin_shufflevector(ab1, cd1, 0, 1, 4, 5);
    *(v4u *)(o + 3 * os) = __builtin_shufflevector(ab1, cd1, 2, 3, 6, 7);
}

/* dyT[(p*Q + q)*Kv + k] <- dy[k][p][q] (0 for K <= k < Kv), written in blocks of 4
 * positions x 4 channels, the remainders one by one. */
static void dy_image(float *restrict dyT, float *restrict accb, const float *restrict dy, int K,
                     int Kv, int P, int Q)
{
    const size_t PQ = (size_t)P * Q;
    if (accb) /* a bias */
        for (int k = 0; k < K; k++) accb[k] += rtp_cpu_row_sum(dy + (size_t)k * PQ, (int)PQ);
    for (int p = 0; p < P; p++, dyT += (size_t)Q * Kv) {
        const float *src = dy + (size_t)p * Q;
        int q = 0;
        for (; q + 4 <= Q; q += 4) {
            int k = 0;
            for (; k + 4 <= K; k += 4) t4x4(dyT + (size_t)q * Kv + k, Kv, src + k * PQ + q, PQ);
            for (; k < K; k++)
                for (int j = 0; j < 4; j++) dyT[(size_t)(q + j) * Kv + k] = src[k * PQ + q + j];
        }
        for (; q < Q; q++)
            for (int k = 0; k < K; k++) dyT[(size_t)q * Kv + k] = src[k * PQ + q];
        if (K < Kv)
            for (q = 0; q < Q; q++)
                memset(dyT + (size_t)q * Kv + K, 0, (size_t)(Kv - K) * sizeof *dyT);
    }
}

/* Row j of every group in turn, vectors over k (the partials are [CT][Kv] per group);
 * each element is still summed over g in order, so the result does not depend on how
 * the rows are shared among threads. */
static void group_sum(float *DW, float *DB, const float *accs, size_t accsz, int G, int K, int CT,
                      int Kv)
{
#pragma omp for schedule(static)
    for (int j = 0; j <= CT; j++) { /* j == CT: the bias partials */
        if (j == CT && !DB) continue;
        float s[RTP_CONV_MAX_CH];
        for (int k = 0; k < K; k++) s[k] = 0.0f;
        const float *a = accs + (size_t)j * Kv;
        for (int g = 0; g < G; g++, a += accsz)
            for (int k = 0; k < K; k++) s[k] += a[k];
        if (j == CT)
            for (int k = 0; k < K; k++) DB[k] = s[k];
        else
            for (int k = 0; k < K; k++) DW[(size_t)k * CT + j] = s[k];
    }
}

void rtp_conv_wgrad_run(rt_backend *b, const rt_conv_desc *d, rt_tensor *dw, rt_tensor *dbias,
                        const rt_tensor *dout, const rt_tensor *in, float *ws,
                        const rtp_conv_wgrad_layout *lay, rtp_conv_wgrad_image_fn *image,
                        const void *ctx)
{
    const int K = d->K, G = rtp_conv_groups(d->N), Kv = lay->Kv;
    const size_t chw = (size_t)d->C * d->H * d->W, kpq = (size_t)K * d->P * d->Q;
    const size_t nw = (size_t)lay->CT * Kv;
    const float *X = in->data, *DY = dout->data;
    float *accs = ws + lay->acc;
#pragma omp parallel num_threads(rtp_conv_threads(b, d->N))
    {
        float *scratch = ws + lay->per_thread * (size_t)omp_get_thread_num();
        float *dyT = scratch + lay->dyt;
#pragma omp for schedule(dynamic, 1)
        for (int g = 0; g < G; g++) {
            float *acc = accs + lay->accsz * (size_t)g;
            memset(acc, 0, lay->accsz * sizeof *acc);
            int n1 = (g + 1) * RTP_CONV_GROUP < d->N ? (g + 1) * RTP_CONV_GROUP : d->N;
            for (int n = g * RTP_CONV_GROUP; n < n1; n++) {
                dy_image(dyT, dbias ? acc + nw : NULL, DY + kpq * (size_t)n, K, Kv, d->P, d->Q);
                image(ctx, scratch, dyT, X + chw * (size_t)n, acc);
            }
        }
        group_sum(dw->data, dbias ? dbias->data : NULL, accs, lay->accsz, G, K, lay->CT, Kv);
    }
}
