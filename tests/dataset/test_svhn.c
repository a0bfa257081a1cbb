/* test_svhn.c - SVHN's MAT files, written here in MATLAB's level-5 layout (plain
 * miMATRIX elements, and zlib-compressed ones with y stored as uint8 the way MATLAB
 * shrinks doubles): they load by path and as the named set "svhn" through --dir,
 * column-major X transposed to (C, H, W), labels 1..10 to 0..9. Damaged files are
 * refused naming the file: truncated, a size that lies (an element longer than the
 * file, data not matching its dimensions), corrupt zlib data, labels outside 1..10,
 * X and y of different lengths, big-endian, v7.3, not a MAT file, no X. A download
 * that is not the published file fails the built-in SHA-256. (test_svhn_scipy.py
 * checks files that scipy writes.)
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "rt_dataset.h"
#include "t.h"

static char dir[256], plain[300], packed[300];

typedef struct buf {
    uint8_t *p;
    size_t n;
} buf;

static void put(buf *b, const void *d, size_t n)
{
    b->p = realloc(b->p, b->n + n + 8);
    memcpy(b->p + b->n, d, n);
    b->n += n;
}
static void put32(buf *b, uint32_t v)
{
    uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(b, x, 4);
}
static void pad(buf *b)
{
    static const uint8_t z[8] = {0};
    put(b, z, (8 - b->n % 8) % 8);
}

/* A miMATRIX element: class, dims, name, real part of `type` (n bytes). */
static void matrix(buf *out, int cls, const int *dims, int nd, const char *name, uint32_t type,
                   const void *data, uint32_t n)
{
    buf b = {0};
    put32(&b, 6), put32(&b, 8), put32(&b, (uint32_t)cls), put32(&b, 0);
    put32(&b, 5), put32(&b, 4 * (uint32_t)nd);
    for (int i = 0; i < nd; i++) put32(&b, (uint32_t)dims[i]);
    pad(&b);
    uint32_t len = (uint32_t)strlen(name);
    put32(&b, len << 16 | 1); /* small format: names here are 1 byte */
    uint8_t nm[4] = {0};
    memcpy(nm, name, len);
    put(&b, nm, 4);
    put32(&b, type), put32(&b, n);
    put(&b, data, n);
    pad(&b);
    put32(out, 14), put32(out, (uint32_t)b.n);
    put(out, b.p, b.n);
    free(b.p);
}

static void compressed(buf *out, const buf *elem)
{
    uLongf cl = compressBound(elem->n);
    uint8_t *c = malloc(cl);
    compress2(c, &cl, elem->p, elem->n, 6);
    put32(out, 15), put32(out, (uint32_t)cl);
    put(out, c, cl);
    free(c);
}

static uint8_t px(int n, int c, int y, int x) { return (uint8_t)(n * 37 + c * 71 + y * 5 + x * 3); }
static int label_of(int n) { return n % 10 + 1; } /* 1..10; 10 is the digit 0 */

/* A file of n 32x32x3 images; zip: compressed elements with y as uint8. */
static buf make_mat(int n, int zip, int nlabels)
{
    buf f = {0};
    char hdr[128];
    memset(hdr, ' ', sizeof hdr);
    memcpy(hdr, "MATLAB 5.0 MAT-file, written by test_svhn", 41);
    memset(hdr + 116, 0, 8);
    hdr[124] = 0x00, hdr[125] = 0x01, hdr[126] = 'I', hdr[127] = 'M';
    put(&f, hdr, 128);
    size_t len = (size_t)n * 3072;
    uint8_t *X = malloc(len);
    for (int i = 0; i < n; i++)
        for (int c = 0; c < 3; c++)
            for (int x = 0; x < 32; x++)
                for (int y = 0; y < 32; y++)
                    X[y + 32 * (x + 32 * (c + 3 * (size_t)i))] = px(i, c, y, x);
    int xd[4] = {32, 32, 3, n}, yd[2] = {nlabels, 1};
    double *yv = malloc((size_t)nlabels * sizeof *yv);
    uint8_t *y8 = malloc((size_t)nlabels);
    for (int i = 0; i < nlabels; i++) yv[i] = label_of(i), y8[i] = (uint8_t)label_of(i);
    buf ex = {0}, ey = {0};
    matrix(&ex, 9, xd, 4, "X", 2, X, (uint32_t)len);
    if (zip) matrix(&ey, 6, yd, 2, "y", 2, y8, (uint32_t)nlabels);
    else matrix(&ey, 6, yd, 2, "y", 9, yv, (uint32_t)nlabels * 8);
    if (zip) {
        compressed(&f, &ex);
        compressed(&f, &ey);
    } else {
        put(&f, ex.p, ex.n);
        put(&f, ey.p, ey.n);
    }
    free(ex.p), free(ey.p), free(X), free(yv), free(y8);
    return f;
}

