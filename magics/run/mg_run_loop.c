/* mg_run_loop.c - mg_run_loop: records the run in the results store, steps the trainer
 * until it is done / interrupted / out of time, validates at every epoch end, calls
 * the checkpoint hook (mg_ckpt.h, handed an mg_ckpt_run describing the run) after
 * every step and at the stop, and hands the
 * trained model to the workspace. A run that cannot be recorded at its start (the
 * store cannot be opened or the run row written: disk full, unwritable, not a store)
 * is refused before step 1, as docs/results.md promises: training results no one can
 * find later are worse than a clear error now. Failures after the start (a full disk
 * mid-run) are a warning; training goes on.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg_run_internal.h"
#include "mg_store.h"
#include "rt_ckpt_dir.h"
#include "rt_ckpt_train.h"

/* The data set's own options, so the record says how to load it again: --val as typed
 * (a fraction stays a fraction), --subset, and for an image folder --size, --channels,
 * --seed (as data_seed: seed is the training seed) and --skip-bad. */
static void add_data_params(json_t *params, const mg_ws_data *d)
{
    if (!params || !d) return;
    const mg_ws_images *im = &d->images;
    if (im->val_fraction > 0) json_object_set_new(params, "val", json_real(im->val_fraction));
    json_object_set_new(params, "subset", json_integer(d->subset));
    if (!d->splits.images.layout) return;
    char size[32];
    snprintf(size, sizeof size, "%dx%d", d->splits.train.h, d->splits.train.w);
    json_object_set_new(params, "size", json_string(size));
    json_object_set_new(params, "channels", json_integer(d->splits.train.c));
    json_object_set_new(params, "data_seed", json_integer((json_int_t)im->seed));
    json_object_set_new(params, "skip_bad", json_boolean(im->skip_bad));
}

void mgp_rs_warn(mg_run *r, const char *what, const char *msg)
{
    if (r->rs_warned++) return;
    mg_eprintf(r->ctx->out,
               "warning: results store: %s: %s (training goes on; this run is "
               "not recorded completely)\n",
               what, msg);
}

/* The store's own warnings (a write retried later, MLflow unreachable) go to the cell;
 * rt_results calls this on the thread that logs, i.e. this one. */
static void on_store_warning(void *user, const char *msg)
{
    mg_eprintf(((mg_run *)user)->ctx->out, "warning: results store: %s\n", msg);
}

/* Opens the store and begins (or, for %resume, continues) the run; -1 with err when
 * the run cannot be recorded. */
