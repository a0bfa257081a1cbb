/* rt_backend.h - the one interface every compute backend (CPU, CUDA) implements.
 *
 * A backend is a read-only table of function pointers (rt_backend_ops) plus a handle
 * (rt_backend) holding the backend's private state (threads, CUDA stream, cuBLAS/cuDNN
 * handles, scratch workspace). The CPU and CUDA signatures are identical, so tests/ops
 * can cross-check them mechanically. Layers and the trainer call an op through
 * rt_backend_OP (end of this file), which checks the arguments once for every backend
 * and then calls the table; a backend's op assumes checked arguments.
 *
 * Conventions:
 *  - signature: backend handle first, then outputs, inputs, the descriptor, rt_error *;
 *  - every tensor's data is backend memory; only upload/download touch host memory;
 *  - ops are asynchronous on a device backend: results are visible to the host only
 *    after download (which synchronises) or sync;
 *  - outputs are OVERWRITTEN (never accumulated) unless the op says otherwise;
 *  - ops never allocate: scratch memory is reserved once (reserve_workspace) when the
 *    model is built, and an op whose scratch need exceeds it returns RT_EINVAL;
 *  - ops must be deterministic for a fixed backend and thread count (bitwise resume).
 *  - shape letters: N batch, C input channels, H,W input height/width, K output channels,
 *    R,S kernel height/width, P,Q output height/width, F features, O outputs (dense),
 *    L classes. Tensor shapes are (N,C,H,W) in rt_tensor.
 */
#ifndef RT_BACKEND_H
#define RT_BACKEND_H

#include <stdint.h>

#include "rt_error.h"
#include "rt_tensor.h"

/* ---- descriptors: pure shapes and hyperparameters, passed by const pointer ---- */

/* Convolution, PyTorch semantics (cross-correlation, zero padding, no dilation).
 * P = (H + 2*pad - R)/stride + 1, Q = (W + 2*pad - S)/stride + 1.
 * groups G (0 or 1: none): PyTorch's Conv2d(groups=G); C and K are multiples of G, the
 * weight is (K, C/G, R, S), and output channels [g K/G, (g+1) K/G) read only input
 * channels [g C/G, (g+1) C/G). G = C = K is a depthwise convolution. */
typedef struct rt_conv_desc {
    int N, C, H, W;  /* input */
    int K, R, S;     /* filters (K,C/G,R,S) */
    int stride, pad; /* same in both dimensions */
    int P, Q;        /* output (N,K,P,Q) */
    int groups;      /* G; 0 means 1 */
} rt_conv_desc;

/* The group count of d (1 when unset). */
static inline int rt_conv_groups(const rt_conv_desc *d) { return d->groups > 1 ? d->groups : 1; }
/* Elements of d's weight: K * C/G * R * S. */
static inline size_t rt_conv_weight_numel(const rt_conv_desc *d)
{
    return (size_t)d->K * (size_t)(d->C / rt_conv_groups(d)) * d->R * d->S;
}

/* Elementwise activations of act_fwd / act_bwd (PyTorch's modules of the same names). */
typedef enum rt_act_kind {
    RT_ACT_RELU6 = 0, /* min(max(x, 0), 6) */
    RT_ACT_SIGMOID,   /* 1 / (1 + exp(-x)) */
    RT_ACT_TANH,      /* tanh(x) */
    RT_ACT_GELU,      /* x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) (GELU's exact form) */
    RT_ACT_SILU,      /* x * sigmoid(x) */
    RT_ACT_COUNT
} rt_act_kind;

/* Pooling (max or average) with a R x S window and zero padding `pad` on each side
 * (0 = PyTorch's default; at most R/2 and S/2), P = (H + 2 pad - R)/stride + 1,
 * Q = (W + 2 pad - S)/stride + 1 (floor mode). Max pooling ignores the padding; the
 * average counts it (PyTorch's count_include_pad=True: the divisor is R*S).
 * adaptive = 1: PyTorch's adaptive pooling to P x Q instead (R, S, stride, pad unused):
 * output row p averages input rows [floor(p H / P), ceil((p + 1) H / P)), columns alike,
 * the divisor being that window's size. */
typedef struct rt_pool_desc {
    int N, C, H, W;
    int R, S, stride;
    int P, Q;
    int pad, adaptive;
} rt_pool_desc;

/* Dense (PyTorch Linear): out(N,O) = in(N,F) * w(O,F)^T + bias(O). */
typedef struct rt_dense_desc {
    int N, F, O;
} rt_dense_desc;

/* Batch normalisation over (N,H,W) per channel C; PyTorch BatchNorm2d semantics:
 * biased variance for normalising, unbiased (count/(count-1)) for the running var,
 * running = (1-momentum)*running + momentum*batch. */
