/* cpu_bn.c - batchnorm2d on the CPU (PyTorch BatchNorm2d semantics).
 *
 * Channels are independent: OpenMP over C. Batch statistics are accumulated in double
 * in a fixed order (n, then h*w), so they are reproducible and accurate; the biased
 * variance normalises, the unbiased one (M/(M-1)) feeds the running variance, and
 * running = (1-momentum)*running + momentum*batch, as PyTorch does.
 */
#include <math.h>

#include "cpu_internal.h"

rt_status rtp_cpu_bn_fwd_train(rt_backend *b, rt_tensor *out, rt_tensor *save_mean,
                               rt_tensor *save_invstd, rt_tensor *running_mean,
                               rt_tensor *running_var, const rt_tensor *in, const rt_tensor *gamma,
                               const rt_tensor *beta, const rt_bn_desc *d, rt_error *err)
{
    const int C = d->C;
    const size_t hw = (size_t)d->H * d->W, M = (size_t)d->N * hw;
    const float *X = in->data, *G = gamma->data, *Bt = beta->data;
    float *Y = out->data, *SM = save_mean->data, *SI = save_invstd->data;
    float *RM = running_mean->data, *RV = running_var->data;
#pragma omp parallel for schedule(static) num_threads(b->threads)
    for (int c = 0; c < C; c++) {
        double s = 0.0, ss = 0.0;
        for (int n = 0; n < d->N; n++) {
            const float *x = X + ((size_t)n * C + c) * hw;
            for (size_t i = 0; i < hw; i++) s += x[i];
        }
        double mean = s / (double)M;
        for (int n = 0; n < d->N; n++) {
            const float *x = X + ((size_t)n * C + c) * hw;
            for (size_t i = 0; i < hw; i++) ss += (x[i] - mean) * (x[i] - mean);
        }
        double var = ss / (double)M;
        float inv = (float)(1.0 / sqrt(var + d->eps));
        float mf = (float)mean, g = G[c] * inv, sh = Bt[c] - mf * g;
        for (int n = 0; n < d->N; n++) {
            const float *x = X + ((size_t)n * C + c) * hw;
            float *y = Y + ((size_t)n * C + c) * hw;
            for (size_t i = 0; i < hw; i++) y[i] = x[i] * g + sh;
        }
        SM[c] = mf;
        SI[c] = inv;
        double unbiased = M > 1 ? ss / (double)(M - 1) : var;
        RM[c] = (float)((1.0 - d->momentum) * RM[c] + d->momentum * mean);
        RV[c] = (float)((1.0 - d->momentum) * RV[c] + d->momentum * unbiased);
    }
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
#pragma omp parallel for schedule(static) num_threads(b->threads)
    for (int c = 0; c < C; c++) {
        float g = G[c] / sqrtf(RV[c] + d->eps), sh = Bt[c] - RM[c] * g;
        for (int n = 0; n < d->N; n++) {
            const float *x = X + ((size_t)n * C + c) * hw;
            float *y = Y + ((size_t)n * C + c) * hw;
            for (size_t i = 0; i < hw; i++) y[i] = x[i] * g + sh;
        }
    }
    return RT_OK;
}

rt_status rtp_cpu_bn_bwd(rt_backend *b, rt_tensor *din, rt_tensor *dgamma, rt_tensor *dbeta,
                         const rt_tensor *dout, const rt_tensor *in, const rt_tensor *gamma,
                         const rt_tensor *save_mean, const rt_tensor *save_invstd,
                         const rt_bn_desc *d, rt_error *err)
{
    const int C = d->C;
    const size_t hw = (size_t)d->H * d->W, M = (size_t)d->N * hw;
    const float *X = in->data, *DY = dout->data, *G = gamma->data;
    const float *SM = save_mean->data, *SI = save_invstd->data;
    float *DX = din->data, *DG = dgamma->data, *DB = dbeta->data;
#pragma omp parallel for schedule(static) num_threads(b->threads)
    for (int c = 0; c < C; c++) {
        /* ---- dbeta = sum dy, dgamma = sum dy * xhat ---- */
        double sdy = 0.0, sdyx = 0.0;
        const float mean = SM[c], inv = SI[c];
        for (int n = 0; n < d->N; n++) {
            const float *x = X + ((size_t)n * C + c) * hw, *dy = DY + ((size_t)n * C + c) * hw;
            for (size_t i = 0; i < hw; i++) {
                sdy += dy[i];
                sdyx += (double)dy[i] * ((x[i] - mean) * inv);
            }
        }
        DB[c] = (float)sdy;
        DG[c] = (float)sdyx;
        /* ---- dx = gamma*inv/M * (M*dy - sum dy - xhat * sum dy*xhat) ---- */
        const float k = G[c] * inv / (float)M, a = (float)sdy, bq = (float)sdyx;
        for (int n = 0; n < d->N; n++) {
            const float *x = X + ((size_t)n * C + c) * hw, *dy = DY + ((size_t)n * C + c) * hw;
            float *dx = DX + ((size_t)n * C + c) * hw;
            for (size_t i = 0; i < hw; i++) {
                float xh = (x[i] - mean) * inv;
                dx[i] = k * ((float)M * dy[i] - a - xh * bq);
            }
        }
    }
    return RT_OK;
}
