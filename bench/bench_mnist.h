/* bench_mnist.h - what train_bench.c and cuda_bench.c both train: the PyTorch
 * examples/mnist network (train_bench.py's torch_net) as a Kiln spec, and a synthetic
 * stand-in for Fashion-MNIST (same shapes) for machines without the data. */
#ifndef BENCH_MNIST_H
#define BENCH_MNIST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

static const char *const bench_mnist_net =
    "conv2d 32 3\nrelu\nconv2d 64 3\nrelu\nmaxpool 2\ndropout 0.25\nflatten\n"
    "dense 128\nrelu\ndropout 0.5\ndense 10\n";

/* n images of N(0, 1) noise (seed 1) labelled i % 10. */
static inline void bench_mnist_synth(rt_dataset *d, int n)
{
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "synthetic");
    d->n = n, d->c = 1, d->h = 28, d->w = 28, d->num_classes = 10;
    d->images = malloc((size_t)n * 784 * 4);
    d->labels = malloc((size_t)n);
    rt_rng r = rt_rng_stream(1, RT_RNG_USER, 0, 0);
    rt_rng_fill_normal(&r, d->images, (size_t)n * 784, 0.0f, 1.0f);
    for (int i = 0; i < n; i++) d->labels[i] = (uint8_t)(i % 10);
}

#endif
