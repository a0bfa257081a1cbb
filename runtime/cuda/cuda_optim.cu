/* cuda_optim.cu - Adam/AdamW and SGD updates: rtp_optim_*_range of rt_optim_kernels.c
 * mirrored line by line (cuda_elem.cuh) from the same host-computed coefficients. With
 * -fmad=false and IEEE sqrtf/division (nvcc's defaults without --use_fast_math) each
 * element rounds as on the CPU: the updates are bitwise equal to the CPU backend's. */
#include "cuda_elem.cuh"
#include "cuda_launch.cuh"

__global__ void adam_k(float *p, float *m, float *v, const float *g, size_t n, rt_adam_coef c)
{
    RTP_GRID_LOOP(i, n) rtp_adam_at(i, p, m, v, g, &c);
}

__global__ void sgd_k(float *p, float *buf, const float *g, size_t n, rt_sgd_coef c)
{
    RTP_GRID_LOOP(i, n) rtp_sgd_at(i, p, buf, g, &c);
}

extern "C" cudaError_t rtp_k_adam(cudaStream_t s, float *p, float *m, float *v, const float *g,
                                  size_t n, rt_adam_coef c)
{
    RTP_LAUNCH(n, s, adam_k, p, m, v, g, n, c);
}

extern "C" cudaError_t rtp_k_sgd(cudaStream_t s, float *p, float *buf, const float *g, size_t n,
                                 rt_sgd_coef c)
{
    RTP_LAUNCH(n, s, sgd_k, p, buf, g, n, c);
}
