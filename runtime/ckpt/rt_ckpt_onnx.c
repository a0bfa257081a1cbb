/* rt_ckpt_onnx.c - a run directory's newest checkpoint as an ONNX file (rt_onnx.h's
 * rt_onnx_write_run): what `kiln export` does, with no session and no data set.
 *
 * Everything comes from the checkpoint: the model is rebuilt from its canonical spec
 * (or the spec as written), input shape and class count, on the CPU with a batch of
 * one; the weights are loaded by name and shape (rt_ckpt_train_load_model); the
 * normalisation (mean, std) and class names come from the data-set record when the
 * run wrote them. A checkpoint without them still exports, with the normalisation
 * left to the user (the metadata says so).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "rt_ckpt_dir.h"
#include "rt_ckpt_train.h"
#include "rt_onnx.h"

/* The checkpoint to read: run_dir itself when it is a file, else its newest valid one. */
static rt_status pick(const char *run_dir, char **path, rt_error *err)
{
    struct stat st;
    if (stat(run_dir, &st) != 0)
        return RT_ERR(err, errno == ENOENT ? RT_ENOTFOUND : RT_EIO,
                      "cannot read run "
                      "directory %s: %s",
                      run_dir, strerror(errno));
    if (!S_ISDIR(st.st_mode)) {
        *path = strdup(run_dir);
        return *path ? RT_OK : RT_ERR(err, RT_ENOMEM, "out of memory");
    }
    char *skipped = NULL;
    rt_status s = rt_ckpt_dir_latest(run_dir, path, &skipped, err);
    free(skipped);
    return s;
}

/* input_shape [C, H, W] and num_classes from the metadata. */
static rt_status input_of(const rt_ckpt_reader *r, rt_model_input *in, rt_error *err)
{
    const char *shape = rt_ckpt_reader_meta(r, RT_CKPT_KEY_INPUT_SHAPE);
    json_t *j = shape ? json_loads(shape, 0, NULL) : NULL;
    int ok = j && json_is_array(j) && json_array_size(j) == 3;
    int v[3] = {0, 0, 0};
    for (int i = 0; ok && i < 3; i++) {
        json_t *d = json_array_get(j, (size_t)i);
        ok = json_is_integer(d) && json_integer_value(d) > 0 && json_integer_value(d) <= 1 << 20;
        if (ok) v[i] = (int)json_integer_value(d);
    }
    json_decref(j);
    int64_t classes = 0;
    if (!ok || rt_ckpt_reader_meta_i64(r, RT_CKPT_KEY_NUM_CLASSES, &classes, NULL) != RT_OK ||
        classes < 1 || classes > 1 << 20)
        return RT_ERR(err, RT_EFORMAT,
                      "%s has no usable input shape and class count, so the "
                      "model cannot be rebuilt ---> HINT: export from a checkpoint written by "
                      "%%train",
                      rt_ckpt_reader_path(r));
    *in = (rt_model_input){.c = v[0], .h = v[1], .w = v[2], .num_classes = (int)classes};
    return RT_OK;
}

/* The data-set record's normalisation and class names, when present and well formed. */
typedef struct ds_record {
    json_t *root;
    float mean[4], std[4];
    int has_norm;
    const char **names; /* num_classes entries, borrowed from root; NULL if absent */
    const char *name;
} ds_record;

