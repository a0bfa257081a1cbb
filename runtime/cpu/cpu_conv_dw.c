/* cpu_conv_dw.c - depthwise convolution (groups = C = K: one R x S filter per channel,
 * MobileNet's) on the CPU, direct: im2col + sgemm per group would make C GEMM calls of a
 * single output row each per image.
 *
 * Each (image, channel) plane is copied once into the thread's zero-bordered buffer,
 * split by column into `stride` phases (column j of phase ph is padded column
 * j * stride + ph), so that every tap of every stride reads a contiguous run: output row
 * p, tap (r, s) reads phase s % stride, row p * stride + r, from column s / stride on.
 * The row loops are built for AVX-512 and AVX2 beside the baseline (RTP_SPAN) and add
 * the taps in (r, s) order, so the bits do not depend on the instruction set; planes are
 * independent, so neither do they depend on the thread count. The weight gradient runs
 * a channel per thread over the images in order: per tap, a row of partial sums over
 * the images and output rows, summed in order at the end.
 * Planes of 256 positions (16x16) and fewer go to cpu_conv_dw_lanes.c (the channels in the
 * vector lanes, no bordered copy).
 * rtp_cpu_conv_dw says whether a convolution takes this path: a depthwise one (channel
 * multiplier 1) on a backend with the direct loops (KILN_CPU_CONV=im2col leaves it to
 * cpu_conv.c's grouped im2col + sgemm, for comparisons).
 */
#include <omp.h>
#include <string.h>

#include "cpu_conv_layout.h"
#include "cpu_internal.h"

typedef struct geom {
    int st, Hp, Wph; /* stride, padded rows, columns of a phase */
    size_t ps;       /* floats of one phase */
    size_t plane;    /* floats of the buffer (st phases) */
    size_t per;      /* floats of scratch per thread: the buffer, then R*S rows of Q */
} geom;

static geom geom_of(const rt_conv_desc *d)
{
    geom g;
    g.st = d->stride;
    g.Hp = d->H + 2 * d->pad;
    int Wp = d->W + 2 * d->pad;
    /* room for the last tap's read of Q columns from column (S-1)/st */
    int need = d->Q + (d->S - 1) / g.st;
    g.Wph = (Wp + g.st - 1) / g.st;
    if (g.Wph < need) g.Wph = need;
    g.ps = (size_t)g.Hp * g.Wph;
    g.plane = rtp_r16(g.ps * g.st);
    g.per = g.plane + rtp_r16((size_t)d->R * d->S * d->Q);
    return g;
}

int rtp_cpu_conv_dw(rt_backend *b, const rt_conv_desc *d)
{
    const rtp_cpu *c = b->impl;
    return c && c->convk && rt_conv_groups(d) == d->C && d->K == d->C;
}

size_t rtp_cpu_conv_dw_workspace(rt_backend *b, const rt_conv_desc *d)
{
    if (rtp_cpu_conv_dw_lanes(d)) return rtp_cpu_conv_dw_lanes_workspace(b, d);
    size_t T = (size_t)(b->threads > 0 ? b->threads : 1);
    return T * geom_of(d).per * sizeof(float);
}

/* buf <- the plane x (H x W) zero-bordered by pad, in its stride phases */
static void load(float *buf, const float *x, const rt_conv_desc *d, const geom *g)
{
    memset(buf, 0, g->ps * g->st * sizeof *buf);
    const int pad = d->pad, st = g->st;
    for (int h = 0; h < d->H; h++) {
        const float *row = x + (size_t)h * d->W;
        float *dst = buf + (size_t)(h + pad) * g->Wph;
        if (st == 1) {
            memcpy(dst + pad, row, (size_t)d->W * sizeof *row);
            continue;
        }
        for (int w = 0; w < d->W; w++) {
            int col = w + pad;
            dst[(size_t)(col % st) * g->ps + col / st] = row[w];
        }
    }
}

