/* quadrants.h - the tiny generated data set the training tests share: n images of
 * 1x8x8, 4 classes, image i has class i % 4 and is N(0, noise) Philox noise (stream
 * rt_rng_stream(seed, RT_RNG_USER, 0, 0)) plus 1.0 on the 4x4 quadrant of its class.
 * Learnable in a few steps, so tests see the loss fall. Free with quadrants_free. */
#ifndef QUADRANTS_H
#define QUADRANTS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

static inline void quadrants_make(rt_dataset *d, int n, uint64_t seed, float noise,
                                  const char *name)
{
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", name);
    d->n = n, d->c = 1, d->h = 8, d->w = 8, d->num_classes = 4;
    d->images = malloc((size_t)n * 64 * sizeof(float));
    d->labels = malloc((size_t)n);
    if (!d->images || !d->labels) {
        fprintf(stderr, "harness: out of memory for %d images\n", n);
        exit(99);
    }
    rt_rng r = rt_rng_stream(seed, RT_RNG_USER, 0, 0);
    rt_rng_fill_normal(&r, d->images, (size_t)n * 64, 0.0f, noise);
    for (int i = 0; i < n; i++) {
        int cls = i % 4;
        d->labels[i] = (uint8_t)cls;
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 4; x++)
                d->images[(size_t)i * 64 + (y + 4 * (cls / 2)) * 8 + x + 4 * (cls % 2)] += 1.0f;
    }
}

static inline void quadrants_free(rt_dataset *d)
{
    free(d->images);
    free(d->labels);
    d->images = NULL;
    d->labels = NULL;
}

#endif
