/* rt_cifar.c - CIFAR-10 binary batches, from a directory or straight from the
 * cifar-10-binary.tar.gz stream (libarchive, loaded on first use by rt_archive_dl.c;
 * nothing is extracted to disk).
 *
 * A batch file is records of 1 label byte + 3072 pixel bytes (1024 R, then G, then
 * B, each 32x32 row-major), i.e. already (C, H, W). Train = data_batch_1..5.bin in
 * that order, test = test_batch.bin; batches.meta.txt (optional) names the classes.
 * A file whose length is not a whole number of records, or a label beyond the
 * class list, is refused with the file's name. Members of the archive are matched
 * by base name only and read into memory, so odd paths in a tarball are harmless.
 */
#include "rt_archive_dl.h"
#include "rt_data_internal.h"
#include "rt_mem.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CIFAR_SIDE 32
#define CIFAR_PIXELS (3 * CIFAR_SIDE * CIFAR_SIDE)
#define CIFAR_RECORD (1 + CIFAR_PIXELS)
#define CIFAR_MAX_BYTES (1ULL << 32)
#define NBATCH 6 /* 5 train + 1 test */
#define META_MAX (64u << 10)

static const char *const batch_names[NBATCH] = {"data_batch_1.bin", "data_batch_2.bin",
                                                "data_batch_3.bin", "data_batch_4.bin",
                                                "data_batch_5.bin", "test_batch.bin"};

typedef size_t (*read_fn)(void *ctx, void *buf, size_t n);

/* Reads `size` bytes of records from a stream into a fresh split. */
static rt_status read_batch(rtp_raw_split *s, read_fn rd, void *ctx, uint64_t size,
                            const char *what, const rtp_stop *stop, rt_error *err)
{
    if (size == 0 || size % CIFAR_RECORD != 0 || size > CIFAR_MAX_BYTES)
        return RT_ERR(err, RT_EFORMAT,
                      "%s: %llu bytes is not a whole number of %d-byte CIFAR-10 records "
                      "(1 label byte + 3x32x32 pixels); truncated or not a CIFAR batch?",
                      what, (unsigned long long)size, CIFAR_RECORD);
    size_t n = (size_t)(size / CIFAR_RECORD);
    RT_TRY(rt_mem_check(size, what, err)); /* an archive entry's claimed size */
    *s = (rtp_raw_split){.n = (int)n, .c = 3, .h = CIFAR_SIDE, .w = CIFAR_SIDE};
    s->pixels = malloc(n * CIFAR_PIXELS);
    s->labels = malloc(n);
    uint8_t *rec = malloc(CIFAR_RECORD * 256);
    rt_status st = RT_OK;
    if (!s->pixels || !s->labels || !rec)
        st = RT_ERR(err, RT_ENOMEM, "%s: out of memory for %zu records", what, n);
    for (size_t i = 0; st == RT_OK && i < n;) {
        size_t k = n - i < 256 ? n - i : 256, want = k * CIFAR_RECORD;
        if ((i & 4095) == 0 && (st = rtp_check_stop(stop, what, err)) != RT_OK) break;
        size_t got = rd(ctx, rec, want);
        if (got != want) {
            st = RT_ERR(err, RT_EFORMAT, "%s: truncated: ends after %zu of %llu bytes", what,
                        i * CIFAR_RECORD + got, (unsigned long long)size);
            break;
        }
        for (size_t j = 0; j < k; j++, i++) {
            s->labels[i] = rec[j * CIFAR_RECORD];
            memcpy(s->pixels + i * CIFAR_PIXELS, rec + j * CIFAR_RECORD + 1, CIFAR_PIXELS);
        }
    }
    free(rec);
    if (st != RT_OK) rtp_raw_split_deinit(s);
    return st;
}

rt_status rtp_cifar_parse_meta(const char *what, const char *text, size_t len,
                               rtp_class_names *names, rt_error *err)
{
    names->count = 0;
    for (size_t i = 0; i < len;) {
        size_t e = i;
        while (e < len && text[e] != '\n') e++;
        size_t a = i, b = e;
        while (a < b && (text[a] == ' ' || text[a] == '\t')) a++;
        while (b > a && (text[b - 1] == ' ' || text[b - 1] == '\t' || text[b - 1] == '\r')) b--;
        if (b > a) {
            if (names->count == RT_MAX_CLASSES)
                return RT_ERR(err, RT_EFORMAT, "%s: more than %d class names", what,
                              RT_MAX_CLASSES);
            size_t l = b - a < 31 ? b - a : 31;
            memcpy(names->names[names->count], text + a, l);
            names->names[names->count][l] = '\0';
            names->count++;
        }
        i = e + 1;
    }
    return RT_OK;
}

