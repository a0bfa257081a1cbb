/* rt_layer_dropout.c - `dropout P` (0 <= P < 1): inverted dropout as PyTorch's Dropout.
 * The mask is drawn from the Philox dropout stream (seed, step, layer index + the
 * data-parallel share << 16), so a resumed run draws the same masks; it is saved per step for backward. In evaluation
 * mode the layer copies its input. */
#include <stdio.h>

#include "rt_layer.h"

static rt_status parse(rt_layer *l, int argc, char **argv, char *why)
{
    if (argc != 1) {
        snprintf(why, RT_LAYER_WHY,
                 argc ? "unexpected argument '%s'"
                      : "missing the drop "
                        "probability P%s",
                 argc ? argv[1] : "");
        return RT_EINVAL;
    }
    const char *v = argv[0];
    rtp_opt(argv[0], "p", &v);
    if (rtp_parse_float(v, &l->f) || l->f < 0.0f || l->f >= 1.0f) {
        snprintf(why, RT_LAYER_WHY, "'%s' is not a probability in [0, 1)", argv[0]);
        return RT_EINVAL;
    }
    return RT_OK;
}

static rt_status infer(rt_layer *l, char *why)
{
    RT_TRY(rtp_same_shape(l, why));
    l->nsaved = 1;
    rtp_shape(&l->saved[0], 1, l->in_c, l->in_h, l->in_w);
    l->saved_per_sample[0] = 1;
    return RT_OK;
}

static void format(const rt_layer *l, char *buf, size_t n)
{
    snprintf(buf, n, "dropout %.9g", (double)l->f);
}

static rt_status forward(rt_layer *l, rt_backend *b, rt_tensor *out, const rt_tensor *in,
                         const rt_fwd_ctx *ctx, rt_error *err)
{
    if (!ctx->train || l->f == 0.0f) return rt_backend_copy(b, out, in, err);
    /* stream word b: the layer index, and above bit 16 the rank's share (0 for one
     * process), so ranks draw independent masks (a model has far fewer layers) */
    rt_dropout_desc d = {.N = in->n,
                         .C = l->in_c,
                         .H = l->in_h,
                         .W = l->in_w,
                         .p = l->f,
                         .seed = ctx->seed,
                         .step = ctx->step,
                         .layer = (uint32_t)l->index | ctx->shard << 16};
    rt_tensor mask = l->saved[0];
    mask.n = in->n;
    return rt_backend_dropout_fwd(b, out, &mask, in, &d, err);
}

static rt_status backward(rt_layer *l, rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                          const rt_tensor *in, const rt_tensor *out, rt_error *err)
{
    if (!din) return RT_OK;
    if (l->f == 0.0f) return rt_backend_copy(b, din, dout, err);
    rt_tensor mask = l->saved[0];
    mask.n = in->n;
    return rt_backend_dropout_bwd(b, din, dout, &mask, err);
}

const rt_layer_type rt_layer_dropout = {
    .name = "dropout",
    .usage = "dropout P",
    .parse = parse,
    .infer = infer,
    .format = format,
    .forward = forward,
    .backward = backward,
};
