/* rt_dataset.h - an in-memory image classification data set, and how to get one.
 *
 * The contract the trainer relies on (the loader fills it, the trainer only reads it):
 *   images: (N, C, H, W) float32, already normalised (per-channel mean/std of the
 *           training split), contiguous, owned by the data set (sets made in memory,
 *           e.g. by tests); or NULL, as rt_dataset_load leaves it, and then
 *   pixels: the raw bytes, image i at row index[i] (index NULL: row i), normalised
 *           as they are read: rt_dataset_image_f32(). For image folders the bytes are
 *           their memory-mapped decode cache, so a set larger than RAM is paged in
 *           from disk as it is read, never copied into memory; for IDX and CIFAR they
 *           are the file's bytes (a quarter of the floats' size);
 *   labels: (N) uint8 in [0, num_classes).
 * Readers go through rt_dataset_image_f32 / rt_dataset_image_u8 unless images is set.
 * A data set never changes after loading, so its checksum identifies it in
 * checkpoints and the results store.
 *
 * Units: a raw pixel v in 0..255 is stored as ((v / 255) - mean[c]) / std[c], with
 * mean/std measured on the training split (after --val is carved off) and applied
 * unchanged to val and test. rt_dataset_image_u8() undoes it exactly, so nothing
 * else is kept in memory for pictures.
 * Checksum: FNV-1a 64 (offset basis 0xcbf29ce484222325, prime 0x100000001b3) fed
 * the split's raw image bytes in (N, C, H, W) order, then its N label bytes.
 * Resolution and download: see rt_dataset.c; the HTTP transfer is rt_download.h.
 */
#ifndef RT_DATASET_H
#define RT_DATASET_H

#include <stdint.h>
#include <stddef.h>

#include "rt_download.h" /* rt_download_progress_fn */
#include "rt_error.h"

#define RT_MAX_CLASSES 100

typedef struct rt_dataset {
    char name[64];  /* "fashion-mnist/train", "mnist/test", "cifar10/val" ... */
    int n, c, h, w; /* N images of C x H x W */
    int num_classes;
    float *images;         /* (N, C, H, W), normalised; NULL: read pixels */
    uint8_t *labels;       /* (N) */
    const uint8_t *pixels; /* raw (rows, C, H, W) bytes, borrowed: the splits' map or heap */
    uint32_t *index;       /* (N) row of image i in pixels, owned; NULL: row i */
    char class_names[RT_MAX_CLASSES][32];
    float mean[4], std[4]; /* per-channel normalisation that was applied */
    uint64_t checksum;     /* FNV-1a 64 of the raw (unnormalised) bytes and labels */
} rt_dataset;

/* What loading an image folder did (zero for the other formats). */
typedef struct rt_dataset_image_stats {
    const char *layout;  /* "folder", "split folders", "csv"; NULL = not images */
    int decoded;         /* files decoded by this load: 0 when the cache served it */
    int skipped;         /* bad files skipped (--skip-bad) */
    char first_bad[384]; /* the first skipped file's error */
    uint64_t folder_key; /* rt_dataset_folder_key of the folder when it was listed */
} rt_dataset_image_stats;

/* The splits of a named data set. val is carved from the end of train (--val N);
 * val.n == 0 when no validation split was asked for. */
typedef struct rt_dataset_splits {
    rt_dataset train, val, test;
    char source[512]; /* directory or URL it came from, for the user */
    rt_dataset_image_stats images;
    void *map; /* the mapping the splits' pixels point into (owned), map_len bytes */
    size_t map_len;
    uint8_t *heap[2]; /* or the malloc'd bytes they point into (IDX, CIFAR), owned */
} rt_dataset_splits;

