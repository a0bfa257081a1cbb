/* cuda_pool.cu - max and average pooling (no padding, floor mode) as cpu_pool.c does it.
 *
 * Own kernels rather than cuDNN's pooling: the CPU reference sends a max-pool gradient
 * to the FIRST maximum of a window in row-major order (PyTorch) and propagates NaN;
 * cuDNN promises neither, and after relu ties (all-zero windows) are common, so the
 * cross-check would see gradients land on other elements.
 * Backward kernels GATHER (one thread per input element, looping over the windows that
 * cover it in (p, q) order): no atomics, deterministic, and the same additions in the
 * same order as the CPU's scatter loops, so results are bitwise equal.
 */
#include "cuda_kernels.h"

#define THREADS 256

static unsigned blocks_for(size_t n)
{
    size_t b = (n + THREADS - 1) / THREADS;
    return (unsigned)(b < 1 ? 1 : (b > 1048560 ? 1048560 : b));
}

#define GRID_LOOP(i, n) \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (size_t)gridDim.x * blockDim.x)

/* First window index (row-major) holding the max m, as cpu_pool.c's generic loop. */
__device__ static size_t argmax_at(const float *x, size_t base, int W, int R, int S, float m)
{
    for (int r = 0; r < R; r++)
        for (int s = 0; s < S; s++) {
            size_t i = base + (size_t)r * W + s;
            float v = x[i];
            if (v == m || (m != m && v != v)) return i;
        }
    return base;
}

/* Output rows/cols whose window covers input index ih: [lo, hi] (may be empty). */
__device__ static void covering(int ih, int R, int stride, int P, int *lo, int *hi)
{
    int a = ih - R + 1;
    *lo = a <= 0 ? 0 : (a + stride - 1) / stride;
    *hi = ih / stride;
    if (*hi > P - 1) *hi = P - 1;
}

__global__ void maxpool_fwd_k(float *y, const float *x, rtp_pool_geom g)
{
    size_t n = (size_t)g.planes * g.P * g.Q;
    GRID_LOOP(o, n)
    {
        size_t pl = o / ((size_t)g.P * g.Q);
        int pq = (int)(o % ((size_t)g.P * g.Q)), p = pq / g.Q, q = pq % g.Q;
        const float *w0 = x + pl * g.H * g.W + (size_t)(p * g.stride) * g.W + q * g.stride;
        float m = w0[0];
        for (int r = 0; r < g.R; r++)
            for (int s = 0; s < g.S; s++) {
                float v = w0[(size_t)r * g.W + s];
                if (v > m || v != v) m = v;
            }
        y[o] = m;
    }
}

__global__ void maxpool_bwd_k(float *dx, const float *dy, const float *x, const float *y,
                              rtp_pool_geom g)
{
    size_t n = (size_t)g.planes * g.H * g.W;
    GRID_LOOP(i, n)
    {
        size_t pl = i / ((size_t)g.H * g.W);
        int hw = (int)(i % ((size_t)g.H * g.W)), ih = hw / g.W, iw = hw % g.W;
        const float *xp = x + pl * g.H * g.W;
        const float *yp = y + pl * g.P * g.Q, *dyp = dy + pl * g.P * g.Q;
        int p0, p1, q0, q1;
        covering(ih, g.R, g.stride, g.P, &p0, &p1);
        covering(iw, g.S, g.stride, g.Q, &q0, &q1);
        float acc = 0.0f;
        for (int p = p0; p <= p1; p++)
            for (int q = q0; q <= q1; q++) {
                size_t base = (size_t)(p * g.stride) * g.W + q * g.stride;
                if (argmax_at(xp, base, g.W, g.R, g.S, yp[p * g.Q + q]) == (size_t)hw)
                    acc = acc + dyp[p * g.Q + q];
            }
        dx[i] = acc;
    }
}

__global__ void avgpool_fwd_k(float *y, const float *x, rtp_pool_geom g, float inv)
{
    size_t n = (size_t)g.planes * g.P * g.Q;
    GRID_LOOP(o, n)
    {
        size_t pl = o / ((size_t)g.P * g.Q);
        int pq = (int)(o % ((size_t)g.P * g.Q)), p = pq / g.Q, q = pq % g.Q;
        const float *w0 = x + pl * g.H * g.W + (size_t)(p * g.stride) * g.W + q * g.stride;
        float s = 0.0f;
        for (int r = 0; r < g.R; r++)
            for (int c = 0; c < g.S; c++) s = s + w0[(size_t)r * g.W + c];
        y[o] = s * inv;
    }
}

__global__ void avgpool_bwd_k(float *dx, const float *dy, rtp_pool_geom g, float inv)
{
    size_t n = (size_t)g.planes * g.H * g.W;
    GRID_LOOP(i, n)
    {
        size_t pl = i / ((size_t)g.H * g.W);
        int hw = (int)(i % ((size_t)g.H * g.W)), ih = hw / g.W, iw = hw % g.W;
        const float *dyp = dy + pl * g.P * g.Q;
        int p0, p1, q0, q1;
        covering(ih, g.R, g.stride, g.P, &p0, &p1);
        covering(iw, g.S, g.stride, g.Q, &q0, &q1);
        float acc = 0.0f;
        for (int p = p0; p <= p1; p++)
            for (int q = q0; q <= q1; q++) acc = acc + dyp[p * g.Q + q] * inv;
        dx[i] = acc;
    }
}

/* ---- launchers ---- */

extern "C" cudaError_t rtp_k_maxpool_fwd(cudaStream_t s, float *y, const float *x,
                                         rtp_pool_geom g)
{
    size_t n = (size_t)g.planes * g.P * g.Q;
    if (n == 0) return cudaSuccess;
    maxpool_fwd_k<<<blocks_for(n), THREADS, 0, s>>>(y, x, g);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_maxpool_bwd(cudaStream_t s, float *dx, const float *dy,
                                         const float *x, const float *y, rtp_pool_geom g)
{
    size_t n = (size_t)g.planes * g.H * g.W;
    if (n == 0) return cudaSuccess;
    maxpool_bwd_k<<<blocks_for(n), THREADS, 0, s>>>(dx, dy, x, y, g);
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_avgpool_fwd(cudaStream_t s, float *y, const float *x,
                                         rtp_pool_geom g)
{
    size_t n = (size_t)g.planes * g.P * g.Q;
    if (n == 0) return cudaSuccess;
    avgpool_fwd_k<<<blocks_for(n), THREADS, 0, s>>>(y, x, g, 1.0f / (float)(g.R * g.S));
    return cudaGetLastError();
}

extern "C" cudaError_t rtp_k_avgpool_bwd(cudaStream_t s, float *dx, const float *dy,
                                         rtp_pool_geom g)
{
    size_t n = (size_t)g.planes * g.H * g.W;
    if (n == 0) return cudaSuccess;
    avgpool_bwd_k<<<blocks_for(n), THREADS, 0, s>>>(dx, dy, g, 1.0f / (float)(g.R * g.S));
    return cudaGetLastError();
}
