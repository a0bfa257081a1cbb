/* cpu_internal.h - private declarations shared by the CPU backend's files.
 *
 * The CPU backend keeps one scratch workspace (reserved once when a model is built,
 * never grown inside a training step) and a thread count used for OpenMP loops and
 * OpenBLAS. Each op family lives in its own file; cpu_backend.c assembles the table.
 */
#ifndef CPU_INTERNAL_H
#define CPU_INTERNAL_H

#include "../rt_backend.h"
#include "../rt_device.h"
#include "cpu_conv_kern.h"

typedef struct rtp_cpu {
    float *ws; /* scratch, 64-byte aligned */
    size_t ws_bytes;
    const rtp_convk *convk; /* direct-convolution loops for this CPU, or NULL (im2col) */
    rt_precision prec;      /* fp32, or bf16 (cpu_bf16.c) */
    int amx;                /* bf16 3x3 stride-1 convolutions on AMX tiles (cpu_conv_amx.c) */
    int dp;                 /* bf16 products on VDPBF16PS where AMX does not take them: RTP_DP_* */
} rtp_cpu;

/* rtp_cpu.dp: which bf16 products VDPBF16PS takes (cpu_dp.h; cpu_bf16.c chooses) */
enum { RTP_DP_NONE, RTP_DP_DENSE, RTP_DP_ALL };

/* Scratch of at least `bytes`, or NULL with RT_EINVAL set in err (never allocates). */
float *rtp_cpu_scratch(rt_backend *b, size_t bytes, rt_error *err);

/* cpu_blas_dl.c: loads OpenBLAS once per process (thread-safe; later calls return the
 * first result). RT_ENODEV naming the file and the apt package when it cannot be
 * loaded. KILN_LIBOPENBLAS in the environment names another file (tests use it). */
RT_MUST_USE rt_status rtp_cpu_blas_load(rt_error *err);

/* cpu_bf16.c: --precision bf16. rtp_cpu_bf16_supported says whether this CPU (and the
 * loops picked for it) can, else names what is missing in *missing; rtp_cpu_bf16 whether
 * b computes in bf16. rtp_cpu_bf16_round writes n floats rounded to bf16 (nearest, ties
 * to even; kept as fp32 values); rtp_cpu_bf16_stage rounds t into *at and returns the
 * view of the copy, moving *at past it (64-byte steps). rtp_cpu_bf16_conv_stage: bytes
 * of the rounded copies a convolution needs after its fp32 scratch. */
int rtp_cpu_bf16_supported(const rtp_cpu *c, const char **missing);
int rtp_cpu_bf16(const rt_backend *b);
void rtp_cpu_bf16_round(rt_backend *b, float *dst, const float *src, size_t n);
rt_tensor rtp_cpu_bf16_stage(rt_backend *b, float **at, const rt_tensor *t);
size_t rtp_cpu_bf16_conv_stage(const rt_conv_desc *d);
rt_op_dense_workspace rtp_cpu_dense_workspace;

/* cpu_conv.c; im2col: col (C*R*S, P*Q) <- image x (C,H,W), zero outside the padded
 * border; col2im: image dx (C,H,W) += the fold of col (dx zeroed by the caller) */
void rtp_cpu_im2col(float *col, const float *x, const rt_conv_desc *d);
void rtp_cpu_col2im(float *dx, const float *col, const rt_conv_desc *d);
rt_op_conv2d_workspace rtp_cpu_conv2d_workspace;
RT_MUST_USE rt_op_conv2d_fwd rtp_cpu_conv2d_fwd;
RT_MUST_USE rt_op_conv2d_fwd_moments rtp_cpu_conv2d_fwd_moments;
RT_MUST_USE rt_op_conv2d_bwd_data rtp_cpu_conv2d_bwd_data;
RT_MUST_USE rt_op_conv2d_bwd_filter rtp_cpu_conv2d_bwd_filter;

/* The elementwise spans (cpu_act.c, cpu_bn.c, cpu_backend.c): noinline keeps `restrict`
 * meaningful (inlined into an OpenMP outlined function GCC loses it and falls back to
 * scalar, branchy code), and no-trapping-math lets GCC turn selects such as
 * `x > 0 ? 1 : slope` into vector blends (we never rely on FP exceptions). GCC also
 * builds each for AVX-512 and AVX2 beside the baseline, picked when the program loads
 * (valgrind gets AVX2): the same operations in the same order (no FMA contraction, no
 * reassociation), so every build gives the same bits. */
