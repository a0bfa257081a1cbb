/* mg_run.c - a training run (see mg_run.h): building it from the options and the
 * workspace (inputs, model, precision, normalisation, augmentation, trainer, run
 * folder), destroying it, and the accessors mg_run.h declares. The step loop (results
 * store, per-epoch validation, the checkpoint hook, interrupt and time limit, handing
 * the trained model back) is mg_run_loop.c; what the user sees while it runs is drawn
 * by mg_run_view.c. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mg_run_internal.h"
#include "rt_ckpt_dir.h"

/* ---- creation ---- */

static int should_stop(void *user)
{
    mg_run *r = user;
    const mg_host *h = r->ctx->host;
    return h && h->interrupted && h->interrupted(h->user);
}

static void on_progress(const rt_progress *p, void *user)
{
    mg_run *r = user;
    r->last = *p;
    r->has_progress = 1;
    mgp_curve_add(r, &r->step_loss, (double)p->step, p->loss);
    if (r->rs) {
        rt_error re = {0};
        if (rt_results_log_metric(r->rs, r->run_id, "loss", p->loss, p->step, (int)p->epoch + 1,
                                  RT_RESULTS_STEP, &re) != RT_OK ||
            rt_results_log_metric(r->rs, r->run_id, "accuracy", p->accuracy, p->step,
                                  (int)p->epoch + 1, RT_RESULTS_STEP, &re) != RT_OK ||
            rt_results_log_metric(r->rs, r->run_id, "lr", p->lr, p->step, (int)p->epoch + 1,
                                  RT_RESULTS_STEP, &re) != RT_OK)
            mgp_rs_warn(r, "logging a step", re.msg);
    }
    if (!r->probing) mgp_view_progress(r, p, p->epoch_end);
}

/* Finds the model entry and the data set the run uses (loading it if needed). */
static int resolve_inputs(mg_run *r, mg_workspace *ws, mg_error *err)
{
    mg_ws_model *e = mg_ws_model_find(ws, r->o.model);
    if (!e && r->o.model[0])
        return mg_fail(err, "NameError",
                       "%%train: no model named '%s' ---> HINT: define it "
                       "with %%%%model %s (%%model list shows the defined ones)",
                       r->o.model, r->o.model);
    if (!e)
        return mg_fail(err, "UsageError",
                       "%%train: no model defined yet ---> HINT: define "
                       "one with %%%%model NAME (one layer a line) before %%train");
    snprintf(r->model_name, sizeof r->model_name, "%s", e->name);
    if (!(r->spec = strdup(e->spec))) return mg_fail(err, "MemoryError", "out of memory");
    const char *want = r->o.data[0] ? r->o.data : NULL;
    mg_ws_data *d = want ? NULL : mg_ws_data_find(ws, NULL);
    if (!d && !want && e->dataset[0]) want = e->dataset;
    if (!d && !want)
        return mg_fail(err, "UsageError",
                       "%%train: no data set loaded ---> HINT: run "
                       "%%dataset NAME first, or give --data NAME");
    if (d && r->o.val >= 0 && d->val != r->o.val) want = d->name;
    if (want && !(d = mg_ws_data_load(ws, r->ctx, want, r->o.val, -1, NULL, NULL, err))) return -1;
    r->data = d;
    r->val = d->splits.val.n > 0 ? &d->splits.val : &d->splits.test;
    r->val_name = d->splits.val.n > 0 ? "val" : "test";
    r->no_val = r->val->n == 0;
    return 0;
}

/* --precision: bf16 on the CPU or a CUDA backend, fp16 on CUDA (before attach: the
 * model's workspace holds the 16-bit copies). fp16 also turns on the trainer's dynamic
 * loss scaling. */
int mgp_set_precision(mg_run *r, rt_backend *b, mg_error *err)
{
    if (!strcmp(r->o.precision, "fp32")) return 0;
    rt_precision p;
    rt_error re = {0};
    if (rt_precision_parse(r->o.precision, &p, &re) != RT_OK ||
        rt_backend_set_precision(b, p, &re) != RT_OK)
        return mg_fail_status(err, &re, "%%train: --precision %s: %s", r->o.precision, re.msg);
    return 0;
}

