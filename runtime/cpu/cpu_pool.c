/* cpu_pool.c - max and average pooling (zero padding, floor mode; or adaptive to a size),
 * PyTorch semantics (rt_backend.h rt_pool_desc).
 *
 * Planes (n, c) are independent: OpenMP over N*C planes. Max-pool backward recomputes
 * the argmax from the saved input and output (first maximum in row-major window order,
 * as PyTorch), so no index tensor is kept; overlapping windows accumulate.
 */
#include <string.h>

#include "cpu_internal.h"

/* The input rows [*a, *b) of output row p (columns alike): the padded window clipped
 * to the input, or the adaptive one. */
static inline void window(int p, int in, int out, int r, int stride, int pad, int adaptive, int *a,
                          int *b)
{
    if (adaptive) {
        *a = (int)((long)p * in / out);
        *b = (int)(((long)(p + 1) * in + out - 1) / out);
        return;
    }
    *a = p * stride - pad, *b = *a + r;
    if (*a < 0) *a = 0;
    if (*b > in) *b = in;
}

#define ROWS(d, p, a, b) \
    window(p, (d)->H, (d)->P, (d)->R, (d)->stride, (d)->pad, (d)->adaptive, a, b)
#define COLS(d, q, a, b) \
    window(q, (d)->W, (d)->Q, (d)->S, (d)->stride, (d)->pad, (d)->adaptive, a, b)

/* ---- 2x2 stride-2 max pooling (the common case): branchless selects, much faster
 * than the generic loops (random data makes the comparisons unpredictable) ---- */

static inline float max_sel(float m, float v) { return (v > m || v != v) ? v : m; }
static inline int same(float v, float m) { return (v == m) | ((m != m) & (v != v)); }

static void max2_fwd_plane(float *restrict y, const float *restrict x, int H, int W, int P, int Q)
{
    for (int p = 0; p < P; p++) {
        const float *r0 = x + (size_t)(2 * p) * W, *r1 = r0 + W;
        float *yr = y + (size_t)p * Q;
        for (int q = 0; q < Q; q++) {
            float m = max_sel(r0[2 * q], r0[2 * q + 1]);
            m = max_sel(m, r1[2 * q]);
            yr[q] = max_sel(m, r1[2 * q + 1]);
        }
    }
}

static void max2_bwd_plane(float *restrict dx, const float *restrict dy, const float *restrict x,
                           const float *restrict y, int H, int W, int P, int Q)
{
    if ((H & 1) || (W & 1)) memset(dx, 0, (size_t)H * W * sizeof *dx);
    for (int p = 0; p < P; p++) {
        const float *r0 = x + (size_t)(2 * p) * W, *r1 = r0 + W;
        float *d0 = dx + (size_t)(2 * p) * W, *d1 = d0 + W;
        for (int q = 0; q < Q; q++) {
            float m = y[(size_t)p * Q + q], g = dy[(size_t)p * Q + q];
            /* first maximum in window order wins (PyTorch); bitwise & keeps it branchless */
            int e0 = same(r0[2 * q], m), e1 = (!e0) & same(r0[2 * q + 1], m);
            int e2 = (!(e0 | e1)) & same(r1[2 * q], m), e3 = !(e0 | e1 | e2);
            d0[2 * q] = e0 ? g : 0.0f;
            d0[2 * q + 1] = e1 ? g : 0.0f;
            d1[2 * q] = e2 ? g : 0.0f;
            d1[2 * q + 1] = e3 ? g : 0.0f;
        }
    }
}

static int is_2x2(const rt_pool_desc *d)
{
    return d->R == 2 && d->S == 2 && d->stride == 2 && !d->pad && !d->adaptive;
}

rt_status rtp_cpu_maxpool_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in,
                              const rt_pool_desc *d, rt_error *err)
{
    const int H = d->H, W = d->W, P = d->P, Q = d->Q, planes = d->N * d->C;
    const float *X = in->data;
    float *Y = out->data;
#pragma omp parallel for schedule(dynamic, 16) num_threads(b->threads)
    for (int pl = 0; pl < planes; pl++) {
        const float *x = X + (size_t)pl * H * W;
        float *y = Y + (size_t)pl * P * Q;
        if (is_2x2(d)) {
            max2_fwd_plane(y, x, H, W, P, Q);
            continue;
        }
        for (int p = 0; p < P; p++)
            for (int q = 0; q < Q; q++) {
                int h0, h1, w0, w1;
                ROWS(d, p, &h0, &h1);
                COLS(d, q, &w0, &w1);
                float m = x[(size_t)h0 * W + w0];
                for (int r = h0; r < h1; r++)
                    for (int s = w0; s < w1; s++) {
                        float v = x[(size_t)r * W + s];
                        if (v > m || v != v) m = v; /* NaN propagates, as PyTorch */
                    }
                y[p * Q + q] = m;
            }
    }
    return RT_OK;
}