/* y (Q) = bias + sum over taps of w[r S + s] * src rows: src is row p*st of phase 0 */
RTP_SPAN static void row_fwd(float *restrict y, const float *restrict src, const float *restrict w,
                             float bias, int R, int S, int st, size_t ps, int Wph, int Q)
{
    for (int q = 0; q < Q; q++) y[q] = bias;
    for (int r = 0; r < R; r++)
        for (int s = 0; s < S; s++) {
            const float *x = src + (size_t)(s % st) * ps + (size_t)r * Wph + s / st;
            const float k = w[r * S + s];
            for (int q = 0; q < Q; q++) y[q] += k * x[q];
        }
}

/* the rows of dbuf that output row p read get w * dy (the taps in order) */
RTP_SPAN static void row_bwd(float *restrict dst, const float *restrict dy, const float *restrict w,
                             int R, int S, int st, size_t ps, int Wph, int Q)
{
    for (int r = 0; r < R; r++)
        for (int s = 0; s < S; s++) {
            float *x = dst + (size_t)(s % st) * ps + (size_t)r * Wph + s / st;
            const float k = w[r * S + s];
            for (int q = 0; q < Q; q++) x[q] += k * dy[q];
        }
}

/* acc rows (R*S x Q) += dy * each tap's source row */
RTP_SPAN static void row_wgrad(float *restrict acc, const float *restrict dy,
                               const float *restrict src, int R, int S, int st, size_t ps, int Wph,
                               int Q)
{
    for (int r = 0; r < R; r++)
        for (int s = 0; s < S; s++) {
            const float *x = src + (size_t)(s % st) * ps + (size_t)r * Wph + s / st;
            float *a = acc + (size_t)(r * S + s) * Q;
            for (int q = 0; q < Q; q++) a[q] += dy[q] * x[q];
        }
}

static int threads(rt_backend *b, size_t work)
{
    return work < 2 || b->threads < 2 ? 1 : b->threads;
}

rt_status rtp_cpu_conv_dw_fwd(rt_backend *b, rt_tensor *out, double *mom, const rt_tensor *in,
                              const rt_tensor *w, const rt_tensor *bias, const rt_conv_desc *d,
                              rt_error *err)
{
    if (rtp_cpu_conv_dw_lanes(d))
        return rtp_cpu_conv_dw_lanes_fwd(b, out, mom, in, w, bias, d, err);
    float *ws = rtp_cpu_scratch(b, rtp_cpu_conv_dw_workspace(b, d), err);
    if (!ws) return err ? err->code : RT_EINVAL;
    const geom g = geom_of(d);
    const int C = d->C, P = d->P, Q = d->Q, RS = d->R * d->S;
    const size_t hw = (size_t)d->H * d->W, pq = (size_t)P * Q;
    const long planes = (long)d->N * C;
    const float *X = in->data, *Wt = w->data, *B = bias ? bias->data : NULL;
    float *Y = out->data;
#pragma omp parallel num_threads(threads(b, (size_t)planes))
    {
        float *buf = ws + g.per * (size_t)omp_get_thread_num();
#pragma omp for schedule(static)
        for (long i = 0; i < planes; i++) {
            const int c = (int)(i % C);
            float *y = Y + pq * (size_t)i;
            load(buf, X + hw * (size_t)i, d, &g);
            for (int p = 0; p < P; p++)
                row_fwd(y + (size_t)p * Q, buf + (size_t)p * g.st * g.Wph, Wt + (size_t)c * RS,
                        B ? B[c] : 0.0f, d->R, d->S, g.st, g.ps, g.Wph, Q);
            if (mom) rtp_cpu_plane_moments(mom + (size_t)i * (RT_MOMENT_FLOATS / 2), y, 1, pq);
        }
    }
    return RT_OK;
}

