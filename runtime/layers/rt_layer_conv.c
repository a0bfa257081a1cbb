/* rt_layer_conv.c - conv2d: `conv2d K R [stride=1] [pad=0|same] [bias=true|false]
 * [groups=1]` (square R x R kernel). pad=same is (R - 1) / 2 (odd R): the output is the input's size
 * at stride 1, and ceil(size / stride) at stride 2, as PyTorch's padding=1 for 3x3 in a
 * ResNet. bias=false drops the bias, as PyTorch's Conv2d(..., bias=False) before a batch
 * norm (which subtracts any per-channel constant again). groups=G is PyTorch's
 * Conv2d(groups=G): the input and output channels split into G groups, each output
 * channel reading its group's C/G input channels (weight (K, C/G, R, R)); groups=C with
 * K = C is a depthwise convolution (MobileNet's).
 *
 * Weight (K,C,R,R) and bias (K) unless bias=false; PyTorch Conv2d semantics and default
 * init. Needs a (C,H,W) input (not after flatten/dense). The computation is the backend's
 * conv2d_fwd/bwd_data/bwd_filter (a NULL bias: none added, no gradient); this file only
 * parses, infers shapes and dispatches.
 */
#include <stdio.h>
#include <string.h>

#include "rt_layer.h"

static rt_status parse(rt_layer *l, int argc, char **argv, char *why)
{
    l->stride = 1;
    l->pad = 0;
    l->groups = 1;
    int pos = 0, rc = 0;
    for (int i = 0; i < argc; i++) {
        const char *v;
        int bias = rtp_bias_opt(l, argv[i], why);
        if (bias < 0) return RT_EINVAL;
        if (bias) continue;
        if (rtp_opt(argv[i], "stride", &v)) {
            if ((rc = rtp_parse_int(v, &l->stride))) goto bad_opt;
        } else if (rtp_opt(argv[i], "groups", &v)) {
            if ((rc = rtp_parse_int(v, &l->groups))) goto bad_opt;
        } else if (rtp_opt(argv[i], "pad", &v) || rtp_opt(argv[i], "padding", &v)) {
            if (v[0] == '0' && v[1] == 0) l->pad = 0;
            else if (!strcmp(v, "same")) l->pad = -1; /* (R - 1) / 2, once R is known */
            else if ((rc = rtp_parse_int(v, &l->pad))) goto bad_opt;
        } else if (pos == 0) {
            if ((rc = rtp_parse_int(argv[i], &l->k))) goto bad_pos;
            pos++;
        } else if (pos == 1) {
            if ((rc = rtp_parse_int(argv[i], &l->r))) goto bad_pos;
            pos++;
        } else {
            snprintf(why, RT_LAYER_WHY, "unexpected argument '%s'", argv[i]);
            return RT_EINVAL;
        }
        continue;
    bad_opt:
        if (rc > 0) goto too_large;
        snprintf(why, RT_LAYER_WHY, "'%s' needs a positive integer value", argv[i]);
        return RT_EINVAL;
    bad_pos:
        if (rc > 0) goto too_large;
        snprintf(why, RT_LAYER_WHY, "'%s' is not a positive integer", argv[i]);
        return RT_EINVAL;
    too_large:
        snprintf(why, RT_LAYER_WHY, "'%s' is too large (at most %d)", argv[i], RT_LAYER_MAX_INT);
        return RT_EINVAL;
    }
    if (pos < 2) {
        snprintf(why, RT_LAYER_WHY, "missing %s",
                 pos == 0 ? "the output channels K and "
                            "kernel size R"
                          : "the kernel size R");
        return RT_EINVAL;
    }
    if (l->pad == -1) {
        if (l->r % 2 == 0) {
            snprintf(why, RT_LAYER_WHY, "pad=same needs an odd kernel size, got %d", l->r);
            return RT_EINVAL;
        }
        l->pad = (l->r - 1) / 2;
    }
    return RT_OK;
}

static void desc(const rt_layer *l, int N, rt_conv_desc *d)
{
    *d = (rt_conv_desc){.N = N,
                        .C = l->in_c,
                        .H = l->in_h,
                        .W = l->in_w,
                        .K = l->k,
                        .R = l->r,
                        .S = l->r,
                        .stride = l->stride,
                        .pad = l->pad,
                        .P = l->out_h,
                        .Q = l->out_w,
                        .groups = l->groups};
}

