/* rt_layer.h - the layer-type interface (private to runtime/: the model and the layers).
 *
 * A layer type is a const table of functions (one file per type: rt_layer_conv.c, ...);
 * a layer is a small record of its hyperparameters, inferred shapes and tensor views
 * into the model's arenas. Layers compute only through the backend ops table, so the
 * same layer code drives the CPU and the CUDA backend.
 */
#ifndef RT_LAYER_H
#define RT_LAYER_H

#include <stdint.h>

#include "rt_backend.h"

#define RT_LAYER_MAX_PARAMS 2
#define RT_LAYER_MAX_SAVED 3
#define RT_LAYER_WHY 200
/* a layer's `name=` prefix, its terminator included (".running_mean" still fits a
 * tensor name of 64) */
#define RT_LAYER_NAME_MAX 48
/* Largest integer a spec argument may have, and most elements a per-sample tensor or a
 * conv's unfolded image may have: keeps every size computation far from int overflow. */
#define RT_LAYER_MAX_INT (1 << 20)
#define RT_LAYER_MAX_ELEMS (1u << 30)

typedef struct rt_layer_type rt_layer_type;

/* What a forward pass needs besides tensors. */
typedef struct rt_fwd_ctx {
    int train;      /* 1 = training mode (batch stats, dropout on) */
    uint64_t seed;  /* the run seed (dropout stream key) */
    uint32_t step;  /* the training step (dropout stream word a) */
    uint32_t shard; /* data-parallel share (rt_model_set_shard): dropout word b's top bits */
} rt_fwd_ctx;

typedef struct rt_layer {
    const rt_layer_type *type;
    int index; /* position in the model, 0-based */
    int line;  /* line of the spec it came from, 1-based */
    /* ---- hyperparameters (meaning per type; see each rt_layer_*.c) ---- */
    int k, r, stride, pad; /* conv: K, R(=S), stride, pad; pool: R, stride; dense: O */
    float f;               /* leakyrelu slope, dropout p */
    int no_bias;           /* conv, dense: `bias=false`, the weight is the only parameter */
    int groups;            /* conv: `groups=G` (0 or 1: none); activations: rt_act_kind */
    /* ---- shapes, set by infer: input and output per sample (C,H,W); flat = 1-D ---- */
    int in_c, in_h, in_w, in_flat;
    int out_c, out_h, out_w, out_flat;
    /* ---- trainable parameters and their gradients (views into model arenas) ---- */
    int nparams;
    rt_tensor param[RT_LAYER_MAX_PARAMS], grad[RT_LAYER_MAX_PARAMS];
    const char *param_name[RT_LAYER_MAX_PARAMS]; /* "weight", "bias" */
    int param_ndim[RT_LAYER_MAX_PARAMS];         /* dims reported in checkpoints */
    /* ---- non-trainable buffers saved in checkpoints (BN running stats) ---- */
    int nbufs;
    rt_tensor buf[RT_LAYER_MAX_PARAMS];
    const char *buf_name[RT_LAYER_MAX_PARAMS];
    /* ---- per-step state for backward; per_sample: numel scales with the batch ---- */
    int nsaved;
    rt_tensor saved[RT_LAYER_MAX_SAVED];
    int saved_per_sample[RT_LAYER_MAX_SAVED];
    /* ---- residual blocks (rt_layer_residual.c): the block's begin, shortcut (NULL when
     * the skip is the identity) and add layers, set by the parser on all three; the
     * activation added to the main path, bound at attach (add layer only) ---- */
    struct rt_layer *block[3];
    const rt_tensor *skip;
    int depth; /* 1 inside a residual block (summary indentation) */
    /* `name=PREFIX` on the spec line: its tensors are "PREFIX.weight", ... (a PyTorch
     * state_dict's names, e.g. "layer1.0.conv1"); empty: "<index>.<type>.weight" */
    char tname[RT_LAYER_NAME_MAX];
    /* a relu fused at attach (rt_model.c fuse_relus): on a batchnorm or residual add, it
     * applies the relu that follows; on that relu, its forward and backward are done by
     * the layer before (its output is that layer's, its gradient passes through) */
    int fused_relu;
    /* a conv2d and the batchnorm right after it, when the backend takes the norm's
     * statistics in the convolution (rt_model.c fuse_moments): the per-plane moments
     * (rt_backend.h RT_MOMENT_FLOATS) the conv's training forward writes and the norm's
     * reads, the norm's last saved tensor; NULL otherwise */
    rt_tensor *moments;
    /* a residual add fused at attach (rt_model.c fuse_adds) into the batchnorm right
     * before it: on the norm, the add, whose sum (and fused relu) the norm writes and
     * whose gradient its backward keeps; on the add, the norm (the add then does nothing);
     * on a block's begin right after such an add, the norm, whose backward then also sums
     * the two paths' gradients of the block input (the begin does nothing) */
    struct rt_layer *fused_add;
    /* on that norm: the gradient of its output by the second path (the next block's kept
     * skip gradient), or NULL */
    const rt_tensor *skip_grad;
} rt_layer;

