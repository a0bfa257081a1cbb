/* cuda_kernels.h - launchers of our own CUDA kernels (the .cu files), callable from C.
 *
 * Each launcher computes its grid, launches on `s` and returns cudaGetLastError(), so
 * the caller checks every launch with RT_CUDA_TRY.
 * Pointers are device memory; shapes use the N, C, H, W, K, P, Q letters of
 * rt_backend.h. Launchers never allocate and never synchronise.
 * Step variables: the launchers whose arguments change from one training step to the
 * next (the batch's place in the epoch order, the Philox streams, the stats row, the
 * optimiser's coefficients) also take a device pointer to those values (`dv`, NULL: the
 * argument passed by value is used). A step captured as a CUDA graph passes a slot of
 * the graph's parameter block (cuda_graph.c), so its replays read that step's values.
 */
#ifndef CUDA_KERNELS_H
#define CUDA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "../rt_backend.h"
#include "../rt_optim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Pooling geometry: planes = N*C independent (H,W) -> (P,Q) planes, R x S window. */
typedef struct rtp_pool_geom {
    int planes, H, W, R, S, stride, P, Q;
    int pad, adaptive; /* rt_pool_desc's */
} rtp_pool_geom;

/* Convolution geometry of ONE image for im2col/col2im (no cuDNN). */
typedef struct rtp_conv_geom {
    int C, H, W, R, S, stride, pad, P, Q;
} rtp_conv_geom;

/* The Philox stream of a dropout mask: key = seed, counter words c2, c3 (rt_rng.h). */
typedef struct rtp_philox_stream {
    uint32_t key0, key1, c2, c3;
} rtp_philox_stream;

/* ---- cuda_elem.cu ---- */
cudaError_t rtp_k_fill(cudaStream_t s, float *p, size_t n, float v);
/* y = x * (x > 0 ? 1 : slope); dx = dy * (y > 0 ? 1 : slope). In place allowed. */
cudaError_t rtp_k_relu_fwd(cudaStream_t s, float *y, const float *x, size_t n, float slope);
/* activations (rt_act_kind), as cpu_act_fn.c: y = f(x); dx = dy * f'(x) from x and y */
cudaError_t rtp_k_act_fwd(cudaStream_t s, float *y, const float *x, size_t n, int kind);
cudaError_t rtp_k_act_bwd(cudaStream_t s, float *dx, const float *dy, const float *x,
                          const float *y, size_t n, int kind);
cudaError_t rtp_k_relu_bwd(cudaStream_t s, float *dx, const float *dy, const float *y, size_t n,
                           float slope);
/* mask[i] = (word_i >> 8) < ceil(keep * 2^24) ? 1/keep : 0; y = x * mask (word i of the
 * stream; rt_rng_fill_bernoulli's contract). */
cudaError_t rtp_k_dropout_fwd(cudaStream_t s, float *y, float *mask, const float *x, size_t n,
                              rtp_philox_stream st, float keep, const rtp_philox_stream *dv);
/* ---- cuda_add.cu ---- */
/* z = a + b elementwise (z may alias a or b). */
cudaError_t rtp_k_add(cudaStream_t s, float *z, const float *a, const float *b, size_t n);
/* z = relu(a + b), as the CPU's add_relu (aliasing as rtp_k_add). */
cudaError_t rtp_k_add_relu(cudaStream_t s, float *z, const float *a, const float *b, size_t n);
/* z = a * b elementwise (z may alias a). */
cudaError_t rtp_k_mul(cudaStream_t s, float *z, const float *a, const float *b, size_t n);
/* y (N,K,PQ) += bias (K). */
cudaError_t rtp_k_bias_add(cudaStream_t s, float *y, const float *bias, int N, int K, int PQ);
/* db (O) = column sums of dy (N,O), in n order from 0 (the CPU's order). */
cudaError_t rtp_k_col_sums(cudaStream_t s, float *db, const float *dy, int N, int O);
/* y (N,O) = bias broadcast over rows. */
cudaError_t rtp_k_row_broadcast(cudaStream_t s, float *y, const float *bias, int N, int O);
/* fp32 <-> 16-bit (bf16 != 0: bfloat16, else IEEE half), round to nearest even. */
cudaError_t rtp_k_to_16(cudaStream_t s, void *dst, const float *src, size_t n, int bf16);
cudaError_t rtp_k_from_16(cudaStream_t s, float *dst, const void *src, size_t n, int bf16);

