/* mg_resume.c - %resume [RUN_DIR | CHECKPOINT] [--epochs N] [...]: continues a stopped
 * run from a run directory's newest valid checkpoint (damaged newer files are skipped
 * with a warning naming each) or from one checkpoint file, in this kernel or a fresh
 * one on another machine (mg_resume_run.c does the work). Without an argument: the run
 * directory of the last run of this session. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg_ckpt.h"
#include "mg_resume.h"
#include "mg_store.h"
#include "rt_store.h"

static const mg_option options[] = {
    {"--epochs", MG_OPT_INT, "N", "planned length of the run in epochs (as stored)", NULL},
    {"--device", MG_OPT_STRING, "DEV", "auto, cpu, cuda or cuda:N (as stored)", NULL},
    {"--time-limit", MG_OPT_STRING, "TIME",
     "stop (and checkpoint) after e.g. 8h30m; none (as stored)", NULL},
    {"--checkpoint-every", MG_OPT_STRING, "WHEN", "500steps, 10m or 1epoch (as stored)", NULL},
    {"--keep", MG_OPT_INT, "N", "keep the newest N checkpoints plus the best (as stored)", NULL},
    {"--results", MG_OPT_STRING, "PATH", "results store (as stored)", NULL},
    {NULL, 0, NULL, NULL, NULL},
};

static int copy_opt(const mg_args *a, const char *name, char *dst, size_t n, mg_error *err)
{
    const char *v = mg_args_get(a, name);
    if (v && strlen(v) >= n)
        return mg_fail(err, "UsageError", "%%resume: %s: value too long", name);
    if (v) snprintf(dst, n, "%s", v);
    return 0;
}

static int run(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    if (args->npos > 1)
        return mg_fail(err, "UsageError",
                       "%%resume takes one RUN_DIR or CHECKPOINT (got %d "
                       "arguments)",
                       args->npos);
    mg_resume_opts ro;
    mg_resume_opts_default(&ro);
    long epochs = 0, keep = 0;
    if (mg_args_int(args, "--epochs", 0, &epochs, err) < 0 ||
        mg_args_int(args, "--keep", 0, &keep, err) < 0)
        return -1;
    /* the bounds of %train's rows: a run continued with a value %train refuses would
     * write checkpoints no later %resume could read */
    mg_run_opts typed;
    mg_run_opts_default(&typed);
    if (mg_args_has(args, "--epochs"))
        typed.epochs = epochs < INT_MIN ? INT_MIN : epochs > INT_MAX ? INT_MAX : (int)epochs;
    if (mg_args_has(args, "--keep"))
        typed.keep = keep < INT_MIN ? INT_MIN : keep > INT_MAX ? INT_MAX : (int)keep;
    if (mg_run_opts_check(&typed, "%resume", err) < 0) return -1;
    ro.epochs = mg_args_has(args, "--epochs") ? typed.epochs : 0;
    ro.keep = mg_args_has(args, "--keep") ? typed.keep : 0;
    const char *tl = mg_args_get(args, "--time-limit");
    if (tl && (!strcmp(tl, "none") || !strcmp(tl, "0"))) ro.time_limit_s = 0; /* no limit */
    else if (tl && mg_run_parse_duration(tl, &ro.time_limit_s, err) < 0) return -1;
    mg_every every;
    const char *ce = mg_args_get(args, "--checkpoint-every");
    if (ce && mg_run_parse_every(ce, &every, err) < 0) return -1;
    if (copy_opt(args, "--device", ro.device, sizeof ro.device, err) < 0 ||
        copy_opt(args, "--results", ro.results, sizeof ro.results, err) < 0 ||
        copy_opt(args, "--checkpoint-every", ro.checkpoint_every, sizeof ro.checkpoint_every, err) <
            0)
        return -1;
    const char *arg = args->npos ? args->pos[0] : NULL;
    mg_ckpt_last *last = mg_ckpt_last_get(ctx);
    if (!arg && last && last->run_dir[0]) arg = last->run_dir;
    if (!arg && last && last->last_path[0]) arg = last->last_path;
    if (!arg)
        return mg_fail(err, "UsageError",
                       "%%resume: which run? ---> HINT: %%resume RUN_DIR "
                       "(the --run-dir of the %%train) or %%resume CHECKPOINT_FILE");
    char *path = NULL, staging[1024];
    int remote = rt_store_is_url(arg);
    /* s3://: the newest complete, valid checkpoint is fetched into the staging directory
     * (where the run goes on) and the run's new checkpoints are uploaded */
    if (mg_ckpt_resolve(arg, ctx->out, &path, err) < 0 ||
        (remote &&
         mg_store_begin(ctx, arg, ro.keep > 0 ? ro.keep : 1, staging, sizeof staging, err) < 0)) {
        mg_error e = *err;
        mg_fail(err, e.ename, "%%resume: %s", e.evalue);
        free(path);
        return -1;
    }
    int rc = mg_ckpt_resume(ctx, path, &ro, err);
    free(path);
    if (remote) mg_store_end(ctx, mg_store_drain_budget(ro.time_limit_s), ctx->out);
    return rc;
}

const mg_command mg_cmd_resume = {
    .name = "resume",
    .summary = "Continue a stopped training run from its newest valid checkpoint",
    .usage = "Usage: %resume [RUN_DIR | CHECKPOINT] [--epochs N] [--device DEV]\n"
             "               [--time-limit TIME] [--checkpoint-every WHEN] [--keep N]\n"
             "               [--results PATH]\n\n"
             "Restores everything a checkpoint holds - the model (rebuilt from its spec, no\n"
             "%%model cell needed), optimiser state, learning-rate schedule, RNG, data order and\n"
             "position, epoch and step - and trains on. The data set is reloaded by name and\n"
             "must have the same checksum. RUN_DIR resumes from its newest valid checkpoint;\n"
             "a damaged or truncated newer file is skipped with a warning naming it. Works in\n"
             "a fresh kernel on another machine, and across CPU and CUDA. On the CPU the\n"
             "continued run's per-step losses equal the uninterrupted run's exactly.\n"
             "--epochs N changes the planned length (e.g. to train longer); without an\n"
             "argument the last run's directory of this session is used. The run keeps its\n"
             "--time-limit (a budget per session) unless --time-limit TIME or none is given.\n\n"
             "Example:\n  %resume runs/mnist --epochs 20",
    .flags = MG_LINE | MG_LONG_RUNNING,
    .options = options,
    .run = run,
};
