/* controls_bench.c - the per-update cost of the trainer's step-level controls against
 * plain training (rt_trainer.h: clip_norm, clip_value, accumulate). Not installed; not a
 * test.
 *
 * usage: controls_bench [--steps N] [--batch B] [--threads T] [--repeat R]
 *                       [--device cpu|cuda] [--device-path]
 *
 * The PyTorch MNIST example net (1.2M parameters: the clipping pass reads them all) on
 * synthetic 28x28 data, SGD with momentum. Each configuration trains N updates after 3
 * warm-up updates, in R rounds whose configurations alternate (so a load that comes and
 * goes hits them alike); the best round counts. Configurations: plain --batch B; B with
 * --clip-grad 1; B with --clip-value 0.01; --batch B/4 --accumulate 4 (the same images
 * an update); and --batch B --accumulate 4 against plain --batch 4B, per image. Then the
 * controls' own ops alone on a gradient of the net's length (clip_grad once an update,
 * the accumulator's add once a micro-batch), as a share of the plain update: a figure
 * that load on a shared machine disturbs far less than the whole-run ratios. Output:
 * "key value" lines, ms an update and the overhead against the plain run in percent.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt.h"
#include "rt_omp_wait.h"

RT_OMP_WAIT_PREINIT(rt_omp_wait_preinit); /* Kiln's OpenMP spin default */

static const char *mnist_net =
    "conv2d 32 3\nrelu\nconv2d 64 3\nrelu\nmaxpool 2\ndropout 0.25\nflatten\n"
    "dense 128\nrelu\ndropout 0.5\ndense 10\n";

typedef struct conf {
    const char *name;
    int batch, accumulate;
    double clip_norm, clip_value;
    double best_ms; /* per update */
} conf;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ms an update of c over steps updates (after 3 warm-up ones). */
static rt_status run(conf *c, rt_backend *b, const rt_dataset *d, int steps, int device_path,
                     double *ms, rt_error *err)
{
    rt_model_input in = {1, 28, 28, 10};
    rt_model *m = NULL;
    rt_trainer *t = NULL;
    RT_TRY(rt_model_create(&m, mnist_net, &in, err));
    rt_trainer_config tc = rt_trainer_config_default();
    tc.batch_size = c->batch;
    tc.accumulate = c->accumulate;
    tc.clip_norm = c->clip_norm;
    tc.clip_value = c->clip_value;
    tc.device_path = device_path;
    tc.report_every_s = 1.0;
    tc.lr = 0.01;
    tc.optim = rt_optim_config_default(RT_OPTIM_SGD);
    tc.optim.momentum = 0.9;
    tc.epochs = 1000;
    rt_status s = rt_model_attach(m, b, c->batch, 1, err);
    if (s == RT_OK) s = rt_trainer_create(&t, m, d, &tc, err);
    if (s == RT_OK) s = rt_trainer_begin(t, err);
    double t0 = 0;
    for (int k = 0; s == RT_OK && k < steps + 3; k++) {
        if (k == 3) {
            s = rt_trainer_flush(t, err); /* a download: the device has finished */
            t0 = now();
        }
        rt_step_event ev;
        if (s == RT_OK) s = rt_trainer_step(t, &ev, err);
    }
    if (s == RT_OK) s = rt_trainer_flush(t, err);
    *ms = 1e3 * (now() - t0) / steps;
    rt_trainer_destroy(t);
    rt_model_destroy(m);
    return s;
}