/* Label check (once the class count is known), then train = concat of batches 1..5. */
static rt_status assemble(rtp_raw_split b[NBATCH], const char *where, rtp_raw_split *train,
                          rtp_raw_split *test, const rtp_class_names *names, rt_error *err)
{
    int ncls = names->count ? names->count : 10;
    for (int k = 0; k < NBATCH; k++)
        for (int i = 0; i < b[k].n; i++)
            if (b[k].labels[i] >= ncls)
                return RT_ERR(err, RT_EFORMAT,
                              "%s/%s: label %d of record %d is out of range "
                              "(%d classes)",
                              where, batch_names[k], b[k].labels[i], i, ncls);
    size_t n = 0;
    for (int k = 0; k < 5; k++) n += (size_t)b[k].n;
    if (n > 0x7fffffff) return RT_ERR(err, RT_EFORMAT, "%s: too many training records", where);
    *train = (rtp_raw_split){.n = (int)n, .c = 3, .h = CIFAR_SIDE, .w = CIFAR_SIDE};
    train->pixels = malloc(n * CIFAR_PIXELS);
    train->labels = malloc(n);
    if (!train->pixels || !train->labels) {
        rtp_raw_split_deinit(train);
        return RT_ERR(err, RT_ENOMEM, "%s: out of memory for %zu training images", where, n);
    }
    size_t at = 0;
    for (int k = 0; k < 5; k++) {
        memcpy(train->pixels + at * CIFAR_PIXELS, b[k].pixels, (size_t)b[k].n * CIFAR_PIXELS);
        memcpy(train->labels + at, b[k].labels, (size_t)b[k].n);
        at += (size_t)b[k].n;
        rtp_raw_split_deinit(&b[k]);
    }
    *test = b[5];
    memset(&b[5], 0, sizeof b[5]);
    return RT_OK;
}

static size_t file_read(void *ctx, void *buf, size_t n) { return fread(buf, 1, n, ctx); }

rt_status rtp_cifar_read_dir(const char *dir, rtp_raw_split *train, rtp_raw_split *test,
                             rtp_class_names *names, const rtp_stop *stop, rt_error *err)
{
    rtp_raw_split b[NBATCH] = {0};
    char path[4096];
    rt_status st = RT_OK;
    names->count = 0;
    for (int k = 0; st == RT_OK && k < NBATCH; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, batch_names[k]);
        FILE *f = fopen(path, "rb");
        struct stat sb;
        if (!f) {
            st = RT_ERR(err, errno == ENOENT ? RT_ENOTFOUND : RT_EIO, "%s: cannot open: %s", path,
                        strerror(errno));
            break;
        }
        if (fstat(fileno(f), &sb) != 0) st = RT_ERR(err, RT_EIO, "%s: cannot stat", path);
        if (st == RT_OK)
            st = read_batch(&b[k], file_read, f, (uint64_t)sb.st_size, path, stop, err);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/batches.meta.txt", dir);
    FILE *mf = st == RT_OK ? fopen(path, "rb") : NULL;
    if (mf) {
        char *text = malloc(META_MAX);
        size_t len = text ? fread(text, 1, META_MAX, mf) : 0;
        st = text ? rtp_cifar_parse_meta(path, text, len, names, err)
                  : RT_ERR(err, RT_ENOMEM, "out of memory");
        free(text);
        fclose(mf);
    }
    if (st == RT_OK) st = assemble(b, dir, train, test, names, err);
    for (int k = 0; k < NBATCH; k++) rtp_raw_split_deinit(&b[k]);
    return st;
}

rt_status rtp_cifar_read_tar(const char *path, rtp_raw_split *train, rtp_raw_split *test,
                             rtp_class_names *names, const rtp_stop *stop, rt_error *err)
{
    rtp_raw_split b[NBATCH] = {0};
    rt_status st = RT_OK;
    names->count = 0;
    const rtp_archive_fns *ar;
    RT_TRY(rtp_archive_lib(&ar, err));
    struct archive *a = ar->read_new();
    if (!a) return RT_ERR(err, RT_ENOMEM, "%s: cannot start libarchive", path);
    rtp_archive_member src = {ar, a};
    ar->read_support_filter_all(a);
    ar->read_support_format_tar(a);
    ar->read_support_format_gnutar(a);
    if (ar->read_open_filename(a, path, 1 << 16) != ARCHIVE_OK)
        st = RT_ERR(err, rtp_is_file(path) ? RT_EFORMAT : RT_ENOTFOUND, /* errno may be stale */
                    "%s: cannot open as a "
                    "tar archive: %s",
                    path, ar->error_string(a));
    struct archive_entry *e;
    while (st == RT_OK) {
        int r = ar->read_next_header(a, &e);
        if (r == ARCHIVE_EOF) break;
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
            st = RT_ERR(err, RT_EFORMAT, "%s: corrupt or truncated archive: %s", path,
                        ar->error_string(a));
            break;
        }
        if (ar->entry_filetype(e) != AE_IFREG) continue;
        const char *full = ar->entry_pathname(e);
        const char *base = full && strrchr(full, '/') ? strrchr(full, '/') + 1 : full;
        char what[4096];
        snprintf(what, sizeof what, "%s:%s", path, full ? full : "?");
        for (int k = 0; base && k < NBATCH; k++)
            if (!strcmp(base, batch_names[k]) && !b[k].pixels)
                st = read_batch(&b[k], rtp_archive_member_read, &src, (uint64_t)ar->entry_size(e),
                                what, stop, err);
        if (st == RT_OK && base && !strcmp(base, "batches.meta.txt")) {
            char *text = malloc(META_MAX);
            size_t len = text ? rtp_archive_member_read(&src, text, META_MAX) : 0;
            st = text ? rtp_cifar_parse_meta(what, text, len, names, err)
                      : RT_ERR(err, RT_ENOMEM, "out of memory");
            free(text);
        }
    }
    ar->read_free(a);
    for (int k = 0; st == RT_OK && k < NBATCH; k++)
        if (!b[k].pixels)
            st = RT_ERR(err, RT_EFORMAT,
                        "%s: the archive has no %s (is it "
                        "cifar-10-binary.tar.gz?)",
                        path, batch_names[k]);
    if (st == RT_OK) st = assemble(b, path, train, test, names, err);
    for (int k = 0; k < NBATCH; k++) rtp_raw_split_deinit(&b[k]);
    return st;
}
