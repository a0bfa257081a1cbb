/* test_pixcsv.c - Kaggle's pixel CSV (label,pixel0,...,pixelN), written here: grey
 * 28x28 rows inferred from 784 columns, RGB rows as channel planes (3072 inferred,
 * --shape 3x32x32) and interleaved (--shape 32x32x3), CRLF line ends and blank lines,
 * --val; a file without a label column (Kaggle's test.csv) is refused with the hint to
 * predict on it; ragged rows, non-numeric cells, values outside 0..255, labels beyond
 * 99, a pixel count no shape fits, a --shape that does not match, and a header that
 * is no pixel header are errors naming the file and line. A CSV of path,label is still
 * an image folder.
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_dataset.h"
#include "t.h"

static char dir[256];

static uint8_t val(int r, int k) { return (uint8_t)(r * 13 + k * 7); }

/* n rows of P pixels; labels r % 3 (or none); CRLF line ends when crlf. */
static void write_csv(const char *path, int n, int P, int labelled, int crlf)
{
    FILE *f = fopen(path, "wb");
    if (!f) return;
    const char *eol = crlf ? "\r\n" : "\n";
    if (labelled) fprintf(f, "label,");
    for (int k = 0; k < P; k++) fprintf(f, "pixel%d%s", k, k + 1 < P ? "," : eol);
    for (int r = 0; r < n; r++) {
        if (r == 2) fputs(eol, f); /* a blank line is skipped */
        if (labelled) fprintf(f, "%d,", r % 3);
        for (int k = 0; k < P; k++) fprintf(f, "%d%s", val(r, k), k + 1 < P ? "," : eol);
    }
    fclose(f);
}

static rt_status load(const char *path, int a, int b, int c, int v, rt_dataset_splits *s,
                      rt_error *err)
{
    rt_dataset_opts o = {.name = path, .val = v, .shape = {a, b, c}};
    return rt_dataset_load(s, &o, err);
}

T_TEST(grey_inferred)
{
    char p[400];
    snprintf(p, sizeof p, "%s/train.csv", dir);
    write_csv(p, 9, 784, 1, 1);
    rt_dataset_splits s;
    rt_error err = {0};
    ASSERT_EQ(load(p, 0, 0, 0, 2, &s, &err), RT_OK);
    ASSERT_EQ(s.train.c, 1);
    ASSERT_EQ(s.train.h, 28);
    ASSERT_EQ(s.train.w, 28);
    ASSERT_EQ(s.train.n, 7);
    ASSERT_EQ(s.val.n, 2);
    ASSERT_EQ(s.test.n, 0);
    ASSERT_EQ(s.train.num_classes, 3);
    ASSERT_STR_EQ(s.train.class_names[2], "2");
    uint8_t img[784];
    rt_dataset_image_u8(&s.train, 4, img);
    for (int k = 0; k < 784; k++) ASSERT_EQ(img[k], val(4, k));
    ASSERT_EQ(s.train.labels[4], 1);
    rt_dataset_image_u8(&s.val, 1, img); /* the last row */
    ASSERT_EQ(img[783], val(8, 783));
    rt_dataset_splits_deinit(&s);
}

T_TEST(rgb_planes_and_interleaved)
{
    char p[400];
    snprintf(p, sizeof p, "%s/rgb.csv", dir);
    write_csv(p, 4, 3072, 1, 0);
    rt_dataset_splits a, b, c;
    rt_error err = {0};
    ASSERT_EQ(load(p, 0, 0, 0, 0, &a, &err), RT_OK); /* 3072: 3x32x32 planes */
    ASSERT_EQ(load(p, 3, 32, 32, 0, &b, &err), RT_OK);
    ASSERT_EQ(load(p, 32, 32, 3, 0, &c, &err), RT_OK);
    ASSERT_EQ(a.train.c, 3);
    ASSERT_EQ(a.train.checksum, b.train.checksum);
    ASSERT_NE(a.train.checksum, c.train.checksum);
    uint8_t x[3072], y[3072];
    rt_dataset_image_u8(&a.train, 3, x);
    rt_dataset_image_u8(&c.train, 3, y);
    for (int ch = 0; ch < 3; ch++)
        for (int i = 0; i < 1024; i++) {
            ASSERT_EQ(x[ch * 1024 + i], val(3, ch * 1024 + i)); /* planes as written */
            ASSERT_EQ(y[ch * 1024 + i], val(3, i * 3 + ch));    /* pixel i's channel ch */
        }
    rt_dataset_splits_deinit(&a);
    rt_dataset_splits_deinit(&b);
    rt_dataset_splits_deinit(&c);
}

