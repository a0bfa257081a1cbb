/* rt_svhn_mat.c - SVHN's cropped-digit files (train_32x32.mat, test_32x32.mat): MATLAB
 * level-5 MAT files holding X, a uint8 H x W x C x N array, and y, an N x 1 vector of
 * labels 1..10 (10 is the digit 0). Only what those files use is read; everything else
 * is refused with the file's name, never guessed at.
 *
 * The format (MathWorks, "MAT-File Format", level 5): a 128-byte header (text, then the
 * version 0x0100 and the endian mark "IM" for little-endian), then data elements, each
 * an 8-byte tag (type, byte count) and its bytes padded to 8. A variable is a miMATRIX
 * element (14): array flags (class), dimensions, name, then the real part; MATLAB
 * usually wraps each in a miCOMPRESSED element (15): a zlib stream holding the
 * miMATRIX. A sub-element of at most 4 bytes may use the small format (count in the
 * tag's upper 16 bits, the data in its last 4 bytes), a name or a short y alike. y may be stored with a smaller
 * type than its class (doubles as uint8): every numeric storage type is read.
 *
 * Hardening: the version, the endian mark and every tag are checked; an element may
 * not claim more bytes than the file has left, a real part must hold exactly the
 * dimensions' product of values, and a compressed element may not claim more than
 * zlib's largest ratio (1032:1) lets its compressed bytes hold, so a lying size fails
 * before allocating (and rt_mem_check refuses what the memory cannot take). A stream
 * that ends early is "truncated". Complex, sparse, big-endian and v7.3 (HDF5) files
 * are refused by name. MATLAB stores arrays column-major: image n's bytes are
 * [c][x][y]; they are transposed to the (C, H, W) row-major order of every split.
 */
#include "rt_data_internal.h"
#include "rt_mem.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

enum {
    MI_INT8 = 1,
    MI_UINT8 = 2,
    MI_INT16 = 3,
    MI_UINT16 = 4,
    MI_INT32 = 5,
    MI_UINT32 = 6,
    MI_SINGLE = 7,
    MI_DOUBLE = 9,
    MI_INT64 = 12,
    MI_UINT64 = 13,
    MI_MATRIX = 14,
    MI_COMPRESSED = 15,
};
enum { MX_DOUBLE = 6, MX_SINGLE = 7, MX_INT8 = 8, MX_UINT8 = 9, MX_UINT64 = 15 };

#define ZLIB_MAX_RATIO 1032u
#define MAX_SIDE 4096
#define MAX_DIMS 8

/* Where the bytes of one variable come from: the file (a plain miMATRIX, at most
 * `left` bytes) or zlib inflating a miCOMPRESSED element (`left` compressed bytes). */
typedef struct src {
    FILE *f;
    const char *path;
    int z, zend;
    z_stream zs;
    uint64_t left;
    uint8_t in[1 << 15];
} src;

static size_t src_read(src *s, void *buf, size_t n)
{
    if (!s->z) {
        size_t k = n < s->left ? n : (size_t)s->left;
        size_t got = fread(buf, 1, k, s->f);
        s->left -= got;
        return got;
    }
    s->zs.next_out = buf;
    s->zs.avail_out = (uInt)n;
    while (s->zs.avail_out > 0 && !s->zend) {
        if (s->zs.avail_in == 0 && s->left > 0) {
            size_t k = s->left < sizeof s->in ? (size_t)s->left : sizeof s->in;
            size_t got = fread(s->in, 1, k, s->f);
            if (got == 0) break;
            s->left -= got;
            s->zs.next_in = s->in;
            s->zs.avail_in = (uInt)got;
        }
        int r = inflate(&s->zs, Z_NO_FLUSH);
        if (r == Z_STREAM_END) s->zend = 1;
        else if (r == Z_BUF_ERROR && s->zs.avail_in == 0 && s->left == 0) break;
        else if (r != Z_OK) return (size_t)-1; /* corrupt stream */
    }
    return n - s->zs.avail_out;
}

