/* ckpt_tool.c - a small command line over the checkpoint layer for test_interop.py:
 *   ckpt_tool write-ref PATH     a Kiln checkpoint with fixed contents (all dtypes used)
 *   ckpt_tool write-plain PATH   the same tensors as plain safetensors, one metadata key
 *   ckpt_tool dump PATH          open as a Kiln checkpoint, print tensors + metadata JSON
 *   ckpt_tool st-dump PATH       open as plain safetensors, print the same JSON
 * Errors go to stderr with exit status 1. A test program, so it may exit(). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ck_util.h"
#include "rt_ckpt.h"
#include "rt_ckpt_internal.h"

typedef struct {
    const char *name;
    rt_st_dtype dtype;
    int ndim;
    int64_t shape[4];
    const void *data;
} ref_tensor;

static float conv_w[36], conv_b[4], scalar = 2.5f, moment[36];
static int64_t rng[3] = {1, -2, (int64_t)1 << 40};
static uint8_t order[5] = {4, 3, 2, 1, 0};
static double f64[2] = {0.1, -1e300};

static const ref_tensor refs[] = {
    {"model.conv.weight", RT_ST_F32, 4, {4, 1, 3, 3}, conv_w},
    {"model.conv.bias", RT_ST_F32, 1, {4}, conv_b},
    {"model.scalar", RT_ST_F32, 0, {0}, &scalar},
    {"model.empty", RT_ST_F32, 2, {0, 3}, NULL},
    {"optim.m.conv.weight", RT_ST_F32, 4, {4, 1, 3, 3}, moment},
    {"state.rng", RT_ST_I64, 1, {3}, rng},
    {"state.order", RT_ST_U8, 1, {5}, order},
    {"state.f64", RT_ST_F64, 1, {2}, f64},
};
#define NREFS (sizeof refs / sizeof *refs)

static void fill(void)
{
    for (int i = 0; i < 36; i++) {
        conv_w[i] = (float)i * 0.5f - 3.0f;
        moment[i] = -(float)i / 8.0f;
    }
    for (int i = 0; i < 4; i++) conv_b[i] = 0.125f * (float)i;
}

static void die(const rt_error *err)
{
    fprintf(stderr, "%s\n", err->msg);
    exit(1);
}

static void write_ref(const char *path)
{
    rt_ckpt_writer *w = NULL;
    rt_error err;
    if (rt_ckpt_writer_create(&w, &err)) die(&err);
    for (size_t i = 0; i < NREFS; i++)
        if (rt_ckpt_writer_add_tensor(w, refs[i].name, refs[i].dtype, refs[i].ndim, refs[i].shape,
                                      refs[i].data, &err))
            die(&err);
    rt_ckpt_metric m = {
        .name = "val_accuracy", .has_value = 1, .value = 0.8125, .higher_is_better = 1, .step = 77};
    if (rt_ckpt_writer_set_meta_i64(w, "step", 77, &err) ||
        rt_ckpt_writer_set_meta_i64(w, "epoch", 3, &err) ||
        rt_ckpt_writer_set_meta(w, "created", "2026-01-02T03:04:05Z", &err) ||
        rt_ckpt_writer_set_meta(w, "run_id", "run-\xc3\xa9t\xc3\xa9", &err) ||
        rt_ckpt_writer_set_meta(w, "model_spec", "conv2d 4 3\n\trelu\n\"q\" \\ /", &err) ||
        rt_ckpt_writer_set_meta_json(w, "hyperparameters",
                                     "{\"lr\":0.001,\"batch\":128,\"optimizer\":\"adam\"}", &err) ||
        rt_ckpt_writer_set_meta_json(w, "rng", "{\"seed\":\"42\",\"counter\":\"1099511627776\"}",
                                     &err) ||
        rt_ckpt_writer_set_meta(w, "optimizer", "adam", &err) ||
        rt_ckpt_writer_set_metric(w, "metric", &m, &err) || rt_ckpt_writer_save(w, path, &err))
        die(&err);
    rt_ckpt_writer_destroy(w);
}

static rt_status file_sink(void *user, const void *buf, size_t len, rt_error *err)
{
    return rtp_ckpt_file_write(user, buf, len, err);
}

static void write_plain(const char *path)
{
    rt_st_writer *w = NULL;
    rt_error err;
    rtp_ckpt_file f;
    if (rt_st_writer_create(&w, &err)) die(&err);
    for (size_t i = 0; i < NREFS; i++)
        if (rt_st_writer_add(w, refs[i].name, refs[i].dtype, refs[i].ndim, refs[i].shape,
                             refs[i].data, &err))
            die(&err);
    if (rt_st_writer_set_meta(w, "framework", "kiln", &err) || rtp_ckpt_file_begin(&f, path, &err))
        die(&err);
    if (rt_st_writer_emit(w, file_sink, &f, &err)) {
        rtp_ckpt_file_abort(&f);
        die(&err);
    }
    if (rtp_ckpt_file_commit(&f, &err)) die(&err);
    rt_st_writer_destroy(w);
}

/* {"tensors": {name: {dtype, shape, hex}}, "metadata": {...}} on stdout. */
static void dump(size_t n, const rt_st_tensor_info *(*at)(const void *, size_t), const void *src,
                 const uint8_t *data, size_t nmeta,
                 void (*meta)(const void *, size_t, const char **, const char **))
{
    json_t *root = json_object(), *tensors = json_object(), *md = json_object();
    for (size_t i = 0; i < n; i++) {
        const rt_st_tensor_info *t = at(src, i);
        json_t *shape = json_array();
        for (int d = 0; d < t->ndim; d++) json_array_append_new(shape, json_integer(t->shape[d]));
        size_t len = (size_t)(t->end - t->begin);
        char *hex = malloc(2 * len + 1);
        for (size_t k = 0; k < len; k++) sprintf(hex + 2 * k, "%02x", data[t->begin + k]);
        hex[2 * len] = '\0';
        json_object_set_new(tensors, t->name,
                            json_pack("{s:s,s:o,s:s}", "dtype", rt_st_dtype_name(t->dtype), "shape",
                                      shape, "hex", hex));
        free(hex);
    }
    for (size_t i = 0; i < nmeta; i++) {
        const char *k, *v;
        meta(src, i, &k, &v);
        json_object_set_new(md, k, json_string(v));
    }
    json_object_set_new(root, "tensors", tensors);
    json_object_set_new(root, "metadata", md);
    json_dumpf(root, stdout, JSON_SORT_KEYS);
    putchar('\n');
    json_decref(root);
}

