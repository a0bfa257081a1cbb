/* test_fashion_mnist.c - the real Fashion-MNIST from Debian's dataset-fashion-mnist
 * (/usr/share/datasets/fashion-mnist) loads with the right sizes, labels, checksum
 * and normalisation. Skips (77) where the package is not installed.
 * Expected checksums were computed independently (Python over the gunzipped IDX
 * bytes, FNV-1a 64 as documented in rt_dataset.h); the mean/std are the published
 * Fashion-MNIST figures (0.2860 / 0.3530).
 */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <zlib.h>

#include "rt_dataset.h"
#include "t.h"

#define SYS_DIR "/usr/share/datasets/fashion-mnist"

static rt_dataset_splits full; /* loaded once, read by several tests */

/* Mean and std of every normalised float of d, as the trainer reads them. */
static void stats(const rt_dataset *d, double *mean, double *std)
{
    double s = 0, q = 0;
    float x[784];
    for (int i = 0; i < d->n; i++) {
        rt_dataset_image_f32(d, i, x);
        for (int k = 0; k < 784; k++) {
            s += x[k];
            q += (double)x[k] * x[k];
        }
    }
    size_t n = (size_t)d->n * 784;
    *mean = s / (double)n;
    *std = sqrt(q / (double)n - *mean * *mean);
}

/* The pixel bytes of an IDX image file, read here with zlib (not by the loader). */
static uint8_t *read_idx_pixels(const char *path, size_t n)
{
    gzFile f = gzopen(path, "rb");
    uint8_t head[16], *px = malloc(n);
    int ok = f && px && gzread(f, head, 16) == 16 && gzread(f, px, (unsigned)n) == (int)n;
    if (f) gzclose(f);
    if (!ok) free(px);
    return ok ? px : NULL;
}

/* FNV-1a 64 recomputed from the bytes rt_dataset_image_u8 gives back: proves they are
 * the loaded pixels and the checksum covers pixels then labels. */
static uint64_t checksum_from_u8(const rt_dataset *d)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    size_t img = (size_t)d->c * (size_t)d->h * (size_t)d->w;
    uint8_t *buf = malloc(img);
    for (int i = 0; buf && i < d->n; i++) {
        rt_dataset_image_u8(d, i, buf);
        for (size_t k = 0; k < img; k++) h = (h ^ buf[k]) * 0x100000001b3ULL;
    }
    for (int i = 0; i < d->n; i++) h = (h ^ d->labels[i]) * 0x100000001b3ULL;
    free(buf);
    return h;
}

T_TEST(sizes_and_names)
{
    ASSERT_EQ(full.train.n, 60000);
    ASSERT_EQ(full.test.n, 10000);
    ASSERT_EQ(full.val.n, 0);
    ASSERT_EQ(full.train.c, 1);
    ASSERT_EQ(full.train.h, 28);
    ASSERT_EQ(full.train.w, 28);
    ASSERT_EQ(full.train.num_classes, 10);
    ASSERT_STR_EQ(full.train.name, "fashion-mnist/train");
    ASSERT_STR_EQ(full.test.name, "fashion-mnist/test");
    ASSERT_STR_EQ(full.train.class_names[0], "T-shirt/top");
    ASSERT_STR_EQ(full.train.class_names[9], "Ankle boot");
    ASSERT_STR_EQ(full.test.class_names[7], "Sneaker");
    ASSERT_STR_EQ(full.source, SYS_DIR);
}

T_TEST(label_histogram)
{
    int htrain[10] = {0}, htest[10] = {0};
    for (int i = 0; i < full.train.n; i++) htrain[full.train.labels[i]]++;
    for (int i = 0; i < full.test.n; i++) htest[full.test.labels[i]]++;
    for (int c = 0; c < 10; c++) {
        ASSERT_EQ(htrain[c], 6000);
        ASSERT_EQ(htest[c], 1000);
    }
}

T_TEST(checksums)
{
    ASSERT_EQ(full.train.checksum, 0x47041d1f3a1991feULL);
    ASSERT_EQ(full.test.checksum, 0x7625417625bda6cfULL);
    ASSERT_EQ(checksum_from_u8(&full.test), full.test.checksum);
    ASSERT_EQ(checksum_from_u8(&full.train), full.train.checksum);
    ASSERT_NE(full.train.checksum, full.test.checksum);
}

T_TEST(normalisation)
{
    ASSERT_NEAR(full.train.mean[0], 0.2860406, 1e-6);
    ASSERT_NEAR(full.train.std[0], 0.3530242, 1e-6);
    ASSERT_NEAR(full.test.mean[0], full.train.mean[0], 0); /* train stats applied to test */
    double m, s;
    stats(&full.train, &m, &s);
    ASSERT_NEAR(m, 0.0, 1e-4);
    ASSERT_NEAR(s, 1.0, 1e-4);
    stats(&full.test, &m, &s); /* test is close to, not exactly, standardised */
    ASSERT_NEAR(m, (0.2868493 - 0.2860406) / 0.3530242, 1e-4);
}

/* The set is held as its bytes (a quarter of the floats' size), and the floats read
 * from it are bit for bit those of the float arrays it was once held as: for every
 * pixel v of every image, ((float)v / 255 - mean) / std, the file's bytes read here. */
