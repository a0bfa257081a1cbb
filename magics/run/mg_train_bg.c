/* mg_train_bg.c - %train ... --background: the run as a sweep of one. The cell's data
 * set (by name, with its --val and --subset), its model (%%model NAME and the spec) and
 * the %train line without --background become a stage notebook, RUN_DIR/background.ipynb,
 * which one `kiln run` trains in a process of its own (mg_sweep_background): the cell
 * returns at once, its table keeps updating in place, and %sweep status / wait / stop
 * control it. The trained model stays in RUN_DIR: %resume RUN_DIR brings it into the
 * kernel. An image folder loaded with image options is refused (they are not carried). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mg_run.h"
#include "mg_sweep.h"
#include "mg_workspace.h"
#include "rt_store.h"
#include "rt_file.h"

/* s as one word of the cell language's magic lines: single quotes when it needs them. */
static void word(FILE *f, const char *s)
{
    if (*s && !strpbrk(s, " \t\n'\"\\$")) {
        fputs(s, f);
        return;
    }
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'') fputs("'\\''", f);
        else fputc(*s, f);
    }
    fputc('\'', f);
}

static json_t *code_cell(const char *id, const char *src)
{
    return json_pack("{s:s, s:s, s:{}, s:s, s:[], s:n}", "cell_type", "code", "id", id, "metadata",
                     "source", src, "outputs", "execution_count");
}

int mg_train_background(mg_ctx *ctx, const mg_args *args, const mg_run_opts *o, mg_error *err)
{
    if (!o->run_dir[0] || rt_store_is_url(o->run_dir))
        return mg_fail(err, "UsageError",
                       "%%train --background needs a local --run-dir DIR (the run's "
                       "checkpoints, notebook and log go there; %%resume DIR loads the model)");
    mg_workspace *ws = mg_ws_get(ctx, err);
    if (!ws) return -1;
    mg_ws_data *d = mg_ws_data_find(ws, o->data[0] ? o->data : NULL);
    mg_ws_model *m = mg_ws_model_find(ws, o->model);
    if (!d)
        return mg_fail(err, "UsageError",
                       "%%train --background: no data set loaded%s%s ---> HINT: %%dataset NAME "
                       "first",
                       o->data[0] ? " named " : "", o->data);
    if (!m)
        return mg_fail(err, "UsageError",
                       "%%train --background: no model%s%s ---> HINT: %%%%model NAME first",
                       o->model[0] ? " named " : "", o->model);
    if (d->images.image_h || d->images.image_w || d->images.channels)
        return mg_fail(err, "ValueError",
                       "%%train --background: data set '%s' was loaded with image-folder "
                       "options, which a background run does not carry",
                       d->name);
    char *ds = NULL, *model = NULL, *train = NULL;
    size_t n1, n2, n3;
    FILE *a = open_memstream(&ds, &n1), *b = open_memstream(&model, &n2),
         *c = open_memstream(&train, &n3);
    if (a) {
        fputs("%dataset ", a);
        word(a, d->name);
        if (d->val > 0) fprintf(a, " --val %d", d->val);
        if (d->subset > 0) fprintf(a, " --subset %d", d->subset);
        fputs(" --samples 0\n", a);
        fclose(a);
    }
    if (b) {
        fprintf(b, "%%%%model %s\n%s", m->name, m->spec);
        fclose(b);
    }
    if (c) {
        fputs("%train", c);
        for (int i = 0; i < args->npos; i++) fputc(' ', c), word(c, args->pos[i]);
        for (int i = 0; i < args->nopt; i++) {
            if (!strcmp(args->opt[i]->name, "--background")) continue;
            fprintf(c, " %s", args->opt[i]->name);
            /* a flag that took a value (--augment crop:4) keeps it */
            if (args->opt[i]->kind != MG_OPT_FLAG || (args->opt[i]->choices && args->val[i][0]))
                fputc(' ', c), word(c, args->val[i]);
        }
        fputc('\n', c);
        fclose(c);
    }
    json_t *nb =
        ds && model && train
            ? json_pack("{s:i, s:i, s:{s:{s:s, s:s, s:s}}, s:[o, o, o]}", "nbformat", 4,
                        "nbformat_minor", 5, "metadata", "kernelspec", "name", "kiln",
                        "display_name", "Kiln", "language", "kiln", "cells", code_cell("data", ds),
                        code_cell("model", model), code_cell("train", train))
            : NULL;
    free(ds);
    free(model);
    free(train);
    if (!nb) return mg_fail(err, "MemoryError", "%%train --background: out of memory");
    char path[2200];
    snprintf(path, sizeof path, "%s/background.ipynb", o->run_dir);
    int rc =
        rt_file_make_dirs(o->run_dir, 0777) < 0 || json_dump_file(nb, path, JSON_INDENT(1)) != 0
            ? mg_fail(err, "OSError", "%%train --background: cannot write %s: %s", path,
                      strerror(errno))
            : mg_sweep_background(ctx, path, o->run_dir, o->results, err);
    json_decref(nb);
    return rc;
}
