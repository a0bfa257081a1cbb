/* mg_run_internal.h - the run's fields, shared by mg_run.c (create, loop) and
 * mg_run_view.c (progress display, epoch lines, plot, summary) and the other
 * mg_run_*.c files. Not for other files: they use mg_run.h. */
#ifndef MG_RUN_INTERNAL_H
#define MG_RUN_INTERNAL_H

#include <stdio.h>

#include "mg_ckpt.h"
#include "mg_run.h"
#include "mg_workspace.h"

typedef struct mgp_series {
    double *x, *y;
    size_t n, cap;
} mgp_series;

#define MG_RUN_MAX_DEVICES 16

struct mg_run {
    mg_ctx *ctx;
    mg_run_opts o;
    char model_name[64];
    char *spec;            /* copy of the %%model body */
    mg_ws_data *data;      /* borrowed from the workspace */
    const rt_dataset *val; /* val split, or test when there is none */
    const char *val_name;  /* "val" or "test" */
    rt_backend *backend;   /* heap; handed to the workspace with the model */
    rt_model *model;
    rt_backend *rep_b[MG_RUN_MAX_DEVICES]; /* several GPUs: the other devices' backends */
    rt_model *rep_m[MG_RUN_MAX_DEVICES];   /* ... and model replicas (mg_run_devices.c) */
    int nrep;
    char where[64]; /* the progress line's "on cuda:0,1" / "on 2 ranks" */
    rt_trainer *trainer;
    rt_results *rs; /* NULL: no store (a warning was shown) */
    int64_t run_id;
    int rs_warned;
    int curve_warned;     /* a curve point was lost to out of memory (said once) */
    rt_eval_result *eval; /* scratch for the per-epoch validation */
    /* live view */
    char progress_id[80], plot_id[80];
    int progress_shown, plot_shown;
    double t_start, last_update, epoch_t0;
    int64_t start_step;  /* trainer step when the loop began (resume) */
    int64_t epoch_seen0; /* images of the epoch seen before the loop began */
    rt_progress last;    /* the latest step's progress */
    int has_progress;
    double val_loss, val_acc;
    int has_val;
    int no_val;             /* no validation data (val and test empty): nothing validated */
    rt_monitor monitor;     /* what --monitor follows here (a train_ metric without val) */
    int improved;           /* the last epoch end was the best yet (by monitor) */
    double monitored;       /* its monitored value */
    int has_monitored;      /* an epoch ended here (monitored, improved are set) */
    int64_t last_ckpt_step; /* step of the newest checkpoint saved, -1 none */
    mg_ckpt_policy ckpt;    /* when this run writes checkpoints (mg_ckpt.h) */
    int probing;            /* stepped by mg_run_probe_step: no display, begun */
    mgp_series step_loss, ep_loss, ep_acc, ep_vloss, ep_vacc;
    double *lr_mult; /* --freeze / --lr-mult: one a trainable tensor (0 frozen), or NULL */
};

/* mg_run_loop.c: a results-store problem, shown once as a warning */
void mgp_rs_warn(mg_run *r, const char *what, const char *msg);
/* mg_run.c: the results-store name of a monitored metric (val_acc -> "val_accuracy") */
const char *mgp_metric_key(rt_monitor m);
/* mg_run_curves.c: the run's loss/accuracy curves as JSON (new string, free(); NULL on
 * no memory), for its checkpoints (run: the mg_run); mgp_curves_restore puts the points
 * up to step of a checkpoint's curves (text may be NULL) back before a continued run
 * starts. */
char *mgp_curves_json(const void *run);
void mgp_curves_restore(mg_run *r, const char *text, int64_t step);
/* mg_run_devices.c: --device cuda:0,1 / cuda:all. parse: idx[0..*n) the devices
 * (*n = 0: one device, the backend's own syntax); open_replicas: backends and models
 * for idx[1..n); free: releases them. */
RT_MUST_USE int mgp_devices_parse(const char *dev, int *idx, int *n, mg_error *err);
RT_MUST_USE int mgp_devices_open_replicas(mg_run *r, const int *idx, int n, mg_error *err);
void mgp_devices_free(mg_run *r);
/* mg_run_init.c: --init into the built model (not for a continued run), then the
 * multipliers of --freeze and --lr-mult into r->lr_mult; errors name the option */
RT_MUST_USE int mgp_run_finetune(mg_run *r, mg_error *err);
/* --precision on backend b (mg_run.c) */
RT_MUST_USE int mgp_set_precision(mg_run *r, rt_backend *b, mg_error *err);
/* mg_run_view.c */
void mgp_view_start(mg_run *r);
void mgp_view_progress(mg_run *r, const rt_progress *p, int force);
void mgp_view_epoch(mg_run *r, const rt_progress *p, double seconds, double images_per_s);
void mgp_view_plot(mg_run *r);
void mgp_view_summary(mg_run *r, rt_step_event why, int failed, const rt_train_summary *s);
/* The one hint for training a run longer (a summary line on t). */
void mgp_hint_longer(const mg_run *r, FILE *t);
RT_MUST_USE int mgp_series_add(mgp_series *s, double x, double y);
/* Adds a point to one of r's curves; one that cannot be added (out of memory) is a
 * warning, shown once: the curves are a picture, training goes on. */
void mgp_curve_add(mg_run *r, mgp_series *s, double x, double y);
void mgp_series_free(mgp_series *s);
double mgp_now(void);

#endif