T_TEST(test_file_without_labels)
{
    char p[400];
    snprintf(p, sizeof p, "%s/test.csv", dir);
    write_csv(p, 3, 784, 0, 0);
    rt_dataset_splits s;
    rt_error err = {0};
    ASSERT_EQ(load(p, 0, 0, 0, 0, &s, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "test.csv: the file has no label column");
    ASSERT_STR_CONTAINS(err.msg, "HINT: %predict MODEL");
}

/* A train file whose line `line` (2 = the first row) is replaced by text. */
static void bad_row(const char *path, int line, const char *text, int P)
{
    FILE *f = fopen(path, "wb");
    fprintf(f, "label");
    for (int k = 0; k < P; k++) fprintf(f, ",pixel%d", k);
    fprintf(f, "\n");
    for (int l = 2; l <= 5; l++) {
        if (l == line) {
            fprintf(f, "%s\n", text);
            continue;
        }
        fprintf(f, "%d", l % 2);
        for (int k = 0; k < P; k++) fprintf(f, ",%d", k);
        fprintf(f, "\n");
    }
    fclose(f);
}

T_TEST(bad_rows_named_by_line)
{
    char p[400];
    snprintf(p, sizeof p, "%s/bad.csv", dir);
    rt_dataset_splits s;
    rt_error err = {0};
    struct {
        int line;
        const char *row, *msg;
    } cases[] = {
        {3, "1,0,1,2", "bad.csv:3: 4 cells, the header has 5"},
        {4, "1,0,1,2,3,4,5", "bad.csv:4: 7 cells, the header has 5"},
        {2, "1,0,x1,2,3", "bad.csv:2: cell 3 (pixel1) is 'x1', not an integer"},
        {5, "one,0,1,2,3", "bad.csv:5: cell 1 (label) is 'one', not an integer"},
        {3, "1,0,1,2,-3", "bad.csv:3: cell 5 (pixel3) is '-3', not an integer"},
        {4, "1,0,1.5,2,3", "bad.csv:4: cell 3 (pixel1) is '1.5', not an integer"},
        {3, "1,0,1,256,3", "bad.csv:3: pixel2 is 256, outside 0..255"},
        {5, "1,0,1,99999999999,3", "bad.csv:5: pixel2 is 1000000000, outside 0..255"},
        {2, "100,0,1,2,3", "bad.csv:2: label 100 is out of range (0 to 99)"},
        {3, "1,0,,2,3", "bad.csv:3: cell 3 (pixel1) is '', not an integer"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bad_row(p, cases[i].line, cases[i].row, 4);
        ASSERT_EQ(load(p, 1, 2, 2, 0, &s, &err), RT_EFORMAT);
        ASSERT_STR_CONTAINS(err.msg, p);
        ASSERT_STR_CONTAINS(err.msg, cases[i].msg);
        ASSERT(s.train.labels == NULL);
    }
    bad_row(p, 3, "1, 0 ,1,\"2\",3", 4); /* spaces and quotes around numbers are fine */
    ASSERT_EQ(load(p, 1, 2, 2, 0, &s, &err), RT_OK);
    rt_dataset_splits_deinit(&s);
}

T_TEST(shapes_that_do_not_fit)
{
    char p[400];
    snprintf(p, sizeof p, "%s/odd.csv", dir);
    write_csv(p, 3, 10, 1, 0);
    rt_dataset_splits s;
    rt_error err = {0};
    ASSERT_EQ(load(p, 0, 0, 0, 0, &s, &err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, "odd.csv: 10 pixel columns is not a square grey or RGB image");
    ASSERT_STR_CONTAINS(err.msg, "--shape CxHxW");
    ASSERT_EQ(load(p, 1, 2, 5, 0, &s, &err), RT_OK); /* 10 = 1x2x5 */
    ASSERT_EQ(s.train.w, 5);
    rt_dataset_splits_deinit(&s);
    ASSERT_EQ(load(p, 1, 3, 3, 0, &s, &err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, "rows have 10 pixels but --shape 1x3x3 needs 9");
    ASSERT_EQ(load(p, 5, 2, 7, 0, &s, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "one end must be the channel count");
    snprintf(p, sizeof p, "%s/rgb12.csv", dir); /* 3 x 2 x 2 = 12 inferred */
    write_csv(p, 3, 12, 1, 0);
    ASSERT_EQ(load(p, 0, 0, 0, 0, &s, &err), RT_OK);
    ASSERT_EQ(s.train.c, 3);
    ASSERT_EQ(s.train.h, 2);
    rt_dataset_splits_deinit(&s);
}

T_TEST(not_a_pixel_csv)
{
    char p[400];
    snprintf(p, sizeof p, "%s/plain.csv", dir);
    FILE *f = fopen(p, "wb");
    fprintf(f, "path,label\nmissing.png,cat\n"); /* an image folder's CSV, not pixels */
    fclose(f);
    rt_dataset_splits s;
    rt_error err = {0};
    ASSERT_NE(load(p, 0, 0, 0, 0, &s, &err), RT_OK);
    ASSERT_STR_CONTAINS(err.msg, "missing.png");
    snprintf(p, sizeof p, "%s/header-only.csv", dir);
    f = fopen(p, "wb");
    fprintf(f, "label,pixel0,pixel1,pixel2,pixel3\n");
    fclose(f);
    ASSERT_EQ(load(p, 0, 0, 0, 0, &s, &err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, "header-only.csv: no rows after the header");
    snprintf(p, sizeof p, "%s/one-class.csv", dir);
    f = fopen(p, "wb");
    fprintf(f, "label,pixel0\n4,1\n4,2\n");
    fclose(f);
    ASSERT_EQ(load(p, 0, 0, 0, 0, &s, &err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, "every row has label 4");
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/kiln-pixcsv-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 99;
    }
    T_RUN(grey_inferred);
    T_RUN(rgb_planes_and_interleaved);
    T_RUN(test_file_without_labels);
    T_RUN(bad_rows_named_by_line);
    T_RUN(shapes_that_do_not_fit);
    T_RUN(not_a_pixel_csv);
    int rc = T_EXIT();
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return rc;
}
