/* test_dataset_formats.c - %dataset on the formats beyond IDX, CIFAR-10 and image
 * folders, through the magics as the engine runs them: a pixel CSV (Kaggle's
 * label,pixel0,... rows) loads with its shape inferred or given, trains, and its
 * label-less test file is predicted row by row with %predict FILE.csv --out (Kaggle's
 * ImageId,Label submission); CIFAR-100 loads with fine labels and, with --labels
 * coarse, as the set cifar100-coarse. Every bad option and bad file is an error naming
 * the option or the file and line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mg.h"
#include "t.h"
#include "tm_util.h"

static char g_dir[128], g_store[192];
static mg_session *g_s;
static mg_error g_err;

/* Row r: an 8x8 grey image, a bright 4x4 square at the class's corner (class r % 3 when
 * labelled), as "label,p0,...,p63" or "p0,...". */
static void write_rows(const char *name, int n, int labelled, const char *bad_row, int bad_at)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "w");
    if (!f) return;
    if (labelled) fputs("label", f);
    for (int k = 0; k < 64; k++) fprintf(f, "%spixel%d", labelled || k ? "," : "", k);
    fprintf(f, "\n");
    unsigned seed = 7;
    for (int r = 0; r < n; r++) {
        if (r == bad_at) {
            fprintf(f, "%s\n", bad_row);
            continue;
        }
        int c = r % 3, y0 = c == 1 ? 4 : 0, x0 = c == 2 ? 4 : 0;
        if (labelled) fprintf(f, "%d", c);
        for (int k = 0; k < 64; k++) {
            int y = k / 8, x = k % 8, on = y >= y0 && y < y0 + 4 && x >= x0 && x < x0 + 4;
            seed = seed * 1103515245u + 12345u;
            fprintf(f, "%s%d", labelled || k ? "," : "", on ? 230 : (int)(seed >> 16) % 60);
        }
        fprintf(f, "\n");
    }
    fclose(f);
}

static int run(const char *fmt, const char *arg)
{
    char line[600];
    snprintf(line, sizeof line, fmt, arg);
    tm_reset();
    int rc = tm_magic(g_s, line, NULL, &g_err);
    if (rc) fprintf(stderr, "  %s -> %s: %s\n", line, g_err.ename, g_err.evalue);
    return rc;
}

T_TEST(pixel_csv_train_and_predict)
{
    char p[700], sub[300];
    ASSERT_EQ(tm_fresh_session(&g_s), 0);
    ASSERT_EQ(run("dataset %s/train.csv --val 30 --samples 3", g_dir), 0);
    const char *sum = NULL;
    size_t i;
    json_t *d;
    json_array_foreach(tm_c.log, i, d)
    {
        const char *tp =
            json_string_value(json_object_get(json_object_get(d, "data"), "text/plain"));
        if (tp && strstr(tp, "Data set ")) sum = tp;
    }
    ASSERT(sum != NULL);
    ASSERT_STR_CONTAINS(sum, "images: 1 x 8 x 8 (C x H x W), 3 classes"); /* 64 = 8 x 8 */
    ASSERT_STR_CONTAINS(sum, "train 120, val 30, test 0");
    ASSERT_STR_CONTAINS(sum, "0=0 1=1 2=2");
    ASSERT_EQ(tm_magic(g_s, "model tiny", "conv2d 4 3 pad=1\nrelu\nflatten\ndense 3\n", &g_err), 0);
    ASSERT_EQ(run("train tiny --epochs 4 --batch 10 --lr 0.05 --seed 1%s", ""), 0);
    /* the label-less test file: every row predicted, the submission written */
    snprintf(sub, sizeof sub, "%s/submission.csv", g_dir);
    snprintf(p, sizeof p, "predict tiny %s/test.csv --out %s", g_dir, sub);
    ASSERT_EQ(run("%s", p), 0);
    ASSERT_STR_CONTAINS(tm_c.out, "tiny on 90 rows of");
    ASSERT_STR_CONTAINS(tm_c.out, "rows per predicted class: 0: ");
    ASSERT_EQ(capture_count(&tm_c, "image/png", NULL, NULL, NULL), 1); /* the first rows */
    FILE *f = fopen(sub, "r");
    ASSERT(f != NULL);
    char line[64];
    int rows = 0, right = 0;
    ASSERT(fgets(line, sizeof line, f) && !strcmp(line, "ImageId,Label\n"));
    while (fgets(line, sizeof line, f)) {
        int id, lab;
        ASSERT_EQ(sscanf(line, "%d,%d", &id, &lab), 2);
        ASSERT_EQ(id, rows + 1);
        right += lab == rows % 3; /* the rows follow the training pattern */
        rows++;
    }
    fclose(f);
    ASSERT_EQ(rows, 90);
    fprintf(stderr, "  submission: %d of 90 rows as the pattern says\n", right);
    ASSERT(right > 72); /* chance is 30 */
    /* a labelled file: the accuracy on its labels */
    snprintf(p, sizeof p, "predict tiny %s/train.csv --top 2", g_dir);
    ASSERT_EQ(run("%s", p), 0);
    ASSERT_STR_CONTAINS(tm_c.out, "; accuracy ");
    ASSERT_STR_CONTAINS(tm_c.out, "of 150, the file's labels)");
}

