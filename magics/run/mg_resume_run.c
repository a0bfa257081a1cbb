/* mg_resume_run.c - a checkpoint -> a running run: mg_ckpt_resume (for %resume and for
 * %train continuing a run directory, mg_train_resume.c) and mg_ckpt_resolve.
 *
 * Nothing comes from the notebook's cells: the model is rebuilt from "model_spec", the
 * data set is reloaded by the name, --val and --subset in "dataset" and must have the
 * same checksum, the options come from "hyperparameters" and the schedule from its
 * resolved form. Then mg_run_create builds the run as %train would (same seed, so the
 * same random streams), rt_ckpt_train restores weights, optimiser state and position,
 * and mg_run_loop continues. Run-control options (--epochs, --device, --time-limit,
 * --checkpoint-every, --keep, --results) may be changed; training options may not.
 *
 * A checkpoint is untrusted input (docs/security.md): it may restore training state
 * and the hyperparameters that define the run, never a destination. The results store
 * or MLflow URL comes from the caller's --results or the environment, the run
 * directory is the one holding the checkpoint the user named (none for a loose file),
 * and a data set the checkpoint names by URL is not fetched: the user loads it first.
 */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mg_ckpt_internal.h"
#include "mg_store.h"
#include "rt_store.h"
#include "mg_workspace.h"
#include "rt_ckpt_dir.h"

void mg_resume_opts_default(mg_resume_opts *ro)
{
    memset(ro, 0, sizeof *ro);
    ro->time_limit_s = -1;
    ro->caller = "%resume";
}

int mg_ckpt_resolve(const char *arg, const mg_out *out, char **path, mg_error *err)
{
    struct stat st;
    *path = NULL;
    if (rt_store_is_url(arg)) return mg_store_fetch(arg, 0, out, path, err);
    if (stat(arg, &st) != 0) return mg_fail(err, "FileNotFoundError", "'%s' does not exist", arg);
    if (!S_ISDIR(st.st_mode)) {
        if (!(*path = strdup(arg))) return mg_fail(err, "MemoryError", "out of memory");
        return 0;
    }
    char *skipped = NULL;
    rt_error re = {0};
    rt_status s = rt_ckpt_dir_latest(arg, path, &skipped, &re);
    if (s == RT_OK && skipped) /* "name: reason" lines: each damaged newer file, named */
        for (char *line = strtok(skipped, "\n"); line; line = strtok(NULL, "\n"))
            mg_eprintf(out, "warning: skipped damaged checkpoint %s/%s\n", arg, line);
    free(skipped);
    if (s != RT_OK) return mg_fail_status(err, &re, "%s", re.msg);
    return 0;
}

/* ---- reading what the checkpoint says ---- */

/* An image folder's %dataset options ("images" in the dataset record; older
 * checkpoints have none: the defaults, or the copy loaded in this session). The file is
 * untrusted: options %dataset itself would refuse (a side over 4096, channels other
 * than 1 or 3, a fraction outside [0, 1)) are ignored, and the checksum check then
 * refuses the data set loaded with the defaults. */
static void images_of(json_t *im, mg_ws_origin *d)
{
    json_t *size = json_object_get(im, "size");
    d->has_images = json_is_object(im) && json_array_size(size) == 2;
    if (!d->has_images) return;
    d->images =
        (mg_ws_images){.image_h = (int)json_integer_value(json_array_get(size, 0)),
                       .image_w = (int)json_integer_value(json_array_get(size, 1)),
                       .channels = (int)json_integer_value(json_object_get(im, "channels")),
                       .val_fraction = json_number_value(json_object_get(im, "val_fraction")),
                       .seed = (uint64_t)json_integer_value(json_object_get(im, "seed")),
                       .skip_bad = json_is_true(json_object_get(im, "skip_bad"))};
    const mg_ws_images *o = &d->images;
    if (o->image_h < 0 || o->image_h > 4096 || o->image_w < 0 || o->image_w > 4096 ||
        (o->channels != 0 && o->channels != 1 && o->channels != 3) ||
        !(o->val_fraction >= 0 && o->val_fraction < 1))
        d->has_images = 0;
}

