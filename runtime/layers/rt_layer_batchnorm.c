/* rt_layer_batchnorm.c - `batchnorm [momentum=0.1] [eps=1e-5]`: PyTorch BatchNorm2d over
 * (N,H,W) per channel; after flatten/dense it normalises each feature over the batch
 * (BatchNorm1d semantics, the same op with H = W = 1).
 * Parameters: weight (gamma, 1) and bias (beta, 0); buffers running_mean (0) and
 * running_var (1), saved in checkpoints; per-step saved batch mean and 1/std. A relu
 * right after it is fused in at attach (rt_layer.h fused_relu): the forward writes
 * relu(bn(x)) and the backward takes the relu's gradient (bn_relu_bwd). A residual add
 * right after it (and that add's relu) is fused in too (rt_layer.h fused_add): the forward
 * writes the sum (bn_add_fwd_train; in eval mode the norm, then the sum in place) and the
 * backward keeps the add's gradient (bn_add_bwd). After a conv2d, the conv may take the
 * batch statistics as it stores its output (rt_layer.h moments): the training forward
 * then only normalises (bn_fwd_train_moments, with the fused add's other term if any). */
#include <stdio.h>

#include "rt_layer.h"

static rt_status parse(rt_layer *l, int argc, char **argv, char *why)
{
    l->f = 0.1f; /* momentum */
    l->k = 0;    /* eps exponent unused; eps stored in r as 1e-5 fixed unless given */
    for (int i = 0; i < argc; i++) {
        const char *v;
        if (rtp_opt(argv[i], "momentum", &v)) {
            if (rtp_parse_float(v, &l->f) || l->f < 0.0f || l->f > 1.0f) goto bad;
        } else {
            snprintf(why, RT_LAYER_WHY, "unexpected argument '%s'", argv[i]);
            return RT_EINVAL;
        }
        continue;
    bad:
        snprintf(why, RT_LAYER_WHY, "'%s' needs a value in [0, 1]", argv[i]);
        return RT_EINVAL;
    }
    return RT_OK;
}

static rt_status infer(rt_layer *l, char *why)
{
    RT_TRY(rtp_same_shape(l, why));
    int C = l->in_c;
    l->nparams = 2;
    rtp_shape(&l->param[0], C, 1, 1, 1);
    rtp_shape(&l->param[1], C, 1, 1, 1);
    l->param_name[0] = "weight";
    l->param_name[1] = "bias";
    l->param_ndim[0] = l->param_ndim[1] = 1;
    l->nbufs = 2;
    rtp_shape(&l->buf[0], C, 1, 1, 1);
    rtp_shape(&l->buf[1], C, 1, 1, 1);
    l->buf_name[0] = "running_mean";
    l->buf_name[1] = "running_var";
    l->nsaved = 2;
    rtp_shape(&l->saved[0], C, 1, 1, 1);
    rtp_shape(&l->saved[1], C, 1, 1, 1);
    return RT_OK;
}

static void format(const rt_layer *l, char *buf, size_t n)
{
    if (l->f == 0.1f) snprintf(buf, n, "batchnorm");
    else snprintf(buf, n, "batchnorm momentum=%.9g", (double)l->f);
}

static void init(const rt_layer *l, float **host, uint64_t seed)
{
    for (int c = 0; c < l->in_c; c++) {
        host[0][c] = 1.0f; /* gamma */
        host[1][c] = 0.0f; /* beta */
        host[2][c] = 0.0f; /* running mean */
        host[3][c] = 1.0f; /* running var */
    }
}

static void desc(const rt_layer *l, int N, rt_bn_desc *d)
{
    *d = (rt_bn_desc){.N = N,
                      .C = l->in_c,
                      .H = l->in_h,
                      .W = l->in_w,
                      .eps = 1e-5f,
                      .momentum = l->f,
                      .relu = l->fused_relu};
}

