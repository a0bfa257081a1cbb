/* bench_conv_shapes.h - what conv_bf16_bench.c and onednn_bench.c share: the
 * convolution shapes of the nets they time (batch aside), random fp32 tensors, the
 * process's CPU clock and a median. */
#ifndef BENCH_CONV_SHAPES_H
#define BENCH_CONV_SHAPES_H

#include <stdlib.h>
#include <time.h>

#include "rt_backend.h"
#include "rt_rng.h"

/* A square convolution: C input channels at H x H, K filters of R x R. */
typedef struct {
    const char *name;
    int C, H, K, R, stride, pad;
} bench_conv_shape;

/* ResNet-20 on 3x32x32 images (its 3->16 stem excepted). */
static const bench_conv_shape bench_resnet20[] = {
    {"3x3 16->16 32x32", 16, 32, 16, 3, 1, 1},    {"3x3 s2 16->32 32x32", 16, 32, 32, 3, 2, 1},
    {"1x1 s2 16->32 32x32", 16, 32, 32, 1, 2, 0}, {"3x3 32->32 16x16", 32, 16, 32, 3, 1, 1},
    {"3x3 s2 32->64 16x16", 32, 16, 64, 3, 2, 1}, {"1x1 s2 32->64 16x16", 32, 16, 64, 1, 2, 0},
    {"3x3 64->64 8x8", 64, 8, 64, 3, 1, 1},       {NULL, 0, 0, 0, 0, 0, 0}};
/* MobileNetV2's 1x1 convolutions at 32x32 input, and one wide 3x3. */
static const bench_conv_shape bench_mobilenet[] = {
    {"1x1 32->16 32x32", 32, 32, 16, 1, 1, 0},
    {"1x1 16->96 32x32", 16, 32, 96, 1, 1, 0},
    {"1x1 96->24 16x16", 96, 16, 24, 1, 1, 0},
    {"1x1 144->32 8x8", 144, 8, 32, 1, 1, 0},
    {"1x1 192->64 4x4", 192, 4, 64, 1, 1, 0},
    {"1x1 960->160 2x2", 960, 2, 160, 1, 1, 0},
    {"1x1 320->1280 1x1", 320, 1, 1280, 1, 1, 0},
    {"3x3 192->192 8x8 (wide)", 192, 8, 192, 3, 1, 1},
    {NULL, 0, 0, 0, 0, 0, 0}};
/* The seed CNN (bench_mnist.h's net: PyTorch's MNIST example) on 1x28x28 images. */
static const bench_conv_shape bench_seedcnn[] = {{"3x3 1->32 28x28", 1, 28, 32, 3, 1, 0},
                                                 {"3x3 32->64 26x26", 32, 26, 64, 3, 1, 0},
                                                 {NULL, 0, 0, 0, 0, 0, 0}};

/* The process's CPU seconds (all threads). */
static inline double bench_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (sorts v). */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return v[n / 2];
}

/* n floats uniform in [-1, 1) from the user stream `seed`. */
static inline float *bench_rnd(size_t n, uint32_t seed)
{
    float *p = malloc(n * sizeof *p);
    rt_rng r = rt_rng_stream(3, RT_RNG_USER, seed, 0);
    rt_rng_fill_uniform(&r, p, n, -1.0f, 1.0f);
    return p;
}

static inline rt_tensor bench_tens(float *p, int n, int c, int h, int w)
{
    rt_tensor t = {.data = p, .n = n, .c = c, .h = h, .w = w};
    return t;
}

/* The backend's descriptor of shape s at batch n. */
static inline rt_conv_desc bench_conv_desc(const bench_conv_shape *s, int n)
{
    rt_conv_desc d = {0};
    d.N = n, d.C = s->C, d.H = d.W = s->H, d.K = s->K, d.R = d.S = s->R;
    d.stride = s->stride, d.pad = s->pad;
    d.P = d.Q = (s->H + 2 * s->pad - s->R) / s->stride + 1;
    return d;
}

#endif
