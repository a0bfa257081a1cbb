/* train_bench.c - Kiln's side of bench/train_bench.py: trains the PyTorch MNIST example
 * net on Fashion-MNIST for a fixed number of steps and prints throughput, the per-layer
 * time breakdown and (optionally) the test accuracy. Not installed; not a test.
 *
 * usage: train_bench [--steps N] [--batch B] [--threads T] [--epochs E] [--seed S]
 *                    [--timing | --cpu-timing] [--eval] [--synthetic] [--dist]
 *                    [--device cpu|cuda[:N]] [--gpus K] [--precision fp32|bf16|fp16]
 * --epochs E trains E full epochs instead of --steps. Output: "key value" lines.
 * --dist: one rank of a launch (mpirun -np N train_bench --dist ...; bench/dist_bench.py;
 * GPU ranks also without MPI, torchrun-style variables: bench/multi_gpu.sh):
 * --batch is the global batch, the ranks average their gradients (runtime/dist/rt_dist.h),
 * images/s is the whole launch's, and rank 0 alone prints. With --device cuda each
 * rank takes the GPU of its local rank.
 * --gpus K: K GPUs in this one process (cuda:0..K-1, as %train --device cuda:0,1,..):
 * a model replica and a thread per GPU, gradients summed by NCCL; --batch is the global
 * batch (bench/multi_gpu.sh).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench_mnist.h"
#include "rt.h"
#include "rt_omp_wait.h"

RT_OMP_WAIT_PREINIT(rt_omp_wait_preinit); /* Kiln's OpenMP spin default */

static int fail(const rt_error *e)
{
    fprintf(stderr, "train_bench: %s\n", e->msg);
    return 1;
}

