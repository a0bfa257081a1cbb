/* test_gpu_train.c - a short training run on the CPU and the CUDA backend from the same
 * seed and data: the per-step losses must track each other
 * and both must learn; once for a plain stack, once with residual blocks.
 * Drives rt_model + the backend's adam_update directly
 * (rt_trainer trains on the CPU only so far), so init, data order and dropout masks are
 * identical on both sides.
 * usage: test_gpu_train [fp32|bf16]. Tolerance per step (why): fp32 2e-3 + 2e-3|cpu|
 * (both sides fp32; summation order differences grow slowly through 30 Adam steps);
 * bf16 5e-2 + 5e-2|cpu| (8-bit mantissas in every conv/dense product).
 * Skips (77) without a device.
 */
#include "gpu_util.h"
#include "t.h"

#define STEPS 30
#define BATCH 16
#define SAMPLES 64
#define IMG 144 /* 1 x 12 x 12 */

static const char *plain_spec =
    "conv2d 8 3 pad=1\nrelu\nmaxpool 2\nconv2d 16 3\nbatchnorm\nrelu\ndropout 0.25\n"
    "flatten\ndense 32\nrelu\ndropout 0.5\ndense 10\n";
/* residual blocks: an identity skip, a stride-2 projection, global average pooling; the
 * blocks' convolutions without bias (before batch norm, as in ResNet-20: the backend
 * ops' NULL bias), the stem's with */
static const char *residual_spec =
    "conv2d 8 3 pad=same\nbatchnorm\nrelu\n"
    "residual:\n    conv2d 8 3 pad=same bias=false\n    batchnorm\n    relu\n"
    "    conv2d 8 3 pad=same bias=false\n    batchnorm\nrelu\n"
    "residual:\n    conv2d 16 3 stride=2 pad=same bias=false\n    batchnorm\n    relu\n"
    "    conv2d 16 3 pad=same bias=false\n    batchnorm\n  shortcut:\n"
    "    conv2d 16 1 stride=2 bias=false\n    batchnorm\nrelu\nglobalavgpool\nflatten\n"
    "dense 10\n";
static rt_precision g_prec = RT_PREC_FP32;

/* Images: noise plus a bright 3x3 patch whose position encodes the label. */
static void make_data(float *img, int32_t *lab)
{
    float *noise = gpu_randn((size_t)SAMPLES * IMG, 21, 0.3f);
    for (int i = 0; i < SAMPLES; i++) {
        int y = i % 10;
        lab[i] = y;
        for (int k = 0; k < IMG; k++) img[i * IMG + k] = noise[i * IMG + k];
        int r0 = (y / 5) * 6 + 1, c0 = (y % 5) * 2;
        for (int r = r0; r < r0 + 3; r++)
            for (int c = c0; c < c0 + 3 && c < 12; c++) img[i * IMG + r * 12 + c] += 2.0f;
    }
    free(noise);
}

/* Trains the model spec with Adam at lr for STEPS steps on b, writing the per-step mean
 * losses. */