#if defined(__clang__) /* clang has no per-function optimize attribute */
#define RTP_SPAN __attribute__((noinline))
#else
#define RTP_SPAN                                           \
    __attribute__((noinline, optimize("no-trapping-math"), \
                   target_clones("avx512f", "avx2", "default")))
#endif

/* cpu_act.c: elementwise loops over n floats run on rtp_cpu_team(b, n) threads (one
 * below 64K floats), thread t taking rtp_cpu_chunk's [lo, hi) (16-float boundaries). */
int rtp_cpu_team(rt_backend *b, size_t n);
void rtp_cpu_chunk(size_t n, size_t *lo, size_t *hi);

/* cpu_bn_stats.c: batch-norm statistics as per-plane moments (rt_backend.h
 * RT_MOMENT_FLOATS). rtp_cpu_plane_moments writes the moments of `planes` planes of n
 * floats each (x, x + n, ...) to mom (RT_MOMENT_FLOATS floats = 2 doubles a plane);
 * rtp_cpu_moments_add merges one plane's moments into a channel's running total (start
 * from a zeroed rtp_moments; merge the planes in image order). */
typedef struct rtp_moments {
    double count, mean, m2;
} rtp_moments;
void rtp_cpu_plane_moments(double *mom, const float *x, int planes, size_t n);
void rtp_cpu_moments_add(rtp_moments *acc, const double *mom, size_t n);

/* Sum of n floats, vectorisable, in a fixed order (deterministic). */
float rtp_cpu_row_sum(const float *x, int n);

/* cpu_conv_direct.c: the direct 3x3 convolution. rtp_cpu_convk_pick chooses the
 * loops for this CPU when the backend opens (KILN_CPU_CONV=auto|avx512|avx2|im2col;
 * im2col, or a CPU without AVX2+FMA, gives NULL); rtp_cpu_conv_direct says whether a
 * convolution takes the direct path on b (NULL: im2col + sgemm). The direct paths'
 * forwards (here and in cpu_conv_s2.c) write each output plane's moments
 * (cpu_bn_stats.c) into mom (N x K planes) unless it is NULL. */
RT_MUST_USE rt_status rtp_cpu_convk_pick(const rtp_convk **out, rt_error *err);
const rtp_convk *rtp_cpu_conv_direct(rt_backend *b, const rt_conv_desc *d);
size_t rtp_cpu_conv_direct_workspace(rt_backend *b, const rtp_convk *k, const rt_conv_desc *d);
RT_MUST_USE rt_status rtp_cpu_conv_direct_fwd(rt_backend *b, const rtp_convk *k, rt_tensor *out,
                                              double *mom, const rt_tensor *in, const rt_tensor *w,
                                              const rt_tensor *bias, const rt_conv_desc *d,
                                              rt_error *err);
RT_MUST_USE rt_status rtp_cpu_conv_direct_bwd_data(rt_backend *b, const rtp_convk *k,
                                                   rt_tensor *din, const rt_tensor *dout,
                                                   const rt_tensor *w, const rt_conv_desc *d,
                                                   rt_error *err);
RT_MUST_USE rt_status rtp_cpu_conv_direct_bwd_filter(rt_backend *b, const rtp_convk *k,
                                                     rt_tensor *dw, rt_tensor *dbias,
                                                     const rt_tensor *dout, const rt_tensor *in,
                                                     const rt_conv_desc *d, rt_error *err);
/* cpu_conv_s2.c: the direct stride-2 convolutions (3x3, and the unpadded 1x1);
 * rtp_cpu_conv_s2 says whether d takes that path on b (NULL: im2col + sgemm). */
const rtp_convk *rtp_cpu_conv_s2(rt_backend *b, const rt_conv_desc *d);
size_t rtp_cpu_conv_s2_workspace(rt_backend *b, const rtp_convk *k, const rt_conv_desc *d);
RT_MUST_USE rt_status rtp_cpu_conv_s2_fwd(rt_backend *b, const rtp_convk *k, rt_tensor *out,
                                          double *mom, const rt_tensor *in, const rt_tensor *w,
                                          const rt_tensor *bias, const rt_conv_desc *d,
                                          rt_error *err);
RT_MUST_USE rt_status rtp_cpu_conv_s2_bwd_data(rt_backend *b, const rtp_convk *k, rt_tensor *din,
                                               const rt_tensor *dout, const rt_tensor *w,
                                               const rt_conv_desc *d, rt_error *err);
