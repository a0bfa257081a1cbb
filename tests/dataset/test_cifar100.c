/* test_cifar100.c - small CIFAR-100-format files generated here load from a directory,
 * from a generated cifar-100-binary.tar.gz and as the named sets cifar100 (fine labels)
 * and cifar100-coarse (superclasses) through --dir; the pixels agree, the labels are
 * the record's fine or coarse byte, the class names the fine or coarse list. Damaged
 * files (truncated, a label out of range in either byte, a wrong count of names, an
 * archive without test.bin) are refused naming the file; a download that does not
 * match the built-in SHA-256 is refused naming the file.
 */
#include <archive.h>
#include <archive_entry.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_dataset.h"
#include "t.h"

#define REC 3074
#define NTRAIN 23
#define NTEST 6

static char dir[256], bins[300], named[300];

static uint8_t coarse_of(int split, int r) { return (uint8_t)((split * 7 + r) % 20); }
static uint8_t fine_of(int split, int r) { return (uint8_t)((split * 31 + r * 3) % 100); }

/* split 0 = train.bin, 1 = test.bin */
static void make_file(int split, uint8_t **out, size_t *len)
{
    int n = split ? NTEST : NTRAIN;
    *len = (size_t)n * REC;
    *out = malloc(*len);
    for (int r = 0; r < n; r++) {
        uint8_t *rec = *out + (size_t)r * REC;
        rec[0] = coarse_of(split, r);
        rec[1] = fine_of(split, r);
        for (int k = 0; k < 3072; k++) rec[2 + k] = (uint8_t)(k * 5 + r * 17 + split * 91);
    }
}

static void write_path(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, n, f);
        fclose(f);
    }
}

static char fine_names[2000], coarse_names[800];

static void write_set(const char *where)
{
    mkdir(where, 0755);
    const char *files[2] = {"train.bin", "test.bin"};
    for (int s = 0; s < 2; s++) {
        uint8_t *d;
        size_t n;
        char p[512];
        make_file(s, &d, &n);
        snprintf(p, sizeof p, "%s/%s", where, files[s]);
        write_path(p, d, n);
        free(d);
    }
    char p[512];
    snprintf(p, sizeof p, "%s/fine_label_names.txt", where);
    write_path(p, fine_names, strlen(fine_names));
    snprintf(p, sizeof p, "%s/coarse_label_names.txt", where);
    write_path(p, coarse_names, strlen(coarse_names));
}

static void add_member(struct archive *a, const char *name, const void *d, size_t n)
{
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, name);
    archive_entry_set_size(e, (la_int64_t)n);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_write_header(a, e);
    archive_write_data(a, d, n);
    archive_entry_free(e);
}

/* cifar-100-binary/{test.bin, coarse names, train.bin, fine names}; with_test 0 leaves
 * test.bin out. */
static void write_tar(const char *path, int with_test)
{
    struct archive *a = archive_write_new();
    archive_write_add_filter_gzip(a);
    archive_write_set_format_pax_restricted(a);
    archive_write_open_filename(a, path);
    uint8_t *d;
    size_t n;
    if (with_test) {
        make_file(1, &d, &n);
        add_member(a, "cifar-100-binary/test.bin", d, n);
        free(d);
    }
    add_member(a, "cifar-100-binary/coarse_label_names.txt", coarse_names, strlen(coarse_names));
    make_file(0, &d, &n);
    add_member(a, "cifar-100-binary/train.bin", d, n);
    free(d);
    add_member(a, "cifar-100-binary/fine_label_names.txt", fine_names, strlen(fine_names));
    archive_write_close(a);
    archive_write_free(a);
}

T_TEST(from_directory_fine_labels)
{
    rt_dataset_splits s;
    rt_error err = {0};
    rt_dataset_opts o = {.name = bins};
    ASSERT_EQ(rt_dataset_load(&s, &o, &err), RT_OK);
    ASSERT_EQ(s.train.n, NTRAIN);
    ASSERT_EQ(s.test.n, NTEST);
    ASSERT_EQ(s.train.c, 3);
    ASSERT_EQ(s.train.h, 32);
    ASSERT_EQ(s.train.num_classes, 100);
    ASSERT_STR_EQ(s.train.class_names[0], "f0");
    ASSERT_STR_EQ(s.train.class_names[99], "f99");
    uint8_t *d, img[3072];
    size_t n;
    make_file(0, &d, &n);
    rt_dataset_image_u8(&s.train, 9, img);
    ASSERT(memcmp(img, d + 9 * REC + 2, 3072) == 0);
    free(d);
    for (int r = 0; r < NTRAIN; r++) ASSERT_EQ(s.train.labels[r], fine_of(0, r));
    for (int r = 0; r < NTEST; r++) ASSERT_EQ(s.test.labels[r], fine_of(1, r));
    rt_dataset_splits_deinit(&s);
}