static int results_begin(mg_run *r, mg_error *err)
{
    rt_error re = {0};
    char shown[sizeof r->o.results]; /* the spec without a URL's user:password@ */
    rt_results_redact(r->o.results, shown, sizeof shown);
    if (rt_results_open(r->o.results[0] ? r->o.results : NULL, &r->rs, &re) != RT_OK) {
        r->rs = NULL;
        return mg_fail_status(err, &re,
                              "%%train: the run cannot be recorded, so it does not "
                              "start: %s ---> HINT: free space or fix the store, or choose another "
                              "with --results PATH or KILN_RESULTS",
                              re.msg);
    }
    rt_results_set_warn(r->rs, on_store_warning, r);
    /* %results follows the store %train used (docs/results.md); it reads the local
     * file only, so the credentials are not kept */
    char *spec = shown[0] ? strdup(shown) : NULL;
    if (spec && mg_session_set(r->ctx->session, "results.spec", spec, free) < 0) /* frees it */
        mg_eprintf(r->ctx->out, "warning: %%train: out of memory: %%results will not follow "
                                "the store this run uses\n");
    char dev[32];
    snprintf(dev, sizeof dev, "%s:%d", r->backend->ops->name, r->backend->device);
    rt_results_run_info info = {.name = r->o.name[0] ? r->o.name : r->model_name,
                                .device = dev,
                                .precision = r->o.precision,
                                .dataset = r->data->name,
                                .model_spec = r->spec};
    rt_status s = r->o.resume_run_id > 0
                      ? rt_results_run_resume(r->rs, r->run_id = r->o.resume_run_id, &re)
                      : rt_results_run_begin(r->rs, &info, &r->run_id, &re);
    if (s != RT_OK) {
        rt_results_close(r->rs);
        r->rs = NULL;
        r->run_id = 0;
        return mg_fail_status(err, &re,
                              "%%train: the run cannot be recorded, so it does not "
                              "start: %s ---> HINT: free space or fix the store, or choose another "
                              "with --results PATH or KILN_RESULTS",
                              re.msg);
    }
    /* the values in effect, not "" / -1 for "as %dataset loaded it": runs are compared
     * on these columns */
    mg_run_opts used = r->o;
    if (!used.data[0]) snprintf(used.data, sizeof used.data, "%s", r->data->name);
    if (used.val < 0) used.val = r->data->val;
    /* an s3:// run directory is recorded as its URL (it holds no credentials: such a
     * URL is refused), so %results on another machine says where the run is */
    const char *url = mg_store_url(r->ctx);
    if (url) snprintf(used.run_dir, sizeof used.run_dir, "%s", url);
    json_t *params = mg_run_opts_to_json(&used);
    add_data_params(params, r->data);
    const char *key;
    json_t *v;
    char buf[64];
    json_object_foreach(params, key, v)
    {
        char *text = json_is_string(v) ? NULL : json_dumps(v, JSON_ENCODE_ANY);
        if (rt_results_log_param(r->rs, r->run_id, key, text ? text : json_string_value(v), &re) !=
            RT_OK)
            mgp_rs_warn(r, "logging parameters", re.msg);
        free(text);
    }
    json_decref(params);
    snprintf(buf, sizeof buf, "%ld", rt_model_num_params(r->model));
    const char *more[] = {"model", r->model_name,      "params_total",
                          buf,     "validation_split", r->no_val ? "none" : r->val_name};
    for (size_t i = 0; i < sizeof more / sizeof *more; i += 2)
        if (rt_results_log_param(r->rs, r->run_id, more[i], more[i + 1], &re) != RT_OK)
            mgp_rs_warn(r, "logging parameters", re.msg);
    /* the host's tags (kiln run --tag: a sweep's name and variant) */
    const mg_settings *st = r->ctx->settings;
    for (int i = 0; st && i < st->ntags; i++) {
        const char *eq = strchr(st->tags[i], '=');
        char k[128];
        if (!eq || (size_t)(eq - st->tags[i]) >= sizeof k) continue;
        snprintf(k, sizeof k, "%.*s", (int)(eq - st->tags[i]), st->tags[i]);
        if (rt_results_log_param(r->rs, r->run_id, k, eq + 1, &re) != RT_OK)
            mgp_rs_warn(r, "logging parameters", re.msg);
    }
    return 0;
}

/* kiln run --stop-epoch N (a sweep's rung): the run stops after epoch N as a time limit
 * would, with a checkpoint, so that it can be continued to its full --epochs. */
static int rung_reached(const mg_run *r, rt_step_event ev)
{
    const mg_settings *st = r->ctx->settings;
    if (ev != RT_STEP_EPOCH_END || !st || st->stop_epoch <= 0) return 0;
    int64_t step = rt_trainer_get_state(r->trainer).step;
    int64_t spe = rt_trainer_steps_per_epoch(r->trainer);
    return spe > 0 && step / spe >= st->stop_epoch && step < spe * r->o.epochs;
}

static void log_epoch(mg_run *r, const char *key, double v, int64_t step, int epoch)
{
    rt_error re = {0};
    if (r->rs && rt_results_log_metric(r->rs, r->run_id, key, v, step, epoch, RT_RESULTS_EPOCH,
                                       &re) != RT_OK)
        mgp_rs_warn(r, "logging an epoch", re.msg);
}

