/* rt_cifar_read.c - the CIFAR binary family (CIFAR-10 batches, CIFAR-100 train/test):
 * files of fixed-size records (label bytes + 3x32x32 pixels, (C, H, W)) and an optional
 * class-name list, read by a layout (rtp_cifar_layout) from a folder or straight from a
 * .tar.gz stream (libarchive, loaded on first use by rt_archive_dl.c; nothing
 * extracted). A size that is not whole records is refused before anything is
 * allocated (and a size beyond the memory there is: rt_mem_check); archive members are
 * matched by base name only, so odd paths in a tarball are harmless.
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
#define MAX_BYTES (1ULL << 32)
#define NAMES_MAX (64u << 10)

typedef size_t (*read_fn)(void *ctx, void *buf, size_t n);

/* Reads `size` bytes of records into a fresh split. */
static rt_status read_records(const rtp_cifar_layout *l, rtp_raw_split *s, read_fn rd, void *ctx,
                              uint64_t size, const char *what, const rtp_stop *stop, rt_error *err)
{
    const size_t record = (size_t)l->label_bytes + PIXELS;
    if (size == 0 || size % record != 0 || size > MAX_BYTES)
        return RT_ERR(err, RT_EFORMAT,
                      "%s: %llu bytes is not a whole number of %zu-byte %s records "
                      "(%s + 3x32x32 pixels); truncated or not a %s file?",
                      what, (unsigned long long)size, record, l->kind, l->label_desc, l->kind);
    size_t n = (size_t)(size / record);
    RT_TRY(rt_mem_check(size, what, err)); /* a size an archive entry claims */
    *s = (rtp_raw_split){.n = (int)n, .c = 3, .h = SIDE, .w = SIDE};
    s->pixels = malloc(n * PIXELS);
    s->labels = malloc(n);
    uint8_t *rec = malloc(record * 256);
    rt_status st = RT_OK;
    if (!s->pixels || !s->labels || !rec)
        st = RT_ERR(err, RT_ENOMEM, "%s: out of memory for %zu records", what, n);
    for (size_t i = 0; st == RT_OK && i < n;) {
        size_t k = n - i < 256 ? n - i : 256, want = k * record;
        if ((i & 4095) == 0 && (st = rtp_check_stop(stop, what, err)) != RT_OK) break;
        size_t got = rd(ctx, rec, want);
        if (got != want) {
            st = RT_ERR(err, RT_EFORMAT, "%s: truncated: ends after %zu of %llu bytes", what,
                        i * record + got, (unsigned long long)size);
            break;
        }
        for (size_t j = 0; j < k && st == RT_OK; j++, i++) {
            const uint8_t *r = rec + j * record;
            if (l->check) st = l->check(r, i, what, err);
            s->labels[i] = r[l->label];
            memcpy(s->pixels + i * PIXELS, r + l->label_bytes, PIXELS);
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

/* The class-name list of at most NAMES_MAX bytes from rd, its count checked. */
static rt_status read_names(const rtp_cifar_layout *l, read_fn rd, void *ctx, const char *what,
                            rtp_class_names *names, rt_error *err)
{
    char *text = malloc(NAMES_MAX);
    if (!text) return RT_ERR(err, RT_ENOMEM, "out of memory");
    size_t len = rd(ctx, text, NAMES_MAX);
    rt_status st = rtp_cifar_parse_meta(what, text, len, names, err);
    free(text);
    if (st == RT_OK && l->names_count && names->count != l->names_count)
        st = RT_ERR(err, RT_EFORMAT, "%s: %d class names, expected %d", what, names->count,
                    l->names_count);
    return st;
}

static size_t file_read(void *ctx, void *buf, size_t n) { return fread(buf, 1, n, ctx); }

rt_status rtp_cifar_layout_read_dir(const rtp_cifar_layout *l, const char *dir, rtp_raw_split *out,
                                    rtp_class_names *names, const rtp_stop *stop, rt_error *err)
{
    char path[4096];
    rt_status st = RT_OK;
    names->count = 0;
    for (int k = 0; k < l->nmembers; k++) out[k] = (rtp_raw_split){0};
    for (int k = 0; st == RT_OK && k < l->nmembers; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, l->members[k]);
        FILE *f = fopen(path, "rb");
        struct stat sb;
        if (!f) {
            st = RT_ERR(err, errno == ENOENT ? RT_ENOTFOUND : RT_EIO, "%s: cannot open: %s", path,
                        strerror(errno));
            break;
        }
        if (fstat(fileno(f), &sb) != 0) st = RT_ERR(err, RT_EIO, "%s: cannot stat", path);
        if (st == RT_OK)
            st = read_records(l, &out[k], file_read, f, (uint64_t)sb.st_size, path, stop, err);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/%s", dir, l->names_file);
    FILE *mf = st == RT_OK ? fopen(path, "rb") : NULL;
    if (mf) {
        st = read_names(l, file_read, mf, path, names, err);
        fclose(mf);
    }
    if (st != RT_OK)
        for (int k = 0; k < l->nmembers; k++) rtp_raw_split_deinit(&out[k]);
    return st;
}

rt_status rtp_cifar_layout_read_tar(const rtp_cifar_layout *l, const char *path, rtp_raw_split *out,
                                    rtp_class_names *names, const rtp_stop *stop, rt_error *err)
{
    rt_status st = RT_OK;
    names->count = 0;
    for (int k = 0; k < l->nmembers; k++) out[k] = (rtp_raw_split){0};
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
        for (int k = 0; base && k < l->nmembers; k++)
            if (!strcmp(base, l->members[k]) && !out[k].pixels)
                st = read_records(l, &out[k], rtp_archive_member_read, &src,
                                  (uint64_t)ar->entry_size(e), what, stop, err);
        if (st == RT_OK && base && !strcmp(base, l->names_file))
            st = read_names(l, rtp_archive_member_read, &src, what, names, err);
    }
    ar->read_free(a);
    for (int k = 0; st == RT_OK && k < l->nmembers; k++)
        if (!out[k].pixels)
            st = RT_ERR(err, RT_EFORMAT, "%s: the archive has no %s (is it %s?)", path,
                        l->members[k], l->archive);
    if (st != RT_OK)
        for (int k = 0; k < l->nmembers; k++) rtp_raw_split_deinit(&out[k]);
    return st;
}
