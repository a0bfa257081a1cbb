/* cuda_add.cu - z = a + b elementwise, the residual blocks' sum (rt_layer_residual.c):
 * forward adds the skip to the block's output, backward the two paths' gradients.
 * Plain float adds, so the result equals the CPU backend's bit for bit. z may alias a
 * or b (each element is read before it is written by the same thread).
 */
#include "cuda_kernels.h"
#include "cuda_launch.cuh"

__global__ void add_k(float *z, const float *a, const float *b, size_t n)
{
    RTP_GRID_LOOP(i, n) z[i] = a[i] + b[i];
}

extern "C" cudaError_t rtp_k_add(cudaStream_t s, float *z, const float *a, const float *b, size_t n)
{
    RTP_LAUNCH(n, s, add_k, z, a, b, n);
}
