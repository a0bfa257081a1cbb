/* rt_early_stop.c - the monitored metric, early stopping and plateau reductions
 * (rt_early_stop.h). Pure state updates: no clock, no allocation. */
#include "rt_early_stop.h"

#include <math.h>
#include <string.h>

static const char *const NAMES[RT_MONITOR_COUNT] = {"val_loss", "val_acc", "train_loss",
                                                    "train_acc"};

rt_status rt_monitor_parse(const char *name, rt_monitor *out, rt_error *err)
{
    for (int i = 0; i < RT_MONITOR_COUNT; i++)
        if (name && !strcmp(name, NAMES[i])) return *out = (rt_monitor)i, RT_OK;
    if (name && !strcmp(name, "val_accuracy")) return *out = RT_MONITOR_VAL_ACC, RT_OK;
    if (name && !strcmp(name, "train_accuracy")) return *out = RT_MONITOR_TRAIN_ACC, RT_OK;
    return RT_ERR(err, RT_EINVAL,
                  "unknown metric '%s'; expected one of val_loss, val_acc, train_loss, "
                  "train_acc",
                  name ? name : "");
}

const char *rt_monitor_name(rt_monitor m)
{
    return (unsigned)m < RT_MONITOR_COUNT ? NAMES[m] : "unknown";
}

int rt_monitor_higher_is_better(rt_monitor m)
{
    return m == RT_MONITOR_VAL_ACC || m == RT_MONITOR_TRAIN_ACC;
}

rt_monitor rt_monitor_without_val(rt_monitor m)
{
    return m == RT_MONITOR_VAL_LOSS  ? RT_MONITOR_TRAIN_LOSS
           : m == RT_MONITOR_VAL_ACC ? RT_MONITOR_TRAIN_ACC
                                     : m;
}

double rt_monitor_value(rt_monitor m, const rt_epoch_metrics *em)
{
    switch (m) {
    case RT_MONITOR_VAL_LOSS: return em->val_loss;
    case RT_MONITOR_VAL_ACC: return em->val_acc;
    case RT_MONITOR_TRAIN_LOSS: return em->train_loss;
    case RT_MONITOR_TRAIN_ACC: return em->train_acc;
    default: return NAN;
    }
}

void rt_watch_init(rt_watch_state *s)
{
    memset(s, 0, sizeof *s);
    s->lr_scale = 1.0;
}

rt_status rt_watch_check(const rt_watch_state *s, rt_error *err)
{
    if (s->best_epoch < 0 || s->wait < 0 || s->plateau_bad < 0 || s->reductions < 0 ||
        s->cooldown_left < 0 || !(s->lr_scale > 0 && s->lr_scale <= 1) ||
        (s->has_best && !isfinite(s->best)) || (s->has_plateau_best && !isfinite(s->plateau_best)))
        return RT_ERR(err, RT_EINVAL,
                      "trainer state: early-stopping / plateau state out of range (best "
                      "epoch %lld, wait %lld, lr scale %g)",
                      (long long)s->best_epoch, (long long)s->wait, s->lr_scale);
    return RT_OK;
}

/* ReduceLROnPlateau's is_better, threshold_mode rel. */
static int plateau_better(double a, double best, double threshold, int higher)
{
    return higher ? a > best * (1.0 + threshold) : a < best * (1.0 - threshold);
}

rt_status rt_watch_epoch(rt_watch_state *s, rt_monitor m, const rt_early_stop *es,
                         const rt_schedule *sched, double base_lr, int64_t epoch,
                         int64_t units_done, const rt_epoch_metrics *em, int *improved,
                         rt_error *err)
{
    double v = rt_monitor_value(m, em);
    *improved = 0;
    if (!isfinite(v))
        return RT_ERR(err, RT_EINVAL, "the monitored metric %s was not measured (%g)",
                      rt_monitor_name(m), v);
    int higher = rt_monitor_higher_is_better(m);
    double delta = es && es->min_delta > 0 ? es->min_delta : 0;
    if (!s->has_best || (higher ? v > s->best + delta : v < s->best - delta)) {
        s->has_best = 1, s->best = v, s->best_epoch = epoch, s->wait = 0;
        *improved = 1;
    } else {
        s->wait++;
    }
    if (es && es->patience > 0 && s->wait >= es->patience) s->stopped = 1;
    if (sched && sched->kind == RT_SCHED_PLATEAU && units_done >= sched->warmup) {
        if (!s->has_plateau_best || plateau_better(v, s->plateau_best, sched->threshold, higher)) {
            s->has_plateau_best = 1, s->plateau_best = v, s->plateau_bad = 0;
        } else {
            s->plateau_bad++;
        }
        if (s->cooldown_left > 0) { /* torch: bad epochs in the cooldown are ignored */
            s->cooldown_left--;
            s->plateau_bad = 0;
        }
        if (s->plateau_bad > sched->patience) {
            double old_lr = base_lr * s->lr_scale, new_lr = old_lr * sched->factor;
            int floor = new_lr < sched->min_lr;
            if (floor) new_lr = sched->min_lr;
            if (old_lr - new_lr > 1e-8) {
                if (floor) s->lr_scale = sched->min_lr / base_lr;
                else s->lr_scale *= sched->factor;
                s->reductions++;
            }
            s->cooldown_left = sched->cooldown;
            s->plateau_bad = 0;
        }
    }
    return RT_OK;
}