typedef struct rt_bn_desc {
    int N, C, H, W;
    float eps;      /* 1e-5 */
    float momentum; /* 0.1 */
    int relu;       /* 1: the forward ops write relu(bn(x)) (a relu fused after the norm) */
} rt_bn_desc;

/* Per-plane moments (conv2d_fwd_moments, bn_fwd_train_moments): for each (n, c) plane of
 * H*W values, two doubles in RT_MOMENT_FLOATS floats: the plane's mean and its sum of
 * squared deviations from that mean (M2). A batch norm merges the planes of a channel in
 * image order (Chan et al.'s pairwise update), so the statistics do not depend on how
 * the planes were shared among threads. */
#define RT_MOMENT_FLOATS 4

/* Dropout (inverted): keep an element with probability 1-p and scale it by 1/(1-p).
 * The mask is the Philox stream rt_rng_stream(seed, RT_RNG_DROPOUT, step, layer) of
 * rt_rng.h, one 32-bit word per element in flat NCHW order, element i kept iff
 * (word_i >> 8) < ceil((1-p) * 2^24) (rt_rng_fill_bernoulli's contract). Every backend
 * therefore draws the same mask, and a resumed run reproduces it from the step alone. */
typedef struct rt_dropout_desc {
    int N, C, H, W;
    float p;
    uint64_t seed;  /* the run's seed */
    uint32_t step;  /* stream word a: the training step */
    uint32_t layer; /* stream word b: the layer index */
} rt_dropout_desc;

/* Softmax cross-entropy over L classes for N samples (log-softmax + NLL). smoothing
 * (PyTorch's CrossEntropyLoss(label_smoothing=), in [0, 1)): the target is
 * (1 - smoothing) * onehot(label) + smoothing / L, so the loss is
 * (1 - smoothing) * nll + smoothing * mean_j(-log p_j); 0 is the plain loss, bit for bit. */
typedef struct rt_xent_desc {
    int N, L;
    float smoothing;
} rt_xent_desc;

/* Gradient clipping on a flat gradient (clip_grad). clip_value > 0: every element is
 * clamped to [-clip_value, clip_value] (torch's clip_grad_value_). Then max_norm > 0: the
 * global L2 norm T of the whole vector (squares summed in double, in RT_CLIP_PARTS
 * contiguous ranges added in order) and, when max_norm / (T + 1e-6) < 1, every element
 * times that factor (torch's clip_grad_norm_). 0 turns either off. */
typedef struct rt_clip_desc {
    double max_norm, clip_value;
} rt_clip_desc;
#define RT_CLIP_PARTS 256
/* Floats of clip_grad's norm tensor: word 0 the norm T (float), word 1 the factor
 * applied (1 when none), then RT_CLIP_PARTS doubles of scratch from word 4. */
#define RT_CLIP_WORDS (4 + 2 * RT_CLIP_PARTS)

/* Optimiser updates on one flat parameter tensor of `numel` elements (PyTorch formulas).
 * adam:  g += wd*p (adam) | p *= 1-lr*wd (adamw, decoupled); m = b1 m + (1-b1) g;
 *        v = b2 v + (1-b2) g^2; p -= lr * (m/(1-b1^t)) / (sqrt(v/(1-b2^t)) + eps).
 * sgd:   g += wd*p; buf = momentum*buf + (1-dampening)*g (buf = g at step 1);
 *        g = nesterov ? g + momentum*buf : buf; p -= lr*g. */
/* Hyperparameters are doubles, as in rt_optim_config: the coefficients are computed from
 * exactly the values the host optimiser uses, so both paths round the same. */
typedef struct rt_adam_desc {
    double lr, beta1, beta2, eps, weight_decay;
    int decoupled; /* 1 = AdamW */
    int64_t step;  /* t, 1-based, for bias correction */
} rt_adam_desc;

typedef struct rt_sgd_desc {
    double lr, momentum, dampening, weight_decay;
    int nesterov;
    int64_t step; /* 1-based; step 1 initialises the momentum buffer */
} rt_sgd_desc;

/* ---- the trainer's device path: data set, step statistics and loss scaling held in
 * backend memory, so a training step needs no host round trip (rt_trainer.c) ---- */

/* A minibatch gathered from a data set in backend memory: images (count,C,H,W) f32 and
 * labels (count) i32; sample i is data-set index order[start + i] (order: (n) i32, the
 * epoch's permutation) from data (n,C,H,W) f32 and data_labels (n) i32. With augment,
 * exactly rt_batcher.h's crop/flip: the draw of rt_batcher_augment_draw(seed, epoch,
 * index, pad, flip_p) and rt_batcher_crop_flip, so the batch is bitwise the CPU
 * batcher's, rt_batcher_cutout's square included. Labels are copied unchecked (the
 * trainer validates them on upload). */