int mgp_ckpt_read_origin(const rt_ckpt_reader *rd, const char *path, mg_ws_origin *o)
{
    memset(o, 0, sizeof *o);
    const char *ds = rt_ckpt_reader_meta(rd, RT_CKPT_KEY_DATASET);
    json_t *dj = ds ? json_loads(ds, 0, NULL) : NULL;
    const char *name = json_string_value(json_object_get(dj, "name"));
    if (name && name[0]) {
        snprintf(o->data, sizeof o->data, "%s", name);
        snprintf(o->ckpt, sizeof o->ckpt, "%s", path);
        o->val = (int)json_integer_value(json_object_get(dj, "val"));
        o->subset = (int)json_integer_value(json_object_get(dj, "subset"));
        const char *f = json_string_value(json_object_get(dj, "fnv1a64"));
        snprintf(o->fnv, sizeof o->fnv, "%s", f ? f : "");
        images_of(json_object_get(dj, "images"), o);
    }
    json_decref(dj);
    return o->data[0] ? 0 : -1;
}

int mgp_ckpt_read_desc(const rt_ckpt_reader *rd, const char *path, mgp_ck_desc *d, mg_error *err)
{
    const char *hp = rt_ckpt_reader_meta(rd, RT_CKPT_KEY_HYPERPARAMS);
    const char *ds = rt_ckpt_reader_meta(rd, RT_CKPT_KEY_DATASET);
    const char *sh = rt_ckpt_reader_meta(rd, RT_CKPT_KEY_INPUT_SHAPE);
    const char *sc = rt_ckpt_reader_meta(rd, RT_CKPT_KEY_SCHEDULE);
    d->spec = rt_ckpt_reader_meta(rd, RT_CKPT_KEY_MODEL_SPEC);
    d->name = rt_ckpt_reader_meta(rd, RT_CKPT_KEY_MODEL_NAME);
    if (!d->name || !d->name[0]) d->name = "resumed";
    int64_t classes = 0;
    if (!hp || !ds || !sh || !d->spec ||
        rt_ckpt_reader_meta_i64(rd, RT_CKPT_KEY_NUM_CLASSES, &classes, NULL) != RT_OK)
        return mg_fail(err, "ValueError",
                       "checkpoint '%s' does not describe its run (no "
                       "model_spec, hyperparameters, dataset or input_shape) ---> HINT: only "
                       "checkpoints written by %%train or %%checkpoint save can be resumed",
                       path);
    json_t *h = json_loads(hp, 0, NULL), *dj = json_loads(ds, 0, NULL);
    json_t *sj = json_loads(sh, 0, NULL), *cj = sc ? json_loads(sc, 0, NULL) : NULL;
    int rc = 0;
    mg_run_opts_default(&d->o);
    if (!h || !dj || !sj || !json_is_string(json_object_get(dj, "name")) ||
        json_array_size(sj) != 3 || mg_run_opts_from_json(&d->o, h, err) < 0) {
        rc = mg_fail(err, "ValueError",
                     "checkpoint '%s': malformed hyperparameters, dataset "
                     "or input_shape",
                     path);
    } else {
        d->in = (rt_model_input){(int)json_integer_value(json_array_get(sj, 0)),
                                 (int)json_integer_value(json_array_get(sj, 1)),
                                 (int)json_integer_value(json_array_get(sj, 2)), (int)classes};
        mgp_ckpt_read_origin(rd, path, &d->ds);
        const char *spec = json_string_value(json_object_get(cj, "spec"));
        if (!spec) spec = d->o.schedule;
        if (strlen(spec) >= sizeof d->schedule)
            rc = mg_fail(err, "ValueError", "checkpoint '%s': schedule too long", path);
        else memcpy(d->schedule, spec, strlen(spec) + 1);
    }
    json_decref(h), json_decref(dj), json_decref(sj), json_decref(cj);
    return rc;
}

