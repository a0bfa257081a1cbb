/* rt_layer_residual.c - residual blocks: y = main(x) + shortcut(x), as three layers in
 * the model's chain, so the chain executor (rt_model.c) needs no graph:
 *
 *   residual:            begin     output = its input x (a view; nothing computed)
 *       main layers...             x -> M
 *     shortcut:          shortcut  (only with a projection) output = x again (a view of
 *       projection...              the block input), so the projection reads x -> P
 *   (end of the block)   add       y = M + x (identity) or y = P + M (projection)
 *
 * With a relu after the block, the model fuses it into add (rt_model.c fuse_relus):
 * forward writes relu(y), and backward takes the relu's gradient from that output. When
 * the block (or its projection) ends in a batchnorm, the add and its relu are fused into
 * that norm (rt_model.c fuse_adds): the norm writes y, keeps add's gradient, and also
 * does the sum of the next block's begin in its backward; those add and begin layers
 * then do nothing.
 *
 * Backward runs the chain in reverse: add keeps dy (through the fused relu, if any),
 * the gradient of both terms, and rt_model.c hands that keep to the main path (or the
 * projection) as its gradient, no copy; the projection's first layer writes its
 * gradient for x straight into shortcut's keep, and shortcut hands the main path add's
 * keep; begin adds the skip's keep to the main path's gradient. The
 * stashes are per-sample saved tensors (allocated with the activations). Forward only
 * reads x and M: the parser/attach keep them intact (no layer writes over its input
 * inside a block's reach; see rt_model.c aliases_input).
 */
#include <stdio.h>

#include "rt_layer.h"

static rt_status need_add(rt_backend *b, rt_error *err)
{
    if (b->ops->add) return RT_OK;
    return RT_ERR(err, RT_EINVAL,
                  "the %s backend has no add op, so it cannot run residual "
                  "blocks ---> HINT: --device cpu",
                  b->ops->name);
}

/* ---- begin ---- */

static rt_status begin_parse(rt_layer *l, int argc, char **argv, char *why)
{
    return rtp_noargs(argc, argv, why);
}

static rt_status begin_infer(rt_layer *l, char *why)
{
    RT_TRY(rtp_need_chw(l, " (a residual block works on images)", why));
    return rtp_same_shape(l, why);
}

static void begin_format(const rt_layer *l, char *buf, size_t n) { snprintf(buf, n, "residual:"); }

static rt_status begin_forward(rt_layer *l, rt_backend *b, rt_tensor *out, const rt_tensor *in,
                               const rt_fwd_ctx *ctx, rt_error *err)
{
    return need_add(b, err); /* out is a view of in (rt_model.c) */
}

/* din = dout (main path) + the gradient the skip kept. */
static rt_status begin_backward(rt_layer *l, rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                                const rt_tensor *in, const rt_tensor *out, rt_error *err)
{
    if (!din) return RT_OK;
    rt_layer *keeper = l->block[1] ? l->block[1] : l->block[2];
    rt_tensor kept = keeper->saved[0];
    kept.n = dout->n;
    return rt_backend_add(b, din, dout, &kept, err);
}

const rt_layer_type rt_layer_res_begin = {
    .name = "residual",
    .usage = "residual:  (then the block's layers, indented)",
    .parse = begin_parse,
    .infer = begin_infer,
    .format = begin_format,
    .forward = begin_forward,
    .backward = begin_backward,
};

/* ---- shortcut (projection branch) ---- */

static rt_status shortcut_infer(rt_layer *l, char *why)
{
    const rt_layer *x = l->block[0];
    l->out_c = x->in_c, l->out_h = x->in_h, l->out_w = x->in_w, l->out_flat = 0;
    l->nsaved = 1; /* the projection's gradient for x */
    rtp_shape(&l->saved[0], 1, x->in_c, x->in_h, x->in_w);
    l->saved_per_sample[0] = 1;
    return RT_OK;
}

static void shortcut_format(const rt_layer *l, char *buf, size_t n)
{
    snprintf(buf, n, "shortcut:");
}

static rt_status shortcut_forward(rt_layer *l, rt_backend *b, rt_tensor *out, const rt_tensor *in,
                                  const rt_fwd_ctx *ctx, rt_error *err)
{
    return RT_OK; /* out is a view of the block input (rt_model.c) */
}

/* dout: the projection's gradient for x (kept for begin); din: dM, kept by add. Either
 * copy is skipped when the model already placed it (rt_model.c does both). */
static rt_status shortcut_backward(rt_layer *l, rt_backend *b, rt_tensor *din,
                                   const rt_tensor *dout, const rt_tensor *in, const rt_tensor *out,
                                   rt_error *err)
{
    rt_tensor kept = l->saved[0], dm = l->block[2]->saved[0];
    kept.n = dm.n = dout->n;
    if (dout->data != kept.data) RT_TRY(rt_backend_copy(b, &kept, dout, err));
    return din && din->data != dm.data ? rt_backend_copy(b, din, &dm, err) : RT_OK;
}

const rt_layer_type rt_layer_res_shortcut = {
    .name = "shortcut",
    .usage = "shortcut:  (inside a residual block, then the projection)",
    .parse = begin_parse,
    .infer = shortcut_infer,
    .format = shortcut_format,
    .forward = shortcut_forward,
    .backward = shortcut_backward,
};

