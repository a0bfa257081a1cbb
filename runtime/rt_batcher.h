/* rt_batcher.h - the data-order iterator: shuffled mini-batches from an in-memory data
 * set, with CIFAR-style augmentation, resumable from two integers.
 *
 * Order: epoch e visits the data set in the permutation rt_rng_permutation(
 * rt_rng_stream(seed, RT_RNG_SHUFFLE, e, 0)) (or in index order without shuffle), so
 * the sample at any (epoch, position) is a pure function of (seed, epoch, position).
 * The state is {epoch, position} (position = samples of the epoch already handed out);
 * restoring it continues with exactly the batches the uninterrupted run would get.
 * The last partial batch is kept unless drop_last (PyTorch's DataLoader default).
 *
 * Augmentation (augment = 1), as torchvision's RandomCrop(H, padding=crop_pad) then
 * RandomHorizontalFlip(flip_p): the sample with data-set index i in epoch e draws from
 * rt_rng_stream(seed, RT_RNG_AUGMENT, e, 0) at word 4*i: top = below(2*pad+1),
 * left = below(2*pad+1), flip = uniform < flip_p; out(c,y,x) = src(c, y+top-pad,
 * x'+left-pad) with x' = flip ? W-1-x : x, and pad_value[c] outside the image. Note:
 * images are already normalised, so pad 0 is the data set mean; torchvision pads black
 * before normalising, which is pad_value[c] = -mean[c]/std[c].
 * Cutout (cutout = SIZE > 0, after the crop/flip; DeVries and Taylor): the sample draws
 * from rt_rng_stream(seed, RT_RNG_AUGMENT, e, 1) at word 2*i: cy = below(H),
 * cx = below(W); rows [cy - SIZE/2, cy - SIZE/2 + SIZE) and the same columns about cx,
 * clipped to the image, are set to 0 (the data set mean) in every channel.
 *
 * Memory: the order array (n uint32) is allocated at create; next() never allocates and
 * fills caller-provided buffers. next() is OpenMP-parallel over the batch.
 */
#ifndef RT_BATCHER_H
#define RT_BATCHER_H

#include <stddef.h>
#include <stdint.h>

#include "rt_dataset.h"
#include "rt_error.h"

/* A borrowed view of a data set: images (N, C, H, W) float, labels (N) uint8. images
 * NULL: each sample is read from set (rt_dataset_image_f32: a memory-mapped image
 * folder, normalised as it is copied into the batch). */
typedef struct rt_batcher_data {
    const float *images;
    const uint8_t *labels;
    int n, c, h, w;
    const rt_dataset *set;
} rt_batcher_data;

typedef struct rt_batcher_config {
    int batch_size; /* B > 0 */
    int shuffle;    /* 1: a new permutation every epoch; 0: index order */
    int drop_last;  /* 1: skip the last partial batch (default 0, as PyTorch) */
    int augment;    /* 1: random crop + horizontal flip (see above) */
    int crop_pad;   /* padding of the random crop (4); 0 = no crop */
    float flip_p;   /* flip probability (0.5); 0 = no flip */
    uint64_t seed;
    float pad_value[4]; /* per channel (C <= 4) value outside the image (0) */
    int cutout;         /* with augment: side of the square cut out (0 = none) */
} rt_batcher_config;

typedef struct rt_batcher_state {
    int64_t epoch;    /* 0-based */
    int64_t position; /* samples of this epoch already returned */
} rt_batcher_state;

typedef struct rt_batcher rt_batcher;

/* Defaults: shuffle on, drop_last off, augment off, crop_pad 4, flip_p 0.5. */
rt_batcher_config rt_batcher_config_default(int batch_size, uint64_t seed);
/* The view of a loaded data set. */
rt_batcher_data rt_batcher_data_of(const rt_dataset *d);

/* The data stays borrowed (must outlive the batcher). RT_EINVAL for an empty data set,
 * a bad batch size, C > 4 with augmentation, or drop_last with n < B. Starts at
 * {epoch 0, position 0}. Caller frees with rt_batcher_destroy. */
RT_MUST_USE rt_status rt_batcher_create(rt_batcher **out, const rt_batcher_data *data,
                                        const rt_batcher_config *cfg, rt_error *err);
void rt_batcher_destroy(rt_batcher *b);

/* Fills the next batch: images (count, C, H, W), labels (count) int32, indices (count)
 * the data-set index of each sample (may be NULL); buffers hold batch_size samples.
 * When the current epoch is exhausted, moves to the next epoch first. *count > 0. */
RT_MUST_USE rt_status rt_batcher_next(rt_batcher *b, float *images, int32_t *labels,
                                      uint32_t *indices, int *count, rt_error *err);

/* Batches per epoch: ceil(n/B), or floor(n/B) with drop_last. */
int64_t rt_batcher_steps_per_epoch(const rt_batcher *b);
/* 1 when the current epoch has no batches left (the next call starts a new epoch). */
int rt_batcher_epoch_done(const rt_batcher *b);

rt_batcher_state rt_batcher_get_state(const rt_batcher *b);
/* RT_EINVAL (naming the values) if epoch < 0 or position is not in [0, n]. */
RT_MUST_USE rt_status rt_batcher_set_state(rt_batcher *b, rt_batcher_state s, rt_error *err);

/* The random crop/flip of data-set index idx in epoch (see the top of this file): the
 * words from 4*idx of rt_rng_stream(seed, RT_RNG_AUGMENT, epoch, 0), rejection
 * sampling of rt_rng_below included (it may read past word 4*idx+3). */
void rt_batcher_augment_draw(uint64_t seed, uint32_t epoch, uint32_t idx, int pad, float flip_p,
                             int *top, int *left, int *flip);

/* The cutout square's centre of data-set index idx in epoch (see the top of this file). */
void rt_batcher_cutout_draw(uint64_t seed, uint32_t epoch, uint32_t idx, int h, int w, int *cy,
                            int *cx);
/* dst (C,H,W): the size x size square about (cy, cx), clipped to the image, set to 0. */
void rt_batcher_cutout(float *dst, int c, int h, int w, int size, int cy, int cx);

/* The current epoch's order (n data-set indices; the first epoch_len are visited),
 * valid after the epoch's first rt_batcher_advance/next; and that epoch. */
const uint32_t *rt_batcher_order(const rt_batcher *b, int64_t *epoch);
/* Moves to the next batch like rt_batcher_next but copies nothing: the batch is
 * order[*start .. *start + *count) of the epoch in *epoch (rt_batcher_order). For a
 * consumer that gathers the batch itself (the trainer's device path). */
RT_MUST_USE rt_status rt_batcher_advance(rt_batcher *b, int64_t *start, int *count, int64_t *epoch,
                                         rt_error *err);

/* The augmentation of one image, exposed for tests and for a CUDA mirror:
 * dst (C,H,W) = crop/flip of src (C,H,W) with the given top/left offsets (0..2*pad). */
void rt_batcher_crop_flip(float *dst, const float *src, int c, int h, int w, int pad, int top,
                          int left, int flip, const float *pad_value);

#endif
