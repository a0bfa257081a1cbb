/* mg_dataset.c - %dataset NAME [--dir D] [--url U] [--val N|F] [--samples N] [--size N|HxW]
 * [--channels C] [--seed S] [--skip-bad] [--labels fine|coarse] [--shape CxHxW|HxWxC]: makes a data set ready (rt_dataset_load finds
 * it in --dir, the system locations or the cache, or downloads it with progress; a
 * path may also be an image folder) and shows its splits, shape, classes, for image
 * folders what was decoded or skipped, and a grid of sample images, one per class first. The data set is kept in the workspace; %train
 * uses the one loaded last unless --data says otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg_images.h"
#include "mg_workspace.h"

static const mg_option options[] = {
    {"--dir", MG_OPT_STRING, "DIR", "look here first (and download here)", NULL},
    {"--url", MG_OPT_STRING, "URL", "base URL of the files instead of the canonical mirror", NULL},
    {"--val", MG_OPT_STRING, "N|F",
     "move N training images (or a fraction F < 1 of them) "
     "into a validation split (0)",
     NULL},
    {"--samples", MG_OPT_INT, "N", "sample images to show (20; 0 = none)", NULL},
    {"--subset", MG_OPT_INT, "N", "keep only the first N training images (quick runs)", NULL},
    {"--size", MG_OPT_STRING, "N|HxW", "image folders: resize and centre-crop to this (64)", NULL},
    {"--channels", MG_OPT_INT, "C", "image folders: 1 (grey) or 3 (RGB) (the first image's)", NULL},
    {"--seed", MG_OPT_INT, "S", "image folders: which images --val picks (0)", NULL},
    {"--skip-bad", MG_OPT_FLAG, NULL, "image folders: skip and count files that do not decode",
     NULL},
    {"--labels", MG_OPT_CHOICE, NULL,
     "cifar100: the 100 fine classes or the 20 superclasses (fine)", "fine|coarse"},
    {"--shape", MG_OPT_STRING, "CxHxW|HxWxC",
     "pixel CSV: the image shape (from the pixel count: 784 is 1x28x28, 3072 3x32x32)", NULL},
    {NULL, 0, NULL, NULL, NULL},
};

static void show_summary(mg_ctx *ctx, const mg_ws_data *w)
{
    const rt_dataset_splits *s = &w->splits;
    const rt_dataset *tr = &s->train;
    char *text = NULL, *html = NULL;
    size_t tl = 0, hl = 0;
    FILE *t = open_memstream(&text, &tl), *h = open_memstream(&html, &hl);
    if (!t || !h) goto done;
    /* a path is its own source: named once */
    int same = !strcmp(w->name, s->source) || !s->source[0];
    if (same) fprintf(t, "Data set %s\n", w->name);
    else fprintf(t, "Data set %s (from %s)\n", w->name, s->source);
    fprintf(t, "  images: %d x %d x %d (C x H x W), %d classes\n", tr->c, tr->h, tr->w,
            tr->num_classes);
    fprintf(t, "  train %d, val %d, test %d\n", tr->n, s->val.n, s->test.n);
    const rt_dataset_image_stats *im = &s->images;
    char how[160] = "", norm[200];
    if (im->layout && w->reused)
        snprintf(how, sizeof how, "%s: unchanged since this session loaded it (nothing decoded)",
                 im->layout);
    else if (im->layout && im->decoded)
        snprintf(how, sizeof how, "%s: %d files decoded", im->layout, im->decoded);
    else if (im->layout)
        snprintf(how, sizeof how, "%s: from the decode cache (nothing decoded)", im->layout);
    if (how[0]) fprintf(t, "  %s\n", how);
    if (im->layout && im->skipped)
        fprintf(t, "  skipped %d bad file%s (--skip-bad)%s%s\n", im->skipped,
                im->skipped == 1 ? "" : "s", im->first_bad[0] ? "; the first: " : "",
                im->first_bad);
    size_t nl = (size_t)snprintf(norm, sizeof norm, "normalised with mean");
    for (int c = 0; c < tr->c && nl < sizeof norm; c++)
        nl += (size_t)snprintf(norm + nl, sizeof norm - nl, " %.4f", tr->mean[c]);
    if (nl < sizeof norm) nl += (size_t)snprintf(norm + nl, sizeof norm - nl, ", std");
    for (int c = 0; c < tr->c && nl < sizeof norm; c++)
        nl += (size_t)snprintf(norm + nl, sizeof norm - nl, " %.4f", tr->std[c]);
    fprintf(t, "  %s\n  classes:", norm);
    for (int c = 0; c < tr->num_classes; c++) fprintf(t, " %d=%s", c, tr->class_names[c]);
    fprintf(t, "\n");
    char *name = mg_html_escape(w->name), *src = mg_html_escape(s->source);
    fprintf(h,
            "<table><caption style=\"text-align:left\"><b>%s</b> <small>%s</small></caption>"
            "<tr><th>split</th><th>images</th><th>shape</th></tr>",
            name ? name : "", same || !src ? "" : src);
    free(name);
    free(src);
    const rt_dataset *sp[3] = {tr, &s->val, &s->test};
    const char *names[3] = {"train", "val", "test"};
    for (int i = 0; i < 3; i++)
        fprintf(h, "<tr><td>%s</td><td>%d</td><td>%d&times;%d&times;%d</td></tr>", names[i],
                sp[i]->n, tr->c, tr->h, tr->w);
    fprintf(h, "</table><p>Classes: ");
    for (int c = 0; c < tr->num_classes; c++) {
        char *e = mg_html_escape(tr->class_names[c]);
        fprintf(h, "%s<code>%d</code> %s", c ? ", " : "", c, e ? e : "");
        free(e);
    }
    fprintf(h, "</p>");
    if (how[0]) fprintf(h, "<p>%s</p>", how); /* plain words: nothing to escape */
    fprintf(h, "<p>%s</p>", norm);
    if (im->layout && im->skipped) {
        char *e = mg_html_escape(im->first_bad);
        fprintf(h, "<p>Skipped %d bad file%s (--skip-bad)%s%s</p>", im->skipped,
                im->skipped == 1 ? "" : "s", e && e[0] ? ": " : "", e ? e : "");
        free(e);
    }
