/* cpu_act_fn.c - the activations of act_fwd / act_bwd on the CPU (rt_act_kind: relu6,
 * sigmoid, tanh, gelu, silu), the formulas of rt_act_math.h. relu6, MobileNetV2's, has
 * its own branch-free spans that GCC vectorises; the others call the math library per
 * element. Threads take contiguous chunks (rtp_cpu_chunk), so the result does not
 * depend on the thread count. In place (out == in, din == dout) is allowed.
 */
#include <omp.h>

#include "../rt_act_math.h"
#include "cpu_internal.h"

RTP_SPAN static void relu6_span(float *y, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = x[i] > 0.0f ? x[i] : 0.0f;
        y[i] = v < 6.0f ? v : 6.0f;
    }
}

RTP_SPAN static void relu6_bwd_span(float *dx, const float *dy, const float *y, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float k = y[i] > 0.0f && y[i] < 6.0f ? 1.0f : 0.0f;
        dx[i] = dy[i] * k;
    }
}

static void fwd_span(int kind, float *y, const float *x, size_t n)
{
    if (kind == RT_ACT_RELU6) {
        relu6_span(y, x, n);
        return;
    }
    for (size_t i = 0; i < n; i++) y[i] = rt_act_fwd1(kind, x[i]);
}

static void bwd_span(int kind, float *dx, const float *dy, const float *x, const float *y, size_t n)
{
    if (kind == RT_ACT_RELU6) {
        relu6_bwd_span(dx, dy, y, n);
        return;
    }
    for (size_t i = 0; i < n; i++) dx[i] = rt_act_bwd1(kind, dy[i], x[i], y[i]);
}

/* the smooth activations cost far more a float than relu6: split them earlier */
static int team(rt_backend *b, rt_act_kind kind, size_t n)
{
    return kind == RT_ACT_RELU6 ? rtp_cpu_team(b, n) : rtp_cpu_team(b, n * 16);
}

rt_status rtp_cpu_act_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in, rt_act_kind kind,
                          rt_error *err)
{
    size_t n = rt_tensor_numel(in);
    const float *x = in->data;
    float *y = out->data;
#pragma omp parallel num_threads(team(b, kind, n))
    {
        size_t lo, hi;
        rtp_cpu_chunk(n, &lo, &hi);
        fwd_span((int)kind, y + lo, x + lo, hi - lo);
    }
    return RT_OK;
}

rt_status rtp_cpu_act_bwd(rt_backend *b, rt_tensor *din, const rt_tensor *dout, const rt_tensor *in,
                          const rt_tensor *out, rt_act_kind kind, rt_error *err)
{
    size_t n = rt_tensor_numel(out);
    const float *x = in->data, *y = out->data, *dy = dout->data;
    float *dx = din->data;
#pragma omp parallel num_threads(team(b, kind, n))
    {
        size_t lo, hi;
        rtp_cpu_chunk(n, &lo, &hi);
        bwd_span((int)kind, dx + lo, dy + lo, x + lo, y + lo, hi - lo);
    }
    return RT_OK;
}
