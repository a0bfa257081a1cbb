/* cpu_act.c - elementwise activations on the CPU: (leaky) relu and inverted dropout.
 *
 * Dropout masks come from rt_rng's Philox dropout stream (rt_rng_fill_bernoulli), so the
 * mask is a pure function of (seed, step, layer): equal across thread counts and
 * backends, and recomputed exactly after a resume.
 */
#include "../rt_rng.h"
#include "cpu_internal.h"

rt_status rtp_cpu_relu_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in, float slope,
                           rt_error *err)
{
    size_t n = rt_tensor_numel(in);
    RTP_CHECK(in, n, "relu input");
    RTP_CHECK(out, n, "relu output");
    const float *x = in->data;
    float *y = out->data;
#pragma omp parallel for simd schedule(static) num_threads(b->threads) if (n > 32768)
    for (size_t i = 0; i < n; i++) y[i] = x[i] > 0.0f ? x[i] : slope * x[i];
    return RT_OK;
}

rt_status rtp_cpu_relu_bwd(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                           const rt_tensor *out, float slope, rt_error *err)
{
    size_t n = rt_tensor_numel(out);
    RTP_CHECK(out, n, "relu output");
    RTP_CHECK(dout, n, "relu output gradient");
    RTP_CHECK(din, n, "relu input gradient");
    const float *y = out->data, *dy = dout->data;
    float *dx = din->data;
#pragma omp parallel for simd schedule(static) num_threads(b->threads) if (n > 32768)
    for (size_t i = 0; i < n; i++) dx[i] = y[i] > 0.0f ? dy[i] : slope * dy[i];
    return RT_OK;
}

rt_status rtp_cpu_dropout_fwd(rt_backend *b, rt_tensor *out, rt_tensor *mask,
                              const rt_tensor *in, const rt_dropout_desc *d, rt_error *err)
{
    size_t n = (size_t)d->N * d->C * d->H * d->W;
    RTP_CHECK(in, n, "dropout input");
    RTP_CHECK(out, n, "dropout output");
    RTP_CHECK(mask, n, "dropout mask");
    if (!(d->p >= 0.0f && d->p < 1.0f))
        return RT_ERR(err, RT_EINVAL, "dropout p=%g must be in [0, 1)", (double)d->p);
    float keep = 1.0f - d->p;
    rt_rng r = rt_rng_stream(d->seed, RT_RNG_DROPOUT, d->step, d->layer);
    float *m = mask->data, *y = out->data;
    const float *x = in->data;
    rt_rng_fill_bernoulli(&r, m, n, keep, 1.0f / keep);
#pragma omp parallel for simd schedule(static) num_threads(b->threads) if (n > 32768)
    for (size_t i = 0; i < n; i++) y[i] = x[i] * m[i];
    return RT_OK;
}

rt_status rtp_cpu_dropout_bwd(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                              const rt_tensor *mask, rt_error *err)
{
    size_t n = rt_tensor_numel(mask);
    RTP_CHECK(dout, n, "dropout output gradient");
    RTP_CHECK(din, n, "dropout input gradient");
    const float *m = mask->data, *dy = dout->data;
    float *dx = din->data;
#pragma omp parallel for simd schedule(static) num_threads(b->threads) if (n > 32768)
    for (size_t i = 0; i < n; i++) dx[i] = dy[i] * m[i];
    return RT_OK;
}
