/* cuda_elem.cu - elementwise kernels: fill, (leaky) relu, dropout, bias, casts, unscale.
 *
 * Each formula is the CPU reference's (cpu_act.c, cpu_dense.c, cpu_conv.c) written the
 * same way; built with -fmad=false, so no FMA contraction changes the rounding and the
 * results equal the CPU's bit for bit (relu, dropout, bias, column sums).
 * Dropout draws the Philox4x32-10 dropout stream of rt_rng.h: thread t computes block t
 * (words 4t..4t+3) and decides elements 4t..4t+3, with the CPU's keep rule
 * (word >> 8) < threshold; the mask is thus identical to rt_rng_fill_bernoulli's.
 * Kernels: a grid-stride loop over 64-bit indices; launchers: grid size, then
 * cudaGetLastError().
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "cuda_kernels.h"

#define THREADS 256

static unsigned blocks_for(size_t n)
{
    size_t b = (n + THREADS - 1) / THREADS;
    if (b < 1) b = 1;
    return (unsigned)(b > 65535u * 16u ? 65535u * 16u : b); /* grid-stride covers the rest */
}

#define GRID_LOOP(i, n) \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (size_t)gridDim.x * blockDim.x)

/* ---- kernels ---- */

__global__ void fill_k(float *p, size_t n, float v)
{
    GRID_LOOP(i, n) p[i] = v;
}

__global__ void relu_fwd_k(float *y, const float *x, size_t n, float slope)
{
    GRID_LOOP(i, n)
    {
        float xi = x[i];
        float k = xi > 0.0f ? 1.0f : slope;
        y[i] = xi * k;
    }
}

__global__ void relu_bwd_k(float *dx, const float *dy, const float *y, size_t n, float slope)
{
    GRID_LOOP(i, n)
    {
        float k = y[i] > 0.0f ? 1.0f : slope;
        dx[i] = dy[i] * k;
    }
}

