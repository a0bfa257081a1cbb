/* test_image_magics.c - %dataset on a folder of the user's own images, through the
 * command table as the engine runs it: the options reach the loader, the summary says
 * what was decoded (and, the second time, that the cache served it), a bad file is a
 * ValueError naming it or is skipped and counted, a small CNN trains on the folder
 * to well above chance and %predict on files names their classes, and the shipped
 * ResNet-20 learns a CIFAR-10-shaped folder. The folders are PNG files written here
 * (mg_png_encode): a bright square whose position (and colour) is the class.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mg.h"
#include "mg_png.h"
#include "rt_ckpt.h"
#include "rt_ckpt_dir.h"
#include "rt_model.h"
#include "t.h"
#include "tm_util.h"

static char g_dir[128], g_cache[192], g_store[192];
static mg_session *g_s;
static mg_error g_err;

/* A w x h PNG of ch channels (1 or 3) at path: 0 or -1. */
static int write_png(const char *path, const uint8_t *px, int w, int h, int ch)
{
    unsigned char *png;
    size_t len;
    mg_error e;
    if (mg_png_encode(px, w, h, ch, &png, &len, &e) < 0) return -1;
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(png, 1, len, f) == len;
    if (f && fclose(f) != 0) ok = 0;
    free(png);
    return ok ? 0 : -1;
}

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
            int w = i % 2 ? 12 : 16, h = 12; /* 16x12 is cropped to its centre 12x12 */
            uint8_t px[16 * 12];
            for (int p = 0; p < w * h; p++) {
                seed = seed * 1103515245u + 12345u;
                int y = p / w, x = p % w - (w - 12) / 2;
                int on = y >= 3 && y < 9 && x >= c * 4 && x < c * 4 + 4;
                px[p] = (uint8_t)((on ? 170 : 20) + (seed >> 16) % 60);
            }
            snprintf(path, sizeof path, "%s/%s/%03d.png", g_dir, classes[c], i);
            if (write_png(path, px, w, h, 1) != 0) return -1;
        }
    }
    return 0;
}

/* A CIFAR-10-shaped folder in dir: 32x32 RGB PNGs, n per class for `classes` classes;
 * class c is a 12x12 square of its own colour at its own place on noise. */
static int write_cifar_like(const char *dir, int classes, int n)
{
    unsigned seed = 11;
    if (mkdir(dir, 0755) != 0) return -1;
    for (int c = 0; c < classes; c++) {
        char path[300];
        snprintf(path, sizeof path, "%s/class%02d", dir, c);
        if (mkdir(path, 0755) != 0) return -1;
        int y0 = (c % 3) * 10, x0 = (c / 3 % 3) * 10;
        uint8_t rgb[3] = {(uint8_t)(c & 1 ? 230 : 40), (uint8_t)(c & 2 ? 230 : 40),
                          (uint8_t)(c & 4 ? 230 : 40)};
        for (int i = 0; i < n; i++) {
            uint8_t px[32 * 32 * 3];
            for (int p = 0; p < 32 * 32; p++) {
                int y = p / 32, x = p % 32, on = y >= y0 && y < y0 + 12 && x >= x0 && x < x0 + 12;
                for (int k = 0; k < 3; k++) {
                    seed = seed * 1103515245u + 12345u;
                    px[3 * p + k] = (uint8_t)(on ? rgb[k] : 60 + (seed >> 16) % 120);
                }
            }
            snprintf(path, sizeof path, "%s/class%02d/%03d.png", dir, c, i);
            if (write_png(path, px, 32, 32, 3) != 0) return -1;
        }
    }
    return 0;
}

/* The text/plain of the first display containing needle, or NULL. */
static const char *display_with(const char *needle)
{
    size_t i;
    json_t *d;
    json_array_foreach(tm_c.log, i, d)
    {
        const char *tp =
            json_string_value(json_object_get(json_object_get(d, "data"), "text/plain"));
        if (tp && strstr(tp, needle)) return tp;
    }
    return NULL;
}

/* The text/html of the first display whose text/plain contains needle, or NULL. */
static const char *html_with(const char *needle)
{
    size_t i;
    json_t *d;
    json_array_foreach(tm_c.log, i, d)
    {
        json_t *data = json_object_get(d, "data");
        const char *tp = json_string_value(json_object_get(data, "text/plain"));
        if (tp && strstr(tp, needle)) return json_string_value(json_object_get(data, "text/html"));
    }
    return NULL;
}

