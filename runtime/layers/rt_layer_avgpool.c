/* rt_layer_avgpool.c - `avgpool R [stride=R] [pad=0]`: R x R average pooling, floor
 * mode, the zero padding counted in the mean (PyTorch AvgPool2d with its defaults). */
#include <stdio.h>

#include "rt_layer.h"

static void format(const rt_layer *l, char *buf, size_t n)
{
    rtp_pool_format(l, "avgpool", buf, n);
}

static rt_status forward(rt_layer *l, rt_backend *b, rt_tensor *out, const rt_tensor *in,
                         const rt_fwd_ctx *ctx, rt_error *err)
{
    rt_pool_desc d;
    rtp_pool_desc(l, in->n, &d);
    return rt_backend_avgpool_fwd(b, out, in, &d, err);
}

static rt_status backward(rt_layer *l, rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                          const rt_tensor *in, const rt_tensor *out, rt_error *err)
{
    if (!din) return RT_OK;
    rt_pool_desc d;
    rtp_pool_desc(l, in->n, &d);
    return rt_backend_avgpool_bwd(b, din, dout, &d, err);
}

const rt_layer_type rt_layer_avgpool = {
    .name = "avgpool",
    .usage = "avgpool R [stride=R] [pad=0]",
    .parse = rtp_pool_parse,
    .infer = rtp_pool_infer,
    .format = format,
    .forward = forward,
    .backward = backward,
};
