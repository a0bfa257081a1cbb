/* mg_resume.h - continuing a run from its checkpoint: %resume, and %train (or
 * %fine_tune) continuing a run directory that already holds checkpoints. Above both the
 * run (mg_run.h) and its checkpoints (mg_ckpt.h): it reads what a checkpoint says
 * about its run, rebuilds the run, restores it and trains it on.
 *
 * Files: mg_resume_run.c (a file -> a running run), mg_train_resume.c (%train --resume),
 * mg_resume.c (%resume). Docs: docs/resume.md.
 */
#ifndef MG_RESUME_H
#define MG_RESUME_H

#include "mg.h"
#include "mg_run_opts.h"

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

#endif