T_TEST(test_dataset_folder_and_cache)
{
    char line[512];
    ASSERT_EQ(tm_fresh_session(&g_s), 0);
    tm_reset();
    snprintf(line, sizeof line,
             "dataset %s --size 8 --channels 1 --val 0.25 --seed 3 "
             "--samples 3",
             g_dir);
    int rc = tm_magic(g_s, line, NULL, &g_err);
    if (rc) fprintf(stderr, "%s: %s\n", g_err.ename, g_err.evalue);
    ASSERT_EQ(rc, 0);
    const char *sum = display_with("Data set ");
    ASSERT(sum != NULL);
    ASSERT_STR_CONTAINS(sum, "images: 1 x 8 x 8");
    ASSERT_STR_CONTAINS(sum, "train 90, val 30, test 0");
    ASSERT_STR_CONTAINS(sum, "folder: 120 files decoded");
    ASSERT_STR_CONTAINS(sum, "0=left 1=middle 2=right");
    ASSERT(capture_count(&tm_c, "image/png", NULL, NULL, NULL) == 1); /* the sample grid */
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

/* A new session with the folder loaded (8x8 grey, a quarter seeded to val) and the
 * small CNN "tiny" defined on it; 0 or -1. */
static int folder_and_tiny(void)
{
    char line[512];
    if (tm_fresh_session(&g_s) != 0) return -1;
    tm_reset();
    snprintf(line, sizeof line,
             "dataset %s --size 8 --channels 1 --val 0.25 --seed 3 "
             "--samples 0",
             g_dir);
    if (tm_magic(g_s, line, NULL, &g_err) != 0) return -1;
    return tm_magic(g_s, "model tiny",
                    "conv2d 4 3 pad=1\nrelu\nmaxpool 2\nflatten\n"
                    "dense 3\n",
                    &g_err);
}

/* A folder loaded without --val has no validation data: %train says so once, shows
 * and draws no validation metrics, records none, and the best checkpoint follows the
 * training loss (it used to print "test_loss 0.0000 test_acc 0.0000" every epoch, draw
 * both at 0 and record val_accuracy 0). */
T_TEST(test_train_without_validation_data)
{
    char line[600], rd[300];
    ASSERT_EQ(tm_fresh_session(&g_s), 0);
    tm_reset();
    snprintf(line, sizeof line, "dataset %s --size 8 --channels 1 --samples 0", g_dir);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    ASSERT_EQ(tm_magic(g_s, "model tiny", "conv2d 4 3 pad=1\nrelu\nflatten\ndense 3\n", &g_err), 0);
    tm_reset();
    snprintf(rd, sizeof rd, "%s.noval-run", g_dir);
    snprintf(line, sizeof line, "train tiny --epochs 2 --batch 20 --run-dir %s --name noval", rd);
    int rc = tm_magic(g_s, line, NULL, &g_err);
    if (rc) fprintf(stderr, "%s: %s\n", g_err.ename, g_err.evalue);
    ASSERT_EQ(rc, 0);
    const char *said = "No validation data (no --val split, no test split): nothing is "
                       "validated; the best checkpoint follows train_loss instead of val_loss\n";
    ASSERT_STR_CONTAINS(tm_c.out, said);
    ASSERT(strstr(strstr(tm_c.out, said) + 1, said) == NULL); /* once */
    ASSERT_STR_CONTAINS(tm_c.out, ": 120 train images, no validation data,\n  2 epochs");
    ASSERT(strstr(tm_c.out, "test_loss") == NULL && strstr(tm_c.out, "test_acc") == NULL);
    char *svg = capture_shown(&tm_c, "image/svg+xml");
    ASSERT(svg && strstr(svg, "train loss") && !strstr(svg, "test loss") &&
           !strstr(svg, "test accuracy"));
    free(svg);
    rt_results_run r;
    ASSERT_EQ(tm_last_run(g_store, &r), 0);
    char buf[64];
    double num;
    int isnum;
    ASSERT(!rt_results_run_value(&r, "val_accuracy", buf, sizeof buf, &num, &isnum));
    ASSERT(!rt_results_run_value(&r, "val_loss", buf, sizeof buf, &num, &isnum));
    ASSERT(rt_results_run_value(&r, "validation_split", buf, sizeof buf, &num, &isnum));
    ASSERT_STR_EQ(buf, "none");
    ASSERT(rt_results_run_value(&r, "train_loss", buf, sizeof buf, &num, &isnum));
    rt_results_run_free(&r);
    char *path = NULL, *skipped = NULL;
    rt_error re = {0};
    ASSERT_EQ(rt_ckpt_dir_latest(rd, &path, &skipped, &re), RT_OK);
    rt_ckpt_reader *ck = NULL;
    ASSERT_EQ(rt_ckpt_reader_open(path, RT_CKPT_OPEN_HEADER_ONLY, &ck, &re), RT_OK);
    rt_ckpt_metric m;
    ASSERT_EQ(rt_ckpt_reader_metric(ck, RT_CKPT_KEY_METRIC, &m, &re), RT_OK);
    ASSERT_STR_EQ(m.name, "train_loss");
    rt_ckpt_reader_destroy(ck);
    free(path);
    free(skipped);
    snprintf(line, sizeof line, "rm -rf '%s'", rd);
    ASSERT_EQ(system(line), 0);
}

T_TEST(test_train_on_folder)
{
    ASSERT_EQ(folder_and_tiny(), 0);
    int rc = tm_magic(g_s, "train tiny --epochs 6 --batch 10 --lr 0.05 --seed 1", NULL, &g_err);
    if (rc) fprintf(stderr, "%s: %s\n", g_err.ename, g_err.evalue);
    ASSERT_EQ(rc, 0);
    tm_reset();
    ASSERT_EQ(tm_magic(g_s, "evaluate tiny --split val", NULL, &g_err), 0);
    const char *rep = display_with("accuracy ");
    ASSERT(rep != NULL);
    double acc = atof(strstr(rep, "accuracy ") + 9);
    fprintf(stderr, "validation accuracy after 6 epochs: %.4f\n", acc);
    ASSERT(acc > 0.8); /* chance is 1/3 */
    /* %predict on files: a file and a glob, top 2, preprocessing as in training */
    tm_reset();
    char line2[512];
    snprintf(line2, sizeof line2, "predict tiny %s/left/003.png %s/right/00*.png --top 2", g_dir,
             g_dir);
    rc = tm_magic(g_s, line2, NULL, &g_err);
    if (rc) fprintf(stderr, "%s: %s\n", g_err.ename, g_err.evalue);
    ASSERT_EQ(rc, 0);
    ASSERT_STR_CONTAINS(tm_c.out, "tiny on 11 files (top 2");
    char want[300];
    snprintf(want, sizeof want, "%s/left/003.png: left ", g_dir);
    ASSERT_STR_CONTAINS(tm_c.out, want);
    for (int i = 0; i < 10; i++) {
        snprintf(want, sizeof want, "%s/right/%03d.png: right ", g_dir, i);
        ASSERT_STR_CONTAINS(tm_c.out, want);
    }
    ASSERT_EQ(capture_count(&tm_c, "image/png", NULL, NULL, NULL), 1); /* the thumbnails */
    snprintf(line2, sizeof line2, "predict tiny %s/nope/*.png", g_dir);
    ASSERT_EQ(tm_magic(g_s, line2, NULL, &g_err), -1);
    ASSERT_STR_EQ(g_err.ename, "FileNotFoundError");
    ASSERT_STR_CONTAINS(g_err.evalue, "no file matches");
    char bad[300];
    snprintf(bad, sizeof bad, "%s/notes.png", g_dir);
    FILE *f = fopen(bad, "w");
    ASSERT(f != NULL);
    fputs("not a picture", f);
    fclose(f);
    ASSERT_EQ(tm_magic(g_s, "predict tiny /tmp/../tmp/does-not-exist.png", NULL, &g_err), -1);
    snprintf(line2, sizeof line2, "predict tiny %s", bad);
    ASSERT_EQ(tm_magic(g_s, line2, NULL, &g_err), -1);
    ASSERT_STR_EQ(g_err.ename, "ValueError");
    ASSERT_STR_CONTAINS(g_err.evalue, bad);
    remove(bad);
}

/* Trains `model` one epoch into run, then, in a new session (as a new kernel would),
 * resumes the run to epoch 2: 0, or -1 with the error on stderr. */
static int train_then_resume(const char *model, int batch, const char *run)
{
    char line[600];
    snprintf(line, sizeof line, "train %s --epochs 1 --batch %d --seed 1 --run-dir %s", model,
             batch, run);
    if (tm_magic(g_s, line, NULL, &g_err) != 0 || tm_fresh_session(&g_s) != 0) return -1;
    tm_reset();
    snprintf(line, sizeof line, "resume %s --epochs 2", run);
    if (tm_magic(g_s, line, NULL, &g_err) != 0) {
        fprintf(stderr, "%s: %s\n", g_err.ename, g_err.evalue);
        return -1;
    }
    return strstr(tm_c.out, "epoch 2/2") ? 0 : -1;
}

/* A run on a folder resumed in a new session (as a new kernel would): the data set is
 * reloaded with the options it was trained with (--size, --channels, --val fraction and
 * --seed), not the defaults, so it is the same data set and the run continues. */
T_TEST(test_resume_folder_run)
{
    char line[600], run[200];
    snprintf(run, sizeof run, "%s.run", g_dir);
    ASSERT_EQ(folder_and_tiny(), 0);
    ASSERT_EQ(train_then_resume("tiny", 30, run), 0);
    snprintf(line, sizeof line, "rm -rf '%s'", run);
    if (system(line) != 0) fprintf(stderr, "could not remove %s\n", run);
}

/* "epoch E/N  loss L  acc A ..." line E of the run's text: its loss and accuracy. */
static int epoch_line(const char *out, int e, double *loss, double *acc)
{
    char key[32];
    snprintf(key, sizeof key, "epoch %d/", e);
    const char *p = out ? strstr(out, key) : NULL;
    return p && sscanf(strstr(p, "loss "), "loss %lf  acc %lf", loss, acc) == 2 ? 0 : -1;
}

/* The shipped ResNet-20 on a small CIFAR-10-shaped set (3x32x32 images; 4 classes so
 * that a few seconds of CPU are enough): the summary shows its blocks, and a short run
 * learns: the loss falls and the training accuracy rises far above chance (1/4). */
T_TEST(test_resnet20_learns)
{
    char dir[256], line[512];
    snprintf(dir, sizeof dir, "%s.cifar", g_dir);
    ASSERT_EQ(write_cifar_like(dir, 4, 10), 0);
    ASSERT_EQ(tm_fresh_session(&g_s), 0);
    tm_reset();
    snprintf(line, sizeof line, "dataset %s --size 32 --samples 0", dir);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    int rc = tm_magic(g_s, "model net resnet20", NULL, &g_err);
    if (rc) fprintf(stderr, "%s: %s\n", g_err.ename, g_err.evalue);
    ASSERT_EQ(rc, 0);
    const char *sum = display_with("Model: \"net\"");
    ASSERT(sum != NULL);
    ASSERT_STR_CONTAINS(sum, "residual:");
    ASSERT_STR_CONTAINS(sum, "  shortcut:");
    ASSERT_STR_CONTAINS(sum, "    add (identity)");
    ASSERT_STR_CONTAINS(sum, "Total params: 272,084"); /* 4 classes (10: 272,474) */
    /* its 84 rows are folded in the notebook: a summary line that opens the table */
    const char *mh = html_with("Model: \"net\"");
    ASSERT(mh != NULL);
    ASSERT_STR_CONTAINS(mh, "<details><summary>Model <b>net</b>: ");
    ASSERT_STR_CONTAINS(mh, "</table></details>");
    tm_reset();
    rc = tm_magic(g_s, "train net --epochs 3 --batch 10 --lr 0.003 --seed 1", NULL, &g_err);
    if (rc) fprintf(stderr, "%s: %s\n", g_err.ename, g_err.evalue);
    ASSERT_EQ(rc, 0);
    double l1, a1, l3, a3;
    ASSERT_EQ(epoch_line(tm_c.out, 1, &l1, &a1), 0);
    ASSERT_EQ(epoch_line(tm_c.out, 3, &l3, &a3), 0);
    fprintf(stderr, "resnet20: epoch 1 loss %.4f acc %.4f, epoch 3 loss %.4f acc %.4f\n", l1, a1,
            l3, a3);
    ASSERT(l3 < 0.7 * l1);
    ASSERT(a3 > 0.6);
    snprintf(line, sizeof line, "rm -rf '%s'", dir);
    if (system(line) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* A ResNet-20 checkpoint of the layout written before its convolutions lost their bias
 * (the shipped spec with every conv biased) still resumes in a new session: the
 * checkpoint carries its spec, and the resumed model is that one, biases and all. */
T_TEST(test_biased_resnet20_checkpoint_resumes)
{
    char dir[256], run[256], line[600], spec[8192], old[8192];
    snprintf(dir, sizeof dir, "%s.old", g_dir);
    snprintf(run, sizeof run, "%s.oldrun", g_dir);
    ASSERT_EQ(write_cifar_like(dir, 4, 4), 0);
    const rt_model_input in = {3, 32, 32, 4};
    ASSERT_EQ(rt_model_zoo_spec("resnet20", &in, spec, sizeof spec, NULL), RT_OK);
    size_t n = 0;
    for (const char *p = spec; *p;) { /* every " bias=false" dropped */
        if (!strncmp(p, " bias=false", 11)) p += 11;
        else old[n++] = *p++;
    }
    old[n] = 0;
    ASSERT_EQ(tm_fresh_session(&g_s), 0);
    tm_reset();
    snprintf(line, sizeof line, "dataset %s --size 32 --samples 0", dir);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    ASSERT_EQ(tm_magic(g_s, "model old", old, &g_err), 0);
    ASSERT_STR_CONTAINS(display_with("Model: \"old\""), "Total params: 272,868"); /* + 784 */
    ASSERT_EQ(train_then_resume("old", 8, run), 0);
    tm_reset();
    ASSERT_EQ(tm_magic(g_s, "model show old", NULL, &g_err), 0);
    ASSERT_STR_CONTAINS(display_with("Model: \"old\""), "Total params: 272,868");
    snprintf(line, sizeof line, "rm -rf '%s' '%s'", dir, run);
    if (system(line) != 0) fprintf(stderr, "could not remove %s, %s\n", dir, run);
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

/* The same %dataset cell run again in one session after the folder changed (a PNG cut
 * short, two new ones): the change is seen, and nothing is said to be decoded that was
 * not. Unchanged, the session's copy is reused and the summary says so. */
T_TEST(test_changed_folder_is_reloaded)
{
    char dir[200], line[1200], path[400];
    snprintf(dir, sizeof dir, "%s-changed", g_dir);
    ASSERT_EQ(write_cifar_like(dir, 2, 6), 0);
    ASSERT_EQ(tm_fresh_session(&g_s), 0);
    snprintf(line, sizeof line, "dataset %s --size 8 --samples 0 --skip-bad", dir);
    tm_reset();
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    ASSERT_STR_CONTAINS(display_with("Data set "), "folder: 12 files decoded");
    /* JupyterLab shows the HTML: it says what was decoded and the normalisation too, and
     * names the folder once */
    const char *html = html_with("Data set ");
    ASSERT(html != NULL);
    ASSERT_STR_CONTAINS(html, "folder: 12 files decoded");
    ASSERT_STR_CONTAINS(html, "normalised with mean");
    ASSERT(strstr(strstr(html, dir) + 1, dir) == NULL);
    ASSERT(strstr(strstr(display_with("Data set "), dir) + 1, dir) == NULL);
    tm_reset();
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    const char *sum = display_with("Data set ");
    ASSERT(sum != NULL);
    ASSERT_STR_CONTAINS(sum, "unchanged since this session loaded it (nothing decoded)");
    ASSERT(strstr(sum, "files decoded") == NULL);
    /* one file cut short, two added */
    snprintf(path, sizeof path, "%s/class00/002.png", dir);
    ASSERT_EQ(truncate(path, 40), 0);
    snprintf(line, sizeof line,
             "cp '%s/class01/000.png' '%s/class01/new1.png' && "
             "cp '%s/class00/001.png' '%s/class00/new2.png'",
             dir, dir, dir, dir);
    ASSERT_EQ(system(line), 0);
    snprintf(line, sizeof line, "dataset %s --size 8 --samples 0 --skip-bad", dir);
    for (int run = 0; run < 2; run++) {
        tm_reset();
        ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
        sum = display_with("Data set ");
        ASSERT(sum != NULL);
        ASSERT_STR_CONTAINS(sum, "train 13, val 0");
        ASSERT_STR_CONTAINS(sum, "skipped 1 bad file");
        ASSERT_STR_CONTAINS(sum, run ? "unchanged since" : "folder: 14 files decoded");
    }
    /* without --skip-bad the cut file is named, whatever the session held */
    snprintf(line, sizeof line, "dataset %s --size 8 --samples 0", dir);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, path);
    snprintf(line, sizeof line, "rm -rf '%s'", dir);
    if (system(line) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/* The results record of a run on a folder says how to load the data set again (every
 * %dataset option, a --val fraction as a fraction) and which of the checkpoints it
 * lists --keep has deleted since. */
T_TEST(test_results_record_of_a_folder_run)
{
    char line[600], run[200];
    snprintf(run, sizeof run, "%s.keep", g_dir);
    ASSERT_EQ(folder_and_tiny(), 0);
    snprintf(line, sizeof line,
             "train tiny --epochs 1 --batch 10 --seed 1 --run-dir %s "
             "--checkpoint-every 3steps --keep 1",
             run);
    int rc = tm_magic(g_s, line, NULL, &g_err);
    if (rc) fprintf(stderr, "%s: %s\n", g_err.ename, g_err.evalue);
    ASSERT_EQ(rc, 0);
    tm_reset();
    ASSERT_EQ(tm_magic(g_s, "results show last", NULL, &g_err), 0);
    const char *t = display_with("Parameters");
    ASSERT(t != NULL);
    ASSERT_STR_CONTAINS(t, "0.25"); /* --val 0.25, not the count "val 0" */
    ASSERT(strstr(t, "val        0\n") == NULL);
    ASSERT_STR_CONTAINS(t, "8x8");       /* --size 8 */
    ASSERT_STR_CONTAINS(t, "data_seed"); /* --seed 3 of %dataset */
    ASSERT_STR_CONTAINS(t, "channels");
    ASSERT_STR_CONTAINS(t, "skip_bad");
    /* steps 3, 6, 9 were saved and then rotated away; the last one is kept */
    ASSERT_STR_CONTAINS(t, "gone (deleted)");
    ASSERT_STR_CONTAINS(t, "present");
    snprintf(line, sizeof line, "rm -rf '%s'", run);
    if (system(line) != 0) fprintf(stderr, "could not remove %s\n", run);
}

/* --resume auto after a %dataset option changed: the run in DIR is not "the same
 * options" (which then failed on the training split's checksum); the changed data set
 * option is named and the run goes to DIR-v2, as docs/resume.md says. A folder whose
 * files changed since is a different data set too. */
T_TEST(test_resume_auto_sees_data_set_options)
{
    char line[700], run[200], dir[200];
    snprintf(run, sizeof run, "%s.auto", g_dir);
    snprintf(dir, sizeof dir, "%s-auto", g_dir);
    ASSERT_EQ(write_cifar_like(dir, 2, 8), 0);
    ASSERT_EQ(tm_fresh_session(&g_s), 0);
    snprintf(line, sizeof line, "dataset %s --size 8 --samples 0", dir);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    ASSERT_EQ(tm_magic(g_s, "model tiny", "conv2d 4 3 pad=1\nrelu\nflatten\ndense 2\n", &g_err), 0);
    snprintf(line, sizeof line, "train tiny --epochs 1 --batch 4 --seed 1 --run-dir %s", run);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    /* the same folder with --val 0.25: another data set */
    snprintf(line, sizeof line, "dataset %s --size 8 --samples 0 --val 0.25", dir);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    tm_reset();
    snprintf(line, sizeof line, "train tiny --epochs 1 --batch 4 --seed 1 --run-dir %s", run);
    int rc = tm_magic(g_s, line, NULL, &g_err);
    if (rc) fprintf(stderr, "%s: %s\n", g_err.ename, g_err.evalue);
    ASSERT_EQ(rc, 0);
    ASSERT(strstr(tm_c.out, "same options") == NULL);
    ASSERT_STR_CONTAINS(tm_c.out, "holds a run with other options: %dataset --val 0.25 "
                                  "(checkpoint 0)");
    char v2[260];
    snprintf(v2, sizeof v2, "This run goes to %s-v2", run);
    ASSERT_STR_CONTAINS(tm_c.out, v2);
    /* --size: named with both sides */
    snprintf(line, sizeof line, "dataset %s --size 10 --samples 0", dir);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    tm_reset();
    snprintf(line, sizeof line,
             "train tiny --epochs 1 --batch 4 --seed 1 --run-dir %s --resume must", run);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "%dataset --size 10x10 (checkpoint 8x8)");
    /* the same options, but the folder gained files since the run */
    snprintf(line, sizeof line, "cp '%s/class00/000.png' '%s/class00/added.png'", dir, dir);
    ASSERT_EQ(system(line), 0);
    snprintf(line, sizeof line, "dataset %s --size 8 --samples 0", dir);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    snprintf(line, sizeof line,
             "train tiny --epochs 1 --batch 4 --seed 1 --run-dir %s --resume must", run);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "the data set's training images (checksum");
    snprintf(line, sizeof line, "rm -rf '%s' '%s' '%s'-v*", dir, run, run);
    if (system(line) != 0) fprintf(stderr, "could not remove %s\n", run);
}

/* Stopped mid-epoch after an epoch ended: the plot, last drawn at that epoch's end,
 * gets the steps up to the stop (it ended at the epoch's last step). */
T_TEST(test_plot_has_every_step_after_a_stop)
{
    ASSERT_EQ(folder_and_tiny(), 0); /* 90 training images: 9 steps of 10 an epoch */
    int mid = 0;
    for (long polls = 12; polls < 400 && !mid; polls += 7) {
        tm_reset();
        tm_interrupt_after = polls;
        int rc = tm_magic(g_s, "train tiny --epochs 6 --batch 10 --seed 1", NULL, &g_err);
        ASSERT_EQ(rc, -1);
        ASSERT_STR_EQ(g_err.ename, "KeyboardInterrupt");
        const char *at = strstr(g_err.evalue, "after step ");
        ASSERT(at != NULL);
        long step = atol(at + strlen("after step "));
        if (step <= 9 || step % 9 == 0) continue; /* not mid-epoch after an epoch's end */
        mid = 1;
        const char *plot = NULL; /* the last plot display or update */
        size_t i;
        json_t *d;
        json_array_foreach(tm_c.log, i, d)
        {
            const char *tp =
                json_string_value(json_object_get(json_object_get(d, "data"), "text/plain"));
            if (tp && strstr(tp, "<loss/accuracy plot: ")) plot = tp;
        }
        ASSERT(plot != NULL);
        /* the progress never wraps (a checkpoint note scrolls instead) and the start
         * line comes as short lines, so no number is broken across two */
        const char *prog = html_with("step ");
        ASSERT(prog != NULL);
        ASSERT_STR_CONTAINS(prog, "white-space:nowrap");
        const char *start = strstr(tm_c.out, "Training tiny");
        ASSERT(start != NULL);
        for (int l = 0; l < 2; l++) {
            size_t len = strcspn(start, "\n");
            ASSERT(len <= 100);
            start += len + 1;
        }
        char want[96];
        snprintf(want, sizeof want, "epochs, %ld steps>", step);
        ASSERT_STR_CONTAINS(plot, want);
    }
    ASSERT(mid); /* some poll count stopped it mid-epoch */
}

int main(void)
{
    (void)tm_make_dataset; /* tm_util's IDX set: not used here */
    snprintf(g_dir, sizeof g_dir, "/tmp/kiln-img-XXXXXX");
    if (!mkdtemp(g_dir) || write_folder(40)) {
        fprintf(stderr, "cannot write the image folder in /tmp\n");
        return 99;
    }
    snprintf(g_cache, sizeof g_cache, "%s.cache", g_dir);
    setenv("KILN_IMAGE_CACHE", g_cache, 1);
    snprintf(g_store, sizeof g_store, "%s.results.sqlite", g_dir);
    setenv("KILN_RESULTS", g_store, 1); /* %train records here, not in ~ */
    T_RUN(test_dataset_folder_and_cache);
    T_RUN(test_train_without_validation_data);
    T_RUN(test_train_on_folder);
    T_RUN(test_resume_folder_run);
    T_RUN(test_resnet20_learns);
    T_RUN(test_biased_resnet20_checkpoint_resumes);
    T_RUN(test_bad_file);
    T_RUN(test_changed_folder_is_reloaded);
    T_RUN(test_results_record_of_a_folder_run);
    T_RUN(test_resume_auto_sees_data_set_options);
    T_RUN(test_plot_has_every_step_after_a_stop);
    mg_session_destroy(g_s);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s' '%s'*", g_dir, g_cache, g_store);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    return T_EXIT();
}
