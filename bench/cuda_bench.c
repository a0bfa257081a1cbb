/* cuda_bench.c - Kiln's side of bench/cuda_bench.py: trains the PyTorch MNIST example
 * net (conv 32x3 - relu - conv 64x3 - relu - maxpool 2 - dropout .25 - flatten -
 * dense 128 - relu - dropout .5 - dense 10, Adam 1e-3), or with --net resnet20 the
 * shipped ResNet-20 (on the data set's 1x28x28 images), on a CUDA device for a fixed
 * number of steps and prints throughput. Not installed; not a test.
 *
 * usage: cuda_bench [--device cuda:0] [--precision fp32|bf16|fp16] [--steps N] [--warmup W]
 *                   [--batch B] [--seed S] [--synthetic] [--net mnist|resnet20]
 *                   [--no-graphs]   (every step op by op: no CUDA graph replay)
 *        cuda_bench --net resnet20 --print-spec   (the canonical spec, for PyTorch's side)
 *        cuda_bench --list
 * Kiln's side is rt_trainer on its device path, as %train runs it: the data set is
 * uploaded once, each epoch's order once, a step gathers its batch on the device and
 * updates with Adam there; the losses are read in batches (every 0.25 s).
 * Output: "key value" lines. --list prints the devices, or "no_gpu <why>" and exits 3.
 * KILN_BENCH_DATA: where Fashion-MNIST is (a folder of its IDX files; default: found as
 * `%dataset fashion-mnist` finds it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_mnist.h"
#include "rt.h"
#include "rt_device.h"

static int fail(const rt_error *e)
{
    fprintf(stderr, "cuda_bench: %s\n", e->msg);
    return 1;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int list_devices(void)
{
    rt_cuda_device_list l;
    rt_error err = {0};
    if (rt_cuda_list_devices(&l, &err) != RT_OK) return fail(&err);
    if (l.count == 0) {
        printf("no_gpu %s\n", l.why);
        return 3;
    }
    printf("driver %d\nruntime %d\n", l.driver_version, l.runtime_version);
    for (int i = 0; i < l.count; i++)
        printf("device cuda:%d %s | cc %d.%d | %.0f MiB total, %s%.0f MiB free\n", i, l.dev[i].name,
               l.dev[i].cc_major, l.dev[i].cc_minor, (double)l.dev[i].mem_total / 1048576.0,
               l.dev[i].mem_free_known ? "" : "? ", (double)l.dev[i].mem_free / 1048576.0);
    return 0;
}

typedef struct bench_run {
    double first_loss;
    int64_t seen;
} bench_run;

static void on_progress(const rt_progress *p, void *user)
{
    bench_run *r = user;
    if (p->step == 1) r->first_loss = p->loss;
    r->seen = p->step;
}

int main(int argc, char **argv)
{
    int steps = 200, warmup = 20, batch = 128, syn = 0, no_graphs = 0;
    unsigned long long seed = 1;
    const char *device = "cuda", *prec_name = "fp32", *net = "mnist";
    int print_spec = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "0";
        if (!strcmp(a, "--list")) return list_devices();
        else if (!strcmp(a, "--steps")) steps = atoi(v), i++;
        else if (!strcmp(a, "--warmup")) warmup = atoi(v), i++;
        else if (!strcmp(a, "--batch")) batch = atoi(v), i++;
        else if (!strcmp(a, "--seed")) seed = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--device")) device = v, i++;
        else if (!strcmp(a, "--precision")) prec_name = v, i++;
        else if (!strcmp(a, "--synthetic")) syn = 1;
        else if (!strcmp(a, "--no-graphs")) no_graphs = 1;
        else if (!strcmp(a, "--net")) net = v, i++;
        else if (!strcmp(a, "--print-spec")) print_spec = 1;
        else {
            fprintf(stderr, "cuda_bench: unknown option %s\n", a);
            return 2;
        }
    }
    rt_error err = {0};
    char zoo[8192];
    const char *spec = bench_mnist_net;
    if (strcmp(net, "mnist")) {
        const rt_model_input zin = {3, 32, 32, 10};
        if (rt_model_zoo_spec(net, &zin, zoo, sizeof zoo, &err)) return fail(&err);
        spec = zoo;
    }
    if (print_spec) { /* the canonical text, as the model is built from it */
        rt_model *m = NULL;
        rt_model_input in = {1, 28, 28, 10};
        if (rt_model_create(&m, spec, &in, &err)) return fail(&err);
        fputs(rt_model_spec_canonical(m), stdout);
        rt_model_destroy(m);
        return 0;
    }
    rt_precision prec;
    if (rt_precision_parse(prec_name, &prec, &err)) return fail(&err);
    rt_backend b;
    if (rt_backend_open(&b, device, 0, &err)) {
        if (err.code == RT_ENODEV) {
            printf("no_gpu %s\n", err.msg);
            return 3;
        }
        return fail(&err);
    }
    if (rt_cuda_set_precision(&b, prec, &err)) return fail(&err);
    rt_dataset_splits splits;
    memset(&splits, 0, sizeof splits);
    if (syn) {
        /* the images the run takes (an epoch at most), not a whole 60000 */
        int64_t want = (int64_t)(warmup + steps) * batch;
        bench_mnist_synth(&splits.train, want > 60000 ? 60000 : want < batch ? batch : (int)want);
    } else {
        const char *where = getenv("KILN_BENCH_DATA"); /* a folder of the IDX files */
        rt_dataset_opts o = {.name = where && *where ? where : "fashion-mnist"};
        if (rt_dataset_load(&splits, &o, &err)) return fail(&err);
    }
    const rt_dataset *d = &splits.train;
    rt_model *m = NULL;
    rt_model_input in = {d->c, d->h, d->w, d->num_classes};
    if (rt_model_create(&m, spec, &in, &err) || rt_model_attach(m, &b, batch, seed, &err))
        return fail(&err);
    /* the product's loop: rt_trainer on its device path (rt_trainer.h) */
    bench_run br = {0};
    rt_trainer_config c = rt_trainer_config_default();
    c.batch_size = batch;
    c.lr = 1e-3;
    c.epochs = (int)(((int64_t)(warmup + steps) * batch) / d->n + 1);
    c.loss_scaling = prec == RT_PREC_FP16;
    c.no_graphs = no_graphs;
    c.progress = on_progress;
    c.user = &br;
    rt_trainer *t = NULL;
    if (rt_trainer_create(&t, m, d, &c, &err) || rt_trainer_begin(t, &err)) return fail(&err);
    rt_step_event ev;
    double t0 = 0.0;
    for (int64_t i = 0; i < warmup + steps; i++) {
        if (i == warmup) {
            if (rt_trainer_flush(t, &err) || b.ops->sync(&b, &err)) return fail(&err);
            t0 = now();
        }
        if (rt_trainer_step(t, &ev, &err)) return fail(&err);
    }
    rt_train_summary sum;
    if (rt_trainer_end(t, &sum, &err) || b.ops->sync(&b, &err)) return fail(&err);
    double dt = now() - t0;
    printf("device %s\nnet %s\nprecision %s\ndata %s\nbatch %d\nsteps %d\nseconds %.3f\n", device,
           net, prec_name, d->name, batch, steps, dt);
    printf("images_per_s %.1f\nfirst_loss %.5f\nlast_loss %.5f\n", (double)steps * batch / dt,
           br.first_loss, sum.last_loss);
    int64_t recorded = 0, replayed = rt_trainer_graph_launches(t, &recorded);
    printf("graph_replays %lld\ngraphs_recorded %lld\n", (long long)replayed, (long long)recorded);
    if (c.loss_scaling)
        printf("skipped_steps %lld\nloss_scale %g\n", (long long)sum.skipped_steps, sum.loss_scale);
    rt_trainer_destroy(t);
    rt_model_destroy(m);
    rt_dataset_splits_deinit(&splits);
    rt_backend_close(&b);
    return 0;
}
