/* cuda_bytes.cu - a data set's raw bytes -> normalised floats on the device
 * (rt_backend.h bytes_to_f32): the trainer's device path uploads a quarter of the
 * floats' size and normalises here. One grid-stride loop over the elements; the body is
 * cuda_bytes.cuh's table lookup.
 */
#include "cuda_bytes.cuh"
#include "cuda_kernels.h"
#include "cuda_launch.cuh"

__global__ void bytes_f32_k(float *out, const uint8_t *bytes, const float *lut, int C, size_t plane,
                            size_t n)
{
    RTP_GRID_LOOP(i, n) rtp_bytes_f32_at(i, out, bytes, lut, C, plane);
}

extern "C" cudaError_t rtp_k_bytes_f32(cudaStream_t s, float *out, const uint8_t *bytes,
                                       const float *lut, int C, size_t plane, size_t n)
{
    RTP_LAUNCH(n, s, bytes_f32_k, out, bytes, lut, C, plane, n);
}