/* out = bn(in) + the add's other term, relu'd when the add has the relu fused */
static rt_status forward_add(rt_layer *l, rt_backend *b, rt_tensor *out, const rt_tensor *in,
                             const rt_fwd_ctx *ctx, rt_bn_desc *d, rt_error *err)
{
    const rt_layer *a = l->fused_add;
    rt_tensor other = *a->skip;
    other.n = in->n;
    if (ctx->train) {
        d->relu = a->fused_relu;
        if (l->moments) /* written by the conv before it (rt_layer.h) */
            return rt_backend_bn_fwd_train_moments(b, out, &l->saved[0], &l->saved[1], &l->buf[0],
                                                   &l->buf[1], in, &other, &l->param[0],
                                                   &l->param[1], l->moments, d, err);
        return rt_backend_bn_add_fwd_train(b, out, &l->saved[0], &l->saved[1], &l->buf[0],
                                           &l->buf[1], in, &other, &l->param[0], &l->param[1], d,
                                           err);
    }
    RT_TRY(rt_backend_bn_fwd_eval(b, out, in, &l->param[0], &l->param[1], &l->buf[0], &l->buf[1], d,
                                  err));
    if (a->fused_relu) return rt_backend_add_relu(b, out, out, &other, err);
    return rt_backend_add(b, out, out, &other, err);
}

static rt_status forward(rt_layer *l, rt_backend *b, rt_tensor *out, const rt_tensor *in,
                         const rt_fwd_ctx *ctx, rt_error *err)
{
    rt_bn_desc d;
    desc(l, in->n, &d);
    if (l->fused_add) return forward_add(l, b, out, in, ctx, &d, err);
    if (!ctx->train)
        return rt_backend_bn_fwd_eval(b, out, in, &l->param[0], &l->param[1], &l->buf[0],
                                      &l->buf[1], &d, err);
    if (l->moments) /* written by the conv before it (rt_layer.h) */
        return rt_backend_bn_fwd_train_moments(b, out, &l->saved[0], &l->saved[1], &l->buf[0],
                                               &l->buf[1], in, NULL, &l->param[0], &l->param[1],
                                               l->moments, &d, err);
    return rt_backend_bn_fwd_train(b, out, &l->saved[0], &l->saved[1], &l->buf[0], &l->buf[1], in,
                                   &l->param[0], &l->param[1], &d, err);
}

static rt_status backward(rt_layer *l, rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                          const rt_tensor *in, const rt_tensor *out, rt_error *err)
{
    rt_bn_desc d;
    desc(l, in->n, &d);
    if (din && l->fused_add) {
        rt_tensor keep = l->fused_add->saved[0], g2 = l->skip_grad ? *l->skip_grad : keep;
        keep.n = g2.n = dout->n;
        d.relu = l->fused_add->fused_relu;
        return rt_backend_bn_add_bwd(b, din, &l->grad[0], &l->grad[1], &keep, dout,
                                     l->skip_grad ? &g2 : NULL, out, in, &l->param[0], &l->saved[0],
                                     &l->saved[1], &d, err);
    }
    if (din && l->fused_relu)
        return rt_backend_bn_relu_bwd(b, din, &l->grad[0], &l->grad[1], dout, in, &l->param[0],
                                      &l->param[1], &l->saved[0], &l->saved[1], &d, err);
    if (din)
        return rt_backend_bn_bwd(b, din, &l->grad[0], &l->grad[1], dout, in, &l->param[0],
                                 &l->saved[0], &l->saved[1], &d, err);
    return RT_ERR(err, RT_EINVAL,
                  "batchnorm as the first layer needs an input gradient "
                  "buffer (internal)");
}

const rt_layer_type rt_layer_batchnorm = {
    .name = "batchnorm",
    .usage = "batchnorm [momentum=0.1]",
    .parse = parse,
    .infer = infer,
    .format = format,
    .init = init,
    .forward = forward,
    .backward = backward,
};
