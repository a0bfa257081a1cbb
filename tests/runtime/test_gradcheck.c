/* test_gradcheck.c - finite-difference gradient checks of every layer type (CPU).
 *
 * Each case is a tiny model "<prefix>\n<layer under test>\n<suffix>" on random inputs
 * (fixed seed). For every parameter of every layer (a sample of up to 24 entries per
 * tensor) the analytic gradient of the mean loss is compared with the central difference
 * (L(p+h) - L(p-h)) / 2h. A conv2d in front of the layer under test makes its parameter
 * gradients depend on the tested layer's input gradient, so bwd_data is checked too.
 *
 * Tolerance: the ops compute in float32 (the loss is summed in double); with h = 1e-3
 * the truncation error O(h^2) is negligible and float rounding of a loss ~1 gives
 * ~1e-7/h = 1e-4 absolute, so we accept |analytic - numeric| <= 2e-3 + 2e-2*|numeric|.
 * A wrong formula (missing factor, transposed index) is off by far more. h = 1e-2 is
 * too coarse here: it moves max-pool windows across ties (measured). ReLU/max-pool
 * kinks are otherwise avoided by random
 * inputs (a kink within h of a perturbed entry is unlikely; the seed is fixed).
 */
#include <stdlib.h>

#include "../t.h"
#include "rt_model.h"
#include "rt_optim.h"
#include "rt_rng.h"

#define N 3

static double loss_of(rt_model *m, rt_error *err)
{
    double loss = 0.0;
    if (rt_model_forward(m, N, 1, 7, err) || rt_model_loss(m, N, &loss, NULL, NULL, err))
        return NAN;
    return loss;
}

/* Returns the number of mismatches (printed), or -1 on a runtime error. */
static int check_model(const char *spec, int c, int h, int w)
{
    rt_error err = {0};
    rt_backend b;
    rt_model *m = NULL;
    rt_model_input in = {c, h, w, 3};
    if (rt_backend_open(&b, "cpu", 1, &err)) return -1;
    int bad = -1;
    if (rt_model_create(&m, spec, &in, &err) || rt_model_attach(m, &b, N, 42, &err)) goto out;
    float x[N * 4 * 10 * 10];
    int32_t y[N] = {0, 2, 1};
    rt_rng r = rt_rng_stream(5, RT_RNG_USER, 0, 0);
    rt_rng_fill_uniform(&r, x, (size_t)N * c * h * w, -1.0f, 1.0f);
    rt_backend *be = rt_model_backend(m);
    if (rt_backend_upload(be, rt_model_input_tensor(m), x, (size_t)N * c * h * w * 4, &err) ||
        rt_backend_upload(be, rt_model_label_tensor(m), y, sizeof y, &err))
        goto out;
    double base = loss_of(m, &err);
    if (base != base || rt_model_backward(m, N, &err)) goto out;
    /* snapshot analytic gradients (the flat gradient vector) */
    rt_tensor *g = rt_model_grads_flat(m);
    size_t P = rt_tensor_numel(g);
    float *ga = malloc(P * 4);
    memcpy(ga, g->data, P * 4);
    bad = 0;
    int checked = 0;
    size_t off = 0;
    for (int i = 0; i < rt_model_num_tensors(m); i++) {
        rt_named_tensor t;
        if (rt_model_tensor(m, i, &t, &err)) {
            bad = -1;
            break;
        }
        if (!t.trainable) continue;
        size_t stride = t.numel > 24 ? t.numel / 24 : 1;
        for (size_t k = 0; k < t.numel; k += stride) {
            const float h2 = 1e-3f, keep = t.host[k];
            t.host[k] = keep + h2;
            double lp = loss_of(m, &err);
            t.host[k] = keep - h2;
            double lm = loss_of(m, &err);
            t.host[k] = keep;
            double num = (lp - lm) / (2.0 * h2), ana = ga[off + k];
            checked++;
            if (!(fabs(ana - num) <= 2e-3 + 2e-2 * fabs(num))) {
                if (bad++ < 5)
                    fprintf(stderr, "  %s[%zu]: analytic %.6g numeric %.6g\n", t.name, k, ana, num);
            }
        }
        off += rt_optim_align(t.numel); /* the flat layout (rt_model.h) */
    }
    if (checked == 0) bad = -1;
    free(ga);
out:
    if (bad < 0) fprintf(stderr, "  error: %s\n", err.msg);
    rt_model_destroy(m);
    rt_backend_close(&b);
    return bad;
}

#define CASE(name, spec, c, h, w) \
    T_TEST(name) { ASSERT_EQ(check_model(spec, c, h, w), 0); }

CASE(grad_conv_stride_pad, "conv2d 3 3 stride=2 pad=1\nflatten\ndense 3", 2, 7, 7)
CASE(grad_conv_1x1, "conv2d 2 3\nconv2d 3 1\nflatten\ndense 3", 2, 5, 5)
CASE(grad_conv_chain, "conv2d 2 3 pad=1\nconv2d 3 2 stride=2\nflatten\ndense 3", 1, 6, 6)
CASE(grad_maxpool, "conv2d 2 3 pad=1\nmaxpool 2\nflatten\ndense 3", 1, 6, 6)
CASE(grad_maxpool_overlap, "conv2d 2 3 pad=1\nmaxpool 3 stride=2\nflatten\ndense 3", 1, 7, 7)
CASE(grad_avgpool, "conv2d 2 3 pad=1\navgpool 2\nflatten\ndense 3", 1, 6, 6)
CASE(grad_relu, "conv2d 3 3\nrelu\nflatten\ndense 3", 1, 6, 6)
CASE(grad_leakyrelu, "conv2d 3 3\nleakyrelu 0.1\nflatten\ndense 3", 1, 6, 6)
CASE(grad_batchnorm, "conv2d 3 3\nbatchnorm\nflatten\ndense 3", 2, 5, 5)
CASE(grad_batchnorm_flat, "conv2d 2 3\nflatten\ndense 4\nbatchnorm\ndense 3", 1, 5, 5)
CASE(grad_batchnorm_relu, "conv2d 3 3\nbatchnorm\nrelu\nconv2d 3 3 pad=same\nflatten\ndense 3", 2,
     6, 6) /* the relu fused into the norm */