/* ---- cuda_pool.cu (PyTorch semantics, as cpu_pool.c) ---- */
cudaError_t rtp_k_maxpool_fwd(cudaStream_t s, float *y, const float *x, rtp_pool_geom g);
cudaError_t rtp_k_maxpool_bwd(cudaStream_t s, float *dx, const float *dy, const float *x,
                              const float *y, rtp_pool_geom g);
cudaError_t rtp_k_avgpool_fwd(cudaStream_t s, float *y, const float *x, rtp_pool_geom g);
cudaError_t rtp_k_avgpool_bwd(cudaStream_t s, float *dx, const float *dy, rtp_pool_geom g);

/* ---- per-channel reductions in two levels (cuda_reduce.cu, cuda_bn.cu) ----
 * Channel c of an (N, C, HW) tensor has M = N * HW elements. Level 1 (the *_part
 * launchers): P = rtp_red_parts(M) blocks per channel, for channels c0 .. c0 + cw - 1,
 * each write one pair of doubles, part[2 * ((c - c0) * P + p) + {0, 1}]. Level 2 (the
 * *_finish launchers): one thread per channel combines its P pairs in p order. cw * P
 * must fit the backend's buffer of RTP_RED_SLOTS pairs: larger C runs in waves
 * (rtp_red_wave). The split depends only on the shape (cuda_elem.cuh says why and how
 * precisely), so results are bitwise the same run to run. */
#define RTP_RED_CHUNK 4096  /* elements per block, at least */
#define RTP_RED_MAXP 64     /* blocks per channel, at most */
#define RTP_RED_SLOTS 16384 /* partial pairs in the backend's reduction buffer */

static inline int rtp_red_parts(size_t M)
{
    size_t p = (M + RTP_RED_CHUNK - 1) / RTP_RED_CHUNK;
    return p < 1 ? 1 : p > RTP_RED_MAXP ? RTP_RED_MAXP : (int)p;
}

/* The channels of the wave starting at c0. */
static inline int rtp_red_wave(int C, int P, int c0)
{
    int per = RTP_RED_SLOTS / P;
    return C - c0 < per ? C - c0 : per;
}

/* Pairs (sum of x, 0): the conv bias gradient's level 1. */
cudaError_t rtp_k_chan_sum_part(cudaStream_t s, double *part, const float *x, int N, int C, int HW,
                                int c0, int cw, int P);
/* out0[c] = (float) the sum of the pairs' first halves, out1[c] (unless NULL) of the
 * second halves, for c in c0 .. c0 + cw - 1. */
cudaError_t rtp_k_red_finish(cudaStream_t s, const double *part, float *out0, float *out1, int c0,
                             int cw, int P);

/* ---- cuda_bn.cu (as cpu_bn.c; x, y: (N,C,HW)) ---- */
/* Training forward: pairs (sum, squares about the block's mean); the finish writes the
 * saved mean and invstd and updates the running statistics; apply writes y from them. */
cudaError_t rtp_k_bn_stats_part(cudaStream_t s, double *part, const float *x, int N, int C, int HW,
                                int c0, int cw, int P);
cudaError_t rtp_k_bn_stats_finish(cudaStream_t s, const double *part, float *save_mean,
                                  float *save_invstd, float *running_mean, float *running_var,
                                  int N, int HW, int c0, int cw, int P, float eps, float momentum);
/* relu: 1 writes relu(y) (a relu fused after the norm). */
cudaError_t rtp_k_bn_apply(cudaStream_t s, float *y, const float *x, const float *gamma,
                           const float *beta, const float *save_mean, const float *save_invstd,
                           int N, int C, int HW, int relu);
