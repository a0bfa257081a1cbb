/* rt_data_internal.h - private to runtime/data/: raw (uint8) splits and the readers
 * that fill them. A reader validates everything it reads and names the file in each
 * error; the preparation step (rt_dataset_prep.c) turns raw splits into rt_dataset.
 */
#ifndef RT_DATA_INTERNAL_H
#define RT_DATA_INTERNAL_H

#include <limits.h>
#include <stdint.h>
#include <stddef.h>

#include "rt_dataset.h"
#include "rt_error.h"

/* One split as it is stored on disk: bytes, not floats. */
typedef struct rtp_raw_split {
    int n, c, h, w;
    uint8_t *pixels; /* (N, C, H, W), owned */
    uint8_t *labels; /* (N), owned */
} rtp_raw_split;

void rtp_raw_split_deinit(rtp_raw_split *s);

/* Class names found next to the data (CIFAR batches.meta.txt); count 0 if none. */
typedef struct rtp_class_names {
    int count;
    char names[RT_MAX_CLASSES][32];
} rtp_class_names;

/* The caller's interrupt check, polled while big files are read (fn NULL = never).
 * rtp_check_stop returns RT_EINTERRUPTED naming `what` once fn says stop. */
typedef struct rtp_stop {
    int (*fn)(void *user);
    void *user;
} rtp_stop;
RT_MUST_USE rt_status rtp_check_stop(const rtp_stop *stop, const char *what, rt_error *err);

/* ---- IDX (rt_idx.c): gzip or plain, magic 0x803 images / 0x801 labels ---- */
/* Reads an image file into s->pixels and sets n, c = 1, h, w. */
RT_MUST_USE rt_status rtp_idx_read_images(const char *path, rtp_raw_split *s, const rtp_stop *stop,
                                          rt_error *err);
/* Reads a label file into s->labels; checks the count equals s->n (images read first)
 * and, when num_classes > 0, that every label is below it. */
RT_MUST_USE rt_status rtp_idx_read_labels(const char *path, rtp_raw_split *s, int num_classes,
                                          const char *images_path, rt_error *err);

/* ---- the CIFAR binary family (rt_cifar_read.c) ---- */
/* One member of the family: files of records of label_bytes label bytes + 3x32x32
 * pixels, and an optional class-name list. */
typedef struct rtp_cifar_layout {
    const char *const *members; /* the record files, matched by base name in an archive */
    int nmembers;
    int label_bytes; /* label bytes a record */
    int label;       /* the one that is the image's label */
    /* every record's label bytes (record i of what); NULL: checked by the caller */
    rt_status (*check)(const uint8_t *labels, size_t i, const char *what, rt_error *err);
    const char *names_file; /* the class-name list, one a line (read when present) */
    int names_count;        /* the names it must have; 0: any */
    const char *kind;       /* "CIFAR-10", in messages */
    const char *label_desc; /* "1 label byte", in messages */
    const char *archive;    /* "cifar-10-binary.tar.gz", in messages */
} rtp_cifar_layout;
/* Reads l's members into out[0..l->nmembers) (and its names file, when there, into
 * names) from the folder dir, or from the tar(.gz) at path. On error nothing is held. */
RT_MUST_USE rt_status rtp_cifar_layout_read_dir(const rtp_cifar_layout *l, const char *dir,
                                                rtp_raw_split *out, rtp_class_names *names,
                                                const rtp_stop *stop, rt_error *err);
RT_MUST_USE rt_status rtp_cifar_layout_read_tar(const rtp_cifar_layout *l, const char *path,
                                                rtp_raw_split *out, rtp_class_names *names,
                                                const rtp_stop *stop, rt_error *err);
/* Parses a class-name list (one name a line, blank lines ignored). */
RT_MUST_USE rt_status rtp_cifar_parse_meta(const char *what, const char *text, size_t len,
                                           rtp_class_names *names, rt_error *err);

/* ---- CIFAR-10 binary (rt_cifar.c) ---- */
/* Reads data_batch_1..5.bin, test_batch.bin (and batches.meta.txt if present) from
 * a directory, or from a cifar-10-binary.tar.gz stream (libarchive, no extraction). */
