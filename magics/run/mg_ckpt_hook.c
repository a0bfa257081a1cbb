/* mg_ckpt_hook.c - mg_run_checkpoint_hook: when a run writes checkpoints, rotation,
 * and the session's record of the run when it stops.
 *
 * --checkpoint-every: Nsteps saves after every step that is a multiple of N (so a
 * resumed run saves at the same steps as an uninterrupted one); Nepochs is N times the
 * steps of an epoch, i.e. at epoch ends; a time saves when that much run time passed
 * since the last save. Without the option a run directory gets one a epoch. Stopping
 * (done, interrupt, time limit) always saves unless the newest file is of this step.
 * With --time-limit, one more save when the limit is two steps and two saves away, so
 * a checkpoint exists before the limit even if the final one would end after it.
 * The metric is --monitor's (val_loss by default) of an epoch end, attached only to a
 * checkpoint of that very step (a mid-epoch file never claims a stale metric); the
 * best is the trainer's best epoch by it (rt_early_stop.h), which rotation keeps.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mg_ckpt_internal.h"
#include "mg_store.h"
#include "rt_ckpt_dir.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

mgp_policy *mgp_policy_get(mg_ctx *ctx, mg_run *run, mg_error *err)
{
    mgp_policy *p = mg_session_get(ctx->session, "ckpt.policy");
    if (!p) {
        if (!(p = calloc(1, sizeof *p)) ||
            mg_session_set(ctx->session, "ckpt.policy", p, free) != 0) {
            free(p);
            return mg_fail(err, "MemoryError", "out of memory"), NULL;
        }
    }
    double el = mg_run_elapsed(run);
    int64_t step = rt_trainer_get_state(mg_run_trainer(run)).step;
    if (p->run != run || el < p->last_elapsed || step < p->last_step_seen) { /* a new run */
        memset(p, 0, sizeof *p);
        p->run = run;
        p->last_saved_step = p->metric_step = -1;
        p->last_step_seen = step;
        p->first_step = step;
        p->first_elapsed = el;
    }
    p->last_elapsed = el;
    return p;
}

/* Is a checkpoint due after this step? 1: periodic, 2: ahead of the time limit. */
static int due(const mg_run_opts *o, const mgp_policy *p, rt_step_event ev, int64_t step,
               int64_t spe, double elapsed)
{
    mg_every e = o->checkpoint_every;
    if (e.unit == MG_EVERY_NONE) e = (mg_every){MG_EVERY_EPOCHS, 1};
    if (o->time_limit_s > 0 && !p->limit_saved && step > p->first_step) {
        /* the time limit stops the run before the next step that would start past it
         * and then saves: with a slow disk that save ends after the limit, where the
         * platform may already kill the machine. So also save when the limit is two
         * steps and two saves away. */
        double step_s = (elapsed - p->first_elapsed) / (double)(step - p->first_step);
        if (elapsed + 2 * step_s + 2 * p->last_save_dur >= o->time_limit_s) return 2;
    }
    if (e.unit == MG_EVERY_SECONDS) return elapsed - p->last_save_s >= e.n;
    double steps = e.unit == MG_EVERY_EPOCHS ? e.n * (double)spe : e.n;
    int64_t every = (int64_t)llround(steps) < 1 ? 1 : (int64_t)llround(steps);
    (void)ev;
    return step % every == 0;
}

