/* mg_resume_run.c - a checkpoint -> a running run: mg_ckpt_resume (for %resume and for
 * %train continuing a run directory, mg_train_resume.c).
 *
 * Nothing comes from the notebook's cells: the model is rebuilt from "model_spec", the
 * data set is reloaded by the name, --val and --subset in "dataset" and must have the
 * same checksum, the options come from "hyperparameters" and the schedule from its
 * resolved form (mg_ckpt_read.c). Then mg_run_create builds the run as %train would
 * (same seed, so the same random streams), mg_run_restore puts back weights, optimiser
 * state and position, and mg_run_loop continues. Run-control options (--epochs, --device, --time-limit,
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

#include "mg_ckpt_internal.h"
#include "mg_resume.h"
#include "mg_run.h"
#include "mg_workspace.h"
#include "rt_ckpt_dir.h"

void mg_resume_opts_default(mg_resume_opts *ro)
{
    memset(ro, 0, sizeof *ro);
    ro->time_limit_s = -1;
    ro->caller = "%resume";
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
    int64_t step = 0;
    if (rc == 0) rc = mg_run_restore(run, rd, path, caller, &step, err);
    if (rc == 0) {
        int64_t spe = rt_trainer_steps_per_epoch(mg_run_trainer(run));
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
