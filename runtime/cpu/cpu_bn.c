/* cpu_bn.c - batchnorm2d on the CPU (PyTorch BatchNorm2d semantics).
 *
 * Training statistics take one pass over the data (OpenMP over C) and the output a second:
 * each (n, c) plane's moments (cpu_bn_stats.c), merged in image order, so they are
 * reproducible; after a convolution that took the moments as it stored its output
 * (bn_fwd_train_moments), only the second pass is left. The backward pass likewise takes
 * sum dy and sum dy*(x-mean) in one pass and writes dx in a second. The elementwise passes
 * go through the planes in memory order, each thread a contiguous run (taken channel by
 * channel, every plane is a jump of C planes: on ResNet-20's 16x16 and 8x8 planes the
 * passes ran 13-37% slower: bench/README.md), and the backward's per-plane sums are added
 * per channel in image order, so the bits do not depend on the order or the thread count.
 * Planes of 16 values or fewer (MobileNetV2's last stages) go by blocks of channels
 * instead (cpu_bn_small.c, the same bits), a fused residual add included. A large output
 * with a relu or add fused is written with streaming stores (cpu_bn_stream.c).
 * A relu fused after the norm (rt_bn_desc.relu, bn_relu_bwd) costs no pass of its own: it
 * is applied as the output is written, and its mask is recomputed in both backward passes.
 * A residual add fused after the norm (bn_add_fwd_train, bn_add_bwd; and the relu after
 * the add) likewise: the output pass adds the other term, and the backward's first pass
 * reads the gradient and the output's sign, keeps the masked gradient (the add's, which
 * the skip needs) and takes the sums from it, so the add costs no pass of its own either.
 * The biased variance normalises, the unbiased one (M/(M-1)) feeds the running variance,
 * and running = (1-momentum)*running + momentum*batch, as PyTorch does.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cpu_internal.h"

/* A relu fused after the norm (rt_bn_desc.relu) scales each element by k = v > 0 ? 1 : lo,
 * v = x * g + sh being the norm's output: lo = 0 applies the relu (the arithmetic of
 * cpu_act.c's relu, so the fused ops equal the two layers bit for bit), lo = 1 leaves
 * every element as it is (v * 1 and dy * 1 are exact). The backward recomputes v from x
 * exactly as the forward computed it (-ffp-contract=off) instead of reading the output. */

/* sum of dy*k and of dy*k * (x - mean) over n floats: 16 partial sums each, fixed order */
RTP_SPAN static void row_grads(const float *restrict dy, const float *restrict x, size_t n,
                               float mean, float g, float sh, float lo, double *sdy, double *sdyx)
{
    float a[16] = {0}, q[16] = {0};
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) {
            float v = x[i + j] * g + sh, d = dy[i + j] * (v > 0.0f ? 1.0f : lo);
            a[j] += d;
            q[j] += d * (x[i + j] - mean);
        }
    double ta = 0.0, tq = 0.0;
    for (int j = 0; j < 16; j++) ta += a[j], tq += q[j];
    for (; i < n; i++) {
        float v = x[i] * g + sh, d = dy[i] * (v > 0.0f ? 1.0f : lo);
        ta += d, tq += (double)d * (x[i] - mean);
    }
    *sdy += ta, *sdyx += tq;
}

/* y = v * k, v = x * g + sh, over n floats */
RTP_SPAN static void row_affine(float *restrict y, const float *restrict x, size_t n, float g,
                                float sh, float lo)
{
    for (size_t i = 0; i < n; i++) {
        float v = x[i] * g + sh;
        y[i] = v * (v > 0.0f ? 1.0f : lo);
    }
}

/* y = v * k, v = (x * g + sh) + s, over n floats: the sum of a residual add fused after
 * the norm (the arithmetic of cpu_backend.c's add and add_relu) */
RTP_SPAN static void row_affine_add(float *restrict y, const float *restrict x,
                                    const float *restrict s, size_t n, float g, float sh, float lo)
{
    for (size_t i = 0; i < n; i++) {
        float v = (x[i] * g + sh) + s[i];
        y[i] = v * (v > 0.0f ? 1.0f : lo);
    }
}

/* The backward of that sum: d = dy * k, or (dy + dy2) * k when the output has a second
 * gradient (two: dy2 is read), k from the output y (y > 0 exactly where the sum is, as
 * relu_bwd reads it), kept in keep; the sums of d and of d * (x - mean), as row_grads.
 * Inlined into the two spans below with `two` a constant, each loop is branch-free. */
