/* cpu_conv_1x1.c - 1x1, stride-1, unpadded convolutions on small planes (MobileNetV2's
 * expansions and projections once the image is 8x8 and below) as one sgemm per pass
 * for the whole batch, not one per image.
 *
 * Per image such a convolution is y_n (K x PQ) = W (K x C) x_n (C x PQ): with PQ of 1 to
 * 64, each per-image call is a thin product dominated by call and packing overhead, and
 * W is read again for every image. Here the batch is rearranged once to (C, N*PQ) (the
 * images side by side, row c holding channel c of every image), the pass is one sgemm
 * on all of b's threads (OpenBLAS), and the result is put back in (N, K, PQ) order
 * (both layout changes: cpu_transpose.c):
 *   forward      Y' (K, N*PQ) = W X'           (+ bias, + the planes' moments)
 *   input grad   dX' (C, N*PQ) = W^T dY'
 *   weight grad  dW (K, C) = dY' X'^T; the bias gradient the row sums of dY'
 * Deterministic for a fixed thread count (OpenBLAS splits the output, not the sum).
 * rtp_cpu_conv_1x1 says whether d takes this path: groups 1, 1x1, stride 1, no padding,
 * planes of at most RTP_CONV_1X1_PQ, and more than one image.
 */
#include <cblas.h>
#include <omp.h>
#include <string.h>

#include "cpu_conv_layout.h"
#include "cpu_internal.h"

#define RTP_CONV_1X1_PQ 64

int rtp_cpu_conv_1x1(const rt_conv_desc *d)
{
    return rt_conv_groups(d) == 1 && d->R == 1 && d->S == 1 && d->stride == 1 && d->pad == 0 &&
           d->P * d->Q <= RTP_CONV_1X1_PQ && d->N > 1;
}

size_t rtp_cpu_conv_1x1_workspace(rt_backend *b, const rt_conv_desc *d)
{
    size_t cols = (size_t)d->N * d->P * d->Q;
    return (rtp_r16((size_t)d->C * cols) + rtp_r16((size_t)d->K * cols)) * sizeof(float);
}

static int team(rt_backend *b, size_t n) { return n > 16384 && b->threads > 1 ? b->threads : 1; }

/* t (ch, N*pq) <- x (N, ch, pq) */
static void gather(float *t, const float *x, int N, int ch, int pq)
{
    rtp_cpu_transpose(t, x, N, ch, pq);
}

/* x (N, ch, pq) <- t (ch, N*pq) (+ bias[c] when bias) */
static void scatter(rt_backend *b, float *x, const float *t, const float *bias, int N, int ch,
                    int pq)
{
    rtp_cpu_transpose(x, t, ch, N, pq);
    if (!bias) return;
#pragma omp parallel for num_threads(team(b, (size_t)N *pq *ch)) schedule(static)
    for (int n = 0; n < N; n++)
        for (int c = 0; c < ch; c++) {
            float *dst = x + ((size_t)n * ch + c) * pq;
            for (int i = 0; i < pq; i++) dst[i] += bias[c];
        }
}

rt_status rtp_cpu_conv_1x1_fwd(rt_backend *b, rt_tensor *out, double *mom, const rt_tensor *in,
                               const rt_tensor *w, const rt_tensor *bias, const rt_conv_desc *d,
                               rt_error *err)
{
    float *ws = rtp_cpu_scratch(b, rtp_cpu_conv_1x1_workspace(b, d), err);
    if (!ws) return err ? err->code : RT_EINVAL;
    const int N = d->N, C = d->C, K = d->K, PQ = d->P * d->Q, cols = N * PQ;
    float *xt = ws, *yt = ws + rtp_r16((size_t)C * cols);
    gather(xt, in->data, N, C, PQ);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, K, cols, C, 1.0f, w->data, C, xt, cols,
                0.0f, yt, cols);
    scatter(b, out->data, yt, bias ? bias->data : NULL, N, K, PQ);
    if (mom) {
        const float *Y = out->data;
#pragma omp parallel for num_threads(team(b, (size_t)cols *K)) schedule(static)
        for (int n = 0; n < N; n++)
            rtp_cpu_plane_moments(mom + (size_t)n * K * (RT_MOMENT_FLOATS / 2),
                                  Y + (size_t)n * K * PQ, K, (size_t)PQ);
    }
    return RT_OK;
}

rt_status rtp_cpu_conv_1x1_bwd_data(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                    const rt_tensor *w, const rt_conv_desc *d, rt_error *err)
{
    float *ws = rtp_cpu_scratch(b, rtp_cpu_conv_1x1_workspace(b, d), err);
    if (!ws) return err ? err->code : RT_EINVAL;
    const int N = d->N, C = d->C, K = d->K, PQ = d->P * d->Q, cols = N * PQ;
    float *xt = ws, *yt = ws + rtp_r16((size_t)C * cols);
    gather(yt, dout->data, N, K, PQ);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, C, cols, K, 1.0f, w->data, C, yt, cols,
                0.0f, xt, cols);
    scatter(b, din->data, xt, NULL, N, C, PQ);
    return RT_OK;
}

rt_status rtp_cpu_conv_1x1_bwd_filter(rt_backend *b, rt_tensor *dw, rt_tensor *dbias,
                                      const rt_tensor *dout, const rt_tensor *in,
                                      const rt_conv_desc *d, rt_error *err)
{
    float *ws = rtp_cpu_scratch(b, rtp_cpu_conv_1x1_workspace(b, d), err);
    if (!ws) return err ? err->code : RT_EINVAL;
    const int N = d->N, C = d->C, K = d->K, PQ = d->P * d->Q, cols = N * PQ;
    float *xt = ws, *yt = ws + rtp_r16((size_t)C * cols);
    gather(xt, in->data, N, C, PQ);
    gather(yt, dout->data, N, K, PQ);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, K, C, cols, 1.0f, yt, cols, xt, cols, 0.0f,
                dw->data, C);
    if (dbias) {
        float *DB = dbias->data;
        for (int k = 0; k < K; k++) DB[k] = rtp_cpu_row_sum(yt + (size_t)k * cols, cols);
    }
    return RT_OK;
}