struct rt_layer_type {
    const char *name;  /* the spec keyword, e.g. "conv2d" */
    const char *usage; /* e.g. "conv2d K R [stride=1] [pad=0]" */
    /* Reads the arguments after the keyword (argv[0] is the first argument; key=value
     * options included). On error writes why (no line number) and returns RT_EINVAL. */
    rt_status (*parse)(rt_layer *l, int argc, char **argv, char *why);
    /* From l->in_* sets l->out_* and the shapes (not data) of param/buf/saved tensors
     * (saved per-sample tensors with n = 1). Error: writes why, returns RT_EINVAL. */
    rt_status (*infer)(rt_layer *l, char *why);
    /* Canonical spec line (parsing it gives the same layer). */
    void (*format)(const rt_layer *l, char *buf, size_t n);
    /* Fills parameters/buffers on the host (PyTorch default init), host[i] has the
     * numel of param[i] (then of buf[j] at host[nparams + j]); seed is the run's seed. */
    void (*init)(const rt_layer *l, float **host, uint64_t seed);
    /* out (N, out_c, out_h, out_w) from in. */
    rt_status (*forward)(rt_layer *l, rt_backend *b, rt_tensor *out, const rt_tensor *in,
                         const rt_fwd_ctx *ctx, rt_error *err);
    /* Writes the layer's parameter gradients and din (NULL: input gradient not needed)
     * from dout, the saved input and output. May alias din and dout (see each type). */
    rt_status (*backward)(rt_layer *l, rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                          const rt_tensor *in, const rt_tensor *out, rt_error *err);
    /* Backend scratch bytes for a batch of N (NULL: none). */
    size_t (*workspace)(const rt_layer *l, rt_backend *b, int N);
};

extern const rt_layer_type rt_layer_conv2d, rt_layer_maxpool, rt_layer_avgpool, rt_layer_relu,
    rt_layer_leakyrelu, rt_layer_batchnorm, rt_layer_dropout, rt_layer_flatten, rt_layer_dense,
    rt_layer_globalavgpool, rt_layer_adaptiveavgpool, rt_layer_relu6, rt_layer_sigmoid,
    rt_layer_tanh, rt_layer_gelu, rt_layer_silu;
/* residual blocks: `residual:` (begin), `shortcut:` (projection branch), add (implicit) */
extern const rt_layer_type rt_layer_res_begin, rt_layer_res_shortcut, rt_layer_res_add;

/* ---- helpers shared by the layer files (rt_layer_util.c) ---- */
/* Parses a positive int; 0 on success. */
int rtp_parse_int(const char *s, int *out);
/* Parses a float; 0 on success. */
int rtp_parse_float(const char *s, float *out);
/* Splits "key=value": returns 1 and points *val at the value if s starts with key=. */
int rtp_opt(const char *s, const char *key, const char **val);
/* conv and dense's `bias=true|false` (any case): 0 if arg is not that option, 1 if it set
 * l->no_bias, -1 (why written) for any other value. */
int rtp_bias_opt(rt_layer *l, const char *arg, char *why);
/* conv and dense's parameters once param[0] (the weight) has its shape: names, the bias
 * (K) unless l->no_bias, nparams; the weight has wndim dims in checkpoints. */
void rtp_weight_bias(rt_layer *l, int wndim);
/* The bias and its gradient, NULL when the layer has none (the backend ops' "no bias"). */
const rt_tensor *rtp_bias(const rt_layer *l);
rt_tensor *rtp_bias_grad(rt_layer *l);
/* Sets t's shape (n,c,h,w) with data NULL. */
void rtp_shape(rt_tensor *t, int n, int c, int h, int w);
/* PyTorch default init of a weight/bias pair: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) from the
 * init stream (seed, layer index, param index). */
void rtp_init_uniform(float *dst, size_t n, int fan_in, uint64_t seed, int layer, int param);

/* pooling layers: `maxpool R [stride=R] [pad=0]`, `avgpool R [stride=R] [pad=0]` */
RT_MUST_USE rt_status rtp_pool_parse(rt_layer *l, int argc, char **argv, char *why);
RT_MUST_USE rt_status rtp_pool_infer(rt_layer *l, char *why);
void rtp_pool_desc(const rt_layer *l, int N, rt_pool_desc *d);
/* "KIND R stride=S" and " pad=P" when padded */
void rtp_pool_format(const rt_layer *l, const char *kind, char *buf, size_t n);
/* A layer that takes images: RT_EINVAL with why ("needs a (C,H,W) input but gets N flat
 * features", then hint, which may be "") when l's input is flat. */
RT_MUST_USE rt_status rtp_need_chw(const rt_layer *l, const char *hint, char *why);
/* a layer without arguments; a layer whose output shape is its input shape */
RT_MUST_USE rt_status rtp_noargs(int argc, char **argv, char *why);
RT_MUST_USE rt_status rtp_same_shape(rt_layer *l, char *why);

#endif
