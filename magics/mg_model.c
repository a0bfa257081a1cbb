/* mg_model.c - %%model NAME (define a network, one layer a line; shows the Keras-style
 * summary as text and HTML) and %model show [NAME] / %model list.
 *
 * The spec is checked against an input shape when it is defined: the data set loaded
 * last (or --data NAME), or an explicit --input CxHxW --classes N. The spec text is
 * kept verbatim in the workspace; %train builds a fresh model from it for each run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg_images.h"
#include "mg_workspace.h"

/* Models with more rows than this show their table folded (<details>). */
#define FOLD_ROWS 24

static const mg_option options[] = {
    {"--data", MG_OPT_STRING, "NAME", "check the shapes against this data set (the last loaded)",
     NULL},
    {"--input", MG_OPT_STRING, "CxHxW", "input shape without a data set, e.g. 1x28x28", NULL},
    {"--classes", MG_OPT_INT, "N", "number of classes without a data set", NULL},
    {NULL, 0, NULL, NULL, NULL},
};

/* "1,234,567" (the %%model summary and %train's start line) */
const char *mg_commas(long v, char buf[32])
{
    char raw[32];
    int n = snprintf(raw, sizeof raw, "%ld", v < 0 ? -v : v), o = 0;
    if (v < 0) buf[o++] = '-';
    for (int i = 0; i < n; i++) {
        if (i && (n - i) % 3 == 0) buf[o++] = ',';
        buf[o++] = raw[i];
    }
    buf[o] = 0;
    return buf;
}

static void shape_text(const rt_summary_row *r, char *buf, size_t n)
{
    if (r->out_flat) snprintf(buf, n, "(%d)", r->out_c);
    else snprintf(buf, n, "(%d, %d, %d)", r->out_c, r->out_h, r->out_w);
}

/* Shows model m's summary (text/plain + text/html). */
static void show_summary(mg_ctx *ctx, const char *name, const rt_model *m, int trained)
{
    int n = 0;
    long total = 0;
    const rt_summary_row *rows = rt_model_summary(m, &n, &total);
    const rt_model_input *in = rt_model_input_shape(m);
    char *text = NULL, *html = NULL, num[32], shape[48];
    size_t tl = 0, hl = 0;
    FILE *t = open_memstream(&text, &tl), *h = open_memstream(&html, &hl);
    if (!t || !h) goto done;
    char *en = mg_html_escape(name);
    fprintf(t, "Model: \"%s\"  (input %dx%dx%d, %d classes%s)\n", name, in->c, in->h, in->w,
            in->num_classes, trained ? ", trained" : "");
    fprintf(t, "%-4s %-32s %-16s %12s\n", "#", "Layer", "Output shape", "Params");
    /* a long model (ResNet-20: 84 rows) is folded: a one-line summary that opens */
    int fold = n > FOLD_ROWS;
    if (fold)
        fprintf(h,
                "<details><summary>Model <b>%s</b>: %d layers, %s params (click to show)"
                "</summary>",
                en ? en : "", n, mg_commas(total, num));
    fprintf(h,
            "<table><caption style=\"text-align:left\">Model <b>%s</b> &mdash; input "
            "%d&times;%d&times;%d, %d classes%s</caption><thead><tr><th>#</th>"
            "<th style=\"text-align:left\">Layer</th><th>Output shape</th><th>Params</th>"
            "</tr></thead><tbody>",
            en ? en : "", in->c, in->h, in->w, in->num_classes, trained ? ", trained" : "");
    free(en);
    for (int i = 0; i < n; i++) {
        shape_text(&rows[i], shape, sizeof shape);
        fprintf(t, "%-4d %-32s %-16s %12s\n", rows[i].index, rows[i].spec, shape,
                mg_commas(rows[i].params, num));
        fprintf(h,
                "<tr><td>%d</td><td style=\"text-align:left\"><code "
                "style=\"white-space:pre\">%s</code></td>"
                "<td>%s</td><td style=\"text-align:right\">%s</td></tr>",
                rows[i].index, rows[i].spec, shape, num);
    }
    fprintf(t, "Total params: %s\n", mg_commas(total, num));
    fprintf(h,
            "</tbody><tfoot><tr><td></td><td style=\"text-align:left\"><b>Total params</b>"
            "</td><td></td><td style=\"text-align:right\"><b>%s</b></td></tr></tfoot>"
            "</table>%s",
            num, fold ? "</details>" : "");
done:
    if (t) fclose(t);
    if (h) fclose(h);
    if (mg_display_text_html(ctx->out, text, html) != 0)
        mg_eprintf(ctx->out, "%%%%model: out of memory; the summary is not shown\n");
}

static int parse_input(const char *s, rt_model_input *in, mg_error *err)
{
    char tail;
    if (sscanf(s, "%dx%dx%d%c", &in->c, &in->h, &in->w, &tail) != 3 || in->c <= 0 || in->h <= 0 ||
        in->w <= 0 || in->c > 4096 || in->h > 16384 || in->w > 16384)
        return mg_fail(err, "UsageError",
                       "%%%%model: --input expects CxHxW (e.g. 1x28x28), "
                       "got '%s'",
                       s);
    return 0;
}

