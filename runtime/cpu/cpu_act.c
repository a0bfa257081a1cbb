/* cpu_act.c - elementwise activations on the CPU: (leaky) relu and inverted dropout.
 *
 * Loops are written as plain spans over restrict pointers with selects between
 * constants (y = x * (x > 0 ? 1 : slope)) so that GCC vectorises them without
 * -ffast-math; a branch on the sign would mispredict on every other element (several
 * times slower: bench/README.md). Threads take contiguous chunks. In-place use (out == in, din ==
 * dout) goes through the non-restrict wrappers only when the pointers are equal. The spans
 * are noinline: inlined into the OpenMP outlined function they lose `restrict` and GCC
 * falls back to scalar, branchy code (relu several times slower).
 * Dropout masks come from rt_rng's Philox dropout stream (rt_rng_fill_bernoulli), so the
 * mask is a pure function of (seed, step, layer): equal across thread counts and
 * backends, and recomputed exactly after a resume.
 */
#include <omp.h>

#include "../rt_rng.h"
#include "cpu_internal.h"

RTP_SPAN static void relu_span(float *restrict y, const float *restrict x, size_t n, float slope)
{
    for (size_t i = 0; i < n; i++) {
        float k = x[i] > 0.0f ? 1.0f : slope;
        y[i] = x[i] * k;
    }
}

RTP_SPAN static void relu_bwd_span(float *restrict dx, const float *restrict dy,
                                   const float *restrict y, size_t n, float slope)
{
    for (size_t i = 0; i < n; i++) {
        float k = y[i] > 0.0f ? 1.0f : slope;
        dx[i] = dy[i] * k;
    }
}

RTP_SPAN static void mul_span(float *restrict z, const float *restrict a, const float *restrict b,
                              size_t n)
{
    for (size_t i = 0; i < n; i++) z[i] = a[i] * b[i];
}

/* In-place variants (same arithmetic; no restrict, still vectorisable). */
RTP_SPAN static void relu_inplace(float *x, size_t n, float slope)
{
    for (size_t i = 0; i < n; i++) {
        float k = x[i] > 0.0f ? 1.0f : slope;
        x[i] = x[i] * k;
    }
}

void rtp_cpu_chunk(size_t n, size_t *lo, size_t *hi)
{
    int t = omp_get_thread_num(), T = omp_get_num_threads();
    size_t per = (n / (size_t)T + 15) / 16 * 16;
    *lo = per * (size_t)t < n ? per * (size_t)t : n;
    *hi = *lo + per < n ? *lo + per : n;
}

int rtp_cpu_team(rt_backend *b, size_t n) { return n > 65536 ? b->threads : 1; }

rt_status rtp_cpu_relu_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in, float slope,
                           rt_error *err)
{
    size_t n = rt_tensor_numel(in);
    const float *x = in->data;
    float *y = out->data;
#pragma omp parallel num_threads(rtp_cpu_team(b, n))
    {
        size_t lo, hi;
        rtp_cpu_chunk(n, &lo, &hi);
        if (x == y) relu_inplace(y + lo, hi - lo, slope);
        else relu_span(y + lo, x + lo, hi - lo, slope);
    }
    return RT_OK;
}

rt_status rtp_cpu_relu_bwd(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                           const rt_tensor *out, float slope, rt_error *err)
{
    size_t n = rt_tensor_numel(out);
    const float *y = out->data, *dy = dout->data;
    float *dx = din->data;
#pragma omp parallel num_threads(rtp_cpu_team(b, n))
    {
        size_t lo, hi;
        rtp_cpu_chunk(n, &lo, &hi);
        if (dx == dy) { /* in place: dx *= k */
            for (size_t i = lo; i < hi; i++) dx[i] = dx[i] * (y[i] > 0.0f ? 1.0f : slope);
        } else {
            relu_bwd_span(dx + lo, dy + lo, y + lo, hi - lo, slope);
        }
    }
    return RT_OK;
}

/* y = x * m over n floats, both ways of dropout (y == x allowed). */
static void mask_mul(rt_backend *b, float *y, const float *x, const float *m, size_t n)
{
#pragma omp parallel num_threads(rtp_cpu_team(b, n))
    {
        size_t lo, hi;
        rtp_cpu_chunk(n, &lo, &hi);
        if (x == y) {
            for (size_t i = lo; i < hi; i++) y[i] = y[i] * m[i];
        } else {
            mul_span(y + lo, x + lo, m + lo, hi - lo);
        }
    }
}

rt_status rtp_cpu_dropout_fwd(rt_backend *b, rt_tensor *out, rt_tensor *mask, const rt_tensor *in,
                              const rt_dropout_desc *d, rt_error *err)
{
    size_t n = (size_t)d->N * d->C * d->H * d->W;
    float keep = 1.0f - d->p;
    rt_rng r = rt_rng_stream(d->seed, RT_RNG_DROPOUT, d->step, d->layer);
    float *m = mask->data, *y = out->data;
    const float *x = in->data;
    rt_rng_fill_bernoulli(&r, m, n, keep, 1.0f / keep);
    mask_mul(b, y, x, m, n);
    return RT_OK;
}

rt_status rtp_cpu_dropout_bwd(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                              const rt_tensor *mask, rt_error *err)
{
    size_t n = rt_tensor_numel(mask);
    const float *m = mask->data, *dy = dout->data;
    float *dx = din->data;
    mask_mul(b, dx, dy, m, n);
    return RT_OK;
}
