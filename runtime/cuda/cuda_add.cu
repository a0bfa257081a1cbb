/* cuda_add.cu - z = a + b elementwise, the residual blocks' sum (rt_layer_residual.c):
 * forward adds the skip to the block's output, backward the two paths' gradients;
 * add_relu is the sum with the relu that follows it fused (the CPU's arithmetic).
 * Plain float adds, so the result equals the CPU backend's bit for bit. z may alias a
 * or b (each element is read before it is written by the same thread).
 */
#include "cuda_elem.cuh"
#include "cuda_launch.cuh"

__global__ void add_k(float *z, const float *a, const float *b, size_t n)
{
    RTP_GRID_LOOP(i, n) z[i] = a[i] + b[i];
}

__global__ void add_relu_k(float *z, const float *a, const float *b, size_t n)
{
    RTP_GRID_LOOP(i, n) z[i] = rtp_add_relu_of(a[i], b[i]);
}

extern "C" cudaError_t rtp_k_add(cudaStream_t s, float *z, const float *a, const float *b, size_t n)
{
    RTP_LAUNCH(n, s, add_k, z, a, b, n);
}

extern "C" cudaError_t rtp_k_add_relu(cudaStream_t s, float *z, const float *a, const float *b,
                                      size_t n)
{
    RTP_LAUNCH(n, s, add_relu_k, z, a, b, n);
}
