/* rt_ckpt_write.c - building and atomically saving a Kiln checkpoint.
 *
 * The writer wraps a safetensors writer: the caller adds tensors (borrowed, never
 * copied) and metadata; save() fills the format keys and the creation time (unless the
 * caller set one) and writes the file through rt_ckpt_io's atomic writer in one pass
 * over the tensor data: each 1 MiB piece is hashed (XXH3-64) while it is in cache and
 * written at its place after the header. The two checksums have fixed widths, so the
 * header's length is known before the data checksum is: the data goes first, then the
 * header with the real checksums is written at offset 0. Each piece's disk write is
 * started at once (rtp_ckpt_file_start_writeback), so the final fsync has little left
 * to wait for. Nothing is buffered: a 1.2M-parameter model with Adam state is ~14 MB
 * and saving must not double the process's memory.
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
    char digest[17]; /* data_xxh3 of the last save, "" before */
    uint64_t file_size;
};

/* Tensor data is hashed and written in pieces of this size (fits in L2). */
#define PIECE ((size_t)1 << 20)

rt_status rt_ckpt_writer_create(rt_ckpt_writer **out, rt_error *err)
{
    *out = calloc(1, sizeof **out);
    if (!*out) return RT_ERR(err, RT_ENOMEM, "out of memory creating a checkpoint writer");
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

rt_status rt_ckpt_writer_add_tensor(rt_ckpt_writer *w, const char *name, rt_st_dtype dtype,
                                    int ndim, const int64_t *shape, const void *data, rt_error *err)
{
    return rt_st_writer_add(w->st, name, dtype, ndim, shape, data, err);
}

rt_status rt_ckpt_writer_set_meta(rt_ckpt_writer *w, const char *key, const char *value,
                                  rt_error *err)
{
    if (key && rtp_ckpt_meta_reserved(key))
        return RT_ERR(err, RT_EINVAL, "checkpoint metadata '%s' is written by kiln itself", key);
    return rt_st_writer_set_meta(w->st, key, value, err);
}

rt_status rt_ckpt_writer_set_meta_i64(rt_ckpt_writer *w, const char *key, int64_t value,
                                      rt_error *err)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRId64, value);
    return rt_ckpt_writer_set_meta(w, key, buf, err);
}

rt_status rt_ckpt_writer_set_meta_json(rt_ckpt_writer *w, const char *key, const char *json,
                                       rt_error *err)
{
    int ok = json ? rtp_ckpt_json_valid(json) : 0;
    if (ok < 0) return RT_ERR(err, RT_ENOMEM, "out of memory checking metadata '%s'", key);
    if (!ok)
        return RT_ERR(err, RT_EINVAL, "checkpoint metadata '%s' must be JSON, got: %.80s",
                      key ? key : "(null)", json ? json : "(null)");
    return rt_ckpt_writer_set_meta(w, key, json, err);
}

rt_status rt_ckpt_writer_set_metric(rt_ckpt_writer *w, const char *key, const rt_ckpt_metric *m,
                                    rt_error *err)
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

/* The writer-owned keys with placeholder checksums of the final widths; a data_crc32
 * a reader put there (a v1 file re-saved) is dropped by the caller never setting it. */
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
    RT_TRY(rt_st_writer_set_meta(st, RT_CKPT_KEY_DATA_XXH3, "0000000000000000", err));
    return rt_st_writer_set_meta(st, RT_CKPT_KEY_HEADER_CRC, "00000000", err);
}

/* The real checksums: data_xxh3 from the data pass, then header_crc32 over the
 * canonical header (which includes data_xxh3 but not itself). */
static rt_status fill_checksums(rt_st_writer *st, uint64_t data_hash, char digest[17],
                                rt_error *err)
{
    char crc[9];
    rtp_ckpt_xxh3_hex(data_hash, digest);
    RT_TRY(rt_st_writer_set_meta(st, RT_CKPT_KEY_DATA_XXH3, digest, err));
    rtp_ckpt_crc_hex(rtp_ckpt_header_crc32(st, rt_st_writer_count(st), writer_tensor,
                                           rt_st_writer_meta_count(st), writer_meta),
                     crc);
    return rt_st_writer_set_meta(st, RT_CKPT_KEY_HEADER_CRC, crc, err);
}

