/* rt_optim_kernels.c - the elementwise optimiser updates and their per-step scalars.
 *
 * These are the whole numerical content of rt_optim: rt_optim.c only walks parameters.
 * Each kernel follows the operation order of torch.optim's single-tensor CPU path
 * (mul_, add_(alpha), addcmul_, addcdiv_) in float, with the scalars computed in double
 * as Python does and rounded to float once, so results match PyTorch to within FMA
 * contraction differences. A CUDA kernel mirrors these loops line by line.
 * The public kernels split n over an OpenMP team when long enough to pay for the
 * threads; each element is independent, so results do not depend on the thread count.
 */
#include <math.h>
#include <omp.h>

#include "rt_optim_internal.h"

void rtp_optim_thread_share(size_t n, size_t *lo, size_t *hi)
{
    size_t nth = (size_t)omp_get_num_threads(), tid = (size_t)omp_get_thread_num();
    *lo = n / nth * tid + (tid < n % nth ? tid : n % nth);
    *hi = *lo + n / nth + (tid < n % nth ? 1 : 0);
}

rt_sgd_coef rt_optim_sgd_coef(const rt_optim_config *cfg, double lr, int64_t t, int no_decay)
{
    rt_sgd_coef c;
    c.lr = (float)lr;
    c.weight_decay = no_decay ? 0.0f : (float)cfg->weight_decay;
    c.momentum = (float)cfg->momentum;
    c.one_minus_dampening = (float)(1.0 - cfg->dampening);
    c.nesterov = cfg->nesterov;
    c.first = t <= 1;
    return c;
}

rt_adam_coef rt_optim_adam_coef(const rt_optim_config *cfg, double lr, int64_t t, int no_decay)
{
    rt_adam_coef c;
    double wd = no_decay ? 0.0 : cfg->weight_decay;
    int decoupled = cfg->kind == RT_OPTIM_ADAMW;
    c.weight_decay = decoupled ? 0.0f : (float)wd;
    c.decay_factor = decoupled ? (float)(1.0 - lr * wd) : 1.0f;
    c.beta1 = (float)cfg->beta1;
    c.one_minus_beta1 = (float)(1.0 - cfg->beta1);
    c.beta2 = (float)cfg->beta2;
    c.one_minus_beta2 = (float)(1.0 - cfg->beta2);
    double bc1 = 1.0 - pow(cfg->beta1, (double)t);
    double bc2 = 1.0 - pow(cfg->beta2, (double)t);
    c.step_size = (float)(lr / bc1);
    c.bias_correction2_sqrt = (float)sqrt(bc2);
    c.eps = (float)cfg->eps;
    return c;
}

RTP_OPTIM_CLONES
void rtp_optim_sgd_range(float *p, float *buf, const float *g, size_t n, const rt_sgd_coef *c)
{
    const float wd = c->weight_decay, mom = c->momentum, omd = c->one_minus_dampening;
    const float neg_lr = -c->lr;
    const int first = c->first, nesterov = c->nesterov;
    for (size_t i = 0; i < n; i++) {
        float gi = g[i];
        if (wd != 0.0f) gi = gi + wd * p[i];
        if (mom != 0.0f) {
            float b = first ? gi : buf[i] * mom + omd * gi;
            buf[i] = b;
            gi = nesterov ? gi + mom * b : b;
        }
        p[i] = p[i] + neg_lr * gi;
    }
}

RTP_OPTIM_CLONES
void rtp_optim_adam_range(float *p, float *m, float *v, const float *g, size_t n,
                          const rt_adam_coef *c)
{
    const float wd = c->weight_decay, decay = c->decay_factor;
    const float b1 = c->beta1, omb1 = c->one_minus_beta1;
    const float b2 = c->beta2, omb2 = c->one_minus_beta2;
    const float neg_step = -c->step_size, bc2s = c->bias_correction2_sqrt, eps = c->eps;
    for (size_t i = 0; i < n; i++) {
        float pi = p[i];
        if (decay != 1.0f) pi = pi * decay;
        float gi = g[i];
        if (wd != 0.0f) gi = gi + wd * pi;
        float mi = m[i] * b1 + omb1 * gi;
        float vi = v[i] * b2 + omb2 * gi * gi;
        m[i] = mi;
        v[i] = vi;
        float denom = sqrtf(vi) / bc2s + eps;
        p[i] = pi + neg_step * (mi / denom);
    }
}

void rt_optim_sgd_kernel(float *p, float *buf, const float *g, size_t n, const rt_sgd_coef *c)
{
#pragma omp parallel if (n >= RTP_OPTIM_PAR_MIN)
    {
        size_t lo, hi;
        rtp_optim_thread_share(n, &lo, &hi);
        rtp_optim_sgd_range(p + lo, buf ? buf + lo : NULL, g + lo, hi - lo, c);
    }
}

void rt_optim_adam_kernel(float *p, float *m, float *v, const float *g, size_t n,
                          const rt_adam_coef *c)
{
#pragma omp parallel if (n >= RTP_OPTIM_PAR_MIN)
    {
        size_t lo, hi;
        rtp_optim_thread_share(n, &lo, &hi);
        rtp_optim_adam_range(p + lo, m + lo, v + lo, g + lo, hi - lo, c);
    }
}
