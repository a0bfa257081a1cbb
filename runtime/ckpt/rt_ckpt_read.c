/* rt_ckpt_read.c - opening and validating a Kiln checkpoint, copying tensors out.
 *
 * Nothing from the file is trusted before it is checked, in this order: the length
 * prefix against the file size, the header JSON and its tensor table (rt_safetensors),
 * the format name and version (before the checksums, so a newer file is reported as
 * "newer", not "corrupt"), the typed metadata, the header checksum, the data checksum
 * (XXH3-64 in format v2, zlib's CRC-32 in v1 files, which are still read).
 * The data area is read only after the header passed, into one buffer (a CNN
 * checkpoint is tens of MB; read(2), not mmap, so an I/O error on a network or FUSE
 * mount is a message, not SIGBUS); tensors are copied out of it on request, after a
 * dtype and shape check.
 */
#include "rt_ckpt_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

struct rt_ckpt_reader {
    char *path;
    char *what;    /* "checkpoint '<path>'", starts every message */
    uint8_t *data; /* the data area, or NULL when opened header-only */
    uint64_t file_size, data_start;
    rt_st_index *ix;
};

static const rt_st_tensor_info *index_tensor(void *src, size_t i)
{
    return rt_st_index_tensor(src, i);
}

static void index_meta(void *src, size_t i, const char **k, const char **v)
{
    rt_st_index_meta_at(src, i, k, v);
}

/* Compares the stored checksum under key with the computed one (hex). */
static rt_status check_sum(const rt_ckpt_reader *r, const char *key, const char *hex,
                           const char *part, rt_error *err)
{
    const char *stored = rt_st_index_meta(r->ix, key);
    if (!stored)
        return RT_ERR(err, RT_EFORMAT, "%s: no %s in its metadata (corrupt header)", r->what, key);
    if (strcmp(stored, hex) != 0)
        return RT_ERR(err, RT_EFORMAT,
                      "%s: %s checksum mismatch (stored %.16s, computed %s): "
                      "the file is corrupt ---> HINT: use an older checkpoint; %%resume "
                      "picks the newest valid one",
                      r->what, part, stored, hex);
    return RT_OK;
}

static rt_status check_crc(const rt_ckpt_reader *r, const char *key, uint32_t computed,
                           const char *part, rt_error *err)
{
    char hex[9];
    rtp_ckpt_crc_hex(computed, hex);
    return check_sum(r, key, hex, part, err);
}

/* The data checksum of the file's version: XXH3-64 from v2 on, CRC-32 in v1 (the
 * version was checked against the reader's before this runs). */
static rt_status check_data(const rt_ckpt_reader *r, size_t len, rt_error *err)
{
    int64_t version = 1;
    rtp_parse_i64(rt_st_index_meta(r->ix, RT_CKPT_KEY_FORMAT_VERSION), &version);
    if (version == 1)
        return check_crc(r, RT_CKPT_KEY_DATA_CRC,
                         (uint32_t)crc32_z(crc32_z(0L, Z_NULL, 0), r->data, len), "data", err);
    char hex[17];
    rtp_ckpt_xxh3_hex(rtp_ckpt_xxh3(r->data, len), hex);
    return check_sum(r, RT_CKPT_KEY_DATA_XXH3, hex, "data", err);
}

/* The header checks, before any data is read: a wrong or newer file is refused without
 * reading (or allocating) its data area. */
static rt_status check_header(rt_ckpt_reader *r, rt_error *err)
{
    RT_TRY(rtp_ckpt_meta_check(r->ix, r->what, err));
    return check_crc(r, RT_CKPT_KEY_HEADER_CRC,
                     rtp_ckpt_header_crc32(r->ix, rt_st_index_count(r->ix), index_tensor,
                                           rt_st_index_meta_count(r->ix), index_meta),
                     "header", err);
}

/* Reads and checks the prefix and header, then (unless header_only) the data area,
 * all through one descriptor so the file cannot change between the two. */
static rt_status read_checked(rt_ckpt_reader *r, int fd, int header_only, rt_error *err)
{
    struct stat st;
    uint8_t prefix[8];
    uint64_t n = 0;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return RT_ERR(err, RT_EINVAL, "%s: not a readable regular file", r->what);
    r->file_size = (uint64_t)st.st_size;
    if (r->file_size >= 8) RT_TRY(rtp_ckpt_pread(fd, prefix, 8, 0, r->what, err));
    RT_TRY(rt_st_prefix_check(prefix, r->file_size, r->what, &n, err));
    char *hdr = malloc(n ? n : 1);
    if (!hdr) return RT_ERR(err, RT_ENOMEM, "%s: out of memory reading the header", r->what);
    rt_status s = rtp_ckpt_pread(fd, hdr, n, 8, r->what, err);
    if (s == RT_OK) s = rt_st_index_parse(hdr, n, r->file_size - 8 - n, r->what, &r->ix, err);
    free(hdr);
    r->data_start = 8 + n;
    if (s == RT_OK) s = check_header(r, err);
    if (s != RT_OK || header_only) return s;
    uint64_t len = r->file_size - r->data_start;
    if (len > SIZE_MAX - 1 || !(r->data = malloc(len ? (size_t)len : 1)))
        return RT_ERR(err, RT_ENOMEM,
                      "%s: out of memory loading %llu bytes ---> HINT: "
                      "free memory (other models, data sets)",
                      r->what, (unsigned long long)len);
    RT_TRY(rtp_ckpt_pread(fd, r->data, (size_t)len, r->data_start, r->what, err));
    return check_data(r, (size_t)len, err);
}

