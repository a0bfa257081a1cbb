/* rt_early_stop.h - the epoch-level controls: the monitored metric, early stopping and
 * the plateau schedule's reductions, as one state updated once an epoch.
 *
 * After each epoch the caller hands the epoch's metrics to rt_watch_epoch (through
 * rt_trainer_epoch_metrics). The monitored value (rt_monitor: val_loss by default)
 * then decides:
 *   best       the epoch improves on the best by more than min_delta (lower is better
 *              for a loss, higher for an accuracy), as Keras' EarlyStopping; the first
 *              epoch always sets it. The "best" checkpoint follows it too.
 *   early stop patience P > 0: the run stops when P epochs in a row did not improve,
 *              so a run that never improves after its first epoch stops after 1 + P.
 *   plateau    --schedule plateau: torch.optim.lr_scheduler.ReduceLROnPlateau (mode
 *              from the metric, threshold_mode rel, eps 1e-8): more than `patience`
 *              epochs without a relative improvement of `threshold` multiply the lr by
 *              `factor`, not below `min_lr`; for `cooldown` epochs after a reduction
 *              bad epochs are not counted. During a warmup the epochs are not counted
 *              (the warmup's lr is not the one to judge).
 * Everything is in rt_watch_state, which goes into checkpoints (rt_trainer_state), so a
 * resumed run decides exactly as the uninterrupted one.
 */
#ifndef RT_EARLY_STOP_H
#define RT_EARLY_STOP_H

#include <stdint.h>

#include "rt_error.h"
#include "rt_schedule.h"

typedef enum {
    RT_MONITOR_VAL_LOSS = 0,
    RT_MONITOR_VAL_ACC,
    RT_MONITOR_TRAIN_LOSS,
    RT_MONITOR_TRAIN_ACC,
    RT_MONITOR_COUNT
} rt_monitor;

/* "val_loss", "val_acc" (or val_accuracy), "train_loss", "train_acc" (train_accuracy);
 * RT_EINVAL naming the metrics there are. */
RT_MUST_USE rt_status rt_monitor_parse(const char *name, rt_monitor *out, rt_error *err);
const char *rt_monitor_name(rt_monitor m); /* "val_loss" */
int rt_monitor_higher_is_better(rt_monitor m);
/* The val_* metric's train_* counterpart (what follows "best" without validation data). */
rt_monitor rt_monitor_without_val(rt_monitor m);

typedef struct rt_epoch_metrics {
    double train_loss, train_acc; /* the epoch's running means */
    double val_loss, val_acc;     /* NAN without validation data */
} rt_epoch_metrics;
double rt_monitor_value(rt_monitor m, const rt_epoch_metrics *em); /* NAN: not measured */

typedef struct rt_early_stop {
    int patience;     /* epochs without an improvement before stopping; 0 = off */
    double min_delta; /* an improvement is more than this (>= 0) */
} rt_early_stop;

typedef struct rt_watch_state {
    int has_best;
    double best;          /* the monitored value of the best epoch */
    int64_t best_epoch;   /* 1-based */
    int64_t wait;         /* epochs since the best */
    int stopped;          /* early stopping decided: no more steps */
    int has_plateau_best; /* plateau: torch's best and num_bad_epochs */
    double plateau_best;
    int64_t plateau_bad;
    double lr_scale; /* plateau: the product of its reductions (1), or min_lr / base lr
                        once the floor is reached */
    int64_t reductions;
    int64_t cooldown_left; /* plateau: epochs of cooldown still to come (torch's
                              cooldown_counter) */
} rt_watch_state;

void rt_watch_init(rt_watch_state *s);
/* A state read back from a checkpoint: RT_EINVAL when a field is out of range. */
RT_MUST_USE rt_status rt_watch_check(const rt_watch_state *s, rt_error *err);

/* After epoch (1-based) with metrics em: updates s. sched may be NULL (no plateau);
 * units_done = the schedule's units (epochs or steps) done so far, for its warmup.
 * *improved: this epoch is the new best. RT_EINVAL when the monitored metric was not
 * measured (validation data missing): the caller picks another monitor first. */
RT_MUST_USE rt_status rt_watch_epoch(rt_watch_state *s, rt_monitor m, const rt_early_stop *es,
                                     const rt_schedule *sched, double base_lr, int64_t epoch,
                                     int64_t units_done, const rt_epoch_metrics *em, int *improved,
                                     rt_error *err);

#endif