RT_MUST_USE rt_status rtp_cpu_conv_s2_bwd_filter(rt_backend *b, const rtp_convk *k, rt_tensor *dw,
                                                 rt_tensor *dbias, const rt_tensor *dout,
                                                 const rt_tensor *in, const rt_conv_desc *d,
                                                 rt_error *err);
/* A convolution's forward that also writes each output plane's moments to mom (N x K
 * planes, RT_MOMENT_FLOATS / 2 doubles each) unless NULL: the depthwise and 1x1 paths */
typedef rt_status rtp_cpu_conv_fwd_mom(rt_backend *b, rt_tensor *out, double *mom,
                                       const rt_tensor *in, const rt_tensor *w,
                                       const rt_tensor *bias, const rt_conv_desc *d, rt_error *err);
/* cpu_conv_dw.c: the direct depthwise convolution; rtp_cpu_conv_dw says whether d
 * takes it on b (0: cpu_conv.c's grouped im2col + sgemm). */
int rtp_cpu_conv_dw(rt_backend *b, const rt_conv_desc *d);
size_t rtp_cpu_conv_dw_workspace(rt_backend *b, const rt_conv_desc *d);
RT_MUST_USE rtp_cpu_conv_fwd_mom rtp_cpu_conv_dw_fwd;
RT_MUST_USE rt_status rtp_cpu_conv_dw_bwd_data(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                               const rt_tensor *w, const rt_conv_desc *d,
                                               rt_error *err);
RT_MUST_USE rt_status rtp_cpu_conv_dw_bwd_filter(rt_backend *b, rt_tensor *dw, rt_tensor *dbias,
                                                 const rt_tensor *dout, const rt_tensor *in,
                                                 const rt_conv_desc *d, rt_error *err);
/* cpu_transpose.c: t (n, m) <- a (m, n), each element a block of blk floats */
void rtp_cpu_transpose(float *restrict t, const float *restrict a, int m, int n, int blk);
/* cpu_conv_dw_lanes.c: the depthwise convolution on small planes, channels in the
 * vector lanes; rtp_cpu_conv_dw_lanes says whether d (depthwise) takes it. */
int rtp_cpu_conv_dw_lanes(const rt_conv_desc *d);
size_t rtp_cpu_conv_dw_lanes_workspace(rt_backend *b, const rt_conv_desc *d);
RT_MUST_USE rtp_cpu_conv_fwd_mom rtp_cpu_conv_dw_lanes_fwd;
RT_MUST_USE rt_op_conv2d_bwd_data rtp_cpu_conv_dw_lanes_bwd_data;
RT_MUST_USE rt_op_conv2d_bwd_filter rtp_cpu_conv_dw_lanes_bwd_filter;
/* cpu_conv_1x1.c: 1x1 stride-1 convolutions on small planes, one sgemm per batch;
 * rtp_cpu_conv_1x1 says whether d takes it. */
int rtp_cpu_conv_1x1(const rt_conv_desc *d);
size_t rtp_cpu_conv_1x1_workspace(rt_backend *b, const rt_conv_desc *d);
RT_MUST_USE rtp_cpu_conv_fwd_mom rtp_cpu_conv_1x1_fwd;
RT_MUST_USE rt_status rtp_cpu_conv_1x1_bwd_data(rt_backend *b, rt_tensor *din,
                                                const rt_tensor *dout, const rt_tensor *w,
                                                const rt_conv_desc *d, rt_error *err);
RT_MUST_USE rt_status rtp_cpu_conv_1x1_bwd_filter(rt_backend *b, rt_tensor *dw, rt_tensor *dbias,
                                                  const rt_tensor *dout, const rt_tensor *in,
                                                  const rt_conv_desc *d, rt_error *err);
/* cpu_pool.c */
RT_MUST_USE rt_op_maxpool_fwd rtp_cpu_maxpool_fwd;
RT_MUST_USE rt_op_maxpool_bwd rtp_cpu_maxpool_bwd;
RT_MUST_USE rt_op_avgpool_fwd rtp_cpu_avgpool_fwd;
RT_MUST_USE rt_op_avgpool_bwd rtp_cpu_avgpool_bwd;
/* cpu_act.c */
RT_MUST_USE rt_op_relu_fwd rtp_cpu_relu_fwd;
RT_MUST_USE rt_op_relu_bwd rtp_cpu_relu_bwd;
RT_MUST_USE rt_op_dropout_fwd rtp_cpu_dropout_fwd;
RT_MUST_USE rt_op_dropout_bwd rtp_cpu_dropout_bwd;
/* cpu_act_fn.c */
RT_MUST_USE rt_op_act_fwd rtp_cpu_act_fwd;
RT_MUST_USE rt_op_act_bwd rtp_cpu_act_bwd;
/* cpu_bn.c */
/* cpu_bn.c's backward operands: with the fused relu's mask when Bt (beta) is given; with
 * a residual add fused after the norm (KEEP given), through that add (and its relu when
 * lo = 0, the mask read from Y, the output): KEEP = the gradient of the sum, DY (+ DY2)
 * masked, and the norm's gradients from KEEP. */
