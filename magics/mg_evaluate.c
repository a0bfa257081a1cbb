/* mg_evaluate.c - %evaluate [MODEL] [--split test|val|train]: accuracy and loss of the
 * trained model on a split, a per-class table (precision, recall, support) and the
 * confusion matrix as a picture (PNG heat map, rows = true class) plus an HTML table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg_eval.h"
#include "mg_images.h"
#include "mg_png.h"

static const mg_option options[] = {
    {"--split", MG_OPT_CHOICE, NULL, "split to evaluate on (test)", "test|val|train"},
    {"--data", MG_OPT_STRING, "NAME", "data set (default: the one loaded last)", NULL},
    {NULL, 0, NULL, NULL, NULL},
};

#define CELL 28 /* pixels per confusion-matrix cell */

/* Heat map: white -> blue by the row-normalised count; the diagonal in green tones. */
static char *confusion_png(const rt_eval_result *e, mg_error *err)
{
    int L = e->num_classes, W = L * CELL;
    uint8_t *rgb = malloc((size_t)W * (size_t)W * 3);
    if (!rgb) return mg_fail(err, "MemoryError", "out of memory"), NULL;
    for (int t = 0; t < L; t++) {
        int64_t row = 0;
        for (int p = 0; p < L; p++) row += e->confusion[t][p];
        for (int p = 0; p < L; p++) {
            double f = row ? (double)e->confusion[t][p] / (double)row : 0;
            uint8_t c[3] = {(uint8_t)(255 - 225 * f), (uint8_t)(255 - (t == p ? 95 : 180) * f),
                            (uint8_t)(255 - (t == p ? 225 : 40) * f)};
            for (int y = 0; y < CELL; y++)
                for (int x = 0; x < CELL; x++) {
                    uint8_t *px = rgb + 3 * ((size_t)(t * CELL + y) * (size_t)W + (size_t)(p * CELL + x));
                    int edge = x == CELL - 1 || y == CELL - 1;
                    for (int k = 0; k < 3; k++) px[k] = edge ? 235 : c[k];
                }
        }
    }
    char *b64 = mg_png_base64(rgb, W, W, 3, err);
    free(rgb);
    return b64;
}

static void show_report(mg_ctx *ctx, const char *model, const rt_dataset *d,
                        const rt_eval_result *e, const char *png)
{
    int L = e->num_classes;
    char *text = NULL, *html = NULL;
    size_t tl = 0, hl = 0;
    FILE *t = open_memstream(&text, &tl), *h = open_memstream(&html, &hl);
    if (!t || !h) goto done;
    fprintf(t, "%s on %s: accuracy %.4f, loss %.4f (%lld images)\n", model, d->name,
            e->accuracy, e->loss, (long long)e->n);
    fprintf(t, "%-4s %-16s %9s %9s %8s\n", "#", "class", "precision", "recall", "support");
    fprintf(h, "<p><b>%s</b> on <b>%s</b>: accuracy <b>%.4f</b>, loss %.4f (%lld images)</p>"
               "<div style=\"display:flex;gap:24px;align-items:flex-start\"><table><tr><th>#</th>"
               "<th>class</th><th>precision</th><th>recall</th><th>support</th></tr>", model,
            d->name, e->accuracy, e->loss, (long long)e->n);
    for (int c = 0; c < L; c++) {
        int64_t tp = e->confusion[c][c], sup = 0, pred = 0;
        for (int k = 0; k < L; k++) sup += e->confusion[c][k], pred += e->confusion[k][c];
        double prec = pred ? (double)tp / (double)pred : 0, rec = sup ? (double)tp / (double)sup : 0;
        char *en = mg_html_escape(d->class_names[c]);
        fprintf(t, "%-4d %-16s %9.4f %9.4f %8lld\n", c, d->class_names[c], prec, rec, (long long)sup);
        fprintf(h, "<tr><td>%d</td><td>%s</td><td>%.4f</td><td>%.4f</td><td>%lld</td></tr>", c,
                en ? en : "", prec, rec, (long long)sup);
        free(en);
    }
    fprintf(t, "confusion matrix (rows: true class, columns: predicted):\n");
    for (int a = 0; a < L; a++) {
        for (int b = 0; b < L; b++) fprintf(t, "%6lld", (long long)e->confusion[a][b]);
        fputc('\n', t);
    }
    fprintf(h, "</table><figure style=\"margin:0\"><img alt=\"confusion matrix\" "
               "src=\"data:image/png;base64,%s\"/><figcaption style=\"font-size:11px\">confusion "
               "matrix: rows true class 0..%d, columns predicted</figcaption></figure></div>",
            png, L - 1);
done:
    if (t) fclose(t);
    if (h) fclose(h);
    json_t *data = text && html ? json_pack("{s:s, s:s, s:s}", "text/plain", text, "text/html",
                                            html, "image/png", png) : NULL;
    if (data) ctx->out->display(ctx->out->user, data, NULL, NULL, 0);
    json_decref(data);
    free(text);
    free(html);
}

static int run(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    mg_eval_target tg;
    if (mg_eval_resolve(ctx, args, "evaluate", &tg, err) < 0) return -1;
    rt_eval_result *e = malloc(sizeof *e);
    if (!e) return mg_fail(err, "MemoryError", "%%evaluate: out of memory");
    rt_error re = {0};
    int rc = -1;
    if (rt_trainer_evaluate(tg.model->trained, tg.split, 0, e, &re) != RT_OK) {
        mg_fail(err, "RuntimeError", "%%evaluate: %s", re.msg);
    } else {
        char *png = confusion_png(e, err);
        if (png) {
            show_report(ctx, tg.model->name, tg.split, e, png);
            rc = 0;
        }
        free(png);
    }
    free(e);
    return rc;
}

const mg_command mg_cmd_evaluate = {
    .name = "evaluate",
    .summary = "Accuracy, loss, per-class table and confusion matrix of a trained model",
    .usage = "Usage: %evaluate [MODEL] [--split test|val|train] [--data NAME]\n\n"
             "Evaluates the trained MODEL (default: the model defined last) on a split of the\n"
             "data set loaded last: accuracy, mean loss, precision/recall per class and the\n"
             "confusion matrix as a picture. Train first (%train) or load weights\n"
             "(%checkpoint load PATH).\n\nExample:\n  %evaluate mnist_net --split test",
    .flags = MG_LINE | MG_LONG_RUNNING,
    .options = options,
    .run = run,
};
