/* mg_export.c - %export MODEL --onnx FILE: the trained model as an ONNX file for
 * inference without Kiln (runtime/rt_onnx.h says what the file holds). The data set
 * the model was trained on gives the normalisation, put inside the graph, and the
 * class names; without it loaded the file asks for normalised input and says so. A
 * model from %checkpoint load uses the data set the checkpoint names, or is refused. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "mg_workspace.h"
#include "rt_onnx.h"

static const mg_option options[] = {
    {"--onnx", MG_OPT_STRING, "FILE", "write an ONNX model (opset 17) to FILE", NULL},
    {NULL, 0, NULL, NULL, NULL},
};

/* The data set the model was trained on, when it is loaded (or loads) and fits it. For
 * a model from %checkpoint load, the one the checkpoint names, or -1 with err when it
 * cannot be had (wrong normalisation constants would be worse than none). */
static int trained_on(mg_ctx *ctx, mg_workspace *ws, const mg_ws_model *m, mg_ws_data **data,
                      const rt_dataset **out, mg_error *err)
{
    mg_error ignored;
    *out = NULL;
    if (m->origin.data[0]) {
        if (!(*data = mg_ws_origin_open(ws, ctx, &m->origin, "%export", err))) {
            mg_error e = *err;
            return mg_fail(err, e.ename,
                           "%s ---> HINT: `kiln export %.300s --onnx FILE` takes the "
                           "normalisation from the checkpoint itself",
                           e.evalue, m->origin.ckpt);
        }
    } else {
        *data = mg_ws_data_find(ws, m->dataset[0] ? m->dataset : NULL);
        if (!*data && m->dataset[0])
            *data = mg_ws_data_load(ws, ctx, m->dataset, -1, -1, NULL, NULL, &ignored);
    }
    if (!*data) return 0;
    const rt_dataset *d = &(*data)->splits.train;
    const rt_model_input *in = rt_model_input_shape(m->trained);
    if (d->c == in->c && d->h == in->h && d->w == in->w && d->num_classes == in->num_classes)
        *out = d;
    return 0;
}

static int run(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    const char *path = mg_args_get(args, "--onnx");
    if (args->npos > 1)
        return mg_fail(err, "UsageError", "%%export: expected one model name, got %d words",
                       args->npos);
    if (!path || !path[0])
        return mg_fail(err, "UsageError",
                       "%%export: say where to write the model: "
                       "%%export MODEL --onnx FILE.onnx");
    mg_workspace *ws = mg_ws_get(ctx, err);
    if (!ws) return -1;
    const char *name = args->npos ? args->pos[0] : NULL;
    mg_ws_model *m = mg_ws_model_find(ws, name);
    if (!m && name)
        return mg_fail(err, "NameError",
                       "%%export: no model named '%s' (%%model list shows "
                       "the defined ones)",
                       name);
    if (!m)
        return mg_fail(err, "UsageError",
                       "%%export: no model defined yet ---> HINT: "
                       "%%%%model NAME, then %%train");
    if (!m->trained)
        return mg_fail(err, "UsageError",
                       "%%export: model '%s' has not been trained ---> "
                       "HINT: run %%train %s first, or %%checkpoint load PATH",
                       m->name, m->name);
    mg_ws_data *data = NULL;
    const rt_dataset *d = NULL;
    if (trained_on(ctx, ws, m, &data, &d, err) < 0) return -1;
    const char *names[RT_MAX_CLASSES];
    for (int c = 0; d && c < d->num_classes; c++) names[c] = d->class_names[c];
    rt_onnx_info info = {.model_name = m->name,
                         .dataset = data && d ? data->name : NULL,
                         .mean = d ? d->mean : NULL,
                         .std = d ? d->std : NULL,
                         .class_names = d ? names : NULL,
                         .source = "a Kiln session"};
    rt_error re = {0};
    if (rt_onnx_write(m->trained, &info, path, &re) != RT_OK)
        return mg_fail_status(err, &re, "%%export: %s", re.msg);
    struct stat st;
    long long bytes = stat(path, &st) == 0 ? (long long)st.st_size : 0;
    const rt_model_input *in = rt_model_input_shape(m->trained);
    char feed[400];
    if (d)
        snprintf(feed, sizeof feed,
                 "pixel / 255 (the model normalises with the mean and std "
                 "of data set '%.256s')",
                 data->name);
    else
        snprintf(feed, sizeof feed,
                 "normalised as in training (no data set of this shape is "
                 "loaded: mean and std not included)");
    mg_printf(ctx->out,
              "Exported '%s' to %s (ONNX opset %d, %lld bytes).\n"
              "Input 'input': float32 [batch, %d, %d, %d], %s.\n"
              "Outputs 'logits' and 'probabilities': float32 [batch, %d]%s.\n",
              m->name, path, RT_ONNX_OPSET, bytes, in->c, in->h, in->w, feed, in->num_classes,
              d ? "; class names in the metadata" : "");
    return 0;
}

const mg_command mg_cmd_export = {
    .name = "export",
    .summary = "Write a trained model as an ONNX file, to run with onnxruntime",
    .usage = "Usage: %export [MODEL] --onnx FILE\n\n"
             "Writes the trained model's inference graph as a standard ONNX model (opset 17):\n"
             "input 'input' float32 [batch, C, H, W] holding pixel / 255 (the normalisation\n"
             "of the training set is inside the model), outputs 'logits' and 'probabilities'.\n"
             "Batch norm uses its running statistics; dropout is left out. The metadata holds\n"
             "the input layout, mean, std and class names. From a run directory without a\n"
             "kernel: kiln export RUN_DIR --onnx FILE.\n\n"
             "Examples:\n  %export net --onnx net.onnx\n  %export --onnx resnet.onnx",
    .flags = MG_LINE,
    .options = options,
    .run = run,
};
