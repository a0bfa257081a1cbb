/* mg_checkpoint.c - %checkpoint save [PATH] | load PATH | list [DIR] | show PATH.
 *
 * save: the last trained (or loaded) model with the run's optimiser state and position
 *       when this session has them (resumable with %resume), else weights only.
 * load: the weights of a checkpoint (or a run directory's newest valid one) into the
 *       workspace model of its name, rebuilt from the file's spec when needed, for
 *       %evaluate / %predict / %export / %checkpoint save; the model keeps the data set
 *       the file names, which those magics reopen (mg_ws_origin.c).
 * list: a run directory's checkpoints, damaged ones included with the reason.
 * show: one file's metadata and tensors, after full validation.
 * Tables are shown as text/plain + text/html (mg_ckpt_table.c).
 * An s3:// run (s3://B/P, or one checkpoint s3://B/P/NAME.safetensors) works for all
 * four: list reads the store's manifests; load and show fetch and verify through
 * rt_store_fetch_run (into the run's staging directory); save writes there and uploads
 * the file and then its manifest. After an s3:// run, the defaults are its URL.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg_ckpt_internal.h"
#include "mg_ckpt_table.h"
#include "mg_images.h"
#include "mg_store.h"
#include "mg_workspace.h"
#include "rt_ckpt_dir.h"
#include "rt_store_stage.h"

static const mg_option options[] = {
    {"--device", MG_OPT_STRING, "DEV", "load: device of the loaded model (auto)", NULL},
    {NULL, 0, NULL, NULL, NULL},
};

/* ---- save ---- */

/* Where `%checkpoint save URL` writes: the staging directory of the run URL (or of
 * URL's run when it names the file, s3://B/P/NAME.safetensors), as *path; the run's URL
 * into url. */
static int store_save_path(const char *arg, const char *dflt, char **path, char *url, size_t cap,
                           mg_error *err)
{
    const char *slash = strrchr(arg, '/');
    size_t n = strlen(arg), ext = strlen(RT_CKPT_EXT);
    int named = slash && slash - arg > (ptrdiff_t)strlen(RT_STORE_SCHEME) && n > ext &&
                !strcmp(arg + n - ext, RT_CKPT_EXT);
    int k =
        named ? snprintf(url, cap, "%.*s", (int)(slash - arg), arg) : snprintf(url, cap, "%s", arg);
    if (k < 0 || (size_t)k >= cap)
        return mg_fail(err, "ValueError", "%.100s...: URL too long", arg);
    char dir[1024];
    rt_error re = {0};
    if (rt_store_staging_dir(url, dir, sizeof dir, &re) != RT_OK)
        return mg_fail_status(err, &re, "%%checkpoint save: %s", re.msg);
    if (asprintf(path, "%s/%s", dir, named ? slash + 1 : dflt) < 0)
        return *path = NULL, mg_fail(err, "MemoryError", "out of memory");
    return 0;
}