static int build_model(mg_run *r, mg_error *err)
{
    const rt_dataset *tr = &r->data->splits.train;
    rt_model_input in = {tr->c, tr->h, tr->w, tr->num_classes};
    rt_error re = {0};
    if (rt_model_create(&r->model, r->spec, &in, &re) != RT_OK)
        return mg_fail_status(err, &re,
                              "%%train: model '%s' does not fit data set '%s' "
                              "(%dx%dx%d images, %d classes): %s",
                              r->model_name, r->data->name, tr->c, tr->h, tr->w, tr->num_classes,
                              re.msg);
    if (!(r->backend = calloc(1, sizeof *r->backend)))
        return mg_fail(err, "MemoryError", "out of memory");
    /* ranks of one host share its cores (0: all of them for a single process) */
    rt_dist_env de;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (rt_dist_env_read(&de, NULL) != RT_OK) de = (rt_dist_env){.world = 1, .local_world = 1};
    int threads = de.local_world > 1 && ncpu > 0
                      ? (int)(ncpu / de.local_world > 1 ? ncpu / de.local_world : 1)
                      : 0;
    /* a sweep's variant: its share of the cores (kiln run --threads) */
    if (r->ctx->settings && r->ctx->settings->threads > 0) threads = r->ctx->settings->threads;
    /* ranks of one host: rank k takes GPU k when --device says cuda or auto */
    char mine[32];
    snprintf(mine, sizeof mine, "cuda:%d", de.local_rank);
    int own_gpu = de.local_world > 1 && threads > 0 &&
                  (!strcmp(r->o.device, "cuda") || !strcmp(r->o.device, "auto")) &&
                  rt_backend_open(r->backend, mine, threads, &re) == RT_OK;
    /* several GPUs (cuda:0,1, cuda:all): the run's model on the first */
    int idx[MG_RUN_MAX_DEVICES], ndev = 0;
    if (mgp_devices_parse(r->o.device, idx, &ndev, err) < 0) return -1;
    char first[32];
    snprintf(first, sizeof first, "cuda:%d", ndev > 0 ? idx[0] : 0);
    if (!own_gpu &&
        rt_backend_open(r->backend, ndev > 0 ? first : r->o.device, threads, &re) != RT_OK) {
        free(r->backend);
        r->backend = NULL;
        return mg_fail_status(err, &re, "%%train: --device %s: %s", r->o.device, re.msg);
    }
    if (mgp_set_precision(r, r->backend, err) < 0) return -1;
    /* several devices: each holds its share of the batch */
    const int held = ndev > 1 ? (r->o.batch + ndev - 1) / ndev : r->o.batch;
    if (rt_model_attach(r->model, r->backend, held, r->o.seed, &re) != RT_OK)
        return mg_fail_status(err, &re, "%%train: model '%s' with --batch %d: %s", r->model_name,
                              r->o.batch, re.msg);
    if (ndev > 1) {
        size_t used = (size_t)snprintf(r->where, sizeof r->where, " on cuda:%d", idx[0]);
        for (int i = 1; i < ndev && used < sizeof r->where; i++)
            used += (size_t)snprintf(r->where + used, sizeof r->where - used, ",%d", idx[i]);
    } else if (de.world > 1) {
        snprintf(r->where, sizeof r->where, " on %d ranks", de.world);
    }
    return ndev > 1 ? mgp_devices_open_replicas(r, idx, ndev, err) : 0;
}

/* --normalize: the loaded data set's splits normalised with the typed statistics (they
 * stay until %dataset loads the set again; the checkpoint's data-set record has them). */
static int apply_normalize(mg_run *r, mg_error *err)
{
    if (!r->o.normalize[0]) return 0;
    float mean[4], std[4];
    int nch = 0;
    rt_error re = {0};
    if (rt_normalize_parse(r->o.normalize, mean, std, &nch, &re) != RT_OK)
        return mg_fail_status(err, &re, "%%train: %s", re.msg);
    rt_dataset_splits *s = &r->data->splits;
    if (nch != s->train.c)
        return mg_fail(err, "ValueError",
                       "%%train: --normalize '%s' gives %d channel%s but '%s' has %d "
                       "---> HINT: a mean and a standard deviation a channel, the means first",
                       r->o.normalize, nch, nch == 1 ? "" : "s", r->data->name, s->train.c);
    rt_dataset *sp[3] = {&s->train, &s->val, &s->test};
    for (int i = 0; i < 3; i++) {
        memcpy(sp[i]->mean, mean, sizeof(float) * (size_t)nch);
        memcpy(sp[i]->std, std, sizeof(float) * (size_t)nch);
    }
    return 0;
}