done:
    if (t) fclose(t);
    if (h) fclose(h);
    if (mg_display_text_html(ctx->out, text, html) != 0)
        mg_eprintf(ctx->out, "%%dataset: out of memory; the summary is not shown\n");
}

/* The first image of each class, then the next images in order, up to n. */
static int show_samples(mg_ctx *ctx, const rt_dataset *d, int n, mg_error *err)
{
    if (n > d->n) n = d->n;
    mg_grid_cell *cells = calloc((size_t)n, sizeof *cells);
    char *used = calloc((size_t)d->n, 1);
    if (!cells || !used) {
        free(cells);
        free(used);
        return mg_fail(err, "MemoryError", "%%dataset: out of memory");
    }
    int k = 0;
    for (int c = 0; c < d->num_classes && k < n; c++)
        for (int i = 0; i < d->n; i++)
            if (d->labels[i] == c) {
                cells[k++].index = i;
                used[i] = 1;
                break;
            }
    for (int i = 0; i < d->n && k < n; i++)
        if (!used[i]) cells[k++].index = i;
    for (int i = 0; i < k; i++) cells[i].caption = d->class_names[d->labels[cells[i].index]];
    char title[128];
    snprintf(title, sizeof title, "%d samples of %s", k, d->name);
    int rc = mg_images_show(ctx->out, d, cells, k, 10, title, err);
    free(cells);
    free(used);
    return rc;
}

/* --val N|F, --size N|HxW, --channels, --seed, --skip-bad -> *val and img. */
static int parse_image_opts(const mg_args *args, long *val, mg_ws_images *img, mg_error *err)
{
    const char *v = mg_args_get(args, "--val"), *size = mg_args_get(args, "--size");
    char *end = NULL;
    if (v && strpbrk(v, ".eE")) {
        img->val_fraction = strtod(v, &end);
        if (*end || !(img->val_fraction > 0 && img->val_fraction < 1))
            return mg_fail(err, "ValueError",
                           "%%dataset: --val takes a count N or a fraction "
                           "0 < F < 1, got '%s'",
                           v);
    } else if (v) {
        *val = strtol(v, &end, 10);
        if (*end || !v[0] || *val < 0 || *val > 10000000)
            return mg_fail(err, "ValueError",
                           "%%dataset: --val takes a count N >= 0 or a "
                           "fraction 0 < F < 1, got '%s'",
                           v);
    }
    if (size) {
        int n = sscanf(size, "%dx%d", &img->image_h, &img->image_w), k = 0;
        sscanf(size, "%*d%n", &k);
        if (n < 1 || img->image_h < 1 || img->image_h > 4096 ||
            (n == 2 && (img->image_w < 1 || img->image_w > 4096)) || (n == 1 && size[k] != '\0'))
            return mg_fail(err, "ValueError",
                           "%%dataset: --size takes N or HxW (1 to 4096), "
                           "got '%s'",
                           size);
        if (n == 1) img->image_w = img->image_h;
    }
    long ch, seed;
    if (mg_args_int(args, "--channels", 0, &ch, err) < 0 ||
        mg_args_int(args, "--seed", 0, &seed, err) < 0)
        return -1;
    if (ch != 0 && ch != 1 && ch != 3)
        return mg_fail(err, "ValueError",
                       "%%dataset: --channels takes 1 (grey) or 3 (RGB), "
                       "got %ld",
                       ch);
    img->channels = (int)ch;
    img->seed = (uint64_t)seed;
    img->skip_bad = mg_args_has(args, "--skip-bad");
    const char *shape = mg_args_get(args, "--shape");
    if (shape) {
        int *d = img->shape, k = 0;
        if (sscanf(shape, "%dx%dx%d%n", &d[0], &d[1], &d[2], &k) != 3 || shape[k] != '\0' ||
            !mg_ws_shape_valid(d))
            return mg_fail(err, "ValueError",
                           "%%dataset: --shape takes CxHxW or HxWxC (C 1 to 4, sides 1 to 4096), "
                           "got '%s'",
                           shape);
    }
    return 0;
}

