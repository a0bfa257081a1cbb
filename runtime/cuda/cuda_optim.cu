/* cuda_optim.cu - Adam/AdamW and SGD updates: rtp_optim_*_range of rt_optim_kernels.c
 * mirrored line by line (cuda_elem.cuh) from the same host-computed coefficients. With
 * -fmad=false and IEEE sqrtf/division (nvcc's defaults without --use_fast_math) each
 * element rounds as on the CPU: the updates are bitwise equal to the CPU backend's.
 * Gradient clipping (cpu_clip.c): the clamp, then the norm in two levels without atomics
 * (RT_CLIP_PARTS blocks of partial squares in double, each by the fixed tree
 * rtp_block_sum; one thread adds them in order), then the scaling by the factor read
 * from device memory: no host round trip, and the same bits run to run. */
#include "cuda_elem.cuh"
#include "cuda_launch.cuh"

__global__ void adam_k(float *p, float *m, float *v, const float *g, size_t n, rt_adam_coef c0,
                       const rt_adam_coef *dv)
{
    const rt_adam_coef c = dv ? *dv : c0;
    RTP_GRID_LOOP(i, n) rtp_adam_at(i, p, m, v, g, &c);
}

__global__ void sgd_k(float *p, float *buf, const float *g, size_t n, rt_sgd_coef c0,
                      const rt_sgd_coef *dv)
{
    const rt_sgd_coef c = dv ? *dv : c0;
    RTP_GRID_LOOP(i, n) rtp_sgd_at(i, p, buf, g, &c);
}

extern "C" cudaError_t rtp_k_adam(cudaStream_t s, float *p, float *m, float *v, const float *g,
                                  size_t n, rt_adam_coef c, const rt_adam_coef *dv)
{
    RTP_LAUNCH(n, s, adam_k, p, m, v, g, n, c, dv);
}

extern "C" cudaError_t rtp_k_sgd(cudaStream_t s, float *p, float *buf, const float *g, size_t n,
                                 rt_sgd_coef c, const rt_sgd_coef *dv)
{
    RTP_LAUNCH(n, s, sgd_k, p, buf, g, n, c, dv);
}

__global__ void clip_value_k(float *g, size_t n, float v)
{
    RTP_GRID_LOOP(i, n) rtp_clip_value_at(i, g, v);
}

__global__ void clip_part_k(double *part, const float *g, size_t n)
{
    __shared__ double sh[RTP_THREADS];
    size_t lo, hi;
    rtp_red_range(n, RT_CLIP_PARTS, (int)blockIdx.x, &lo, &hi);
    double s = rtp_block_sum(sh, rtp_clip_sq_part((int)threadIdx.x, RTP_THREADS, g, lo, hi));
    if (threadIdx.x == 0) part[blockIdx.x] = s;
}

__global__ void clip_finish_k(float *w, double max_norm)
{
    rtp_clip_finish(w, (const double *)(const void *)(w + 4), max_norm);
}

__global__ void clip_scale_k(float *g, size_t n, const float *w)
{
    const float f = w[1];
    if (f == 1.0f) return; /* the same for every thread */
    RTP_GRID_LOOP(i, n) g[i] *= f;
}

__global__ void clip_none_k(float *w) { w[0] = 0.0f, w[1] = 1.0f; }

extern "C" cudaError_t rtp_k_clip(cudaStream_t s, float *g, size_t n, float *w, double max_norm,
                                  double clip_value)
{
    cudaError_t e;
    if (clip_value > 0) {
        clip_value_k<<<rtp_blocks_for(n), RTP_THREADS, 0, s>>>(g, n, (float)clip_value);
        if ((e = cudaGetLastError()) != cudaSuccess) return e;
    }
    if (!(max_norm > 0)) {
        clip_none_k<<<1, 1, 0, s>>>(w);
        return cudaGetLastError();
    }
    clip_part_k<<<RT_CLIP_PARTS, RTP_THREADS, 0, s>>>((double *)(void *)(w + 4), g, n);
    if ((e = cudaGetLastError()) != cudaSuccess) return e;
    clip_finish_k<<<1, 1, 0, s>>>(w, max_norm);
    if ((e = cudaGetLastError()) != cudaSuccess) return e;
    RTP_LAUNCH(n, s, clip_scale_k, g, n, w);
}