rt_status rtp_cpu_maxpool_bwd(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                              const rt_tensor *in, const rt_tensor *out, const rt_pool_desc *d,
                              rt_error *err)
{
    const int H = d->H, W = d->W, P = d->P, Q = d->Q, planes = d->N * d->C;
    const float *X = in->data, *Y = out->data, *DY = dout->data;
    float *DX = din->data;
#pragma omp parallel for schedule(dynamic, 16) num_threads(b->threads)
    for (int pl = 0; pl < planes; pl++) {
        const float *x = X + (size_t)pl * H * W, *y = Y + (size_t)pl * P * Q;
        const float *dy = DY + (size_t)pl * P * Q;
        float *dx = DX + (size_t)pl * H * W;
        if (is_2x2(d)) {
            max2_bwd_plane(dx, dy, x, y, H, W, P, Q);
            continue;
        }
        memset(dx, 0, (size_t)H * W * sizeof *dx);
        for (int p = 0; p < P; p++)
            for (int q = 0; q < Q; q++) {
                int h0, h1, w0, w1;
                ROWS(d, p, &h0, &h1);
                COLS(d, q, &w0, &w1);
                size_t at = (size_t)h0 * W + w0;
                float m = y[p * Q + q];
                for (int r = h0; r < h1; r++)
                    for (int s = w0; s < w1; s++) {
                        size_t i = (size_t)r * W + s;
                        if (x[i] == m || (m != m && x[i] != x[i])) {
                            at = i;
                            r = h1;
                            break;
                        }
                    }
                dx[at] += dy[p * Q + q];
            }
    }
    return RT_OK;
}

/* The average pool both ways, plane by plane: forward, y (P,Q) = the mean of each
 * window of x (H,W); backward, dx (H,W) = each window's share of dy (P,Q), summed. */
static void avgpool(rt_backend *b, const rt_pool_desc *d, const float *from, float *to, int bwd)
{
    const int H = d->H, W = d->W, P = d->P, Q = d->Q, planes = d->N * d->C;
    const float inv = d->adaptive ? 0.0f : 1.0f / (float)(d->R * d->S);
    const size_t hw = (size_t)H * W, pq = (size_t)P * Q;
#pragma omp parallel for schedule(dynamic, 16) num_threads(b->threads)
    for (int pl = 0; pl < planes; pl++) {
        const float *f = from + (size_t)pl * (bwd ? pq : hw);
        float *t = to + (size_t)pl * (bwd ? hw : pq);
        if (bwd) memset(t, 0, hw * sizeof *t);
        for (int p = 0; p < P; p++)
            for (int q = 0; q < Q; q++) {
                int h0, h1, w0, w1;
                ROWS(d, p, &h0, &h1);
                COLS(d, q, &w0, &w1);
                /* the padding counts (R*S), an adaptive window is its own size */
                float k = d->adaptive ? 1.0f / (float)((h1 - h0) * (w1 - w0)) : inv;
                if (bwd) {
                    float g = f[p * Q + q] * k;
                    for (int r = h0; r < h1; r++)
                        for (int c = w0; c < w1; c++) t[(size_t)r * W + c] += g;
                } else {
                    float s = 0.0f;
                    for (int r = h0; r < h1; r++)
                        for (int c = w0; c < w1; c++) s += f[(size_t)r * W + c];
                    t[p * Q + q] = s * k;
                }
            }
    }
}

rt_status rtp_cpu_avgpool_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in,
                              const rt_pool_desc *d, rt_error *err)
{
    avgpool(b, d, in->data, out->data, 0);
    return RT_OK;
}

rt_status rtp_cpu_avgpool_bwd(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                              const rt_pool_desc *d, rt_error *err)
{
    avgpool(b, d, dout->data, din->data, 1);
    return RT_OK;
}