/* --augment [SPEC]: the typed SPEC ("none" when not given), else (the flag alone) the
 * data set's default (rt_augment_default). */
static int apply_augment(mg_run *r, rt_trainer_config *c, mg_error *err)
{
    const rt_dataset *tr = &r->data->splits.train;
    rt_augment a;
    rt_error re = {0};
    if (r->o.augment_spec[0] && rt_augment_parse(r->o.augment_spec, &a, &re) != RT_OK)
        return mg_fail_status(err, &re, "%%train: %s", re.msg);
    if (!r->o.augment_spec[0]) a = rt_augment_default(tr);
    if (rt_augment_check(&a, tr, &re) != RT_OK)
        return mg_fail_status(err, &re, "%%train: %s", re.msg);
    c->augment = a.on;
    c->crop_pad = a.crop_pad;
    c->flip_p = a.flip ? 0.5f : 0.0f;
    c->cutout = a.cutout;
    return 0;
}

static int build_trainer(mg_run *r, mg_error *err)
{
    rt_trainer_config c = rt_trainer_config_default();
    rt_error re = {0};
    rt_optim_kind kind;
    if (rt_optim_kind_parse(r->o.optimizer, &kind, &re) != RT_OK)
        return mg_fail_status(err, &re, "%%train: --optimizer: %s", re.msg);
    c.optim = rt_optim_config_default(kind);
    if (isfinite(r->o.momentum) && kind != RT_OPTIM_SGD)
        mg_eprintf(r->ctx->out,
                   "warning: %%train: --momentum applies to --optimizer sgd; "
                   "ignored with %s\n",
                   r->o.optimizer);
    if (kind == RT_OPTIM_SGD) c.optim.momentum = isfinite(r->o.momentum) ? r->o.momentum : 0.9;
    if (isfinite(r->o.weight_decay)) c.optim.weight_decay = r->o.weight_decay;
    c.optim.nesterov = r->o.nesterov;
    if (r->o.nesterov && kind != RT_OPTIM_SGD)
        return mg_fail(err, "ValueError", "%%train: --nesterov needs --optimizer sgd");
    if (rt_schedule_parse(&c.schedule,
                          r->o.schedule_resolved[0] ? r->o.schedule_resolved : r->o.schedule,
                          &re) != RT_OK)
        return mg_fail_status(err, &re, "%%train: --schedule: %s", re.msg);
    if (rt_monitor_parse(r->o.monitor, &r->monitor, &re) != RT_OK)
        return mg_fail_status(err, &re, "%%train: --monitor: %s", re.msg);
    if (r->no_val && r->monitor != rt_monitor_without_val(r->monitor)) {
        rt_monitor was = r->monitor;
        r->monitor = rt_monitor_without_val(was);
        mg_printf(r->ctx->out,
                  "No validation data (no --val split, no test split): nothing is validated; "
                  "%s%s follows %s instead of %s\n",
                  r->o.early_stop > 0 ? "--early-stop and " : "", "the best checkpoint",
                  rt_monitor_name(r->monitor), rt_monitor_name(was));
    }
    c.monitor = r->monitor;
    c.early_stop = (rt_early_stop){.patience = r->o.early_stop, .min_delta = r->o.min_delta};
    c.restore_best = r->o.restore_best;
    c.epochs = r->o.epochs;
    c.batch_size = r->o.batch;
    c.lr = r->o.lr;
    if (apply_augment(r, &c, err) < 0 || apply_normalize(r, err) < 0) return -1;
    c.accumulate = r->o.accumulate > 0 ? r->o.accumulate : 1;
    c.clip_norm = r->o.clip_grad;
    c.clip_value = r->o.clip_value;
    c.label_smoothing = r->o.label_smoothing;
    c.time_limit_s = r->o.time_limit_s;
    c.loss_scaling = !strcmp(r->o.precision, "fp16");
    /* settings.device_path: the CPU trains through the device path too (data set, loss
     * statistics and optimiser state in backend memory, progress read in batches): what
     * a GPU runs, so it can be checked on any machine (same parameters bit for bit) */
    c.device_path = r->ctx->settings && r->ctx->settings->device_path;
    if (rt_dist_world(&c.dist, &re) != RT_OK)
        return mg_fail_status(err, &re, "%%train: ranks of this launch: %s", re.msg);
    c.replicas = r->nrep > 0 ? r->rep_m : NULL;
    c.nreplicas = r->nrep;
    c.param_lr_mult = r->lr_mult;
    c.progress = on_progress;
    c.should_stop = should_stop;
    c.user = r;
    if (rt_trainer_create(&r->trainer, r->model, &r->data->splits.train, &c, &re) != RT_OK)
        return mg_fail_status(err, &re, "%%train: %s", re.msg);
    if (!(r->eval = malloc(sizeof *r->eval))) return mg_fail(err, "MemoryError", "out of memory");
    return 0;
}

