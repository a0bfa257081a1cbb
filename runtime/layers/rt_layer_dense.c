/* rt_layer_dense.c - `dense O [bias=true|false]`: fully connected layer, PyTorch
 * Linear(F, O) (bias=false: Linear(F, O, bias=False)). Weight (O,F), bias (O) unless
 * bias=false, default init U(-1/sqrt(F), 1/sqrt(F)). Needs flat features (put `flatten`
 * after convolutions). */
#include <stdio.h>

#include "rt_layer.h"

static rt_status parse(rt_layer *l, int argc, char **argv, char *why)
{
    const char *count = NULL;
    for (int i = 0; i < argc; i++) {
        int bias = rtp_bias_opt(l, argv[i], why);
        if (bias < 0) return RT_EINVAL;
        if (bias) continue;
        if (count) {
            snprintf(why, RT_LAYER_WHY, "unexpected argument '%s'", argv[i]);
            return RT_EINVAL;
        }
        count = argv[i];
    }
    if (!count) {
        snprintf(why, RT_LAYER_WHY, "missing the number of outputs O");
        return RT_EINVAL;
    }
    int rc = rtp_parse_int(count, &l->k);
    if (rc > 0) {
        snprintf(why, RT_LAYER_WHY, "'%s' is too large (at most %d outputs)", count,
                 RT_LAYER_MAX_INT);
        return RT_EINVAL;
    }
    if (rc) {
        snprintf(why, RT_LAYER_WHY, "'%s' is not a positive integer", count);
        return RT_EINVAL;
    }
    return RT_OK;
}

static rt_status infer(rt_layer *l, char *why)
{
    if (!l->in_flat && (l->in_h > 1 || l->in_w > 1)) {
        snprintf(why, RT_LAYER_WHY,
                 "needs flat features but gets a %dx%dx%d input ---> "
                 "HINT: add a 'flatten' line before it",
                 l->in_c, l->in_h, l->in_w);
        return RT_EINVAL;
    }
    if ((double)l->k * l->in_c > RT_LAYER_MAX_ELEMS) {
        snprintf(why, RT_LAYER_WHY, "too large (%d x %d weights)", l->k, l->in_c);
        return RT_EINVAL;
    }
    l->out_c = l->k;
    l->out_h = l->out_w = 1;
    l->out_flat = 1;
    rtp_shape(&l->param[0], l->k, l->in_c, 1, 1);
    rtp_weight_bias(l, 2);
    return RT_OK;
}

static void format(const rt_layer *l, char *buf, size_t n)
{
    snprintf(buf, n, "dense %d%s", l->k, l->no_bias ? " bias=false" : "");
}

static void init(const rt_layer *l, float **host, uint64_t seed)
{
    rtp_init_uniform(host[0], (size_t)l->k * l->in_c, l->in_c, seed, l->index, 0);
    if (!l->no_bias) rtp_init_uniform(host[1], (size_t)l->k, l->in_c, seed, l->index, 1);
}

static rt_status forward(rt_layer *l, rt_backend *b, rt_tensor *out, const rt_tensor *in,
                         const rt_fwd_ctx *ctx, rt_error *err)
{
    rt_dense_desc d = {.N = in->n, .F = l->in_c, .O = l->k};
    return rt_backend_dense_fwd(b, out, in, &l->param[0], rtp_bias(l), &d, err);
}

static rt_status backward(rt_layer *l, rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                          const rt_tensor *in, const rt_tensor *out, rt_error *err)
{
    rt_dense_desc d = {.N = in->n, .F = l->in_c, .O = l->k};
    RT_TRY(rt_backend_dense_bwd_filter(b, &l->grad[0], rtp_bias_grad(l), dout, in, &d, err));
    if (din) RT_TRY(rt_backend_dense_bwd_data(b, din, dout, &l->param[0], &d, err));
    return RT_OK;
}

/* the backend's scratch for a batch of N (CUDA bf16/fp16: 16-bit input copies) */
static size_t workspace(const rt_layer *l, rt_backend *b, int N)
{
    rt_dense_desc d = {.N = N, .F = l->in_c, .O = l->k};
    return b->ops->dense_workspace ? b->ops->dense_workspace(b, &d) : 0;
}

const rt_layer_type rt_layer_dense = {
    .name = "dense",
    .usage = "dense O [bias=true|false]",
    .parse = parse,
    .infer = infer,
    .format = format,
    .init = init,
    .forward = forward,
    .backward = backward,
    .workspace = workspace,
};
