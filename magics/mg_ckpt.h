/* mg_ckpt.h - the checkpoints of a training run (rt_ckpt_train.h files): when a run
 * writes one, rotation, the metadata that makes a file describe its run, reading that
 * description back, and the session's memory of the last run for %checkpoint.
 *
 * The run (mg_run.h) uses this, never the other way round: it describes itself in an
 * mg_ckpt_run for each call, and keeps an mg_ckpt_policy (the periodic policy's memory)
 * of its own. Continuing a run from a checkpoint needs both and lives above them
 * (mg_resume.h).
 *
 * Files: mg_ckpt_hook.c (hook, policy, rotation), mg_ckpt_save.c (a run -> a file: the
 * metadata), mg_ckpt_read.c (a file -> what it says about its run), mg_checkpoint.c
 * (%checkpoint). Docs: docs/checkpoint-format.md.
 */
#ifndef MG_CKPT_H
#define MG_CKPT_H

#include "mg.h"
#include "mg_run_opts.h"
#include "rt_ckpt_train.h"
#include "rt_results.h"

/* A run as its checkpoints see it: what a checkpoint of it holds and where it goes,
 * filled by the run for each call (borrowed for the call). */
typedef struct mg_ckpt_run {
    mg_ctx *ctx;              /* the session: its object store, "ckpt.last" */
    const mg_run_opts *o;     /* the hyperparameters; run_dir, keep, checkpoint_every,
                                   time_limit_s say when and where */
    const char *model_name;   /* the workspace's model */
    const char *dataset_name; /* the workspace's data set ("fashion-mnist") */
    const rt_dataset_splits *data;
    rt_model *model;
    rt_trainer *trainer;
    rt_results *results;   /* NULL: no store */
    int64_t run_id;        /* in results (0: none) */
    int64_t start_step;    /* the trainer's step when this run (or continuation) began */
    double elapsed;        /* seconds since it began */
    int has_metric;        /* at an epoch end: the monitored metric of that epoch, */
    rt_ckpt_metric metric; /* and whether it was the best yet */
    int improved;
    /* the run's curves as JSON (a new string, NULL: none), asked for when saving */
    char *(*curves_json)(const void *run);
    const void *run;
} mg_ckpt_run;

/* The periodic policy's memory of one run, owned by the run (zeroed, then
 * mg_ckpt_policy_init). */
typedef struct mg_ckpt_policy {
    int started;             /* the first hook call was made */
    double last_save_s;      /* run time of the last save */
    int64_t last_saved_step; /* -1: none in this run */
    int64_t metric_step;     /* step of the last validation, -1 none */
    int64_t last_step_seen;  /* trainer step at the last hook call */
    char last_path[1024];    /* newest checkpoint this run wrote ("" none) */
    int64_t first_step;      /* step and run time at the first hook call: the */
    double first_elapsed;    /* step time, to save before --time-limit ends */
    double last_save_dur;    /* seconds the last save took */
    double last_call;        /* run time at the last hook call */
    double longest_gap;      /* longest time between two hook calls (validation, stalls) */
    int limit_saved;         /* the save ahead of the time limit was made */
    rt_ckpt_metric metric, best;
    int has_best;
} mg_ckpt_policy;

void mg_ckpt_policy_init(mg_ckpt_policy *p);
/* A run continued from checkpoint rd (file path, of step step): no second copy of that
 * step, the best metric so far; path is the newest file when in_run_dir. */
void mg_ckpt_policy_continue(mg_ckpt_policy *p, const rt_ckpt_reader *rd, const char *path,
                             int64_t step, int in_run_dir);

/* Called by the run after every step (ev = RT_STEP_CONTINUE / RT_STEP_EPOCH_END, after
 * that epoch's validation) and once when it stops (ev = RT_STEP_DONE / RT_STEP_STOPPED /
 * RT_STEP_TIME_LIMIT). With a run directory: saves a checkpoint there when
 * --checkpoint-every says so (default 1epoch) and always when stopping (unless the
 * newest checkpoint is already of this step), then keeps the newest --keep plus the best
 * by the monitored metric. *saved is set to the step when a checkpoint was written. A
 * periodic save that fails is a warning (training goes on); the final one failing is an
 * error. When stopping it also remembers the run's state in the session for %checkpoint
 * save. 0 = go on; -1 with err = end the run as failed. */
RT_MUST_USE int mg_ckpt_hook(mg_ckpt_policy *p, const mg_ckpt_run *run, rt_step_event ev,
                             const mg_out *out, int64_t *saved, mg_error *err);

/* A %resume / %checkpoint argument: a directory gives its newest valid checkpoint (each
 * damaged newer file is named in a warning on out), a file gives itself. *path: new
 * string (free()). -1 with err (FileNotFoundError) when there is nothing to resume. */
RT_MUST_USE int mg_ckpt_resolve(const char *arg, const mg_out *out, char **path, mg_error *err);

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
