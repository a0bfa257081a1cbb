/* cpu_dp.h - bf16 products with VDPBF16PS (AVX512_BF16), for CPUs that have it but no AMX
 * (AMD Zen 4/5, Intel Cooper Lake), or with AMX turned off, and for the shapes AMX does
 * not take. Built with -mavx512f -mavx512bw -mavx512bf16 on x86-64 only
 * (KILN_CONVK_X86); call only where rtp_cpu->dp is set (cpu_bf16.c checks the CPU).
 *
 * Every product is one GEMM, C (fp32) = A B, on operands packed once into bf16 pairs:
 * the summed index in adjacent pairs (one 32-bit word a pair), so one VDPBF16PS adds
 * two products into each of 16 fp32 sums. Inputs are fp32 tensors, rounded to bf16
 * (nearest even) as they are packed; outputs fp32.
 */
#ifndef CPU_DP_H
#define CPU_DP_H

#include <stddef.h>
#include <stdint.h>

#include "../rt_backend.h"

/* C[M][N] (ldc floats apart) = (acc ? C : 0) + A B, where A is M rows of K2 pairs
 * (lda apart) and B is K2 rows of N pairs (ldb >= N rounded up to 16 apart; the words
 * past N are read, never used). The sum order of each output is fixed (blocks of pairs
 * in order), so the result does not depend on how rows are split over threads;
 * rtp_dp_gemm_mt splits them over `threads`. */
void rtp_dp_gemm(float *C, size_t ldc, const uint32_t *A, size_t lda, const uint32_t *B, size_t ldb,
                 int M, int N, int K2, int acc);
void rtp_dp_gemm_mt(int threads, float *C, size_t ldc, const uint32_t *A, size_t lda,
                    const uint32_t *B, size_t ldb, int M, int N, int K2, int acc);

/* C[M][N] = the sum over taps t of A_t B_t: A_t is A's columns t*K2 .. t*K2 + K2 - 1
 * (rows lda apart), B_t is B + off[t] (K2 rows ldb apart, read to column N + off[t]
 * rounded up to 16): a convolution as shifted products over a padded plane. */
void rtp_dp_gemm_taps(float *C, size_t ldc, const uint32_t *A, size_t lda, const uint32_t *B,
                      size_t ldb, const int *off, int taps, int M, int N, int K2);

/* An image's unfold as pairs: B[k2][p*Q + q] = the pair of unfolded rows 2k2, 2k2+1
 * (row c*R*S + r*S + s: x[c][p*st - pad + r][q*st - pad + s], 0 outside the image and
 * past the last row); stride 1 or 2. */
typedef struct rtp_dp_geom {
    int C, H, W, R, S, st, pad, P, Q;
} rtp_dp_geom;
void rtp_dp_pack_cols(uint32_t *B, size_t ldb, const float *x, const rtp_dp_geom *g);
/* B[c2][ih*Wp + iw] = the pair of planes 2c2, 2c2+1 of x (C x H x W) zero-padded by pad
 * on each side (Wp = W + 2pad, Hp rows of it), then 0 to ldb */
void rtp_dp_pack_plane(uint32_t *B, size_t ldb, const float *x, int C, int H, int W, int pad);
/* A[m][k2] = (S[m][2k2], S[m][2k2+1]) for m < M, 2k2 < L (0 past L) */
void rtp_dp_pack_rows(uint32_t *A, size_t lda, const float *S, size_t lds, int M, int L);
/* D[c2][r] = (S[r][2c2], S[r][2c2+1]) for r < R, 2c2 < L: rows' pairs, transposed */
void rtp_dp_pack_rows_t(uint32_t *D, size_t ldd, const float *S, size_t lds, int R, int L);
/* D[c][r2] = (S[2r2][c], S[2r2+1][c]) for c < L, 2r2 < R (0 past R): pairs of rows,
 * transposed */
void rtp_dp_pack_cols_t(uint32_t *D, size_t ldd, const float *S, size_t lds, int R, int L);
/* one value's bf16 pair word (a, b) */
uint32_t rtp_dp_pair(float a, float b);

/* cpu_conv_dp.c: 3x3/1x1 (any size) convolutions of stride 1 or 2 without groups: the
 * scratch bytes for d with this many threads, and the three passes (bias: added; the
 * bias gradient is the caller's). */
size_t rtp_cpu_dp_conv_workspace(int threads, const rt_conv_desc *d);
typedef void rtp_dp_conv_fwd(rt_backend *b, float *ws, rt_tensor *out, double *mom,
                             const rt_tensor *in, const rt_tensor *w, const rt_tensor *bias,
                             const rt_conv_desc *d);
typedef void rtp_dp_conv_bwd(rt_backend *b, float *ws, rt_tensor *grad, const rt_tensor *dout,
                             const rt_tensor *other, const rt_conv_desc *d);
rtp_dp_conv_fwd rtp_cpu_dp_conv_fwd;
rtp_dp_conv_bwd rtp_cpu_dp_conv_bwd_data;   /* other: w */
rtp_dp_conv_bwd rtp_cpu_dp_conv_bwd_filter; /* other: in */

/* cpu_dense_dp.c: dense layers, the same way (bias: added / the caller's). */
size_t rtp_cpu_dp_dense_workspace(const rt_dense_desc *d);
typedef void rtp_dp_dense_bwd(rt_backend *b, float *ws, rt_tensor *grad, const rt_tensor *dout,
                              const rt_tensor *other, const rt_dense_desc *d);
void rtp_cpu_dp_dense_fwd(rt_backend *b, float *ws, rt_tensor *out, const rt_tensor *in,
                          const rt_tensor *w, const rt_tensor *bias, const rt_dense_desc *d);
rtp_dp_dense_bwd rtp_cpu_dp_dense_bwd_data;   /* other: w */
rtp_dp_dense_bwd rtp_cpu_dp_dense_bwd_filter; /* other: in */

#endif