/* Remembers the stopped run for %checkpoint save/list (a failure is only a warning). */
static void remember(mg_run *run, const mgp_policy *p, const mg_out *out)
{
    mg_error e = {{0}, {0}};
    rt_error re = {0};
    mg_ckpt_last *rec = mg_ckpt_last_reset(mg_run_ctx(run), &e);
    if (!rec || mgp_ckpt_describe(run, rec, &e) < 0 ||
        (rt_ckpt_train_snap_capture(&rec->snap, mg_run_trainer(run), mg_run_model(run), &re) !=
             RT_OK &&
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
static void after_save(mg_run *run, const mgp_policy *p, const char *path, int64_t step,
                       int64_t spe, double ms, int why, rt_step_event ev, const mg_out *out)
{
    int64_t epoch = spe > 0 ? step / spe : 0;
    int64_t user_epoch = spe > 0 ? (step + spe - 1) / spe : 0;
    const mg_run_opts *o = mg_run_options(run);
    rt_error re = {0};
    size_t removed = 0;
    /* an s3:// run directory: queued for upload; local rotation keeps what is pending */
    size_t pending = mg_store_after_save(mg_run_ctx(run), path, step, o->keep, out);
    if (rt_ckpt_dir_rotate(o->run_dir, (o->keep > 0 ? o->keep : 1) + (int)pending, 1, &removed,
                           &re) != RT_OK)
        mg_eprintf(out, "warning: checkpoint rotation in '%s': %s\n", o->run_dir, re.msg);
    rt_results *rs = mg_run_results(run);
    int fresh = p->metric_step == step;
    /* an s3:// run's checkpoint is recorded as the object it is uploaded to */
    const char *url = mg_store_url(mg_run_ctx(run)), *base = strrchr(path, '/');
    char object[2048];
    if (url) snprintf(object, sizeof object, "%s/%s", url, base ? base + 1 : path);
    if (rs && rt_results_log_checkpoint(rs, mg_run_id(run), url ? object : path, step, (int)epoch,
                                        fresh ? p->metric.name : NULL, fresh ? p->metric.value : 0,
                                        &re) != RT_OK)
        mg_eprintf(out, "warning: results store: recording checkpoint: %s\n", re.msg);
    mg_run_note_checkpoint(run, step);
    if (ev == RT_STEP_CONTINUE && why != 2) return;
    mg_printf(out, "checkpoint: %s (step %lld, epoch %lld, %.0f ms%s)\n", path, (long long)step,
              (long long)user_epoch, ms, why == 2 ? ", ahead of the time limit" : "");
}

int mg_run_checkpoint_hook(mg_run *run, rt_step_event ev, const mg_out *out, mg_error *err)
{
    const mg_run_opts *o = mg_run_options(run);
    mgp_policy *p = mgp_policy_get(mg_run_ctx(run), run, err);
    if (!p) return -1;
    rt_trainer *t = mg_run_trainer(run);
    int64_t step = rt_trainer_get_state(t).step, spe = rt_trainer_steps_per_epoch(t);
    p->last_step_seen = step;
    int improved = 0;
    if (ev == RT_STEP_EPOCH_END && mg_run_last_monitor(run, &p->metric, &improved) == 0) {
        p->metric.step = step; /* --monitor's metric; "best" is the trainer's best epoch */
        p->metric_step = step;
        if (p->metric.has_value && improved) p->best = p->metric, p->has_best = 1;
    }
    int stopping = ev != RT_STEP_CONTINUE && ev != RT_STEP_EPOCH_END;
    int save = 0;
    char *path = NULL;
    if (o->run_dir[0])
        /* a continued run that took no step (already complete) has the state of the
         * checkpoint it came from: no second copy of it */
        save = stopping ? step > 0 && step != p->last_saved_step && step != mg_run_start_step(run)
                        : due(o, p, ev, step, spe, mg_run_elapsed(run));
    int rc = 0;
    if (save) {
        rt_error re = {0};
        if (rt_ckpt_dir_ensure(o->run_dir, &re) != RT_OK ||
            rt_ckpt_dir_path(o->run_dir, step, &path, &re) != RT_OK)
            rc = mg_fail_status(err, &re, "--run-dir %s: %s", o->run_dir, re.msg);
        double t0 = now_s();
        if (rc == 0)
            rc = mgp_ckpt_save_with(run, path, p->metric_step == step ? &p->metric : NULL,
                                    p->has_best ? &p->best : NULL, err);
        p->last_save_s = mg_run_elapsed(run); /* a failed timed save waits a period too */
        p->last_save_dur = now_s() - t0;
        if (save == 2) p->limit_saved = 1;
        if (rc == 0) {
            p->last_saved_step = step;
            snprintf(p->last_path, sizeof p->last_path, "%s", path);
            after_save(run, p, path, step, spe, 1e3 * (now_s() - t0), save, ev, out);
        } else if (!stopping) { /* periodic: warn and train on; the old files are intact */
            mg_eprintf(out, "warning: %s: %s (training goes on)\n", err->ename, err->evalue);
            rc = 0;
        }
    }
    if (stopping) remember(run, p, out);
    free(path);
    return rc;
}