/* Philox4x32-10, the same rounds as rt_philox4x32_10 (rt_rng.c). */
__device__ static void philox(uint32_t c[4], uint32_t k0, uint32_t k1)
{
    for (int round = 0; round < 10; round++) {
        uint32_t hi0 = __umulhi(0xD2511F53u, c[0]), lo0 = 0xD2511F53u * c[0];
        uint32_t hi1 = __umulhi(0xCD9E8D57u, c[2]), lo1 = 0xCD9E8D57u * c[2];
        uint32_t n0 = hi1 ^ c[1] ^ k0;
        uint32_t n2 = hi0 ^ c[3] ^ k1;
        c[1] = lo1;
        c[3] = lo0;
        c[0] = n0;
        c[2] = n2;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
}

__global__ void dropout_fwd_k(float *y, float *mask, const float *x, size_t n,
                              rtp_philox_stream st, uint32_t threshold, float value)
{
    size_t nblocks = (n + 3) / 4;
    GRID_LOOP(blk, nblocks)
    {
        uint32_t c[4] = {(uint32_t)blk, (uint32_t)((uint64_t)blk >> 32), st.c2, st.c3};
        philox(c, st.key0, st.key1);
        for (int l = 0; l < 4; l++) {
            size_t i = blk * 4 + (size_t)l;
            if (i >= n) break;
            float m = (c[l] >> 8) < threshold ? value : 0.0f;
            mask[i] = m;
            y[i] = x[i] * m;
        }
    }
}

__global__ void mul_k(float *z, const float *a, const float *b, size_t n)
{
    GRID_LOOP(i, n) z[i] = a[i] * b[i];
}

__global__ void bias_add_k(float *y, const float *bias, size_t n, int K, int PQ)
{
    GRID_LOOP(i, n) y[i] = y[i] + bias[(i / (size_t)PQ) % (size_t)K];
}

/* One block per channel k: a fixed strided split + fixed tree -> deterministic. */
__global__ void bias_grad_k(float *db, const float *dy, int N, int K, int PQ)
{
    __shared__ double part[THREADS];
    int k = blockIdx.x;
    size_t M = (size_t)N * PQ;
    double s = 0.0;
    for (size_t j = threadIdx.x; j < M; j += blockDim.x) {
        size_t n = j / (size_t)PQ, q = j % (size_t)PQ;
        s += dy[(n * K + k) * PQ + q];
    }
    part[threadIdx.x] = s;
    __syncthreads();
    for (int w = THREADS / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) db[k] = (float)part[0];
}

__global__ void col_sums_k(float *db, const float *dy, int N, int O)
{
    int o = blockIdx.x * blockDim.x + threadIdx.x;
    if (o >= O) return;
    float s = 0.0f;
    for (int n = 0; n < N; n++) s = s + dy[(size_t)n * O + o];
    db[o] = s;
}

__global__ void row_broadcast_k(float *y, const float *bias, size_t n, int O)
{
    GRID_LOOP(i, n) y[i] = bias[i % (size_t)O];
}

__global__ void to_bf16_k(__nv_bfloat16 *d, const float *s, size_t n)
{
    GRID_LOOP(i, n) d[i] = __float2bfloat16_rn(s[i]);
}

__global__ void to_f16_k(__half *d, const float *s, size_t n)
{
    GRID_LOOP(i, n) d[i] = __float2half_rn(s[i]);
}

__global__ void from_bf16_k(float *d, const __nv_bfloat16 *s, size_t n)
{
    GRID_LOOP(i, n) d[i] = __bfloat162float(s[i]);
}

__global__ void from_f16_k(float *d, const __half *s, size_t n)
{
    GRID_LOOP(i, n) d[i] = __half2float(s[i]);
}

__global__ void unscale_k(float *g, size_t n, float inv, int *flag)
{
    GRID_LOOP(i, n)
    {
        float v = g[i];
        if (!isfinite(v)) *flag = 1; /* benign race: every writer stores 1 */
        g[i] = v * inv;
    }
}

/* ---- launchers ---- */

extern "C" cudaError_t rtp_k_fill(cudaStream_t s, float *p, size_t n, float v)
{
    if (n == 0) return cudaSuccess;
    fill_k<<<blocks_for(n), THREADS, 0, s>>>(p, n, v);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_relu_fwd(cudaStream_t s, float *y, const float *x, size_t n,
                                      float slope)
{
    if (n == 0) return cudaSuccess;
    relu_fwd_k<<<blocks_for(n), THREADS, 0, s>>>(y, x, n, slope);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_relu_bwd(cudaStream_t s, float *dx, const float *dy,
                                      const float *y, size_t n, float slope)
{
    if (n == 0) return cudaSuccess;
    relu_bwd_k<<<blocks_for(n), THREADS, 0, s>>>(dx, dy, y, n, slope);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_dropout_fwd(cudaStream_t s, float *y, float *mask,
                                         const float *x, size_t n, rtp_philox_stream st,
                                         uint32_t threshold, float value)
{
    if (n == 0) return cudaSuccess;
    dropout_fwd_k<<<blocks_for((n + 3) / 4), THREADS, 0, s>>>(y, mask, x, n, st, threshold,
                                                              value);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_mul(cudaStream_t s, float *z, const float *a, const float *b,
                                 size_t n)
{
    if (n == 0) return cudaSuccess;
    mul_k<<<blocks_for(n), THREADS, 0, s>>>(z, a, b, n);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_bias_add(cudaStream_t s, float *y, const float *bias, int N,
                                      int K, int PQ)
{
    size_t n = (size_t)N * K * PQ;
    if (n == 0) return cudaSuccess;
    bias_add_k<<<blocks_for(n), THREADS, 0, s>>>(y, bias, n, K, PQ);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_bias_grad(cudaStream_t s, float *db, const float *dy, int N,
                                       int K, int PQ)
{
    if (K <= 0) return cudaSuccess;
    bias_grad_k<<<(unsigned)K, THREADS, 0, s>>>(db, dy, N, K, PQ);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_col_sums(cudaStream_t s, float *db, const float *dy, int N, int O)
{
    if (O <= 0) return cudaSuccess;
    col_sums_k<<<(unsigned)((O + THREADS - 1) / THREADS), THREADS, 0, s>>>(db, dy, N, O);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_row_broadcast(cudaStream_t s, float *y, const float *bias, int N,
                                           int O)
{
    size_t n = (size_t)N * O;
    if (n == 0) return cudaSuccess;
    row_broadcast_k<<<blocks_for(n), THREADS, 0, s>>>(y, bias, n, O);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_to_16(cudaStream_t s, void *dst, const float *src, size_t n,
                                   int bf16)
{
    if (n == 0) return cudaSuccess;
    if (bf16) to_bf16_k<<<blocks_for(n), THREADS, 0, s>>>((__nv_bfloat16 *)dst, src, n);
    else to_f16_k<<<blocks_for(n), THREADS, 0, s>>>((__half *)dst, src, n);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_from_16(cudaStream_t s, float *dst, const void *src, size_t n,
                                     int bf16)
{
    if (n == 0) return cudaSuccess;
    if (bf16) from_bf16_k<<<blocks_for(n), THREADS, 0, s>>>(dst, (const __nv_bfloat16 *)src, n);
    else from_f16_k<<<blocks_for(n), THREADS, 0, s>>>(dst, (const __half *)src, n);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_unscale(cudaStream_t s, float *g, size_t n, float inv, int *flag)
{
    if (n == 0) return cudaSuccess;
    unscale_k<<<blocks_for(n), THREADS, 0, s>>>(g, n, inv, flag);
    return cudaGetLastError();
}
