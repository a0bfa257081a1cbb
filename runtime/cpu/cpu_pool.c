/* cpu_pool.c - max and average pooling (no padding, floor mode), PyTorch semantics.
 *
 * Planes (n, c) are independent: OpenMP over N*C planes. Max-pool backward recomputes
 * the argmax from the saved input and output (first maximum in row-major window order,
 * as PyTorch), so no index tensor is kept; overlapping windows accumulate.
 */
#include <string.h>

#include "cpu_internal.h"

static rt_status check(const rt_tensor *x, const rt_tensor *y, const rt_pool_desc *d,
                       rt_error *err)
{
    RTP_CHECK(x, (size_t)d->N * d->C * d->H * d->W, "pool input");
    RTP_CHECK(y, (size_t)d->N * d->C * d->P * d->Q, "pool output");
    return RT_OK;
}

rt_status rtp_cpu_maxpool_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in,
                              const rt_pool_desc *d, rt_error *err)
{
    RT_TRY(check(in, out, d, err));
    const int H = d->H, W = d->W, P = d->P, Q = d->Q, planes = d->N * d->C;
    const float *X = in->data;
    float *Y = out->data;
#pragma omp parallel for schedule(static) num_threads(b->threads)
    for (int pl = 0; pl < planes; pl++) {
        const float *x = X + (size_t)pl * H * W;
        float *y = Y + (size_t)pl * P * Q;
        for (int p = 0; p < P; p++)
            for (int q = 0; q < Q; q++) {
                const float *w0 = x + (size_t)(p * d->stride) * W + q * d->stride;
                float m = w0[0];
                for (int r = 0; r < d->R; r++)
                    for (int s = 0; s < d->S; s++) {
                        float v = w0[(size_t)r * W + s];
                        if (v > m || v != v) m = v; /* NaN propagates, as PyTorch */
                    }
                y[p * Q + q] = m;
            }
    }
    return RT_OK;
}

rt_status rtp_cpu_maxpool_bwd(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                              const rt_tensor *in, const rt_tensor *out,
                              const rt_pool_desc *d, rt_error *err)
{
    RT_TRY(check(in, out, d, err));
    RT_TRY(check(din, dout, d, err));
    const int H = d->H, W = d->W, P = d->P, Q = d->Q, planes = d->N * d->C;
    const float *X = in->data, *Y = out->data, *DY = dout->data;
    float *DX = din->data;
#pragma omp parallel for schedule(static) num_threads(b->threads)
    for (int pl = 0; pl < planes; pl++) {
        const float *x = X + (size_t)pl * H * W, *y = Y + (size_t)pl * P * Q;
        const float *dy = DY + (size_t)pl * P * Q;
        float *dx = DX + (size_t)pl * H * W;
        memset(dx, 0, (size_t)H * W * sizeof *dx);
        for (int p = 0; p < P; p++)
            for (int q = 0; q < Q; q++) {
                size_t base = (size_t)(p * d->stride) * W + q * d->stride, at = base;
                float m = y[p * Q + q];
                for (int r = 0; r < d->R; r++)
                    for (int s = 0; s < d->S; s++) {
                        size_t i = base + (size_t)r * W + s;
                        if (x[i] == m || (m != m && x[i] != x[i])) {
                            at = i;
                            r = d->R;
                            break;
                        }
                    }
                dx[at] += dy[p * Q + q];
            }
    }
    return RT_OK;
}

rt_status rtp_cpu_avgpool_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in,
                              const rt_pool_desc *d, rt_error *err)
{
    RT_TRY(check(in, out, d, err));
    const int H = d->H, W = d->W, P = d->P, Q = d->Q, planes = d->N * d->C;
    const float inv = 1.0f / (float)(d->R * d->S);
    const float *X = in->data;
    float *Y = out->data;
#pragma omp parallel for schedule(static) num_threads(b->threads)
    for (int pl = 0; pl < planes; pl++) {
        const float *x = X + (size_t)pl * H * W;
        float *y = Y + (size_t)pl * P * Q;
        for (int p = 0; p < P; p++)
            for (int q = 0; q < Q; q++) {
                const float *w0 = x + (size_t)(p * d->stride) * W + q * d->stride;
                float s = 0.0f;
                for (int r = 0; r < d->R; r++)
                    for (int c = 0; c < d->S; c++) s += w0[(size_t)r * W + c];
                y[p * Q + q] = s * inv;
            }
    }
    return RT_OK;
}

rt_status rtp_cpu_avgpool_bwd(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                              const rt_pool_desc *d, rt_error *err)
{
    RT_TRY(check(din, dout, d, err));
    const int H = d->H, W = d->W, P = d->P, Q = d->Q, planes = d->N * d->C;
    const float inv = 1.0f / (float)(d->R * d->S);
    const float *DY = dout->data;
    float *DX = din->data;
#pragma omp parallel for schedule(static) num_threads(b->threads)
    for (int pl = 0; pl < planes; pl++) {
        const float *dy = DY + (size_t)pl * P * Q;
        float *dx = DX + (size_t)pl * H * W;
        memset(dx, 0, (size_t)H * W * sizeof *dx);
        for (int p = 0; p < P; p++)
            for (int q = 0; q < Q; q++) {
                float g = dy[p * Q + q] * inv;
                float *w0 = dx + (size_t)(p * d->stride) * W + q * d->stride;
                for (int r = 0; r < d->R; r++)
                    for (int c = 0; c < d->S; c++) w0[(size_t)r * W + c] += g;
            }
    }
    return RT_OK;
}