CASE(grad_batchnorm_first, "batchnorm\nconv2d 2 3\nflatten\ndense 3", 2, 5, 5)
CASE(grad_dropout, "conv2d 3 3\ndropout 0.4\nflatten\ndense 3", 1, 6, 6)
CASE(grad_dense_chain, "flatten\ndense 5\nrelu\ndense 3", 2, 3, 3)
/* residual blocks: the identity skip (the gradient of x is the sum of both paths), a
 * projection shortcut with stride 2, a block on the model's input, global avg pool */
CASE(grad_residual_identity,
     "conv2d 3 3 pad=same\nresidual:\n    conv2d 3 3 pad=same\n"
     "    batchnorm\n    relu\n    conv2d 3 3 pad=same\nrelu\nglobalavgpool\nflatten\n"
     "dense 3",
     2, 6, 6)
CASE(grad_residual_projection,
     "conv2d 3 3 pad=1\nresidual:\n    conv2d 4 3 stride=2 pad=same\n"
     "    relu\n    conv2d 4 3 pad=same\n  shortcut:\n    conv2d 4 1 stride=2\n    batchnorm\n"
     "relu\nflatten\ndense 3",
     2, 6, 6)
CASE(grad_residual_first,
     "residual:\n    conv2d 2 3 pad=same\n    relu\nresidual:\n"
     "    conv2d 2 3 pad=same\nflatten\ndense 3",
     2, 5, 5)
CASE(grad_globalavgpool, "conv2d 3 3\nglobalavgpool\nflatten\ndense 3", 2, 7, 5)
/* grouped and depthwise convolutions (the depthwise direct loop at stride 1 and 2, with
 * and without a bias, a 5x5 one), the smooth activations, and MobileNetV2's linear
 * bottleneck: a residual block ending in a batch norm with no activation after the add */
CASE(grad_conv_grouped, "conv2d 4 3 pad=1\nconv2d 6 3 pad=1 groups=2\nflatten\ndense 3", 2, 5, 5)
CASE(grad_conv_grouped_1x1, "conv2d 4 1\nconv2d 6 1 groups=2 bias=false\nflatten\ndense 3", 2, 4, 4)
CASE(grad_conv_depthwise, "conv2d 4 1\nconv2d 4 3 pad=1 groups=4\nflatten\ndense 3", 2, 6, 6)
CASE(grad_conv_depthwise_s2,
     "conv2d 4 1\nconv2d 4 3 stride=2 pad=1 groups=4 bias=false\nflatten\ndense 3", 2, 7, 7)
CASE(grad_conv_depthwise_5x5, "conv2d 3 1\nconv2d 3 5 pad=2 groups=3\nflatten\ndense 3", 1, 6, 5)
CASE(grad_relu6, "conv2d 3 3\nrelu6\nflatten\ndense 3", 1, 6, 6)
CASE(grad_sigmoid, "conv2d 3 3\nsigmoid\nflatten\ndense 3", 1, 6, 6)
CASE(grad_tanh, "conv2d 3 3\ntanh\nflatten\ndense 3", 1, 6, 6)
CASE(grad_gelu, "conv2d 3 3\ngelu\nflatten\ndense 3", 1, 6, 6)
CASE(grad_silu, "conv2d 3 3\nsilu\nflatten\ndense 3", 1, 6, 6)
/* (smooth activations inside: after three batch norms, a perturbed weight moves every
 * value of the batch, and relu6's bends at 0 and 6 are then crossed within h; relu6 is
 * checked alone above and in MobileNetV2 against PyTorch) */
CASE(grad_linear_bottleneck,
     "conv2d 4 3 pad=1\nresidual:\n    conv2d 8 1 bias=false\n    batchnorm\n    silu\n"
     "    conv2d 8 3 pad=1 groups=8 bias=false\n    batchnorm\n    gelu\n"
     "    conv2d 4 1 bias=false\n    batchnorm\nglobalavgpool\nflatten\ndense 3",
     2, 6, 6)

int main(void)
{
    T_RUN(grad_conv_stride_pad);
    T_RUN(grad_conv_1x1);
    T_RUN(grad_conv_chain);
    T_RUN(grad_maxpool);
    T_RUN(grad_maxpool_overlap);
    T_RUN(grad_avgpool);
    T_RUN(grad_relu);
    T_RUN(grad_leakyrelu);
    T_RUN(grad_batchnorm);
    T_RUN(grad_batchnorm_flat);
    T_RUN(grad_batchnorm_relu);
    T_RUN(grad_batchnorm_first);
    T_RUN(grad_dropout);
    T_RUN(grad_dense_chain);
    T_RUN(grad_residual_identity);
    T_RUN(grad_residual_projection);
    T_RUN(grad_residual_first);
    T_RUN(grad_globalavgpool);
    T_RUN(grad_conv_grouped);
    T_RUN(grad_conv_grouped_1x1);
    T_RUN(grad_conv_depthwise);
    T_RUN(grad_conv_depthwise_s2);
    T_RUN(grad_conv_depthwise_5x5);
    T_RUN(grad_relu6);
    T_RUN(grad_sigmoid);
    T_RUN(grad_tanh);
    T_RUN(grad_gelu);
    T_RUN(grad_silu);
    T_RUN(grad_linear_bottleneck);
    return T_EXIT();
}
