/* mg_predict_csv.c - %predict [MODEL] FILE.csv [--top K] [--out FILE] [--data NAME]: the
 * trained model on every row of a pixel CSV (Kaggle's test.csv: pixel0,... rows; a file
 * with a label column works too, and then the accuracy is shown).
 *
 * Rows are read as the data set's --shape when it was loaded with one (a pixel CSV of
 * interleaved rows), else as the model's C x H x W in channel planes, and normalised
 * with the data set's mean/std, as training saw them. Every row is inferred (eval
 * mode, in batches); shown are the count of rows per predicted class and the first 64
 * rows as thumbnails with their top-K classes. --out writes Kaggle's submission format,
 * "ImageId,Label" then one line a row (ImageId counts from 1), to FILE.part, renamed to
 * FILE once it is whole.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg_eval.h"
#include "mg_images.h"

#define TOPK_MAX 5

/* ImageId,Label for every row; 0 or -1 with err naming the file. */
static int write_submission(const char *path, const int *pred, int n, mg_error *err)
{
    char part[4200];
    if (snprintf(part, sizeof part, "%s.part", path) >= (int)sizeof part)
        return mg_fail(err, "ValueError", "%%predict: --out %s: path too long", path);
    FILE *f = fopen(part, "w");
    if (!f)
        return mg_fail(err, errno == ENOENT ? "FileNotFoundError" : "OSError",
                       "%%predict: --out %s: %s", path, strerror(errno));
    int bad = fprintf(f, "ImageId,Label\n") < 0;
    for (int i = 0; i < n && !bad; i++) bad = fprintf(f, "%d,%d\n", i + 1, pred[i]) < 0;
    bad |= fclose(f) != 0;
    if (bad || rename(part, path) != 0) {
        int e = errno;
        remove(part);
        return mg_fail(err, "OSError", "%%predict: --out %s: %s", path, strerror(e));
    }
    return 0;
}

int mg_predict_csv(mg_ctx *ctx, const mg_args *args, int first, int topk, mg_error *err)
{
    const char *path = args->pos[first], *out_path = mg_args_get(args, "--out");
    mg_ws_model *e;
    mg_ws_data *d;
    if (mg_predict_model_data(ctx, args, first, &e, &d, err) < 0) return -1;
    const rt_model_input *in = rt_model_input_shape(e->trained);
    const rt_dataset *tr = &d->splits.train;
    int given[3] = {in->c, in->h, in->w}, n = 0, c = 0, h = 0, w = 0, L = in->num_classes;
    const int *shape = d->images.shape[0] ? d->images.shape : given;
    uint8_t *px = NULL, *labels = NULL;
    rt_error re = {0};
    if (rt_pixel_csv_read(path, shape, &n, &c, &h, &w, &px, &labels, &re) != RT_OK)
        return mg_fail_status(err, &re, "%%predict: %s", re.msg);
    size_t img = (size_t)c * (size_t)h * (size_t)w, plane = (size_t)h * (size_t)w;
    float *x = NULL, *probs = NULL;
    int *pred = NULL, rc = -1;
    long count[RT_MAX_CLASSES] = {0};
    char *text = NULL;
    size_t tl = 0;
    FILE *t = NULL;
    mg_grid_cell *cells = NULL;
    char(*caps)[160] = NULL;
    if (c != in->c || h != in->h || w != in->w) {
        mg_fail(err, "ValueError",
                "%%predict: %s holds %dx%dx%d images but model '%s' takes %dx%dx%d", path, c, h, w,
                e->name, in->c, in->h, in->w);
        goto out;
    }
    x = malloc((size_t)n * img * sizeof *x);
    probs = malloc((size_t)n * (size_t)L * sizeof *probs);
    pred = malloc((size_t)n * sizeof *pred);
    cells = calloc(RT_EVAL_MAX_PREDS, sizeof *cells);
    caps = malloc(RT_EVAL_MAX_PREDS * sizeof *caps);
    t = open_memstream(&text, &tl);
    if (!x || !probs || !pred || !cells || !caps || !t) {
        mg_fail(err, "MemoryError", "%%predict: out of memory for %d rows of %s", n, path);
        goto out;
    }
    for (int ch = 0; ch < c; ch++) {
        float lut[256];
        rt_dataset_norm_table(tr, ch, lut);
        for (int i = 0; i < n; i++) {
            const uint8_t *s = px + (size_t)i * img + (size_t)ch * plane;
            float *o = x + (size_t)i * img + (size_t)ch * plane;
            for (size_t k = 0; k < plane; k++) o[k] = lut[s[k]];
        }
    }
    if (mg_predict_infer(e->trained, x, n, probs, &re) != RT_OK) {
        mg_fail_status(err, &re, "%%predict: %s", re.msg);
        goto out;
    }
    int right = 0, shown = n < RT_EVAL_MAX_PREDS ? n : RT_EVAL_MAX_PREDS;
    int kk = topk < L ? topk : L;
    for (int i = 0; i < n; i++) {
        int best[TOPK_MAX];
        const float *p = probs + (size_t)i * (size_t)L;
        mg_predict_topk(p, L, kk, best);
        pred[i] = best[0];
        count[best[0]]++;
        right += labels && labels[i] == best[0];
        if (i >= shown) continue;
        int used = snprintf(caps[i], sizeof caps[i], "row %d:", i + 1);
        for (int k = 0; k < kk && used < (int)sizeof caps[i]; k++)
            used += snprintf(caps[i] + used, sizeof caps[i] - (size_t)used, "%s %s %.0f%%",
                             k ? "," : "", tr->class_names[best[k]], 100.0 * p[best[k]]);
        cells[i] = (mg_grid_cell){
            .index = i, .caption = caps[i], .mark = labels ? (labels[i] == best[0] ? 1 : 2) : 0};
    }
    fprintf(t, "%s on %d row%s of %s (normalised as %s)", e->name, n, n == 1 ? "" : "s", path,
            d->name);
    if (labels)
        fprintf(t, "; accuracy %.2f%% (%d of %d, the file's labels)", 100.0 * right / n, right, n);
    fprintf(t, "\n  rows per predicted class:");
    for (int k = 0, sep = 0; k < L; k++)
        if (count[k]) fprintf(t, "%s %s: %ld", sep++ ? "," : "", tr->class_names[k], count[k]);
    fprintf(t, "\n");
    if (out_path && write_submission(out_path, pred, n, err) < 0) goto out;
    if (out_path) fprintf(t, "  wrote %s: ImageId,Label for %d rows\n", out_path, n);
    fclose(t);
    t = NULL;
    if (ctx->out->stream) ctx->out->stream(ctx->out->user, "stdout", text, tl);
    rt_dataset view = *tr; /* names; the file's raw rows as pixels */
    view.images = NULL, view.index = NULL, view.pixels = px;
    view.n = n, view.c = c, view.h = h, view.w = w;
    view.labels = labels; /* the grid reads pixels only */
    char title[300];
    snprintf(title, sizeof title, "%s on %s: the first %d row%s, top %d", e->name, path, shown,
             shown == 1 ? "" : "s", kk);
    if (mg_images_show(ctx->out, &view, cells, shown, 8, title, err) == 0) rc = 0;
out:
    if (t) fclose(t);
    free(text);
    free(px);
    free(labels);
    free(x);
    free(probs);
    free(pred);
    free(cells);
    free(caps);
    return rc;
}