static int do_save(mg_ctx *ctx, const char *arg, mg_error *err)
{
    mg_workspace *ws = mg_ws_get(ctx, err);
    if (!ws) return -1;
    mg_ckpt_last *rec = mg_ckpt_last_get(ctx);
    mg_ws_model *e = mg_ws_model_find(ws, rec ? rec->model_name : NULL);
    if (!e || !e->trained)
        return mg_fail(err, "UsageError",
                       "%%checkpoint save: no trained model in this session "
                       "---> HINT: %%train one, or %%checkpoint load PATH");
    int with_state = rec && rec->has_snap && !strcmp(rec->model_name, e->name);
    int64_t step = with_state ? rec->snap.state.step : 0;
    char *path = NULL, url[1024] = "", dflt[128];
    rt_error re = {0};
    if (with_state) snprintf(dflt, sizeof dflt, "ckpt-step%08lld" RT_CKPT_EXT, (long long)step);
    else snprintf(dflt, sizeof dflt, "%s-step%08lld" RT_CKPT_EXT, e->name, (long long)step);
    /* an s3:// URL (given, or the last run's): written in its staging directory, then
     * uploaded with its manifest */
    const char *remote = arg && rt_store_is_url(arg)                           ? arg
                         : !arg && with_state && rt_store_is_url(rec->run_dir) ? rec->run_dir
                                                                               : NULL;
    if (remote) {
        if (store_save_path(remote, dflt, &path, url, sizeof url, err) < 0) return -1;
    } else if (arg) path = strdup(arg);
    else if (with_state && rec->run_dir[0]) {
        if (rt_ckpt_dir_path(rec->run_dir, step, &path, &re) != RT_OK)
            return mg_fail_status(err, &re, "%%checkpoint save: %s", re.msg);
    } else path = strdup(dflt);
    if (!path) return mg_fail(err, "MemoryError", "out of memory");
    rt_ckpt_train_info in = {.model_name = e->name};
    if (with_state) in = mgp_ckpt_info(rec);
    const char *extra[] = {"results_store",
                           with_state && rec->results_store ? rec->results_store : "", NULL};
    in.extra = extra;
    rt_status s = rt_ckpt_train_save(path, e->trained, with_state ? &rec->snap : NULL, &in, &re);
    int rc = 0;
    if (s != RT_OK) rc = mg_fail_status(err, &re, "%%checkpoint save: %s", re.msg);
    else if (url[0] && mg_store_push(url, path, err) < 0) {
        mg_error pe = *err;
        rc = mg_fail(err, pe.ename, "%%checkpoint save: saved %s, but not uploaded: %s", path,
                     pe.evalue);
    }
    if (rc == 0) {
        const char *base = strrchr(path, '/');
        char shown[1200];
        if (url[0]) snprintf(shown, sizeof shown, "%s/%s", url, base ? base + 1 : path);
        mg_printf(ctx->out, "Saved %s: model '%s', step %lld, %s\n", url[0] ? shown : path, e->name,
                  (long long)step,
                  with_state ? "with optimiser state and data position "
                               "(%resume continues from it)"
                             : "weights only");
        if (rec) snprintf(rec->last_path, sizeof rec->last_path, "%s", path);
    }
    free(path);
    return rc;
}

/* ---- load ---- */

/* Copies a metadata value into a new string (NULL when absent). */
static char *dup_meta(const rt_ckpt_reader *rd, const char *key)
{
    const char *v = rt_ckpt_reader_meta(rd, key);
    return v ? strdup(v) : NULL;
}

/* The model of the file on a backend, with the file's weights. */
static int build_model(const rt_ckpt_reader *rd, const char *path, const char *device, rt_model **m,
                       rt_backend **b, rt_model_input *in, mg_error *err)
{
    const char *spec = rt_ckpt_reader_meta(rd, RT_CKPT_KEY_MODEL_SPEC);
    const char *shape = rt_ckpt_reader_meta(rd, RT_CKPT_KEY_INPUT_SHAPE);
    int64_t classes = 0;
    rt_error re = {0};
    if (!spec || !shape || sscanf(shape, "[%d,%d,%d]", &in->c, &in->h, &in->w) != 3 ||
        rt_ckpt_reader_meta_i64(rd, RT_CKPT_KEY_NUM_CLASSES, &classes, NULL) != RT_OK)
        return mg_fail(err, "ValueError",
                       "%%checkpoint load: checkpoint '%s' has no model "
                       "spec and input shape, so Kiln cannot rebuild its model",
                       path);
    in->num_classes = (int)classes;
    if (rt_model_create(m, spec, in, &re) != RT_OK)
        return mg_fail_status(err, &re, "%%checkpoint load: '%s': its model spec: %s", path,
                              re.msg);
    if (!(*b = calloc(1, sizeof **b))) return mg_fail(err, "MemoryError", "out of memory");
    if (rt_backend_open(*b, device, 0, &re) != RT_OK)
        return mg_fail_status(err, &re, "%%checkpoint load: --device %s: %s", device, re.msg);
    uint64_t seed = 0;
    int batch = 64;
    json_t *hp = json_loads(rt_ckpt_reader_meta(rd, RT_CKPT_KEY_HYPERPARAMS)
                                ? rt_ckpt_reader_meta(rd, RT_CKPT_KEY_HYPERPARAMS)
                                : "{}",
                            0, NULL);
    if (json_is_integer(json_object_get(hp, "seed")))
        seed = (uint64_t)json_integer_value(json_object_get(hp, "seed"));
    if (json_integer_value(json_object_get(hp, "batch")) > 0)
        batch = (int)json_integer_value(json_object_get(hp, "batch"));
    json_decref(hp);
    if (rt_model_attach(*m, *b, batch, seed, &re) != RT_OK ||
        rt_ckpt_train_load_model(rd, *m, &re) != RT_OK)
        return mg_fail_status(err, &re, "%%checkpoint load: %s", re.msg);
    return 0;
}