static rt_status infer(rt_layer *l, char *why)
{
    RT_TRY(rtp_need_chw(l, " (a conv2d cannot follow flatten or dense)", why));
    int G = l->groups > 1 ? l->groups : 1;
    if (l->in_c % G || l->k % G) {
        snprintf(why, RT_LAYER_WHY,
                 "groups=%d must divide the %d input channels and the %d output channels", G,
                 l->in_c, l->k);
        return RT_EINVAL;
    }
    int hp = l->in_h + 2 * l->pad, wp = l->in_w + 2 * l->pad;
    if (l->r > hp || l->r > wp) {
        snprintf(why, RT_LAYER_WHY,
                 "kernel %dx%d does not fit the input %dx%dx%d "
                 "(padded %dx%d)",
                 l->r, l->r, l->in_c, l->in_h, l->in_w, hp, wp);
        return RT_EINVAL;
    }
    l->out_c = l->k;
    l->out_h = (hp - l->r) / l->stride + 1;
    l->out_w = (wp - l->r) / l->stride + 1;
    l->out_flat = 0;
    if ((double)l->in_c * l->r * l->r * l->out_h * l->out_w > RT_LAYER_MAX_ELEMS ||
        (double)l->k * l->in_c * l->r * l->r > RT_LAYER_MAX_ELEMS) {
        snprintf(why, RT_LAYER_WHY, "too large (%d channels of %dx%d from a %dx%dx%d input)", l->k,
                 l->r, l->r, l->in_c, l->in_h, l->in_w);
        return RT_EINVAL;
    }
    rtp_shape(&l->param[0], l->k, l->in_c / G, l->r, l->r);
    rtp_weight_bias(l, 4);
    return RT_OK;
}

static void format(const rt_layer *l, char *buf, size_t n)
{
    char g[24] = "";
    if (l->groups > 1) snprintf(g, sizeof g, " groups=%d", l->groups);
    snprintf(buf, n, "conv2d %d %d stride=%d pad=%d%s%s", l->k, l->r, l->stride, l->pad,
             l->no_bias ? " bias=false" : "", g);
}

static void init(const rt_layer *l, float **host, uint64_t seed)
{
    int fan_in = l->in_c / (l->groups > 1 ? l->groups : 1) * l->r * l->r;
    rtp_init_uniform(host[0], rt_tensor_numel(&l->param[0]), fan_in, seed, l->index, 0);
    if (!l->no_bias) rtp_init_uniform(host[1], (size_t)l->k, fan_in, seed, l->index, 1);
}

static rt_status forward(rt_layer *l, rt_backend *b, rt_tensor *out, const rt_tensor *in,
                         const rt_fwd_ctx *ctx, rt_error *err)
{
    rt_conv_desc d;
    desc(l, in->n, &d);
    if (ctx->train && l->moments) /* the batch norm after it reads them (rt_layer.h) */
        return rt_backend_conv2d_fwd_moments(b, out, l->moments, in, &l->param[0], rtp_bias(l), &d,
                                             err);
    return rt_backend_conv2d_fwd(b, out, in, &l->param[0], rtp_bias(l), &d, err);
}

static rt_status backward(rt_layer *l, rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                          const rt_tensor *in, const rt_tensor *out, rt_error *err)
{
    rt_conv_desc d;
    desc(l, in->n, &d);
    RT_TRY(rt_backend_conv2d_bwd_filter(b, &l->grad[0], rtp_bias_grad(l), dout, in, &d, err));
    if (din) RT_TRY(rt_backend_conv2d_bwd_data(b, din, dout, &l->param[0], &d, err));
    return RT_OK;
}

static size_t workspace(const rt_layer *l, rt_backend *b, int N)
{
    rt_conv_desc d;
    desc(l, N, &d);
    return b->ops->conv2d_workspace(b, &d);
}

const rt_layer_type rt_layer_conv2d = {
    .name = "conv2d",
    .usage = "conv2d K R [stride=1] [pad=0|same] [bias=true|false] [groups=1]",
    .parse = parse,
    .infer = infer,
    .format = format,
    .init = init,
    .forward = forward,
    .backward = backward,
    .workspace = workspace,
};
