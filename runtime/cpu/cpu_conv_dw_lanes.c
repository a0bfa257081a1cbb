/* cpu_conv_dw_lanes.c - depthwise convolution on small planes (MobileNetV2's on 32x32
 * images: 16x16 down to 1x1) with the channels in the vector lanes.
 *
 * cpu_conv_dw.c's plane loops vectorise along a row: on an 8x8 plane or smaller a row is
 * 8 floats or fewer, and copying each plane into a zero-bordered buffer costs more than
 * the taps (on 16x16 planes this path still took 30 % less time in MobileNetV2's step,
 * bench/README.md). Here each image is transposed once from (C, H*W) to (H*W, C), so that a
 * position holds all of its channels side by side, and every tap is one multiply-add
 * along C (96 to 960 channels: whole vectors). Borders need no buffer: the taps that
 * fall outside the plane are skipped (a padded zero adds nothing).
 *   forward      y[p,q,:] = bias + sum over the (r, s) in order of w[r,s,:] x[ih,iw,:]
 *   input grad   dx[h,w,:] = sum over the taps that reach (h, w), in (r, s) order
 *   weight grad  dw[:,r,s] = sum over images and positions of dy[p,q,:] x[ih,iw,:]
 * The forward and the input gradient work an image at a time (images are independent);
 * the weight gradient sums fixed groups of RTP_CONV_GROUP images, whichever thread runs
 * them, and then the groups in order: the bits depend neither on the thread count nor
 * on the instruction set (the loops are built for AVX-512 and AVX2 beside the baseline,
 * the same operations in the same order).
 * rtp_cpu_conv_dw_lanes says whether a depthwise convolution takes this path (planes of
 * at most RTP_DW_LANES_HW positions); cpu_conv_dw.c hands those over.
 */
#include <omp.h>
#include <string.h>

#include "cpu_conv_layout.h"
#include "cpu_internal.h"

#define RTP_DW_LANES_HW 256

int rtp_cpu_conv_dw_lanes(const rt_conv_desc *d) { return d->H * d->W <= RTP_DW_LANES_HW; }

/* Scratch (floats): the weights as (R*S, C), then per thread an image's input and
 * output planes as (positions, C), then one (R*S + 1, C) partial sum per image group. */
typedef struct geom {
    size_t wt, per, acc;
} geom;

static geom geom_of(const rt_conv_desc *d)
{
    const size_t C = (size_t)d->C, RS = (size_t)d->R * d->S;
    geom g = {rtp_r16(RS * C), rtp_r16((size_t)d->H * d->W * C) + rtp_r16((size_t)d->P * d->Q * C),
              rtp_r16((RS + 1) * C)};
    return g;
}

static int team(rt_backend *b, int n) { return n < 2 || b->threads < 2 ? 1 : b->threads; }

size_t rtp_cpu_conv_dw_lanes_workspace(rt_backend *b, const rt_conv_desc *d)
{
    const geom g = geom_of(d);
    size_t T = (size_t)(b->threads > 0 ? b->threads : 1);
    return (g.wt + T * g.per + (size_t)rtp_conv_groups(d->N) * g.acc) * sizeof(float);
}

/* t (n, m) <- a (m, n) */
RTP_SPAN static void transpose(float *restrict t, const float *restrict a, int m, int n)
{
    if (n == 1 || m == 1) {
        memcpy(t, a, (size_t)m * n * sizeof *t);
        return;
    }
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) t[(size_t)j * m + i] = a[(size_t)i * n + j];
}