static inline __attribute__((always_inline)) void
grads_keep(float *restrict keep, const float *restrict dy, const float *restrict dy2,
           const float *restrict y, const float *restrict x, size_t n, float mean, float lo,
           double *sdy, double *sdyx, int two)
{
    float a[16] = {0}, q[16] = {0};
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) {
            float g = two ? dy[i + j] + dy2[i + j] : dy[i + j];
            float d = g * (y[i + j] > 0.0f ? 1.0f : lo);
            keep[i + j] = d;
            a[j] += d;
            q[j] += d * (x[i + j] - mean);
        }
    double ta = 0.0, tq = 0.0;
    for (int j = 0; j < 16; j++) ta += a[j], tq += q[j];
    for (; i < n; i++) {
        float g = two ? dy[i] + dy2[i] : dy[i];
        float d = g * (y[i] > 0.0f ? 1.0f : lo);
        keep[i] = d;
        ta += d, tq += (double)d * (x[i] - mean);
    }
    *sdy += ta, *sdyx += tq;
}

RTP_SPAN static void row_grads_keep(float *restrict keep, const float *restrict dy,
                                    const float *restrict y, const float *restrict x, size_t n,
                                    float mean, float lo, double *sdy, double *sdyx)
{
    grads_keep(keep, dy, NULL, y, x, n, mean, lo, sdy, sdyx, 0);
}

RTP_SPAN static void row_grads_keep2(float *restrict keep, const float *restrict dy,
                                     const float *restrict dy2, const float *restrict y,
                                     const float *restrict x, size_t n, float mean, float lo,
                                     double *sdy, double *sdyx)
{
    grads_keep(keep, dy, dy2, y, x, n, mean, lo, sdy, sdyx, 1);
}

/* dx = kk * (m*dy*k - a - xhat*bq), xhat = (x - mean)*inv, over n floats */
RTP_SPAN static void row_dx(float *restrict dx, const float *restrict dy, const float *restrict x,
                            size_t n, float mean, float inv, float kk, float m, float a, float bq,
                            float g, float sh, float lo)
{
    for (size_t i = 0; i < n; i++) {
        float v = x[i] * g + sh, d = dy[i] * (v > 0.0f ? 1.0f : lo);
        float xh = (x[i] - mean) * inv;
        dx[i] = kk * (m * d - a - xh * bq);
    }
}

/* plane r = (n, c) of the training forward's output: y = v * k, v = x * g + sh (+ S);
 * with streaming stores when stream (cpu_bn_stream.c) */
static void fwd_out(float *Y, const float *X, const float *S, size_t r, int c, size_t hw,
                    const float *G, const float *Bt, const float *SM, const float *SI, float lo,
                    int stream)
{
    const float mf = SM[c], g = G[c] * SI[c], sh = Bt[c] - mf * g;
    const size_t at = r * hw;
    if (stream) rtp_cpu_bn_affine_stream(Y + at, X + at, S ? S + at : NULL, hw, g, sh, lo);
    else if (S) row_affine_add(Y + at, X + at, S + at, hw, g, sh, lo);
    else row_affine(Y + at, X + at, hw, g, sh, lo);
}

/* The training forward; with S (a residual add fused after the norm), out = bn(in) + S;
 * the batch statistics from the planes' moments (mom, N x C planes of RT_MOMENT_FLOATS),
 * or taken from in when mom is NULL. */