static rt_status train(rt_backend *b, const char *spec, float lr, const float *img,
                       const int32_t *lab, double *loss, rt_error *err)
{
    rt_model *m = NULL;
    rt_model_input in = {1, 12, 12, 10};
    rt_tensor mt = {0}, vt = {0};
    RT_TRY(rt_model_create(&m, spec, &in, err));
    rt_status s = rt_model_attach(m, b, BATCH, 7, err);
    size_t P = rt_tensor_numel(rt_model_params_flat(m)); /* the flat layout, gaps included */
    mt.n = vt.n = (int)P, mt.c = vt.c = mt.h = vt.h = mt.w = vt.w = 1;
    if (s == RT_OK) s = b->ops->alloc(b, &mt.data, P * 4, err);
    if (s == RT_OK) s = b->ops->alloc(b, &vt.data, P * 4, err);
    for (int t = 0; t < STEPS && s == RT_OK; t++) {
        int first = (t * BATCH) % SAMPLES;
        s = rt_backend_upload(b, rt_model_input_tensor(m), img + (size_t)first * IMG,
                              (size_t)BATCH * IMG * 4, err);
        if (s == RT_OK)
            s = rt_backend_upload(b, rt_model_label_tensor(m), lab + first, BATCH * 4, err);
        if (s == RT_OK) s = rt_model_forward(m, BATCH, 1, (uint32_t)t, err);
        if (s == RT_OK) s = rt_model_loss(m, BATCH, &loss[t], NULL, NULL, err);
        if (s == RT_OK) s = rt_model_backward(m, BATCH, err);
        rt_adam_desc ad = {lr, 0.9f, 0.999f, 1e-8f, 0.0f, 0, t + 1};
        if (s == RT_OK)
            s = rt_backend_adam_update(b, rt_model_params_flat(m), &mt, &vt, rt_model_grads_flat(m),
                                       &ad, err);
    }
    b->ops->free(b, mt.data);
    b->ops->free(b, vt.data);
    rt_model_destroy(m);
    return s;
}

/* Trains spec at lr on the CPU and on the device from the same seed and data: the
 * per-step losses agree within the precision's tolerance and both sides learn. */
static void curves_track(int *t_failed_, const char *spec, float lr)
{
    rt_backend cpu, gpu;
    rt_error err = {0};
    gpu_open_or_skip(&gpu);
    ASSERT_EQ(rt_backend_open(&cpu, "cpu", 2, &err), RT_OK);
    if (rt_cuda_set_precision(&gpu, g_prec, &err) != RT_OK) {
        printf("SKIP: %s\n", err.msg);
        exit(77);
    }
    float *img = malloc((size_t)SAMPLES * IMG * 4);
    int32_t *lab = malloc(SAMPLES * 4);
    double lc[STEPS], lg[STEPS];
    make_data(img, lab);
    rt_status sc = train(&cpu, spec, lr, img, lab, lc, &err);
    if (sc != RT_OK) fprintf(stderr, "cpu: %s\n", err.msg);
    rt_status sg = train(&gpu, spec, lr, img, lab, lg, &err);
    if (sg != RT_OK) fprintf(stderr, "cuda: %s\n", err.msg);
    free(img);
    free(lab);
    rt_backend_close(&gpu);
    rt_backend_close(&cpu);
    ASSERT_EQ(sc, RT_OK);
    ASSERT_EQ(sg, RT_OK);
    double atol = g_prec == RT_PREC_FP32 ? 2e-3 : 5e-2, rtol = atol;
    int bad = 0;
    for (int t = 0; t < STEPS; t++) {
        int ok = fabs(lg[t] - lc[t]) <= atol + rtol * fabs(lc[t]);
        printf("  step %2d  cpu %.6f  cuda %.6f  %s\n", t, lc[t], lg[t], ok ? "" : "MISMATCH");
        bad += !ok;
    }
    ASSERT_EQ(bad, 0);
    /* both learned: the mean of the last 5 steps is well below the first 5 */
    double c0 = 0, c1 = 0, g0 = 0, g1 = 0;
    for (int t = 0; t < 5; t++)
        c0 += lc[t], g0 += lg[t], c1 += lc[STEPS - 1 - t], g1 += lg[STEPS - 1 - t];
    ASSERT(c1 < 0.8 * c0);
    ASSERT(g1 < 0.8 * g0);
}

T_TEST(loss_curves_track) { curves_track(t_failed_, plain_spec, 1e-3f); }

/* The same run through residual blocks: the add op and the chain's views of x on the
 * device path. BN-heavy and deeper: 1e-3 moves too little in 30 steps. */
T_TEST(residual_curves_track) { curves_track(t_failed_, residual_spec, 1e-2f); }

int main(int argc, char **argv)
{
    rt_error err = {0};
    if (argc > 1 && rt_precision_parse(argv[1], &g_prec, &err) != RT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 99;
    }
    T_RUN(loss_curves_track);
    T_RUN(residual_curves_track);
    return T_EXIT();
}
