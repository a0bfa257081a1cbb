/* cuda_elem.cu - elementwise kernels: fill, (leaky) relu, dropout, bias, casts.
 * The per-element bodies are in cuda_elem.cuh (shared with the host tests); this file
 * holds the __global__ grid-stride loops and their launchers.
 * Dropout: thread t computes Philox block t (words 4t..4t+3) and decides elements
 * 4t..4t+3 with the CPU's keep rule, so the mask equals rt_rng_fill_bernoulli's.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_elem.cuh"
#include "cuda_launch.cuh"

/* ---- kernels ---- */

__global__ void fill_k(float *p, size_t n, float v) { RTP_GRID_LOOP(i, n) p[i] = v; }

__global__ void relu_fwd_k(float *y, const float *x, size_t n, float slope)
{
    RTP_GRID_LOOP(i, n) rtp_relu_fwd_at(i, y, x, slope);
}

__global__ void relu_bwd_k(float *dx, const float *dy, const float *y, size_t n, float slope)
{
    RTP_GRID_LOOP(i, n) rtp_relu_bwd_at(i, dx, dy, y, slope);
}

__global__ void act_fwd_k(float *y, const float *x, size_t n, int kind)
{
    RTP_GRID_LOOP(i, n) rtp_act_fwd_at(i, y, x, kind);
}

__global__ void act_bwd_k(float *dx, const float *dy, const float *x, const float *y, size_t n,
                          int kind)
{
    RTP_GRID_LOOP(i, n) rtp_act_bwd_at(i, dx, dy, x, y, kind);
}

__global__ void dropout_fwd_k(float *y, float *mask, const float *x, size_t n,
                              rtp_philox_stream st0, uint32_t threshold, float value,
                              const rtp_philox_stream *dv)
{
    const rtp_philox_stream st = dv ? *dv : st0;
    RTP_GRID_LOOP(blk, (n + 3) / 4) rtp_dropout_block_at(blk, y, mask, x, n, st, threshold, value);
}

__global__ void mul_k(float *z, const float *a, const float *b, size_t n)
{
    RTP_GRID_LOOP(i, n) z[i] = a[i] * b[i];
}

__global__ void bias_add_k(float *y, const float *bias, size_t n, int K, int PQ)
{
    RTP_GRID_LOOP(i, n) rtp_bias_add_at(i, y, bias, K, PQ);
}

__global__ void row_broadcast_k(float *y, const float *bias, size_t n, int O)
{
    RTP_GRID_LOOP(i, n) y[i] = bias[rtp_umod(i, (size_t)O)];
}

__global__ void to_bf16_k(__nv_bfloat16 *d, const float *s, size_t n)
{
    RTP_GRID_LOOP(i, n) d[i] = __float2bfloat16_rn(s[i]);
}

__global__ void to_f16_k(__half *d, const float *s, size_t n)
{
    RTP_GRID_LOOP(i, n) d[i] = __float2half_rn(s[i]);
}

__global__ void from_bf16_k(float *d, const __nv_bfloat16 *s, size_t n)
{
    RTP_GRID_LOOP(i, n) d[i] = __bfloat162float(s[i]);
}

__global__ void from_f16_k(float *d, const __half *s, size_t n)
{
    RTP_GRID_LOOP(i, n) d[i] = __half2float(s[i]);
}

/* ---- launchers ---- */

extern "C" cudaError_t rtp_k_fill(cudaStream_t s, float *p, size_t n, float v)
{
    RTP_LAUNCH(n, s, fill_k, p, n, v);
}

extern "C" cudaError_t rtp_k_relu_fwd(cudaStream_t s, float *y, const float *x, size_t n,
                                      float slope)
{
    RTP_LAUNCH(n, s, relu_fwd_k, y, x, n, slope);
}

extern "C" cudaError_t rtp_k_relu_bwd(cudaStream_t s, float *dx, const float *dy, const float *y,
                                      size_t n, float slope)
{
    RTP_LAUNCH(n, s, relu_bwd_k, dx, dy, y, n, slope);
}

extern "C" cudaError_t rtp_k_act_fwd(cudaStream_t s, float *y, const float *x, size_t n, int kind)
{
    RTP_LAUNCH(n, s, act_fwd_k, y, x, n, kind);
}

extern "C" cudaError_t rtp_k_act_bwd(cudaStream_t s, float *dx, const float *dy, const float *x,
                                     const float *y, size_t n, int kind)
{
    RTP_LAUNCH(n, s, act_bwd_k, dx, dy, x, y, n, kind);
}

extern "C" cudaError_t rtp_k_dropout_fwd(cudaStream_t s, float *y, float *mask, const float *x,
                                         size_t n, rtp_philox_stream st, float keep,
                                         const rtp_philox_stream *dv)
{
    /* the threshold and scale of cpu_act.c: rt_rng_fill_bernoulli(keep, 1/keep) */
    RTP_LAUNCH((n + 3) / 4, s, dropout_fwd_k, y, mask, x, n, st, rtp_keep_threshold(keep),
               1.0f / keep, dv);
}

extern "C" cudaError_t rtp_k_mul(cudaStream_t s, float *z, const float *a, const float *b, size_t n)
{
    RTP_LAUNCH(n, s, mul_k, z, a, b, n);
}

extern "C" cudaError_t rtp_k_bias_add(cudaStream_t s, float *y, const float *bias, int N, int K,
                                      int PQ)
{
    size_t n = (size_t)N * K * PQ;
    RTP_LAUNCH(n, s, bias_add_k, y, bias, n, K, PQ);
}

extern "C" cudaError_t rtp_k_row_broadcast(cudaStream_t s, float *y, const float *bias, int N,
                                           int O)
{
    size_t n = (size_t)N * O;
    RTP_LAUNCH(n, s, row_broadcast_k, y, bias, n, O);
}

extern "C" cudaError_t rtp_k_to_16(cudaStream_t s, void *dst, const float *src, size_t n, int bf16)
{
    if (bf16) RTP_LAUNCH(n, s, to_bf16_k, (__nv_bfloat16 *)dst, src, n);
    RTP_LAUNCH(n, s, to_f16_k, (__half *)dst, src, n);
}

extern "C" cudaError_t rtp_k_from_16(cudaStream_t s, float *dst, const void *src, size_t n,
                                     int bf16)
{
    if (bf16) RTP_LAUNCH(n, s, from_bf16_k, dst, (const __nv_bfloat16 *)src, n);
    RTP_LAUNCH(n, s, from_f16_k, dst, (const __half *)src, n);
}