typedef struct rtp_bn_bwd_args {
    const float *X, *DY, *DY2, *Y, *G, *Bt, *SM, *SI;
    float *KEEP, *DX, *DG, *DB;
    int N, C;
    size_t hw, M;
    float lo;
} rtp_bn_bwd_args;
/* cpu_bn_small.c: planes of hw values where rtp_cpu_bn_small(hw) (16 or fewer) by
 * blocks of channels, the bits of cpu_bn.c's plane loops: the training forward's output
 * pass (with the fused add's other term S unless NULL), and the backward (with a fused
 * add when A->KEEP). */
int rtp_cpu_bn_small(size_t hw);
void rtp_cpu_bn_small_out(rt_backend *b, float *Y, const float *X, const float *S, int N, int C,
                          int hw, const float *G, const float *Bt, const float *SM, const float *SI,
                          float lo);
void rtp_cpu_bn_small_bwd(rt_backend *b, const rtp_bn_bwd_args *A);
/* cpu_bn_stream.c: whether the training forward writes its output y (planes of hw
 * values, total in all) with streaming stores; if so each plane goes through
 * rtp_cpu_bn_affine_stream (cpu_bn.c's row_affine, with the fused add's s unless NULL;
 * n a multiple of 16, y 64-byte aligned) and each thread ends with the fence. */
int rtp_cpu_bn_stream(const float *y, size_t hw, size_t total);
void rtp_cpu_bn_affine_stream(float *y, const float *x, const float *s, size_t n, float g, float sh,
                              float lo);
void rtp_cpu_bn_stream_fence(void);
RT_MUST_USE rt_op_bn_fwd_train rtp_cpu_bn_fwd_train;
RT_MUST_USE rt_op_bn_fwd_train_moments rtp_cpu_bn_fwd_train_moments;
RT_MUST_USE rt_op_bn_fwd_eval rtp_cpu_bn_fwd_eval;
RT_MUST_USE rt_op_bn_bwd rtp_cpu_bn_bwd;
RT_MUST_USE rt_op_bn_relu_bwd rtp_cpu_bn_relu_bwd;
RT_MUST_USE rt_op_bn_add_fwd_train rtp_cpu_bn_add_fwd_train;
RT_MUST_USE rt_op_bn_add_bwd rtp_cpu_bn_add_bwd;
/* cpu_dense.c */
RT_MUST_USE rt_op_dense_fwd rtp_cpu_dense_fwd;
RT_MUST_USE rt_op_dense_bwd_data rtp_cpu_dense_bwd_data;
RT_MUST_USE rt_op_dense_bwd_filter rtp_cpu_dense_bwd_filter;
/* cpu_xent.c */
RT_MUST_USE rt_op_xent_fwd rtp_cpu_xent_fwd;
RT_MUST_USE rt_op_xent_bwd rtp_cpu_xent_bwd;
/* cpu_optim.c */
RT_MUST_USE rt_op_adam_update rtp_cpu_adam_update;
RT_MUST_USE rt_op_sgd_update rtp_cpu_sgd_update;
/* cpu_clip.c */
RT_MUST_USE rt_op_clip_grad rtp_cpu_clip_grad;

/* cpu_gather.c, cpu_xent.c, cpu_amp.c: the trainer's device path */
RT_MUST_USE rt_op_bytes_to_f32 rtp_cpu_bytes_to_f32;
RT_MUST_USE rt_op_gather_batch rtp_cpu_gather_batch;
RT_MUST_USE rt_op_xent_stats rtp_cpu_xent_stats;
RT_MUST_USE rt_op_amp_scale rtp_cpu_amp_scale;
RT_MUST_USE rt_op_amp_unscale rtp_cpu_amp_unscale;
RT_MUST_USE rt_op_amp_adam_update rtp_cpu_amp_adam_update;
RT_MUST_USE rt_op_amp_sgd_update rtp_cpu_amp_sgd_update;

#endif
