/* ck_util.h - helpers shared by the checkpoint tests: temp dirs, whole-file I/O and a
 * small sample checkpoint ("model.*" weights, "optim.*" Adam moments, "state.*" ints)
 * whose values depend on the step, so a test can tell which save a file holds. */
#ifndef CK_UTIL_H
#define CK_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_ckpt.h"

static inline int ck_tmpdir(char *buf, size_t cap)
{
    const char *t = getenv("TMPDIR");
    snprintf(buf, cap, "%s/kiln-ckpt-XXXXXX", t && *t ? t : "/tmp");
    return mkdtemp(buf) ? 0 : -1;
}

/* For tests that save thousands of times: a memory file system when there is one
 * (each save fsyncs; on a disk that is seconds of waiting, and the suite must stay
 * fast), else as ck_tmpdir. */
static inline int ck_tmpdir_fast(char *buf, size_t cap)
{
    if (!getenv("TMPDIR") && access("/dev/shm", W_OK) == 0) {
        snprintf(buf, cap, "/dev/shm/kiln-ckpt-XXXXXX");
        if (mkdtemp(buf)) return 0;
    }
    return ck_tmpdir(buf, cap);
}

static inline int ck_rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
    (void)sb;
    (void)flag;
    (void)f;
    return remove(p);
}

static inline void ck_rmrf(const char *dir) { nftw(dir, ck_rm_one, 16, FTW_DEPTH | FTW_PHYS); }

