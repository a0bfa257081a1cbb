/* cpu_conv_amx.h - bf16 3x3 stride-1 and -2 convolutions on AMX tiles (cpu_conv_amx.c, built
 * with -mamx-tile -mamx-bf16 on x86-64 only: KILN_CONVK_X86). Call only after
 * rtp_cpu_amx_enable() returned 1 on a CPU with AMX-BF16 (cpu_bf16.c checks).
 * Inputs are fp32 tensors, rounded to bf16 as they are laid out; outputs fp32.
 */
#ifndef CPU_CONV_AMX_H
#define CPU_CONV_AMX_H

#include "../rt_backend.h"

/* Asks the kernel for the AMX tile data state (arch_prctl ARCH_REQ_XCOMP_PERM): 1 when
 * granted (process-wide), 0 otherwise (cpu_amx_tiles.c). */
int rtp_cpu_amx_enable(void);
/* 1 for the 3x3 stride-2 convolutions these kernels also take (pad 1, even planes, 16
 * to 128 channels): x split into its four stride-2 phases, each tap a stride-1 product
 * on one of them. */
int rtp_cpu_amx_s2_takes(const rt_conv_desc *d);
/* Scratch bytes the three passes need for d with this many threads. */
size_t rtp_cpu_amx_workspace(int threads, const rt_conv_desc *d);
/* out (and its planes' moments into mom unless NULL), din, dw; ws: the scratch above.
 * No bias gradient here (the caller sums dy). */
void rtp_cpu_amx_fwd(rt_backend *b, float *ws, rt_tensor *out, double *mom, const rt_tensor *in,
                     const rt_tensor *w, const rt_tensor *bias, const rt_conv_desc *d);
void rtp_cpu_amx_bwd_data(rt_backend *b, float *ws, rt_tensor *din, const rt_tensor *dout,
                          const rt_tensor *w, const rt_conv_desc *d);
void rtp_cpu_amx_bwd_filter(rt_backend *b, float *ws, rt_tensor *dw, const rt_tensor *dout,
                            const rt_tensor *in, const rt_conv_desc *d);

/* cpu_conv_amx_gemm.c: 1x1 convolutions (unpadded, stride 1 or 2) and 3x3 ones of stride
 * 1 or 2 (the wider ones cpu_conv_amx.c does not take) as a GEMM per image, the same
 * rounding, the same signatures as above; takes: 1 for the shapes it runs (16 channels
 * or more on both sides, no groups). */
int rtp_cpu_amx_gemm_takes(const rt_conv_desc *d);
size_t rtp_cpu_amx_gemm_workspace(int threads, const rt_conv_desc *d);
void rtp_cpu_amx_gemm_fwd(rt_backend *b, float *ws, rt_tensor *out, double *mom,
                          const rt_tensor *in, const rt_tensor *w, const rt_tensor *bias,
                          const rt_conv_desc *d);
void rtp_cpu_amx_gemm_bwd_data(rt_backend *b, float *ws, rt_tensor *din, const rt_tensor *dout,
                               const rt_tensor *w, const rt_conv_desc *d);
void rtp_cpu_amx_gemm_bwd_filter(rt_backend *b, float *ws, rt_tensor *dw, const rt_tensor *dout,
                                 const rt_tensor *in, const rt_conv_desc *d);

/* cpu_dense_amx.c: dense layers (rt_dense_desc) on AMX tiles, the same rounding; the
 * scratch bytes they need, and the three products (bias: added / summed from fp32 dy). */
size_t rtp_cpu_amx_dense_workspace(const rt_dense_desc *d);
void rtp_cpu_amx_dense_fwd(rt_backend *b, float *ws, rt_tensor *out, const rt_tensor *in,
                           const rt_tensor *w, const rt_tensor *bias, const rt_dense_desc *d);
void rtp_cpu_amx_dense_bwd_data(rt_backend *b, float *ws, rt_tensor *din, const rt_tensor *dout,
                                const rt_tensor *w, const rt_dense_desc *d);
void rtp_cpu_amx_dense_bwd_filter(rt_backend *b, float *ws, rt_tensor *dw, const rt_tensor *dout,
                                  const rt_tensor *in, const rt_dense_desc *d);

#endif