/* --labels coarse names the set of CIFAR-100's superclasses: cifar100-coarse (so a
 * checkpoint, %resume and --data name the labels the model learnt). */
static int pick_labels(const mg_args *args, const char **name, mg_error *err)
{
    const char *labels = mg_args_get(args, "--labels");
    if (!labels) return 0;
    char norm[32];
    size_t k = 0;
    for (const char *p = *name; *p && k + 1 < sizeof norm; p++)
        if (*p != '-' && *p != '_') norm[k++] = (char)(*p | 0x20);
    norm[k] = '\0';
    int fine = !strcmp(labels, "fine");
    if (!strcmp(norm, "cifar100") || !strcmp(norm, "cifar100coarse")) {
        if (fine && strcmp(norm, "cifar100"))
            return mg_fail(err, "ValueError",
                           "%%dataset: --labels fine contradicts %s (the superclass labels): "
                           "use %%dataset cifar100",
                           *name);
        *name = fine ? "cifar100" : "cifar100-coarse";
        return 0;
    }
    return mg_fail(err, "ValueError",
                   "%%dataset: --labels applies to cifar100 only, not '%s' ---> HINT: CIFAR-100 "
                   "files of your own: %%dataset cifar100 --labels %s --dir DIR",
                   *name, labels);
}

static int run(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    if (args->npos != 1)
        return mg_fail(err, "UsageError",
                       "%%dataset: expected one data set name (%s), got %d "
                       "words",
                       "mnist, fashion-mnist, cifar10, cifar100, svhn or a path", args->npos);
    long val = 0, samples, subset;
    mg_ws_images img = {0};
    const char *name = args->pos[0];
    if (mg_args_int(args, "--subset", 0, &subset, err) < 0 ||
        mg_args_int(args, "--samples", 20, &samples, err) < 0 ||
        parse_image_opts(args, &val, &img, err) < 0 || pick_labels(args, &name, err) < 0)
        return -1;
    if (samples < 0 || samples > 256)
        return mg_fail(err, "ValueError", "%%dataset: --samples must be in 0..256, got %ld",
                       samples);
    mg_workspace *ws = mg_ws_get(ctx, err);
    if (!ws) return -1;
    if (subset < 0 || subset > 100000000)
        return mg_fail(err, "ValueError", "%%dataset: --subset must be >= 0, got %ld", subset);
    mg_ws_data *d =
        mg_ws_data_load_images(ws, ctx, name, (int)val, (int)subset, mg_args_get(args, "--dir"),
                               mg_args_get(args, "--url"), &img, err);
    if (!d) return -1;
    show_summary(ctx, d);
    if (samples > 0) return show_samples(ctx, &d->splits.train, (int)samples, err);
    return 0;
}

const mg_command mg_cmd_dataset = {
    .name = "dataset",
    .positional = "mnist|fashion-mnist|cifar10|cifar100|svhn",
    .summary = "Load a data set (mnist, fashion-mnist, cifar10, cifar100, svhn, IDX/CIFAR "
               "files, pixel CSV, image folders) and show samples",
    .usage = "Usage: %dataset NAME [--dir DIR] [--url URL] [--val N|F] [--samples N] "
             "[--subset N]\n                [--size N|HxW] [--channels 1|3] [--seed S] "
             "[--skip-bad]\n                [--labels fine|coarse] [--shape CxHxW|HxWxC]\n\n"
             "Makes a data set ready for %train: mnist, fashion-mnist, cifar10, cifar100\n"
             "(--labels coarse: its 20 superclasses, the set cifar100-coarse), svhn, or a\n"
             "path/URL of IDX, CIFAR-10/100 or SVHN files. Looks in --dir, then the system\n"
             "locations (Debian's dataset-fashion-mnist: /usr/share/datasets/fashion-mnist),\n"
             "then the cache, and otherwise downloads from the canonical mirrors (SHA-256\n"
             "checked). Shows the splits, the classes and a grid of sample images.\n\n"
             "Your own images: a folder of class folders (PATH/cat/*.jpg, PATH/dog/*.png),\n"
             "split folders (PATH/train/<class>/..., val/, test/), a CSV of path,label, or a\n"
             ".zip/.tar.gz of a folder. PNG and JPEG are decoded on every core, resized and\n"
             "centre-cropped to --size, and cached decoded: the next load decodes nothing.\n"
             "A file that does not decode is an error naming it, or with --skip-bad is\n"
             "skipped and counted. A CSV of label,pixel0,... rows (Kaggle's format) is read\n"
             "as images of --shape, or of the shape the pixel count gives.\n\n"
             "Examples:\n  %dataset fashion-mnist\n  %dataset mnist --val 5000 --dir data/\n"
             "  %dataset photos/ --size 32 --val 0.2 --skip-bad\n"
             "  %dataset cifar100 --labels coarse\n  %dataset train.csv --val 2000",
    .flags = MG_LINE | MG_LONG_RUNNING,
    .options = options,
    .run = run,
};