/* The data area at offset `at`, hashed piece by piece as it is written. */
static rt_status write_data(rt_st_writer *st, rtp_ckpt_file *f, uint64_t at, uint64_t *hash,
                            rt_error *err)
{
    rtp_ckpt_hash *h = rtp_ckpt_hash_create();
    if (!h) return RT_ERR(err, RT_ENOMEM, "out of memory saving checkpoint '%s'", f->path);
    rt_status s = RT_OK;
    size_t n = rt_st_writer_count(st);
    for (size_t i = 0; s == RT_OK && i < n; i++) {
        const rt_st_tensor_info *t = rt_st_writer_tensor(st, i);
        const char *p = rt_st_writer_data(st, i);
        for (uint64_t off = 0; s == RT_OK && off < t->end - t->begin; off += PIECE) {
            size_t len =
                (size_t)(t->end - t->begin - off < PIECE ? t->end - t->begin - off : PIECE);
            rtp_ckpt_hash_update(h, p + off, len);
            s = rtp_ckpt_file_pwrite(f, p + off, len, at + t->begin + off, err);
            if (s == RT_OK) rtp_ckpt_file_start_writeback(f, at + t->begin + off, len);
        }
    }
    *hash = rtp_ckpt_hash_digest(h);
    rtp_ckpt_hash_destroy(h);
    return s;
}

static rt_status require_int(rt_st_writer *st, const char *key, const char *path, rt_error *err)
{
    const char *v = rt_st_writer_meta(st, key);
    int64_t x;
    if (v && rtp_parse_i64(v, &x) == 0 && x >= 0) return RT_OK;
    return RT_ERR(err, RT_EINVAL,
                  "checkpoint '%s': metadata '%s' must be set to a non-negative integer "
                  "before saving",
                  path, key);
}

/* Header with placeholders (for its length), data + hash, header with checksums. */
static rt_status write_file(rt_ckpt_writer *w, rtp_ckpt_file *f, const char *path, rt_error *err)
{
    size_t hlen = 0, hlen2 = 0;
    char *hdr = rt_st_writer_header(w->st, &hlen);
    if (!hdr)
        return RT_ERR(err, RT_ENOMEM, "checkpoint '%s': out of memory building the header", path);
    free(hdr);
    uint64_t hash = 0;
    RT_TRY(write_data(w->st, f, hlen, &hash, err));
    RT_TRY(fill_checksums(w->st, hash, w->digest, err));
    hdr = rt_st_writer_header(w->st, &hlen2);
    if (!hdr)
        return RT_ERR(err, RT_ENOMEM, "checkpoint '%s': out of memory building the header", path);
    rt_status s = hlen2 == hlen ? rtp_ckpt_file_pwrite(f, hdr, hlen, 0, err)
                                : RT_ERR(err, RT_EIO,
                                         "checkpoint '%s': the header changed length "
                                         "(%zu -> %zu bytes) when its checksums were set",
                                         path, hlen, hlen2);
    free(hdr);
    return s;
}

rt_status rt_ckpt_writer_save(rt_ckpt_writer *w, const char *path, rt_error *err)
{
    w->digest[0] = '\0';
    w->file_size = 0;
    RT_TRY(require_int(w->st, RT_CKPT_KEY_STEP, path, err));
    RT_TRY(require_int(w->st, RT_CKPT_KEY_EPOCH, path, err));
    RT_TRY(fill_format_keys(w->st, path, err));
    rtp_ckpt_file f;
    RT_TRY(rtp_ckpt_file_begin(&f, path, err));
    rt_status s = write_file(w, &f, path, err);
    if (s != RT_OK) {
        rtp_ckpt_file_abort(&f);
        w->digest[0] = '\0';
        return s;
    }
    uint64_t size = f.written;
    s = rtp_ckpt_file_commit(&f, err);
    if (s == RT_OK) w->file_size = size;
    else w->digest[0] = '\0';
    return s;
}

const char *rt_ckpt_writer_digest(const rt_ckpt_writer *w)
{
    return w->digest[0] ? w->digest : NULL;
}

uint64_t rt_ckpt_writer_file_size(const rt_ckpt_writer *w) { return w->file_size; }