typedef struct rt_gather_desc {
    int n, C, H, W;
    int64_t start;
    int count;
    int augment, pad; /* crop padding (0..64) */
    float flip_p;
    float pad_value[4]; /* per channel (C <= 4 with augment) */
    int cutout;         /* with augment: side of rt_batcher_cutout's square (0: none) */
    uint64_t seed;
    uint32_t epoch;
} rt_gather_desc;

/* Floats per row of a step-statistics ring (xent_stats): words 0-1 hold the bytes of the
 * mean loss as a double (copied, never computed on as floats), word 2 the number of
 * correct predictions, word 3 is 0. */
#define RT_STEP_STATS 4

/* Dynamic loss scaling (fp16) held in backend memory: an RT_I32 tensor of RT_AMP_WORDS
 * words laid out as this struct, written and read with upload/download. Rules are
 * rt_amp_rule.h's (torch GradScaler): amp_unscale sets found_inf when a gradient is inf/NaN;
 * the amp_*_update ops then either skip the update (skipped++, tracker = 0, scale *=
 * backoff unless that goes below 2^-24) or apply it as step t = ++steps (tracker++; at
 * interval the scale *= growth unless that exceeds 2^40, tracker = 0); found_inf is
 * cleared and last_skipped tells which. */
typedef struct rt_amp_state {
    double scale, growth, backoff;
    int64_t steps;   /* optimiser updates applied: the t of Adam's bias correction */
    int64_t skipped; /* updates skipped because of inf/NaN gradients */
    int32_t interval, tracker;
    int32_t found_inf;    /* set by amp_unscale, consumed by the update */
    int32_t last_skipped; /* 1: the last update was skipped */
} rt_amp_state;
#define RT_AMP_WORDS 16 /* 64 bytes >= sizeof(rt_amp_state) */

/* ---- the backend ---- */

typedef struct rt_backend_ops rt_backend_ops;

struct rt_backend {
    const rt_backend_ops *ops; /* borrowed static table */
    void *impl;                /* backend-private state */
    int device;                /* device index (0 on CPU) */
    int threads;               /* CPU: OpenMP threads used by ops */
    int lost;                  /* device poisoned: every op returns RT_EDEVICE_LOST */
};

/* ---- the ops: one function type each, which the table's field, every backend's
 * declaration (rt_op_conv2d_fwd rtp_cpu_conv2d_fwd;) and the checked call
 * rt_backend_OP use, so a signature is written once (and the layering lint reads the
 * list of ops from here) ---- */

/* lifecycle: open fills b->impl; RT_ENODEV when the device does not exist. */
typedef rt_status rt_op_open(rt_backend *b, int device, rt_error *err);
typedef void rt_op_close(rt_backend *b); /* accepts a never-opened (zeroed) handle */
/* memory: alloc returns zero-filled backend memory; free accepts NULL. */
typedef rt_status rt_op_alloc(rt_backend *b, void **ptr, size_t bytes, rt_error *err);
typedef void rt_op_free(rt_backend *b, void *ptr);

/* Reserves scratch for later ops (grows only; the only allocating op besides alloc). */
typedef rt_status rt_op_reserve_workspace(rt_backend *b, size_t bytes, rt_error *err);

/* Scratch bytes the conv ops need for this descriptor (im2col buffers etc.). */
typedef size_t rt_op_conv2d_workspace(rt_backend *b, const rt_conv_desc *d);

/* Scratch bytes the dense ops need (16-bit copies of their inputs); NULL: none. */
typedef size_t rt_op_dense_workspace(rt_backend *b, const rt_dense_desc *d);

/* host <-> backend copies: bytes = rt_tensor_bytes(t) or fewer (a prefix). */
typedef rt_status rt_op_upload(rt_backend *b, rt_tensor *dst, const void *host_src, size_t bytes,
                               rt_error *err);
typedef rt_status rt_op_download(rt_backend *b, void *host_dst, const rt_tensor *src, size_t bytes,
                                 rt_error *err);
typedef rt_status rt_op_sync(rt_backend *b, rt_error *err);

/* elementwise utilities on whole tensors (numel of dst) */
typedef rt_status rt_op_fill(rt_backend *b, rt_tensor *dst, float value, rt_error *err);
typedef rt_status rt_op_copy(rt_backend *b, rt_tensor *dst, const rt_tensor *src, rt_error *err);

/* dst = a + x elementwise (numel of dst; dst may alias a or x). Residual blocks;
 * NULL on a backend that lacks it (the residual layers then refuse to run). */
typedef rt_status rt_op_add(rt_backend *b, rt_tensor *dst, const rt_tensor *a, const rt_tensor *x,
                            rt_error *err);

/* dst = relu(a + x), the sum a relu follows (its gradient: relu_bwd on dst, slope 0);
 * aliasing as add. NULL: the model runs add and relu apart. */