cudaError_t rtp_k_bn_fwd_eval(cudaStream_t s, float *y, const float *x, const float *gamma,
                              const float *beta, const float *running_mean,
                              const float *running_var, int N, int C, int HW, float eps, int relu);
/* Backward: pairs (sum dy, sum dy * xhat), finished by rtp_k_red_finish into dbeta and
 * dgamma; then dx from those. beta given (else NULL): dy is the gradient of the fused
 * relu's output, masked where the norm's output (recomputed from x) is not > 0. */
cudaError_t rtp_k_bn_bwd_part(cudaStream_t s, double *part, const float *dy, const float *x,
                              const float *gamma, const float *beta, const float *save_mean,
                              const float *save_invstd, int N, int C, int HW, int c0, int cw,
                              int P);
cudaError_t rtp_k_bn_bwd_apply(cudaStream_t s, float *dx, const float *dy, const float *x,
                               const float *gamma, const float *beta, const float *save_mean,
                               const float *save_invstd, const float *dgamma, const float *dbeta,
                               int N, int C, int HW);

/* ---- cuda_xent.cu (as cpu_xent.c); a label outside [0, L) gives a NaN loss ---- */
cudaError_t rtp_k_xent_fwd(cudaStream_t s, float *loss, float *probs, const float *logits,
                           const int32_t *labels, int N, int L, float eps);
cudaError_t rtp_k_xent_bwd(cudaStream_t s, float *dlogits, const float *probs,
                           const int32_t *labels, float scale, int N, int L, float eps);

/* ---- cuda_optim.cu (mirrors rt_optim_kernels.c line by line) ---- */
cudaError_t rtp_k_adam(cudaStream_t s, float *p, float *m, float *v, const float *g, size_t n,
                       rt_adam_coef c, const rt_adam_coef *dv);
cudaError_t rtp_k_sgd(cudaStream_t s, float *p, float *buf, const float *g, size_t n, rt_sgd_coef c,
                      const rt_sgd_coef *dv);
/* clip_grad (cpu_clip.c): the clamp (clip_value > 0), then (max_norm > 0) RT_CLIP_PARTS
 * blocks' partial squares into w's scratch, one thread's norm and factor into w[0..1],
 * and the scaling by w[1] (skipped by every thread when it is 1). */
cudaError_t rtp_k_clip(cudaStream_t s, float *g, size_t n, float *w, double max_norm,
                       double clip_value);

/* ---- cuda_im2col.cu (convolution without cuDNN) ---- */
/* The (C*R*S, P*Q) column matrices of `count` images x (count, C,H,W), zeros outside
 * the padded border: image m's at col + m * nstride, its rows ld floats apart.
 * nstride = C*R*S*P*Q, ld = P*Q: one matrix per image (a strided-batched GEMM's);
 * nstride = P*Q, ld = count*P*Q: one (C*R*S, count*P*Q) matrix (one GEMM over them all). */
cudaError_t rtp_k_im2col(cudaStream_t s, float *col, const float *x, rtp_conv_geom g, int count,
                         size_t nstride, size_t ld);
/* dx (count, C,H,W) = fold of col (count, C*R*S, P*Q) (overwrites dx; gather form, no
 * atomics). */
cudaError_t rtp_k_col2im(cudaStream_t s, float *dx, const float *col, rtp_conv_geom g, int count);

/* ---- cuda_train.cu: the trainer's device path (rt_backend.h; as runtime/cpu/) ---- */

/* A gather_batch as its kernel needs it: rt_gather_desc with the augmentation stream
 * rt_rng_stream(seed, RT_RNG_AUGMENT, epoch, 0) built on the host (cuda_ops.c's way). */