rt_status rt_ckpt_reader_open(const char *path, unsigned flags, rt_ckpt_reader **out, rt_error *err)
{
    *out = NULL;
    rt_ckpt_reader *r = calloc(1, sizeof *r);
    size_t wlen = strlen(path) + 16;
    if (r) {
        r->path = strdup(path);
        r->what = malloc(wlen);
    }
    if (!r || !r->path || !r->what) {
        rt_ckpt_reader_destroy(r);
        return RT_ERR(err, RT_ENOMEM, "out of memory opening checkpoint '%s'", path);
    }
    snprintf(r->what, wlen, "checkpoint '%s'", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    rt_status s = fd < 0 ? rtp_ckpt_errno_error(err, errno, "opening", path)
                         : read_checked(r, fd, (flags & RT_CKPT_OPEN_HEADER_ONLY) != 0, err);
    if (fd >= 0) close(fd);
    if (s != RT_OK) {
        rt_ckpt_reader_destroy(r);
        return s;
    }
    *out = r;
    return RT_OK;
}

void rt_ckpt_reader_destroy(rt_ckpt_reader *r)
{
    if (!r) return;
    rt_st_index_destroy(r->ix);
    free(r->data);
    free(r->what);
    free(r->path);
    free(r);
}

const char *rt_ckpt_reader_path(const rt_ckpt_reader *r) { return r->path; }
uint64_t rt_ckpt_reader_file_size(const rt_ckpt_reader *r) { return r->file_size; }
size_t rt_ckpt_reader_tensor_count(const rt_ckpt_reader *r) { return rt_st_index_count(r->ix); }

const rt_st_tensor_info *rt_ckpt_reader_tensor_at(const rt_ckpt_reader *r, size_t i)
{
    return rt_st_index_tensor(r->ix, i);
}

const rt_st_tensor_info *rt_ckpt_reader_find(const rt_ckpt_reader *r, const char *name)
{
    return rt_st_index_find(r->ix, name);
}

static void shape_str(char *buf, size_t cap, int ndim, const int64_t *shape)
{
    size_t len = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < ndim && len < cap; d++)
        len += (size_t)snprintf(buf + len, cap - len, "%s%lld", d ? "," : "", (long long)shape[d]);
    if (len < cap) snprintf(buf + len, cap - len, "]");
}

rt_status rt_ckpt_reader_get(const rt_ckpt_reader *r, const char *name, rt_st_dtype dtype, int ndim,
                             const int64_t *shape, void *dst, size_t dst_bytes, rt_error *err)
{
    const rt_st_tensor_info *t = rt_st_index_find(r->ix, name);
    if (!t)
        return RT_ERR(err, RT_ENOTFOUND,
                      "%s has no tensor '%s' ---> HINT: was it saved "
                      "from a different %%%%model?",
                      r->what, name);
    if (!r->data)
        return RT_ERR(err, RT_EINVAL, "%s was opened header-only; tensor '%s' not loaded", r->what,
                      name);
    int same = t->dtype == dtype && t->ndim == ndim;
    for (int d = 0; same && d < ndim; d++) same = t->shape[d] == shape[d];
    if (!same) {
        char have[160], want[160];
        shape_str(have, sizeof have, t->ndim, t->shape);
        shape_str(want, sizeof want, ndim, shape);
        return RT_ERR(err, RT_EFORMAT,
                      "%s: tensor '%s' is %s %s, the model expects %s %s "
                      "---> HINT: the %%%%model differs from the one that saved this "
                      "checkpoint (see %%checkpoint show)",
                      r->what, name, rt_st_dtype_name(t->dtype), have, rt_st_dtype_name(dtype),
                      want);
    }
    if (dst_bytes != t->end - t->begin)
        return RT_ERR(err, RT_EINVAL, "%s: tensor '%s' is %llu bytes, buffer is %zu", r->what, name,
                      (unsigned long long)(t->end - t->begin), dst_bytes);
    if (dst_bytes) memcpy(dst, r->data + t->begin, dst_bytes);
    return RT_OK;
}

const char *rt_ckpt_reader_meta(const rt_ckpt_reader *r, const char *key)
{
    return rt_st_index_meta(r->ix, key);
}

size_t rt_ckpt_reader_meta_count(const rt_ckpt_reader *r) { return rt_st_index_meta_count(r->ix); }

void rt_ckpt_reader_meta_at(const rt_ckpt_reader *r, size_t i, const char **key, const char **value)
{
    rt_st_index_meta_at(r->ix, i, key, value);
}

rt_status rt_ckpt_reader_meta_i64(const rt_ckpt_reader *r, const char *key, int64_t *out,
                                  rt_error *err)
{
    const char *s = rt_st_index_meta(r->ix, key);
    if (!s) return RT_ERR(err, RT_ENOTFOUND, "%s has no metadata '%s'", r->what, key);
    if (rtp_parse_i64(s, out) != 0)
        return RT_ERR(err, RT_EFORMAT, "%s: metadata '%s' = \"%.40s\" is not an integer", r->what,
                      key, s);
    return RT_OK;
}

rt_status rt_ckpt_reader_metric(const rt_ckpt_reader *r, const char *key, rt_ckpt_metric *out,
                                rt_error *err)
{
    const char *s = rt_st_index_meta(r->ix, key);
    if (!s) return RT_ERR(err, RT_ENOTFOUND, "%s has no metadata '%s'", r->what, key);
    int rc = rtp_ckpt_metric_parse(s, out);
    if (rc == -2) return RT_ERR(err, RT_ENOMEM, "%s: out of memory reading '%s'", r->what, key);
    if (rc != 0)
        return RT_ERR(err, RT_EFORMAT,
                      "%s: metadata '%s' is not a metric "
                      "{\"name\",\"value\",\"mode\":\"max\"|\"min\"}",
                      r->what, key);
    return RT_OK;
}