T_TEST(named_fine_and_coarse_agree_with_tar)
{
    char tgz[512];
    snprintf(tgz, sizeof tgz, "%s/cifar-100-binary.tar.gz", named);
    write_tar(tgz, 1);
    rt_dataset_splits a, f, c;
    rt_error err = {0};
    rt_dataset_opts oa = {.name = bins};
    rt_dataset_opts of = {.name = "cifar100", .dir = named, .val = 3};
    rt_dataset_opts oc = {.name = "CIFAR100_coarse", .dir = named};
    ASSERT_EQ(rt_dataset_load(&a, &oa, &err), RT_OK);
    ASSERT_EQ(rt_dataset_load(&f, &of, &err), RT_OK);
    ASSERT_EQ(rt_dataset_load(&c, &oc, &err), RT_OK);
    ASSERT_STR_EQ(f.train.name, "cifar100/train");
    ASSERT_STR_EQ(c.train.name, "cifar100-coarse/train");
    ASSERT_EQ(f.train.n, NTRAIN - 3);
    ASSERT_EQ(f.val.n, 3);
    ASSERT_EQ(f.test.checksum, a.test.checksum); /* the same bytes and fine labels */
    ASSERT_EQ(c.train.num_classes, 20);
    ASSERT_STR_EQ(c.train.class_names[19], "c19"); /* the file's names, not the table's */
    ASSERT_NE(c.test.checksum, a.test.checksum);   /* other labels */
    for (int r = 0; r < NTRAIN; r++) ASSERT_EQ(c.train.labels[r], coarse_of(0, r));
    uint8_t x[3072], y[3072];
    for (int i = 0; i < NTEST; i++) {
        rt_dataset_image_u8(&c.test, i, x);
        rt_dataset_image_u8(&a.test, i, y);
        ASSERT(memcmp(x, y, sizeof x) == 0);
    }
    rt_dataset_image_u8(&f.val, 2, x); /* val = the last 3 of train */
    rt_dataset_image_u8(&a.train, NTRAIN - 1, y);
    ASSERT(memcmp(x, y, sizeof x) == 0);
    ASSERT_STR_EQ(rt_dataset_default_augment("cifar100-coarse/train"), "crop:4,flip");
    rt_dataset_splits_deinit(&a);
    rt_dataset_splits_deinit(&f);
    rt_dataset_splits_deinit(&c);
    unlink(tgz);
}

T_TEST(builtin_names_without_name_files)
{
    char p[512];
    snprintf(p, sizeof p, "%s/fine_label_names.txt", bins);
    unlink(p);
    snprintf(p, sizeof p, "%s/coarse_label_names.txt", bins);
    unlink(p);
    rt_dataset_splits s;
    rt_error err = {0};
    rt_dataset_opts o = {.name = "cifar100-coarse", .dir = bins};
    ASSERT_EQ(rt_dataset_load(&s, &o, &err), RT_OK);
    ASSERT_STR_EQ(s.train.class_names[0], "aquatic_mammals");
    ASSERT_STR_EQ(s.train.class_names[19], "vehicles_2");
    rt_dataset_splits_deinit(&s);
    rt_dataset_opts of = {.name = bins};
    ASSERT_EQ(rt_dataset_load(&s, &of, &err), RT_OK);
    ASSERT_STR_EQ(s.train.class_names[1], "aquarium_fish");
    ASSERT_STR_EQ(s.train.class_names[99], "worm");
    rt_dataset_splits_deinit(&s);
    write_set(bins);
}