/* Epoch end: validation, the epoch line, metrics, plot. */
static int epoch_end(mg_run *r, mg_error *err)
{
    const rt_progress *p = &r->last;
    rt_error re = {0};
    double secs = mgp_now() - r->epoch_t0;
    rt_trainer_state st = rt_trainer_get_state(r->trainer);
    /* a continued run's first epoch: only the images of the steps run here */
    double ips = secs > 0 ? (double)(st.epoch_seen - r->epoch_seen0) / secs : 0;
    r->epoch_seen0 = 0;
    int ep = (int)p->epoch + 1;
    double x = (double)p->step;
    rt_epoch_metrics em = {.train_loss = p->epoch_loss,
                           .train_acc = p->epoch_accuracy,
                           .val_loss = NAN,
                           .val_acc = NAN};
    if (!r->no_val) { /* without validation data nothing is measured, drawn or recorded */
        if (rt_trainer_evaluate(r->model, r->val, 0, r->eval, &re) != RT_OK)
            return mg_fail_status(err, &re, "%%train: validation on '%s' failed: %s", r->val->name,
                                  re.msg);
        r->val_loss = em.val_loss = r->eval->loss;
        r->val_acc = em.val_acc = r->eval->accuracy;
        r->has_val = 1;
    }
    /* the epoch-level controls: best epoch, early stopping, plateau (rt_early_stop.h) */
    if (rt_trainer_epoch_metrics(r->trainer, &em, &r->improved, &re) != RT_OK)
        return mg_fail_status(err, &re, "%%train: epoch %d: %s", ep, re.msg);
    r->monitored = rt_monitor_value(r->monitor, &em);
    r->has_monitored = 1;
    mgp_curve_add(r, &r->ep_loss, x, p->epoch_loss);
    mgp_curve_add(r, &r->ep_acc, x, p->epoch_accuracy);
    log_epoch(r, "train_loss", p->epoch_loss, p->step, ep);
    log_epoch(r, "train_accuracy", p->epoch_accuracy, p->step, ep);
    if (r->has_val) {
        mgp_curve_add(r, &r->ep_vloss, x, r->val_loss);
        mgp_curve_add(r, &r->ep_vacc, x, r->val_acc);
        log_epoch(r, "val_loss", r->val_loss, p->step, ep);
        log_epoch(r, "val_accuracy", r->val_acc, p->step, ep);
    }
    log_epoch(r, "epoch_seconds", secs, p->step, ep);
    log_epoch(r, "images_per_s", ips, p->step, ep);
    if (p->loss_scale > 0) { /* fp16 */
        log_epoch(r, "skipped_steps", (double)p->skipped_steps, p->step, ep);
        log_epoch(r, "loss_scale", p->loss_scale, p->step, ep);
    }
    mgp_view_epoch(r, p, secs, ips);
    mgp_view_plot(r);
    r->epoch_t0 = mgp_now();
    return 0;
}

/* Why the run ended, and its best epoch, as parameters of its results row. */
static void log_ending(mg_run *r, rt_step_event ev, int failed)
{
    rt_error re = {0};
    const char *why = failed                     ? "failed"
                      : ev == RT_STEP_DONE       ? "finished"
                      : ev == RT_STEP_EARLY_STOP ? "early_stop"
                      : ev == RT_STEP_TIME_LIMIT ? "time_limit"
                                                 : "interrupted";
    rt_watch_state w = rt_trainer_get_state(r->trainer).watch;
    char be[32], bv[64], key[64];
    snprintf(be, sizeof be, "%lld", (long long)w.best_epoch);
    snprintf(bv, sizeof bv, "%.17g", w.best);
    snprintf(key, sizeof key, "best_%s", mgp_metric_key(r->monitor));
    const char *kv[] = {"stop_reason", why, "best_epoch", be, key, bv};
    for (size_t i = 0; i < (w.has_best ? 6u : 2u); i += 2)
        if (rt_results_log_param(r->rs, r->run_id, kv[i], kv[i + 1], &re) != RT_OK)
            mgp_rs_warn(r, "logging how the run ended", re.msg);
}

