/* ckpt.c - fuzz target: checkpoint files (rt_ckpt_reader_open: safetensors prefix and
 * JSON header index, Kiln's metadata contract, the header CRC-32 and the data checksum
 * (v1 CRC-32, v2 XXH3-64), the data area), then every reader accessor: tensors by index and name, rt_ckpt_reader_get
 * with each tensor's own dtype and shape, typed metadata and metrics. The header
 * parser (rt_st_index_parse) is also fed the header bytes directly.
 * Input: byte 0 = flags, then the file.
 *   flags & 1: the harness rewrites data_crc32 / data_xxh3 (whichever the header has)
 *              and header_crc32 to the right values (when the header parses), so the
 *              fuzzer gets past the checksums;
 *   flags & 2: open header-only (RT_CKPT_OPEN_HEADER_ONLY).
 * Invariants: an opened reader's tensors lie inside the file; a tensor read with its
 * own dtype and shape succeeds on a full reader; errors name the file. */
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "fz.h"
#include "rt_ckpt.h"
#include "rt_ckpt_internal.h"

#include <jansson.h>

static const rt_st_tensor_info *ix_tensor(void *src, size_t i)
{
    return rt_st_index_tensor(src, i);
}
static void ix_meta(void *src, size_t i, const char **k, const char **v)
{
    rt_st_index_meta_at(src, i, k, v);
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* The file with header JSON h and the given data area; new buffer. */
static uint8_t *assemble(json_t *h, const uint8_t *data, size_t dlen, size_t *outlen)
{
    char *text = json_dumps(h, JSON_COMPACT);
    if (!text) return NULL;
    size_t n = strlen(text), padded = (n + 7) / 8 * 8;
    uint8_t *f = malloc(8 + padded + dlen);
    if (f) {
        for (int i = 0; i < 8; i++) f[i] = (uint8_t)((uint64_t)padded >> (8 * i));
        memcpy(f + 8, text, n);
        memset(f + 8 + n, ' ', padded - n);
        if (dlen) memcpy(f + 8 + padded, data, dlen);
        *outlen = 8 + padded + dlen;
    }
    free(text);
    return f;
}

/* Rewrites the checksums of file (if its header parses); new buffer or NULL. */
static uint8_t *fix_crcs(const uint8_t *file, size_t size, size_t *outlen)
{
    if (size < 8) return NULL;
    uint64_t n = le64(file);
    if (n > size - 8) return NULL;
    const uint8_t *data = file + 8 + n;
    size_t dlen = size - 8 - (size_t)n;
    json_t *h = json_loadb((const char *)file + 8, (size_t)n, 0, NULL);
    json_t *meta = json_object_get(h, "__metadata__");
    uint8_t *out = NULL;
    if (json_is_object(meta)) {
        char hex[17];
        if (json_object_get(meta, RT_CKPT_KEY_DATA_CRC)) {
            rtp_ckpt_crc_hex((uint32_t)crc32_z(crc32_z(0L, Z_NULL, 0), data, dlen), hex);
            json_object_set_new(meta, RT_CKPT_KEY_DATA_CRC, json_string(hex));
        }
        if (json_object_get(meta, RT_CKPT_KEY_DATA_XXH3)) {
            rtp_ckpt_xxh3_hex(rtp_ckpt_xxh3(data, dlen), hex);
            json_object_set_new(meta, RT_CKPT_KEY_DATA_XXH3, json_string(hex));
        }
        size_t l1 = 0;
        uint8_t *f1 = assemble(h, data, dlen, &l1);
        rt_st_index *ix = NULL;
        rt_error err = {0};
        uint64_t n1 = f1 ? le64(f1) : 0;
        if (f1 &&
            rt_st_index_parse((const char *)f1 + 8, (size_t)n1, dlen, "fix", &ix, &err) == RT_OK) {
            uint32_t crc = rtp_ckpt_header_crc32(ix, rt_st_index_count(ix), ix_tensor,
                                                 rt_st_index_meta_count(ix), ix_meta);
            rtp_ckpt_crc_hex(crc, hex);
            json_object_set_new(meta, RT_CKPT_KEY_HEADER_CRC, json_string(hex));
            out = assemble(h, data, dlen, outlen);
        }
        rt_st_index_destroy(ix);
        free(f1);
    }
    json_decref(h);
    return out;
}

static void use_reader(rt_ckpt_reader *r, int header_only)
{
    uint64_t fsize = rt_ckpt_reader_file_size(r);
    size_t nt = rt_ckpt_reader_tensor_count(r);
    rt_error err = {0};
    for (size_t i = 0; i < nt; i++) {
        const rt_st_tensor_info *t = rt_ckpt_reader_tensor_at(r, i);
        FZ_CHECK(t && t->name && t->begin <= t->end && t->end <= fsize);
        FZ_CHECK(rt_ckpt_reader_find(r, t->name) == t);
        size_t bytes = (size_t)(t->end - t->begin);
        if (bytes > (1u << 20)) continue;
        void *dst = malloc(bytes ? bytes : 1);
        if (!dst) continue;
        rt_status st =
            rt_ckpt_reader_get(r, t->name, t->dtype, t->ndim, t->shape, dst, bytes, &err);
        if (!header_only) FZ_CHECK(st == RT_OK);
        else FZ_CHECK(st != RT_OK);
        /* a wrong shape is refused */
        int64_t shape[RT_ST_MAX_DIMS + 1];
        memcpy(shape, t->shape, sizeof t->shape);
        shape[0] = t->ndim ? t->shape[0] + 1 : 1;
        FZ_CHECK(rt_ckpt_reader_get(r, t->name, t->dtype, t->ndim ? t->ndim : 1, shape, dst, bytes,
                                    &err) != RT_OK);
        free(dst);
    }
    FZ_CHECK(rt_ckpt_reader_tensor_at(r, nt) == NULL);
    size_t nm = rt_ckpt_reader_meta_count(r);
    for (size_t i = 0; i < nm; i++) {
        const char *k = NULL, *v = NULL;
        rt_ckpt_reader_meta_at(r, i, &k, &v);
        FZ_CHECK(k && v && rt_ckpt_reader_meta(r, k) == v);
        /* Any value may be malformed: only that reading it is safe is checked. */
        int64_t x;
        RT_IGNORE(rt_ckpt_reader_meta_i64(r, k, &x, &err));
        rt_ckpt_metric m;
        RT_IGNORE(rt_ckpt_reader_metric(r, k, &m, &err));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    unsigned flags = data[0];
    data++, size--;
    uint8_t *fixed = NULL;
    size_t flen = 0;
    if (flags & 1) fixed = fix_crcs(data, size, &flen);
    const uint8_t *file = fixed ? fixed : data;
    size_t fsize = fixed ? flen : size;

    /* the header parser on its own */
    rt_error err = {0};
    if (fsize >= 8) {
        uint64_t n = 0;
        if (rt_st_prefix_check(file, fsize, "fz", &n, &err) == RT_OK) {
            FZ_CHECK(n <= fsize - 8);
            rt_st_index *ix = NULL;
            if (rt_st_index_parse((const char *)file + 8, (size_t)n, fsize - 8 - n, "fz", &ix,
                                  &err) == RT_OK) {
                for (size_t i = 0; i < rt_st_index_count(ix); i++) {
                    const rt_st_tensor_info *t = rt_st_index_tensor(ix, i);
                    FZ_CHECK(t->end <= fsize - 8 - n && t->begin <= t->end);
                }
                rt_st_index_destroy(ix);
            } else {
                FZ_CHECK(ix == NULL && !strncmp(err.msg, "fz", 2));
            }
        }
    }
    char path[64];
    int fd = fz_memfile(file, fsize, path, sizeof path);
    if (fd >= 0) {
        rt_ckpt_reader *r = NULL;
        int header_only = (flags & 2) != 0;
        if (rt_ckpt_reader_open(path, header_only ? RT_CKPT_OPEN_HEADER_ONLY : 0, &r, &err) ==
            RT_OK) {
            use_reader(r, header_only);
            rt_ckpt_reader_destroy(r);
        } else {
            FZ_CHECK(r == NULL && strstr(err.msg, path) != NULL);
        }
        close(fd);
    }
    free(fixed);
    return 0;
}
