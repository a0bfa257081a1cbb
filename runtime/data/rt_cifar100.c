/* rt_cifar100.c - CIFAR-100 binary files, from a directory or straight from the
 * cifar-100-binary.tar.gz stream (libarchive, loaded on first use; nothing extracted).
 *
 * train.bin and test.bin are records of 2 label bytes (coarse 0..19, then fine 0..99)
 * + 3072 pixel bytes (1024 R, then G, then B, each 32x32 row-major), i.e. (C, H, W).
 * coarse_label_names.txt / fine_label_names.txt (optional) name the classes, one a
 * line; a list present must have exactly 20 / 100 names. Both label bytes of every
 * record are checked whichever labels are used: a file with either out of range is
 * damaged. Sizes that are not whole records are refused, before anything is allocated
 * (and a size beyond the memory there is: rt_mem_check). Archive members are matched
 * by base name only, so odd paths in a tarball are harmless.
 */
#include "rt_archive_dl.h"
#include "rt_data_internal.h"
#include "rt_mem.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define SIDE 32
#define PIXELS (3 * SIDE * SIDE)
#define RECORD (2 + PIXELS)
#define MAX_BYTES (1ULL << 32)
#define NAMES_MAX (64u << 10)
#define NCOARSE 20
#define NFINE 100

static const char *const files[2] = {"train.bin", "test.bin"};
static const char *const name_files[2] = {"coarse_label_names.txt", "fine_label_names.txt"};

typedef size_t (*read_fn)(void *ctx, void *buf, size_t n);

/* Reads `size` bytes of records into a fresh split, labels from byte `which` (0 coarse,
 * 1 fine) of each record. */
static rt_status read_records(rtp_raw_split *s, int which, read_fn rd, void *ctx, uint64_t size,
                              const char *what, const rtp_stop *stop, rt_error *err)
{
    if (size == 0 || size % RECORD != 0 || size > MAX_BYTES)
        return RT_ERR(err, RT_EFORMAT,
                      "%s: %llu bytes is not a whole number of %d-byte CIFAR-100 records "
                      "(coarse and fine label bytes + 3x32x32 pixels); truncated or not a "
                      "CIFAR-100 file?",
                      what, (unsigned long long)size, RECORD);
    size_t n = (size_t)(size / RECORD);
    RT_TRY(rt_mem_check(size, what, err)); /* a size an archive entry claims */
    *s = (rtp_raw_split){.n = (int)n, .c = 3, .h = SIDE, .w = SIDE};
    s->pixels = malloc(n * PIXELS);
    s->labels = malloc(n);
    uint8_t *rec = malloc(RECORD * 256);
    rt_status st = RT_OK;
    if (!s->pixels || !s->labels || !rec)
        st = RT_ERR(err, RT_ENOMEM, "%s: out of memory for %zu records", what, n);
    for (size_t i = 0; st == RT_OK && i < n;) {
        size_t k = n - i < 256 ? n - i : 256, want = k * RECORD;
        if ((i & 4095) == 0 && (st = rtp_check_stop(stop, what, err)) != RT_OK) break;
        size_t got = rd(ctx, rec, want);
        if (got != want) {
            st = RT_ERR(err, RT_EFORMAT, "%s: truncated: ends after %zu of %llu bytes", what,
                        i * RECORD + got, (unsigned long long)size);
            break;
        }
        for (size_t j = 0; j < k && st == RT_OK; j++, i++) {
            const uint8_t *r = rec + j * RECORD;
            if (r[0] >= NCOARSE || r[1] >= NFINE)
                st = RT_ERR(err, RT_EFORMAT,
                            "%s: record %zu has %s label %d, out of range (%d classes)", what, i,
                            r[0] >= NCOARSE ? "coarse" : "fine", r[0] >= NCOARSE ? r[0] : r[1],
                            r[0] >= NCOARSE ? NCOARSE : NFINE);
            s->labels[i] = r[which];
            memcpy(s->pixels + i * PIXELS, r + 2, PIXELS);
        }
    }
    free(rec);
    if (st != RT_OK) rtp_raw_split_deinit(s);
    return st;
}

