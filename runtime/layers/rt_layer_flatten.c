/* rt_layer_flatten.c - `flatten`: (C,H,W) -> (C*H*W) features, PyTorch's flatten(1).
 * NCHW is already row-major per sample, so the model aliases the output to the input
 * and the gradient passes through unchanged: forward/backward only copy when the
 * buffers differ. */
#include <stdio.h>

#include "rt_layer.h"

static rt_status infer(rt_layer *l, char *why)
{
    l->out_c = l->in_c * l->in_h * l->in_w;
    l->out_h = l->out_w = 1;
    l->out_flat = 1;
    return RT_OK;
}

static void format(const rt_layer *l, char *buf, size_t n) { snprintf(buf, n, "flatten"); }

static rt_status parse(rt_layer *l, int argc, char **argv, char *why)
{
    return rtp_noargs(argc, argv, why);
}

static rt_status forward(rt_layer *l, rt_backend *b, rt_tensor *out, const rt_tensor *in,
                         const rt_fwd_ctx *ctx, rt_error *err)
{
    return out->data == in->data ? RT_OK : rt_backend_copy(b, out, in, err);
}

static rt_status backward(rt_layer *l, rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                          const rt_tensor *in, const rt_tensor *out, rt_error *err)
{
    if (!din || din->data == dout->data) return RT_OK;
    return rt_backend_copy(b, din, dout, err);
}

const rt_layer_type rt_layer_flatten = {
    .name = "flatten",
    .usage = "flatten",
    .parse = parse,
    .infer = infer,
    .format = format,
    .forward = forward,
    .backward = backward,
};
