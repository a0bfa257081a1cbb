/* imgset_tool.c - loads an image folder with rt_dataset_load for the Pillow comparison
 * tests (test_image_folders.py).
 *
 *   imgset_tool PATH [--size N|HxW] [--channels C] [--val N|F] [--seed S] [--skip-bad]
 *                    [--dump FILE] [--rss] [--shape AxBxC]
 *
 * Prints "key value" lines: status, msg, layout, decoded, skipped, first_bad, splits
 * and shape, class names, mean/std. --dump writes each split (train, val, test) as its
 * raw bytes (rt_dataset_image_u8: N x C x H x W) followed by its N labels. --rss prints
 * how much anonymous memory (RssAnon) the load added, and again after reading every
 * training image as normalised floats (pass_mean: their mean). Exit 0 when
 * the load returned RT_OK, 1 when it returned an error, 2 on bad usage.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_dataset.h"

static const char *opt(int argc, char **argv, const char *name)
{
    for (int i = 2; i + 1 < argc; i++)
        if (!strcmp(argv[i], name)) return argv[i + 1];
    return NULL;
}

/* RssAnon of this process in KiB (/proc/self/status): memory no file backs. */
static long rss_anon_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "RssAnon: %ld", &kb) == 1) break;
    if (f) fclose(f);
    return kb;
}

/* Reads every training image as the trainer does (normalised floats, one at a time);
 * prints their mean, which is ~0 once every pixel was read. */
static int read_all(const rt_dataset *d)
{
    size_t img = (size_t)d->c * (size_t)d->h * (size_t)d->w;
    float *x = malloc(img * sizeof *x);
    if (!x) return -1;
    double sum = 0;
    for (int i = 0; i < d->n; i++) {
        rt_dataset_image_f32(d, i, x);
        for (size_t k = 0; k < img; k++) sum += x[k];
    }
    free(x);
    printf("pass_mean %.6f\n", sum / ((double)img * d->n));
    return 0;
}

static int dump(const char *path, const rt_dataset_splits *s)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    const rt_dataset *d[3] = {&s->train, &s->val, &s->test};
    int bad = 0;
    for (int k = 0; k < 3 && !bad; k++) {
        size_t img = (size_t)d[k]->c * (size_t)d[k]->h * (size_t)d[k]->w;
        uint8_t *px = malloc(img + 1);
        if (!px) bad = 1;
        for (int i = 0; !bad && i < d[k]->n; i++) {
            rt_dataset_image_u8(d[k], i, px);
            bad = fwrite(px, 1, img, f) != img;
        }
        if (!bad && d[k]->n) bad = fwrite(d[k]->labels, 1, (size_t)d[k]->n, f) != (size_t)d[k]->n;
        free(px);
    }
    return fclose(f) != 0 || bad ? -1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: imgset_tool PATH [--size N|HxW] [--channels C] [--val N|F] "
                        "[--seed S] [--skip-bad] [--dump FILE] [--rss] [--shape AxBxC]\n");
        return 2;
    }
    rt_dataset_opts o = {.name = argv[1]};
    const char *size = opt(argc, argv, "--size"), *val = opt(argc, argv, "--val");
    if (size && sscanf(size, "%dx%d", &o.image_h, &o.image_w) < 1) return 2;
    if (opt(argc, argv, "--channels")) o.channels = atoi(opt(argc, argv, "--channels"));
    if (val && strchr(val, '.')) o.val_fraction = atof(val);
    else if (val) o.val = atoi(val);
    if (opt(argc, argv, "--seed")) o.seed = strtoull(opt(argc, argv, "--seed"), NULL, 10);
    const char *shape = opt(argc, argv, "--shape"); /* a pixel CSV's, as %dataset takes it */
    if (shape && sscanf(shape, "%dx%dx%d", &o.shape[0], &o.shape[1], &o.shape[2]) != 3) return 2;
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--skip-bad")) o.skip_bad = 1;
    int rss = 0;
    for (int i = 2; i < argc; i++) rss |= !strcmp(argv[i], "--rss");
    long rss0 = rss_anon_kb();
    rt_dataset_splits s;
    rt_error err = {0};
    rt_status st = rt_dataset_load(&s, &o, &err);
    if (rss) printf("rss_anon_load_kb %ld\n", rss_anon_kb() - rss0);
    printf("status %d\nmsg %s\n", (int)st, st == RT_OK ? "" : err.msg);
    if (st != RT_OK) return 1;
    printf("layout %s\ndecoded %d\nskipped %d\nfirst_bad %s\n", s.images.layout, s.images.decoded,
           s.images.skipped, s.images.first_bad);
    printf("n %d %d %d\nshape %d %d %d\n", s.train.n, s.val.n, s.test.n, s.train.c, s.train.h,
           s.train.w);
    printf("classes");
    for (int c = 0; c < s.train.num_classes; c++) printf(" %s", s.train.class_names[c]);
    printf("\nmean");
    for (int c = 0; c < s.train.c; c++) printf(" %.6f", s.train.mean[c]);
    printf("\nstd");
    for (int c = 0; c < s.train.c; c++) printf(" %.6f", s.train.std[c]);
    printf("\n");
    int rc = 0;
    if (rss && read_all(&s.train) == 0) printf("rss_anon_pass_kb %ld\n", rss_anon_kb() - rss0);
    const char *out = opt(argc, argv, "--dump");
    if (out && dump(out, &s) != 0) {
        fprintf(stderr, "imgset_tool: cannot write %s\n", out);
        rc = 1;
    }
    rt_dataset_splits_deinit(&s);
    return rc;
}
