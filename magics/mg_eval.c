/* mg_eval.c - target resolution for %evaluate and %predict (see mg_eval.h). */
#include <stdio.h>
#include <string.h>

#include "mg_eval.h"

int mg_eval_resolve(mg_ctx *ctx, const mg_args *args, const char *magic, mg_eval_target *t,
                    mg_error *err)
{
    memset(t, 0, sizeof *t);
    if (args->npos > 1)
        return mg_fail(err, "UsageError", "%%%s: expected at most one model name, got %d words",
                       magic, args->npos);
    mg_workspace *ws = mg_ws_get(ctx, err);
    if (!ws) return -1;
    const char *name = args->npos ? args->pos[0] : NULL;
    t->model = mg_ws_model_find(ws, name);
    if (!t->model && name)
        return mg_fail(err, "NameError",
                       "%%%s: no model named '%s' (%%model list shows the "
                       "defined ones)",
                       magic, name);
    if (!t->model)
        return mg_fail(err, "UsageError",
                       "%%%s: no model defined yet ---> HINT: %%%%model NAME, "
                       "then %%train",
                       magic);
    if (!t->model->trained)
        return mg_fail(err, "UsageError",
                       "%%%s: model '%s' has not been trained ---> HINT: run "
                       "%%train %s first, or %%checkpoint load PATH",
                       magic, t->model->name, t->model->name);
    const char *want = mg_args_get(args, "--data");
    char caller[32];
    snprintf(caller, sizeof caller, "%%%s", magic);
    if (want) {
        t->data = mg_ws_data_load(ws, ctx, want, -1, -1, NULL, NULL, err);
    } else if (t->model->origin.data[0]) { /* loaded from a checkpoint: its data set */
        t->data = mg_ws_origin_open(ws, ctx, &t->model->origin, caller, err);
    } else {
        t->data = mg_ws_data_find(ws, NULL);
        if (!t->data && t->model->dataset[0])
            t->data = mg_ws_data_load(ws, ctx, t->model->dataset, -1, -1, NULL, NULL, err);
        else if (!t->data)
            return mg_fail(err, "UsageError",
                           "%%%s: no data set loaded ---> HINT: %%dataset NAME "
                           "or --data NAME",
                           magic);
    }
    if (!t->data) return -1;
    const char *split = mg_args_get(args, "--split");
    if (!split) split = "test";
    t->split = !strcmp(split, "train") ? &t->data->splits.train
               : !strcmp(split, "val") ? &t->data->splits.val
                                       : &t->data->splits.test;
    if (t->split->n == 0)
        return mg_fail(err, "ValueError", "%%%s: data set '%s' has no %s split%s", magic,
                       t->data->name, split,
                       !strcmp(split, "val") ? " ---> HINT: load it "
                                               "with %dataset NAME --val N"
                                             : "");
    const rt_model_input *in = rt_model_input_shape(t->model->trained);
    const rt_dataset *d = t->split;
    if (in->c != d->c || in->h != d->h || in->w != d->w || in->num_classes != d->num_classes)
        return mg_fail(err, "ValueError",
                       "%%%s: model '%s' takes %dx%dx%d images and %d "
                       "classes, data set '%s' has %dx%dx%d and %d",
                       magic, t->model->name, in->c, in->h, in->w, in->num_classes, t->data->name,
                       d->c, d->h, d->w, d->num_classes);
    return 0;
}
