/* mg_ckpt_save.c - a run -> a checkpoint file: the descriptive metadata that makes the
 * file self-describing (hyperparameters, data set identity with its checksum, the
 * schedule resolved to the run, results-store run), and the session's record of the
 * last run for %checkpoint. The tensors and the training position are rt_ckpt_train's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg_ckpt_internal.h"
#include "mg_store.h"
#include "mg_workspace.h"

void mgp_human_size(uint64_t b, char *buf, size_t n)
{
    if (b < 10000) snprintf(buf, n, "%" PRIu64 " B", b);
    else if (b < 10000000) snprintf(buf, n, "%.1f kB", (double)b / 1e3);
    else snprintf(buf, n, "%.1f MB", (double)b / 1e6);
}

void mgp_ckpt_last_clear(mg_ckpt_last *rec)
{
    if (!rec) return;
    rt_ckpt_train_snap_deinit(&rec->snap);
    free(rec->hyperparameters);
    free(rec->dataset);
    free(rec->schedule);
    free(rec->run_id);
    free(rec->results_store);
    memset(rec, 0, sizeof *rec);
}

static void last_free(void *p)
{
    mgp_ckpt_last_clear(p);
    free(p);
}

mg_ckpt_last *mg_ckpt_last_get(mg_ctx *ctx) { return mg_session_get(ctx->session, "ckpt.last"); }

mg_ckpt_last *mg_ckpt_last_reset(mg_ctx *ctx, mg_error *err)
{
    mg_ckpt_last *rec = calloc(1, sizeof *rec);
    if (!rec || mg_session_set(ctx->session, "ckpt.last", rec, last_free) != 0) {
        free(rec);
        return mg_fail(err, "MemoryError", "out of memory"), NULL;
    }
    return rec;
}

/* {"name", "val", "subset", "fnv1a64", "n_train", "test_fnv1a64", "n_test", "mean",
 * "std", "classes"[, "images"]}: enough to reload the data set by name and to refuse a
 * different one ("images": an image folder's %dataset options, so a new kernel decodes
 * it the same way); the normalisation and class names let `kiln export` write a model
 * that takes plain pixels and names its classes. */
static char *dataset_json(const mg_ckpt_run *run)
{
    const rt_dataset_splits *s = run->data;
    const char *name = run->dataset_name;
    mg_error ignored;
    mg_workspace *ws = mg_ws_get(run->ctx, &ignored);
    mg_ws_data *d = ws ? mg_ws_data_find(ws, name) : NULL;
    char tr[24], te[24];
    snprintf(tr, sizeof tr, "%016" PRIx64, s->train.checksum);
    snprintf(te, sizeof te, "%016" PRIx64, s->test.checksum);
    json_t *j = json_pack("{sssisisssisssi}", "name", name, "val", d ? d->val : s->val.n, "subset",
                          d ? d->subset : 0, "fnv1a64", tr, "n_train", s->train.n, "test_fnv1a64",
                          te, "n_test", s->test.n);
    json_t *mean = json_array(), *std = json_array(), *classes = json_array();
    for (int c = 0; mean && std && c < s->train.c && c < 4; c++) {
        json_array_append_new(mean, json_real(s->train.mean[c]));
        json_array_append_new(std, json_real(s->train.std[c]));
    }
    for (int c = 0; classes && c < s->train.num_classes; c++)
        json_array_append_new(classes, json_string(s->train.class_names[c]));
    if (j && d && s->images.layout) {
        const mg_ws_images *im = &d->images;
        json_object_set_new(j, "images",
                            json_pack("{s[ii]sisfsIsb}", "size", im->image_h, im->image_w,
                                      "channels", im->channels, "val_fraction", im->val_fraction,
                                      "seed", (json_int_t)im->seed, "skip_bad", im->skip_bad));
    }
    if (j && d && d->images.shape[0]) /* a pixel CSV read as --shape */
        json_object_set_new(
            j, "shape",
            json_pack("[iii]", d->images.shape[0], d->images.shape[1], d->images.shape[2]));
    if (j) {
        json_object_set_new(j, "mean", mean ? mean : json_null());
        json_object_set_new(j, "std", std ? std : json_null());
        json_object_set_new(j, "classes", classes ? classes : json_null());
    } else {
        json_decref(mean), json_decref(std), json_decref(classes);
    }
    char *text = j ? json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(j);
    return text;
}

/* The --schedule text resolved to this run (t_max etc. fixed), so a resume with more
 * --epochs keeps the learning rates of the original plan. */