/* The options of the continued run: the checkpoint's plus what the caller may change. */
static void run_options(mgp_ck_desc *d, const char *path, const mg_resume_opts *ro)
{
    mg_run_opts *o = &d->o;
    snprintf(o->model, sizeof o->model, "%s", d->name);
    snprintf(o->data, sizeof o->data, "%s", d->ds.data);
    snprintf(o->schedule_resolved, sizeof o->schedule_resolved, "%s", d->schedule);
    o->val = d->ds.val;
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    /* destinations: never the checkpoint's "run_dir" or "results" */
    o->run_dir[0] = 0;
    o->results[0] = 0;
    if (!strncmp(base, RT_CKPT_DIR_PREFIX, strlen(RT_CKPT_DIR_PREFIX))) /* its run dir */
        snprintf(o->run_dir, sizeof o->run_dir, "%s", dirname(tmp));
    o->init_done = 1; /* the checkpoint holds the weights: --init is not read again */
    if (ro->epochs > 0) o->epochs = ro->epochs;
    if (ro->device[0]) snprintf(o->device, sizeof o->device, "%s", ro->device);
    if (ro->results[0]) snprintf(o->results, sizeof o->results, "%s", ro->results);
    if (!o->run_dir[0]) o->checkpoint_every = (mg_every){MG_EVERY_NONE, 0};
    if (ro->time_limit_s >= 0) o->time_limit_s = ro->time_limit_s;
    if (ro->keep > 0) o->keep = ro->keep;
    if (ro->checkpoint_every[0]) {
        mg_error ignored;
        snprintf(o->checkpoint_every_text, sizeof o->checkpoint_every_text, "%s",
                 ro->checkpoint_every);
        if (mg_run_parse_every(ro->checkpoint_every, &o->checkpoint_every, &ignored) < 0)
            o->checkpoint_every = (mg_every){MG_EVERY_NONE, 0};
    }
}

/* Continues the results-store run only when it is in the same store. */
static void results_run(const rt_ckpt_reader *rd, mg_run_opts *o)
{
    const char *id = rt_ckpt_reader_meta(rd, RT_CKPT_KEY_RUN_ID);
    const char *store = rt_ckpt_reader_meta(rd, "results_store");
    char here[1024];
    o->resume_run_id = 0;
    if (id && store && store[0] &&
        rt_results_resolve_path(o->results[0] ? o->results : NULL, here, sizeof here) == 0 &&
        !strcmp(here, store))
        o->resume_run_id = strtoll(id, NULL, 10);
}

/* ---- rebuilding and restoring ---- */

static int load_data(mg_ctx *ctx, const mgp_ck_desc *d, const char *caller, mg_error *err)
{
    mg_workspace *ws = mg_ws_get(ctx, err);
    if (!ws) return -1;
    if (!mg_ws_origin_open(ws, ctx, &d->ds, caller, err)) return -1;
    return mg_ws_model_define(ws, d->name, d->spec, &d->in, d->ds.data, err);
}

