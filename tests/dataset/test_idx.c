/* test_idx.c - IDX files generated here, good and corrupt. A good set loads (plain
 * and gzipped give the same data); every corrupt variant is refused with
 * RT_EFORMAT and a message naming the bad file and what is wrong, nothing left
 * allocated, and no over-read (run under ASan in CI's sanitizer job).
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "rt_dataset.h"
#include "t.h"

#define NTRAIN 20
#define NTEST 10
#define ROWS 4
#define COLS 5

static char dir[256];

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Builds an IDX file in memory: magic, dims, then data. Returns its length. */
static size_t make_idx(uint8_t *buf, uint32_t magic, const uint32_t *dims, int ndim,
                       const uint8_t *data, size_t n)
{
    put32(buf, magic);
    for (int i = 0; i < ndim; i++) put32(buf + 4 + 4 * i, dims[i]);
    memcpy(buf + 4 + 4 * ndim, data, n);
    return 4 + 4 * (size_t)ndim + n;
}

static void write_file(const char *name, const uint8_t *buf, size_t n, int gz)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s%s", dir, name, gz ? ".gz" : "");
    if (gz) {
        gzFile f = gzopen(path, "wb");
        gzwrite(f, buf, (unsigned)n);
        gzclose(f);
    } else {
        FILE *f = fopen(path, "wb");
        fwrite(buf, 1, n, f);
        fclose(f);
    }
}

