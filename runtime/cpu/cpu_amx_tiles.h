/* cpu_amx_tiles.h - what the bf16 AMX kernels share (cpu_amx_tiles.c; the kernels are
 * cpu_conv_amx.c, cpu_conv_amx_gemm.c and cpu_dense_amx.c): the tile configuration,
 * fp32 -> bf16 conversion as AVX-512 loops (nearest, ties to even, NaN stays NaN:
 * the same bits as the rounding cpu_bf16.c does, subnormals kept), and a small tiled
 * GEMM. Built with -mamx-tile -mamx-bf16 -mavx512f -mavx512bw (every CPU with AMX has
 * AVX-512); nothing here runs unless the CPU has AMX-BF16 and the process was granted
 * its tile data (rtp_cpu_amx_enable).
 */
#ifndef CPU_AMX_TILES_H
#define CPU_AMX_TILES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* fp32 -> bf16 bits, one value (the loops below do the same 16 at a time) */
static inline uint32_t rtp_bf16_bits(float f)
{
    uint32_t v;
    memcpy(&v, &f, 4);
    if ((v & 0x7FFFFFFFu) > 0x7F800000u) return (v >> 16) | 0x40u; /* NaN stays NaN */
    return (v + 0x7FFFu + ((v >> 16) & 1u)) >> 16;
}

/* Loads the tile configuration: tiles 0..7 with rows[i] rows of colsb[i] bytes. */
void rtp_amx_config(const uint8_t rows[8], const uint16_t colsb[8]);
/* All eight tiles 16 rows x 64 bytes (16 fp32, or 16 bf16 pairs). */
void rtp_amx_config_full(void);

/* o[i] <- bf16(x[i]) for i < n */
void rtp_amx_bf16_row(uint16_t *o, const float *x, size_t n);
/* o[i] <- bf16(a[i]) | bf16(b[i]) << 16 for i < n (b NULL: the high halves 0) */
void rtp_amx_bf16_pairs(uint32_t *o, const float *a, const float *b, size_t n);

/* the same at stride 2 (a phase of a row): o[i] <- bf16(x[2i]), o[i] <- bf16(a[2i]) |
 * bf16(b[2i]) << 16 for i < n, reading no further than x[2n - 2] */
void rtp_amx_bf16_row_s2(uint16_t *o, const float *x, size_t n);
void rtp_amx_bf16_pairs_s2(uint32_t *o, const float *a, const float *b, size_t n);

/* o[j*ldo + k] <- x[k*ldx + j] for k < K, j < J (32-bit words, e.g. bf16 pairs): a
 * transposition in blocks of 16 x 16 in registers; o's other words are left as they are. */
void rtp_amx_transpose32(uint32_t *o, size_t ldo, const uint32_t *x, size_t ldx, int K, size_t J);

/* C (ldc floats a row) = or += (acc) A B: A [M][K] bf16 (lda elements a row), B [K/2][N]
 * pairs of bf16 along K (ldb a row), M and N multiples of 16, K of 32; one thread, tiles
 * 0..7 configured full. Each output's sum runs over K in order (the same bits each run). */
void rtp_amx_gemm(const uint16_t *A, size_t lda, const uint32_t *B, size_t ldb, float *C,
                  size_t ldc, size_t M, size_t N, size_t K, int acc);

/* Inside a parallel region (an omp for over rows): dw[k*rows + r] = the sum over the G
 * group partials acc_g[r*ld + k] (acc_g = accs + g*accsz), in group order, for k < K,
 * r < rows; sum: K floats of the calling thread's scratch. */
void rtp_amx_group_sums(float *dw, const float *accs, size_t accsz, int G, size_t rows, size_t ld,
                        int K, float *sum);

#endif