static rt_status dataset_of(const rt_ckpt_reader *r, int c, int classes, ds_record *d,
                            rt_error *err)
{
    memset(d, 0, sizeof *d);
    const char *text = rt_ckpt_reader_meta(r, RT_CKPT_KEY_DATASET);
    d->root = text ? json_loads(text, 0, NULL) : NULL;
    if (!json_is_object(d->root)) return RT_OK;
    d->name = json_string_value(json_object_get(d->root, "name"));
    json_t *mean = json_object_get(d->root, "mean"), *std = json_object_get(d->root, "std");
    d->has_norm = c <= 4 && json_is_array(mean) && json_is_array(std) &&
                  json_array_size(mean) == (size_t)c && json_array_size(std) == (size_t)c;
    for (int i = 0; d->has_norm && i < c; i++) {
        json_t *a = json_array_get(mean, (size_t)i), *b = json_array_get(std, (size_t)i);
        d->has_norm = json_is_number(a) && json_is_number(b) && json_number_value(b) > 0;
        if (d->has_norm)
            d->mean[i] = (float)json_number_value(a), d->std[i] = (float)json_number_value(b);
    }
    json_t *names = json_object_get(d->root, "classes");
    if (!json_is_array(names) || json_array_size(names) != (size_t)classes) return RT_OK;
    d->names = calloc((size_t)classes, sizeof *d->names);
    if (!d->names) return RT_ERR(err, RT_ENOMEM, "out of memory");
    for (int i = 0; i < classes; i++)
        if (!(d->names[i] = json_string_value(json_array_get(names, (size_t)i)))) {
            free(d->names);
            d->names = NULL;
            break;
        }
    return RT_OK;
}

rt_status rt_onnx_model_load(const rt_ckpt_reader *r, rt_backend *b, int max_batch, rt_model **out,
                             rt_error *err)
{
    *out = NULL;
    const char *spec = rt_ckpt_reader_meta(r, RT_CKPT_KEY_SPEC_CANONICAL);
    if (!spec) spec = rt_ckpt_reader_meta(r, RT_CKPT_KEY_MODEL_SPEC);
    if (!spec)
        return RT_ERR(err, RT_EFORMAT,
                      "%s has no model spec, so the model cannot be rebuilt "
                      "---> HINT: export from a checkpoint written by %%train",
                      rt_ckpt_reader_path(r));
    rt_model_input in;
    RT_TRY(input_of(r, &in, err));
    rt_model *m = NULL;
    rt_status s = rt_model_create(&m, spec, &in, err);
    if (s == RT_OK) s = rt_model_attach(m, b, max_batch, 0, err);
    if (s == RT_OK) s = rt_ckpt_train_load_model(r, m, err);
    if (s == RT_OK) *out = m;
    else rt_model_destroy(m);
    return s;
}

static rt_status export_reader(const rt_ckpt_reader *r, const char *path, rt_error *err)
{
    rt_backend b = {0};
    rt_model *m = NULL;
    RT_TRY(rt_backend_open(&b, "cpu", 1, err));
    rt_status s = rt_onnx_model_load(r, &b, 1, &m, err);
    ds_record d = {0};
    if (s == RT_OK) {
        const rt_model_input *in = rt_model_input_shape(m);
        s = dataset_of(r, in->c, in->num_classes, &d, err);
    }
    if (s == RT_OK) {
        rt_onnx_info info = {.model_name = rt_ckpt_reader_meta(r, RT_CKPT_KEY_MODEL_NAME),
                             .dataset = d.name,
                             .mean = d.has_norm ? d.mean : NULL,
                             .std = d.has_norm ? d.std : NULL,
                             .class_names = d.names,
                             .source = rt_ckpt_reader_path(r)};
        s = rt_onnx_write(m, &info, path, err);
    }
    rt_model_destroy(m);
    rt_backend_close(&b);
    free(d.names);
    json_decref(d.root);
    return s;
}

rt_status rt_onnx_write_run(const char *run_dir, const char *path, char **used, rt_error *err)
{
    char *ckpt = NULL;
    rt_ckpt_reader *r = NULL;
    rt_status s = pick(run_dir, &ckpt, err);
    if (s == RT_OK) s = rt_ckpt_reader_open(ckpt, 0, &r, err);
    if (s == RT_OK) s = export_reader(r, path, err);
    rt_ckpt_reader_destroy(r);
    if (s == RT_OK && used) *used = ckpt;
    else free(ckpt);
    return s;
}
