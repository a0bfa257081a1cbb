/* test_image_magics.c - %dataset on a folder of the user's own images, through the
 * command table as the engine runs it: the options reach the loader, the summary says
 * what was decoded (and, the second time, that the cache served it), a bad file is a
 * ValueError naming it or is skipped and counted, and a small CNN trains on the folder
 * to well above chance. The folder is PNG files written here (mg_png_encode): three
 * classes, a bright square whose position is the class, images of two sizes.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mg.h"
#include "mg_png.h"
#include "t.h"
#include "tm_util.h"

static char g_dir[128], g_cache[192], g_store[192];
static mg_session *g_s;
static mg_error g_err;

/* n PNGs per class into g_dir/<class>/; 0 or -1. */
static int write_folder(int n)
{
    static const char *const classes[3] = {"left", "middle", "right"};
    unsigned seed = 7;
    for (int c = 0; c < 3; c++) {
        char path[256];
        snprintf(path, sizeof path, "%s/%s", g_dir, classes[c]);
        if (mkdir(path, 0755) != 0) return -1;
        for (int i = 0; i < n; i++) {
            int w = i % 2 ? 12 : 16, h = 12;    /* 16x12 is cropped to its centre 12x12 */
            uint8_t px[16 * 12];
            for (int p = 0; p < w * h; p++) {
                seed = seed * 1103515245u + 12345u;
                int y = p / w, x = p % w - (w - 12) / 2;
                int on = y >= 3 && y < 9 && x >= c * 4 && x < c * 4 + 4;
                px[p] = (uint8_t)((on ? 170 : 20) + (seed >> 16) % 60);
            }
            unsigned char *png;
            size_t len;
            mg_error e;
            if (mg_png_encode(px, w, h, 1, &png, &len, &e) < 0) return -1;
            snprintf(path, sizeof path, "%s/%s/%03d.png", g_dir, classes[c], i);
            FILE *f = fopen(path, "wb");
            int ok = f && fwrite(png, 1, len, f) == len;
            if (f && fclose(f) != 0) ok = 0;
            free(png);
            if (!ok) return -1;
        }
    }
    return 0;
}

/* The text/plain of the first display containing needle, or NULL. */
static const char *display_with(const char *needle)
{
    size_t i;
    json_t *d;
    json_array_foreach(tm_c.displays, i, d) {
        const char *tp = json_string_value(json_object_get(json_object_get(d, "data"),
                                                           "text/plain"));
        if (tp && strstr(tp, needle)) return tp;
    }
    return NULL;
}

T_TEST(test_dataset_folder_and_cache)
{
    char line[512];
    ASSERT_EQ(tm_fresh_session(&g_s), 0);
    tm_reset();
    snprintf(line, sizeof line, "dataset %s --size 8 --channels 1 --val 0.25 --seed 3 "
             "--samples 3", g_dir);
    int rc = tm_magic(g_s, line, NULL, &g_err);
    if (rc) fprintf(stderr, "%s: %s\n", g_err.ename, g_err.evalue);
    ASSERT_EQ(rc, 0);
    const char *sum = display_with("Data set ");
    ASSERT(sum != NULL);
    ASSERT_STR_CONTAINS(sum, "images: 1 x 8 x 8");
    ASSERT_STR_CONTAINS(sum, "train 90, val 30, test 0");
    ASSERT_STR_CONTAINS(sum, "folder: 120 files decoded");
    ASSERT_STR_CONTAINS(sum, "0=left 1=middle 2=right");
    ASSERT(tm_count("image/png", NULL, NULL, NULL) == 1);      /* the sample grid */
    /* a new session (as a new kernel would): the cache serves it, nothing decoded */
    ASSERT_EQ(tm_fresh_session(&g_s), 0);
    tm_reset();
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    ASSERT(display_with("from the decode cache (nothing decoded)") != NULL);
    /* bad options are named */
    snprintf(line, sizeof line, "dataset %s --size 8x", g_dir);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--size");
    snprintf(line, sizeof line, "dataset %s --val 1.5", g_dir);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--val");
    snprintf(line, sizeof line, "dataset %s --channels 2", g_dir);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--channels");
}

T_TEST(test_train_on_folder)
{
    char line[512];
    ASSERT_EQ(tm_fresh_session(&g_s), 0);
    tm_reset();
    snprintf(line, sizeof line, "dataset %s --size 8 --channels 1 --val 0.25 --seed 3 "
             "--samples 0", g_dir);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    ASSERT_EQ(tm_magic(g_s, "model tiny", "conv2d 4 3 pad=1\nrelu\nmaxpool 2\nflatten\n"
                       "dense 3\n", &g_err), 0);
    int rc = tm_magic(g_s, "train tiny --epochs 6 --batch 10 --lr 0.05 --seed 1", NULL, &g_err);
    if (rc) fprintf(stderr, "%s: %s\n", g_err.ename, g_err.evalue);
    ASSERT_EQ(rc, 0);
    tm_reset();
    ASSERT_EQ(tm_magic(g_s, "evaluate tiny --split val", NULL, &g_err), 0);
    const char *rep = display_with("accuracy ");
    ASSERT(rep != NULL);
    double acc = atof(strstr(rep, "accuracy ") + 9);
    fprintf(stderr, "validation accuracy after 6 epochs: %.4f\n", acc);
    ASSERT(acc > 0.8);                /* chance is 1/3 */
}

T_TEST(test_bad_file)
{
    char line[512], bad[256];
    snprintf(bad, sizeof bad, "%s/middle/zz-broken.jpg", g_dir);
    FILE *f = fopen(bad, "wb");
    ASSERT(f != NULL);
    fputs("\xff\xd8\xff\xe0 this JPEG stops here", f);
    fclose(f);
    ASSERT_EQ(tm_fresh_session(&g_s), 0);
    tm_reset();
    snprintf(line, sizeof line, "dataset %s --size 8 --samples 0", g_dir);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), -1);
    ASSERT_STR_EQ(g_err.ename, "ValueError");
    ASSERT_STR_CONTAINS(g_err.evalue, bad);
    ASSERT_STR_CONTAINS(g_err.evalue, "--skip-bad");
    snprintf(line, sizeof line, "dataset %s --size 8 --samples 0 --skip-bad", g_dir);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    const char *sum = display_with("skipped 1 bad file (--skip-bad); the first: ");
    ASSERT(sum != NULL);
    ASSERT_STR_CONTAINS(sum, bad);
    ASSERT_STR_CONTAINS(sum, "train 120,");
    remove(bad);
}

int main(void)
{
    (void)tm_make_dataset;                   /* tm_util's IDX set: not used here */
    snprintf(g_dir, sizeof g_dir, "/tmp/kiln-img-XXXXXX");
    if (!mkdtemp(g_dir) || write_folder(40)) {
        fprintf(stderr, "cannot write the image folder in /tmp\n");
        return 99;
    }
    snprintf(g_cache, sizeof g_cache, "%s.cache", g_dir);
    setenv("KILN_IMAGE_CACHE", g_cache, 1);
    snprintf(g_store, sizeof g_store, "%s.results.sqlite", g_dir);
    setenv("KILN_RESULTS", g_store, 1);      /* %train records here, not in ~ */
    T_RUN(test_dataset_folder_and_cache);
    T_RUN(test_train_on_folder);
    T_RUN(test_bad_file);
    mg_session_destroy(g_s);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s' '%s'*", g_dir, g_cache, g_store);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    return T_EXIT();
}