static void bn_fwd_train(rt_backend *b, rt_tensor *out, rt_tensor *save_mean,
                         rt_tensor *save_invstd, rt_tensor *running_mean, rt_tensor *running_var,
                         const rt_tensor *in, const float *S, const rt_tensor *gamma,
                         const rt_tensor *beta, const double *mom, const rt_bn_desc *d)
{
    const int C = d->C;
    const size_t hw = (size_t)d->H * d->W, M = (size_t)d->N * hw, step = RT_MOMENT_FLOATS / 2;
    const float *X = in->data, *G = gamma->data, *Bt = beta->data;
    float *Y = out->data, *SM = save_mean->data, *SI = save_invstd->data;
    float *RM = running_mean->data, *RV = running_var->data;
    const float lo = d->relu ? 0.0f : 1.0f;
    /* planes of 16 floats or fewer by channel block (cpu_bn_small.c), larger ones in
     * memory order (bwd_rows' reason) */
    const int blocked = rtp_cpu_bn_small(hw);
    const size_t planes = (size_t)d->N * C;
    /* a relu or add fused: the output goes to another layer (cpu_bn_stream.c) */
    const int stream = !blocked && (d->relu || S) && rtp_cpu_bn_stream(Y, hw, planes * hw);
#pragma omp parallel num_threads(b->threads)
    {
#pragma omp for schedule(static)
        for (int c = 0; c < C; c++) {
            rtp_moments acc = {0};
            for (int n = 0; n < d->N; n++) {
                double own[RT_MOMENT_FLOATS / 2];
                const double *pm = mom ? mom + ((size_t)n * C + c) * step : own;
                if (!mom) rtp_cpu_plane_moments(own, X + ((size_t)n * C + c) * hw, 1, hw);
                rtp_cpu_moments_add(&acc, pm, hw);
            }
            double mean = acc.mean, var = acc.m2 / (double)M;
            SM[c] = (float)mean;
            SI[c] = (float)(1.0 / sqrt(var + d->eps));
            double unbiased = M > 1 ? acc.m2 / (double)(M - 1) : var;
            RM[c] = (float)((1.0 - d->momentum) * RM[c] + d->momentum * mean);
            RV[c] = (float)((1.0 - d->momentum) * RV[c] + d->momentum * unbiased);
        }
        if (!blocked) {
#pragma omp for schedule(static) nowait
            for (size_t r = 0; r < planes; r++)
                fwd_out(Y, X, S, r, (int)(r % (size_t)C), hw, G, Bt, SM, SI, lo, stream);
            if (stream) rtp_cpu_bn_stream_fence();
        }
    }
    if (blocked) rtp_cpu_bn_small_out(b, Y, X, S, d->N, C, (int)hw, G, Bt, SM, SI, lo);
}

rt_status rtp_cpu_bn_fwd_train(rt_backend *b, rt_tensor *out, rt_tensor *save_mean,
                               rt_tensor *save_invstd, rt_tensor *running_mean,
                               rt_tensor *running_var, const rt_tensor *in, const rt_tensor *gamma,
                               const rt_tensor *beta, const rt_bn_desc *d, rt_error *err)
{
    bn_fwd_train(b, out, save_mean, save_invstd, running_mean, running_var, in, NULL, gamma, beta,
                 NULL, d);
    return RT_OK;
}

rt_status rtp_cpu_bn_add_fwd_train(rt_backend *b, rt_tensor *out, rt_tensor *save_mean,
                                   rt_tensor *save_invstd, rt_tensor *running_mean,
                                   rt_tensor *running_var, const rt_tensor *in,
                                   const rt_tensor *skip, const rt_tensor *gamma,
                                   const rt_tensor *beta, const rt_bn_desc *d, rt_error *err)
{
    bn_fwd_train(b, out, save_mean, save_invstd, running_mean, running_var, in, skip->data, gamma,
                 beta, NULL, d);
    return RT_OK;
}

rt_status rtp_cpu_bn_fwd_train_moments(rt_backend *b, rt_tensor *out, rt_tensor *save_mean,
                                       rt_tensor *save_invstd, rt_tensor *running_mean,
                                       rt_tensor *running_var, const rt_tensor *in,
                                       const rt_tensor *skip, const rt_tensor *gamma,
                                       const rt_tensor *beta, const rt_tensor *moments,
                                       const rt_bn_desc *d, rt_error *err)
{
    bn_fwd_train(b, out, save_mean, save_invstd, running_mean, running_var, in,
                 skip ? skip->data : NULL, gamma, beta, moments->data, d);
    return RT_OK;
}

rt_status rtp_cpu_bn_fwd_eval(rt_backend *b, rt_tensor *out, const rt_tensor *in,
                              const rt_tensor *gamma, const rt_tensor *beta,
                              const rt_tensor *running_mean, const rt_tensor *running_var,
                              const rt_bn_desc *d, rt_error *err)
{
    const int C = d->C;
    const size_t hw = (size_t)d->H * d->W;
    const float *X = in->data, *G = gamma->data, *Bt = beta->data;
    const float *RM = running_mean->data, *RV = running_var->data;
    float *Y = out->data;
    const float lo = d->relu ? 0.0f : 1.0f;
#pragma omp parallel for schedule(static) num_threads(b->threads)
    for (int c = 0; c < C; c++) {
        float g = G[c] / sqrtf(RV[c] + d->eps), sh = Bt[c] - RM[c] * g;
        for (int n = 0; n < d->N; n++)
            row_affine(Y + ((size_t)n * C + c) * hw, X + ((size_t)n * C + c) * hw, hw, g, sh, lo);
    }
    return RT_OK;
}