int main(int argc, char **argv)
{
    int steps = 100, batch = 128, threads = 2, epochs = 0, timing = 0, eval = 0, syn = 0;
    int dist = 0, gpus = 1;
    const char *device = "cpu", *precision = "fp32";
    unsigned long long seed = 1;
    const char *spec = bench_mnist_net;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "0";
        if (!strcmp(a, "--steps")) steps = atoi(v), i++;
        else if (!strcmp(a, "--batch")) batch = atoi(v), i++;
        else if (!strcmp(a, "--threads")) threads = atoi(v), i++;
        else if (!strcmp(a, "--epochs")) epochs = atoi(v), i++;
        else if (!strcmp(a, "--seed")) seed = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--timing")) timing = 1;
        else if (!strcmp(a, "--cpu-timing")) timing = 2;
        else if (!strcmp(a, "--eval")) eval = 1;
        else if (!strcmp(a, "--synthetic")) syn = 1;
        else if (!strcmp(a, "--dist")) dist = 1;
        else if (!strcmp(a, "--device")) device = v, i++;
        else if (!strcmp(a, "--precision")) precision = v, i++;
        else if (!strcmp(a, "--gpus")) gpus = atoi(v), device = "cuda:0", i++;
        else {
            fprintf(stderr, "train_bench: unknown option %s\n", a);
            return 2;
        }
    }
    rt_error err = {0};
    rt_dataset_splits splits;
    memset(&splits, 0, sizeof splits);
    rt_dataset *train = &splits.train;
    if (syn) {
        bench_mnist_synth(&splits.train, 60000);
        bench_mnist_synth(&splits.test, 1000);
    } else {
        rt_dataset_opts o = {.name = "fashion-mnist"};
        if (rt_dataset_load(&splits, &o, &err)) return fail(&err);
    }
    rt_backend b;
    rt_model *m = NULL;
    rt_trainer *t = NULL;
    rt_dist_env de;
    char mine[32];
    if (rt_dist_env_read(&de, &err)) return fail(&err);
    snprintf(mine, sizeof mine, "cuda:%d", de.local_rank);
    if (rt_backend_open(&b, dist && !strcmp(device, "cuda") ? mine : device, threads, &err))
        return fail(&err);
    rt_precision prec;
    if (rt_precision_parse(precision, &prec, &err) || rt_backend_set_precision(&b, prec, &err))
        return fail(&err);
    rt_model_input in = {train->c, train->h, train->w, train->num_classes};
    rt_backend rb[16];
    rt_model *rm[16];
    if (gpus < 1 || gpus > 16) return fprintf(stderr, "train_bench: --gpus 1..16\n"), 2;
    const int held = (batch + gpus - 1) / gpus; /* each GPU's share of the batch */
    if (rt_model_create(&m, spec, &in, &err) || rt_model_attach(m, &b, held, seed, &err))
        return fail(&err);
    for (int i = 1; i < gpus; i++) { /* the replicas: cuda:1 .. cuda:K-1 */
        char name[32];
        snprintf(name, sizeof name, "cuda:%d", i);
        if (rt_backend_open(&rb[i - 1], name, threads, &err) ||
            rt_model_create(&rm[i - 1], spec, &in, &err) ||
            rt_model_attach(rm[i - 1], &rb[i - 1], held, seed, &err))
            return fail(&err);
    }
    rt_trainer_config c = rt_trainer_config_default();
    c.replicas = rm;
    c.nreplicas = gpus - 1;
    c.batch_size = batch;
    c.epochs = epochs > 0 ? epochs : 1;
    if (dist && rt_dist_world(&c.dist, &err)) return fail(&err);
    if (rt_dist_rank(c.dist) != 0 && !freopen("/dev/null", "w", stdout)) return 1;
    if (rt_trainer_create(&t, m, train, &c, &err) || rt_trainer_begin(t, &err)) return fail(&err);
    long total = epochs > 0 ? (long)(rt_trainer_steps_per_epoch(t) * epochs) : steps;
    /* warm-up: 3 steps not timed (first touches of the arenas, OpenBLAS buffers) */
    rt_step_event ev;
    for (int i = 0; i < 3 && epochs == 0; i++)
        if (rt_trainer_step(t, &ev, &err)) return fail(&err);
    rt_model_timing_enable(m, timing);
    rt_train_summary s;
    struct rusage ru0, ru;
    getrusage(RUSAGE_SELF, &ru0);
    if (rt_trainer_begin(t, &err)) return fail(&err);
    for (long i = 0; i < total; i++) {
        if (rt_trainer_step(t, &ev, &err)) return fail(&err);
        if (ev == RT_STEP_DONE) break;
        if (ev == RT_STEP_EPOCH_END) {
            rt_trainer_state st = rt_trainer_get_state(t);
            fprintf(stderr, "epoch loss %.4f acc %.4f\n", st.epoch_loss_sum / (double)st.epoch_seen,
                    (double)st.epoch_correct / (double)st.epoch_seen);
        }
    }
    if (rt_trainer_end(t, &s, &err)) return fail(&err);
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)(ru.ru_utime.tv_sec - ru0.ru_utime.tv_sec) +
                 1e-6 * (double)(ru.ru_utime.tv_usec - ru0.ru_utime.tv_usec) +
                 (double)(ru.ru_stime.tv_sec - ru0.ru_stime.tv_sec) +
                 1e-6 * (double)(ru.ru_stime.tv_usec - ru0.ru_stime.tv_usec);
    if (dist && c.dist) /* all ranks' CPU time: the launch's cost of an image */
        if (rt_dist_allreduce_f64(c.dist, &cpu, 1, "cpu time", 0, &err)) return fail(&err);
    printf("cpu_ms_per_image %.4f\n", 1e3 * cpu / (double)s.images);
    printf("steps %lld\nimages %lld\nseconds %.3f\nimages_per_s %.1f\nlast_loss %.5f\n",
           (long long)s.steps, (long long)s.images, s.seconds, s.images_per_s, s.last_loss);
    printf("seconds_per_epoch %.2f\n", 60000.0 / s.images_per_s);
    if (timing) {
        int nl;
        const rt_summary_row *rows = rt_model_summary(m, &nl, NULL);
        double tot = 0;
        for (int i = 0; i <= nl; i++) {
            double f, bw;
            rt_model_timing(m, i, &f, &bw);
            tot += f + bw;
        }
        for (int i = 0; i <= nl; i++) {
            double f, bw;
            rt_model_timing(m, i, &f, &bw);
            printf("layer %-28s fwd_ms %7.2f bwd_ms %7.2f share %5.1f%%\n",
                   i < nl ? rows[i].spec : "softmax-xent", 1e3 * f / s.steps, 1e3 * bw / s.steps,
                   100.0 * (f + bw) / tot);
        }
        printf("layers_ms_per_step %.2f step_ms %.2f\n", 1e3 * tot / s.steps,
               1e3 * s.seconds / s.steps);
    }
    getrusage(RUSAGE_SELF, &ru);
    if (eval) {
        rt_eval_result *r = malloc(sizeof *r);
        if (rt_trainer_evaluate(m, &splits.test, 0, r, &err)) return fail(&err);
        printf("test_loss %.4f\ntest_accuracy %.4f\n", r->loss, r->accuracy);
        free(r);
    }
    printf("peak_rss_mb %.1f\n", ru.ru_maxrss / 1024.0);
    rt_trainer_destroy(t);
    rt_model_destroy(m);
    rt_backend_close(&b);
    for (int i = 1; i < gpus; i++) {
        rt_model_destroy(rm[i - 1]);
        rt_backend_close(&rb[i - 1]);
    }
    rt_dataset_splits_deinit(&splits);
    return 0;
}