typedef rt_status rt_op_add_relu(rt_backend *b, rt_tensor *dst, const rt_tensor *a,
                                 const rt_tensor *x, rt_error *err);

/* conv2d. out (N,K,P,Q); in (N,C,H,W); w (K,C,R,S); bias (K) or NULL. */
typedef rt_status rt_op_conv2d_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in,
                                   const rt_tensor *w, const rt_tensor *bias, const rt_conv_desc *d,
                                   rt_error *err);

/* conv2d_fwd that also writes each output plane's moments into moments (N,K planes of
 * RT_MOMENT_FLOATS, below), taken while the output is still in cache, for a batch
 * norm right after the convolution (bn_fwd_train_moments). out's bits are
 * conv2d_fwd's. NULL: the model lets the batch norm take its own statistics. */
typedef rt_status rt_op_conv2d_fwd_moments(rt_backend *b, rt_tensor *out, rt_tensor *moments,
                                           const rt_tensor *in, const rt_tensor *w,
                                           const rt_tensor *bias, const rt_conv_desc *d,
                                           rt_error *err);

/* din (N,C,H,W) = gradient w.r.t. the input, from dout (N,K,P,Q) and w (K,C,R,S). */
typedef rt_status rt_op_conv2d_bwd_data(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                        const rt_tensor *w, const rt_conv_desc *d, rt_error *err);

/* dw (K,C,R,S), dbias (K) or NULL, from dout (N,K,P,Q) and in (N,C,H,W). */
typedef rt_status rt_op_conv2d_bwd_filter(rt_backend *b, rt_tensor *dw, rt_tensor *dbias,
                                          const rt_tensor *dout, const rt_tensor *in,
                                          const rt_conv_desc *d, rt_error *err);

/* pooling. out (N,C,P,Q), in (N,C,H,W). Max ties go to the first element in
 * row-major window order (PyTorch). bwd: din (N,C,H,W) from dout, in and out. */
typedef rt_status rt_op_maxpool_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in,
                                    const rt_pool_desc *d, rt_error *err);
typedef rt_status rt_op_maxpool_bwd(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                    const rt_tensor *in, const rt_tensor *out,
                                    const rt_pool_desc *d, rt_error *err);
typedef rt_status rt_op_avgpool_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in,
                                    const rt_pool_desc *d, rt_error *err);
typedef rt_status rt_op_avgpool_bwd(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                    const rt_pool_desc *d, rt_error *err);

/* (leaky) relu, any shape: out = x > 0 ? x : slope*x (slope 0 = relu). In place
 * (out == in) allowed. bwd uses the OUTPUT (sign of y == sign of x for slope >= 0):
 * din = y > 0 ? dout : slope*dout; din == dout allowed. */
typedef rt_status rt_op_relu_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in, float slope,
                                 rt_error *err);
typedef rt_status rt_op_relu_bwd(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                 const rt_tensor *out, float slope, rt_error *err);

/* activations (rt_act_kind), any shape: out = f(in); out == in allowed. bwd: din =
 * dout * f'(x), from the input and the output (relu6, sigmoid and tanh use the output,
 * gelu and silu the input); din == dout allowed. */
typedef rt_status rt_op_act_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in,
                                rt_act_kind kind, rt_error *err);
typedef rt_status rt_op_act_bwd(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                const rt_tensor *in, const rt_tensor *out, rt_act_kind kind,
                                rt_error *err);

/* batchnorm2d. Training: out, save_mean (C), save_invstd (C) = 1/sqrt(var+eps),
 * running_mean/var (C) updated in place. Eval: uses running stats only. */
typedef rt_status rt_op_bn_fwd_train(rt_backend *b, rt_tensor *out, rt_tensor *save_mean,
                                     rt_tensor *save_invstd, rt_tensor *running_mean,
                                     rt_tensor *running_var, const rt_tensor *in,
                                     const rt_tensor *gamma, const rt_tensor *beta,
                                     const rt_bn_desc *d, rt_error *err);

/* bn_fwd_train, or with skip bn_add_fwd_train (below; skip NULL: no add), with the
 * batch statistics merged from moments (N,C planes, as conv2d_fwd_moments writes them)
 * instead of a pass over in: the same bits as those ops, which merge the same
 * per-plane moments in the same order. NULL: the model runs those ops. */
typedef rt_status rt_op_bn_fwd_train_moments(rt_backend *b, rt_tensor *out, rt_tensor *save_mean,
                                             rt_tensor *save_invstd, rt_tensor *running_mean,
                                             rt_tensor *running_var, const rt_tensor *in,
                                             const rt_tensor *skip, const rt_tensor *gamma,
                                             const rt_tensor *beta, const rt_tensor *moments,
                                             const rt_bn_desc *d, rt_error *err);
