/* cifar100.c - fuzz target: the CIFAR-100 binary reader, from a directory
 * (rtp_cifar100_read_dir) and from a tar stream (rtp_cifar100_read_tar), with fine and
 * with coarse labels: record sizes, both label bytes, the name lists' counts, member
 * matching by base name.
 * Input: byte 0 bit 0 = coarse labels; then members, each = 1 selector byte, 2 length
 * bytes (little endian), data.
 *   selector & 7: 0 train.bin, 1 test.bin, 2 fine_label_names.txt,
 *                 3 coarse_label_names.txt, 4-7 an unrelated file;
 *   selector & 0x80: zero-pad the member to a whole number of 3074-byte records;
 *   selector & 0x40: inside a folder in the tar (cifar-100-binary/).
 * Invariants: directory and tar agree (when no member is named twice); an accepted set
 * has 32x32x3 images and every label below 20 (coarse) or 100 (fine). */
#include <archive.h>
#include <archive_entry.h>
#include <string.h>
#include <unistd.h>

#include "fz.h"
#include "rt_data_internal.h"

#define RECORD 3074
#define MAX_MEMBER (6 * RECORD)

static const char *const names[8] = {
    "train.bin", "test.bin", "fine_label_names.txt", "coarse_label_names.txt", "readme", "meta",
    "file.txt",  "x.bin"};

static void check_split(const rtp_raw_split *s, int classes)
{
    FZ_CHECK(s->n > 0 && s->c == 3 && s->h == 32 && s->w == 32 && s->pixels && s->labels);
    for (int i = 0; i < s->n; i++) FZ_CHECK(s->labels[i] < classes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    int coarse = data[0] & 1, classes = coarse ? 20 : 100;
    data++, size--;
    struct {
        unsigned sel;
        uint8_t *data;
        size_t len;
    } m[12];
    size_t nm = 0;
    while (size >= 3 && nm < 12) {
        unsigned sel = data[0];
        size_t len = (size_t)data[1] | (size_t)data[2] << 8;
        data += 3, size -= 3;
        if (len > size) len = size;
        size_t full = len;
        if ((sel & 0x80) && (sel & 7) < 2)
            full = len ? (len + RECORD - 1) / RECORD * RECORD : RECORD;
        if (full > MAX_MEMBER) full = MAX_MEMBER;
        if (len > full) len = full;
        m[nm].sel = sel;
        m[nm].len = full;
        m[nm].data = calloc(1, full ? full : 1);
        if (!m[nm].data) break;
        memcpy(m[nm].data, data, len);
        nm++;
        data += len, size -= len;
    }
    const char *dir = fz_dir();
    FZ_CHECK(dir != NULL);
    fz_dir_clear();
    for (size_t i = 0; i < nm; i++) fz_write_file(dir, names[m[i].sel & 7], m[i].data, m[i].len);
    char tpath[64];
    int tfd = fz_memfile("", 0, tpath, sizeof tpath);
    struct archive *a = archive_write_new();
    FZ_CHECK(a != NULL);
    archive_write_set_format_pax_restricted(a);
    if (tfd >= 0 && archive_write_open_fd(a, tfd) == ARCHIVE_OK) {
        for (size_t i = 0; i < nm; i++) {
            struct archive_entry *e = archive_entry_new();
            char path[128];
            snprintf(path, sizeof path, "%s%s", (m[i].sel & 0x40) ? "cifar-100-binary/" : "",
                     names[m[i].sel & 7]);
            archive_entry_set_pathname(e, path);
            archive_entry_set_size(e, (la_int64_t)m[i].len);
            archive_entry_set_filetype(e, AE_IFREG);
            archive_entry_set_perm(e, 0644);
            if (archive_write_header(a, e) == ARCHIVE_OK && m[i].len)
                archive_write_data(a, m[i].data, m[i].len);
            archive_entry_free(e);
        }
        archive_write_close(a);
    }
    archive_write_free(a);
    rtp_raw_split tr, te, tr2, te2;
    rtp_class_names cn, cn2;
    rt_error err = {0}, err2 = {0};
    rt_status s1 = rtp_cifar100_read_dir(dir, coarse, &tr, &te, &cn, NULL, &err);
    if (s1 == RT_OK) {
        check_split(&tr, classes), check_split(&te, classes);
        FZ_CHECK(cn.count == 0 || cn.count == classes);
    } else {
        FZ_CHECK(err.msg[0] && !tr.pixels && !te.pixels);
    }
    if (tfd >= 0) {
        rt_status s2 = rtp_cifar100_read_tar(tpath, coarse, &tr2, &te2, &cn2, NULL, &err2);
        if (s2 == RT_OK) check_split(&tr2, classes), check_split(&te2, classes);
        int dup = 0;
        for (size_t i = 0; i < nm; i++)
            for (size_t j = i + 1; j < nm; j++) dup |= (m[i].sel & 7) == (m[j].sel & 7);
        if (!dup) {
            FZ_CHECK((s1 == RT_OK) == (s2 == RT_OK));
            if (s1 == RT_OK) FZ_CHECK(tr.n == tr2.n && te.n == te2.n && cn.count == cn2.count);
        }
        if (s2 == RT_OK) rtp_raw_split_deinit(&tr2), rtp_raw_split_deinit(&te2);
        close(tfd);
    }
    if (s1 == RT_OK) rtp_raw_split_deinit(&tr), rtp_raw_split_deinit(&te);
    for (size_t i = 0; i < nm; i++) free(m[i].data);
    return 0;
}