/* yt (P*Q, C) = bias + the taps over xt (H*W, C); wt is (R*S, C) */
RTP_SPAN static void fwd_image(float *restrict yt, const float *restrict xt,
                               const float *restrict wt, const float *restrict bias,
                               const rt_conv_desc *d)
{
    const int C = d->C, st = d->stride, pad = d->pad;
    for (int p = 0; p < d->P; p++)
        for (int q = 0; q < d->Q; q++) {
            float *restrict y = yt + (size_t)(p * d->Q + q) * C;
            for (int c = 0; c < C; c++) y[c] = bias ? bias[c] : 0.0f;
            for (int r = 0; r < d->R; r++) {
                const int ih = p * st - pad + r;
                if (ih < 0 || ih >= d->H) continue;
                for (int s = 0; s < d->S; s++) {
                    const int iw = q * st - pad + s;
                    if (iw < 0 || iw >= d->W) continue;
                    const float *restrict x = xt + (size_t)(ih * d->W + iw) * C;
                    const float *restrict k = wt + (size_t)(r * d->S + s) * C;
                    for (int c = 0; c < C; c++) y[c] += k[c] * x[c];
                }
            }
        }
}

/* dxt (H*W, C) = the taps that reach each position, times dyt (P*Q, C) */
RTP_SPAN static void bwd_image(float *restrict dxt, const float *restrict dyt,
                               const float *restrict wt, const rt_conv_desc *d)
{
    const int C = d->C, st = d->stride, pad = d->pad;
    for (int h = 0; h < d->H; h++)
        for (int w = 0; w < d->W; w++) {
            float *restrict dx = dxt + (size_t)(h * d->W + w) * C;
            for (int c = 0; c < C; c++) dx[c] = 0.0f;
            for (int r = 0; r < d->R; r++) {
                const int ph = h + pad - r;
                if (ph < 0 || ph % st || ph / st >= d->P) continue;
                for (int s = 0; s < d->S; s++) {
                    const int qw = w + pad - s;
                    if (qw < 0 || qw % st || qw / st >= d->Q) continue;
                    const float *restrict dy = dyt + (size_t)(ph / st * d->Q + qw / st) * C;
                    const float *restrict k = wt + (size_t)(r * d->S + s) * C;
                    for (int c = 0; c < C; c++) dx[c] += k[c] * dy[c];
                }
            }
        }
}

/* acc (R*S, C) += dyt (P*Q, C) times each tap's input xt (H*W, C); accb (C) += dyt's
 * positions unless NULL */
RTP_SPAN static void wgrad_image(float *restrict acc, float *restrict accb,
                                 const float *restrict dyt, const float *restrict xt,
                                 const rt_conv_desc *d)
{
    const int C = d->C, st = d->stride, pad = d->pad;
    for (int p = 0; p < d->P; p++)
        for (int q = 0; q < d->Q; q++) {
            const float *restrict dy = dyt + (size_t)(p * d->Q + q) * C;
            if (accb)
                for (int c = 0; c < C; c++) accb[c] += dy[c];
            for (int r = 0; r < d->R; r++) {
                const int ih = p * st - pad + r;
                if (ih < 0 || ih >= d->H) continue;
                for (int s = 0; s < d->S; s++) {
                    const int iw = q * st - pad + s;
                    if (iw < 0 || iw >= d->W) continue;
                    const float *restrict x = xt + (size_t)(ih * d->W + iw) * C;
                    float *restrict a = acc + (size_t)(r * d->S + s) * C;
                    for (int c = 0; c < C; c++) a[c] += dy[c] * x[c];
                }
            }
        }
}

static float *weights_by_tap(rt_backend *b, const rt_conv_desc *d, const rt_tensor *w,
                             rt_error *err)
{
    float *ws = rtp_cpu_scratch(b, rtp_cpu_conv_dw_lanes_workspace(b, d), err);
    if (ws) transpose(ws, w->data, d->C, d->R * d->S);
    return ws;
}

