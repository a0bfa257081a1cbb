/* mg_ckpt_hook.c - mg_ckpt_hook: when a run writes checkpoints, rotation, and the
 * session's record of the run when it stops. The run is seen only through the
 * mg_ckpt_run it hands in; the policy's memory (mg_ckpt_policy) is the run's own.
 *
 * --checkpoint-every: Nsteps saves after every step that is a multiple of N (so a
 * resumed run saves at the same steps as an uninterrupted one); Nepochs is N times the
 * steps of an epoch, i.e. at epoch ends; a time saves when that much run time passed
 * since the last save. Without the option a run directory gets one a epoch. Stopping
 * (done, interrupt, time limit) always saves unless the newest file is of this step.
 * With --time-limit, one more save when the limit is two steps, two saves, the longest
 * pause between steps seen so far (validation, a stalled machine) and 2 % of the limit
 * away, so a checkpoint exists before the limit even if the final one would end after it.
 * The metric is --monitor's (val_loss by default) of an epoch end, attached only to a
 * checkpoint of that very step (a mid-epoch file never claims a stale metric); the
 * best is the trainer's best epoch by it (rt_early_stop.h), which rotation keeps.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg_ckpt_internal.h"
#include "mg_store.h"
#include "rt_ckpt_dir.h"
#include "rt_clock.h"

void mg_ckpt_policy_init(mg_ckpt_policy *p)
{
    memset(p, 0, sizeof *p);
    p->last_saved_step = p->metric_step = -1;
}

void mg_ckpt_policy_continue(mg_ckpt_policy *p, const rt_ckpt_reader *rd, const char *path,
                             int64_t step, int in_run_dir)
{
    mg_ckpt_policy_init(p);
    p->started = 1; /* the step time counts from the continued step */
    p->first_step = p->last_saved_step = p->last_step_seen = step;
    if (in_run_dir) snprintf(p->last_path, sizeof p->last_path, "%s", path);
    if (rt_ckpt_reader_metric(rd, RT_CKPT_KEY_BEST_METRIC, &p->best, NULL) == RT_OK &&
        p->best.has_value)
        p->has_best = 1;
}

/* Is a checkpoint due after this step? 1: periodic, 2: ahead of the time limit. */
static int due(const mg_run_opts *o, const mg_ckpt_policy *p, rt_step_event ev, int64_t step,
               int64_t spe, double elapsed)
{
    mg_every e = o->checkpoint_every;
    if (e.unit == MG_EVERY_NONE) e = (mg_every){MG_EVERY_EPOCHS, 1};
    if (o->time_limit_s > 0 && !p->limit_saved && step > p->first_step) {
        /* the time limit stops the run before the next step that would start past it
         * and then saves: with a slow disk that save ends after the limit, where the
         * platform may already kill the machine. So also save when the limit is two
         * steps, two saves, the longest pause between steps (one such pause can jump
         * past a narrower margin) and 2 % of the limit away. */
        double step_s = (elapsed - p->first_elapsed) / (double)(step - p->first_step);
        double margin = 2 * step_s + 2 * p->last_save_dur + p->longest_gap;
        if (elapsed + margin + 0.02 * o->time_limit_s >= o->time_limit_s) return 2;
    }
    if (e.unit == MG_EVERY_SECONDS) return elapsed - p->last_save_s >= e.n;
    double steps = e.unit == MG_EVERY_EPOCHS ? e.n * (double)spe : e.n;
    int64_t every = (int64_t)llround(steps) < 1 ? 1 : (int64_t)llround(steps);
    (void)ev;
    return step % every == 0;
}

/* Remembers the stopped run for %checkpoint save/list (a failure is only a warning). */
static void remember(const mg_ckpt_run *run, const mg_ckpt_policy *p, const mg_out *out)
{
    mg_error e = {{0}, {0}};
    rt_error re = {0};
    mg_ckpt_last *rec = mg_ckpt_last_reset(run->ctx, &e);
    if (!rec || mgp_ckpt_describe(run, rec, &e) < 0 ||
        (rt_ckpt_train_snap_capture(&rec->snap, run->trainer, run->model, &re) != RT_OK &&
         mg_fail_status(&e, &re, "%s", re.msg))) {
        mg_eprintf(out, "warning: %%checkpoint save will not know this run: %s\n", e.evalue);
        return;
    }
    rec->has_snap = 1;
    snprintf(rec->last_path, sizeof rec->last_path, "%s", p->last_path);
}

/* After a save: rotation, the results store, and what the user sees. Epochs are
 * 1-based as in the progress bar (a mid-epoch step of the first epoch is epoch 1, an
 * epoch end is the epoch it ends). Periodic mid-epoch saves only show in the progress
 * display ("last checkpoint: step N"); epoch-end, final, interrupt and time-limit
 * saves also get a line. */
