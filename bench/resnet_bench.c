/* resnet_bench.c - the Kiln side of bench/resnet_bench.py: ResNet-20 (or another shipped
 * network, --net) training steps on the CPU backend (forward, cross-entropy, backward, Adam) on a synthetic 3x32x32 batch,
 * timed after warm-up steps. Prints "images_per_s X\ncpu_ms_per_image C\nparams P" for the
 * driver (C: the process's CPU time, all threads, per image).
 *
 *   resnet_bench [--steps N] [--batch B] [--threads T] [--fuse 0|1] [--spec FILE]
 *                [--precision fp32|bf16] [--net NAME] [--timing 1|2]
 *
 * --fuse 0 runs every layer apart (rt_model_set_fusion: no relu, add or batch-norm
 * statistics fused into the layer before it), to measure what the fusions gain. --spec FILE trains that spec
 * (3x32x32 in, 10 classes) in place of the shipped resnet20, e.g. a variant of it, to
 * time the difference. --net NAME trains that shipped network (resnet56, mobilenetv2, ...)
 * instead. --timing 1 also prints each layer kind's share of the step (forward and
 * backward wall time summed per kind, rt_model_timing_enable), to say which op costs;
 * --timing 2 the process CPU time instead (all threads; what other processes on the
 * same cores disturb least).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_device.h"
#include "rt_model.h"
#include "rt_rng.h"
#include "rt_omp_wait.h"

RT_OMP_WAIT_PREINIT(rt_omp_wait_preinit); /* Kiln's OpenMP spin default */

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static double now(void) { return clock_s(CLOCK_MONOTONIC); }

/* The layer's timing category: its kind, a conv2d by its shape (depthwise, 1x1, RxR). */
static void category(const rt_summary_row *r, char *out, size_t n)
{
    int k = 0, size = 0;
    if (strcmp(r->type, "conv2d") || sscanf(r->spec, " conv2d %d %d", &k, &size) != 2) {
        snprintf(out, n, "%s", r->type);
        return;
    }
    if (strstr(r->spec, "groups=")) snprintf(out, n, "conv2d-grouped-%dx%d", size, size);
    else snprintf(out, n, "conv2d-%dx%d", size, size);
}

/* Milliseconds per step of each layer category, forward and backward, and its share. */
static void print_timing(const rt_model *m, int steps)
{
    enum { MAXC = 24 };
    char name[MAXC][48];
    double f[MAXC] = {0}, bw[MAXC] = {0}, total = 0;
    int nc = 0, nrows = 0;
    long tp;
    const rt_summary_row *rows = rt_model_summary(m, &nrows, &tp);
    for (int i = 0; i <= rt_model_num_layers(m); i++) {
        char c[48];
        if (i < rt_model_num_layers(m) && i < nrows) category(&rows[i], c, sizeof c);
        else snprintf(c, sizeof c, "loss");
        int j = 0;
        while (j < nc && strcmp(name[j], c)) j++;
        if (j == nc) {
            if (nc == MAXC) continue;
            snprintf(name[nc++], sizeof name[0], "%s", c);
        }
        double a, b;
        rt_model_timing(m, i, &a, &b);
        f[j] += a, bw[j] += b, total += a + b;
    }
    for (int j = 0; j < nc; j++)
        printf("timing:%s fwd %.2f ms bwd %.2f ms %.1f%%\n", name[j], 1e3 * f[j] / steps,
               1e3 * bw[j] / steps, total > 0 ? 100.0 * (f[j] + bw[j]) / total : 0.0);
}