static int do_load(mg_ctx *ctx, const char *arg, const char *device, mg_error *err)
{
    char *path = NULL;
    if (mg_ckpt_resolve(arg, ctx->out, &path, err) < 0) {
        mg_error e = *err;
        return mg_fail(err, e.ename, "%%checkpoint load: %s", e.evalue);
    }
    rt_ckpt_reader *rd = NULL;
    rt_error re = {0};
    rt_status s = rt_ckpt_reader_open(path, 0, &rd, &re);
    rt_model *m = NULL;
    rt_backend *b = NULL;
    rt_model_input in;
    int rc = s == RT_OK ? 0 : mg_fail_status(err, &re, "%%checkpoint load: %s", re.msg);
    if (rc == 0) rc = build_model(rd, path, device, &m, &b, &in, err);
    mg_workspace *ws = rc == 0 ? mg_ws_get(ctx, err) : NULL;
    if (rc == 0 && !ws) rc = -1;
    const char *name = rd ? rt_ckpt_reader_meta(rd, RT_CKPT_KEY_MODEL_NAME) : NULL;
    if (!name || !name[0]) name = "loaded";
    mg_ws_model *e = rc == 0 ? mg_ws_model_find(ws, name) : NULL;
    if (rc == 0 && (!e || strcmp(e->spec, rt_model_spec(m)))) {
        rc = mg_ws_model_define(ws, name, rt_model_spec(m), &in, "", err);
        e = rc == 0 ? mg_ws_model_find(ws, name) : NULL;
    }
    if (rc == 0 && e) {
        mg_ws_model_set_trained(e, m, b);
        mgp_ckpt_read_origin(rd, path, &e->origin); /* none recorded: stays empty */
        mg_ckpt_last *rec = mg_ckpt_last_reset(ctx, err);
        if (rec) { /* so that %checkpoint save / %resume know where this came from */
            snprintf(rec->model_name, sizeof rec->model_name, "%s", name);
            snprintf(rec->last_path, sizeof rec->last_path, "%s", path);
            rec->hyperparameters = dup_meta(rd, RT_CKPT_KEY_HYPERPARAMS);
            rec->dataset = dup_meta(rd, RT_CKPT_KEY_DATASET);
            rec->run_id = dup_meta(rd, RT_CKPT_KEY_RUN_ID);
            rec->results_store = dup_meta(rd, "results_store");
            json_t *sc = json_loads(rt_ckpt_reader_meta(rd, RT_CKPT_KEY_SCHEDULE)
                                        ? rt_ckpt_reader_meta(rd, RT_CKPT_KEY_SCHEDULE)
                                        : "{}",
                                    0, NULL);
            json_t *hp = json_loads(rec->hyperparameters ? rec->hyperparameters : "{}", 0, NULL);
            const char *spec = json_string_value(json_object_get(sc, "spec"));
            rec->schedule = spec ? strdup(spec) : NULL; /* re-saved as it was */
            rec->base_lr = json_number_value(json_object_get(hp, "lr"));
            json_decref(sc);
            json_decref(hp);
            rec->has_snap = rt_ckpt_train_snap_read(&rec->snap, rd, m, NULL) == RT_OK;
        }
        int64_t step = 0, epoch = 0;
        /* Only shown: a checkpoint without a training position (a bare model) shows 0. */
        RT_IGNORE(rt_ckpt_reader_meta_i64(rd, RT_CKPT_KEY_STEP, &step, NULL));
        RT_IGNORE(rt_ckpt_reader_meta_i64(rd, RT_CKPT_KEY_EPOCH, &epoch, NULL));
        char count[32];
        mg_printf(ctx->out,
                  "Loaded model '%s' (%s parameters, step %lld, epoch %lld) from "
                  "%s on %s\n",
                  name, mg_commas(rt_model_num_params(m), count), (long long)step, (long long)epoch,
                  path, b->ops->name);
        m = NULL, b = NULL;
    }
    rt_model_destroy(m);
    mg_ws_backend_free(b);
    rt_ckpt_reader_destroy(rd);
    free(path);
    return rc;
}

