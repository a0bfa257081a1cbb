/* rt_ckpt.h - Kiln checkpoint files: a safetensors file with Kiln's metadata contract.
 *
 * The trainer (the layer above) supplies the tensors and the metadata map; this layer
 * adds the format keys and two checksums (XXH3-64 of the data, computed while the
 * bytes are written; CRC-32 of the canonical header), writes atomically (tmp file, fsync,
 * rename, directory fsync) and, on reading, validates everything before anything is
 * trusted. Tensor names carry the role: "model.*" are weights, "optim.*" optimizer
 * state, "state.*" other training state, so a weights-only load ignores the rest.
 * docs/checkpoint-format.md is the specification; every error names the file and
 * says what to do ("---> HINT: ...").
 */
#ifndef RT_CKPT_H
#define RT_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "rt_error.h"
#include "rt_safetensors.h"

#define RT_CKPT_FORMAT "kiln-checkpoint"
#define RT_CKPT_FORMAT_VERSION 2 /* written; every older version is still read */
#define RT_CKPT_EXT ".safetensors"

/* __metadata__ keys (all values strings; "JSON" = a JSON text in the string). */
#define RT_CKPT_KEY_FORMAT "format"                 /* "kiln-checkpoint" (writer) */
#define RT_CKPT_KEY_FORMAT_VERSION "format_version" /* "2" (writer) */
#define RT_CKPT_KEY_KILN_VERSION "kiln_version"     /* "0.1.0" (writer) */
#define RT_CKPT_KEY_CREATED "created"               /* "2026-11-30T08:44:55Z" (writer default) */
#define RT_CKPT_KEY_DATA_XXH3 "data_xxh3"           /* v2: 16 hex digits, XXH3-64 (writer) */
#define RT_CKPT_KEY_DATA_CRC "data_crc32"           /* v1: 8 hex digits, CRC-32 (read only) */
#define RT_CKPT_KEY_HEADER_CRC "header_crc32"       /* 8 hex digits (writer) */
#define RT_CKPT_KEY_RUN_ID "run_id"
#define RT_CKPT_KEY_MODEL_NAME "model_name"
#define RT_CKPT_KEY_MODEL_SPEC "model_spec"         /* the %%model cell body, verbatim */
#define RT_CKPT_KEY_INPUT_SHAPE "input_shape"       /* JSON [C, H, W] */
#define RT_CKPT_KEY_HYPERPARAMS "hyperparameters"   /* JSON object */
#define RT_CKPT_KEY_DATASET "dataset"               /* JSON {"name", "sha256", ...} */
#define RT_CKPT_KEY_EPOCH "epoch"                   /* decimal, required */
#define RT_CKPT_KEY_STEP "step"                     /* decimal, required */
#define RT_CKPT_KEY_SCHEDULE "schedule"             /* JSON {"name", "step", "lr", ...} */
#define RT_CKPT_KEY_RNG "rng"                       /* JSON, the RNG's state */
#define RT_CKPT_KEY_DATA_ORDER "data_order"         /* JSON {"epoch", "position", ...} */
#define RT_CKPT_KEY_OPTIMIZER "optimizer"           /* "adam" / "sgd" / "adamw" */
#define RT_CKPT_KEY_OPTIMIZER_STEP "optimizer_step" /* decimal */
#define RT_CKPT_KEY_METRIC "metric"                 /* JSON rt_ckpt_metric, this checkpoint */
#define RT_CKPT_KEY_BEST_METRIC "best_metric"       /* JSON rt_ckpt_metric, best so far */

/* A monitored metric, e.g. {"name":"val_accuracy","value":0.91,"mode":"max","step":1200}.
 * A NaN/inf value is stored as null and reads back as has_value = 0. */
typedef struct rt_ckpt_metric {
    char name[64];
    int has_value;
    double value;
    int higher_is_better; /* mode "max" (1) or "min" (0) */
    int64_t step;         /* the step it was measured at, -1 if unknown */
} rt_ckpt_metric;

/* ---- writing ---- */
typedef struct rt_ckpt_writer rt_ckpt_writer;

RT_MUST_USE rt_status rt_ckpt_writer_create(rt_ckpt_writer **out, rt_error *err);
void rt_ckpt_writer_destroy(rt_ckpt_writer *w); /* NULL ok */
/* BORROWS data (host, little-endian, C order) until the writer is destroyed. */
RT_MUST_USE rt_status rt_ckpt_writer_add_tensor(rt_ckpt_writer *w, const char *name,
                                                rt_st_dtype dtype, int ndim, const int64_t *shape,
                                                const void *data, rt_error *err);