/* A continued run whose best epoch came before it continued: that epoch's weights from
 * its checkpoint in the run directory (the one rotation keeps as best). 1 when loaded,
 * 0 with *why when there is none to load (the model is unchanged). */
static int load_best_checkpoint(mg_run *r, int64_t best_epoch, char *why, size_t n)
{
    rt_error re = {0};
    int64_t spe = rt_trainer_steps_per_epoch(r->trainer);
    char *path = NULL;
    rt_ckpt_reader *rd = NULL;
    int ok = 0;
    if (!r->o.run_dir[0]) snprintf(why, n, "the run has no run directory");
    else if (rt_ckpt_dir_path(r->o.run_dir, best_epoch * spe, &path, &re) != RT_OK ||
             rt_ckpt_reader_open(path, 0, &rd, &re) != RT_OK ||
             rt_ckpt_train_load_model(rd, r->model, &re) != RT_OK)
        snprintf(why, n, "%s", re.msg);
    else ok = 1;
    rt_ckpt_reader_destroy(rd);
    free(path);
    return ok;
}

/* --restore-best: the best epoch's weights back into the model (after the last
 * checkpoint, which keeps the last step's weights for an exact resume): from memory, or
 * for a continued run whose best epoch came earlier, from that epoch's checkpoint. */
static int restore_best(mg_run *r, mg_error *err)
{
    rt_error re = {0};
    int done = 0;
    rt_watch_state w = rt_trainer_get_state(r->trainer).watch;
    if (rt_trainer_restore_best(r->trainer, &done, &re) != RT_OK)
        return mg_fail_status(err, &re, "%%train: --restore-best: %s", re.msg);
    char why[600] = "";
    const char *from = "";
    if (!done && w.has_best && load_best_checkpoint(r, w.best_epoch, why, sizeof why))
        done = 1, from = " (from its checkpoint: it came before this run continued)";
    if (done)
        mg_printf(r->ctx->out,
                  "--restore-best: the model has the weights of epoch %lld (%s %.4f)%s\n",
                  (long long)w.best_epoch, rt_monitor_name(r->monitor), w.best, from);
    else if (w.has_best)
        mg_eprintf(r->ctx->out,
                   "warning: %%train --restore-best: the best epoch (%lld) came before this run "
                   "continued and its checkpoint cannot be read (%s); the model keeps the last "
                   "epoch's weights\n",
                   (long long)w.best_epoch, why);
    return 0;
}

/* The checkpoint hook (mg_ckpt.h), handed what a checkpoint of this run holds; the
 * progress display names the step it saved. */
static int checkpoint(mg_run *r, rt_step_event ev, mg_error *err)
{
    mg_ckpt_run c = {.ctx = r->ctx,
                     .o = &r->o,
                     .model_name = r->model_name,
                     .dataset_name = r->data->name,
                     .data = &r->data->splits,
                     .model = r->model,
                     .trainer = r->trainer,
                     .results = r->rs,
                     .run_id = r->run_id,
                     .start_step = r->start_step,
                     .elapsed = r->t_start > 0 ? mgp_now() - r->t_start : 0,
                     .has_metric = ev == RT_STEP_EPOCH_END && r->has_monitored,
                     .improved = r->improved,
                     .curves_json = mgp_curves_json,
                     .run = r};
    if (c.has_metric) {
        c.metric.has_value = isfinite(r->monitored);
        c.metric.value = r->monitored;
        c.metric.higher_is_better = rt_monitor_higher_is_better(r->monitor);
        snprintf(c.metric.name, sizeof c.metric.name, "%s", mgp_metric_key(r->monitor));
    }
    return mg_ckpt_hook(&r->ckpt, &c, ev, r->ctx->out, &r->last_ckpt_step, err);
}

