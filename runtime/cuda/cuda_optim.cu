/* cuda_optim.cu - Adam/AdamW and SGD updates, mirroring rtp_optim_*_range of
 * rt_optim_kernels.c line by line from the same coefficients (rt_optim_*_coef, computed
 * on the host in double). Built with -fmad=false and IEEE sqrtf/division (nvcc's
 * defaults without --use_fast_math), so each element rounds as on the CPU: the updates
 * are bitwise equal to the CPU backend's.
 */
#include "cuda_kernels.h"

#define THREADS 256

__global__ void adam_k(float *p, float *m, float *v, const float *g, size_t n, rt_adam_coef c)
{
    const float wd = c.weight_decay, decay = c.decay_factor;
    const float b1 = c.beta1, omb1 = c.one_minus_beta1;
    const float b2 = c.beta2, omb2 = c.one_minus_beta2;
    const float neg_step = -c.step_size, bc2s = c.bias_correction2_sqrt, eps = c.eps;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
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

__global__ void sgd_k(float *p, float *buf, const float *g, size_t n, rt_sgd_coef c)
{
    const float wd = c.weight_decay, mom = c.momentum, omd = c.one_minus_dampening;
    const float neg_lr = -c.lr;
    const int first = c.first, nesterov = c.nesterov;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
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

static unsigned blocks_for(size_t n)
{
    size_t b = (n + THREADS - 1) / THREADS;
    return (unsigned)(b < 1 ? 1 : (b > 1048560 ? 1048560 : b));
}

extern "C" cudaError_t rtp_k_adam(cudaStream_t s, float *p, float *m, float *v, const float *g,
                                  size_t n, rt_adam_coef c)
{
    if (n == 0) return cudaSuccess;
    adam_k<<<blocks_for(n), THREADS, 0, s>>>(p, m, v, g, n, c);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_sgd(cudaStream_t s, float *p, float *buf, const float *g,
                                 size_t n, rt_sgd_coef c)
{
    if (n == 0) return cudaSuccess;
    sgd_k<<<blocks_for(n), THREADS, 0, s>>>(p, buf, g, n, c);
    return cudaGetLastError();
}