/* ---- dispatch ---- */

static int run(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    const char *verb = args->npos ? args->pos[0] : "";
    const char *arg = args->npos > 1 ? args->pos[1] : NULL;
    if (args->npos > 2)
        return mg_fail(err, "UsageError", "%%checkpoint %s: too many arguments", verb);
    const char *device = mg_args_get(args, "--device");
    if (device && strcmp(verb, "load"))
        return mg_fail(err, "UsageError", "%%checkpoint %s: --device applies to load only", verb);
    if (!strcmp(verb, "save")) return do_save(ctx, arg, err);
    if (!strcmp(verb, "load")) {
        if (!arg) return mg_fail(err, "UsageError", "%%checkpoint load PATH: which file?");
        return do_load(ctx, arg, device ? device : "auto", err);
    }
    if (!strcmp(verb, "list")) {
        mg_ckpt_last *rec = mg_ckpt_last_get(ctx);
        if (!arg && rec && rec->run_dir[0]) arg = rec->run_dir;
        if (!arg)
            return mg_fail(err, "UsageError",
                           "%%checkpoint list DIR: which run "
                           "directory? (no run of this session had one)");
        if (rt_store_is_url(arg)) return mg_ckpt_table_list_store(ctx->out, arg, err);
        return mg_ckpt_table_list(ctx->out, arg, err);
    }
    if (!strcmp(verb, "show")) {
        if (!arg) return mg_fail(err, "UsageError", "%%checkpoint show PATH: which file?");
        if (!rt_store_is_url(arg)) return mg_ckpt_table_show(ctx->out, arg, arg, err);
        /* s3://: the named checkpoint, or the run's newest valid one, fetched and verified */
        char *path = NULL, name[1200];
        if (mg_store_fetch(arg, 0, ctx->out, &path, err) < 0) {
            mg_error e = *err;
            return mg_fail(err, e.ename, "%%checkpoint show: %s", e.evalue);
        }
        const char *base = strrchr(path, '/'), *tail = strrchr(arg, '/');
        int whole = tail && !strcmp(tail, base);
        snprintf(name, sizeof name, "%s%s%s", arg, whole ? "" : "/", whole ? "" : base + 1);
        int rc = mg_ckpt_table_show(ctx->out, path, name, err);
        free(path);
        return rc;
    }
    return mg_fail(err, "UsageError", "%%checkpoint: '%s' is not save, load, list or show", verb);
}

const mg_command mg_cmd_checkpoint = {
    .name = "checkpoint",
    .summary = "Save, load, list or inspect checkpoints",
    .usage = "Usage: %checkpoint save [PATH]\n"
             "       %checkpoint load PATH|RUN_DIR [--device DEV]\n"
             "       %checkpoint list [RUN_DIR]\n"
             "       %checkpoint show PATH\n\n"
             "save: the last trained or loaded model; with the run's optimiser state and data\n"
             "position when this session has them (then %resume PATH continues the run).\n"
             "Default PATH: the run directory's ckpt-stepNNNNNNNN.safetensors, else\n"
             "MODEL-stepNNNNNNNN.safetensors here. Written atomically.\n"
             "load: the weights into the model of the checkpoint's name (rebuilt from the\n"
             "file's spec), for %evaluate and %predict; a directory loads its newest valid one.\n"
             "list: step, epoch, metric, size, time and validity of every checkpoint of a run\n"
             "directory (default: the last run's). show: metadata and tensors of one file.\n"
             "Files are safetensors: safetensors.torch.load_file reads the weights.\n"
             "A run directory or file may be an s3:// URL (s3://BUCKET/PREFIX, or\n"
             "s3://BUCKET/PREFIX/NAME.safetensors): fetched and verified, or uploaded.\n\n"
             "Example:\n  %checkpoint list runs/mnist",
    .flags = MG_LINE,
    .options = options,
    .run = run,
};
