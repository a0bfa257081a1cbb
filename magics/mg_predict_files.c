/* mg_predict_files.c - %predict [MODEL] FILE|GLOB...: the trained model on the user's own
 * image files, shown as thumbnails captioned with the top-k classes and probabilities.
 *
 * Each file goes through what training saw: decoded and fitted to the model's input
 * (rt_image_file_read: channels, resize to cover, centre crop, as image folders), then
 * normalised with the mean/std of the data set the model was defined on (for a model
 * from %checkpoint load, the one the checkpoint names; else the one loaded last). Inference is the model in eval mode (running BN statistics, no
 * dropout), in batches of its max batch, on its own backend. Globs are expanded here
 * (glob(3)), in name order; at most RT_EVAL_MAX_PREDS files.
 */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mg_eval.h"
#include "mg_images.h"

#define TOPK_MAX 5

/* 1 when the word names files rather than a model: a path, a glob, an image name or a
 * pixel CSV. */
int mg_predict_is_file_arg(const char *w)
{
    size_t n = strlen(w);
    if (strpbrk(w, "/*?[")) return 1;
    return (n > 4 && (!strcasecmp(w + n - 4, ".png") || !strcasecmp(w + n - 4, ".jpg") ||
                      !strcasecmp(w + n - 4, ".csv"))) ||
           (n > 5 && !strcasecmp(w + n - 5, ".jpeg"));
}

int mg_predict_is_csv(const char *w)
{
    size_t n = strlen(w);
    return n > 4 && !strcasecmp(w + n - 4, ".csv");
}

/* Expands the file words of args into paths (new array of new strings). */
static int expand(const mg_args *args, int first, char ***out, int *n, mg_error *err)
{
    char **v = NULL;
    int k = 0;
    for (int i = first; i < args->npos; i++) {
        glob_t g;
        int rc = glob(args->pos[i], 0, NULL, &g);
        if (rc == GLOB_NOMATCH || (rc == 0 && g.gl_pathc == 0)) {
            globfree(&g);
            for (int j = 0; j < k; j++) free(v[j]);
            free(v);
            return mg_fail(err, "FileNotFoundError", "%%predict: no file matches '%s'",
                           args->pos[i]);
        }
        for (size_t j = 0; rc == 0 && j < g.gl_pathc; j++) {
            if (k == RT_EVAL_MAX_PREDS) break;
            char **nv = realloc(v, (size_t)(k + 1) * sizeof *v);
            if (!nv || !(nv[k] = strdup(g.gl_pathv[j]))) {
                v = nv ? nv : v;
                rc = -1;
                break;
            }
            v = nv;
            k++;
        }
        globfree(&g);
        if (rc != 0) {
            for (int j = 0; j < k; j++) free(v[j]);
            free(v);
            return mg_fail(err, "MemoryError", "%%predict: out of memory listing files");
        }
    }
    *out = v;
    *n = k;
    return 0;
}

rt_status mg_predict_infer(rt_model *m, const float *images, int n, float *probs, rt_error *err)
{
    const rt_model_input *in = rt_model_input_shape(m);
    rt_backend *b = rt_model_backend(m);
    size_t img = (size_t)in->c * (size_t)in->h * (size_t)in->w;
    int mb = rt_model_max_batch(m), L = in->num_classes;
    int32_t *zeros = calloc((size_t)mb, sizeof *zeros);
    if (!zeros) return RT_ERR(err, RT_ENOMEM, "out of memory");
    rt_status st = RT_OK;
    for (int at = 0; at < n && st == RT_OK; at += mb) {
        int k = n - at < mb ? n - at : mb;
        st = rt_backend_upload(b, rt_model_input_tensor(m), images + (size_t)at * img,
                               (size_t)k * img * sizeof(float), err);
        if (st == RT_OK) /* labels only feed the loss, which is not shown */
            st = rt_backend_upload(b, rt_model_label_tensor(m), zeros, (size_t)k * 4, err);
        if (st == RT_OK) st = rt_model_forward(m, k, 0, 0, err);
        if (st == RT_OK) st = rt_model_loss(m, k, NULL, probs + (size_t)at * L, NULL, err);
    }
    free(zeros);
    return st;
}