/* Weights, optimiser state and position into the freshly built run. */
static int restore(mg_run *run, const rt_ckpt_reader *rd, const char *path, const char *caller,
                   mg_error *err)
{
    rt_error re = {0};
    rt_ckpt_train_snap snap;
    rt_status s = rt_ckpt_train_load_model(rd, mg_run_model(run), &re);
    if (s == RT_OK) s = rt_ckpt_train_snap_read(&snap, rd, mg_run_model(run), &re);
    if (s != RT_OK) return mg_fail_status(err, &re, "%s: %s", caller, re.msg);
    s = rt_ckpt_train_snap_apply(&snap, mg_run_trainer(run), mg_run_model(run), &re);
    int64_t step = snap.state.step;
    rt_ckpt_train_snap_deinit(&snap);
    mg_run_curves_restore(run, rt_ckpt_reader_meta(rd, "curves"), step);
    if (s != RT_OK)
        return mg_fail_status(err, &re, "%s: checkpoint '%s': %s", caller, path, re.msg);
    /* the periodic policy continues: no duplicate of this step, the best so far */
    mgp_policy *p = mgp_policy_get(mg_run_ctx(run), run, err);
    if (!p) return -1;
    p->last_saved_step = p->last_step_seen = step;
    if (mg_run_dir(run)[0]) snprintf(p->last_path, sizeof p->last_path, "%s", path);
    if (rt_ckpt_reader_metric(rd, RT_CKPT_KEY_BEST_METRIC, &p->best, NULL) == RT_OK &&
        p->best.has_value)
        p->has_best = 1;
    return 0;
}

int mg_ckpt_resume(mg_ctx *ctx, const char *path, const mg_resume_opts *ro, mg_error *err)
{
    const char *caller = ro->caller ? ro->caller : "%resume";
    rt_ckpt_reader *rd = NULL;
    rt_error re = {0};
    rt_status s = rt_ckpt_reader_open(path, 0, &rd, &re);
    if (s != RT_OK) return mg_fail_status(err, &re, "%s: %s", caller, re.msg);
    mgp_ck_desc *d = calloc(1, sizeof *d);
    mg_run *run = NULL;
    int rc =
        d ? mgp_ckpt_read_desc(rd, path, d, err) : mg_fail(err, "MemoryError", "out of memory");
    if (rc == 0) {
        char theirs[sizeof d->o.run_dir];
        snprintf(theirs, sizeof theirs, "%s", d->o.run_dir);
        int had_results = d->o.results[0] != 0;
        run_options(d, path, ro);
        if ((theirs[0] && strcmp(theirs, d->o.run_dir)) || (had_results && !ro->results[0]))
            mg_eprintf(ctx->out,
                       "note: %s: the checkpoint's own run directory and results "
                       "store are not used (a checkpoint never chooses where data goes); "
                       "new checkpoints go to %s, results to --results or KILN_RESULTS\n",
                       caller, d->o.run_dir[0] ? d->o.run_dir : "no directory (a loose file)");
        results_run(rd, &d->o);
        rc = load_data(ctx, d, caller, err);
    }
    if (rc == 0 && mg_run_create(&run, ctx, &d->o, err) < 0 && !ro->device[0] &&
        strcmp(d->o.device, "auto") && strstr(err->evalue, "--device")) {
        /* e.g. trained on CUDA, resumed where there is none: the weights are portable */
        mg_eprintf(ctx->out,
                   "warning: %s: --device %s is not available here (%s); using "
                   "--device auto\n",
                   caller, d->o.device, err->evalue);
        snprintf(d->o.device, sizeof d->o.device, "auto");
        rc = mg_run_create(&run, ctx, &d->o, err);
    }
    if (rc == 0 && !run) rc = -1;
    if (rc == 0) rc = restore(run, rd, path, caller, err);
    if (rc == 0) {
        rt_trainer *t = mg_run_trainer(run);
        int64_t step = rt_trainer_get_state(t).step, spe = rt_trainer_steps_per_epoch(t);
        /* epochs count from 1, as everywhere: step 18 of 24 a epoch is in epoch 1 */
        mg_printf(ctx->out,
                  "Resuming '%s' from %s after step %lld of %lld (epoch %lld of %d), "
                  "data set '%s' (checksum verified)\n",
                  d->name, path, (long long)step, (long long)(spe * d->o.epochs),
                  (long long)(spe > 0 ? (step + spe - 1) / spe : 0), d->o.epochs, d->ds.data);
    }
    rt_ckpt_reader_destroy(rd); /* the run holds everything now */
    if (rc == 0) rc = mg_run_loop(run, err);
    mg_run_destroy(run);
    free(d);
    return rc;
}