/* Exactly n bytes, else a clear error. */
static rt_status need(src *s, void *buf, size_t n, const char *what, rt_error *err)
{
    size_t got = src_read(s, buf, n);
    if (got == (size_t)-1)
        return RT_ERR(err, RT_EFORMAT, "%s: corrupt compressed data in %s (zlib: %s)", s->path,
                      what, s->zs.msg ? s->zs.msg : "bad stream");
    if (got != n) return RT_ERR(err, RT_EFORMAT, "%s: truncated in %s", s->path, what);
    return RT_OK;
}

static rt_status skip(src *s, size_t n, const char *what, rt_error *err)
{
    uint8_t tmp[256];
    while (n > 0) {
        size_t k = n < sizeof tmp ? n : sizeof tmp;
        RT_TRY(need(s, tmp, k, what, err));
        n -= k;
    }
    return RT_OK;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* A sub-element's tag: type, byte count, and for the small format its data (small != 0). */
typedef struct sub {
    uint32_t type, n;
    int small;
    uint8_t data[4];
} sub;

static rt_status read_sub(src *s, sub *t, const char *what, rt_error *err)
{
    uint8_t tag[8];
    RT_TRY(need(s, tag, 8, what, err));
    uint32_t w0 = le32(tag);
    *t = (sub){0};
    if (w0 >> 16) {
        t->type = w0 & 0xffff, t->n = w0 >> 16, t->small = 1;
        if (t->n > 4)
            return RT_ERR(err, RT_EFORMAT, "%s: %s: a small element of %u bytes (at most 4)",
                          s->path, what, t->n);
        memcpy(t->data, tag + 4, 4);
    } else {
        t->type = w0, t->n = le32(tag + 4);
    }
    return RT_OK;
}

static size_t pad8(uint64_t n) { return (size_t)((8 - n % 8) % 8); }

static int elem_size(uint32_t type)
{
    switch (type) {
    case MI_INT8:
    case MI_UINT8: return 1;
    case MI_INT16:
    case MI_UINT16: return 2;
    case MI_INT32:
    case MI_UINT32:
    case MI_SINGLE: return 4;
    case MI_DOUBLE:
    case MI_INT64:
    case MI_UINT64: return 8;
    default: return 0;
    }
}

static double value_at(const uint8_t *p, uint32_t type)
{
    union {
        int8_t i8;
        uint8_t u8;
        int16_t i16;
        uint16_t u16;
        int32_t i32;
        uint32_t u32;
        float f;
        double d;
        int64_t i64;
        uint64_t u64;
    } v;
    memcpy(&v, p, (size_t)elem_size(type));
    switch (type) {
    case MI_INT8: return v.i8;
    case MI_UINT8: return v.u8;
    case MI_INT16: return v.i16;
    case MI_UINT16: return v.u16;
    case MI_INT32: return v.i32;
    case MI_UINT32: return v.u32;
    case MI_SINGLE: return v.f;
    case MI_DOUBLE: return v.d;
    case MI_INT64: return (double)v.i64;
    default: return (double)v.u64;
    }
}

/* What the file held: X's bytes (C, H, W order) and y's labels. */
typedef struct found {
    uint8_t *pixels;
    int n, c, h, w;
    uint8_t *labels;
    int nlabels;
} found;

static rt_status read_x(src *s, const sub *re, const int64_t *dims, int nd, uint64_t cap, found *fd,
                        const rtp_stop *stop, rt_error *err)
{
    if (re->type != MI_UINT8 || nd != 4)
        return RT_ERR(err, RT_EFORMAT,
                      "%s: X is not a uint8 H x W x C x N array (storage type %u, %d "
                      "dimensions)",
                      s->path, re->type, nd);
    if (dims[0] < 1 || dims[0] > MAX_SIDE || dims[1] < 1 || dims[1] > MAX_SIDE || dims[2] < 1 ||
        dims[2] > 4 || dims[3] < 1 || dims[3] > 0x7fffffff)
        return RT_ERR(err, RT_EFORMAT,
                      "%s: X is %lld x %lld x %lld x %lld; expected H x W x C x N with sides "
                      "1..%d, 1 to 4 channels",
                      s->path, (long long)dims[0], (long long)dims[1], (long long)dims[2],
                      (long long)dims[3], MAX_SIDE);
    if (fd->pixels) return RT_ERR(err, RT_EFORMAT, "%s: X appears twice", s->path);
    size_t h = (size_t)dims[0], w = (size_t)dims[1], c = (size_t)dims[2], img = h * w * c;
    uint64_t total = (uint64_t)img * (uint64_t)dims[3];
    if (re->n != total)
        return RT_ERR(err, RT_EFORMAT,
                      "%s: X's data is %u bytes but its dimensions need %llu (a lying size)",
                      s->path, re->n, (unsigned long long)total);
    if (total > cap)
        return RT_ERR(err, RT_EFORMAT,
                      "%s: X claims %llu bytes, more than the %llu its element can hold", s->path,
                      (unsigned long long)total, (unsigned long long)cap);
    RT_TRY(rt_mem_check(total, s->path, err));
    uint8_t *px = malloc((size_t)total), *tmp = malloc(img);
    rt_status st = px && tmp ? RT_OK : RT_ERR(err, RT_ENOMEM, "%s: out of memory for X", s->path);
    for (int64_t i = 0; st == RT_OK && i < dims[3]; i++) {
        if ((i & 1023) == 0 && (st = rtp_check_stop(stop, s->path, err)) != RT_OK) break;
        if ((st = need(s, tmp, img, "X", err)) != RT_OK) break;
        uint8_t *o = px + (size_t)i * img; /* tmp[ch][x][y] -> o[ch][y][x] */
        for (size_t ch = 0; ch < c; ch++)
            for (size_t x = 0; x < w; x++)
                for (size_t y = 0; y < h; y++) o[(ch * h + y) * w + x] = tmp[(ch * w + x) * h + y];
    }
    free(tmp);
    if (st != RT_OK) {
        free(px);
        return st;
    }
    fd->pixels = px;
    fd->n = (int)dims[3], fd->c = (int)c, fd->h = (int)h, fd->w = (int)w;
    return RT_OK;
}

static rt_status read_y(src *s, const sub *re, const int64_t *dims, int nd, uint64_t cap, found *fd,
                        rt_error *err)
{
    int es = elem_size(re->type);
    if (!es || nd != 2 || (dims[0] != 1 && dims[1] != 1))
        return RT_ERR(err, RT_EFORMAT, "%s: y is not a numeric N x 1 vector", s->path);
    int64_t n = dims[0] * dims[1];
    if (n < 1 || n > 0x7fffffff || (uint64_t)re->n != (uint64_t)n * (uint64_t)es)
        return RT_ERR(err, RT_EFORMAT,
                      "%s: y's data is %u bytes but %lld values of %d bytes are needed (a lying "
                      "size)",
                      s->path, re->n, (long long)n, es);
    if (re->n > cap)
        return RT_ERR(err, RT_EFORMAT, "%s: y claims %u bytes, more than its element can hold",
                      s->path, re->n);
    if (fd->labels) return RT_ERR(err, RT_EFORMAT, "%s: y appears twice", s->path);
    RT_TRY(rt_mem_check((uint64_t)re->n + (uint64_t)n, s->path, err));
    uint8_t *raw = malloc(re->n), *lab = malloc((size_t)n);
    rt_status st = raw && lab ? need(s, raw, re->n, "y", err)
                              : RT_ERR(err, RT_ENOMEM, "%s: out of memory for y", s->path);
    for (int64_t i = 0; st == RT_OK && i < n; i++) {
        double v = value_at(raw + (size_t)i * (size_t)es, re->type);
        if (!(v >= 1 && v <= 10) || v != floor(v))
            st = RT_ERR(err, RT_EFORMAT, "%s: label %lld is %g; SVHN's labels are 1..10", s->path,
                        (long long)i, v);
        else lab[i] = (uint8_t)((int)v % 10); /* 10 is the digit 0 */
    }
    free(raw);
    if (st != RT_OK) {
        free(lab);
        return st;
    }
    fd->labels = lab;
    fd->nlabels = (int)n;
    return RT_OK;
}

/* One miMATRIX whose tag (type and size) has been read: X or y are kept, others skipped
 * by the caller. body = the miMATRIX's byte count; cap = the most its data can hold. */
static rt_status read_matrix(src *s, uint64_t body, uint64_t cap, found *fd, const rtp_stop *stop,
                             rt_error *err)
{
    sub t;
    uint8_t flags[8];
    RT_TRY(read_sub(s, &t, "array flags", err));
    if (t.type != MI_UINT32 || t.n != 8 || t.small)
        return RT_ERR(err, RT_EFORMAT, "%s: a variable's array flags are malformed", s->path);
    RT_TRY(need(s, flags, 8, "array flags", err));
    int cls = flags[0], complex = flags[1] & 0x08;
    RT_TRY(read_sub(s, &t, "dimensions", err));
    if (t.type != MI_INT32 || t.small || t.n % 4 || t.n < 8 || t.n > 4 * MAX_DIMS)
        return RT_ERR(err, RT_EFORMAT, "%s: a variable's dimensions are malformed", s->path);
    int nd = (int)(t.n / 4);
    uint8_t db[4 * MAX_DIMS];
    int64_t dims[MAX_DIMS];
    RT_TRY(need(s, db, t.n, "dimensions", err));
    RT_TRY(skip(s, pad8(t.n), "dimensions", err));
    for (int i = 0; i < nd; i++) {
        dims[i] = (int32_t)le32(db + 4 * i);
        if (dims[i] < 0)
            return RT_ERR(err, RT_EFORMAT, "%s: a negative dimension (%lld)", s->path,
                          (long long)dims[i]);
    }
    char name[64] = "";
    RT_TRY(read_sub(s, &t, "a variable name", err));
    if (t.type != MI_INT8 && t.type != MI_UINT8)
        return RT_ERR(err, RT_EFORMAT, "%s: a variable's name is malformed", s->path);
    if (t.small) memcpy(name, t.data, t.n);
    else if (t.n < sizeof name) {
        RT_TRY(need(s, name, t.n, "a variable name", err));
        RT_TRY(skip(s, pad8(t.n), "a variable name", err));
    } else return RT_OK; /* longer than MATLAB allows: not one of ours */
    int is_x = !strcmp(name, "X"), is_y = !strcmp(name, "y");
    if (!is_x && !is_y) return RT_OK;
    if (complex || cls < MX_DOUBLE || cls > MX_UINT64)
        return RT_ERR(err, RT_EFORMAT, "%s: %s is not a real numeric array (class %d%s)", s->path,
                      name, cls, complex ? ", complex" : "");
    if (is_x && cls != MX_UINT8)
        return RT_ERR(err, RT_EFORMAT, "%s: X has class %d, not uint8", s->path, cls);
    sub re;
    RT_TRY(read_sub(s, &re, name, err));
    if (re.small) { /* at most 4 bytes, in the tag itself: read from there */
        src *m = malloc(sizeof *m);
        if (!m) return RT_ERR(err, RT_ENOMEM, "out of memory");
        memset(m, 0, offsetof(src, in));
        m->path = s->path, m->left = re.n;
        m->f = fmemopen(re.data, re.n ? re.n : 1, "rb");
        rt_status st = !m->f  ? RT_ERR(err, RT_ENOMEM, "out of memory")
                       : is_x ? read_x(m, &re, dims, nd, re.n, fd, stop, err)
                              : read_y(m, &re, dims, nd, re.n, fd, err);
        if (m->f) fclose(m->f);
        free(m);
        return st;
    }
    if (re.n > body)
        return RT_ERR(err, RT_EFORMAT, "%s: %s claims %u bytes in a variable of %llu", s->path,
                      name, re.n, (unsigned long long)body);
    return is_x ? read_x(s, &re, dims, nd, cap, fd, stop, err)
                : read_y(s, &re, dims, nd, cap, fd, err);
}

static rt_status read_file(FILE *f, const char *path, uint64_t size, found *fd,
                           const rtp_stop *stop, rt_error *err)
{
    uint8_t hdr[128];
    if (size < 128 || fread(hdr, 1, 128, f) != 128)
        return RT_ERR(err, RT_EFORMAT, "%s: %llu bytes, shorter than a MAT file's header", path,
                      (unsigned long long)size);
    if (!memcmp(hdr, "MATLAB 7.3", 10) || (hdr[126] == 'I' && hdr[127] == 'M' && hdr[125] == 2))
        return RT_ERR(err, RT_EFORMAT,
                      "%s: a MAT v7.3 (HDF5) file; only level-5 MAT files (SVHN's, scipy's "
                      "savemat) are read",
                      path);
    if (hdr[126] == 'M' && hdr[127] == 'I')
        return RT_ERR(err, RT_EFORMAT, "%s: a big-endian MAT file; only little-endian is read",
                      path);
    if (hdr[126] != 'I' || hdr[127] != 'M' || hdr[124] != 0x00 || hdr[125] != 0x01)
        return RT_ERR(err, RT_EFORMAT, "%s: not a level-5 MAT file (no version 0x0100, \"IM\")",
                      path);
    uint64_t at = 128;
    src *s = malloc(sizeof *s);
    if (!s) return RT_ERR(err, RT_ENOMEM, "out of memory");
    rt_status st = RT_OK;
    while (st == RT_OK && at < size) {
        uint8_t tag[8];
        if (size - at < 8 || fseek(f, (long)at, SEEK_SET) != 0 || fread(tag, 1, 8, f) != 8) {
            st = RT_ERR(err, RT_EFORMAT, "%s: truncated: a data element's tag at byte %llu", path,
                        (unsigned long long)at);
            break;
        }
        uint32_t type = le32(tag), n = le32(tag + 4);
        if (type >> 16) { /* a small element at the top: 8 bytes, nothing of ours */
            at += 8;
            continue;
        }
        if (n > size - at - 8) {
            st = RT_ERR(err, RT_EFORMAT,
                        "%s: a data element at byte %llu claims %u bytes; the file has %llu "
                        "left (truncated?)",
                        path, (unsigned long long)at, n, (unsigned long long)(size - at - 8));
            break;
        }
        memset(s, 0, offsetof(src, in));
        s->f = f, s->path = path, s->left = n;
        uint64_t next = at + 8 + n + (type == MI_COMPRESSED ? 0 : pad8(n));
        if (type == MI_COMPRESSED) {
            if (inflateInit(&s->zs) != Z_OK) {
                st = RT_ERR(err, RT_ENOMEM, "%s: cannot start zlib", path);
                break;
            }
            s->z = 1;
            sub t;
            uint64_t cap = (uint64_t)n * ZLIB_MAX_RATIO + 1024;
            st = read_sub(s, &t, "a compressed variable", err);
            if (st == RT_OK && t.type == MI_MATRIX) /* anything else: not a variable */
                st = read_matrix(s, t.n, cap, fd, stop, err);
            inflateEnd(&s->zs);
        } else if (type == MI_MATRIX) {
            st = read_matrix(s, n, n, fd, stop, err);
        }
        at = next;
    }
    free(s);
    return st;
}

rt_status rtp_svhn_read_mat(const char *path, rtp_raw_split *out, const rtp_stop *stop,
                            rt_error *err)
{
    *out = (rtp_raw_split){0};
    FILE *f = fopen(path, "rb");
    if (!f)
        return RT_ERR(err, errno == ENOENT ? RT_ENOTFOUND : RT_EIO, "%s: cannot open: %s", path,
                      strerror(errno));
    struct stat sb;
    found fd = {0};
    rt_status st =
        fstat(fileno(f), &sb) == 0 ? RT_OK : RT_ERR(err, RT_EIO, "%s: cannot stat", path);
    if (st == RT_OK) st = read_file(f, path, (uint64_t)sb.st_size, &fd, stop, err);
    fclose(f);
    if (st == RT_OK && (!fd.pixels || !fd.labels))
        st = RT_ERR(err, RT_EFORMAT, "%s: no %s variable (SVHN's files hold X and y)", path,
                    !fd.pixels ? "X" : "y");
    if (st == RT_OK && fd.n != fd.nlabels)
        st = RT_ERR(err, RT_EFORMAT, "%s: X holds %d images but y %d labels", path, fd.n,
                    fd.nlabels);
    if (st != RT_OK) {
        free(fd.pixels);
        free(fd.labels);
        return st;
    }
    *out = (rtp_raw_split){
        .n = fd.n, .c = fd.c, .h = fd.h, .w = fd.w, .pixels = fd.pixels, .labels = fd.labels};
    return RT_OK;
}