typedef rt_status rt_op_bn_fwd_eval(rt_backend *b, rt_tensor *out, const rt_tensor *in,
                                    const rt_tensor *gamma, const rt_tensor *beta,
                                    const rt_tensor *running_mean, const rt_tensor *running_var,
                                    const rt_bn_desc *d, rt_error *err);

/* din (N,C,H,W), dgamma (C), dbeta (C) from dout, in and the saved batch stats. */
typedef rt_status rt_op_bn_bwd(rt_backend *b, rt_tensor *din, rt_tensor *dgamma, rt_tensor *dbeta,
                               const rt_tensor *dout, const rt_tensor *in, const rt_tensor *gamma,
                               const rt_tensor *save_mean, const rt_tensor *save_invstd,
                               const rt_bn_desc *d, rt_error *err);

/* bn_bwd of a norm with a relu fused after it (bn_fwd_train with d->relu): dout is the
 * gradient of relu(bn(x)); it counts where bn(x) > 0, bn(x) recomputed from in, gamma,
 * beta and the saved statistics exactly as bn_fwd_train computed it, so nothing but
 * in and dout is read per element. NULL: the model runs the two layers apart. */
typedef rt_status rt_op_bn_relu_bwd(rt_backend *b, rt_tensor *din, rt_tensor *dgamma,
                                    rt_tensor *dbeta, const rt_tensor *dout, const rt_tensor *in,
                                    const rt_tensor *gamma, const rt_tensor *beta,
                                    const rt_tensor *save_mean, const rt_tensor *save_invstd,
                                    const rt_bn_desc *d, rt_error *err);

/* A residual add fused after the norm (and the relu after the add when d->relu):
 * bn_add_fwd_train writes out = bn(in) + skip (relu'd), one pass over in and skip.
 * bn_add_bwd: dout is the gradient of out, plus dout2 when given (out's gradient by a
 * second path: the next residual block's skip); keep = that gradient through the relu
 * (where out > 0; all of it without the relu), the gradient of both terms of the sum;
 * din, dgamma, dbeta from keep as bn_bwd. The same bits as bn_fwd_train, add or
 * add_relu, (add,) relu_bwd and bn_bwd in turn. out aliases neither in nor skip
 * (rt_backend_call refuses it), keep none of the others.
 * NULL: the model runs the norm and the add apart. */
typedef rt_status rt_op_bn_add_fwd_train(rt_backend *b, rt_tensor *out, rt_tensor *save_mean,
                                         rt_tensor *save_invstd, rt_tensor *running_mean,
                                         rt_tensor *running_var, const rt_tensor *in,
                                         const rt_tensor *skip, const rt_tensor *gamma,
                                         const rt_tensor *beta, const rt_bn_desc *d, rt_error *err);
typedef rt_status rt_op_bn_add_bwd(rt_backend *b, rt_tensor *din, rt_tensor *dgamma,
                                   rt_tensor *dbeta, rt_tensor *keep, const rt_tensor *dout,
                                   const rt_tensor *dout2, const rt_tensor *out,
                                   const rt_tensor *in, const rt_tensor *gamma,
                                   const rt_tensor *save_mean, const rt_tensor *save_invstd,
                                   const rt_bn_desc *d, rt_error *err);

/* dropout. out and mask have the shape of in; mask holds 0 or 1/(1-p).
 * bwd: din = dout * mask (din == dout allowed). */
typedef rt_status rt_op_dropout_fwd(rt_backend *b, rt_tensor *out, rt_tensor *mask,
                                    const rt_tensor *in, const rt_dropout_desc *d, rt_error *err);
typedef rt_status rt_op_dropout_bwd(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                    const rt_tensor *mask, rt_error *err);

/* dense. out (N,O); in (N,F) (any (N,C,H,W) with C*H*W = F); w (O,F); bias (O)/NULL */
typedef rt_status rt_op_dense_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in,
                                  const rt_tensor *w, const rt_tensor *bias, const rt_dense_desc *d,
                                  rt_error *err);

/* din (N,F) = dout (N,O) * w (O,F) */
typedef rt_status rt_op_dense_bwd_data(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                       const rt_tensor *w, const rt_dense_desc *d, rt_error *err);

/* dw (O,F) = dout^T * in; dbias (O) = column sums of dout (or NULL) */
typedef rt_status rt_op_dense_bwd_filter(rt_backend *b, rt_tensor *dw, rt_tensor *dbias,
                                         const rt_tensor *dout, const rt_tensor *in,
                                         const rt_dense_desc *d, rt_error *err);

/* softmax cross-entropy. loss (N): per-sample -log softmax(logits)[label];
 * probs (N,L) softmax; logits (N,L); labels (N) RT_I32 in [0,L) (RT_EINVAL otherwise
 * is NOT checked on device: the trainer validates labels on upload).
 * bwd: dlogits (N,L) = (probs - target) * scale  (scale = 1/N for a mean), target the
 * one-hot label smoothed by d->smoothing (rt_xent_desc). */
