/* rt_layer_maxpool.c - `maxpool R [stride=R] [pad=0]`: R x R max pooling, floor mode,
 * the padding (at most R/2) never the maximum (PyTorch MaxPool2d). Backward recomputes
 * the argmax from the saved input and output. */
#include <stdio.h>

#include "rt_layer.h"

static void format(const rt_layer *l, char *buf, size_t n)
{
    rtp_pool_format(l, "maxpool", buf, n);
}

static rt_status forward(rt_layer *l, rt_backend *b, rt_tensor *out, const rt_tensor *in,
                         const rt_fwd_ctx *ctx, rt_error *err)
{
    rt_pool_desc d;
    rtp_pool_desc(l, in->n, &d);
    return rt_backend_maxpool_fwd(b, out, in, &d, err);
}

static rt_status backward(rt_layer *l, rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                          const rt_tensor *in, const rt_tensor *out, rt_error *err)
{
    if (!din) return RT_OK;
    rt_pool_desc d;
    rtp_pool_desc(l, in->n, &d);
    return rt_backend_maxpool_bwd(b, din, dout, in, out, &d, err);
}

const rt_layer_type rt_layer_maxpool = {
    .name = "maxpool",
    .usage = "maxpool R [stride=R] [pad=0]",
    .parse = rtp_pool_parse,
    .infer = rtp_pool_infer,
    .format = format,
    .forward = forward,
    .backward = backward,
};
