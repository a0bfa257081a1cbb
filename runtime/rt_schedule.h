/* rt_schedule.h - learning-rate schedules as pure functions of the step.
 *
 * lr = rt_schedule_lr(s, base_lr, step), step = the 0-based index of the optimiser
 * update about to happen (the number of updates done so far). Nothing is accumulated,
 * so a resumed run gets exactly the lr of the uninterrupted one from the step alone.
 * Each schedule equals its torch.optim.lr_scheduler counterpart stepped once per unit:
 *   constant                 ConstantLR(factor=1) / no scheduler
 *   step  step_size gamma    StepLR:  base * gamma^(t // step_size)
 *   cosine t_max eta_min     CosineAnnealingLR (closed form; periodic past t_max as torch)
 *   multistep milestones gamma  MultiStepLR: base * gamma^(number of milestones <= t);
 *                            milestones increasing, e.g. multistep:30,60:0.1 (unit=step
 *                            for iterations: multistep:32000,48000 unit=step)
 *   plateau factor patience  ReduceLROnPlateau (threshold 1e-4 rel; cooldown=N epochs
 *                            and min_lr=LR as torch's, 0 by default): the formula
 *                            gives base (and the warmup); the
 *                            reductions are epoch-level state, rt_early_stop.h, which
 *                            the trainer multiplies in (rt_watch_state.lr_scale)
 *   onecycle                 OneCycleLR (max_lr, total_steps, pct_start 0.3, anneal cos,
 *                            div_factor 25, final_div_factor 1e4, three_phase false);
 *                            cycle_momentum is NOT applied (momentum/betas stay fixed);
 *                            past total_steps (torch raises) the lr stays at its end value
 * t counts epochs (unit=epoch: t = step / steps_per_epoch, i.e. scheduler.step() once an
 * epoch, the torch habit for StepLR/Cosine) or steps (unit=step; OneCycle's default).
 * warmup=W (constant/step/cosine/multistep/plateau): SequentialLR(LinearLR(warmup_start, 1, W), S,
 * milestones=[W]) where S sees t - W (so cosine's t_max counts from the warmup's end).
 *
 * Option strings (%train --schedule): a name, optional ':'-separated positional values,
 * then key=value words (space or comma separated), e.g.
 *   "constant"  "step:10:0.1"  "step step_size=10 gamma=0.1"  "cosine warmup=5"
 *   "cosine:50:1e-5 unit=step"  "onecycle max_lr=0.1 pct_start=0.25 anneal=linear"
 * Positional order: step (step_size, gamma), cosine (t_max, eta_min),
 * onecycle (max_lr, total_steps, pct_start), multistep (milestones, gamma: the
 * milestones comma-separated, or milestones=30;60), plateau (factor, patience; then
 * cooldown=N min_lr=LR as keys: "plateau:0.1:10 cooldown=2 min_lr=1e-5").
 */
#ifndef RT_SCHEDULE_H
#define RT_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "rt_error.h"

typedef enum {
    RT_SCHED_CONSTANT = 0,
    RT_SCHED_STEP = 1,
    RT_SCHED_COSINE = 2,
    RT_SCHED_ONECYCLE = 3,
    RT_SCHED_MULTISTEP = 4,
    RT_SCHED_PLATEAU = 5
} rt_sched_kind;
#define RT_SCHED_KINDS 6
#define RT_SCHED_MAX_MILESTONES 16

typedef struct rt_schedule {
    rt_sched_kind kind;
    int per_step;                                /* unit: 1 = steps, 0 = epochs */
    int64_t steps_per_epoch;                     /* set by rt_schedule_resolve (> 0) */
    int64_t warmup;                              /* W units of linear warmup (0 = none) */
    double warmup_start;                         /* LinearLR start_factor (default 0.1) */
    int64_t step_size;                           /* step: required, > 0 */
    double gamma;                                /* step, multistep: 0.1 */
    int64_t milestones[RT_SCHED_MAX_MILESTONES]; /* multistep: increasing, > 0 */
    int nmilestones;                             /* multistep: >= 1 */
    double factor;                               /* plateau: 0.1, in (0, 1) */
    int64_t patience;                            /* plateau: 10 epochs */
    double threshold;                            /* plateau: 1e-4 (relative) */
    int64_t cooldown;                            /* plateau: 0 epochs after a reduction */
    double min_lr;                               /* plateau: 0, the lr's floor */
    int64_t t_max;                               /* cosine: 0 = the run's length (resolve) */
    double eta_min;                              /* cosine: 0 */
    double max_lr;                               /* onecycle: 0 = base_lr */
    int64_t total_steps;                         /* onecycle: 0 = the run's length (resolve) */
    double pct_start;                            /* onecycle: 0.3 */
    int anneal_linear;                           /* onecycle: 0 = cos, 1 = linear */
    double div_factor;                           /* onecycle: 25 */
    double final_div_factor;                     /* onecycle: 1e4 */
    int three_phase;                             /* onecycle: 0 */
} rt_schedule;

/* Defaults for kind (unit = step for onecycle, epoch otherwise). */
rt_schedule rt_schedule_default(rt_sched_kind kind);
const char *rt_schedule_kind_name(rt_sched_kind kind);

/* Parses an option string (see above). RT_EINVAL with a message naming what was
 * expected; *out is only written on success. */
RT_MUST_USE rt_status rt_schedule_parse(rt_schedule *out, const char *text, rt_error *err);

/* Fills what depends on the run (steps_per_epoch; t_max and total_steps when 0) and
 * checks the result (e.g. warmup shorter than t_max, onecycle phases non-empty).
 * epochs = the run's planned length. Idempotent for already-resolved fields. */
RT_MUST_USE rt_status rt_schedule_resolve(rt_schedule *s, int64_t steps_per_epoch, int64_t epochs,
                                          rt_error *err);

/* The learning rate of update `step` (0-based). s must be resolved. */
double rt_schedule_lr(const rt_schedule *s, double base_lr, int64_t step);

/* Canonical text that rt_schedule_parse reads back to the same schedule (every field,
 * %.17g): for checkpoint metadata. Returns the snprintf length (>= n: truncated). */
int rt_schedule_format(const rt_schedule *s, char *buf, size_t n);

#endif
