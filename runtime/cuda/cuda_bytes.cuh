/* cuda_bytes.cuh - the per-element body of the bytes -> normalised floats kernel
 * (cuda_bytes.cu), __host__ __device__ so the mock device (tests/gpu/mock) replays the
 * very same expression on the host (the reason for a header with a definition, as
 * cuda_elem.cuh). Element i of a set of (N, C, plane) bytes is byte i looked up in its
 * channel's 256-entry table: no arithmetic, so the device gives the host table's floats
 * bit for bit.
 */
#ifndef CUDA_BYTES_CUH
#define CUDA_BYTES_CUH

#include <stddef.h>
#include <stdint.h>

__host__ __device__ static inline void rtp_bytes_f32_at(size_t i, float *out, const uint8_t *bytes,
                                                        const float *lut, int C, size_t plane)
{
    out[i] = lut[(size_t)((i / plane) % (size_t)C) * 256 + bytes[i]];
}

#endif
