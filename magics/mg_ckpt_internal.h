/* mg_ckpt_internal.h - shared between the mg_ckpt_*.c / mg_checkpoint.c / mg_resume*.c
 * files only (the rest of magics/ uses mg_ckpt.h). */
#ifndef MG_CKPT_INTERNAL_H
#define MG_CKPT_INTERNAL_H

#include "mg_ckpt.h"
#include "mg_workspace.h"

/* Fills rec's descriptive fields (model name, run dir, hyperparameters, data set
 * identity, resolved schedule, run id, results store) from run; frees what rec held. */
RT_MUST_USE int mgp_ckpt_describe(mg_run *run, mg_ckpt_last *rec, mg_error *err);
/* Frees rec's strings and snapshot and zeroes it (not rec itself). */
void mgp_ckpt_last_clear(mg_ckpt_last *rec);
/* The rt_ckpt_train_info view of rec (borrowing its strings). */
rt_ckpt_train_info mgp_ckpt_info(const mg_ckpt_last *rec);

/* mg_ckpt_save_run with this checkpoint's metric and the best so far (may be NULL). */
RT_MUST_USE int mgp_ckpt_save_with(mg_run *run, const char *path, const rt_ckpt_metric *metric,
                                   const rt_ckpt_metric *best, mg_error *err);

/* The monitored metric: validation accuracy (higher is better). */

/* Periodic-checkpoint state of the current run (session slot "ckpt.policy"). */
typedef struct mgp_policy {
    const mg_run *run;       /* the run it belongs to */
    double last_elapsed;     /* run time at the last hook call (detects a new run) */
    double last_save_s;      /* run time of the last save */
    int64_t last_saved_step; /* -1: none in this run */
    int64_t metric_step;     /* step of the last validation, -1 none */
    int64_t last_step_seen;  /* trainer step at the last hook call */
    char last_path[1024];    /* newest checkpoint this run wrote ("" none) */
    int64_t first_step;      /* step and run time at the first hook call: the */
    double first_elapsed;    /* step time, to save before --time-limit ends */
    double last_save_dur;    /* seconds the last save took */
    int limit_saved;         /* the save ahead of the time limit was made */
    rt_ckpt_metric metric, best;
    int has_best;
} mgp_policy;

/* The policy state for run (reset when run is a new run). NULL + err on no memory. */
mgp_policy *mgp_policy_get(mg_ctx *ctx, mg_run *run, mg_error *err);

/* What a checkpoint says about its run, for resuming it (mg_resume_run.c). All of it
 * comes from the file, so it is untrusted: it never names a destination. */
typedef struct mgp_ck_desc {
    const char *spec, *name; /* borrowed from the reader */
    rt_model_input in;
    mg_ws_origin ds; /* the data set: reloaded and checked by its checksum */
    char schedule[sizeof(((mg_run_opts *)0)->schedule)];
    mg_run_opts o;
} mgp_ck_desc;

/* Reads model, data set, input shape, schedule and options from rd's metadata into d;
 * -1 with a ValueError naming path when they are missing or malformed. */
RT_MUST_USE int mgp_ckpt_read_desc(const rt_ckpt_reader *rd, const char *path, mgp_ck_desc *d,
                                   mg_error *err);
/* The data-set record of rd (from path) into o; 0 when it has a name, else -1 and o
 * empty (no error: older or hand-made files have none). */
int mgp_ckpt_read_origin(const rt_ckpt_reader *rd, const char *path, mg_ws_origin *o);

/* "12.3 MB" */
void mgp_human_size(uint64_t bytes, char *buf, size_t n);

#endif