int main(int argc, char **argv)
{
    int steps = 20, batch = 128, threads = 2, fuse = 1;
    const char *spec_file = NULL, *precision = "fp32", *net = "resnet20";
    int timing = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch")) batch = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--fuse")) fuse = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--spec")) spec_file = argv[i + 1];
        else if (!strcmp(argv[i], "--precision")) precision = argv[i + 1];
        else if (!strcmp(argv[i], "--net")) net = argv[i + 1];
        else if (!strcmp(argv[i], "--timing")) timing = atoi(argv[i + 1]);
    }
    rt_precision prec = RT_PREC_FP32;
    rt_error err = {0};
    static char spec[RT_MODEL_ZOO_SPEC_MAX];
    if (spec_file) {
        FILE *f = fopen(spec_file, "r");
        size_t n = f ? fread(spec, 1, sizeof spec - 1, f) : 0;
        if (!f || ferror(f) || n == sizeof spec - 1) {
            fprintf(stderr, "resnet_bench: cannot read %s (or over %zu bytes)\n", spec_file,
                    sizeof spec - 2);
            if (f) fclose(f);
            return 1;
        }
        fclose(f);
        spec[n] = 0;
    }
    rt_model_input in = {3, 32, 32, 10};
    rt_backend b = {0};
    rt_model *m = NULL;
    rt_tensor mt = {0}, vt = {0};
    size_t X = (size_t)batch * 3 * 32 * 32;
    float *x = malloc(X * 4);
    int32_t *y = malloc((size_t)batch * 4);
    if (!x || !y) return 1;
    rt_rng r = rt_rng_stream(1, RT_RNG_USER, 0, 0);
    rt_rng_fill_uniform(&r, x, X, -1.0f, 1.0f);
    for (int i = 0; i < batch; i++) y[i] = i % 10;
    if ((!spec_file && rt_model_zoo_spec(net, &in, spec, sizeof spec, &err)) ||
        rt_backend_open(&b, "cpu", threads, &err) || rt_model_create(&m, spec, &in, &err))
        goto fail;
    rt_model_set_fusion(m, fuse);
    if (rt_precision_parse(precision, &prec, &err) || rt_backend_set_precision(&b, prec, &err))
        goto fail;
    if (rt_model_attach(m, &b, batch, 1, &err)) goto fail;
    size_t P = (size_t)rt_model_num_params(m);
    /* Adam's moments match the flat parameter tensor, which pads every tensor to 64 floats */
    const rt_tensor *pf = rt_model_params_flat(m);
    size_t F = (size_t)pf->n * pf->c * pf->h * pf->w;
    mt.n = vt.n = (int)F, mt.c = vt.c = mt.h = vt.h = mt.w = vt.w = 1;
    if (b.ops->alloc(&b, &mt.data, F * 4, &err) || b.ops->alloc(&b, &vt.data, F * 4, &err) ||
        rt_backend_fill(&b, &mt, 0.0f, &err) || rt_backend_fill(&b, &vt, 0.0f, &err) ||
        rt_backend_upload(&b, rt_model_input_tensor(m), x, X * 4, &err) ||
        rt_backend_upload(&b, rt_model_label_tensor(m), y, (size_t)batch * 4, &err))
        goto fail;
    double t0 = 0, c0 = 0;
    for (int t = 0; t < steps + 3; t++) {
        if (t == 3) { /* 3 warm-up steps */
            t0 = now(), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
            if (timing) rt_model_timing_enable(m, timing), rt_model_timing_reset(m);
        }
        rt_adam_desc ad = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 0, t + 1};
        if (rt_model_forward(m, batch, 1, (uint32_t)t, &err) ||
            rt_model_loss(m, batch, NULL, NULL, NULL, &err) || rt_model_backward(m, batch, &err) ||
            rt_backend_adam_update(&b, rt_model_params_flat(m), &mt, &vt, rt_model_grads_flat(m),
                                   &ad, &err))
            goto fail;
    }
    double s = now() - t0, cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    printf("images_per_s %.2f\ncpu_ms_per_image %.3f\nparams %zu\n", (double)steps * batch / s,
           1e3 * cpu / ((double)steps * batch), P);
    if (timing) print_timing(m, steps);
    b.ops->free(&b, mt.data);
    b.ops->free(&b, vt.data);
    rt_model_destroy(m);
    rt_backend_close(&b);
    free(x);
    free(y);
    return 0;
fail:
    fprintf(stderr, "resnet_bench: %s\n", err.msg);
    return 1;
}
