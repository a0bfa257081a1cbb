/* optim_bench.c - the Kiln side of bench/optim_bench.py: RNG fills, optimiser steps
 * and augmented batches, timed as the median of several repetitions.
 * Prints "name milliseconds" lines; optim_bench.py runs the PyTorch peer on the same
 * sizes and prints the ratio. Usage: optim_bench [threads]  (OMP_NUM_THREADS works too)
 */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_batcher.h"
#include "rt_optim.h"
#include "rt_rng.h"

#define REPS 7
#define NFILL (16u << 20) /* 16M floats */
#define NPARAM (4u << 20) /* 4M parameters in 8 tensors */
#define NIMG 10000        /* CIFAR-shaped images */
#define BATCH 128

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef void (*bench_fn)(void *ctx);

static void run(const char *name, bench_fn fn, void *ctx)
{
    double t[REPS];
    fn(ctx); /* warm-up */
    for (int r = 0; r < REPS; r++) {
        double t0 = now_ms();
        fn(ctx);
        t[r] = now_ms() - t0;
    }
    qsort(t, REPS, sizeof *t, cmp_d);
    printf("%s %.3f\n", name, t[REPS / 2]);
    fflush(stdout);
}

typedef struct {
    float *buf;
    rt_rng rng;
} fill_ctx;

static void bench_uniform(void *c)
{
    fill_ctx *f = c;
    rt_rng_fill_uniform(&f->rng, f->buf, NFILL, 0.0f, 1.0f);
}

static void bench_normal(void *c)
{
    fill_ctx *f = c;
    rt_rng_fill_normal(&f->rng, f->buf, NFILL, 0.0f, 1.0f);
}

static void bench_bernoulli(void *c)
{
    fill_ctx *f = c;
    rt_rng_fill_bernoulli(&f->rng, f->buf, NFILL, 0.5f, 2.0f);
}

static void bench_step(void *c)
{
    if (rt_optim_step((rt_optim *)c, 1e-3, NULL) != RT_OK) abort();
}

typedef struct {
    rt_batcher *b;
    float *images;
    int32_t labels[BATCH];
} batch_ctx;

static void bench_batch(void *c)
{
    batch_ctx *x = c;
    int n;
    if (rt_batcher_next(x->b, x->images, x->labels, NULL, &n, NULL) != RT_OK) abort();
}

static void optim_bench(const char *name, rt_optim_kind kind, double momentum, float *p,
                        const float *g)
{
    rt_optim_config cfg = rt_optim_config_default(kind);
    cfg.momentum = momentum;
    rt_optim_param params[8];
    for (int i = 0; i < 8; i++)
        params[i] =
            (rt_optim_param){p + i * (NPARAM / 8), g + i * (NPARAM / 8), NPARAM / 8, 0, 0, 1};
    rt_optim *o;
    if (rt_optim_create(&o, &cfg, params, 8, NULL) != RT_OK) abort();
    run(name, bench_step, o);
    rt_optim_destroy(o);
}

int main(int argc, char **argv)
{
    if (argc > 1) omp_set_num_threads(atoi(argv[1]));
    printf("threads %d\n", omp_get_max_threads());

    fill_ctx f = {malloc(NFILL * sizeof(float)), rt_rng_stream(1, RT_RNG_USER, 0, 0)};
    if (!f.buf) return 1;
    run("rng_uniform_16M", bench_uniform, &f);
    run("rng_normal_16M", bench_normal, &f);
    run("dropout_mask_16M", bench_bernoulli, &f);
    free(f.buf);

    float *p = malloc(NPARAM * sizeof *p), *g = malloc(NPARAM * sizeof *g);
    if (!p || !g) return 1;
    rt_rng r = rt_rng_stream(2, RT_RNG_USER, 0, 0);
    rt_rng_fill_normal(&r, p, NPARAM, 0.0f, 1.0f);
    rt_rng_fill_normal(&r, g, NPARAM, 0.0f, 1e-3f);
    optim_bench("sgd_momentum_4M", RT_OPTIM_SGD, 0.9, p, g);
    optim_bench("adam_4M", RT_OPTIM_ADAM, 0.0, p, g);
    optim_bench("adamw_4M", RT_OPTIM_ADAMW, 0.0, p, g);
    free(p);
    free(g);

    size_t img = 3 * 32 * 32;
    float *images = malloc(NIMG * img * sizeof *images);
    uint8_t *labels = malloc(NIMG);
    batch_ctx x = {0};
    x.images = malloc(BATCH * img * sizeof(float));
    if (!images || !labels || !x.images) return 1;
    rt_rng_fill_normal(&r, images, NIMG * img, 0.0f, 1.0f);
    memset(labels, 3, NIMG);
    rt_batcher_data d = {images, labels, NIMG, 3, 32, 32, NULL};
    rt_batcher_config cfg = rt_batcher_config_default(BATCH, 5);
    if (rt_batcher_create(&x.b, &d, &cfg, NULL) != RT_OK) return 1;
    run("batch128_cifar_plain", bench_batch, &x);
    rt_batcher_destroy(x.b);
    cfg.augment = 1;
    if (rt_batcher_create(&x.b, &d, &cfg, NULL) != RT_OK) return 1;
    run("batch128_cifar_crop_flip", bench_batch, &x);
    rt_batcher_destroy(x.b);
    free(x.images);
    free(images);
    free(labels);
    return 0;
}
