/* rt_layer_relu.c - `relu` and `leakyrelu [slope=0.01]` (PyTorch ReLU / LeakyReLU).
 * One file for both: leaky relu is relu with a slope for negative inputs, the same
 * backend op. Backward reads the saved output (sign of y == sign of x). */
#include <stdio.h>

#include "rt_layer.h"

static rt_status parse_relu(rt_layer *l, int argc, char **argv, char *why)
{
    l->f = 0.0f;
    return rtp_noargs(argc, argv, why);
}

static rt_status parse_leaky(rt_layer *l, int argc, char **argv, char *why)
{
    l->f = 0.01f;
    if (argc > 1) {
        snprintf(why, RT_LAYER_WHY, "unexpected argument '%s'", argv[1]);
        return RT_EINVAL;
    }
    if (argc == 1) {
        const char *v = argv[0];
        rtp_opt(argv[0], "slope", &v);
        if (rtp_parse_float(v, &l->f) || l->f < 0.0f) {
            snprintf(why, RT_LAYER_WHY, "'%s' is not a non-negative slope", argv[0]);
            return RT_EINVAL;
        }
    }
    return RT_OK;
}

static void format_relu(const rt_layer *l, char *buf, size_t n) { snprintf(buf, n, "relu"); }

static void format_leaky(const rt_layer *l, char *buf, size_t n)
{
    snprintf(buf, n, "leakyrelu %.9g", (double)l->f);
}

/* Fused into the layer before (rt_layer.h fused_relu): out is that layer's output, which
 * already holds relu(x), and the gradient passes through (rt_model.c does not call
 * backward then; a direct call copies it). */
static rt_status forward(rt_layer *l, rt_backend *b, rt_tensor *out, const rt_tensor *in,
                         const rt_fwd_ctx *ctx, rt_error *err)
{
    if (l->fused_relu) return out->data == in->data ? RT_OK : rt_backend_copy(b, out, in, err);
    return rt_backend_relu_fwd(b, out, in, l->f, err);
}

static rt_status backward(rt_layer *l, rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                          const rt_tensor *in, const rt_tensor *out, rt_error *err)
{
    if (!din) return RT_OK;
    if (l->fused_relu) return din->data == dout->data ? RT_OK : rt_backend_copy(b, din, dout, err);
    return rt_backend_relu_bwd(b, din, dout, out, l->f, err);
}

const rt_layer_type rt_layer_relu = {
    .name = "relu",
    .usage = "relu",
    .parse = parse_relu,
    .infer = rtp_same_shape,
    .format = format_relu,
    .forward = forward,
    .backward = backward,
};

const rt_layer_type rt_layer_leakyrelu = {
    .name = "leakyrelu",
    .usage = "leakyrelu [slope=0.01]",
    .parse = parse_leaky,
    .infer = rtp_same_shape,
    .format = format_leaky,
    .forward = forward,
    .backward = backward,
};
