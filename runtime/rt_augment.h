/* rt_augment.h - the augmentation and normalisation a training run is given, as text:
 * `--augment SPEC` and `--normalize MEAN,STD` (docs/training-magics.md).
 *
 * SPEC is "none" or items joined by commas: crop:PAD (random crop of the image padded by
 * PAD on every side, torchvision's RandomCrop(H, padding=PAD)), flip (horizontal, with
 * probability 0.5), cutout:SIZE (a SIZE x SIZE square set to the mean, after the crop and
 * the flip). What rt_batcher.h draws for each; the trainer's crop_pad / flip_p / cutout.
 */
#ifndef RT_AUGMENT_H
#define RT_AUGMENT_H

#include <stddef.h>

#include "rt_dataset.h"
#include "rt_error.h"

typedef struct rt_augment {
    int on;       /* 0: none */
    int crop_pad; /* crop:PAD (0: no crop) */
    int flip;     /* 1: flip */
    int cutout;   /* cutout:SIZE (0: none) */
} rt_augment;

/* Parses SPEC. RT_EINVAL naming --augment and the item at fault (an unknown item, a
 * PAD outside [0, 64], a SIZE < 1, an item twice, "none" with others, nothing). */
RT_MUST_USE rt_status rt_augment_parse(const char *spec, rt_augment *out, rt_error *err);
/* The canonical text: "crop:4,flip", "cutout:8", "none". */
void rt_augment_format(const rt_augment *a, char *buf, size_t n);
/* What plain --augment means for d: the data-set table's default for a named set
 * (rt_dataset_default_augment: the digit sets are never flipped), else "crop:4,flip"
 * for colour images and "crop:4" for grey ones (whose mirror symmetry is unknown). */
rt_augment rt_augment_default(const rt_dataset *d);
/* RT_EINVAL (naming --augment) when a's sizes do not fit d's images. */
RT_MUST_USE rt_status rt_augment_check(const rt_augment *a, const rt_dataset *d, rt_error *err);

/* --normalize: C means then C standard deviations (C <= 4), as numbers separated by
 * commas, parentheses and spaces ignored, so "0.1307,0.3081" and PyTorch's
 * "(0.1307,), (0.3081,)" are the same. *nvalues = 2 * C. RT_EINVAL naming --normalize
 * for a bad number, an odd count, more than 8, or a standard deviation <= 0. */
RT_MUST_USE rt_status rt_normalize_parse(const char *text, float mean[4], float std[4], int *nch,
                                         rt_error *err);

#endif