static void write_buf(const char *path, const buf *b)
{
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(b->p, 1, b->n, f);
        fclose(f);
    }
}

static void write_set(const char *where, int zip)
{
    mkdir(where, 0755);
    char p[512];
    buf tr = make_mat(13, zip, 13), te = make_mat(5, zip, 5);
    snprintf(p, sizeof p, "%s/train_32x32.mat", where);
    write_buf(p, &tr);
    snprintf(p, sizeof p, "%s/test_32x32.mat", where);
    write_buf(p, &te);
    free(tr.p), free(te.p);
}

static int check_split(const rt_dataset *d, int n)
{
    uint8_t img[3072];
    if (d->n != n || d->c != 3 || d->h != 32 || d->w != 32) return 0;
    for (int i = 0; i < n; i++) {
        rt_dataset_image_u8(d, i, img);
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < 32; y++)
                for (int x = 0; x < 32; x++)
                    if (img[(c * 32 + y) * 32 + x] != px(i, c, y, x)) return 0;
        if (d->labels[i] != label_of(i) % 10) return 0;
    }
    return 1;
}

T_TEST(plain_and_compressed_load)
{
    rt_dataset_splits a, b;
    rt_error err = {0};
    rt_dataset_opts oa = {.name = plain}, ob = {.name = "svhn", .dir = packed, .val = 3};
    ASSERT_EQ(rt_dataset_load(&a, &oa, &err), RT_OK);
    ASSERT_EQ(rt_dataset_load(&b, &ob, &err), RT_OK);
    ASSERT(check_split(&a.train, 13));
    ASSERT(check_split(&a.test, 5));
    ASSERT_EQ(a.train.labels[9], 0); /* label 10 is the digit 0 */
    ASSERT_EQ(a.train.num_classes, 10);
    ASSERT_STR_EQ(a.train.class_names[7], "7");
    ASSERT_STR_EQ(b.train.name, "svhn/train");
    ASSERT_EQ(b.train.n, 10);
    ASSERT_EQ(b.val.n, 3);
    ASSERT_EQ(a.test.checksum, b.test.checksum);
    ASSERT_STR_EQ(rt_dataset_default_augment("svhn/train"), "crop:4"); /* digits: no flip */
    rt_dataset_splits_deinit(&a);
    rt_dataset_splits_deinit(&b);
}

/* Writes bytes over the packed train file (at offset; len < 0: truncate to offset). */
static void damage(const buf *good, size_t at, const void *bytes, long len)
{
    char p[512];
    snprintf(p, sizeof p, "%s/train_32x32.mat", plain);
    buf b = {malloc(good->n), good->n};
    memcpy(b.p, good->p, good->n);
    if (len < 0) b.n = at;
    else memcpy(b.p + at, bytes, (size_t)len);
    write_buf(p, &b);
    free(b.p);
}

static rt_status load_plain(rt_error *err)
{
    rt_dataset_splits s;
    rt_dataset_opts o = {.name = plain};
    rt_status st = rt_dataset_load(&s, &o, err);
    if (st == RT_OK) rt_dataset_splits_deinit(&s);
    return st;
}