typedef struct rtp_gather_geom {
    int n, C, H, W, count;
    int augment, pad;
    float flip_p;
    float pad_value[4];
    rtp_philox_stream st;
    int cutout;            /* side of the cutout square, 0: none */
    rtp_philox_stream st2; /* the cutout stream: rt_rng_stream(seed, RT_RNG_AUGMENT, epoch, 1) */
} rtp_gather_geom;

/* A gather's step variables: the batch's first position in the order, the streams. */
typedef struct rtp_gather_vars {
    int64_t start;
    rtp_philox_stream st, st2;
} rtp_gather_vars;

/* images (count,C,H,W), labels (count) from data (n,C,H,W), data_labels (n) by order
 * (count; the epoch's order from the batch's start). An order value outside [0, n) is
 * not read through: that sample's label becomes -1 (a NaN loss) and its image is left
 * as it was (the host validated the order when it uploaded it). */
cudaError_t rtp_k_gather(cudaStream_t s, float *images, int32_t *labels, const float *data,
                         const int32_t *data_labels, const int32_t *order, rtp_gather_geom g,
                         const rtp_gather_vars *dv);
/* row[0..3] = {mean loss hi, lo, correct, 0} of loss (N), probs (N,L), labels (N):
 * one block; the loss sum is sequential in sample order, in double (cpu_xent.c). With
 * dv, row is the ring's first row and the row written is row + *dv * RT_STEP_STATS. */
cudaError_t rtp_k_xent_stats(cudaStream_t s, float *row, const float *loss, const float *probs,
                             const int32_t *labels, int N, int L, const int32_t *dv);
/* cuda_bytes.cu: out[i] = lut[c * 256 + bytes[i]] for i < n, c = (i / plane) % C. */
cudaError_t rtp_k_bytes_f32(cudaStream_t s, float *out, const uint8_t *bytes, const float *lut,
                            int C, size_t plane, size_t n);
/* A CUDA graph's parameter block written by a kernel whose argument carries the bytes:
 * dst[0..n) = c.b[0..n), n <= RTP_PARAM_CHUNK. The bytes are copied at the launch, so
 * the host may rewrite its copy at once (a copy from host memory would be read only
 * when the stream gets there), and nothing waits. */
#define RTP_PARAM_CHUNK 2048
typedef struct rtp_param_chunk {
    unsigned char b[RTP_PARAM_CHUNK];
} rtp_param_chunk;
cudaError_t rtp_k_set_bytes(cudaStream_t s, void *dst, rtp_param_chunk c, size_t n);
/* x (n) *= (float)amp->scale. */
cudaError_t rtp_k_amp_scale(cudaStream_t s, float *x, size_t n, const rt_amp_state *amp);
/* g (n) *= (float)(1/amp->scale); amp->found_inf = 1 if some g was inf/NaN. */
cudaError_t rtp_k_amp_unscale(cudaStream_t s, float *g, size_t n, rt_amp_state *amp);

/* Adam's coefficients but the step-dependent ones, which the device derives from
 * amp->steps with rt_amp_rule_adam_t(lr, beta1, beta2) (rt_amp_rule.h). */
typedef struct rtp_amp_adam {
    rt_adam_coef c;
    double lr, beta1, beta2;
} rtp_amp_adam;

/* rt_amp_rule_step on amp (one thread), then the update unless it was skipped; the
 * Adam t (or SGD's first step) is the device's amp->steps. Two launches, no sync. Adam's
 * step-dependent coefficients (two double pows) are computed once, by the rule's thread,
 * into coef (device memory, one rt_adam_coef), not in every block of the update. */
cudaError_t rtp_k_amp_adam(cudaStream_t s, float *p, float *m, float *v, const float *g, size_t n,
                           rt_amp_state *amp, rtp_amp_adam a, rt_adam_coef *coef,
                           const rtp_amp_adam *dv);
cudaError_t rtp_k_amp_sgd(cudaStream_t s, float *p, float *buf, const float *g, size_t n,
                          rt_amp_state *amp, rt_sgd_coef c, const rt_sgd_coef *dv);

#ifdef __cplusplus
}
#endif

#endif