typedef struct rt_dataset_opts {
    const char *name; /* "mnist", "fashion-mnist", "cifar10", "cifar100", "cifar100-coarse",
                         "svhn", or a path to IDX/CIFAR/SVHN files or a pixel CSV
                                (DATA: or an http(s)/file URL of them; see docs/datasets.md) */
    const char *dir;  /* --dir: looked in first (and where downloads go); may be NULL */
    const char *url;  /* --url: base URL overriding the canonical mirrors; may be NULL */
    int val;          /* --val N: images moved from train to val */
    rt_download_progress_fn progress;
    void *user;
    int (*should_stop)(void *user); /* checked during downloads (and while reading
                                       big files: RT_EINTERRUPTED); may be NULL */
    /* A sha256sum-format file ("HEX  NAME" lines) whose
     * hashes replace the built-in ones for downloads (own mirrors, tests); may be NULL. */
    const char *sha256sums;
    /* Image folders (a directory of class folders, split folders, a CSV of path,label
     * or an archive of them; docs/datasets.md). Ignored by the other formats. */
    int image_h, image_w; /* --size: resize to cover H x W, centre crop; 0 = 64 x 64 */
    int channels;         /* --channels 1 (grey) or 3 (RGB); 0 = the first image's */
    double val_fraction;  /* --val F, 0 < F < 1: that fraction of train to val (else
                                .val images); chosen by seed, not from the end */
    uint64_t seed;        /* which images go to val */
    int skip_bad;         /* --skip-bad: count and skip undecodable files (else the
                                first one is the error) */
    /* A pixel CSV (label,pixel0,...): the image shape as written, CxHxW (channel planes)
     * or HxWxC (interleaved); zeros = inferred from the pixel count. */
    int shape[3];
} rt_dataset_opts;

/* What an image folder, CSV or archive at path holds, as one number: FNV-1a 64 of
 * every image file's name, size and modification time (the CSV's labels too; for an
 * archive, the archive file's own size and time). Equal keys = the same files, as the
 * decode cache judges it; a load records it in images.folder_key. RT_ENOTFOUND /
 * RT_EFORMAT as rt_dataset_load names them when path is no longer an image set. */
RT_MUST_USE rt_status rt_dataset_folder_key(const char *path, uint64_t *key, rt_error *err);

/* Loads (finding or downloading as needed) all splits. On error nothing is left allocated. */
RT_MUST_USE rt_status rt_dataset_load(rt_dataset_splits *out, const rt_dataset_opts *opts,
                                      rt_error *err);
/* Frees the images, labels and indices of every split and unmaps or frees the pixels. Accepts
 * NULL. */
void rt_dataset_splits_deinit(rt_dataset_splits *s);

/* lut[v] = the float a raw byte v of channel c stands for: ((v / 255) - mean[c]) /
 * std[c], the one expression every reader of pixels uses. */
void rt_dataset_norm_table(const rt_dataset *d, int c, float lut[256]);
/* Writes image i (C*H*W floats, CHW order) normalised, from images or pixels. */
void rt_dataset_image_f32(const rt_dataset *d, int i, float *out);

/* Writes image i (C*H*W bytes, CHW order) as the raw 0..255 bytes it was loaded from:
 * a copy of its pixels, or, for a set built from floats (images set), the normalisation
 * undone and rounded. */
void rt_dataset_image_u8(const rt_dataset *d, int i, uint8_t *out);
/* Reads one PNG or JPEG file the way image folders are read: decoded,
 * converted to c channels (1 or 3), resized to cover h x w and centre-cropped, written
 * as c*h*w CHW bytes to out. Errors (RT_EFORMAT / RT_EIO / RT_ENOTFOUND) name the file.
 * For predicting on new images with a model trained on a folder. */
RT_MUST_USE rt_status rt_image_file_read(const char *path, int c, int h, int w, uint8_t *out,
                                         rt_error *err);
/* Reads the rows of a pixel CSV (label,pixel0,... or pixel0,...; docs/datasets.md) as
 * images: shape as %dataset's --shape (CxHxW or HxWxC as written; NULL or zeros: from
 * the pixel count) -> *n images of *c x *h x *w, *pixels their (C, H, W) bytes and
 * *labels theirs, or NULL when the file has no label column (both malloc'd). Errors
 * (RT_EFORMAT, RT_EINVAL, RT_ENOTFOUND, RT_ENOMEM) name the file and line. For
 * predicting on Kaggle's test.csv. */
RT_MUST_USE rt_status rt_pixel_csv_read(const char *path, const int shape[3], int *n, int *c,
                                        int *h, int *w, uint8_t **pixels, uint8_t **labels,
                                        rt_error *err);
/* What plain --augment means for the named set NAME (or a split of it, "mnist/train"):
 * the table's "crop:2" / "crop:4" for the digit sets (never a flip), "crop:4,flip" for
 * CIFAR;
 * NULL for a set the table does not know (rt_augment_default decides). */
const char *rt_dataset_default_augment(const char *name);
/* The names a user may give: "mnist", "fashion-mnist", "cifar10", ... (NULL-terminated,
 * static), for help and completion. */
const char *const *rt_dataset_known_names(void);

#endif