T_TEST(floats_as_the_arrays_were)
{
    ASSERT(full.train.images == NULL && full.test.images == NULL);
    ASSERT(full.train.pixels != NULL && full.test.pixels != NULL);
    const rt_dataset *sets[2] = {&full.train, &full.test};
    const char *files[2] = {SYS_DIR "/train-images-idx3-ubyte.gz",
                            SYS_DIR "/t10k-images-idx3-ubyte.gz"};
    for (int k = 0; k < 2; k++) {
        const rt_dataset *d = sets[k];
        uint8_t *px = read_idx_pixels(files[k], (size_t)d->n * 784);
        ASSERT(px != NULL);
        float lut[256], x[784];
        for (int v = 0; v < 256; v++)
            lut[v] = ((float)v / 255.0f - full.train.mean[0]) / full.train.std[0];
        int bad = 0;
        for (int i = 0; i < d->n; i++) {
            rt_dataset_image_f32(d, i, x);
            for (int j = 0; j < 784; j++)
                bad += memcmp(&x[j], &lut[px[(size_t)i * 784 + j]], 4) != 0;
        }
        free(px);
        ASSERT_EQ(bad, 0);
    }
}

T_TEST(val_split)
{
    rt_dataset_splits s;
    rt_error err = {0};
    rt_dataset_opts o = {.name = "fashion-mnist", .val = 5000};
    ASSERT_EQ(rt_dataset_load(&s, &o, &err), RT_OK);
    ASSERT_EQ(s.train.n, 55000);
    ASSERT_EQ(s.val.n, 5000);
    ASSERT_EQ(s.test.n, 10000);
    ASSERT_STR_EQ(s.val.name, "fashion-mnist/val");
    ASSERT_STR_EQ(s.val.class_names[3], "Dress");
    uint8_t a[784], b[784];
    rt_dataset_image_u8(&s.val, 0, a); /* val = the last 5000 of train */
    rt_dataset_image_u8(&full.train, 55000, b);
    ASSERT(memcmp(a, b, sizeof a) == 0);
    rt_dataset_image_u8(&s.val, 4999, a);
    rt_dataset_image_u8(&full.train, 59999, b);
    ASSERT(memcmp(a, b, sizeof a) == 0);
    ASSERT_EQ(s.val.labels[0], full.train.labels[55000]);
    ASSERT_EQ(checksum_from_u8(&s.val), s.val.checksum);
    ASSERT_EQ(s.train.checksum, 0x362f3e0328dcfbfeULL); /* first 55000 */
    ASSERT_EQ(s.val.checksum, 0xed86867ea2cf681dULL);   /* last 5000 */
    ASSERT(s.train.mean[0] != full.train.mean[0]);      /* measured on the 55000 only */
    ASSERT_NEAR(s.val.mean[0], s.train.mean[0], 0);
    rt_dataset_splits_deinit(&s);
}

T_TEST(val_too_large)
{
    rt_dataset_splits s;
    rt_error err = {0};
    rt_dataset_opts o = {.name = "fashion-mnist", .val = 60000};
    ASSERT_EQ(rt_dataset_load(&s, &o, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "--val 60000");
    ASSERT(s.train.images == NULL && s.val.images == NULL && s.test.images == NULL);
}

static int stop_now(void *user)
{
    (*(int *)user)++;
    return 1;
}

T_TEST(interrupt_while_reading)
{
    rt_dataset_splits s;
    rt_error err = {0};
    int polls = 0;
    rt_dataset_opts o = {.name = "fashion-mnist", .should_stop = stop_now, .user = &polls};
    ASSERT_EQ(rt_dataset_load(&s, &o, &err), RT_EINTERRUPTED);
    ASSERT_STR_CONTAINS(err.msg, "train-images-idx3-ubyte.gz interrupted");
    ASSERT_EQ(polls, 1); /* stopped at the first check, 4 MiB in */
    ASSERT(s.train.images == NULL && s.test.images == NULL);
}

T_TEST(stable_across_loads)
{
    rt_dataset_splits s;
    rt_error err = {0};
    rt_dataset_opts alias = {.name = "Fashion_MNIST"}; /* spellings people use */
    ASSERT_EQ(rt_dataset_load(&s, &alias, &err), RT_OK);
    ASSERT_EQ(s.train.checksum, full.train.checksum);
    ASSERT_STR_EQ(s.train.name, "fashion-mnist/train");
    rt_dataset_splits_deinit(&s);
    rt_dataset_opts o = {.name = SYS_DIR}; /* the same files, by path */
    ASSERT_EQ(rt_dataset_load(&s, &o, &err), RT_OK);
    ASSERT_EQ(s.train.checksum, full.train.checksum);
    ASSERT_EQ(s.test.checksum, full.test.checksum);
    ASSERT_EQ(s.train.num_classes, 10);
    ASSERT_STR_EQ(s.train.name, "fashion-mnist/train");
    float a[784], b[784];
    rt_dataset_image_f32(&s.train, 0, a);
    rt_dataset_image_f32(&full.train, 0, b);
    ASSERT(memcmp(a, b, sizeof a) == 0);
    rt_dataset_splits_deinit(&s);
}

int main(void)
{
    if (access(SYS_DIR "/train-images-idx3-ubyte.gz", R_OK) != 0) {
        printf("SKIP: %s not installed (Debian package dataset-fashion-mnist)\n", SYS_DIR);
        return 77;
    }
    rt_error err = {0};
    rt_dataset_opts o = {.name = "fashion-mnist"};
    if (rt_dataset_load(&full, &o, &err) != RT_OK) {
        fprintf(stderr, "load failed: %s\n", err.msg);
        return 1;
    }
    T_RUN(sizes_and_names);
    T_RUN(label_histogram);
    T_RUN(checksums);
    T_RUN(normalisation);
    T_RUN(floats_as_the_arrays_were);
    T_RUN(val_split);
    T_RUN(val_too_large);
    T_RUN(interrupt_while_reading);
    T_RUN(stable_across_loads);
    rt_dataset_splits_deinit(&full);
    return T_EXIT();
}
