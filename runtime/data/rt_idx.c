/* rt_idx.c - strict reader for IDX files (the MNIST / Fashion-MNIST format).
 *
 * An IDX file is a big-endian header (magic 0x0000TTDD: T = element type, D = number
 * of dimensions; then D uint32 sizes) followed by the elements. Kiln reads only
 * unsigned bytes: images are 0x00000803 (N, H, W), labels 0x00000801 (N).
 * Files may be gzipped or plain; zlib's gzread reads both. Every size comes from the
 * header, so nothing is trusted: a plain file's length must equal header + data
 * exactly; a gzip stream must deliver exactly that many bytes, no more, and pass
 * its CRC. The data buffer grows as bytes arrive, so a lying header cannot make
 * us allocate gigabytes for a small file. Every error names the file.
 */
#include "rt_data_internal.h"
#include "rt_mem.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define IDX_MAX_DIM 4096           /* an image side larger than this is corruption */
#define IDX_MAX_BYTES (1ULL << 34) /* 16 GiB: far beyond any IDX data set */
#define IDX_FIRST_CHUNK (16u << 20)
#define IDX_PIECE (4u << 20) /* read between interrupt checks */

typedef struct idx_file {
    const char *path;
    gzFile gz;
    uint32_t dims[3];
    int ndim;
    size_t payload; /* product of dims */
} idx_file;

static const char *type_name(unsigned t)
{
    switch (t) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "int16";
    case 0x0C: return "int32";
    case 0x0D: return "float32";
    case 0x0E: return "float64";
    default: return "unknown";
    }
}

/* Reads up to n bytes; *got says how many arrived. Errors only on corrupt gzip. */
static rt_status gz_read(idx_file *f, void *buf, size_t n, size_t *got, rt_error *err)
{
    *got = 0;
    while (*got < n) {
        size_t want = n - *got;
        unsigned chunk = want > (1u << 30) ? (1u << 30) : (unsigned)want;
        int r = gzread(f->gz, (char *)buf + *got, chunk);
        if (r < 0) {
            int zerr = 0;
            const char *m = gzerror(f->gz, &zerr);
            if (zerr == Z_BUF_ERROR) /* stream ended early: caller reports it */
                return RT_OK;
            return RT_ERR(err, RT_EFORMAT, "%s: corrupt gzip data (%s)", f->path,
                          m ? m : "zlib error");
        }
        if (r == 0) break;
        *got += (size_t)r;
    }
    return RT_OK;
}

