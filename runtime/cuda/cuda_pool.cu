/* cuda_pool.cu - max and average pooling (padded, floor mode; or adaptive) as cpu_pool.c
 * does it.
 *
 * Own kernels rather than cuDNN's pooling: the CPU reference sends a max-pool gradient
 * to the FIRST maximum of a window in row-major order (PyTorch) and propagates NaN;
 * cuDNN promises neither, and after relu ties (all-zero windows) are common, so the
 * gradients would land elsewhere. Backward kernels GATHER (one thread per input
 * element over the windows covering it, in (p, q) order): no atomics, deterministic,
 * and the CPU's additions in the CPU's order (bodies in cuda_elem.cuh).
 */
#include "cuda_elem.cuh"
#include "cuda_launch.cuh"

__global__ void maxpool_fwd_k(float *y, const float *x, rtp_pool_geom g, size_t n)
{
    RTP_GRID_LOOP(o, n) rtp_maxpool_fwd_at(o, y, x, g);
}

__global__ void maxpool_bwd_k(float *dx, const float *dy, const float *x, const float *y,
                              rtp_pool_geom g, size_t n)
{
    RTP_GRID_LOOP(i, n) rtp_maxpool_bwd_at(i, dx, dy, x, y, g);
}

__global__ void avgpool_fwd_k(float *y, const float *x, rtp_pool_geom g, float inv, size_t n)
{
    RTP_GRID_LOOP(o, n) rtp_avgpool_fwd_at(o, y, x, g, inv);
}

__global__ void avgpool_bwd_k(float *dx, const float *dy, rtp_pool_geom g, float inv, size_t n)
{
    RTP_GRID_LOOP(i, n) rtp_avgpool_bwd_at(i, dx, dy, g, inv);
}

extern "C" cudaError_t rtp_k_maxpool_fwd(cudaStream_t s, float *y, const float *x, rtp_pool_geom g)
{
    size_t n = (size_t)g.planes * g.P * g.Q;
    RTP_LAUNCH(n, s, maxpool_fwd_k, y, x, g, n);
}

extern "C" cudaError_t rtp_k_maxpool_bwd(cudaStream_t s, float *dx, const float *dy, const float *x,
                                         const float *y, rtp_pool_geom g)
{
    size_t n = (size_t)g.planes * g.H * g.W;
    RTP_LAUNCH(n, s, maxpool_bwd_k, dx, dy, x, y, g, n);
}

extern "C" cudaError_t rtp_k_avgpool_fwd(cudaStream_t s, float *y, const float *x, rtp_pool_geom g)
{
    size_t n = (size_t)g.planes * g.P * g.Q;
    RTP_LAUNCH(n, s, avgpool_fwd_k, y, x, g, g.adaptive ? 0.0f : 1.0f / (float)(g.R * g.S), n);
}

extern "C" cudaError_t rtp_k_avgpool_bwd(cudaStream_t s, float *dx, const float *dy,
                                         rtp_pool_geom g)
{
    size_t n = (size_t)g.planes * g.H * g.W;
    RTP_LAUNCH(n, s, avgpool_bwd_k, dx, dy, g, g.adaptive ? 0.0f : 1.0f / (float)(g.R * g.S), n);
}
