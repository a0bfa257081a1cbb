/* mg_evaluate.c - %evaluate [MODEL] [--split test|val|train] [--top K]: accuracy (and the
 * top-K accuracy) and loss of the trained model on a split, a per-class table
 * (precision, recall, F1, support) and the
 * confusion matrix as one labelled SVG picture (heat map with the count in every cell,
 * class names on both axes; row i = true class i), beside the table in the HTML; the
 * bundle also carries it as image/svg+xml and, without text, as image/png. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg_eval.h"
#include "mg_images.h"
#include "mg_png.h"

static const mg_option options[] = {
    {"--split", MG_OPT_CHOICE, NULL, "split to evaluate on (test)", "test|val|train"},
    {"--data", MG_OPT_STRING, "NAME", "data set (default: the one loaded last)", NULL},
    {"--top", MG_OPT_INT, "K", "also the top-K accuracy (label among the K likeliest)", NULL},
    {NULL, 0, NULL, NULL, NULL},
};

#define CELL 34     /* pixels per cell of the SVG */
#define PNG_CELL 28 /* pixels per cell of the PNG */

/* Cell colour: white -> blue by the row-normalised count v; the diagonal in green tones. */
static void cell_rgb(double v, int diag, int rgb[3])
{
    rgb[0] = (int)(255 - 225 * v);
    rgb[1] = (int)(255 - (diag ? 95 : 180) * v);
    rgb[2] = (int)(255 - (diag ? 225 : 40) * v);
}

/* The same heat map as a PNG without text (image/png, for frontends that show neither
 * HTML nor SVG, e.g. a PDF export): row t = true class t, PNG_CELL pixels a cell. */
static char *confusion_png(const rt_eval_result *e, mg_error *err)
{
    int L = e->num_classes, W = L * PNG_CELL;
    uint8_t *rgb = malloc((size_t)W * (size_t)W * 3);
    if (!rgb) return mg_fail(err, "MemoryError", "out of memory"), NULL;
    for (int t = 0; t < L; t++) {
        int64_t row = 0;
        for (int p = 0; p < L; p++) row += e->confusion[t][p];
        for (int p = 0; p < L; p++) {
            int c[3];
            cell_rgb(row ? (double)e->confusion[t][p] / (double)row : 0, t == p, c);
            for (int y = 0; y < PNG_CELL; y++)
                for (int x = 0; x < PNG_CELL; x++) {
                    uint8_t *px = rgb + 3 * ((size_t)(t * PNG_CELL + y) * (size_t)W +
                                             (size_t)(p * PNG_CELL + x));
                    int edge = x == PNG_CELL - 1 || y == PNG_CELL - 1;
                    for (int k = 0; k < 3; k++) px[k] = (uint8_t)(edge ? 235 : c[k]);
                }
        }
    }
    char *b64 = mg_png_base64(rgb, W, W, 3, err);
    free(rgb);
    return b64;
}

/* The confusion matrix as one self-contained SVG: a heat map (white -> blue by the
 * row-normalised count, the diagonal in green tones) with the count in every cell,
 * the class names on both axes and "true" / "predicted" axis titles. Row t is true
 * class t and column p predicted class p; every cell has a <title> tooltip
 * "true A, predicted B: N". NULL with err on no memory. */
