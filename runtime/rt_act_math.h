/* rt_act_math.h - the per-element formulas of the activations (rt_act_kind), written once
 * for the CPU loops (runtime/cpu/cpu_act_fn.c) and the CUDA kernels (cuda_elem.cuh, which
 * defines RT_ACT_HD as __host__ __device__ first). Float arithmetic throughout; the
 * backward of relu6, sigmoid and tanh reads the output, of gelu and silu the input.
 */
#ifndef RT_ACT_MATH_H
#define RT_ACT_MATH_H

#include <math.h>

#ifndef RT_ACT_HD
#define RT_ACT_HD
#endif

/* sigmoid without overflow: exp of a non-positive number only */
RT_ACT_HD static inline float rt_act_sigmoid(float x)
{
    if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
    float e = expf(x);
    return e / (1.0f + e);
}

/* f(x) of kind k (rt_backend.h rt_act_kind) */
RT_ACT_HD static inline float rt_act_fwd1(int k, float x)
{
    switch (k) {
    case 0: return fminf(fmaxf(x, 0.0f), 6.0f);
    case 1: return rt_act_sigmoid(x);
    case 2: return tanhf(x);
    case 3: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    default: return x * rt_act_sigmoid(x);
    }
}

/* dy * f'(x), y = f(x) */
RT_ACT_HD static inline float rt_act_bwd1(int k, float dy, float x, float y)
{
    switch (k) {
    case 0: return y > 0.0f && y < 6.0f ? dy : 0.0f;
    case 1: return dy * (y * (1.0f - y));
    case 2: return dy * (1.0f - y * y);
    case 3: {
        float cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752f));
        float pdf = 0.39894228040143268f * expf(-0.5f * x * x);
        return dy * (cdf + x * pdf);
    }
    default: {
        float s = rt_act_sigmoid(x);
        return dy * (s * (1.0f + x * (1.0f - s)));
    }
    }
}

#endif