/* Sets a metadata entry (copied). The writer-filled keys are refused (RT_EINVAL). */
RT_MUST_USE rt_status rt_ckpt_writer_set_meta(rt_ckpt_writer *w, const char *key, const char *value,
                                              rt_error *err);
RT_MUST_USE rt_status rt_ckpt_writer_set_meta_i64(rt_ckpt_writer *w, const char *key, int64_t value,
                                                  rt_error *err);
/* value must be a JSON text (validated, stored as given). */
RT_MUST_USE rt_status rt_ckpt_writer_set_meta_json(rt_ckpt_writer *w, const char *key,
                                                   const char *json, rt_error *err);
RT_MUST_USE rt_status rt_ckpt_writer_set_metric(rt_ckpt_writer *w, const char *key,
                                                const rt_ckpt_metric *m, rt_error *err);
/* Writes the checkpoint to path atomically. "step" and "epoch" must have been set.
 * On any failure the file previously at path (if any) is untouched and no tmp file
 * remains. ENOSPC/EFBIG/EDQUOT give a "disk full" error naming the file. */
RT_MUST_USE rt_status rt_ckpt_writer_save(rt_ckpt_writer *w, const char *path, rt_error *err);
/* After a successful save: the file's data checksum (the "data_xxh3" value, 16 hex
 * digits) and its size in bytes, for a manifest that shares the checksum; NULL / 0
 * before. */
const char *rt_ckpt_writer_digest(const rt_ckpt_writer *w);
uint64_t rt_ckpt_writer_file_size(const rt_ckpt_writer *w);

/* ---- reading ---- */
typedef struct rt_ckpt_reader rt_ckpt_reader;

enum {
    RT_CKPT_OPEN_HEADER_ONLY = 1 /* read and check the header and the file size only:
                                    no tensor data, no data checksum */
};

/* Opens and validates a checkpoint: safetensors structure, format and version, header
 * and data checksums. Anything wrong is RT_EFORMAT (RT_ENOTFOUND for a missing file)
 * with a message naming the file. */
RT_MUST_USE rt_status rt_ckpt_reader_open(const char *path, unsigned flags, rt_ckpt_reader **out,
                                          rt_error *err);
void rt_ckpt_reader_destroy(rt_ckpt_reader *r); /* NULL ok */
const char *rt_ckpt_reader_path(const rt_ckpt_reader *r);
uint64_t rt_ckpt_reader_file_size(const rt_ckpt_reader *r);
size_t rt_ckpt_reader_tensor_count(const rt_ckpt_reader *r);
/* Tensors in data order; borrowed. NULL when out of range / not found. */
const rt_st_tensor_info *rt_ckpt_reader_tensor_at(const rt_ckpt_reader *r, size_t i);
const rt_st_tensor_info *rt_ckpt_reader_find(const rt_ckpt_reader *r, const char *name);
/* Copies tensor `name` into dst (dst_bytes long) after checking that it exists
 * (RT_ENOTFOUND) and has exactly this dtype and shape (RT_EFORMAT, message shows both
 * shapes). Not available on a header-only reader (RT_EINVAL). */
RT_MUST_USE rt_status rt_ckpt_reader_get(const rt_ckpt_reader *r, const char *name,
                                         rt_st_dtype dtype, int ndim, const int64_t *shape,
                                         void *dst, size_t dst_bytes, rt_error *err);
/* Metadata value or NULL; borrowed. Entries in key order via count/at. */
const char *rt_ckpt_reader_meta(const rt_ckpt_reader *r, const char *key);
size_t rt_ckpt_reader_meta_count(const rt_ckpt_reader *r);
void rt_ckpt_reader_meta_at(const rt_ckpt_reader *r, size_t i, const char **key,
                            const char **value);
/* Typed getters: RT_ENOTFOUND if absent, RT_EFORMAT if malformed (message names both
 * the file and the key). */
RT_MUST_USE rt_status rt_ckpt_reader_meta_i64(const rt_ckpt_reader *r, const char *key,
                                              int64_t *out, rt_error *err);
RT_MUST_USE rt_status rt_ckpt_reader_metric(const rt_ckpt_reader *r, const char *key,
                                            rt_ckpt_metric *out, rt_error *err);

#endif
