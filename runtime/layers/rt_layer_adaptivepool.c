/* rt_layer_adaptivepool.c - `adaptiveavgpool H [W]`: average pooling to an H x W output
 * whatever the input's size (PyTorch AdaptiveAvgPool2d((H, W)); W defaults to H). Output
 * row p averages input rows [floor(p in_h / H), ceil((p + 1) in_h / H)), so windows may
 * overlap, and an input smaller than the output repeats its pixels (VGG's 7x7 pool on a
 * 1x1 map). `adaptiveavgpool` with no size is `globalavgpool`. */
#include <stdio.h>

#include "rt_layer.h"

static rt_status parse(rt_layer *l, int argc, char **argv, char *why)
{
    if (argc < 1 || argc > 2) {
        snprintf(why, RT_LAYER_WHY, "expected the output size H [W], got %d words", argc);
        return RT_EINVAL;
    }
    for (int i = 0; i < argc; i++) {
        int v = 0;
        if (rtp_parse_int(argv[i], &v) || v > 4096) {
            snprintf(why, RT_LAYER_WHY, "'%s' is not an output size in 1..4096", argv[i]);
            return RT_EINVAL;
        }
        if (i == 0) l->r = l->k = v;
        else l->k = v;
    }
    return RT_OK;
}

static rt_status infer(rt_layer *l, char *why)
{
    RT_TRY(rtp_need_chw(l, "", why));
    l->out_c = l->in_c, l->out_h = l->r, l->out_w = l->k, l->out_flat = 0;
    return RT_OK;
}

static void format(const rt_layer *l, char *buf, size_t n)
{
    snprintf(buf, n, "adaptiveavgpool %d %d", l->r, l->k);
}

static void desc(const rt_layer *l, int N, rt_pool_desc *d)
{
    *d = (rt_pool_desc){
        .N = N, .C = l->in_c, .H = l->in_h, .W = l->in_w, .P = l->r, .Q = l->k, .adaptive = 1};
}

static rt_status forward(rt_layer *l, rt_backend *b, rt_tensor *out, const rt_tensor *in,
                         const rt_fwd_ctx *ctx, rt_error *err)
{
    rt_pool_desc d;
    desc(l, in->n, &d);
    return rt_backend_avgpool_fwd(b, out, in, &d, err);
}

static rt_status backward(rt_layer *l, rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                          const rt_tensor *in, const rt_tensor *out, rt_error *err)
{
    if (!din) return RT_OK;
    rt_pool_desc d;
    desc(l, in->n, &d);
    return rt_backend_avgpool_bwd(b, din, dout, &d, err);
}

const rt_layer_type rt_layer_adaptiveavgpool = {
    .name = "adaptiveavgpool",
    .usage = "adaptiveavgpool H [W]",
    .parse = parse,
    .infer = infer,
    .format = format,
    .forward = forward,
    .backward = backward,
};
