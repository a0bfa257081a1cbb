/* rt_model.h - a sequential CNN built from a `%%model` spec: parse, shape inference,
 * summary, parameter enumeration, forward and backward.
 *
 * Lifecycle: rt_model_create (parse + infer shapes; no memory for tensors yet) ->
 * rt_model_attach (allocate the arenas on a backend for a maximum batch, reserve the
 * backend workspace, initialise the parameters from the seed) -> forward/backward any
 * number of times (no allocation) -> rt_model_destroy (frees every arena).
 *
 * Spec grammar, one layer a line ('#' starts a comment, blank lines ignored):
 *   conv2d K R [stride=1] [pad=0] | maxpool R [stride=R] | avgpool R [stride=R] |
 *   relu | leakyrelu [slope=0.01] | batchnorm [momentum=0.1] | dropout P | flatten |
 *   dense O
 * The last layer's output must be flat with exactly num_classes features (end with
 * `dense <classes>`); softmax cross-entropy is applied by the loss, not a layer.
 * Errors name the line: "line 3: conv2d: 'x' is not a positive integer (expected
 * conv2d K R [stride=1] [pad=0])".
 */
#ifndef RT_MODEL_H
#define RT_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "rt_backend.h"

typedef struct rt_model rt_model;

/* The input a model is built for: images of C x H x W, num_classes classes. num_classes
 * 0 skips the last-layer check (e.g. %%model before a data set is chosen); the trainer
 * re-checks against the data set. */
typedef struct rt_model_input {
    int c, h, w;
    int num_classes;
} rt_model_input;

/* One row of the summary (Keras summary(): layer, output shape, parameters). */
typedef struct rt_summary_row {
    int index;                         /* 0-based layer index */
    int line;                          /* spec line */
    const char *type;                  /* "conv2d", "relu", ... */
    char spec[128];                    /* canonical spec line, e.g. "conv2d 32 3 stride=1 pad=0" */
    int out_c, out_h, out_w, out_flat; /* output shape per sample; flat: (out_c) */
    long params;                       /* trainable parameters */
} rt_summary_row;

/* A named tensor for checkpoints: parameters then buffers, in layer order. */
typedef struct rt_named_tensor {
    char name[64]; /* "0.conv2d.weight", "3.batchnorm.running_var" */
    int ndim;
    int shape[4]; /* PyTorch's shape, e.g. conv (K,C,R,S), dense (O,F), bias (K) */
    size_t numel;
    int trainable; /* 1 = parameter (has a gradient), 0 = buffer */
    int layer;     /* the index of its layer in the model (0 = the first) */
    float *host;   /* host data on a host backend (CPU), else NULL: use read/write */
} rt_named_tensor;

/* Parses and checks `spec` for `in`. *out is a new model (caller frees with
 * rt_model_destroy), NULL on error. The spec text is kept verbatim. */
RT_MUST_USE rt_status rt_model_create(rt_model **out, const char *spec, const rt_model_input *in,
                                      rt_error *err);
void rt_model_destroy(rt_model *m);

/* Borrowed: the spec as given, and its canonical form (one normalised line per layer;
 * creating a model from either gives the same layers). */
const char *rt_model_spec(const rt_model *m);
const char *rt_model_spec_canonical(const rt_model *m);
const rt_model_input *rt_model_input_shape(const rt_model *m);

/* Summary rows (borrowed, n = number of layers) and the parameter total. */
const rt_summary_row *rt_model_summary(const rt_model *m, int *n, long *total_params);

/* Allocates the model's arenas on b (borrowed; must outlive the model or a later
 * re-attach) for batches up to max_batch and initialises the parameters from seed. */
RT_MUST_USE rt_status rt_model_attach(rt_model *m, rt_backend *b, int max_batch, uint64_t seed,
                                      rt_error *err);
/* Attach fuses, where the backend has the ops: each relu into the batch norm or residual
 * add before it, each residual add into the batch norm before it, and a batch norm's
 * statistics into the conv2d before it (taken as the conv stores its output). Fewer
 * passes over the activations; the layers stay separate in the spec, the summary and the
 * checkpoints, and the results are the same bit for bit. on = 0 before attach runs them
 * all apart (tests, benchmarks). */
void rt_model_set_fusion(rt_model *m, int on);
rt_backend *rt_model_backend(const rt_model *m);
/* The seed given to attach: the key of every random stream of the run. */
uint64_t rt_model_seed(const rt_model *m);
int rt_model_max_batch(const rt_model *m);
/* Data-parallel ranks: the share of the batch this model trains on (the rank, 0 by
 * default). Share k > 0 draws its dropout masks from its own streams, so ranks do not
 * repeat each other's masks; share 0 draws the single-process run's. */
void rt_model_set_shard(rt_model *m, uint32_t shard);

/* Inputs of a step: upload images (N,C,H,W) float and labels (N) int32 here. The
 * returned tensors are borrowed; set nothing: forward takes N as an argument. */
rt_tensor *rt_model_input_tensor(rt_model *m);
rt_tensor *rt_model_label_tensor(rt_model *m);