/* --run-dir: created (mkdir -p) and proven writable (a probe file) before step 1, so
 * a bad directory is an error at once, not a whole run trained without checkpoints. */
static int check_run_dir(const char *dir, mg_error *err)
{
    if (!dir[0]) return 0;
    rt_error re = {0};
    if (rt_ckpt_dir_ensure(dir, &re) != RT_OK)
        return mg_fail_status(err, &re,
                              "--run-dir %s: %s ---> HINT: give --run-dir a directory "
                              "you can create and write (nothing was trained)",
                              dir, re.msg);
    char probe[1100];
    snprintf(probe, sizeof probe, "%s/.kiln-write-test-XXXXXX", dir);
    int fd = strlen(dir) < 1024 ? mkstemp(probe) : -1;
    if (fd < 0)
        return mg_fail(err, "OSError",
                       "--run-dir %s: run directory is not writable: %s "
                       "---> HINT: give --run-dir a directory you can write (nothing was "
                       "trained)",
                       dir, strerror(errno));
    close(fd);
    unlink(probe);
    return 0;
}

int mg_run_create(mg_run **out, mg_ctx *ctx, const mg_run_opts *o, mg_error *err)
{
    *out = NULL;
    if (check_run_dir(o->run_dir, err) < 0) return -1;
    mg_workspace *ws = mg_ws_get(ctx, err);
    if (!ws) return -1;
    mg_run *r = calloc(1, sizeof *r);
    if (!r) return mg_fail(err, "MemoryError", "%%train: out of memory");
    r->ctx = ctx;
    r->o = *o;
    r->last_ckpt_step = -1;
    mg_ckpt_policy_init(&r->ckpt);
    if (resolve_inputs(r, ws, err) < 0 || build_model(r, err) < 0 || mgp_run_finetune(r, err) < 0 ||
        build_trainer(r, err) < 0) {
        mg_run_destroy(r);
        return -1;
    }
    *out = r;
    return 0;
}

void mg_run_destroy(mg_run *r)
{
    if (!r) return;
    rt_trainer_destroy(r->trainer);
    mgp_devices_free(r);
    rt_model_destroy(r->model);
    mg_ws_backend_free(r->backend);
    if (r->rs && r->run_id) {
        /* A run that never reached its end (an error path) is marked failed; if that
         * fails too, rt_results_close below marks it interrupted or warns. */
        RT_IGNORE(rt_results_run_end(r->rs, r->run_id, RT_RESULTS_FAILED, NULL));
    }
    rt_results_close(r->rs);
    free(r->eval);
    free(r->spec);
    free(r->lr_mult);
    mgp_series *s[] = {&r->step_loss, &r->ep_loss, &r->ep_acc, &r->ep_vloss, &r->ep_vacc};
    for (size_t i = 0; i < sizeof s / sizeof *s; i++) mgp_series_free(s[i]);
    free(r);
}

/* ---- accessors ---- */
rt_trainer *mg_run_trainer(mg_run *r) { return r->trainer; }
const char *mg_run_dataset_name(const mg_run *r) { return r->data->name; }
const char *mg_run_model_name(const mg_run *r) { return r->model_name; }

const char *mgp_metric_key(rt_monitor m)
{
    switch (m) {
    case RT_MONITOR_VAL_ACC: return "val_accuracy";
    case RT_MONITOR_TRAIN_LOSS: return "train_loss";
    case RT_MONITOR_TRAIN_ACC: return "train_accuracy";
    default: return "val_loss";
    }
}
