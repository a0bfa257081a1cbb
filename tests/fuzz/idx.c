/* idx.c - fuzz target: the IDX reader (rtp_idx_read_images / rtp_idx_read_labels:
 * big-endian header, dimension and size checks, plain or gzip, label count and range).
 * Input: byte 0 = flags (bit 0: gzip the image file, bit 1: gzip the label file, as
 * a real .gz would be, so the fuzzer also reaches the header checks behind gzip);
 * bytes 1-2 = length of the image file (little endian); then the image file's
 * bytes, then the label file's bytes. Both are memory files.
 * Invariants: a read image split has n, h, w > 0 and c = 1; labels read only after
 * images and, once read, every label is below the class count. */
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "fz.h"
#include "rt_data_internal.h"

/* gzip of data into a new buffer (*out, *outlen); 0 or -1. */
static int gzip_buf(const uint8_t *data, size_t size, uint8_t **out, size_t *outlen)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return -1;
    size_t cap = deflateBound(&z, (uLong)size) + 32;
    *out = malloc(cap);
    if (!*out) return deflateEnd(&z), -1;
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)size;
    z.next_out = *out;
    z.avail_out = (uInt)cap;
    int rc = deflate(&z, Z_FINISH);
    *outlen = cap - z.avail_out;
    deflateEnd(&z);
    if (rc != Z_STREAM_END) return free(*out), *out = NULL, -1;
    return 0;
}

static int file_of(const uint8_t *data, size_t size, int gz, char *path, size_t plen)
{
    if (!gz) return fz_memfile(data, size, path, plen);
    uint8_t *z = NULL;
    size_t zl = 0;
    if (gzip_buf(data, size, &z, &zl) < 0) return -1;
    int fd = fz_memfile(z, zl, path, plen);
    free(z);
    return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3) return 0;
    unsigned flags = data[0];
    size_t ilen = (size_t)data[1] | (size_t)data[2] << 8;
    data += 3, size -= 3;
    if (ilen > size) ilen = size;
    char ipath[64], lpath[64];
    int ifd = file_of(data, ilen, flags & 1, ipath, sizeof ipath);
    int lfd = file_of(data + ilen, size - ilen, flags & 2, lpath, sizeof lpath);
    rtp_raw_split s;
    memset(&s, 0, sizeof s);
    rt_error err = {0};
    if (ifd >= 0 && rtp_idx_read_images(ipath, &s, NULL, &err) == RT_OK) {
        FZ_CHECK(s.n > 0 && s.c == 1 && s.h > 0 && s.w > 0 && s.pixels);
        int classes = 1 + (flags >> 2) % 10;
        if (lfd >= 0 && rtp_idx_read_labels(lpath, &s, classes, ipath, &err) == RT_OK) {
            FZ_CHECK(s.labels != NULL);
            for (int i = 0; i < s.n; i++) FZ_CHECK(s.labels[i] < classes);
        } else if (lfd >= 0) {
            FZ_CHECK(strstr(err.msg, "/proc/self/fd/") != NULL);
        }
    } else if (ifd >= 0) {
        FZ_CHECK(strstr(err.msg, ipath) != NULL);
    }
    rtp_raw_split_deinit(&s);
    if (ifd >= 0) close(ifd);
    if (lfd >= 0) close(lfd);
    return 0;
}