/* A label-name list: parsed, and its count checked against the labels it names. */
static rt_status parse_names(const char *what, const char *text, size_t len, int which,
                             rtp_class_names *names, rt_error *err)
{
    int want = which ? NFINE : NCOARSE;
    RT_TRY(rtp_cifar_parse_meta(what, text, len, names, err));
    if (names->count != want)
        return RT_ERR(err, RT_EFORMAT, "%s: %d class names, expected %d", what, names->count, want);
    return RT_OK;
}

static size_t file_read(void *ctx, void *buf, size_t n) { return fread(buf, 1, n, ctx); }

rt_status rtp_cifar100_read_dir(const char *dir, int coarse, rtp_raw_split *train,
                                rtp_raw_split *test, rtp_class_names *names, const rtp_stop *stop,
                                rt_error *err)
{
    int which = coarse ? 0 : 1;
    rtp_raw_split *out[2] = {train, test};
    char path[4096];
    rt_status st = RT_OK;
    names->count = 0;
    *train = (rtp_raw_split){0}, *test = (rtp_raw_split){0};
    for (int k = 0; st == RT_OK && k < 2; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[k]);
        FILE *f = fopen(path, "rb");
        struct stat sb;
        if (!f) {
            st = RT_ERR(err, errno == ENOENT ? RT_ENOTFOUND : RT_EIO, "%s: cannot open: %s", path,
                        strerror(errno));
            break;
        }
        if (fstat(fileno(f), &sb) != 0) st = RT_ERR(err, RT_EIO, "%s: cannot stat", path);
        if (st == RT_OK)
            st = read_records(out[k], which, file_read, f, (uint64_t)sb.st_size, path, stop, err);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/%s", dir, name_files[which]);
    FILE *mf = st == RT_OK ? fopen(path, "rb") : NULL;
    if (mf) {
        char *text = malloc(NAMES_MAX);
        size_t len = text ? fread(text, 1, NAMES_MAX, mf) : 0;
        st = text ? parse_names(path, text, len, which, names, err)
                  : RT_ERR(err, RT_ENOMEM, "out of memory");
        free(text);
        fclose(mf);
    }
    if (st != RT_OK) rtp_raw_split_deinit(train), rtp_raw_split_deinit(test);
    return st;
}

rt_status rtp_cifar100_read_tar(const char *path, int coarse, rtp_raw_split *train,
                                rtp_raw_split *test, rtp_class_names *names, const rtp_stop *stop,
                                rt_error *err)
{
    int which = coarse ? 0 : 1;
    rtp_raw_split *out[2] = {train, test};
    rt_status st = RT_OK;
    names->count = 0;
    *train = (rtp_raw_split){0}, *test = (rtp_raw_split){0};
    const rtp_archive_fns *ar;
    RT_TRY(rtp_archive_lib(&ar, err));
    struct archive *a = ar->read_new();
    if (!a) return RT_ERR(err, RT_ENOMEM, "%s: cannot start libarchive", path);
    rtp_archive_member src = {ar, a};
    ar->read_support_filter_all(a);
    ar->read_support_format_tar(a);
    ar->read_support_format_gnutar(a);
    if (ar->read_open_filename(a, path, 1 << 16) != ARCHIVE_OK)
        st = RT_ERR(err, rtp_is_file(path) ? RT_EFORMAT : RT_ENOTFOUND,
                    "%s: cannot open as a tar archive: %s", path, ar->error_string(a));
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
        for (int k = 0; base && k < 2; k++)
            if (!strcmp(base, files[k]) && !out[k]->pixels)
                st = read_records(out[k], which, rtp_archive_member_read, &src,
                                  (uint64_t)ar->entry_size(e), what, stop, err);
        if (st == RT_OK && base && !strcmp(base, name_files[which])) {
            char *text = malloc(NAMES_MAX);
            size_t len = text ? rtp_archive_member_read(&src, text, NAMES_MAX) : 0;
            st = text ? parse_names(what, text, len, which, names, err)
                      : RT_ERR(err, RT_ENOMEM, "out of memory");
            free(text);
        }
    }
    ar->read_free(a);
    for (int k = 0; st == RT_OK && k < 2; k++)
        if (!out[k]->pixels)
            st = RT_ERR(err, RT_EFORMAT,
                        "%s: the archive has no %s (is it cifar-100-binary.tar.gz?)", path,
                        files[k]);
    if (st != RT_OK) rtp_raw_split_deinit(train), rtp_raw_split_deinit(test);
    return st;
}