static const rt_st_tensor_info *ix_at(const void *ix, size_t i)
{
    return rt_st_index_tensor(ix, i);
}
static void ix_meta(const void *ix, size_t i, const char **k, const char **v)
{
    rt_st_index_meta_at(ix, i, k, v);
}

static void st_dump(const char *path)
{
    rt_error err;
    size_t size;
    uint64_t n;
    rt_st_index *ix = NULL;
    uint8_t *buf = ck_read(path, &size);
    if (!buf) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(1);
    }
    if (rt_st_prefix_check(buf, size, path, &n, &err) ||
        rt_st_index_parse((const char *)buf + 8, n, size - 8 - n, path, &ix, &err))
        die(&err);
    dump(rt_st_index_count(ix), ix_at, ix, buf + 8 + n, rt_st_index_meta_count(ix), ix_meta);
    rt_st_index_destroy(ix);
    free(buf);
}

static const rt_st_tensor_info *rd_at(const void *r, size_t i)
{
    return rt_ckpt_reader_tensor_at(r, i);
}
static void rd_meta(const void *r, size_t i, const char **k, const char **v)
{
    rt_ckpt_reader_meta_at(r, i, k, v);
}

static void ckpt_dump(const char *path)
{
    rt_error err;
    rt_ckpt_reader *r = NULL;
    if (rt_ckpt_reader_open(path, 0, &r, &err)) die(&err);
    /* copy every tensor out through the checked getter into one buffer */
    size_t n = rt_ckpt_reader_tensor_count(r), total = 0;
    for (size_t i = 0; i < n; i++) total += (size_t)(rd_at(r, i)->end - rd_at(r, i)->begin);
    uint8_t *data = malloc(total + 1);
    for (size_t i = 0; i < n; i++) {
        const rt_st_tensor_info *t = rd_at(r, i);
        if (rt_ckpt_reader_get(r, t->name, t->dtype, t->ndim, t->shape, data + t->begin,
                               (size_t)(t->end - t->begin), &err))
            die(&err);
    }
    dump(n, rd_at, r, data, rt_ckpt_reader_meta_count(r), rd_meta);
    free(data);
    rt_ckpt_reader_destroy(r);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: ckpt_tool write-ref|write-plain|dump|st-dump PATH\n");
        return 2;
    }
    fill();
    if (strcmp(argv[1], "write-ref") == 0) write_ref(argv[2]);
    else if (strcmp(argv[1], "write-plain") == 0) write_plain(argv[2]);
    else if (strcmp(argv[1], "dump") == 0) ckpt_dump(argv[2]);
    else if (strcmp(argv[1], "st-dump") == 0) st_dump(argv[2]);
    else return 2;
    return 0;
}
