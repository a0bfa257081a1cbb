/* cuda_launch.cuh - the launch pattern shared by the kernel files: 256-thread blocks, a
 * grid capped so the grid-stride loops cover the rest, RTP_GRID_LOOP, and the block sum
 * of the reductions. Launchers return cudaGetLastError() right after the launch, so
 * every launch is checked. */
#ifndef CUDA_LAUNCH_CUH
#define CUDA_LAUNCH_CUH

#include <stddef.h>

#define RTP_THREADS 256

static inline unsigned rtp_blocks_for(size_t n)
{
    size_t b = (n + RTP_THREADS - 1) / RTP_THREADS;
    return (unsigned)(b < 1 ? 1 : (b > 1048560 ? 1048560 : b));
}

#define RTP_GRID_LOOP(i, n)                                                         \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (size_t)(n); \
         i += (size_t)gridDim.x * blockDim.x)

/* Launch `kernel` over n items on stream s and return the launch's status. */
#define RTP_LAUNCH(n, s, kernel, ...)                                    \
    do {                                                                 \
        if ((n) == 0) return cudaSuccess;                                \
        kernel<<<rtp_blocks_for(n), RTP_THREADS, 0, (s)>>>(__VA_ARGS__); \
        return cudaGetLastError();                                       \
    } while (0)

/* The sum over the block of each thread's v, by the fixed tree of rtp_tree_sum_host
 * (part: RTP_THREADS doubles of shared memory); every thread gets it. */
__device__ static inline double rtp_block_sum(double *part, double v)
{
    part[threadIdx.x] = v;
    __syncthreads();
    for (int w = RTP_THREADS / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
        __syncthreads();
    }
    double r = part[0];
    __syncthreads(); /* part is reused by the next call */
    return r;
}

#endif