T_TEST(damaged_files)
{
    rt_dataset_splits s;
    rt_error err = {0};
    rt_dataset_opts o = {.name = bins};
    char p[512];
    snprintf(p, sizeof p, "%s/train.bin", bins);
    ASSERT_EQ(truncate(p, NTRAIN * REC - 1), 0); /* one byte short: not whole records */
    ASSERT_EQ(rt_dataset_load(&s, &o, &err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, p);
    ASSERT_STR_CONTAINS(err.msg, "not a whole number of 3074-byte CIFAR-100 records");
    write_set(bins);
    uint8_t *d;
    size_t n;
    make_file(1, &d, &n);
    d[4 * REC] = 20; /* record 4's coarse label: out of range, even for fine labels */
    snprintf(p, sizeof p, "%s/test.bin", bins);
    write_path(p, d, n);
    ASSERT_EQ(rt_dataset_load(&s, &o, &err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, "test.bin: record 4 has coarse label 20, out of range");
    d[4 * REC] = 0;
    d[2 * REC + 1] = 100; /* record 2's fine label */
    write_path(p, d, n);
    rt_dataset_opts oc = {.name = "cifar100-coarse", .dir = bins};
    ASSERT_EQ(rt_dataset_load(&s, &oc, &err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, "test.bin: record 2 has fine label 100, out of range");
    free(d);
    write_set(bins);
    snprintf(p, sizeof p, "%s/fine_label_names.txt", bins);
    write_path(p, "apple\npear\n", 11);
    ASSERT_EQ(rt_dataset_load(&s, &o, &err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, "fine_label_names.txt: 2 class names, expected 100");
    write_set(bins);
    char tgz[512];
    snprintf(tgz, sizeof tgz, "%s/cifar-100-binary.tar.gz", dir);
    write_tar(tgz, 0);
    rt_dataset_opts ot = {.name = tgz};
    ASSERT_EQ(rt_dataset_load(&s, &ot, &err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, "has no test.bin");
    write_tar(tgz, 1);
    struct stat st;
    ASSERT_EQ(stat(tgz, &st), 0);
    ASSERT_EQ(truncate(tgz, st.st_size / 2), 0);
    rt_status got = rt_dataset_load(&s, &ot, &err);
    if (got != RT_EFORMAT) fprintf(stderr, "  %s\n", err.msg);
    ASSERT_EQ(got, RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, tgz);
    ASSERT(s.train.labels == NULL);
    unlink(tgz);
}

/* The named set's file fetched from a file:// mirror: the built-in SHA-256 refuses a
 * file that is not the published one, naming it; the cache is not written. */
T_TEST(download_checks_the_builtin_hash)
{
    char mirror[400], url[450], target[400], tgz[512];
    snprintf(mirror, sizeof mirror, "%s/mirror", dir);
    snprintf(target, sizeof target, "%s/target", dir);
    mkdir(mirror, 0755);
    mkdir(target, 0755);
    snprintf(tgz, sizeof tgz, "%s/cifar-100-binary.tar.gz", mirror);
    write_tar(tgz, 1);
    snprintf(url, sizeof url, "file://%s/", mirror);
    rt_dataset_splits s;
    rt_error err = {0};
    rt_dataset_opts o = {.name = "cifar100", .dir = target, .url = url};
    ASSERT_NE(rt_dataset_load(&s, &o, &err), RT_OK);
    ASSERT_STR_CONTAINS(err.msg, "cifar-100-binary.tar.gz");
    ASSERT_STR_CONTAINS(err.msg, "SHA-256 mismatch: expected 58a81ae192c23a4b");
    snprintf(tgz, sizeof tgz, "%s/cifar-100-binary.tar.gz", target);
    ASSERT(access(tgz, F_OK) != 0);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/kiln-cifar100-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 99;
    }
    setenv("XDG_CACHE_HOME", dir, 1); /* never a real cached copy */
    size_t k = 0;
    for (int i = 0; i < 100; i++)
        k += (size_t)snprintf(fine_names + k, sizeof fine_names - k, "f%d\n", i);
    k = 0;
    for (int i = 0; i < 20; i++)
        k += (size_t)snprintf(coarse_names + k, sizeof coarse_names - k, "c%d\n", i);
    snprintf(bins, sizeof bins, "%s/bins", dir);
    snprintf(named, sizeof named, "%s/named", dir);
    mkdir(named, 0755);
    write_set(bins);
    T_RUN(from_directory_fine_labels);
    T_RUN(named_fine_and_coarse_agree_with_tar);
    T_RUN(builtin_names_without_name_files);
    T_RUN(damaged_files);
    T_RUN(download_checks_the_builtin_hash);
    int rc = T_EXIT();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return rc;
}