/* Whole file into a malloc'd buffer (caller frees); NULL on failure. */
static inline unsigned char *ck_read(const char *path, size_t *len)
{
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

static inline int ck_write(const char *path, const void *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(buf, 1, len, f) == len;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static inline int ck_exists(const char *path) { return access(path, F_OK) == 0; }

/* ---- the sample checkpoint ---- */
#define CK_W_N (8 * 1 * 3 * 3)
#define CK_B_N 8
#define CK_FC_N (10 * 32)

typedef struct ck_sample {
    float w[CK_W_N], b[CK_B_N], fc[CK_FC_N]; /* model.* */
    float m[CK_W_N], v[CK_W_N];              /* optim.* */
    int64_t rng[4];                          /* state.rng */
    uint8_t order[16];                       /* state.order */
} ck_sample;

static const int64_t ck_w_shape[4] = {8, 1, 3, 3}, ck_b_shape[1] = {8}, ck_fc_shape[2] = {10, 32},
                     ck_rng_shape[1] = {4}, ck_order_shape[1] = {16};

static inline void ck_sample_fill(ck_sample *s, int64_t step)
{
    for (int i = 0; i < CK_W_N; i++) {
        s->w[i] = (float)step + 0.25f * (float)i;
        s->m[i] = -(float)i / 7.0f;
        s->v[i] = (float)i * 1e-3f + (float)step;
    }
    for (int i = 0; i < CK_B_N; i++) s->b[i] = (float)(step * 3 - i);
    for (int i = 0; i < CK_FC_N; i++) s->fc[i] = (float)((i * 37 + step) % 101) / 13.0f;
    for (int i = 0; i < 4; i++) s->rng[i] = (int64_t)0x0123456789abcdefLL * (i + 1) + step;
    for (int i = 0; i < 16; i++) s->order[i] = (uint8_t)(15 - i + step);
}

/* Saves the sample for `step` to path, with metric val_accuracy = value (mode max) or
 * val_loss = value (mode min). */
static inline rt_status ck_save_sample_mode(const char *path, int64_t step, double value,
                                            int higher_is_better, ck_sample *s, rt_error *err)
{
    rt_ckpt_writer *w = NULL;
    ck_sample_fill(s, step);
    rt_status st = rt_ckpt_writer_create(&w, err);
    if (st != RT_OK) return st;
    rt_ckpt_metric m = {
        .has_value = 1, .value = value, .higher_is_better = higher_is_better, .step = step};
    snprintf(m.name, sizeof m.name, higher_is_better ? "val_accuracy" : "val_loss");
    if (!st)
        st =
            rt_ckpt_writer_add_tensor(w, "model.conv1.weight", RT_ST_F32, 4, ck_w_shape, s->w, err);
    if (!st)
        st = rt_ckpt_writer_add_tensor(w, "model.conv1.bias", RT_ST_F32, 1, ck_b_shape, s->b, err);
    if (!st)
        st = rt_ckpt_writer_add_tensor(w, "model.fc.weight", RT_ST_F32, 2, ck_fc_shape, s->fc, err);
    if (!st)
        st = rt_ckpt_writer_add_tensor(w, "optim.m.conv1.weight", RT_ST_F32, 4, ck_w_shape, s->m,
                                       err);
    if (!st)
        st = rt_ckpt_writer_add_tensor(w, "optim.v.conv1.weight", RT_ST_F32, 4, ck_w_shape, s->v,
                                       err);
    if (!st)
        st = rt_ckpt_writer_add_tensor(w, "state.rng", RT_ST_I64, 1, ck_rng_shape, s->rng, err);
    if (!st)
        st =
            rt_ckpt_writer_add_tensor(w, "state.order", RT_ST_U8, 1, ck_order_shape, s->order, err);
    if (!st) st = rt_ckpt_writer_set_meta_i64(w, RT_CKPT_KEY_STEP, step, err);
    if (!st) st = rt_ckpt_writer_set_meta_i64(w, RT_CKPT_KEY_EPOCH, step / 100, err);
    if (!st) st = rt_ckpt_writer_set_meta(w, RT_CKPT_KEY_RUN_ID, "run-test-1", err);
    if (!st)
        st = rt_ckpt_writer_set_meta(w, RT_CKPT_KEY_MODEL_SPEC,
                                     "conv2d 8 3\nrelu\nflatten\ndense 10\n", err);
    if (!st) st = rt_ckpt_writer_set_meta_json(w, RT_CKPT_KEY_INPUT_SHAPE, "[1,28,28]", err);
    if (!st)
        st = rt_ckpt_writer_set_meta_json(
            w, RT_CKPT_KEY_HYPERPARAMS, "{\"lr\":0.001,\"batch\":64,\"optimizer\":\"adam\"}", err);
    if (!st) st = rt_ckpt_writer_set_meta(w, RT_CKPT_KEY_OPTIMIZER, "adam", err);
    if (!st) st = rt_ckpt_writer_set_meta_i64(w, RT_CKPT_KEY_OPTIMIZER_STEP, step, err);
    if (!st) st = rt_ckpt_writer_set_metric(w, RT_CKPT_KEY_METRIC, &m, err);
    if (!st) st = rt_ckpt_writer_save(w, path, err);
    rt_ckpt_writer_destroy(w);
    return st;
}

static inline rt_status ck_save_sample_metric(const char *path, int64_t step, double acc,
                                              ck_sample *s, rt_error *err)
{
    return ck_save_sample_mode(path, step, acc, 1, s, err);
}

static inline rt_status ck_save_sample(const char *path, int64_t step, rt_error *err)
{
    ck_sample s;
    return ck_save_sample_metric(path, step, 0.5, &s, err);
}

/* 1 when path opens, validates and holds exactly the sample for `step`. */
static inline int ck_holds_step(const char *path, int64_t step)
{
    ck_sample want, got;
    ck_sample_fill(&want, step);
    rt_ckpt_reader *r = NULL;
    rt_error err;
    if (rt_ckpt_reader_open(path, 0, &r, &err) != RT_OK) return 0;
    int ok = rt_ckpt_reader_get(r, "model.conv1.weight", RT_ST_F32, 4, ck_w_shape, got.w,
                                sizeof got.w, &err) == RT_OK &&
             rt_ckpt_reader_get(r, "optim.v.conv1.weight", RT_ST_F32, 4, ck_w_shape, got.v,
                                sizeof got.v, &err) == RT_OK &&
             memcmp(got.w, want.w, sizeof got.w) == 0 && memcmp(got.v, want.v, sizeof got.v) == 0;
    int64_t s = -1;
    ok = ok && rt_ckpt_reader_meta_i64(r, RT_CKPT_KEY_STEP, &s, &err) == RT_OK && s == step;
    rt_ckpt_reader_destroy(r);
    return ok;
}

#endif