static void after_save(const mg_ckpt_run *run, const mg_ckpt_policy *p, const char *path,
                       int64_t step, int64_t spe, double ms, int why, rt_step_event ev,
                       const mg_out *out)
{
    int64_t epoch = spe > 0 ? step / spe : 0;
    int64_t user_epoch = spe > 0 ? (step + spe - 1) / spe : 0;
    const mg_run_opts *o = run->o;
    rt_error re = {0};
    size_t removed = 0;
    /* an s3:// run directory: queued for upload; local rotation keeps what is pending */
    size_t pending = mg_store_after_save(run->ctx, path, step, o->keep, out);
    if (rt_ckpt_dir_rotate(o->run_dir, (o->keep > 0 ? o->keep : 1) + (int)pending, 1, &removed,
                           &re) != RT_OK)
        mg_eprintf(out, "warning: checkpoint rotation in '%s': %s\n", o->run_dir, re.msg);
    rt_results *rs = run->results;
    int fresh = p->metric_step == step;
    /* an s3:// run's checkpoint is recorded as the object it is uploaded to */
    const char *url = mg_store_url(run->ctx), *base = strrchr(path, '/');
    char object[2048];
    if (url) snprintf(object, sizeof object, "%s/%s", url, base ? base + 1 : path);
    if (rs && rt_results_log_checkpoint(rs, run->run_id, url ? object : path, step, (int)epoch,
                                        fresh ? p->metric.name : NULL, fresh ? p->metric.value : 0,
                                        &re) != RT_OK)
        mg_eprintf(out, "warning: results store: recording checkpoint: %s\n", re.msg);
    if (ev == RT_STEP_CONTINUE && why != 2) return;
    mg_printf(out, "checkpoint: %s (step %lld, epoch %lld, %.0f ms%s)\n", path, (long long)step,
              (long long)user_epoch, ms, why == 2 ? ", ahead of the time limit" : "");
}

int mg_ckpt_hook(mg_ckpt_policy *p, const mg_ckpt_run *run, rt_step_event ev, const mg_out *out,
                 int64_t *saved, mg_error *err)
{
    const mg_run_opts *o = run->o;
    rt_trainer *t = run->trainer;
    int64_t step = rt_trainer_get_state(t).step, spe = rt_trainer_steps_per_epoch(t);
    if (!p->started) {
        p->started = 1;
        p->first_step = step;
        p->first_elapsed = p->last_call = run->elapsed;
    }
    if (run->elapsed - p->last_call > p->longest_gap) p->longest_gap = run->elapsed - p->last_call;
    p->last_call = run->elapsed;
    p->last_step_seen = step;
    if (ev == RT_STEP_EPOCH_END && run->has_metric) {
        p->metric = run->metric;
        p->metric.step = step; /* --monitor's metric; "best" is the trainer's best epoch */
        p->metric_step = step;
        if (p->metric.has_value && run->improved) p->best = p->metric, p->has_best = 1;
    }
    int stopping = ev != RT_STEP_CONTINUE && ev != RT_STEP_EPOCH_END;
    int save = 0;
    char *path = NULL;
    if (o->run_dir[0])
        /* a continued run that took no step (already complete) has the state of the
         * checkpoint it came from: no second copy of it */
        save = stopping ? step > 0 && step != p->last_saved_step && step != run->start_step
                        : due(o, p, ev, step, spe, run->elapsed);
    int rc = 0;
    if (save) {
        rt_error re = {0};
        double called = rt_clock_s(); /* run->elapsed is of this moment */
        if (rt_ckpt_dir_ensure(o->run_dir, &re) != RT_OK ||
            rt_ckpt_dir_path(o->run_dir, step, &path, &re) != RT_OK)
            rc = mg_fail_status(err, &re, "--run-dir %s: %s", o->run_dir, re.msg);
        double t0 = rt_clock_s();
        if (rc == 0)
            rc = mgp_ckpt_save(run, path, p->metric_step == step ? &p->metric : NULL,
                               p->has_best ? &p->best : NULL, err);
        /* a failed timed save waits a period too */
        p->last_save_s = run->elapsed + (rt_clock_s() - called);
        p->last_save_dur = rt_clock_s() - t0;
        if (save == 2) p->limit_saved = 1;
        if (rc == 0) {
            p->last_saved_step = step;
            *saved = step;
            snprintf(p->last_path, sizeof p->last_path, "%s", path);
            after_save(run, p, path, step, spe, 1e3 * (rt_clock_s() - t0), save, ev, out);
        } else if (!stopping) { /* periodic: warn and train on; the old files are intact */
            mg_eprintf(out, "warning: %s: %s (training goes on)\n", err->ename, err->evalue);
            rc = 0;
        }
    }
    if (stopping) remember(run, p, out);
    free(path);
    return rc;
}