/* plane r = (n, c)'s sum of dy and of dy * (x - mean), added to *sdy, *sdyx (and its
 * part of KEEP) */
static void bwd_sums(const rtp_bn_bwd_args *A, size_t r, int c, double *sdy, double *sdyx)
{
    const float mean = A->SM[c], inv = A->SI[c];
    /* the forward's output transform (bn_fwd_train), for the relu's mask */
    const float g = A->Bt ? A->G[c] * inv : 0.0f, sh = A->Bt ? A->Bt[c] - mean * g : 0.0f;
    const size_t at = r * A->hw;
    if (A->KEEP && A->DY2)
        row_grads_keep2(A->KEEP + at, A->DY + at, A->DY2 + at, A->Y + at, A->X + at, A->hw, mean,
                        A->lo, sdy, sdyx);
    else if (A->KEEP)
        row_grads_keep(A->KEEP + at, A->DY + at, A->Y + at, A->X + at, A->hw, mean, A->lo, sdy,
                       sdyx);
    else row_grads(A->DY + at, A->X + at, A->hw, mean, g, sh, A->lo, sdy, sdyx);
}

/* channel c's dbeta = sum dy, dgamma = sum dy * xhat */
static void bwd_finish(const rtp_bn_bwd_args *A, int c, double sdy, double sdyx)
{
    A->DB[c] = (float)sdy;
    A->DG[c] = (float)(sdyx * A->SI[c]);
}

/* plane r = (n, c)'s dx = gamma*inv/M * (M*dy - sum dy - xhat * sum dy*xhat) */
static void bwd_dx(const rtp_bn_bwd_args *A, size_t r, int c)
{
    const float mean = A->SM[c], inv = A->SI[c];
    const float g = A->Bt ? A->G[c] * inv : 0.0f, sh = A->Bt ? A->Bt[c] - mean * g : 0.0f;
    const float kk = A->G[c] * inv / (float)A->M;
    const float *D = A->KEEP ? A->KEEP : A->DY, dlo = A->KEEP ? 1.0f : A->lo; /* masked already */
    const size_t at = r * A->hw;
    row_dx(A->DX + at, D + at, A->X + at, A->hw, mean, inv, kk, (float)A->M, A->DB[c], A->DG[c], g,
           sh, dlo);
}

/* Whether the planes can be taken in memory order (bwd_rows): DX holds each plane's
 * two sums (4 floats) until the second pass writes it, so it must be its own buffer,
 * aligned for doubles, with planes of 16 floats or more (smaller ones: few, by channel). */
static int rows_fit(const rtp_bn_bwd_args *A)
{
    const float *dx = A->DX;
    return A->hw >= 16 && !((uintptr_t)dx % sizeof(double)) && dx != A->X && dx != A->DY &&
           dx != A->DY2 && dx != A->KEEP && dx != A->Y;
}

/* The backward by channel: each thread takes whole channels, plane by plane (n order). */
static void bwd_channels(rt_backend *b, const rtp_bn_bwd_args *A)
{
#pragma omp parallel for schedule(static) num_threads(b->threads)
    for (int c = 0; c < A->C; c++) {
        double sdy = 0.0, sdyx = 0.0;
        for (int n = 0; n < A->N; n++) bwd_sums(A, (size_t)n * A->C + c, c, &sdy, &sdyx);
        bwd_finish(A, c, sdy, sdyx);
        for (int n = 0; n < A->N; n++) bwd_dx(A, (size_t)n * A->C + c, c);
    }
}

/* The backward in memory order, the same bits as bwd_channels: each thread takes a
 * contiguous run of planes (the prefetchers stream it; by channel, every plane is a jump
 * of C planes, which on 8x8 planes left a pass at a third of the bandwidth). The first
 * pass parks each plane's two sums in DX; the channel's are then added in n order, as
 * bwd_channels adds them, and the second pass writes DX over them. */