/* Forward pass of N <= max_batch samples; train = 1 uses batch statistics and dropout
 * (mask stream: the attach seed and `step`). Then the loss: per-sample losses and
 * softmax probabilities on the backend; loss_out (may be NULL) gets the mean loss and
 * probs_out (may be NULL) the (N, classes) probabilities, both on the host. With all
 * three outputs NULL nothing is read back (the trainer's device path). */
RT_MUST_USE rt_status rt_model_forward(rt_model *m, int N, int train, uint32_t step, rt_error *err);
RT_MUST_USE rt_status rt_model_loss(rt_model *m, int N, double *loss_out, float *probs_out,
                                    float *sample_loss_out, rt_error *err);
/* After rt_model_forward: the (N, classes) logits, the last layer's output before the
 * softmax, copied to the host (what an exported ONNX model's "logits" must equal). */
RT_MUST_USE rt_status rt_model_logits_read(rt_model *m, int N, float *dst, rt_error *err);
/* Backward pass after forward(train = 1) and loss: fills every gradient. */
RT_MUST_USE rt_status rt_model_backward(rt_model *m, int N, rt_error *err);
/* The same with the loss gradient multiplied by the loss scale held in amp (an
 * rt_amp_state in backend memory, rt_backend.h); amp NULL = rt_model_backward. */
RT_MUST_USE rt_status rt_model_backward_scaled(rt_model *m, int N, const rt_tensor *amp,
                                               rt_error *err);
/* The same for N samples that are part of a batch of total: the loss gradient is that of
 * the whole batch's mean (1/total a sample), so the gradients of a batch's parts add up
 * to the batch's (gradient accumulation). total = N is rt_model_backward_scaled. */
RT_MUST_USE rt_status rt_model_backward_part(rt_model *m, int N, int total, const rt_tensor *amp,
                                             rt_error *err);
/* The backward stops at layer `floor` (0 = every layer, the default): the layers below
 * it get no gradient at all (their parameter gradients are left as they were) and layer
 * floor computes none for its input. The trainer sets it to the lowest layer with a
 * parameter that trains, so a fine-tuning run with the body frozen (--freeze) spends no
 * time on the body's backward; the trained parameters' gradients are the same bits. */
void rt_model_set_backward_floor(rt_model *m, int floor);
int rt_model_backward_floor(const rt_model *m);
/* Label smoothing of the loss (rt_xent_desc.smoothing, in [0, 1); 0 by default) for every
 * later rt_model_loss and backward. */
void rt_model_set_label_smoothing(rt_model *m, float eps);
float rt_model_label_smoothing(const rt_model *m);
/* After rt_model_loss: row `row` of stats (rows, RT_STEP_STATS) gets the batch's mean loss
 * and correct count on the backend (ops->xent_stats), with no read back. */
RT_MUST_USE rt_status rt_model_step_stats(rt_model *m, int N, rt_tensor *stats, int row,
                                          rt_error *err);

/* ---- parameters for optimisers: one flat vector each for params and grads ---- */
/* (F,1,1,1): all parameters in order, each starting at a multiple of RT_OPTIM_ALIGN
 * floats (rt_optim.h); F >= rt_model_num_params, the gaps are zeros. Attach first. */
rt_tensor *rt_model_params_flat(rt_model *m);
rt_tensor *rt_model_grads_flat(rt_model *m); /* same layout */
long rt_model_num_params(const rt_model *m);

/* ---- enumeration for checkpoints (after attach) ---- */
int rt_model_num_tensors(const rt_model *m);
RT_MUST_USE rt_status rt_model_tensor(rt_model *m, int i, rt_named_tensor *out, rt_error *err);
/* Copies tensor i to/from host memory (numel floats), whatever the backend. */
RT_MUST_USE rt_status rt_model_tensor_read(rt_model *m, int i, float *dst, rt_error *err);
RT_MUST_USE rt_status rt_model_tensor_write(rt_model *m, int i, const float *src, rt_error *err);

/* ---- per-layer timing (for benchmarks): enable, then read seconds accumulated ----
 * on = 1: wall-clock seconds; on = 2: process CPU seconds (all threads), robust to
 * other processes on the same cores. Timing syncs the backend after every layer. */
void rt_model_timing_enable(rt_model *m, int on);
/* fwd/bwd seconds of layer i (i == num layers: the loss); resets when reset != 0. */
void rt_model_timing(const rt_model *m, int i, double *fwd, double *bwd);
void rt_model_timing_reset(rt_model *m);
int rt_model_num_layers(const rt_model *m);

/* ---- shipped architectures (rt_model_zoo.c) ---- */
/* Writes the spec of a shipped network ("resnet20", any case) for input `in` ending in
 * dense in->num_classes into buf (RT_MODEL_ZOO_SPEC_MAX bytes suffice). RT_ENOTFOUND
 * naming the shipped ones for another name. */
#define RT_MODEL_ZOO_SPEC_MAX 65536
RT_MUST_USE rt_status rt_model_zoo_spec(const char *name, const rt_model_input *in, char *buf,
                                        size_t size, rt_error *err);
const char *const *rt_model_zoo_names(void); /* NULL-terminated, static */
/* One line about a shipped network, NULL for another name. */
const char *rt_model_zoo_about(const char *name);
/* The i-th word a spec line may start with (conv2d, maxpool, ... and their aliases);
 * NULL past the last. For "did you mean" on an unknown layer. */
const char *rt_model_layer_word(size_t i);

#endif
