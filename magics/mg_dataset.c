/* mg_dataset.c - %dataset NAME [--dir D] [--url U] [--val N] [--samples N]: makes a data
 * set ready (rt_dataset_load finds it in --dir, the system locations or the cache, or
 * downloads it with progress) and shows its splits, shape, classes and a grid of
 * sample images, one per class first. The data set is kept in the workspace; %train
 * uses the one loaded last unless --data says otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg_images.h"
#include "mg_workspace.h"

static const mg_option options[] = {
    {"--dir", MG_OPT_STRING, "DIR", "look here first (and download here)", NULL},
    {"--url", MG_OPT_STRING, "URL", "base URL of the files instead of the canonical mirror", NULL},
    {"--val", MG_OPT_INT, "N", "move N training images into a validation split (0)", NULL},
    {"--samples", MG_OPT_INT, "N", "sample images to show (20; 0 = none)", NULL},
    {"--subset", MG_OPT_INT, "N", "keep only the first N training images (quick runs)", NULL},
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
    fprintf(t, "Data set %s (from %s)\n", w->name, s->source);
    fprintf(t, "  images: %d x %d x %d (C x H x W), %d classes\n", tr->c, tr->h, tr->w,
            tr->num_classes);
    fprintf(t, "  train %d, val %d, test %d\n", tr->n, s->val.n, s->test.n);
    fprintf(t, "  normalised with mean");
    for (int c = 0; c < tr->c; c++) fprintf(t, " %.4f", tr->mean[c]);
    fprintf(t, ", std");
    for (int c = 0; c < tr->c; c++) fprintf(t, " %.4f", tr->std[c]);
    fprintf(t, "\n  classes:");
    for (int c = 0; c < tr->num_classes; c++) fprintf(t, " %d=%s", c, tr->class_names[c]);
    fprintf(t, "\n");
    char *name = mg_html_escape(w->name), *src = mg_html_escape(s->source);
    fprintf(h, "<table><caption style=\"text-align:left\"><b>%s</b> <small>%s</small></caption>"
               "<tr><th>split</th><th>images</th><th>shape</th></tr>",
            name ? name : "", src ? src : "");
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
done:
    if (t) fclose(t);
    if (h) fclose(h);
    json_t *data = text && html ? json_pack("{s:s, s:s}", "text/plain", text, "text/html", html)
                                : NULL;
    if (data) ctx->out->display(ctx->out->user, data, NULL, NULL, 0);
    json_decref(data);
    free(text);
    free(html);
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
    json_t *b = mg_images_grid(d, cells, k, 10, title, err);
    free(cells);
    free(used);
    if (!b) return -1;
    ctx->out->display(ctx->out->user, b, NULL, NULL, 0);
    json_decref(b);
    return 0;
}

static int run(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    if (args->npos != 1)
        return mg_fail(err, "UsageError", "%%dataset: expected one data set name (%s), got %d "
                       "words", "mnist, fashion-mnist, cifar10 or a path", args->npos);
    long val, samples, subset;
    if (mg_args_int(args, "--subset", 0, &subset, err) < 0 ||
        mg_args_int(args, "--val", 0, &val, err) < 0 ||
        mg_args_int(args, "--samples", 20, &samples, err) < 0)
        return -1;
    if (val < 0 || val > 10000000)
        return mg_fail(err, "ValueError", "%%dataset: --val must be >= 0, got %ld", val);
    if (samples < 0 || samples > 256)
        return mg_fail(err, "ValueError", "%%dataset: --samples must be in 0..256, got %ld",
                       samples);
    mg_workspace *ws = mg_ws_get(ctx, err);
    if (!ws) return -1;
    if (subset < 0 || subset > 100000000)
        return mg_fail(err, "ValueError", "%%dataset: --subset must be >= 0, got %ld", subset);
    mg_ws_data *d = mg_ws_data_load(ws, ctx, args->pos[0], (int)val, (int)subset,
                                    mg_args_get(args, "--dir"), mg_args_get(args, "--url"), err);
    if (!d) return -1;
    show_summary(ctx, d);
    if (samples > 0) return show_samples(ctx, &d->splits.train, (int)samples, err);
    return 0;
}

const mg_command mg_cmd_dataset = {
    .name = "dataset",
    .positional = "mnist|fashion-mnist|cifar10",
    .summary = "Load a data set (mnist, fashion-mnist, cifar10, IDX/CIFAR files) and show samples",
    .usage = "Usage: %dataset NAME [--dir DIR] [--url URL] [--val N] [--samples N] [--subset N]\n\n"
             "Makes a data set ready for %train: mnist, fashion-mnist, cifar10, or a path/URL\n"
             "of IDX or CIFAR-10 files. Looks in --dir, then the system locations (Debian's\n"
             "dataset-fashion-mnist: /usr/share/datasets/fashion-mnist), then the cache, and\n"
             "otherwise downloads from the canonical mirrors (SHA-256 checked). Shows the\n"
             "splits, the classes and a grid of sample images.\n\n"
             "Examples:\n  %dataset fashion-mnist\n  %dataset mnist --val 5000 --dir data/",
    .flags = MG_LINE | MG_LONG_RUNNING,
    .options = options,
    .run = run,
};
