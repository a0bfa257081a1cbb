/* rt_layer_act.c - the elementwise activations without parameters beyond relu:
 * `relu6`, `sigmoid`, `tanh`, `gelu`, `silu` (PyTorch's ReLU6, Sigmoid, Tanh, GELU with
 * its exact erf form, SiLU). One file for the five: each is one backend op pair
 * (act_fwd / act_bwd) with its rt_act_kind, kept in l->groups. Backward reads the saved
 * input and output (relu6, sigmoid and tanh need the output, gelu and silu the input).
 */
#include <stdio.h>

#include "rt_layer.h"

static rt_status parse_as(rt_layer *l, rt_act_kind kind, int argc, char **argv, char *why)
{
    l->groups = (int)kind;
    return rtp_noargs(argc, argv, why);
}

static rt_status forward(rt_layer *l, rt_backend *b, rt_tensor *out, const rt_tensor *in,
                         const rt_fwd_ctx *ctx, rt_error *err)
{
    return rt_backend_act_fwd(b, out, in, (rt_act_kind)l->groups, err);
}

static rt_status backward(rt_layer *l, rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                          const rt_tensor *in, const rt_tensor *out, rt_error *err)
{
    if (!din) return RT_OK;
    return rt_backend_act_bwd(b, din, dout, in, out, (rt_act_kind)l->groups, err);
}

static void format(const rt_layer *l, char *buf, size_t n)
{
    snprintf(buf, n, "%s", l->type->name);
}

#define ACT(NAME, KIND)                                                          \
    static rt_status parse_##NAME(rt_layer *l, int argc, char **argv, char *why) \
    {                                                                            \
        return parse_as(l, KIND, argc, argv, why);                               \
    }                                                                            \
    const rt_layer_type rt_layer_##NAME = {                                      \
        .name = #NAME,                                                           \
        .usage = #NAME,                                                          \
        .parse = parse_##NAME,                                                   \
        .infer = rtp_same_shape,                                                 \
        .format = format,                                                        \
        .forward = forward,                                                      \
        .backward = backward,                                                    \
    };

ACT(relu6, RT_ACT_RELU6)
ACT(sigmoid, RT_ACT_SIGMOID)
ACT(tanh, RT_ACT_TANH)
ACT(gelu, RT_ACT_GELU)
ACT(silu, RT_ACT_SILU)