static char *confusion_svg(const rt_eval_result *e, const rt_dataset *d, mg_error *err)
{
    int L = e->num_classes, longest = 1;
    for (int c = 0; c < L; c++) {
        int n = (int)strlen(d->class_names[c]);
        if (n > longest) longest = n;
    }
    if (longest > 24) longest = 24;
    int lab = longest * 7 + 8, left = 22 + lab, top = 8, grid = L * CELL;
    int bottom = lab * 3 / 4 + 30, width = left + grid + 12, height = top + grid + bottom;
    char *svg = NULL;
    size_t sl = 0;
    FILE *f = open_memstream(&svg, &sl);
    if (!f) return mg_fail(err, "MemoryError", "out of memory"), NULL;
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
            "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"11\">"
            "<title>confusion matrix (rows: true class, columns: predicted)</title>",
            width, height, width, height);
    for (int t = 0; t < L; t++) {
        int64_t row = 0;
        for (int p = 0; p < L; p++) row += e->confusion[t][p];
        char *tn = mg_html_escape(d->class_names[t]);
        int y = top + t * CELL;
        fprintf(f,
                "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" dominant-baseline=\"middle\">%s"
                "</text>",
                left - 6, y + CELL / 2, tn ? tn : "");
        for (int p = 0; p < L; p++) {
            double v = row ? (double)e->confusion[t][p] / (double)row : 0;
            int c[3];
            cell_rgb(v, t == p, c);
            char *pn = mg_html_escape(d->class_names[p]);
            int x = left + p * CELL;
            fprintf(f,
                    "<g><title>true %s, predicted %s: %lld</title><rect x=\"%d\" y=\"%d\" "
                    "width=\"%d\" height=\"%d\" fill=\"rgb(%d,%d,%d)\" stroke=\"#ddd\"/>"
                    "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" dominant-baseline=\"middle\""
                    " fill=\"%s\">%lld</text></g>",
                    tn ? tn : "", pn ? pn : "", (long long)e->confusion[t][p], x, y, CELL, CELL,
                    c[0], c[1], c[2], x + CELL / 2, y + CELL / 2, v > 0.5 ? "#fff" : "#222",
                    (long long)e->confusion[t][p]);
            free(pn);
        }
        free(tn);
    }
    for (int p = 0; p < L; p++) {
        char *pn = mg_html_escape(d->class_names[p]);
        int x = left + p * CELL + CELL / 2, y = top + grid + 8;
        fprintf(f,
                "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" dominant-baseline=\"middle\" "
                "transform=\"rotate(-45 %d %d)\">%s</text>",
                x, y, x, y, pn ? pn : "");
        free(pn);
    }
    fprintf(f,
            "<text x=\"12\" y=\"%d\" text-anchor=\"middle\" font-weight=\"bold\" "
            "transform=\"rotate(-90 12 %d)\">true</text><text x=\"%d\" y=\"%d\" "
            "text-anchor=\"middle\" font-weight=\"bold\">predicted</text></svg>",
            top + grid / 2, top + grid / 2, left + grid / 2, height - 8);
    if (fclose(f) != 0 || !svg) {
        free(svg);
        return mg_fail(err, "MemoryError", "out of memory"), NULL;
    }
    return svg;
}

