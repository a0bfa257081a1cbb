/* mg_predict.c - %predict [MODEL] [--samples N] [--split S] [--seed N]: a grid of images
 * with the model's prediction (and confidence) over the true label; wrong predictions
 * framed red. Samples are the first N of the split, or N drawn at random with --seed.
 * With image files or globs as arguments: mg_predict_files.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg_eval.h"
#include "mg_images.h"

static const mg_option options[] = {
    {"--samples", MG_OPT_INT, "N", "images to show (16, at most 64)", NULL},
    {"--split", MG_OPT_CHOICE, NULL, "split to draw from (test)", "test|val|train"},
    {"--data", MG_OPT_STRING, "NAME", "data set (default: the one loaded last)", NULL},
    {"--seed", MG_OPT_INT, "N", "pick random images with this seed (default: the first N)", NULL},
    {"--top", MG_OPT_INT, "K", "files: the K most likely classes to show (3)", NULL},
    {"--out", MG_OPT_STRING, "FILE", "pixel CSV: write ImageId,Label for every row (Kaggle)", NULL},
    {NULL, 0, NULL, NULL, NULL},
};

static int run(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    for (int i = 0; i < args->npos; i++) /* files: the model on the user's images */
        if (mg_predict_is_file_arg(args->pos[i])) return mg_predict_files(ctx, args, err);
    long n, seed;
    if (mg_args_get(args, "--out"))
        return mg_fail(err, "UsageError",
                       "%%predict: --out writes the predictions for a pixel CSV's rows; give "
                       "one (%%predict MODEL test.csv --out submission.csv)");
    if (mg_args_int(args, "--samples", 16, &n, err) < 0 ||
        mg_args_int(args, "--seed", -1, &seed, err) < 0)
        return -1;
    if (n < 1 || n > RT_EVAL_MAX_PREDS)
        return mg_fail(err, "ValueError", "%%predict: --samples must be in 1..%d, got %ld",
                       RT_EVAL_MAX_PREDS, n);
    mg_eval_target tg;
    if (mg_eval_resolve(ctx, args, "predict", &tg, err) < 0) return -1;
    const rt_dataset *src = tg.split;
    if (n > src->n) n = src->n;
    /* a small view of the chosen images, so the runtime evaluates only them */
    rt_dataset view = *src;
    view.pixels = NULL, view.index = NULL; /* its own floats, below */
    size_t img = (size_t)src->c * (size_t)src->h * (size_t)src->w;
    int *pick = malloc((size_t)n * sizeof *pick);
    view.images = malloc((size_t)n * img * sizeof(float));
    view.labels = malloc((size_t)n);
    rt_eval_result *e = malloc(sizeof *e);
    mg_grid_cell *cells = calloc((size_t)n, sizeof *cells);
    char(*caps)[96] = malloc((size_t)n * sizeof *caps);
    int rc = -1;
    if (!pick || !view.images || !view.labels || !e || !cells || !caps) {
        mg_fail(err, "MemoryError", "%%predict: out of memory");
        goto out;
    }
    rt_rng g = rt_rng_stream((uint64_t)(seed < 0 ? 0 : seed), RT_RNG_SHUFFLE, 0, 0);
    for (int i = 0; i < n; i++) {
        int dup;
        do { /* distinct images: n <= 64, so a redraw is rare and cheap */
            pick[i] = seed < 0 ? i : (int)rt_rng_below(&g, (uint32_t)src->n);
            dup = 0;
            for (int k = 0; k < i; k++) dup |= pick[k] == pick[i];
        } while (dup);
        rt_dataset_image_f32(src, pick[i], view.images + (size_t)i * img);
        view.labels[i] = src->labels[pick[i]];
    }
    view.n = (int)n;
    rt_error re = {0};
    if (rt_trainer_evaluate(tg.model->trained, &view, (int)n, e, &re) != RT_OK) {
        mg_fail_status(err, &re, "%%predict: %s", re.msg);
        goto out;
    }
    int wrong = 0;
    for (int i = 0; i < e->npreds; i++) {
        const rt_prediction *p = &e->preds[i];
        int ok = p->predicted == p->label;
        wrong += !ok;
        snprintf(caps[i], sizeof caps[i], "%s %.0f%%%s%s", src->class_names[p->predicted],
                 100.0 * p->confidence, ok ? "" : " / true ", ok ? "" : src->class_names[p->label]);
        cells[i] = (mg_grid_cell){.index = pick[p->index], .caption = caps[i], .mark = ok ? 1 : 2};
    }
    char title[320];
    snprintf(title, sizeof title,
             "%s on %d %s images: %d right, %d wrong (prediction, "
             "confidence / true label when wrong)",
             tg.model->name, e->npreds, src->name, e->npreds - wrong, wrong);
    if (mg_images_show(ctx->out, src, cells, e->npreds, 8, title, err) == 0) rc = 0;
out:
    free(pick);
    free(view.images);
    free(view.labels);
    free(e);
    free(cells);
    free(caps);
    return rc;
}

const mg_command mg_cmd_predict = {
    .name = "predict",
    .summary = "A grid of images with predicted and true labels (or on your own files)",
    .usage = "Usage: %predict [MODEL] [--samples N] [--split test|val|train] [--seed N] "
             "[--data NAME]\n       %predict [MODEL] FILE|GLOB... [--top K] [--data NAME]\n"
             "       %predict [MODEL] FILE.csv [--top K] [--out FILE] [--data NAME]\n\n"
             "Shows N images of a split with the trained model's prediction and confidence;\n"
             "wrong ones are framed red and show the true label. Given image files (PNG,\n"
             "JPEG; globs expanded), shows each as a thumbnail with the K most likely\n"
             "classes, after the preprocessing training used (resize, crop, normalise).\n"
             "Given a pixel CSV (Kaggle's test.csv: pixel0,... rows), predicts every row,\n"
             "shows the first 64 and with --out writes ImageId,Label for all of them.\n\n"
             "Examples:\n  %predict mnist_net --samples 24 --seed 1\n"
             "  %predict pets photos/new/*.jpg --top 3\n"
             "  %predict digits test.csv --out submission.csv",
    .flags = MG_LINE | MG_LONG_RUNNING,
    .options = options,
    .run = run,
};