/* ---- add ---- */

static rt_status add_infer(rt_layer *l, char *why)
{
    const rt_layer *x = l->block[0], *sc = l->block[1];
    /* the other term: M (the shortcut's input) with a projection, else x */
    int c = sc ? sc->in_c : x->in_c, h = sc ? sc->in_h : x->in_h, w = sc ? sc->in_w : x->in_w;
    if (l->in_flat || l->in_c != c || l->in_h != h || l->in_w != w) {
        if (sc)
            snprintf(why, RT_LAYER_WHY,
                     "the shortcut gives %dx%dx%d but the block's layers "
                     "give %dx%dx%d; they must match to be added",
                     l->in_c, l->in_h, l->in_w, c, h, w);
        else
            snprintf(why, RT_LAYER_WHY,
                     "the block turns %dx%dx%d into %dx%dx%d, so the "
                     "identity cannot be added ---> HINT: end the block with an indented "
                     "'shortcut:' and a projection ('conv2d %d 1 stride=%d', 'batchnorm')",
                     x->in_c, x->in_h, x->in_w, l->in_c, l->in_h, l->in_w, l->in_c,
                     l->in_h > 0 ? x->in_h / l->in_h : 1);
        return RT_EINVAL;
    }
    l->out_c = l->in_c, l->out_h = l->in_h, l->out_w = l->in_w, l->out_flat = 0;
    l->nsaved = 1; /* dy (through the fused relu), the gradient of both terms */
    rtp_shape(&l->saved[0], 1, l->in_c, l->in_h, l->in_w);
    l->saved_per_sample[0] = 1;
    return RT_OK;
}

static void add_format(const rt_layer *l, char *buf, size_t n)
{
    snprintf(buf, n, "add (%s)", l->block[1] ? "projection" : "identity");
}

static rt_status add_forward(rt_layer *l, rt_backend *b, rt_tensor *out, const rt_tensor *in,
                             const rt_fwd_ctx *ctx, rt_error *err)
{
    RT_TRY(need_add(b, err));
    if (l->fused_add) return RT_OK; /* the norm before wrote the sum into out (its own) */
    rt_tensor other = *l->skip;
    other.n = in->n;
    if (l->fused_relu) return rt_backend_add_relu(b, out, in, &other, err);
    return rt_backend_add(b, out, in, &other, err);
}

/* Keeps dy, the gradient of both terms (with the fused relu: dy where the output is > 0,
 * else 0); din, when given, gets it too. */
static rt_status add_backward(rt_layer *l, rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                              const rt_tensor *in, const rt_tensor *out, rt_error *err)
{
    rt_tensor kept = l->saved[0];
    kept.n = dout->n;
    if (l->fused_relu) RT_TRY(rt_backend_relu_bwd(b, &kept, dout, out, 0.0f, err));
    else RT_TRY(rt_backend_copy(b, &kept, dout, err));
    return din ? rt_backend_copy(b, din, &kept, err) : RT_OK;
}

const rt_layer_type rt_layer_res_add = {
    .name = "add",
    .usage = "(the end of a residual block)",
    .parse = begin_parse,
    .infer = add_infer,
    .format = add_format,
    .forward = add_forward,
    .backward = add_backward,
};

/* ---- global average pooling ---- */

static rt_status gap_infer(rt_layer *l, char *why)
{
    RT_TRY(rtp_need_chw(l, "", why));
    l->out_c = l->in_c, l->out_h = 1, l->out_w = 1, l->out_flat = 0;
    return RT_OK;
}

static void gap_format(const rt_layer *l, char *buf, size_t n)
{
    snprintf(buf, n, "globalavgpool");
}

static void gap_desc(const rt_layer *l, int N, rt_pool_desc *d)
{
    int s = l->in_h > l->in_w ? l->in_h : l->in_w;
    *d = (rt_pool_desc){.N = N,
                        .C = l->in_c,
                        .H = l->in_h,
                        .W = l->in_w,
                        .R = l->in_h,
                        .S = l->in_w,
                        .stride = s,
                        .P = 1,
                        .Q = 1};
}

static rt_status gap_forward(rt_layer *l, rt_backend *b, rt_tensor *out, const rt_tensor *in,
                             const rt_fwd_ctx *ctx, rt_error *err)
{
    rt_pool_desc d;
    gap_desc(l, in->n, &d);
    return rt_backend_avgpool_fwd(b, out, in, &d, err);
}

static rt_status gap_backward(rt_layer *l, rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                              const rt_tensor *in, const rt_tensor *out, rt_error *err)
{
    if (!din) return RT_OK;
    rt_pool_desc d;
    gap_desc(l, in->n, &d);
    return rt_backend_avgpool_bwd(b, din, dout, &d, err);
}

const rt_layer_type rt_layer_globalavgpool = {
    .name = "globalavgpool",
    .usage = "globalavgpool  (C x H x W -> C x 1 x 1, the mean)",
    .parse = begin_parse,
    .infer = gap_infer,
    .format = gap_format,
    .forward = gap_forward,
    .backward = gap_backward,
};
