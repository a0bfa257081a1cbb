/* test_cifar.c - small CIFAR-10-format batches generated here: they load from a
 * directory, from a generated .tar.gz (libarchive), and as the named set
 * "cifar10" through --dir; the three agree byte for byte. Corrupt batches and
 * archives are refused with the file's name.
 */
#include <archive.h>
#include <archive_entry.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_dataset.h"
#include "t.h"

#define REC 3073
#define PER_BATCH 7
#define NTEST 5

static char dir[256], bins[300], named[300];
static const char *batch_names[6] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                     "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};
static const char *meta =
    "airplane\nautomobile\nbird\ncat\ndeer\ndog\nfrog\nhorse\nship\ntruck\n\n";

/* Record r of batch b: label (b*7+r) % 10, pixels a pattern unique to (b, r). */
static void make_batch(int b, uint8_t **out, size_t *len)
{
    int n = b == 5 ? NTEST : PER_BATCH;
    *len = (size_t)n * REC;
    *out = malloc(*len);
    for (int r = 0; r < n; r++) {
        uint8_t *rec = *out + (size_t)r * REC;
        rec[0] = (uint8_t)((b * PER_BATCH + r) % 10);
        for (int k = 0; k < 3072; k++) rec[1 + k] = (uint8_t)(k * 7 + r * 31 + b * 101);
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

static void write_batches(const char *where, int with_meta)
{
    mkdir(where, 0755);
    for (int b = 0; b < 6; b++) {
        uint8_t *d;
        size_t n;
        char p[512];
        make_batch(b, &d, &n);
        snprintf(p, sizeof p, "%s/%s", where, batch_names[b]);
        write_path(p, d, n);
        free(d);
    }
    char p[512];
    snprintf(p, sizeof p, "%s/batches.meta.txt", where);
    if (with_meta) write_path(p, meta, strlen(meta));
    else unlink(p);
}

/* A tar.gz with members under cifar-10-batches-bin/, in a shuffled order; skip
 * leaves one batch out. */
static void write_tar(const char *path, int skip)
{
    struct archive *a = archive_write_new();
    archive_write_add_filter_gzip(a);
    archive_write_set_format_pax_restricted(a);
    archive_write_open_filename(a, path);
    int order[7] = {5, 2, 0, 6, 4, 1, 3}; /* 6 = meta */
    for (int i = 0; i < 7; i++) {
        int b = order[i];
        if (b == skip) continue;
        uint8_t *d = NULL;
        size_t n;
        char name[128];
        if (b == 6) {
            n = strlen(meta);
            snprintf(name, sizeof name, "cifar-10-batches-bin/batches.meta.txt");
        } else {
            make_batch(b, &d, &n);
            snprintf(name, sizeof name, "cifar-10-batches-bin/%s", batch_names[b]);
        }
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, name);
        archive_entry_set_size(e, (la_int64_t)n);
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_write_header(a, e);
        archive_write_data(a, b == 6 ? (const void *)meta : d, n);
        archive_entry_free(e);
        free(d);
    }
    archive_write_close(a);
    archive_write_free(a);
}

T_TEST(from_directory)
{
    rt_dataset_splits s;
    rt_error err = {0};
    rt_dataset_opts o = {.name = bins};
    ASSERT_EQ(rt_dataset_load(&s, &o, &err), RT_OK);
    ASSERT_EQ(s.train.n, 5 * PER_BATCH);
    ASSERT_EQ(s.test.n, NTEST);
    ASSERT_EQ(s.train.c, 3);
    ASSERT_EQ(s.train.h, 32);
    ASSERT_EQ(s.train.w, 32);
    ASSERT_EQ(s.train.num_classes, 10);
    ASSERT_STR_EQ(s.train.class_names[1], "automobile");
    ASSERT_STR_EQ(s.train.class_names[9], "truck");
    /* train image 8 = batch 2 (index 1), record 1; label (1*7+1) % 10 = 8 */
    uint8_t *d, img[3072];
    size_t n;
    make_batch(1, &d, &n);
    rt_dataset_image_u8(&s.train, 8, img);
    ASSERT(memcmp(img, d + REC + 1, 3072) == 0);
    ASSERT_EQ(s.train.labels[8], 8);
    free(d);
    for (int c = 0; c < 3; c++) ASSERT(s.train.std[c] > 0.1f);
    rt_dataset_splits_deinit(&s);
}

T_TEST(tar_and_named_agree)
{
    rt_dataset_splits a, b, c;
    rt_error err = {0};
    char tgz[512];
    snprintf(tgz, sizeof tgz, "%s/cifar-10-binary.tar.gz", named);
    write_tar(tgz, -1);
    rt_dataset_opts od = {.name = bins};
    rt_dataset_opts ot = {.name = tgz};
    rt_dataset_opts on = {.name = "cifar10", .dir = named, .val = 5};
    ASSERT_EQ(rt_dataset_load(&a, &od, &err), RT_OK);
    ASSERT_EQ(rt_dataset_load(&b, &ot, &err), RT_OK);
    ASSERT_EQ(rt_dataset_load(&c, &on, &err), RT_OK);
    ASSERT_EQ(a.train.checksum, b.train.checksum);
    ASSERT_EQ(a.test.checksum, b.test.checksum);
    static float fa[3072], fb[3072];
    for (int i = 0; i < 35; i++) {
        rt_dataset_image_f32(&a.train, i, fa);
        rt_dataset_image_f32(&b.train, i, fb);
        ASSERT(memcmp(fa, fb, sizeof fa) == 0);
    }
    ASSERT_STR_EQ(b.train.class_names[3], "cat");
    ASSERT_STR_EQ(c.train.name, "cifar10/train");
    ASSERT_STR_EQ(c.source, named);
    ASSERT_EQ(c.train.n, 30);
    ASSERT_EQ(c.val.n, 5);
    ASSERT_EQ(c.test.checksum, a.test.checksum);
    uint8_t x[3072], y[3072];
    rt_dataset_image_u8(&c.val, 4, x); /* val = last 5 of train */
    rt_dataset_image_u8(&a.train, 34, y);
    ASSERT(memcmp(x, y, sizeof x) == 0);
    rt_dataset_splits_deinit(&a);
    rt_dataset_splits_deinit(&b);
    rt_dataset_splits_deinit(&c);
}

T_TEST(default_class_names_without_meta)
{
    write_batches(bins, 0);
    rt_dataset_splits s;
    rt_error err = {0};
    rt_dataset_opts o = {.name = bins};
    ASSERT_EQ(rt_dataset_load(&s, &o, &err), RT_OK);
    ASSERT_STR_EQ(s.train.class_names[0], "airplane");
    rt_dataset_splits_deinit(&s);
    write_batches(bins, 1);
}

T_TEST(corrupt_batches)
{
    rt_dataset_splits s;
    rt_error err = {0};
    rt_dataset_opts o = {.name = bins};
    char p[512];
    snprintf(p, sizeof p, "%s/data_batch_3.bin", bins);
    ASSERT_EQ(truncate(p, PER_BATCH * REC - 100), 0);
    ASSERT_EQ(rt_dataset_load(&s, &o, &err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, p);
    ASSERT_STR_CONTAINS(err.msg, "not a whole number");
    write_batches(bins, 1);
    uint8_t *d;
    size_t n;
    make_batch(5, &d, &n);
    d[2 * REC] = 10; /* record 2 of the test batch */
    snprintf(p, sizeof p, "%s/test_batch.bin", bins);
    write_path(p, d, n);
    free(d);
    ASSERT_EQ(rt_dataset_load(&s, &o, &err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, "test_batch.bin: label 10 of record 2 is out of range");
    ASSERT(s.train.images == NULL);
    write_batches(bins, 1);
}

T_TEST(corrupt_archives)
{
    rt_dataset_splits s;
    rt_error err = {0};
    char tgz[512];
    snprintf(tgz, sizeof tgz, "%s/partial.tar.gz", dir);
    write_tar(tgz, 5); /* no test_batch.bin */
    rt_dataset_opts o = {.name = tgz};
    ASSERT_EQ(rt_dataset_load(&s, &o, &err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, tgz);
    ASSERT_STR_CONTAINS(err.msg, "no test_batch.bin");
    write_tar(tgz, -1);
    struct stat st;
    ASSERT_EQ(stat(tgz, &st), 0);
    ASSERT_EQ(truncate(tgz, st.st_size * 2 / 3), 0);
    ASSERT_EQ(rt_dataset_load(&s, &o, &err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, tgz);
    ASSERT(s.train.images == NULL);
    write_path(tgz, "not an archive at all", 21);
    ASSERT_EQ(rt_dataset_load(&s, &o, &err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, tgz);
    unlink(tgz);
}

static int stop_now(void *user)
{
    (void)user;
    return 1;
}

T_TEST(interrupt_while_reading)
{
    rt_dataset_splits s;
    rt_error err = {0};
    char tgz[512];
    snprintf(tgz, sizeof tgz, "%s/cifar-10-binary.tar.gz", named);
    write_tar(tgz, -1);
    rt_dataset_opts o = {.name = tgz, .should_stop = stop_now};
    ASSERT_EQ(rt_dataset_load(&s, &o, &err), RT_EINTERRUPTED);
    ASSERT_STR_CONTAINS(err.msg, "test_batch.bin interrupted"); /* first member in the tar */
    ASSERT(s.train.images == NULL);
    rt_dataset_opts d = {.name = bins, .should_stop = stop_now};
    ASSERT_EQ(rt_dataset_load(&s, &d, &err), RT_EINTERRUPTED);
    ASSERT_STR_CONTAINS(err.msg, "data_batch_1.bin interrupted");
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/kiln-cifar-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 99;
    }
    snprintf(bins, sizeof bins, "%s/bins", dir);
    snprintf(named, sizeof named, "%s/named", dir);
    mkdir(named, 0755);
    write_batches(bins, 1);
    T_RUN(from_directory);
    T_RUN(tar_and_named_agree);
    T_RUN(default_class_names_without_meta);
    T_RUN(corrupt_batches);
    T_RUN(corrupt_archives);
    T_RUN(interrupt_while_reading);
    int rc = T_EXIT();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return rc;
}