typedef rt_status rt_op_xent_fwd(rt_backend *b, rt_tensor *loss, rt_tensor *probs,
                                 const rt_tensor *logits, const rt_tensor *labels,
                                 const rt_xent_desc *d, rt_error *err);
typedef rt_status rt_op_xent_bwd(rt_backend *b, rt_tensor *dlogits, const rt_tensor *probs,
                                 const rt_tensor *labels, float scale, const rt_xent_desc *d,
                                 rt_error *err);

/* optimiser updates (see the descriptors); tensors are flat and of equal numel.
 * param, m, v / momentum_buf are updated in place; grad is read only. */
typedef rt_status rt_op_adam_update(rt_backend *b, rt_tensor *param, rt_tensor *m, rt_tensor *v,
                                    const rt_tensor *grad, const rt_adam_desc *d, rt_error *err);
typedef rt_status rt_op_sgd_update(rt_backend *b, rt_tensor *param, rt_tensor *momentum_buf,
                                   const rt_tensor *grad, const rt_sgd_desc *d, rt_error *err);
/* grad (flat) clipped in place (rt_clip_desc); norm (RT_CLIP_WORDS floats) gets the norm
 * before clipping and the factor, with no read back. NULL: no clipping. */
typedef rt_status rt_op_clip_grad(rt_backend *b, rt_tensor *grad, rt_tensor *norm,
                                  const rt_clip_desc *d, rt_error *err);

/* ---- the trainer's device path (see the descriptors above) ---- */
typedef rt_status rt_op_gather_batch(rt_backend *b, rt_tensor *images, rt_tensor *labels,
                                     const rt_tensor *data, const rt_tensor *data_labels,
                                     const rt_tensor *order, const rt_gather_desc *d,
                                     rt_error *err);

/* Row `row` of stats (rows, RT_STEP_STATS) = {mean of loss (N) summed in double in
 * sample order (its 8 bytes); count of samples whose first maximal probability is at
 * the label; 0}. Nothing is read back: the trainer downloads the ring when it shows
 * progress. */
typedef rt_status rt_op_xent_stats(rt_backend *b, rt_tensor *stats, int row, const rt_tensor *loss,
                                   const rt_tensor *probs, const rt_tensor *labels,
                                   const rt_xent_desc *d, rt_error *err);

/* dst (numel floats, images of C planes of `plane`) = lut[c * 256 + byte] of the
 * numel bytes in src (packed four to an RT_I32 word), c the element's channel: a data
 * set's raw pixels normalised where they are kept (the trainer uploads a quarter of
 * the floats' size). lut: C * 256 floats. NULL: the trainer normalises on the host. */
typedef rt_status rt_op_bytes_to_f32(rt_backend *b, rt_tensor *dst, const rt_tensor *src,
                                     const rt_tensor *lut, int C, size_t plane, rt_error *err);

/* t *= amp.scale (the loss gradient, before the backward pass). */
typedef rt_status rt_op_amp_scale(rt_backend *b, rt_tensor *t, const rt_tensor *amp, rt_error *err);

/* grad *= 1/amp.scale; amp.found_inf = 1 if some element was inf/NaN. */
typedef rt_status rt_op_amp_unscale(rt_backend *b, rt_tensor *grad, rt_tensor *amp, rt_error *err);

/* adam_update / sgd_update gated by amp (rules above); d->step is ignored: the step
 * is amp.steps + 1 when the update is applied. */
typedef rt_status rt_op_amp_adam_update(rt_backend *b, rt_tensor *param, rt_tensor *m, rt_tensor *v,
                                        const rt_tensor *grad, rt_tensor *amp,
                                        const rt_adam_desc *d, rt_error *err);
typedef rt_status rt_op_amp_sgd_update(rt_backend *b, rt_tensor *param, rt_tensor *momentum_buf,
                                       const rt_tensor *grad, rt_tensor *amp, const rt_sgd_desc *d,
                                       rt_error *err);

/* ---- CUDA graphs: a training step recorded once and replayed (optional ops) ----
 * The values of rt_trainer's device step that change from step to step. Between
 * graph_begin and graph_end the ops are recorded, not run; each graph_launch runs them
 * with these values for the step it launches: gather_batch's start moves by
 * start - (start at capture) and its augmentation streams are the epoch's, dropout's
 * step moves with key, xent_stats's row with row, and the optimiser ops' coefficients
 * are those of lr and step. Every other argument is the capture's. */