RT_MUST_USE rt_status rtp_cifar_read_dir(const char *dir, rtp_raw_split *train, rtp_raw_split *test,
                                         rtp_class_names *names, const rtp_stop *stop,
                                         rt_error *err);
RT_MUST_USE rt_status rtp_cifar_read_tar(const char *path, rtp_raw_split *train,
                                         rtp_raw_split *test, rtp_class_names *names,
                                         const rtp_stop *stop, rt_error *err);
/* ---- CIFAR-100 binary (rt_cifar100.c) ---- */
/* Reads train.bin and test.bin (and coarse_label_names.txt or fine_label_names.txt,
 * whichever labels are used, if present) from a directory, or from a
 * cifar-100-binary.tar.gz stream. coarse: the 20 superclass labels, else the 100 fine
 * ones. Both label bytes of every record are checked. */
RT_MUST_USE rt_status rtp_cifar100_read_dir(const char *dir, int coarse, rtp_raw_split *train,
                                            rtp_raw_split *test, rtp_class_names *names,
                                            const rtp_stop *stop, rt_error *err);
RT_MUST_USE rt_status rtp_cifar100_read_tar(const char *path, int coarse, rtp_raw_split *train,
                                            rtp_raw_split *test, rtp_class_names *names,
                                            const rtp_stop *stop, rt_error *err);

/* ---- SVHN's level-5 MAT files (rt_svhn_mat.c) ---- */
/* Reads X (uint8 H x W x C x N, column-major) and y (N labels 1..10, 10 = digit 0)
 * into s: (C, H, W) images, labels 0..9. */
RT_MUST_USE rt_status rtp_svhn_read_mat(const char *path, rtp_raw_split *s, const rtp_stop *stop,
                                        rt_error *err);

/* ---- pixel CSV, Kaggle's format (rt_pixcsv.c) ---- */
/* 1 when the file's first line is `label,pixel...` or `pixel...`. */
int rtp_pixcsv_sniff(const char *path);
/* The image shape of rows of `pixels` values: given (three numbers as the user wrote
 * them, CxHxW or HxWxC; NULL or zeros = inferred: 784 -> 1x28x28, 3072 -> 3x32x32, S*S,
 * 3*S*S) -> out = {C, H, W, channels_last}. RT_EINVAL / RT_EFORMAT naming path. */
RT_MUST_USE rt_status rtp_pixcsv_shape(const char *path, int pixels, const int given[3], int out[4],
                                       rt_error *err);
/* Reads every row into s (images (C, H, W)); *labelled 0 when the file has no label
 * column (its labels are then zeros). Errors name the file and line. */
RT_MUST_USE rt_status rtp_pixcsv_read(const char *path, const int shape[3], rtp_raw_split *s,
                                      int *labelled, const rtp_stop *stop, rt_error *err);

/* ---- preparation (rt_dataset_prep.c) ---- */
typedef struct rtp_prep {
    const char *base;               /* "fashion-mnist": split names become base/train ... */
    int val;                        /* --val N */
    int num_classes;                /* labels already checked below it */
    const char *const *class_names; /* num_classes entries */
} rtp_prep;

/* Val as the last p->val images of train, checksums, mean/std of train, into out: the
 * splits read train's and test's bytes in place (out->heap owns them). Consumes train
 * and test in all cases; on error out still needs rt_dataset_splits_deinit. */
RT_MUST_USE rt_status rtp_dataset_prepare(rt_dataset_splits *out, rtp_raw_split *train,
                                          rtp_raw_split *test, const rtp_prep *p, rt_error *err);
/* Bytes that stay where they are (an image folder's mapped cache): n images of the
 * split, image i at row index[i] of pixels (index NULL: row i), its label labels[row]. */
typedef struct rtp_rows {
    const uint8_t *pixels;
    const uint8_t *labels;
    uint32_t *index; /* (n), owned until handed over */
    int n;
} rtp_rows;

/* Fills out's train, val and test from rows (C x H x W bytes each): names, checksums
 * (as rt_dataset.h defines them, in the split's order), mean/std of train, labels
 * copied; the pixels are borrowed (the caller sets out->map), the indices taken in all
 * cases. The floats are made as images are read (rt_dataset_image_f32). */