/* A body of only blanks and comments (the cell form naming a shipped network). */
static int body_empty(const char *body)
{
    for (const char *p = body ? body : ""; *p; p++) {
        if (*p == '#') p += strcspn(p, "\n");
        if (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') return 0;
        if (!*p) break;
    }
    return 1;
}

/* The spec error msg ("line N: ...", N counted in the body) for the cell: "cell line
 * N+1" (the %%model line is the cell's first; the engine's traceback points there, mg.h),
 * and for an unknown layer the nearest layer word. A shipped network's errors are
 * about its name, not a line of the cell. */
static int spec_fail(mg_error *err, const char *magic, const char *name, const rt_error *re,
                     int in_cell)
{
    const char *msg = re->msg;
    int n = 0, used = 0;
    if (!in_cell || sscanf(msg, "line %d: %n", &n, &used) != 1 || used == 0 || n < 1)
        return mg_fail_status(err, re, "%s %s: %s", magic, name, msg);
    char near[40] = "";
    const char *u = strstr(msg, "unknown layer '");
    if (u) {
        char word[32] = "";
        sscanf(u + strlen("unknown layer '"), "%31[^']", word);
        size_t best = 3;
        for (size_t i = 0; word[0] && rt_model_layer_word(i); i++) {
            size_t d = mg_edit_distance(word, rt_model_layer_word(i));
            if (d < best) best = d, snprintf(near, sizeof near, "%s", rt_model_layer_word(i));
        }
    }
    return mg_fail_status(err, re, "%s %s: cell line %d: %s%s%s%s", magic, name, n + 1, msg + used,
                          near[0] ? " ---> HINT: did you mean '" : "", near, near[0] ? "'?" : "");
}

static int define(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    /* the cell form or the line form (%model NAME resnet20), as the user typed it */
    const char *magic = args->body ? "%%model" : "%model";
    if (args->npos != 1 && !(args->npos == 2 && body_empty(args->body)))
        return mg_fail(err, "UsageError",
                       "%%%%model: expected one model name on the first "
                       "line (%%%%model NAME, or %%%%model NAME resnet20 for a shipped "
                       "network), got %d words",
                       args->npos);
    const char *name = args->pos[0];
    if (strlen(name) >= 64)
        return mg_fail(err, "UsageError",
                       "%s: the name '%.20s...' is too long (63 "
                       "characters at most)",
                       magic, name);
    mg_workspace *ws = mg_ws_get(ctx, err);
    if (!ws) return -1;
    rt_model_input in = {0};
    const char *dname = "";
    long classes = 0;
    if (mg_args_int(args, "--classes", 0, &classes, err) < 0) return -1;
    if (mg_args_has(args, "--input")) {
        if (parse_input(mg_args_get(args, "--input"), &in, err) < 0) return -1;
        if (classes < 2 || classes > RT_MAX_CLASSES)
            return mg_fail(err, "UsageError", "%%%%model: --input needs --classes N (2..%d)",
                           RT_MAX_CLASSES);
        in.num_classes = (int)classes;
    } else {
        const char *want = mg_args_get(args, "--data");
        mg_ws_data *d = want ? mg_ws_data_load(ws, ctx, want, -1, -1, NULL, NULL, err)
                             : mg_ws_data_find(ws, NULL);
        if (!d && want) return -1;
        if (!d)
            return mg_fail(err, "UsageError",
                           "%s %s: no data set to check the shapes "
                           "against ---> HINT: run %%dataset NAME first, or give --input "
                           "1x28x28 --classes 10",
                           magic, name);
        in = (rt_model_input){d->splits.train.c, d->splits.train.h, d->splits.train.w,
                              d->splits.train.num_classes};
        dname = d->name;
    }
    rt_model *m = NULL;
    rt_error re = {0};
    char *zoo = NULL;
    const char *spec = args->body ? args->body : "";
    if (args->npos == 2) { /* a shipped network, for this input and these classes */
        if (!(zoo = malloc(RT_MODEL_ZOO_SPEC_MAX)))
            return mg_fail(err, "MemoryError", "%s %s: out of memory", magic, name);
        if (rt_model_zoo_spec(args->pos[1], &in, zoo, RT_MODEL_ZOO_SPEC_MAX, &re) != RT_OK) {
            free(zoo);
            return mg_fail_status(err, &re, "%s %s: %s", magic, name, re.msg);
        }
        spec = zoo;
    }
    int rc = -1;
    if (rt_model_create(&m, spec, &in, &re) != RT_OK)
        spec_fail(err, magic, name, &re, args->npos == 1);
    else rc = mg_ws_model_define(ws, name, spec, &in, dname, err);
    if (rc == 0) show_summary(ctx, name, m, 0);
    rt_model_destroy(m);
    free(zoo);
    return rc;
}

static int show(mg_ctx *ctx, const char *name, mg_error *err)
{
    mg_workspace *ws = mg_ws_get(ctx, err);
    if (!ws) return -1;
    mg_ws_model *e = mg_ws_model_find(ws, name);
    if (!e && name)
        return mg_fail(err, "NameError",
                       "%%model: no model named '%s' (%%model list shows "
                       "the defined ones)",
                       name);
    if (!e)
        return mg_fail(err, "NameError",
                       "%%model: no model defined yet ---> HINT: define "
                       "one with %%%%model NAME");
    if (e->trained) {
        show_summary(ctx, e->name, e->trained, 1);
        return 0;
    }
    rt_model *m = NULL;
    rt_error re = {0};
    if (rt_model_create(&m, e->spec, &e->input, &re) != RT_OK)
        return mg_fail_status(err, &re, "%%model show %s: %s", e->name, re.msg);
    show_summary(ctx, e->name, m, 0);
    rt_model_destroy(m);
    return 0;
}

static int list(mg_ctx *ctx, mg_error *err)
{
    mg_workspace *ws = mg_ws_get(ctx, err);
    if (!ws) return -1;
    int n = mg_ws_model_count(ws);
    if (!n) mg_printf(ctx->out, "No models defined yet (define one with %%%%model NAME).\n");
    for (int i = 0; i < n; i++) {
        mg_ws_model *e = mg_ws_model_at(ws, i);
        mg_printf(ctx->out, "%-20s input %dx%dx%d, %d classes%s%s%s\n", e->name, e->input.c,
                  e->input.h, e->input.w, e->input.num_classes, e->dataset[0] ? ", data " : "",
                  e->dataset, e->trained ? ", trained" : "");
    }
    mg_printf(ctx->out, "Shipped networks (%%%%model NAME NETWORK):\n");
    for (const char *const *z = rt_model_zoo_names(); *z; z++)
        mg_printf(ctx->out, "  %-12s %s\n", *z, rt_model_zoo_about(*z));
    return 0;
}

static int run(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    if (args->body || (args->npos == 2 && strcmp(args->pos[0], "show")))
        return define(ctx, args, err); /* a cell, or %model NAME resnet20 */
    if (mg_args_has(args, "--data") || mg_args_has(args, "--input") ||
        mg_args_has(args, "--classes"))
        return mg_fail(err, "UsageError",
                       "%%model: --data/--input/--classes belong to the cell "
                       "form %%%%model NAME");
    if (args->npos == 0 || (!strcmp(args->pos[0], "list") && args->npos == 1))
        return list(ctx, err);
    if (!strcmp(args->pos[0], "show") && args->npos <= 2)
        return show(ctx, args->npos == 2 ? args->pos[1] : NULL, err);
    return mg_fail(err, "UsageError",
                   "%%model: expected 'show [NAME]' or 'list', got '%s' "
                   "(define a model with the cell magic %%%%model NAME)",
                   args->pos[0]);
}

const mg_command mg_cmd_model = {
    .name = "model",
    .summary = "Define a network (%%model NAME), show or list models (%model show/list)",
    .usage = "Usage: %%model NAME [--data NAME | --input CxHxW --classes N]   (cell)\n"
             "       %model NAME NETWORK [...]   (a shipped network, line or cell: resnet20,\n"
             "                                   resnet32/44/56/110, resnet18/34, vgg11_bn,\n"
             "                                   vgg16_bn, lenet5, mobilenetv2; %model list)\n"
             "       %model show [NAME] | %model list                      (line)\n\n"
             "Defines a network, one layer a line, checked against the data set loaded last\n"
             "and shown as a summary table (layer, output shape, parameters, total):\n"
             "  conv2d K R [stride=1] [pad=0|same] [bias=true|false] [groups=1] |\n"
             "  maxpool R [stride=R] [pad=0] | avgpool R [stride=R] [pad=0] | globalavgpool |\n"
             "  adaptiveavgpool H [W] | relu | relu6 | sigmoid | tanh | gelu | silu |\n"
             "  leakyrelu [slope=0.01] | batchnorm [momentum=0.1] | dropout P | flatten |\n"
             "  dense O [bias=true|false]   (bias=false: no bias, e.g. before batchnorm)\n"
             "  residual:   (a block: its layers indented below; an indented 'shortcut:'\n"
             "               then a projection when the shape changes; the output is\n"
             "               layers(x) + x, or + shortcut(x))\n"
             "Any layer takes name=PREFIX: its tensors are PREFIX.weight, ... (PyTorch's\n"
             "state_dict names, e.g. name=layer1.0.conv1).\n"
             "End with dense <classes>; '#' comments.\n\n"
             "Example:\n  %%model mnist_net\n  conv2d 32 3\n  relu\n  maxpool 2\n  flatten\n"
             "  dense 10\n\n  %model net resnet20      (ResNet-20 for 32x32 images, 0.27 M)",
    .flags = MG_LINE | MG_CELL,
    .options = options,
    .run = run,
};