static char *schedule_text(const mg_ckpt_run *run)
{
    const mg_run_opts *o = run->o;
    rt_schedule s;
    char buf[512];
    if (rt_schedule_parse(&s, o->schedule_resolved[0] ? o->schedule_resolved : o->schedule, NULL) !=
            RT_OK ||
        rt_schedule_resolve(&s, rt_trainer_steps_per_epoch(run->trainer), o->epochs, NULL) != RT_OK)
        return NULL;
    int n = rt_schedule_format(&s, buf, sizeof buf);
    return n > 0 && (size_t)n < sizeof buf ? strdup(buf) : NULL;
}

int mgp_ckpt_describe(const mg_ckpt_run *run, mg_ckpt_last *rec, mg_error *err)
{
    rt_ckpt_train_snap keep = rec->snap;
    int has = rec->has_snap;
    memset(&rec->snap, 0, sizeof rec->snap);
    mgp_ckpt_last_clear(rec);
    rec->snap = keep;
    rec->has_snap = has;
    const mg_run_opts *o = run->o;
    snprintf(rec->model_name, sizeof rec->model_name, "%s", run->model_name);
    char url[1100]; /* an s3:// run: its URL, so %checkpoint and %resume default to it */
    snprintf(rec->run_dir, sizeof rec->run_dir, "%s",
             mg_store_display(run->ctx, o->run_dir, url, sizeof url));
    json_t *hp = mg_run_opts_to_json(o);
    if (hp) { /* the run's own values, not what the next %train may default to */
        json_object_set_new(hp, "model", json_string(run->model_name));
        json_object_set_new(hp, "data", json_string(run->dataset_name));
    }
    rec->hyperparameters = hp ? json_dumps(hp, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(hp);
    rec->dataset = dataset_json(run);
    rec->schedule = schedule_text(run);
    rec->base_lr = o->lr;
    char id[32];
    snprintf(id, sizeof id, "%" PRId64, run->run_id);
    rec->run_id = run->run_id > 0 ? strdup(id) : NULL;
    rt_results *rs = run->results;
    rec->results_store = rs ? strdup(rt_results_path(rs)) : NULL;
    if (!rec->hyperparameters || !rec->dataset || !rec->schedule ||
        (run->run_id > 0 && !rec->run_id) || (rs && !rec->results_store))
        return mg_fail(err, "MemoryError", "out of memory describing the run for a checkpoint");
    return 0;
}

rt_ckpt_train_info mgp_ckpt_info(const mg_ckpt_last *rec)
{
    rt_ckpt_train_info in = {.run_id = rec->run_id,
                             .model_name = rec->model_name,
                             .hyperparameters = rec->hyperparameters,
                             .dataset = rec->dataset,
                             .schedule = rec->schedule,
                             .base_lr = rec->base_lr};
    return in;
}

int mgp_ckpt_save(const mg_ckpt_run *run, const char *path, const rt_ckpt_metric *metric,
                  const rt_ckpt_metric *best, mg_error *err)
{
    mg_ckpt_last rec;
    memset(&rec, 0, sizeof rec);
    rt_ckpt_train_snap snap;
    rt_error re = {0};
    if (mgp_ckpt_describe(run, &rec, err) < 0) {
        mgp_ckpt_last_clear(&rec);
        return -1;
    }
    if (rt_ckpt_train_snap_capture(&snap, run->trainer, run->model, &re) != RT_OK) {
        mgp_ckpt_last_clear(&rec);
        return mg_fail_status(err, &re, "checkpoint '%s': %s", path, re.msg);
    }
    rt_ckpt_train_info in = mgp_ckpt_info(&rec);
    in.metric = metric;
    in.best_metric = best;
    char *curves = run->curves_json ? run->curves_json(run->run)
                                    : NULL; /* the plot of a resumed run starts at step 1 */
    const char *extra[] = {"results_store",
                           rec.results_store ? rec.results_store : "",
                           "device",
                           rt_model_backend(run->model)->ops->name,
                           curves ? "curves" : NULL,
                           curves,
                           NULL};
    in.extra = extra;
    rt_status st = rt_ckpt_train_save(path, run->model, &snap, &in, &re);
    free(curves);
    rt_ckpt_train_snap_deinit(&snap);
    mgp_ckpt_last_clear(&rec);
    if (st != RT_OK) /* the file layer's message names the file and says what to do */
        return mg_fail_status(err, &re, "%s", re.msg);
    return 0;
}