static void bwd_rows(rt_backend *b, const rtp_bn_bwd_args *A)
{
    const size_t planes = (size_t)A->N * A->C;
    double *part = (double *)(void *)A->DX;
#pragma omp parallel num_threads(b->threads)
    {
#pragma omp for schedule(static)
        for (size_t r = 0; r < planes; r++) {
            double s[2] = {0.0, 0.0};
            bwd_sums(A, r, (int)(r % (size_t)A->C), &s[0], &s[1]);
            memcpy(part + 2 * r, s, sizeof s);
        }
#pragma omp for schedule(static)
        for (int c = 0; c < A->C; c++) {
            double sdy = 0.0, sdyx = 0.0, s[2];
            for (int n = 0; n < A->N; n++) {
                memcpy(s, part + 2 * ((size_t)n * A->C + c), sizeof s);
                sdy += s[0], sdyx += s[1];
            }
            bwd_finish(A, c, sdy, sdyx);
        }
#pragma omp for schedule(static)
        for (size_t r = 0; r < planes; r++) bwd_dx(A, r, (int)(r % (size_t)A->C));
    }
}

static void bn_bwd(rt_backend *b, rt_tensor *din, rt_tensor *dgamma, rt_tensor *dbeta,
                   const rt_tensor *dout, const float *DY2, float *KEEP, const float *Y,
                   const rt_tensor *in, const rt_tensor *gamma, const float *Bt,
                   const rt_tensor *save_mean, const rt_tensor *save_invstd, const rt_bn_desc *d)
{
    const size_t hw = (size_t)d->H * d->W;
    const rtp_bn_bwd_args A = {.X = in->data,
                               .DY = dout->data,
                               .DY2 = DY2,
                               .Y = Y,
                               .G = gamma->data,
                               .Bt = Bt,
                               .SM = save_mean->data,
                               .SI = save_invstd->data,
                               .KEEP = KEEP,
                               .DX = din->data,
                               .DG = dgamma->data,
                               .DB = dbeta->data,
                               .N = d->N,
                               .C = d->C,
                               .hw = hw,
                               .M = (size_t)d->N * hw,
                               .lo = Bt || (KEEP && d->relu) ? 0.0f : 1.0f};
    if (rtp_cpu_bn_small(hw)) rtp_cpu_bn_small_bwd(b, &A);
    else if (rows_fit(&A)) bwd_rows(b, &A);
    else bwd_channels(b, &A);
}

rt_status rtp_cpu_bn_bwd(rt_backend *b, rt_tensor *din, rt_tensor *dgamma, rt_tensor *dbeta,
                         const rt_tensor *dout, const rt_tensor *in, const rt_tensor *gamma,
                         const rt_tensor *save_mean, const rt_tensor *save_invstd,
                         const rt_bn_desc *d, rt_error *err)
{
    bn_bwd(b, din, dgamma, dbeta, dout, NULL, NULL, NULL, in, gamma, NULL, save_mean, save_invstd,
           d);
    return RT_OK;
}

rt_status rtp_cpu_bn_relu_bwd(rt_backend *b, rt_tensor *din, rt_tensor *dgamma, rt_tensor *dbeta,
                              const rt_tensor *dout, const rt_tensor *in, const rt_tensor *gamma,
                              const rt_tensor *beta, const rt_tensor *save_mean,
                              const rt_tensor *save_invstd, const rt_bn_desc *d, rt_error *err)
{
    bn_bwd(b, din, dgamma, dbeta, dout, NULL, NULL, NULL, in, gamma, beta->data, save_mean,
           save_invstd, d);
    return RT_OK;
}

rt_status rtp_cpu_bn_add_bwd(rt_backend *b, rt_tensor *din, rt_tensor *dgamma, rt_tensor *dbeta,
                             rt_tensor *keep, const rt_tensor *dout, const rt_tensor *dout2,
                             const rt_tensor *out, const rt_tensor *in, const rt_tensor *gamma,
                             const rt_tensor *save_mean, const rt_tensor *save_invstd,
                             const rt_bn_desc *d, rt_error *err)
{
    bn_bwd(b, din, dgamma, dbeta, dout, dout2 ? dout2->data : NULL, keep->data, out->data, in,
           gamma, NULL, save_mean, save_invstd, d);
    return RT_OK;
}