T_TEST(pixel_csv_errors)
{
    ASSERT_EQ(tm_fresh_session(&g_s), 0);
    ASSERT_EQ(run("dataset %s/ragged.csv", g_dir), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "ragged.csv:5: 3 cells, the header has 65");
    ASSERT_STR_EQ(g_err.ename, "ValueError"); /* RT_EFORMAT */
    ASSERT_EQ(run("dataset %s/range.csv", g_dir), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "range.csv:3: pixel0 is 300, outside 0..255");
    ASSERT_EQ(run("dataset %s/test.csv", g_dir), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "test.csv: the file has no label column");
    ASSERT_EQ(run("dataset %s/train.csv --shape 8x8", g_dir), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--shape takes CxHxW or HxWxC");
    ASSERT_EQ(run("dataset %s/train.csv --shape 9x9x9", g_dir), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--shape");
    ASSERT_EQ(run("dataset %s/train.csv --shape 1x4x4", g_dir), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "rows have 64 pixels but --shape 1x4x4 needs 16");
    ASSERT_EQ(run("dataset %s/train.csv --labels coarse", g_dir), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--labels applies to cifar100 only");
    ASSERT_EQ(run("dataset cifar100 --labels middling%s", ""), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--labels");
    ASSERT_EQ(run("dataset %s/train.csv --shape 8x8x1 --samples 0", g_dir), 0); /* HxWxC */
    ASSERT_EQ(tm_magic(g_s, "model tiny", "flatten\ndense 3\n", &g_err), 0);
    ASSERT_EQ(run("train tiny --epochs 1 --batch 50%s", ""), 0);
    ASSERT_EQ(run("predict tiny --out %s/x.csv", g_dir), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--out writes the predictions for a pixel CSV");
    ASSERT_EQ(run("predict tiny %s/range.csv", g_dir), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "range.csv:3: pixel0 is 300");
    char p[700];
    snprintf(p, sizeof p, "predict tiny %s/test.csv --out %s/no/such/dir/sub.csv", g_dir, g_dir);
    ASSERT_EQ(run("%s", p), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--out");
    ASSERT_STR_CONTAINS(g_err.evalue, "sub.csv");
}

static void write_cifar100(const char *where)
{
    mkdir(where, 0755);
    const char *names[2] = {"train.bin", "test.bin"};
    for (int s = 0; s < 2; s++) {
        char p[300];
        snprintf(p, sizeof p, "%s/%s", where, names[s]);
        FILE *f = fopen(p, "wb");
        for (int r = 0; r < 12; r++) {
            uint8_t rec[3074];
            rec[0] = (uint8_t)(r % 20), rec[1] = (uint8_t)(r * 7 % 100);
            for (int k = 0; k < 3072; k++) rec[2 + k] = (uint8_t)(k + r);
            fwrite(rec, 1, sizeof rec, f);
        }
        fclose(f);
    }
}

T_TEST(cifar100_fine_and_coarse)
{
    char dir[200];
    snprintf(dir, sizeof dir, "%s/c100", g_dir);
    write_cifar100(dir);
    ASSERT_EQ(tm_fresh_session(&g_s), 0);
    ASSERT_EQ(run("dataset cifar100 --samples 0 --dir %s", dir), 0);
    ASSERT_EQ(run("dataset cifar100 --labels coarse --samples 4 --dir %s", dir), 0);
    size_t i;
    json_t *d;
    const char *sum = NULL;
    json_array_foreach(tm_c.log, i, d)
    {
        const char *tp =
            json_string_value(json_object_get(json_object_get(d, "data"), "text/plain"));
        if (tp && strstr(tp, "Data set ")) sum = tp;
    }
    ASSERT(sum != NULL);
    ASSERT_STR_CONTAINS(sum, "Data set cifar100-coarse");
    ASSERT_STR_CONTAINS(sum, "3 x 32 x 32 (C x H x W), 20 classes");
    ASSERT_STR_CONTAINS(sum, "19=vehicles_2");
    ASSERT_EQ(run("dataset cifar100-coarse --labels fine --dir %s", dir), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--labels fine contradicts cifar100-coarse");
    ASSERT_EQ(run("dataset cifar100 --labels fine --samples 0 --dir %s", dir), 0);
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/kiln-dsfmt-XXXXXX");
    if (!mkdtemp(g_dir)) return 99;
    snprintf(g_store, sizeof g_store, "%s/results.sqlite", g_dir);
    setenv("KILN_RESULTS", g_store, 1); /* %train records here, not in ~ */
    setenv("XDG_CACHE_HOME", g_dir, 1);
    write_rows("train.csv", 150, 1, NULL, -1);
    write_rows("test.csv", 90, 0, NULL, -1);
    write_rows("ragged.csv", 10, 1, "1,2,3", 3);
    char range[300];
    snprintf(range, sizeof range, "0,300");
    for (int k = 1; k < 64; k++)
        snprintf(range + strlen(range), sizeof range - strlen(range), ",1");
    write_rows("range.csv", 10, 1, range, 1);
    T_RUN(pixel_csv_train_and_predict);
    T_RUN(pixel_csv_errors);
    T_RUN(cifar100_fine_and_coarse);
    mg_session_destroy(g_s);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    return T_EXIT();
}