T_TEST(damaged_files)
{
    char p[512];
    snprintf(p, sizeof p, "%s/train_32x32.mat", plain);
    rt_error err = {0};
    buf good = make_mat(13, 0, 13);
    /* X's element starts at 128; its real part's byte count is at 128+8+16+8+8+8+4 */
    size_t x_count = 128 + 8 + 16 + 24 + 8 + 4;
    uint8_t lie[4] = {0x00, 0x00, 0x00, 0x7f};
    damage(&good, x_count, lie, 4);
    ASSERT_EQ(load_plain(&err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, p);
    ASSERT_STR_CONTAINS(err.msg, "claims");
    uint8_t more[4] = {0x00, 0x34, 0x00, 0x00}; /* 13312 = 13 x 1024: not 13 x 3072 */
    damage(&good, x_count, more, 4);
    ASSERT_EQ(load_plain(&err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, "a lying size");
    uint8_t huge[4] = {0xff, 0xff, 0xff, 0x7f}; /* the X element: past the file's end */
    damage(&good, 132, huge, 4);
    ASSERT_EQ(load_plain(&err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, "claims 2147483647 bytes; the file has");
    damage(&good, good.n - 100, NULL, -1);
    ASSERT_EQ(load_plain(&err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, p);
    double eleven = 11;
    damage(&good, good.n - 8 * 13 + 8 * 3, &eleven, 8); /* y's 4th value */
    ASSERT_EQ(load_plain(&err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, "label 3 is 11; SVHN's labels are 1..10");
    damage(&good, 126, "MI", 2);
    ASSERT_EQ(load_plain(&err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, "big-endian");
    damage(&good, 0, "MATLAB 7.3 MAT-file", 19);
    ASSERT_EQ(load_plain(&err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, "v7.3 (HDF5)");
    damage(&good, 124, "\0\0\0\0", 4);
    ASSERT_EQ(load_plain(&err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, "not a level-5 MAT file");
    damage(&good, 128 + 52, "Q", 1); /* X's name: the file has no X then */
    ASSERT_EQ(load_plain(&err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, "no X variable");
    free(good.p);
    good = make_mat(13, 0, 12);
    damage(&good, 0, "M", 1);
    ASSERT_EQ(load_plain(&err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, "X holds 13 images but y 12 labels");
    free(good.p);
    good = make_mat(13, 1, 13);
    uint8_t junk[16];
    memset(junk, 0xA5, sizeof junk);
    damage(&good, 128 + 8 + 40, junk, sizeof junk); /* inside X's zlib stream */
    ASSERT_EQ(load_plain(&err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, p);
    ASSERT(strstr(err.msg, "corrupt compressed data") || strstr(err.msg, "truncated"));
    damage(&good, good.n - 40, NULL, -1);
    ASSERT_EQ(load_plain(&err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, p);
    free(good.p);
    write_set(plain, 0);
}

T_TEST(download_checks_the_builtin_hash)
{
    char url[400], target[400], p[512];
    snprintf(url, sizeof url, "file://%s/", packed);
    snprintf(target, sizeof target, "%s/target", dir);
    mkdir(target, 0755);
    rt_dataset_splits s;
    rt_error err = {0};
    rt_dataset_opts o = {.name = "svhn", .dir = target, .url = url};
    ASSERT_NE(rt_dataset_load(&s, &o, &err), RT_OK);
    ASSERT_STR_CONTAINS(err.msg, "train_32x32.mat");
    ASSERT_STR_CONTAINS(err.msg, "SHA-256 mismatch: expected 435e94d69a87fde4");
    snprintf(p, sizeof p, "%s/train_32x32.mat", target);
    ASSERT(access(p, F_OK) != 0);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/kiln-svhn-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 99;
    }
    setenv("XDG_CACHE_HOME", dir, 1); /* never a real cached copy */
    snprintf(plain, sizeof plain, "%s/plain", dir);
    snprintf(packed, sizeof packed, "%s/packed", dir);
    write_set(plain, 0);
    write_set(packed, 1);
    T_RUN(plain_and_compressed_load);
    T_RUN(damaged_files);
    T_RUN(download_checks_the_builtin_hash);
    int rc = T_EXIT();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return rc;
}