int mg_predict_model_data(mg_ctx *ctx, const mg_args *args, int first, mg_ws_model **model,
                          mg_ws_data **data, mg_error *err)
{
    mg_workspace *ws = mg_ws_get(ctx, err);
    if (!ws) return -1;
    mg_ws_model *e = mg_ws_model_find(ws, first ? args->pos[0] : NULL);
    if (!e)
        return first ? mg_fail(err, "NameError", "%%predict: no model named '%s'", args->pos[0])
                     : mg_fail(err, "UsageError",
                               "%%predict: no model defined yet ---> HINT: "
                               "%%%%model NAME, then %%train");
    if (!e->trained)
        return mg_fail(err, "UsageError",
                       "%%predict: model '%s' has not been trained "
                       "---> HINT: %%train %s",
                       e->name, e->name);
    const char *want = mg_args_get(args, "--data");
    mg_ws_data *d = want                ? mg_ws_data_load(ws, ctx, want, -1, -1, NULL, NULL, err)
                    : e->origin.data[0] ? mg_ws_origin_open(ws, ctx, &e->origin, "%predict", err)
                                        : mg_ws_data_find(ws, e->dataset[0] ? e->dataset : NULL);
    if (!d && !want && e->origin.data[0]) return -1; /* err names the checkpoint's */
    if (!d) d = mg_ws_data_find(ws, NULL);
    if (!d)
        return want ? -1
                    : mg_fail(err, "UsageError",
                              "%%predict: no data set loaded, so "
                              "no normalisation or class names ---> HINT: %%dataset "
                              "NAME (the one '%s' was trained on)",
                              e->name);
    const rt_model_input *in = rt_model_input_shape(e->trained);
    const rt_dataset *tr = &d->splits.train;
    if (tr->c != in->c || tr->num_classes != in->num_classes)
        return mg_fail(err, "ValueError",
                       "%%predict: model '%s' takes %d channels and %d "
                       "classes; data set '%s' has %d and %d",
                       e->name, in->c, in->num_classes, d->name, tr->c, tr->num_classes);
    *model = e, *data = d;
    return 0;
}

void mg_predict_topk(const float *p, int L, int k, int *best)
{
    for (int j = 0; j < k && j < L; j++) { /* by selection: L <= 100 */
        best[j] = -1;
        for (int c = 0; c < L; c++) {
            int taken = 0;
            for (int i = 0; i < j; i++) taken |= best[i] == c;
            if (!taken && (best[j] < 0 || p[c] > p[best[j]])) best[j] = c;
        }
    }
}