int main(int argc, char **argv)
{
    int steps = 30, batch = 64, threads = 2, repeat = 3, device_path = 0;
    const char *device = "cpu";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "0";
        if (!strcmp(a, "--steps")) steps = atoi(v), i++;
        else if (!strcmp(a, "--batch")) batch = atoi(v), i++;
        else if (!strcmp(a, "--threads")) threads = atoi(v), i++;
        else if (!strcmp(a, "--repeat")) repeat = atoi(v), i++;
        else if (!strcmp(a, "--device")) device = v, i++;
        else if (!strcmp(a, "--device-path")) device_path = 1;
        else {
            fprintf(stderr, "controls_bench: unknown option %s\n", a);
            return 2;
        }
    }
    if (steps < 1 || batch < 4 || repeat < 1) return 2;
    rt_dataset d;
    memset(&d, 0, sizeof d);
    snprintf(d.name, sizeof d.name, "synthetic");
    d.n = 8 * batch * 4, d.c = 1, d.h = 28, d.w = 28, d.num_classes = 10;
    d.images = malloc((size_t)d.n * 784 * 4);
    d.labels = malloc((size_t)d.n);
    if (!d.images || !d.labels) return 1;
    rt_rng r = rt_rng_stream(1, RT_RNG_USER, 0, 0);
    rt_rng_fill_normal(&r, d.images, (size_t)d.n * 784, 0.0f, 1.0f);
    for (int i = 0; i < d.n; i++) d.labels[i] = (uint8_t)(i % 10);
    rt_backend b = {0};
    rt_error err = {0};
    if (rt_backend_open(&b, device, threads, &err) != RT_OK) {
        fprintf(stderr, "controls_bench: %s\n", err.msg);
        return 1;
    }
    conf cs[] = {
        {"plain", batch, 1, 0, 0, 0},
        {"clip_grad", batch, 1, 1.0, 0, 0},
        {"clip_value", batch, 1, 0, 0.01, 0},
        {"accumulate_4_same_images", batch / 4, 4, 0, 0, 0},
        {"plain_4x_batch", batch * 4, 1, 0, 0, 0},
        {"accumulate_4", batch, 4, 0, 0, 0},
    };
    const int nc = (int)(sizeof cs / sizeof cs[0]);
    for (int rep = 0; rep < repeat; rep++)
        for (int i = 0; i < nc; i++) {
            double ms;
            if (run(&cs[i], &b, &d, steps, device_path, &ms, &err) != RT_OK) {
                fprintf(stderr, "controls_bench: %s: %s\n", cs[i].name, err.msg);
                return 1;
            }
            if (rep == 0 || ms < cs[i].best_ms) cs[i].best_ms = ms;
        }
    printf("device %s%s\nthreads %d\nbatch %d\nsteps %d\nrepeat %d\n", device,
           device_path ? " (device path)" : "", threads, batch, steps, repeat);
    for (int i = 0; i < nc; i++) printf("ms_per_update_%s %.3f\n", cs[i].name, cs[i].best_ms);
    const double p = cs[0].best_ms, p4 = cs[4].best_ms;
    printf("overhead_clip_grad_pct %.2f\n", 100.0 * (cs[1].best_ms / p - 1.0));
    printf("overhead_clip_value_pct %.2f\n", 100.0 * (cs[2].best_ms / p - 1.0));
    printf("overhead_accumulate_4_same_images_pct %.2f\n", 100.0 * (cs[3].best_ms / p - 1.0));
    printf("overhead_accumulate_4_vs_4x_batch_pct %.2f\n", 100.0 * (cs[5].best_ms / p4 - 1.0));
    /* the controls' own work alone, on a gradient of the net's length: the clip_grad op
     * (norm and scaling, every update) and the accumulator's add (every micro-batch) */
    rt_model_input in = {1, 28, 28, 10};
    rt_model *m = NULL;
    if (rt_model_create(&m, mnist_net, &in, &err) != RT_OK ||
        rt_model_attach(m, &b, 8, 1, &err) != RT_OK)
        return 1;
    rt_tensor *g = rt_model_grads_flat(m);
    rt_tensor acc = *g, w = {.dtype = RT_F32, .n = RT_CLIP_WORDS, .c = 1, .h = 1, .w = 1};
    void *mem[2] = {NULL, NULL};
    if (b.ops->alloc(&b, &mem[0], rt_tensor_bytes(g), &err) != RT_OK ||
        b.ops->alloc(&b, &mem[1], RT_CLIP_WORDS * 4, &err) != RT_OK)
        return 1;
    acc.data = mem[0], w.data = mem[1];
    if (rt_backend_fill(&b, g, 0.01f, &err) != RT_OK) return 1; /* norm ~11: clipped */
    rt_clip_desc cd = {.max_norm = 1.0};
    const int reps = 200;
    double best_clip = 1e9, best_add = 1e9;
    for (int rep = 0; rep < repeat; rep++) {
        double t0 = now();
        for (int i = 0; i < reps; i++)
            if (rt_backend_fill(&b, &w, 0.0f, &err) != RT_OK ||
                rt_backend_clip_grad(&b, g, &w, &cd, &err) != RT_OK)
                return 1;
        float sink;
        if (rt_backend_download(&b, &sink, &w, 4, &err) != RT_OK) return 1;
        double t1 = now();
        for (int i = 0; i < reps; i++)
            if (rt_backend_add(&b, &acc, &acc, g, &err) != RT_OK) return 1;
        if (rt_backend_download(&b, &sink, &acc, 4, &err) != RT_OK) return 1;
        double t2 = now();
        if ((t1 - t0) / reps < best_clip) best_clip = (t1 - t0) / reps;
        if ((t2 - t1) / reps < best_add) best_add = (t2 - t1) / reps;
    }
    printf("parameters %ld\n", rt_model_num_params(m));
    printf("ms_clip_grad_op %.4f\nms_accumulate_add_op %.4f\n", 1e3 * best_clip, 1e3 * best_add);
    printf("op_share_clip_grad_pct %.3f\n", 100.0 * 1e3 * best_clip / p);
    printf("op_share_accumulate_pct %.3f\n", 100.0 * 1e3 * best_add / p);
    b.ops->free(&b, mem[0]);
    b.ops->free(&b, mem[1]);
    rt_model_destroy(m);
    rt_backend_close(&b);
    free(d.images);
    free(d.labels);
    return 0;
}