typedef struct rt_step_vars {
    int64_t start;  /* the step's first position in the epoch order */
    uint32_t epoch; /* the augmentation streams' epoch */
    uint32_t key;   /* dropout's stream word a (rt_dropout_desc.step) */
    int32_t row;    /* the first statistics row xent_stats writes */
    double lr;
    int64_t step; /* the optimiser's 1-based step (plain adam/sgd_update) */
} rt_step_vars;
typedef struct rt_graph rt_graph;

/* Starts recording the ops called on b (v: the step being recorded). Until graph_end
 * nothing runs; an op refused or unrecordable makes graph_end fail. */
typedef rt_status rt_op_graph_begin(rt_backend *b, const rt_step_vars *v, rt_error *err);
/* Ends the recording (always, even after a failed op): *out the graph, or NULL and an
 * error saying why the step could not be recorded. */
typedef rt_status rt_op_graph_end(rt_backend *b, rt_graph **out, rt_error *err);
/* Runs g with the step's values v (*ran = 1); or, when memory g uses was freed or moved
 * since it was recorded, runs nothing (*ran = 0: free g and record the step again). */
typedef rt_status rt_op_graph_launch(rt_backend *b, rt_graph *g, const rt_step_vars *v, int *ran,
                                     rt_error *err);
typedef void rt_op_graph_free(rt_backend *b, rt_graph *g);

struct rt_backend_ops {
    const char *name; /* "cpu", "cuda" */
    rt_op_open *open;
    rt_op_close *close;
    rt_op_alloc *alloc;
    rt_op_free *free;
    rt_op_reserve_workspace *reserve_workspace;
    rt_op_conv2d_workspace *conv2d_workspace;
    rt_op_dense_workspace *dense_workspace;
    rt_op_upload *upload;
    rt_op_download *download;
    rt_op_sync *sync;
    rt_op_fill *fill;
    rt_op_copy *copy;
    rt_op_add *add;
    rt_op_add_relu *add_relu;
    rt_op_conv2d_fwd *conv2d_fwd;
    rt_op_conv2d_fwd_moments *conv2d_fwd_moments;
    rt_op_conv2d_bwd_data *conv2d_bwd_data;
    rt_op_conv2d_bwd_filter *conv2d_bwd_filter;
    rt_op_maxpool_fwd *maxpool_fwd;
    rt_op_maxpool_bwd *maxpool_bwd;
    rt_op_avgpool_fwd *avgpool_fwd;
    rt_op_avgpool_bwd *avgpool_bwd;
    rt_op_relu_fwd *relu_fwd;
    rt_op_relu_bwd *relu_bwd;
    rt_op_act_fwd *act_fwd;
    rt_op_act_bwd *act_bwd;
    rt_op_bn_fwd_train *bn_fwd_train;
    rt_op_bn_fwd_train_moments *bn_fwd_train_moments;
    rt_op_bn_fwd_eval *bn_fwd_eval;
    rt_op_bn_bwd *bn_bwd;
    rt_op_bn_relu_bwd *bn_relu_bwd;
    rt_op_bn_add_fwd_train *bn_add_fwd_train;
    rt_op_bn_add_bwd *bn_add_bwd;
    rt_op_dropout_fwd *dropout_fwd;
    rt_op_dropout_bwd *dropout_bwd;
    rt_op_dense_fwd *dense_fwd;
    rt_op_dense_bwd_data *dense_bwd_data;
    rt_op_dense_bwd_filter *dense_bwd_filter;
    rt_op_xent_fwd *xent_fwd;
    rt_op_xent_bwd *xent_bwd;
    rt_op_adam_update *adam_update;
    rt_op_sgd_update *sgd_update;
    rt_op_clip_grad *clip_grad;
    rt_op_gather_batch *gather_batch;
    rt_op_xent_stats *xent_stats;
    rt_op_bytes_to_f32 *bytes_to_f32;
    rt_op_amp_scale *amp_scale;
    rt_op_amp_unscale *amp_unscale;
    rt_op_amp_adam_update *amp_adam_update;
    rt_op_amp_sgd_update *amp_sgd_update;
    rt_op_graph_begin *graph_begin; /* NULL: no graphs (the CPU) */
    rt_op_graph_end *graph_end;
    rt_op_graph_launch *graph_launch;
    rt_op_graph_free *graph_free;
};

/* ---- backend selection (rt_backend.c) ---- */

/* The CPU backend's table (runtime/cpu/). Always available. */
extern const rt_backend_ops rt_cpu_ops;

/* Opens a backend by name: "cpu", "cuda", "cuda:N" or "auto" (CUDA when compiled in and
 * a device exists, else CPU). threads <= 0 means all cores (CPU). On error b is zeroed. */
RT_MUST_USE rt_status rt_backend_open(rt_backend *b, const char *device, int threads,
                                      rt_error *err);