static void show_report(mg_ctx *ctx, const char *model, const rt_dataset *d,
                        const rt_eval_result *e, int top, const char *svg, const char *png)
{
    int L = e->num_classes;
    char *text = NULL, *html = NULL, topk[64] = "";
    size_t tl = 0, hl = 0;
    FILE *t = open_memstream(&text, &tl), *h = open_memstream(&html, &hl);
    if (!t || !h) goto done;
    if (top > 0) snprintf(topk, sizeof topk, ", top-%d accuracy %.4f", top, rt_eval_topk(e, top));
    fprintf(t, "%s on %s: accuracy %.4f%s, loss %.4f (%lld images)\n", model, d->name, e->accuracy,
            topk, e->loss, (long long)e->n);
    fprintf(t, "%-4s %-16s %9s %9s %9s %8s\n", "#", "class", "precision", "recall", "f1",
            "support");
    fprintf(h,
            "<p><b>%s</b> on <b>%s</b>: accuracy <b>%.4f</b>%s, loss %.4f (%lld images)</p>"
            "<div "
            "style=\"display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start\"><table><tr><th>#"
            "</th>"
            "<th>class</th><th>precision</th><th>recall</th><th>f1</th><th>support</th></tr>",
            model, d->name, e->accuracy, topk, e->loss, (long long)e->n);
    for (int c = 0; c < L; c++) {
        int64_t tp = e->confusion[c][c], sup = 0, pred = 0;
        for (int k = 0; k < L; k++) sup += e->confusion[c][k], pred += e->confusion[k][c];
        double prec = pred ? (double)tp / (double)pred : 0,
               rec = sup ? (double)tp / (double)sup : 0,
               f1 = prec + rec > 0 ? 2 * prec * rec / (prec + rec) : 0; /* sklearn's 0 */
        char *en = mg_html_escape(d->class_names[c]);
        fprintf(t, "%-4d %-16s %9.4f %9.4f %9.4f %8lld\n", c, d->class_names[c], prec, rec, f1,
                (long long)sup);
        fprintf(h,
                "<tr><td>%d</td><td>%s</td><td>%.4f</td><td>%.4f</td><td>%.4f</td><td>%lld</td>"
                "</tr>",
                c, en ? en : "", prec, rec, f1, (long long)sup);
        free(en);
    }
    fprintf(t, "confusion matrix (rows: true class, columns: predicted):\n");
    for (int a = 0; a < L; a++) {
        fprintf(t, "%-4d %-16s", a, d->class_names[a]);
        for (int b = 0; b < L; b++) fprintf(t, "%6lld", (long long)e->confusion[a][b]);
        fputc('\n', t);
    }
    fprintf(h,
            "</table><figure style=\"margin:0\">%s<figcaption style=\"font-size:11px\">"
            "confusion matrix: rows true class, columns predicted</figcaption></figure>"
            "</div>",
            svg);
done:
    if (t) fclose(t);
    if (h) fclose(h);
    json_t *data = text && html ? json_pack("{s:s, s:s, s:s, s:s}", "text/plain", text, "text/html",
                                            html, "image/svg+xml", svg, "image/png", png)
                                : NULL;
    if (data) ctx->out->display(ctx->out->user, data, NULL, NULL, 0);
    json_decref(data);
    free(text);
    free(html);
}

static int run(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    long top = 0;
    if (mg_args_int(args, "--top", 0, &top, err) < 0) return -1;
    if (mg_args_has(args, "--top") && (top < 1 || top > RT_MAX_CLASSES))
        return mg_fail(err, "ValueError", "%%evaluate: --top must be in 1..%d, got %ld",
                       RT_MAX_CLASSES, top);
    mg_eval_target tg;
    if (mg_eval_resolve(ctx, args, "evaluate", &tg, err) < 0) return -1;
    if (top > tg.split->num_classes)
        return mg_fail(err, "ValueError",
                       "%%evaluate: --top %ld: '%s' has %d classes (K must be at most that)", top,
                       tg.split->name, tg.split->num_classes);
    rt_eval_result *e = malloc(sizeof *e);
    if (!e) return mg_fail(err, "MemoryError", "%%evaluate: out of memory");
    rt_error re = {0};
    int rc = -1;
    if (rt_trainer_evaluate(tg.model->trained, tg.split, 0, e, &re) != RT_OK) {
        mg_fail_status(err, &re, "%%evaluate: %s", re.msg);
    } else {
        char *svg = confusion_svg(e, tg.split, err);
        char *png = svg ? confusion_png(e, err) : NULL;
        if (png) {
            show_report(ctx, tg.model->name, tg.split, e, (int)top, svg, png);
            rc = 0;
        }
        free(svg);
        free(png);
    }
    free(e);
    return rc;
}

const mg_command mg_cmd_evaluate = {
    .name = "evaluate",
    .summary = "Accuracy, loss, per-class table and confusion matrix of a trained model",
    .usage = "Usage: %evaluate [MODEL] [--split test|val|train] [--data NAME] [--top K]\n\n"
             "Evaluates the trained MODEL (default: the model defined last) on a split of the\n"
             "data set loaded last: accuracy (with --top K also the top-K accuracy: the\n"
             "label among the K likeliest classes), mean loss, precision, recall and F1 per\n"
             "class and the confusion matrix as a picture. Train first (%train) or load weights\n"
             "(%checkpoint load PATH: then on the data set the checkpoint was trained on,\n"
             "reloaded with its options).\n\nExample:\n  %evaluate mnist_net --split test",
    .flags = MG_LINE | MG_LONG_RUNNING,
    .options = options,
    .run = run,
};
