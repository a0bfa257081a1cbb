/* test_ckpt_roundtrip.c - save a checkpoint, read everything back, and the API's
 * refusals: wrong shapes/dtypes on load, reserved keys, missing step, bad JSON. */
#include "ck_util.h"

#include <math.h>

#include "rt_ckpt.h"
#include "t.h"

static char dir[256], path[512];

T_TEST(round_trip)
{
    ck_sample s, got;
    rt_error err;
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    ASSERT_EQ(ck_save_sample_metric(path, 1234, 0.875, &s, &err), RT_OK);
    ASSERT(!ck_exists(tmp));
    rt_ckpt_reader *r = NULL;
    ASSERT_EQ(rt_ckpt_reader_open(path, 0, &r, &err), RT_OK);
    ASSERT_EQ(rt_ckpt_reader_tensor_count(r), 7);
    /* data order: I64, then F32 by name, then U8 (the reference's order) */
    ASSERT_STR_EQ(rt_ckpt_reader_tensor_at(r, 0)->name, "state.rng");
    ASSERT_STR_EQ(rt_ckpt_reader_tensor_at(r, 1)->name, "model.conv1.bias");
    ASSERT_STR_EQ(rt_ckpt_reader_tensor_at(r, 6)->name, "state.order");
    ASSERT(rt_ckpt_reader_get(r, "model.conv1.weight", RT_ST_F32, 4, ck_w_shape, got.w,
                              sizeof got.w, &err) == RT_OK);
    ASSERT(rt_ckpt_reader_get(r, "model.conv1.bias", RT_ST_F32, 1, ck_b_shape, got.b, sizeof got.b,
                              &err) == RT_OK);
    ASSERT(rt_ckpt_reader_get(r, "model.fc.weight", RT_ST_F32, 2, ck_fc_shape, got.fc,
                              sizeof got.fc, &err) == RT_OK);
    ASSERT(rt_ckpt_reader_get(r, "optim.m.conv1.weight", RT_ST_F32, 4, ck_w_shape, got.m,
                              sizeof got.m, &err) == RT_OK);
    ASSERT(rt_ckpt_reader_get(r, "optim.v.conv1.weight", RT_ST_F32, 4, ck_w_shape, got.v,
                              sizeof got.v, &err) == RT_OK);
    ASSERT(rt_ckpt_reader_get(r, "state.rng", RT_ST_I64, 1, ck_rng_shape, got.rng, sizeof got.rng,
                              &err) == RT_OK);
    ASSERT(rt_ckpt_reader_get(r, "state.order", RT_ST_U8, 1, ck_order_shape, got.order,
                              sizeof got.order, &err) == RT_OK);
    ASSERT(memcmp(&s, &got, sizeof s) == 0);
    int64_t v;
    ASSERT_EQ(rt_ckpt_reader_meta_i64(r, "step", &v, &err), RT_OK);
    ASSERT_EQ(v, 1234);
    ASSERT_EQ(rt_ckpt_reader_meta_i64(r, "epoch", &v, &err), RT_OK);
    ASSERT_EQ(v, 12);
    ASSERT_STR_EQ(rt_ckpt_reader_meta(r, "format"), "kiln-checkpoint");
    ASSERT_STR_EQ(rt_ckpt_reader_meta(r, "format_version"), "2");
    ASSERT_STR_EQ(rt_ckpt_reader_meta(r, "model_spec"), "conv2d 8 3\nrelu\nflatten\ndense 10\n");
    ASSERT_STR_EQ(rt_ckpt_reader_meta(r, "input_shape"), "[1,28,28]");
    ASSERT_EQ(strlen(rt_ckpt_reader_meta(r, "data_xxh3")), 16);
    ASSERT(rt_ckpt_reader_meta(r, "data_crc32") == NULL); /* v1's key is not written */
    ASSERT_EQ(strlen(rt_ckpt_reader_meta(r, "header_crc32")), 8);
    ASSERT_EQ(strlen(rt_ckpt_reader_meta(r, "created")), 20); /* 2026-11-30T08:44:55Z */
    rt_ckpt_metric m;
    ASSERT_EQ(rt_ckpt_reader_metric(r, "metric", &m, &err), RT_OK);
    ASSERT_STR_EQ(m.name, "val_accuracy");
    ASSERT(m.has_value && m.value == 0.875 && m.higher_is_better && m.step == 1234);
    ASSERT(rt_ckpt_reader_meta(r, "nope") == NULL);
    ASSERT_EQ(rt_ckpt_reader_meta_i64(r, "nope", &v, &err), RT_ENOTFOUND);
    ASSERT_EQ(rt_ckpt_reader_meta_i64(r, "run_id", &v, &err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, path);
    /* meta_at walks keys in order */
    const char *k0, *k1, *val;
    rt_ckpt_reader_meta_at(r, 0, &k0, &val);
    for (size_t i = 1; i < rt_ckpt_reader_meta_count(r); i++, k0 = k1) {
        rt_ckpt_reader_meta_at(r, i, &k1, &val);
        ASSERT(strcmp(k0, k1) < 0);
    }
    rt_ckpt_reader_destroy(r);
}

T_TEST(load_refuses_wrong_shape_dtype_and_missing)
{
    rt_error err;
    float buf[CK_W_N];
    ASSERT_EQ(ck_save_sample(path, 7, &err), RT_OK);
    rt_ckpt_reader *r = NULL;
    ASSERT_EQ(rt_ckpt_reader_open(path, 0, &r, &err), RT_OK);
    int64_t other[4] = {4, 1, 3, 3};
    ASSERT_EQ(rt_ckpt_reader_get(r, "model.conv1.weight", RT_ST_F32, 4, other, buf,
                                 4 * 9 * sizeof(float), &err),
              RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, path);
    ASSERT_STR_CONTAINS(err.msg, "[8,1,3,3]");
    ASSERT_STR_CONTAINS(err.msg, "[4,1,3,3]");
    ASSERT_STR_CONTAINS(err.msg, "HINT");
    int64_t flat[1] = {CK_W_N};
    ASSERT_EQ(
        rt_ckpt_reader_get(r, "model.conv1.weight", RT_ST_F32, 1, flat, buf, sizeof buf, &err),
        RT_EFORMAT);
    ASSERT_EQ(rt_ckpt_reader_get(r, "model.conv1.weight", RT_ST_I32, 4, ck_w_shape, buf, sizeof buf,
                                 &err),
              RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, "F32");
    ASSERT_EQ(rt_ckpt_reader_get(r, "model.conv1.weight", RT_ST_F32, 4, ck_w_shape, buf,
                                 sizeof buf - 4, &err),
              RT_EINVAL);
    ASSERT_EQ(rt_ckpt_reader_get(r, "model.conv2.weight", RT_ST_F32, 4, ck_w_shape, buf, sizeof buf,
                                 &err),
              RT_ENOTFOUND);
    ASSERT_STR_CONTAINS(err.msg, "model.conv2.weight");
    ASSERT_STR_CONTAINS(err.msg, path);
    rt_ckpt_reader_destroy(r);
}

T_TEST(header_only_open)
{
    rt_error err;
    float buf[CK_W_N];
    ASSERT_EQ(ck_save_sample(path, 8, &err), RT_OK);
    rt_ckpt_reader *r = NULL;
    ASSERT_EQ(rt_ckpt_reader_open(path, RT_CKPT_OPEN_HEADER_ONLY, &r, &err), RT_OK);
    ASSERT_EQ(rt_ckpt_reader_tensor_count(r), 7);
    ASSERT(rt_ckpt_reader_find(r, "model.fc.weight") != NULL);
    ASSERT_EQ(rt_ckpt_reader_get(r, "model.conv1.weight", RT_ST_F32, 4, ck_w_shape, buf, sizeof buf,
                                 &err),
              RT_EINVAL);
    size_t len;
    unsigned char *bytes = ck_read(path, &len);
    ASSERT(bytes);
    ASSERT_EQ(rt_ckpt_reader_file_size(r), len);
    free(bytes);
    rt_ckpt_reader_destroy(r);
}

T_TEST(writer_refusals)
{
    rt_ckpt_writer *w = NULL;
    rt_error err;
    float x[4] = {0};
    int64_t shape[1] = {4}, neg[1] = {-4};
    ASSERT_EQ(rt_ckpt_writer_create(&w, &err), RT_OK);
    ASSERT_EQ(rt_ckpt_writer_set_meta(w, "format_version", "2", &err), RT_EINVAL);
    ASSERT_EQ(rt_ckpt_writer_set_meta(w, "data_crc32", "00000000", &err), RT_EINVAL);
    ASSERT_EQ(rt_ckpt_writer_set_meta(w, "data_xxh3", "0000000000000000", &err), RT_EINVAL);
    ASSERT_EQ(rt_ckpt_writer_set_meta_json(w, "hyperparameters", "{lr: 1}", &err), RT_EINVAL);
    ASSERT_EQ(rt_ckpt_writer_set_meta(w, "bad", "\xff\xfe", &err), RT_EINVAL);
    ASSERT_EQ(rt_ckpt_writer_add_tensor(w, "model.x", RT_ST_F32, 1, shape, x, &err), RT_OK);
    ASSERT_EQ(rt_ckpt_writer_add_tensor(w, "model.x", RT_ST_F32, 1, shape, x, &err), RT_EINVAL);
    ASSERT_EQ(rt_ckpt_writer_add_tensor(w, "__metadata__", RT_ST_F32, 1, shape, x, &err),
              RT_EINVAL);
    ASSERT_EQ(rt_ckpt_writer_add_tensor(w, "model.y", RT_ST_F32, 1, neg, x, &err), RT_EINVAL);
    ASSERT_EQ(rt_ckpt_writer_add_tensor(w, "model.z", RT_ST_F32, 9, shape, x, &err), RT_EINVAL);
    ASSERT_EQ(rt_ckpt_writer_save(w, path, &err), RT_EINVAL); /* no step/epoch */
    ASSERT_STR_CONTAINS(err.msg, "step");
    ASSERT_EQ(rt_ckpt_writer_set_meta(w, "step", "-3", &err), RT_OK);
    ASSERT_EQ(rt_ckpt_writer_set_meta(w, "epoch", "0", &err), RT_OK);
    ASSERT_EQ(rt_ckpt_writer_save(w, path, &err), RT_EINVAL);
    ASSERT_EQ(rt_ckpt_writer_set_meta(w, "step", "3", &err), RT_OK);
    rt_ckpt_metric nan = {.name = "val_loss", .has_value = 1, .value = NAN, .step = 3};
    ASSERT_EQ(rt_ckpt_writer_set_metric(w, "metric", &nan, &err), RT_OK);
    ASSERT_EQ(rt_ckpt_writer_save(w, path, &err), RT_OK);
    rt_ckpt_writer_destroy(w);
    rt_ckpt_reader *r = NULL;
    ASSERT_EQ(rt_ckpt_reader_open(path, 0, &r, &err), RT_OK);
    rt_ckpt_metric m;
    ASSERT_EQ(rt_ckpt_reader_metric(r, "metric", &m, &err), RT_OK);
    ASSERT(!m.has_value && !m.higher_is_better);
    ASSERT_STR_EQ(m.name, "val_loss");
    rt_ckpt_reader_destroy(r);
}

T_TEST(overwrite_replaces_and_leaves_no_tmp)
{
    rt_error err;
    ASSERT_EQ(ck_save_sample(path, 100, &err), RT_OK);
    ASSERT_EQ(ck_save_sample(path, 200, &err), RT_OK);
    ASSERT(ck_holds_step(path, 200));
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    ASSERT(!ck_exists(tmp));
    /* a stale tmp from a crashed save does not block the next save */
    ASSERT_EQ(ck_write(tmp, "junk", 4), 0);
    ASSERT_EQ(ck_save_sample(path, 300, &err), RT_OK);
    ASSERT(ck_holds_step(path, 300));
    ASSERT(!ck_exists(tmp));
}

/* The writer hands out the data checksum and size it wrote (a manifest shares them). */
T_TEST(writer_reports_digest_and_size)
{
    rt_ckpt_writer *w = NULL;
    rt_ckpt_reader *r = NULL;
    rt_error err;
    static float big[3 << 18]; /* 3 MiB: several 1 MiB pieces, the last one partial */
    for (size_t i = 0; i < sizeof big / sizeof *big; i++) big[i] = (float)i * 0.5f;
    int64_t shape[1] = {(int64_t)(sizeof big / sizeof *big) - 7}, one[1] = {7};
    ASSERT_EQ(rt_ckpt_writer_create(&w, &err), RT_OK);
    ASSERT(rt_ckpt_writer_digest(w) == NULL && rt_ckpt_writer_file_size(w) == 0);
    ASSERT_EQ(rt_ckpt_writer_add_tensor(w, "model.big", RT_ST_F32, 1, shape, big, &err), RT_OK);
    ASSERT_EQ(rt_ckpt_writer_add_tensor(w, "model.tail", RT_ST_F32, 1, one, big + shape[0], &err),
              RT_OK);
    ASSERT_EQ(rt_ckpt_writer_set_meta_i64(w, "step", 3, &err), RT_OK);
    ASSERT_EQ(rt_ckpt_writer_set_meta_i64(w, "epoch", 0, &err), RT_OK);
    ASSERT_EQ(rt_ckpt_writer_save(w, path, &err), RT_OK);
    ASSERT_EQ(rt_ckpt_reader_open(path, 0, &r, &err), RT_OK);
    ASSERT_STR_EQ(rt_ckpt_writer_digest(w), rt_ckpt_reader_meta(r, "data_xxh3"));
    ASSERT_EQ(rt_ckpt_writer_file_size(w), rt_ckpt_reader_file_size(r));
    float back[7];
    ASSERT_EQ(rt_ckpt_reader_get(r, "model.tail", RT_ST_F32, 1, one, back, sizeof back, &err),
              RT_OK);
    ASSERT(memcmp(back, big + shape[0], sizeof back) == 0);
    rt_ckpt_reader_destroy(r);
    /* a failed save clears them */
    char nowhere[600];
    snprintf(nowhere, sizeof nowhere, "%s/no/such/dir/x.safetensors", dir);
    ASSERT(rt_ckpt_writer_save(w, nowhere, &err) != RT_OK);
    ASSERT(rt_ckpt_writer_digest(w) == NULL && rt_ckpt_writer_file_size(w) == 0);
    rt_ckpt_writer_destroy(w);
}

T_TEST(missing_files_and_dirs_name_the_path)
{
    rt_error err;
    char p[600];
    snprintf(p, sizeof p, "%s/nope.safetensors", dir);
    rt_ckpt_reader *r = NULL;
    ASSERT_EQ(rt_ckpt_reader_open(p, 0, &r, &err), RT_ENOTFOUND);
    ASSERT_STR_CONTAINS(err.msg, p);
    ASSERT_EQ(rt_ckpt_reader_open(p, RT_CKPT_OPEN_HEADER_ONLY, &r, &err), RT_ENOTFOUND);
    ASSERT_STR_CONTAINS(err.msg, p);
    ASSERT_EQ(rt_ckpt_reader_open(dir, 0, &r, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, dir);
    snprintf(p, sizeof p, "%s/no/such/dir/x.safetensors", dir);
    ASSERT_EQ(ck_save_sample(p, 1, &err), RT_ENOTFOUND);
    ASSERT_STR_CONTAINS(err.msg, p);
    ASSERT(r == NULL);
}

int main(void)
{
    if (ck_tmpdir(dir, sizeof dir) != 0) {
        perror("mkdtemp");
        return 99;
    }
    snprintf(path, sizeof path, "%s/ckpt.safetensors", dir);
    T_RUN(round_trip);
    T_RUN(load_refuses_wrong_shape_dtype_and_missing);
    T_RUN(header_only_open);
    T_RUN(writer_refusals);
    T_RUN(overwrite_replaces_and_leaves_no_tmp);
    T_RUN(writer_reports_digest_and_size);
    T_RUN(missing_files_and_dirs_name_the_path);
    ck_rmrf(dir);
    return T_EXIT();
}