rt_status rtp_cpu_conv_dw_lanes_fwd(rt_backend *b, rt_tensor *out, double *mom,
                                    const rt_tensor *in, const rt_tensor *w, const rt_tensor *bias,
                                    const rt_conv_desc *d, rt_error *err)
{
    float *ws = weights_by_tap(b, d, w, err);
    if (!ws) return err ? err->code : RT_EINVAL;
    const geom g = geom_of(d);
    const int C = d->C, hw = d->H * d->W, pq = d->P * d->Q;
    const float *X = in->data, *B = bias ? bias->data : NULL;
    float *Y = out->data;
#pragma omp parallel num_threads(team(b, d->N))
    {
        float *xt = ws + g.wt + g.per * (size_t)omp_get_thread_num();
        float *yt = xt + rtp_r16((size_t)hw * C);
#pragma omp for schedule(static)
        for (int n = 0; n < d->N; n++) {
            float *y = Y + (size_t)n * C * pq;
            transpose(xt, X + (size_t)n * C * hw, C, hw);
            fwd_image(yt, xt, ws, B, d);
            transpose(y, yt, pq, C);
            if (mom)
                rtp_cpu_plane_moments(mom + (size_t)n * C * (RT_MOMENT_FLOATS / 2), y, C,
                                      (size_t)pq);
        }
    }
    return RT_OK;
}

rt_status rtp_cpu_conv_dw_lanes_bwd_data(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                         const rt_tensor *w, const rt_conv_desc *d, rt_error *err)
{
    float *ws = weights_by_tap(b, d, w, err);
    if (!ws) return err ? err->code : RT_EINVAL;
    const geom g = geom_of(d);
    const int C = d->C, hw = d->H * d->W, pq = d->P * d->Q;
    const float *DY = dout->data;
    float *DX = din->data;
#pragma omp parallel num_threads(team(b, d->N))
    {
        float *dxt = ws + g.wt + g.per * (size_t)omp_get_thread_num();
        float *dyt = dxt + rtp_r16((size_t)hw * C);
#pragma omp for schedule(static)
        for (int n = 0; n < d->N; n++) {
            transpose(dyt, DY + (size_t)n * C * pq, C, pq);
            bwd_image(dxt, dyt, ws, d);
            transpose(DX + (size_t)n * C * hw, dxt, hw, C);
        }
    }
    return RT_OK;
}

rt_status rtp_cpu_conv_dw_lanes_bwd_filter(rt_backend *b, rt_tensor *dw, rt_tensor *dbias,
                                           const rt_tensor *dout, const rt_tensor *in,
                                           const rt_conv_desc *d, rt_error *err)
{
    float *ws = rtp_cpu_scratch(b, rtp_cpu_conv_dw_lanes_workspace(b, d), err);
    if (!ws) return err ? err->code : RT_EINVAL;
    const geom g = geom_of(d);
    const int C = d->C, hw = d->H * d->W, pq = d->P * d->Q, RS = d->R * d->S;
    const int G = rtp_conv_groups(d->N);
    const float *X = in->data, *DY = dout->data;
    float *DW = dw->data, *DB = dbias ? dbias->data : NULL;
    float *accs = ws + g.wt + g.per * (size_t)(b->threads > 0 ? b->threads : 1);
#pragma omp parallel num_threads(team(b, G))
    {
        float *xt = ws + g.wt + g.per * (size_t)omp_get_thread_num();
        float *dyt = xt + rtp_r16((size_t)hw * C);
#pragma omp for schedule(static)
        for (int grp = 0; grp < G; grp++) {
            float *acc = accs + g.acc * (size_t)grp;
            memset(acc, 0, (size_t)(RS + 1) * C * sizeof *acc);
            const int n1 = (grp + 1) * RTP_CONV_GROUP < d->N ? (grp + 1) * RTP_CONV_GROUP : d->N;
            for (int n = grp * RTP_CONV_GROUP; n < n1; n++) {
                transpose(xt, X + (size_t)n * C * hw, C, hw);
                transpose(dyt, DY + (size_t)n * C * pq, C, pq);
                wgrad_image(acc, DB ? acc + (size_t)RS * C : NULL, dyt, xt, d);
            }
        }
        /* the groups in order, into (C, R*S) */
#pragma omp for schedule(static)
        for (int c = 0; c < C; c++)
            for (int t = 0; t <= RS; t++) {
                if (t == RS && !DB) break;
                float s = 0.0f;
                for (int grp = 0; grp < G; grp++) s += accs[g.acc * (size_t)grp + (size_t)t * C + c];
                if (t < RS) DW[(size_t)c * RS + t] = s;
                else DB[c] = s;
            }
    }
    return RT_OK;
}