static rt_status short_read(const idx_file *f, const char *what, size_t got, size_t n,
                            rt_error *err)
{
    int zerr = 0;
    const char *m = gzerror(f->gz, &zerr);
    return RT_ERR(err, RT_EFORMAT, "%s: truncated: the %s ends after %zu of %zu bytes%s%s%s",
                  f->path, what, got, n, zerr ? " (" : "", zerr && m ? m : "", zerr ? ")" : "");
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Opens path and validates the header against the expected magic (ndim 3 or 1). */
static rt_status idx_open(idx_file *f, const char *path, int ndim, rt_error *err)
{
    memset(f, 0, sizeof *f);
    f->path = path;
    f->gz = gzopen(path, "rb");
    if (!f->gz)
        return RT_ERR(err, errno == ENOENT ? RT_ENOTFOUND : RT_EIO, "%s: cannot open: %s", path,
                      strerror(errno ? errno : EIO));
    gzbuffer(f->gz, 1u << 18);
    uint8_t hdr[16];
    size_t hlen = 4 + 4 * (size_t)ndim, got;
    RT_TRY(gz_read(f, hdr, 4, &got, err));
    if (got < 4) return short_read(f, "header", got, hlen, err);
    uint32_t magic = be32(hdr), want = 0x800u | (uint32_t)ndim;
    const char *kind = ndim == 3 ? "an IDX image file" : "an IDX label file";
    if (hdr[0] || hdr[1] || hdr[3] != ndim)
        return RT_ERR(err, RT_EFORMAT, "%s: bad magic 0x%08x (expected 0x%08x, %s)", path, magic,
                      want, kind);
    if (hdr[2] != 0x08)
        return RT_ERR(err, RT_EFORMAT,
                      "%s: IDX element type 0x%02x (%s) is not supported: Kiln reads "
                      "unsigned-byte IDX files (magic 0x%08x)",
                      path, hdr[2], type_name(hdr[2]), want);
    RT_TRY(gz_read(f, hdr + 4, hlen - 4, &got, err));
    if (got < hlen - 4) return short_read(f, "header", got + 4, hlen, err);
    f->ndim = ndim;
    unsigned long long total = 1;
    for (int i = 0; i < ndim; i++) {
        f->dims[i] = be32(hdr + 4 + 4 * i);
        if (f->dims[i] == 0) return RT_ERR(err, RT_EFORMAT, "%s: dimension %d is 0", path, i);
        if (i > 0 && f->dims[i] > IDX_MAX_DIM)
            return RT_ERR(err, RT_EFORMAT, "%s: image dimension %u is implausible (max %d)", path,
                          f->dims[i], IDX_MAX_DIM);
        total *= f->dims[i];
    }
    if (f->dims[0] > 0x7fffffffu || total > IDX_MAX_BYTES)
        return RT_ERR(err, RT_EFORMAT, "%s: header describes %llu bytes of data: implausible", path,
                      total);
    f->payload = (size_t)total;
    /* A plain file must be exactly header + data long. */
    if (gzdirect(f->gz)) {
        struct stat st;
        if (stat(path, &st) != 0)
            return RT_ERR(err, RT_EIO, "%s: cannot stat: %s", path, strerror(errno));
        unsigned long long want_len = hlen + total;
        if ((unsigned long long)st.st_size != want_len)
            return RT_ERR(err, RT_EFORMAT,
                          "%s: file is %lld bytes but its header describes %llu "
                          "(%s); the file is %s",
                          path, (long long)st.st_size, want_len, ndim == 3 ? "images" : "labels",
                          (unsigned long long)st.st_size < want_len ? "truncated"
                                                                    : "longer than that");
    }
    return RT_OK;
}

/* Reads the f->payload data bytes into a new buffer, then requires the end of the
 * stream (no extra bytes, CRC good). Polls stop between 4 MiB pieces. */
static rt_status idx_read_payload(idx_file *f, const char *what, const rtp_stop *stop,
                                  uint8_t **out, rt_error *err)
{
    /* a few MB of gzip can claim gigabytes: weigh the claim before reading it */
    RT_TRY(rt_mem_check(f->payload, f->path, err));
    size_t cap = f->payload < IDX_FIRST_CHUNK ? f->payload : IDX_FIRST_CHUNK, have = 0;
    uint8_t *buf = malloc(cap);
    if (!buf) return RT_ERR(err, RT_ENOMEM, "%s: out of memory (%zu bytes)", f->path, cap);
    while (have < f->payload) {
        if (have == cap) {
            size_t ncap = cap * 2 < f->payload ? cap * 2 : f->payload;
            uint8_t *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                return RT_ERR(err, RT_ENOMEM, "%s: out of memory (%zu bytes)", f->path, ncap);
            }
            buf = nb;
            cap = ncap;
        }
        size_t want = cap - have < IDX_PIECE ? cap - have : IDX_PIECE, got;
        rt_status s = gz_read(f, buf + have, want, &got, err);
        if (s == RT_OK && got < want) s = short_read(f, what, have + got, f->payload, err);
        if (s == RT_OK) s = rtp_check_stop(stop, f->path, err);
        if (s != RT_OK) {
            free(buf);
            return s;
        }
        have += got;
    }
    uint8_t extra;
    size_t got;
    rt_status s = gz_read(f, &extra, 1, &got, err);
    if (s == RT_OK && got)
        s = RT_ERR(err, RT_EFORMAT, "%s: has bytes after the %zu the header describes", f->path,
                   f->payload);
    if (s == RT_OK) {
        int zerr = 0;
        const char *m = gzerror(f->gz, &zerr);
        if (zerr != Z_OK)
            s = RT_ERR(err, RT_EFORMAT, "%s: truncated or corrupt gzip stream after the %s (%s)",
                       f->path, what, m ? m : "zlib error");
    }
    if (s != RT_OK) {
        free(buf);
        return s;
    }
    *out = buf;
    return RT_OK;
}

static void idx_close(idx_file *f)
{
    if (f->gz) gzclose_r(f->gz);
    f->gz = NULL;
}

rt_status rtp_idx_read_images(const char *path, rtp_raw_split *s, const rtp_stop *stop,
                              rt_error *err)
{
    idx_file f;
    rt_status st = idx_open(&f, path, 3, err);
    uint8_t *px = NULL;
    if (st == RT_OK) st = idx_read_payload(&f, "image data", stop, &px, err);
    idx_close(&f);
    if (st != RT_OK) return st;
    free(s->pixels);
    s->pixels = px;
    s->n = (int)f.dims[0];
    s->c = 1;
    s->h = (int)f.dims[1];
    s->w = (int)f.dims[2];
    return RT_OK;
}

rt_status rtp_idx_read_labels(const char *path, rtp_raw_split *s, int num_classes,
                              const char *images_path, rt_error *err)
{
    idx_file f;
    rt_status st = idx_open(&f, path, 1, err);
    if (st == RT_OK && (int)f.dims[0] != s->n)
        st = RT_ERR(err, RT_EFORMAT, "%s: has %u labels but %s has %d images", path, f.dims[0],
                    images_path, s->n);
    uint8_t *lb = NULL;
    if (st == RT_OK) st = idx_read_payload(&f, "label data", NULL, &lb, err);
    idx_close(&f);
    if (st != RT_OK) return st;
    for (int i = 0; num_classes > 0 && i < s->n; i++) {
        if (lb[i] >= num_classes) {
            st = RT_ERR(err, RT_EFORMAT, "%s: label %d of item %d is out of range (%d classes)",
                        path, lb[i], i, num_classes);
            free(lb);
            return st;
        }
    }
    free(s->labels);
    s->labels = lb;
    return RT_OK;
}