int mg_predict_files(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    long topk;
    if (mg_args_int(args, "--top", 3, &topk, err) < 0) return -1;
    if (topk < 1 || topk > TOPK_MAX)
        return mg_fail(err, "ValueError", "%%predict: --top must be in 1..%d, got %ld", TOPK_MAX,
                       topk);
    int first = mg_predict_is_file_arg(args->pos[0]) ? 0 : 1;
    for (int i = first; i < args->npos; i++)
        if (mg_predict_is_csv(args->pos[i])) {
            if (args->npos - first != 1)
                return mg_fail(err, "UsageError",
                               "%%predict: a pixel CSV (%s) is predicted on alone, not with "
                               "other files",
                               args->pos[i]);
            return mg_predict_csv(ctx, args, first, (int)topk, err);
        }
    if (mg_args_get(args, "--out"))
        return mg_fail(err, "UsageError",
                       "%%predict: --out writes the predictions for a pixel CSV's rows; give "
                       "one (%%predict MODEL test.csv --out submission.csv)");
    mg_ws_model *e;
    mg_ws_data *d;
    if (mg_predict_model_data(ctx, args, first, &e, &d, err) < 0) return -1;
    const rt_model_input *in = rt_model_input_shape(e->trained);
    const rt_dataset *tr = &d->splits.train;
    if (in->c != 1 && in->c != 3)
        return mg_fail(err, "ValueError", "%%predict: files need a 1- or 3-channel model");
    char **files = NULL;
    int n = 0;
    if (expand(args, first, &files, &n, err) < 0) return -1;
    size_t img = (size_t)in->c * (size_t)in->h * (size_t)in->w, plane = img / (size_t)in->c;
    int L = in->num_classes, rc = -1;
    rt_dataset view = *tr; /* names, mean/std; our images */
    view.pixels = NULL, view.index = NULL;
    view.n = n;
    view.h = in->h, view.w = in->w;
    view.images = malloc((size_t)n * img * sizeof(float));
    view.labels = calloc((size_t)n, 1);
    uint8_t *px = malloc(img);
    float *probs = malloc((size_t)n * (size_t)L * sizeof(float));
    mg_grid_cell *cells = calloc((size_t)n, sizeof *cells);
    char(*caps)[160] = malloc((size_t)n * sizeof *caps);
    char *text = NULL;
    size_t tl = 0;
    FILE *t = open_memstream(&text, &tl);
    rt_error re = {0};
    if (!view.images || !view.labels || !px || !probs || !cells || !caps || !t) {
        mg_fail(err, "MemoryError", "%%predict: out of memory");
        goto out;
    }
    for (int i = 0; i < n; i++) {
        if (rt_image_file_read(files[i], in->c, in->h, in->w, px, &re) != RT_OK) {
            mg_fail_status(err, &re, "%%predict: %s", re.msg);
            goto out;
        }
        float *dst = view.images + (size_t)i * img;
        for (int c = 0; c < in->c; c++)
            for (size_t k = 0; k < plane; k++)
                dst[(size_t)c * plane + k] =
                    ((float)px[(size_t)c * plane + k] / 255.0f - tr->mean[c]) / tr->std[c];
    }
    if (mg_predict_infer(e->trained, view.images, n, probs, &re) != RT_OK) {
        mg_fail_status(err, &re, "%%predict: %s", re.msg);
        goto out;
    }
    fprintf(t, "%s on %d file%s (top %ld, normalised as %s):\n", e->name, n, n == 1 ? "" : "s",
            topk, d->name);
    for (int i = 0; i < n; i++) {
        const float *p = probs + (size_t)i * L;
        int best[TOPK_MAX];
        mg_predict_topk(p, L, (int)topk, best);
        int used = 0, kk = topk < L ? (int)topk : L;
        const char *slash = strrchr(files[i], '/');
        fprintf(t, "  %s:", files[i]);
        for (int k = 0; k < kk; k++) {
            fprintf(t, " %s %.1f%%", tr->class_names[best[k]], 100.0 * p[best[k]]);
            used += snprintf(caps[i] + used, sizeof caps[i] - (size_t)used, "%s%s %.0f%%",
                             k ? ", " : "", tr->class_names[best[k]], 100.0 * p[best[k]]);
            if (used >= (int)sizeof caps[i]) used = (int)sizeof caps[i] - 1;
        }
        fprintf(t, "\n");
        snprintf(caps[i] + used, sizeof caps[i] - (size_t)used, " (%s)",
                 slash ? slash + 1 : files[i]);
        cells[i] = (mg_grid_cell){.index = i, .caption = caps[i], .mark = 0};
    }
    fclose(t);
    t = NULL;
    if (ctx->out->stream) ctx->out->stream(ctx->out->user, "stdout", text, tl);
    char title[200];
    snprintf(title, sizeof title, "%s on %d file%s: top %ld classes", e->name, n, n == 1 ? "" : "s",
             topk);
    if (mg_images_show(ctx->out, &view, cells, n, 6, title, err) == 0) rc = 0;
out:
    if (t) fclose(t);
    free(text);
    for (int i = 0; i < n; i++) free(files[i]);
    free(files);
    free(view.images);
    free(view.labels);
    free(px);
    free(probs);
    free(cells);
    free(caps);
    return rc;
}