static void clear_dir(void)
{
    const char *names[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                           "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
    for (int i = 0; i < 4; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
        snprintf(p, sizeof p, "%s/%s.gz", dir, names[i]);
        unlink(p);
    }
}

static uint8_t pix_train[NTRAIN * ROWS * COLS], lab_train[NTRAIN];
static uint8_t pix_test[NTEST * ROWS * COLS], lab_test[NTEST];

/* A good set in dir (all plain or all gzipped). */
static void write_good(int gz)
{
    clear_dir();
    uint8_t buf[4096] = {0};
    uint32_t d3[3] = {NTRAIN, ROWS, COLS}, d1[1] = {NTRAIN};
    write_file("train-images-idx3-ubyte", buf,
               make_idx(buf, 0x803, d3, 3, pix_train, sizeof pix_train), gz);
    write_file("train-labels-idx1-ubyte", buf, make_idx(buf, 0x801, d1, 1, lab_train, NTRAIN), gz);
    d3[0] = NTEST;
    d1[0] = NTEST;
    write_file("t10k-images-idx3-ubyte", buf,
               make_idx(buf, 0x803, d3, 3, pix_test, sizeof pix_test), gz);
    write_file("t10k-labels-idx1-ubyte", buf, make_idx(buf, 0x801, d1, 1, lab_test, NTEST), gz);
}

/* Loads dir as a path (or as the named set `named`), expecting failure. */
static rt_status load_fail(const char *named, rt_error *err, rt_dataset_splits *s)
{
    rt_dataset_opts o = {.name = named ? named : dir, .dir = named ? dir : NULL};
    memset(s, 0xAB, sizeof *s);
    rt_status st = rt_dataset_load(s, &o, err);
    if (st == RT_OK) rt_dataset_splits_deinit(s);
    return st;
}

#define EXPECT_REFUSED(named, file, what)                                                     \
    do {                                                                                      \
        rt_error e_ = {0};                                                                    \
        rt_dataset_splits s_;                                                                 \
        ASSERT_EQ(load_fail(named, &e_, &s_), RT_EFORMAT);                                    \
        char p_[512];                                                                         \
        snprintf(p_, sizeof p_, "%s/%s", dir, file);                                          \
        ASSERT_STR_CONTAINS(e_.msg, p_);                                                      \
        ASSERT_STR_CONTAINS(e_.msg, what);                                                    \
        ASSERT(s_.train.images == NULL && s_.test.images == NULL && s_.train.labels == NULL); \
    } while (0)

T_TEST(good_plain_and_gz_agree)
{
    rt_dataset_splits a, b;
    rt_error err = {0};
    write_good(0);
    rt_dataset_opts o = {.name = dir};
    ASSERT_EQ(rt_dataset_load(&a, &o, &err), RT_OK);
    write_good(1);
    ASSERT_EQ(rt_dataset_load(&b, &o, &err), RT_OK);
    ASSERT_EQ(a.train.n, NTRAIN);
    ASSERT_EQ(a.test.n, NTEST);
    ASSERT_EQ(a.train.h, ROWS);
    ASSERT_EQ(a.train.w, COLS);
    ASSERT_EQ(a.train.num_classes, 7); /* labels are i % 7: classes = max + 1 */
    ASSERT_STR_EQ(a.train.class_names[6], "6");
    ASSERT_EQ(a.train.checksum, b.train.checksum);
    ASSERT_EQ(a.test.checksum, b.test.checksum);
    uint8_t img[ROWS * COLS];
    rt_dataset_image_u8(&b.train, 3, img);
    ASSERT(memcmp(img, pix_train + 3 * ROWS * COLS, sizeof img) == 0);
    ASSERT_EQ(b.test.labels[9], lab_test[9]);
    rt_dataset_splits_deinit(&a);
    rt_dataset_splits_deinit(&b);
}

T_TEST(bad_magic)
{
    write_good(1);
    uint8_t buf[4096] = {0};
    uint32_t d3[3] = {NTRAIN, ROWS, COLS};
    write_file("train-images-idx3-ubyte", buf,
               make_idx(buf, 0x801, d3, 3, pix_train, sizeof pix_train), 1);
    EXPECT_REFUSED(NULL, "train-images-idx3-ubyte.gz", "bad magic 0x00000801");
    write_file("train-images-idx3-ubyte", buf,
               make_idx(buf, 0x12345678, d3, 3, pix_train, sizeof pix_train), 1);
    EXPECT_REFUSED(NULL, "train-images-idx3-ubyte.gz", "bad magic");
    write_file("train-images-idx3-ubyte", buf,
               make_idx(buf, 0xC03, d3, 3, pix_train, sizeof pix_train), 1);
    EXPECT_REFUSED(NULL, "train-images-idx3-ubyte.gz", "int32");
    /* labels where images should be */
    uint32_t d1[1] = {NTEST};
    write_good(0);
    write_file("t10k-images-idx3-ubyte", buf, make_idx(buf, 0x801, d1, 1, lab_test, NTEST), 0);
    EXPECT_REFUSED(NULL, "t10k-images-idx3-ubyte", "expected 0x00000803");
}

T_TEST(truncated_data)
{
    uint8_t buf[4096] = {0};
    uint32_t d3[3] = {NTRAIN, ROWS, COLS};
    size_t n = make_idx(buf, 0x803, d3, 3, pix_train, sizeof pix_train);
    write_good(0);
    write_file("train-images-idx3-ubyte", buf, n - 7, 0);
    EXPECT_REFUSED(NULL, "train-images-idx3-ubyte", "truncated");
    write_good(1);
    write_file("train-images-idx3-ubyte", buf, n - 7, 1); /* a whole gzip of short data */
    EXPECT_REFUSED(NULL, "train-images-idx3-ubyte.gz", "ends after 393 of 400 bytes");
    write_file("train-images-idx3-ubyte", buf, 10, 1); /* inside the header */
    EXPECT_REFUSED(NULL, "train-images-idx3-ubyte.gz", "header");
    write_good(0);
    write_file("train-images-idx3-ubyte", buf, n + 3, 0); /* extra bytes */
    EXPECT_REFUSED(NULL, "train-images-idx3-ubyte", "longer");
}

T_TEST(wrong_dims)
{
    uint8_t buf[4096] = {0};
    uint32_t d3[3] = {NTRAIN, ROWS + 1, COLS}; /* header claims 5x5, data is 4x5 */
    write_good(0);
    write_file("train-images-idx3-ubyte", buf,
               make_idx(buf, 0x803, d3, 3, pix_train, sizeof pix_train), 0);
    EXPECT_REFUSED(NULL, "train-images-idx3-ubyte", "header describes");
    write_good(1);
    write_file("train-images-idx3-ubyte", buf,
               make_idx(buf, 0x803, d3, 3, pix_train, sizeof pix_train), 1);
    EXPECT_REFUSED(NULL, "train-images-idx3-ubyte.gz", "truncated");
    uint32_t zero[3] = {NTRAIN, 0, COLS};
    write_file("train-images-idx3-ubyte", buf, make_idx(buf, 0x803, zero, 3, pix_train, 0), 1);
    EXPECT_REFUSED(NULL, "train-images-idx3-ubyte.gz", "dimension 1 is 0");
    /* A lying header must not make us allocate its claim: 1e6 images, tiny file. */
    uint32_t big[3] = {1000000, 28, 28};
    write_file("train-images-idx3-ubyte", buf,
               make_idx(buf, 0x803, big, 3, pix_train, sizeof pix_train), 1);
    EXPECT_REFUSED(NULL, "train-images-idx3-ubyte.gz", "truncated");
    uint32_t huge[3] = {0x7fffffff, 4096, 4096};
    write_file("train-images-idx3-ubyte", buf, make_idx(buf, 0x803, huge, 3, pix_train, 0), 1);
    EXPECT_REFUSED(NULL, "train-images-idx3-ubyte.gz", "implausible");
    /* test images of another size than train */
    write_good(0);
    uint32_t other[3] = {NTEST, COLS, ROWS};
    write_file("t10k-images-idx3-ubyte", buf,
               make_idx(buf, 0x803, other, 3, pix_test, sizeof pix_test), 0);
    rt_error e = {0};
    rt_dataset_splits s;
    ASSERT_EQ(load_fail(NULL, &e, &s), RT_EFORMAT);
    ASSERT_STR_CONTAINS(e.msg, "test images are 1x5x4 but training images 1x4x5");
}

T_TEST(count_mismatch)
{
    uint8_t buf[4096] = {0};
    uint32_t d1[1] = {NTRAIN - 1};
    write_good(1);
    write_file("train-labels-idx1-ubyte", buf, make_idx(buf, 0x801, d1, 1, lab_train, NTRAIN - 1),
               1);
    EXPECT_REFUSED(NULL, "train-labels-idx1-ubyte.gz", "has 19 labels but");
    EXPECT_REFUSED(NULL, "train-images-idx3-ubyte.gz", "has 20 images");
}

T_TEST(truncated_gzip)
{
    write_good(1);
    char path[512];
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
    struct stat st;
    ASSERT_EQ(stat(path, &st), 0);
    ASSERT_EQ(truncate(path, st.st_size / 2), 0); /* cut the deflate stream */
    EXPECT_REFUSED(NULL, "train-images-idx3-ubyte.gz", "truncated");
    write_good(1);
    ASSERT_EQ(truncate(path, st.st_size - 4), 0); /* data whole, trailer cut */
    EXPECT_REFUSED(NULL, "train-images-idx3-ubyte.gz", "gzip");
    write_good(1); /* flip a bit in the CRC */
    FILE *f = fopen(path, "r+b");
    ASSERT(f != NULL);
    fseek(f, st.st_size - 6, SEEK_SET);
    int c = fgetc(f);
    fseek(f, st.st_size - 6, SEEK_SET);
    fputc(c ^ 0x40, f);
    fclose(f);
    EXPECT_REFUSED(NULL, "train-images-idx3-ubyte.gz", "corrupt gzip");
}

T_TEST(label_out_of_range)
{
    uint8_t buf[4096] = {0}, bad[NTEST];
    memcpy(bad, lab_test, NTEST);
    bad[3] = 12;
    uint32_t d1[1] = {NTEST};
    write_good(1);
    write_file("t10k-labels-idx1-ubyte", buf, make_idx(buf, 0x801, d1, 1, bad, NTEST), 1);
    /* The named set has 10 classes: 12 is out of range. */
    EXPECT_REFUSED("mnist", "t10k-labels-idx1-ubyte.gz",
                   "label 12 of item 3 is out of range (10 classes)");
    /* Loaded as a plain path the same files are fine: 13 classes. */
    rt_dataset_splits s;
    rt_error e = {0};
    rt_dataset_opts o = {.name = dir};
    ASSERT_EQ(rt_dataset_load(&s, &o, &e), RT_OK);
    ASSERT_EQ(s.test.num_classes, 13);
    rt_dataset_splits_deinit(&s);
}

T_TEST(missing_and_unknown)
{
    clear_dir();
    rt_dataset_splits s;
    rt_error e = {0};
    rt_dataset_opts o = {.name = dir};
    ASSERT_EQ(rt_dataset_load(&s, &o, &e), RT_ENOTFOUND);
    ASSERT_STR_CONTAINS(e.msg, "train-images-idx3-ubyte");
    rt_dataset_opts u = {.name = "imagenet-nope"};
    ASSERT_EQ(rt_dataset_load(&s, &u, &e), RT_ENOTFOUND);
    ASSERT_STR_CONTAINS(e.msg, "unknown data set \"imagenet-nope\"");
    rt_dataset_opts v = {.name = dir, .val = -1};
    ASSERT_EQ(rt_dataset_load(&s, &v, &e), RT_EINVAL);
    rt_dataset_opts w = {.name = "/no/such/dir"};
    ASSERT_EQ(rt_dataset_load(&s, &w, &e), RT_ENOTFOUND);
    ASSERT_STR_CONTAINS(e.msg, "/no/such/dir: no such file or directory");
    const char *const *names = rt_dataset_known_names();
    ASSERT_STR_EQ(names[0], "mnist");
    ASSERT_STR_EQ(names[1], "fashion-mnist");
    ASSERT_STR_EQ(names[2], "cifar10");
    ASSERT_STR_EQ(names[3], "cifar100");
    ASSERT_STR_EQ(names[4], "cifar100-coarse");
    ASSERT_STR_EQ(names[5], "svhn");
    ASSERT(names[6] == NULL);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/kiln-idx-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 99;
    }
    for (size_t i = 0; i < sizeof pix_train; i++) pix_train[i] = (uint8_t)(i * 37 + 11);
    for (size_t i = 0; i < sizeof pix_test; i++) pix_test[i] = (uint8_t)(i * 53 + 5);
    for (int i = 0; i < NTRAIN; i++) lab_train[i] = (uint8_t)(i % 7);
    for (int i = 0; i < NTEST; i++) lab_test[i] = (uint8_t)(i % 7);
    T_RUN(good_plain_and_gz_agree);
    T_RUN(bad_magic);
    T_RUN(truncated_data);
    T_RUN(wrong_dims);
    T_RUN(count_mismatch);
    T_RUN(truncated_gzip);
    T_RUN(label_out_of_range);
    T_RUN(missing_and_unknown);
    clear_dir();
    rmdir(dir);
    return T_EXIT();
}