rt_status rtp_cpu_conv_dw_bwd_data(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                   const rt_tensor *w, const rt_conv_desc *d, rt_error *err)
{
    if (rtp_cpu_conv_dw_lanes(d)) return rtp_cpu_conv_dw_lanes_bwd_data(b, din, dout, w, d, err);
    float *ws = rtp_cpu_scratch(b, rtp_cpu_conv_dw_workspace(b, d), err);
    if (!ws) return err ? err->code : RT_EINVAL;
    const geom g = geom_of(d);
    const int C = d->C, P = d->P, Q = d->Q, RS = d->R * d->S, pad = d->pad, st = g.st;
    const size_t hw = (size_t)d->H * d->W, pq = (size_t)P * Q;
    const long planes = (long)d->N * C;
    const float *DY = dout->data, *Wt = w->data;
    float *DX = din->data;
#pragma omp parallel num_threads(threads(b, (size_t)planes))
    {
        float *buf = ws + g.per * (size_t)omp_get_thread_num();
#pragma omp for schedule(static)
        for (long i = 0; i < planes; i++) {
            const int c = (int)(i % C);
            const float *dy = DY + pq * (size_t)i;
            memset(buf, 0, g.ps * st * sizeof *buf);
            for (int p = 0; p < P; p++)
                row_bwd(buf + (size_t)p * st * g.Wph, dy + (size_t)p * Q, Wt + (size_t)c * RS, d->R,
                        d->S, st, g.ps, g.Wph, Q);
            float *dx = DX + hw * (size_t)i;
            for (int h = 0; h < d->H; h++) {
                const float *src = buf + (size_t)(h + pad) * g.Wph;
                float *row = dx + (size_t)h * d->W;
                if (st == 1) {
                    memcpy(row, src + pad, (size_t)d->W * sizeof *row);
                    continue;
                }
                for (int x = 0; x < d->W; x++) {
                    int col = x + pad;
                    row[x] = src[(size_t)(col % st) * g.ps + col / st];
                }
            }
        }
    }
    return RT_OK;
}

rt_status rtp_cpu_conv_dw_bwd_filter(rt_backend *b, rt_tensor *dw, rt_tensor *dbias,
                                     const rt_tensor *dout, const rt_tensor *in,
                                     const rt_conv_desc *d, rt_error *err)
{
    if (rtp_cpu_conv_dw_lanes(d))
        return rtp_cpu_conv_dw_lanes_bwd_filter(b, dw, dbias, dout, in, d, err);
    float *ws = rtp_cpu_scratch(b, rtp_cpu_conv_dw_workspace(b, d), err);
    if (!ws) return err ? err->code : RT_EINVAL;
    const geom g = geom_of(d);
    const int C = d->C, P = d->P, Q = d->Q, RS = d->R * d->S;
    const size_t hw = (size_t)d->H * d->W, pq = (size_t)P * Q;
    const float *X = in->data, *DY = dout->data;
    float *DW = dw->data, *DB = dbias ? dbias->data : NULL;
#pragma omp parallel num_threads(threads(b, (size_t)C))
    {
        float *buf = ws + g.per * (size_t)omp_get_thread_num(), *acc = buf + g.plane;
#pragma omp for schedule(static)
        for (int c = 0; c < C; c++) {
            memset(acc, 0, (size_t)RS * Q * sizeof *acc);
            float sb = 0.0f;
            for (int n = 0; n < d->N; n++) {
                const size_t i = (size_t)n * C + c;
                const float *dy = DY + pq * i;
                load(buf, X + hw * i, d, &g);
                for (int p = 0; p < P; p++)
                    row_wgrad(acc, dy + (size_t)p * Q, buf + (size_t)p * g.st * g.Wph, d->R, d->S,
                              g.st, g.ps, g.Wph, Q);
                if (DB) sb += rtp_cpu_row_sum(dy, (int)pq);
            }
            for (int t = 0; t < RS; t++)
                DW[(size_t)c * RS + t] = rtp_cpu_row_sum(acc + (size_t)t * Q, Q);
            if (DB) DB[c] = sb;
        }
    }
    return RT_OK;
}