/* Gives the model (and its backend) to the workspace entry of its name. */
static void hand_over(mg_run *r)
{
    mg_error ignored;
    mg_workspace *ws = mg_ws_get(r->ctx, &ignored);
    mg_ws_model *e = ws ? mg_ws_model_find(ws, r->model_name) : NULL;
    if (!e) return;
    rt_trainer_destroy(r->trainer); /* the trainer borrows the model */
    r->trainer = NULL;
    mg_ws_model_set_trained(e, r->model, r->backend);
    r->model = NULL;
    r->backend = NULL;
}

int mg_run_loop(mg_run *r, mg_error *err)
{
    rt_error re = {0};
    /* of the ranks of a launch, rank 0 alone records the run and writes checkpoints */
    const int writer = rt_dist_is_writer();
    if (writer && results_begin(r, err) < 0) return -1;
    r->t_start = r->epoch_t0 = mgp_now();
    /* a run continued at an epoch's end (a sweep's rung) starts the next epoch afresh */
    rt_trainer_state st0 = rt_trainer_get_state(r->trainer);
    int64_t spe0 = rt_trainer_steps_per_epoch(r->trainer);
    r->epoch_seen0 = spe0 > 0 && st0.step % spe0 == 0 ? 0 : st0.epoch_seen;
    mgp_view_start(r);
    rt_step_event ev = RT_STEP_CONTINUE;
    int rc = 0;
    if (rt_trainer_begin(r->trainer, &re) != RT_OK)
        rc = mg_fail_status(err, &re, "%%train: %s", re.msg);
    while (rc == 0) {
        if (rt_trainer_step(r->trainer, &ev, &re) != RT_OK) {
            rc = mg_fail_status(err, &re, "%%train: step %lld failed: %s",
                                (long long)r->last.step + 1, re.msg);
            break;
        }
        if (ev == RT_STEP_EPOCH_END && epoch_end(r, err) < 0) {
            rc = -1;
            break;
        }
        if (writer && checkpoint(r, ev, err) < 0) {
            rc = -1;
            break;
        }
        if (rung_reached(r, ev)) {
            ev = RT_STEP_TIME_LIMIT;
            if (writer && checkpoint(r, ev, err) < 0) rc = -1;
            break;
        }
        if (ev != RT_STEP_CONTINUE && ev != RT_STEP_EPOCH_END) break;
    }
    if (r->has_progress) mgp_view_progress(r, &r->last, 1);
    if (rc == 0 && r->o.restore_best && (ev == RT_STEP_DONE || ev == RT_STEP_EARLY_STOP))
        rc = restore_best(r, err);
    rt_train_summary sum = {0};
    rt_error end_re = {0};
    /* the device path reads its last statistics here: a failure is the run's error */
    if (rt_trainer_end(r->trainer, &sum, &end_re) != RT_OK && rc == 0)
        rc = mg_fail_status(err, &end_re, "%%train: finishing the run failed: %s", end_re.msg);
    mgp_view_summary(r, ev, rc != 0, &sum);
    if (r->rs) {
        rt_results_status st = rc ? RT_RESULTS_FAILED
                               : ev == RT_STEP_DONE || ev == RT_STEP_EARLY_STOP
                                   ? RT_RESULTS_FINISHED
                                   : RT_RESULTS_INTERRUPTED;
        log_ending(r, ev, rc);
        if (rt_results_run_end(r->rs, r->run_id, st, &re) != RT_OK)
            mgp_rs_warn(r, "ending the run", re.msg);
        rt_results_close(r->rs);
        r->rs = NULL;
    }
    if (rc == 0) hand_over(r);
    if (rc == 0 && ev == RT_STEP_STOPPED)
        return mg_fail(err, "KeyboardInterrupt",
                       "%%train stopped by an interrupt after step "
                       "%lld of %lld (epoch %lld); the model keeps the weights of that step",
                       (long long)r->last.step, (long long)r->last.total_steps,
                       (long long)r->last.epoch + 1);
    return rc;
}