/* The OpenBLAS the CPU backend loaded: its file and where it came from ("system" or
 * "scipy-openblas32", the kiln-kernel wheel's dependency), or "not loaded: REASON" when
 * no CPU backend has opened yet or none could be loaded. %device prints it. */
const char *rt_cpu_blas_library(void);
/* Closes and zeroes b. Accepts a zeroed handle. */
void rt_backend_close(rt_backend *b);

/* ---- calling an op (rt_backend_call.c) ----
 * Code above the backends calls ops through these, not through b->ops: each checks its
 * arguments (tensors bound and large enough for the descriptor, descriptor values in
 * range, an optional op present) and returns RT_EINVAL naming the op and the tensor,
 * then calls the backend's op. So every backend refuses the same calls with the same
 * words, and a backend op is written without argument checks. Arguments and semantics
 * are the table's above. */
RT_MUST_USE rt_op_upload rt_backend_upload;
RT_MUST_USE rt_op_download rt_backend_download;
RT_MUST_USE rt_op_fill rt_backend_fill;
RT_MUST_USE rt_op_copy rt_backend_copy;
RT_MUST_USE rt_op_add rt_backend_add;
RT_MUST_USE rt_op_add_relu rt_backend_add_relu;
RT_MUST_USE rt_op_conv2d_fwd rt_backend_conv2d_fwd;
RT_MUST_USE rt_op_conv2d_fwd_moments rt_backend_conv2d_fwd_moments;
RT_MUST_USE rt_op_conv2d_bwd_data rt_backend_conv2d_bwd_data;
RT_MUST_USE rt_op_conv2d_bwd_filter rt_backend_conv2d_bwd_filter;
RT_MUST_USE rt_op_maxpool_fwd rt_backend_maxpool_fwd;
RT_MUST_USE rt_op_maxpool_bwd rt_backend_maxpool_bwd;
RT_MUST_USE rt_op_avgpool_fwd rt_backend_avgpool_fwd;
RT_MUST_USE rt_op_avgpool_bwd rt_backend_avgpool_bwd;
RT_MUST_USE rt_op_relu_fwd rt_backend_relu_fwd;
RT_MUST_USE rt_op_relu_bwd rt_backend_relu_bwd;
RT_MUST_USE rt_op_act_fwd rt_backend_act_fwd;
RT_MUST_USE rt_op_act_bwd rt_backend_act_bwd;
RT_MUST_USE rt_op_bn_fwd_train rt_backend_bn_fwd_train;
RT_MUST_USE rt_op_bn_fwd_train_moments rt_backend_bn_fwd_train_moments;
RT_MUST_USE rt_op_bn_fwd_eval rt_backend_bn_fwd_eval;
RT_MUST_USE rt_op_bn_bwd rt_backend_bn_bwd;
RT_MUST_USE rt_op_bn_relu_bwd rt_backend_bn_relu_bwd;
RT_MUST_USE rt_op_bn_add_fwd_train rt_backend_bn_add_fwd_train;
RT_MUST_USE rt_op_bn_add_bwd rt_backend_bn_add_bwd;
RT_MUST_USE rt_op_dropout_fwd rt_backend_dropout_fwd;
RT_MUST_USE rt_op_dropout_bwd rt_backend_dropout_bwd;
RT_MUST_USE rt_op_dense_fwd rt_backend_dense_fwd;
RT_MUST_USE rt_op_dense_bwd_data rt_backend_dense_bwd_data;
RT_MUST_USE rt_op_dense_bwd_filter rt_backend_dense_bwd_filter;
RT_MUST_USE rt_op_xent_fwd rt_backend_xent_fwd;
RT_MUST_USE rt_op_xent_bwd rt_backend_xent_bwd;
RT_MUST_USE rt_op_adam_update rt_backend_adam_update;
RT_MUST_USE rt_op_sgd_update rt_backend_sgd_update;
RT_MUST_USE rt_op_clip_grad rt_backend_clip_grad;
RT_MUST_USE rt_op_gather_batch rt_backend_gather_batch;
RT_MUST_USE rt_op_xent_stats rt_backend_xent_stats;
RT_MUST_USE rt_op_bytes_to_f32 rt_backend_bytes_to_f32;
RT_MUST_USE rt_op_amp_scale rt_backend_amp_scale;
RT_MUST_USE rt_op_amp_unscale rt_backend_amp_unscale;
RT_MUST_USE rt_op_amp_adam_update rt_backend_amp_adam_update;
RT_MUST_USE rt_op_amp_sgd_update rt_backend_amp_sgd_update;
RT_MUST_USE rt_op_graph_begin rt_backend_graph_begin;
RT_MUST_USE rt_op_graph_end rt_backend_graph_end;
RT_MUST_USE rt_op_graph_launch rt_backend_graph_launch;
rt_op_graph_free rt_backend_graph_free;

#endif