RT_MUST_USE rt_status rtp_dataset_prepare_rows(rt_dataset_splits *out, rtp_rows rows[3], int c,
                                               int h, int w, const rtp_prep *p, rt_error *err);
uint64_t rtp_fnv1a64(uint64_t h, const uint8_t *p, size_t n);
#define RTP_FNV1A64_INIT 0xcbf29ce484222325ULL

/* ---- known sets (rt_dataset_table.c) ---- */
typedef enum { RTP_FMT_IDX, RTP_FMT_CIFAR, RTP_FMT_CIFAR100, RTP_FMT_SVHN } rtp_format;

typedef struct rtp_known_file {
    const char *name;   /* file name on the mirror and on disk */
    const char *sha256; /* of the file as served (see the table for sources) */
    uint64_t size;
} rtp_known_file;

typedef struct rtp_known_set {
    const char *name;     /* "fashion-mnist" */
    const char *files_of; /* the set whose files (and cache folder) it reads; NULL = name */
    rtp_format format;
    int coarse;           /* CIFAR-100: the 20 superclass labels instead of the 100 fine ones */
    const char *base_url; /* canonical mirror, ends with '/' */
    const char *system_dirs[3]; /* NULL-terminated */
    rtp_known_file files[4];    /* IDX: train images, train labels, test images, test
                                   labels; CIFAR: the archive only; SVHN: train, test */
    int num_files;
    int num_classes;
    const char *const *class_names; /* num_classes names */
    const char *augment;            /* what plain --augment means for the set (rt_augment.h) */
} rtp_known_set;

const rtp_known_set *rtp_known_set_find(const char *name);
/* Looks NAME up in a sha256sum-format manifest; hex[65] gets the hash. RT_ENOTFOUND
 * when the manifest has no line for NAME. */
RT_MUST_USE rt_status rtp_manifest_lookup(const char *manifest, const char *name, char hex[65],
                                          rt_error *err);

/* ---- files and places (rt_dataset_fs.c) ---- */
void rtp_copy_str(char *dst, size_t size, const char *src); /* truncates, never warns */
int rtp_is_file(const char *path);
int rtp_is_dir(const char *path);
/* The four IDX files of dir (train images, train labels, test images, test labels),
 * gzipped or not, "-idx3-" or ".idx3-" spelling. 0 if any is missing. */
int rtp_find_idx(const char *dir, char paths[4][PATH_MAX]);
/* A CIFAR-10 source in dir: the batches (dir or dir/cifar-10-batches-bin) -> *is_tar 0,
 * or dir/cifar-10-binary.tar.gz -> *is_tar 1. */
int rtp_find_cifar(const char *dir, char path[PATH_MAX], int *is_tar);
/* The same for CIFAR-100: train.bin + test.bin in dir or dir/cifar-100-binary, or
 * dir/cifar-100-binary.tar.gz. */
int rtp_find_cifar100(const char *dir, char path[PATH_MAX], int *is_tar);
/* SVHN: dir/train_32x32.mat and dir/test_32x32.mat -> paths. */
int rtp_find_svhn(const char *dir, char paths[2][PATH_MAX]);
/* $XDG_CACHE_HOME/kiln/datasets/NAME, else ~/.cache/kiln/datasets/NAME. */
RT_MUST_USE rt_status rtp_cache_dir(const char *name, char out[PATH_MAX], rt_error *err);
RT_MUST_USE rt_status rtp_mkdir_p(const char *path, rt_error *err);
/* Last path (or URL) component without trailing '/' and .tar.gz/.tgz: split names. */
void rtp_base_name(const char *path, char *out, size_t size);

/* ---- fetching (rt_dataset_fetch.c) ---- */
typedef struct rtp_fetch_file {
    const char *name; /* file name in dir */
    const char *url;
    const char *sha256; /* NULL = not known (URL sets without a manifest) */
} rtp_fetch_file;

/* Downloads the files dir lacks (opts->sha256sums, when set, supplies every hash). */
RT_MUST_USE rt_status rtp_fetch(const char *dir, const rtp_fetch_file *files, int n,
                                const rt_dataset_opts *opts, rt_error *err);

#endif
