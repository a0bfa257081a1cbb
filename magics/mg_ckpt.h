/* mg_ckpt.h - checkpointing glue between a training run (mg_run.h) and checkpoint files
 * (rt_ckpt_train.h): the periodic policy and rotation, saving a run, rebuilding a run
 * from a checkpoint (%resume, and %train continuing a run directory that already holds
 * checkpoints), and the session's memory of the last run for %checkpoint.
 *
 * Files: mg_ckpt_hook.c (hook, policy, rotation), mg_ckpt_save.c (a run -> a file: the
 * metadata), mg_resume_run.c (a file -> a run), mg_train_resume.c (%train --resume), mg_checkpoint.c (%checkpoint),
 * mg_resume.c (%resume). Docs: docs/checkpoint-format.md.
 */
#ifndef MG_CKPT_H
#define MG_CKPT_H

#include "mg.h"
#include "mg_run.h"
#include "rt_ckpt_train.h"

/* Called by mg_run_loop after every step (ev = RT_STEP_CONTINUE / RT_STEP_EPOCH_END,
 * after that epoch's validation) and once when the loop stops (ev = RT_STEP_DONE /
 * RT_STEP_STOPPED / RT_STEP_TIME_LIMIT). With a run directory: saves a checkpoint there
 * when --checkpoint-every says so (default 1epoch) and always when stopping (unless the
 * newest checkpoint is already of this step), then keeps the newest --keep plus the best
 * by validation accuracy. A periodic save that fails is a warning (training goes on);
 * the final one failing is an error. When stopping it also remembers the run's state in
 * the session for %checkpoint save. 0 = go on; -1 with err = end the run as failed. */
RT_MUST_USE int mg_run_checkpoint_hook(mg_run *run, rt_step_event ev, const mg_out *out,
                                       mg_error *err);

/* Saves run's current state (model, optimiser, position, metadata) to path, atomically.
 * -1 with err naming the file (disk full, not writable...). */
RT_MUST_USE int mg_ckpt_save_run(mg_run *run, const char *path, mg_error *err);

/* A %resume / %checkpoint argument: a directory gives its newest valid checkpoint (each
 * damaged newer file is named in a warning on out), a file gives itself. *path: new
 * string (free()). -1 with err (FileNotFoundError) when there is nothing to resume. */
RT_MUST_USE int mg_ckpt_resolve(const char *arg, const mg_out *out, char **path, mg_error *err);

/* What %resume may change; zero / empty / negative = as stored in the checkpoint. */
typedef struct mg_resume_opts {
    int epochs;                /* --epochs N: the run's planned length in epochs */
    char device[32];           /* --device */
    char results[1024];        /* --results */
    double time_limit_s;       /* --time-limit (< 0: stored) */
    char checkpoint_every[32]; /* --checkpoint-every */
    int keep;                  /* --keep */
    const char *caller;        /* "%resume" or "%train" (for messages) */
} mg_resume_opts;

/* Defaults: everything as stored, caller "%resume". */
void mg_resume_opts_default(mg_resume_opts *ro);

/* Rebuilds the run of checkpoint `path` without the notebook's cells (model from its
 * spec, data set reloaded by name and verified by checksum, hyperparameters, schedule),
 * restores weights, optimiser state, data order and step, and continues it with
 * mg_run_loop. Returns what mg_run_loop returns; -1 with err naming the file otherwise. */
RT_MUST_USE int mg_ckpt_resume(mg_ctx *ctx, const char *path, const mg_resume_opts *ro,
                               mg_error *err);

/* For %train with o->run_dir (mg_train_resume.c): by mode (auto, never, must; see
 * there) continues the directory's run (*handled = 1, the return value is %train's),
 * moves its checkpoints aside for a new run, or points o->run_dir at a versioned
 * directory beside it for a new run (*handled = 0: %train trains o). -1 with err
 * (*handled = 1) when it cannot do what mode asks. */
RT_MUST_USE int mg_ckpt_train_autoresume(mg_ctx *ctx, mg_run_opts *o, mg_resume_mode mode,
                                         int *handled, mg_error *err);

/* ---- the session's memory of the last run (mg_session slot "ckpt.last") ---- */
typedef struct mg_ckpt_last {
    char model_name[64];
    char run_dir[1024];   /* "" when the run had none */
    char last_path[1024]; /* newest checkpoint written or loaded, "" if none */
    int has_snap;
    rt_ckpt_train_snap snap; /* optimiser + position at the end of the run */
    char *hyperparameters, *dataset, *schedule, *run_id, *results_store; /* JSON / text */
    double base_lr;
} mg_ckpt_last;

/* Borrowed; NULL when no run or load happened in this session. */
mg_ckpt_last *mg_ckpt_last_get(mg_ctx *ctx);
/* A new, empty record stored in the session (replacing the previous one); NULL + err. */
mg_ckpt_last *mg_ckpt_last_reset(mg_ctx *ctx, mg_error *err);

#endif
