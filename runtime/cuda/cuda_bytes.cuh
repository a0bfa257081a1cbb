/* cuda_bytes.cuh - the per-element body of the bytes -> normalised floats kernel
 * (cuda_bytes.cu), __host__ __device__ so the mock device (tests/gpu/mock) replays the
 * very same expression on the host (the reason for a header with a definition, as
 * cuda_elem.cuh). Element i of a set of (N, C, plane) bytes is byte i looked up in its
 * channel's 256-entry table: no arithmetic, so the device gives the host table's floats
 * bit for bit. The channel, (i / plane) % C, is divided in 32 bits whenever i and plane
 * fit (every set below 2^32 bytes): a GPU has no 64-bit integer divider, and a 64-bit
 * / and % per byte is some 140 instructions where the lookup is two loads. Same
 * channel either way.
 */
#ifndef CUDA_BYTES_CUH
#define CUDA_BYTES_CUH

#include <stddef.h>
#include <stdint.h>

__host__ __device__ static inline void rtp_bytes_f32_at(size_t i, float *out, const uint8_t *bytes,
                                                        const float *lut, int C, size_t plane)
{
    size_t c = (i | plane) >> 32 ? i / plane % (size_t)C
                                 : (size_t)((uint32_t)i / (uint32_t)plane % (uint32_t)C);
    out[i] = lut[c * 256 + bytes[i]];
}

#endif
