/* rt_ckpt_write.c - building and atomically saving a Kiln checkpoint.
 *
 * The writer wraps a safetensors writer: the caller adds tensors (borrowed, never
 * copied) and metadata; save() fills the format keys, the creation time (unless the
 * caller set one), the CRC-32 of the data area and the CRC-32 of the canonical
 * header, then streams the file through rt_ckpt_io's atomic writer. Tensor data is
 * read twice (checksum, then write) and never buffered: a 1.2M-parameter model with
 * Adam state is ~19 MB and saving must not double the process's memory.
 */
#include "rt_ckpt_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln_config.h"

struct rt_ckpt_writer {
    rt_st_writer *st;
};

rt_status rt_ckpt_writer_create(rt_ckpt_writer **out, rt_error *err)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return RT_ERR(err, RT_ENOMEM, "out of memory creating a checkpoint writer");
    rt_status s = rt_st_writer_create(&(*out)->st, err);
    if (s != RT_OK) {
        free(*out);
        *out = NULL;
    }
    return s;
}

void rt_ckpt_writer_destroy(rt_ckpt_writer *w)
{
    if (!w) return;
    rt_st_writer_destroy(w->st);
    free(w);
}

rt_status rt_ckpt_writer_add_tensor(rt_ckpt_writer *w, const char *name,
                                    rt_st_dtype dtype, int ndim, const int64_t *shape,
                                    const void *data, rt_error *err)
{
    return rt_st_writer_add(w->st, name, dtype, ndim, shape, data, err);
}

rt_status rt_ckpt_writer_set_meta(rt_ckpt_writer *w, const char *key, const char *value,
                                  rt_error *err)
{
    if (key && rtp_ckpt_meta_reserved(key))
        return RT_ERR(err, RT_EINVAL,
                      "checkpoint metadata '%s' is written by kiln itself", key);
    return rt_st_writer_set_meta(w->st, key, value, err);
}

rt_status rt_ckpt_writer_set_meta_i64(rt_ckpt_writer *w, const char *key, int64_t value,
                                      rt_error *err)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64, value);
    return rt_ckpt_writer_set_meta(w, key, buf, err);
}

rt_status rt_ckpt_writer_set_meta_json(rt_ckpt_writer *w, const char *key,
                                       const char *json, rt_error *err)
{
    int ok = json ? rtp_ckpt_json_valid(json) : 0;
    if (ok < 0)
        return RT_ERR(err, RT_ENOMEM, "out of memory checking metadata '%s'", key);
    if (!ok)
        return RT_ERR(err, RT_EINVAL, "checkpoint metadata '%s' must be JSON, got: %.80s",
                      key ? key : "(null)", json ? json : "(null)");
    return rt_ckpt_writer_set_meta(w, key, json, err);
}

rt_status rt_ckpt_writer_set_metric(rt_ckpt_writer *w, const char *key,
                                    const rt_ckpt_metric *m, rt_error *err)
{
    char *json = rtp_ckpt_metric_json(m);
    if (!json)
        return RT_ERR(err, RT_ENOMEM,
                      "cannot encode metric '%s' (out of memory or not "
                      "UTF-8)",
                      m->name);
    rt_status s = rt_ckpt_writer_set_meta(w, key, json, err);
    free(json);
    return s;
}

static const rt_st_tensor_info *writer_tensor(void *src, size_t i)
{
    return rt_st_writer_tensor(src, i);
}

static void writer_meta(void *src, size_t i, const char **k, const char **v)
{
    rt_st_writer_meta_at(src, i, k, v);
}

/* The writer-owned keys, the two checksums last (the header one covers the rest). */
static rt_status fill_format_keys(rt_st_writer *st, const char *path, rt_error *err)
{
    char buf[40];
    RT_TRY(rt_st_writer_set_meta(st, RT_CKPT_KEY_FORMAT, RT_CKPT_FORMAT, err));
    snprintf(buf, sizeof buf, "%d", RT_CKPT_FORMAT_VERSION);
    RT_TRY(rt_st_writer_set_meta(st, RT_CKPT_KEY_FORMAT_VERSION, buf, err));
    RT_TRY(rt_st_writer_set_meta(st, RT_CKPT_KEY_KILN_VERSION, KILN_VERSION, err));
    if (!rt_st_writer_meta(st, RT_CKPT_KEY_CREATED)) {
        time_t now = time(NULL);
        struct tm tm;
        if (!gmtime_r(&now, &tm) || !strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm))
            return RT_ERR(err, RT_EIO, "checkpoint '%s': cannot read the clock", path);
        RT_TRY(rt_st_writer_set_meta(st, RT_CKPT_KEY_CREATED, buf, err));
    }
    rtp_ckpt_crc_hex(rt_st_writer_data_crc32(st), buf);
    RT_TRY(rt_st_writer_set_meta(st, RT_CKPT_KEY_DATA_CRC, buf, err));
    /* header_crc32 is excluded from its own checksum; set a placeholder first so the
     * key exists, then the value. */
    RT_TRY(rt_st_writer_set_meta(st, RT_CKPT_KEY_HEADER_CRC, "", err));
    rtp_ckpt_crc_hex(rtp_ckpt_header_crc32(st, rt_st_writer_count(st), writer_tensor,
                                           rt_st_writer_meta_count(st), writer_meta),
                     buf);
    return rt_st_writer_set_meta(st, RT_CKPT_KEY_HEADER_CRC, buf, err);
}

static rt_status require_int(rt_st_writer *st, const char *key, const char *path,
                             rt_error *err)
{
    const char *v = rt_st_writer_meta(st, key);
    int64_t x;
    if (v && rtp_parse_i64(v, &x) == 0 && x >= 0) return RT_OK;
    return RT_ERR(err, RT_EINVAL,
                  "checkpoint '%s': metadata '%s' must be set to a non-negative integer "
                  "before saving",
                  path, key);
}

rt_status rt_ckpt_writer_save(rt_ckpt_writer *w, const char *path, rt_error *err)
{
    RT_TRY(require_int(w->st, RT_CKPT_KEY_STEP, path, err));
    RT_TRY(require_int(w->st, RT_CKPT_KEY_EPOCH, path, err));
    RT_TRY(fill_format_keys(w->st, path, err));
    rtp_ckpt_file f;
    RT_TRY(rtp_ckpt_file_begin(&f, path, err));
    rt_status s = rt_st_writer_emit(w->st, rtp_ckpt_file_write, &f, err);
    if (s != RT_OK) {
        rtp_ckpt_file_abort(&f);
        if (s == RT_ENOMEM)
            RT_ERR(err, s, "checkpoint '%s': out of memory building the header", path);
        return s;
    }
    return rtp_ckpt_file_commit(&f, err);
}
