/* rt_schedule.c - the lr formulas, run-dependent resolution and canonical text.
 * The option parser is in rt_schedule_parse.c. All arithmetic is in double, in the
 * order torch.optim.lr_scheduler's closed forms use, so the fixtures generated from
 * PyTorch (tests/runtime/gen_optim_fixtures.py) agree to ~1e-15 relative.
 */
#include "rt_schedule.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const KIND_NAMES[] = {"constant", "step",      "cosine",
                                         "onecycle", "multistep", "plateau"};

const char *rt_schedule_kind_name(rt_sched_kind kind)
{
    return (unsigned)kind < RT_SCHED_KINDS ? KIND_NAMES[kind] : "unknown";
}

rt_schedule rt_schedule_default(rt_sched_kind kind)
{
    rt_schedule s = {0};
    s.kind = kind;
    s.per_step = kind == RT_SCHED_ONECYCLE;
    s.warmup_start = 0.1;
    s.gamma = 0.1;
    s.pct_start = 0.3;
    s.div_factor = 25.0;
    s.final_div_factor = 1e4;
    s.factor = 0.1;
    s.patience = 10;
    s.threshold = 1e-4;
    return s;
}

static const char *unit_name(const rt_schedule *s) { return s->per_step ? "step" : "epoch"; }

/* Works on a copy r; *out is written only on success. */
rt_status rt_schedule_resolve(rt_schedule *out, int64_t steps_per_epoch, int64_t epochs,
                              rt_error *err)
{
    rt_schedule r = *out, *s = &r;
    if (steps_per_epoch <= 0 || epochs <= 0)
        return RT_ERR(err, RT_EINVAL,
                      "schedule %s: the run needs at least one step and one epoch "
                      "(steps_per_epoch=%lld, epochs=%lld)",
                      rt_schedule_kind_name(s->kind), (long long)steps_per_epoch,
                      (long long)epochs);
    if (s->steps_per_epoch == 0) s->steps_per_epoch = steps_per_epoch;
    int64_t units = s->per_step ? s->steps_per_epoch * epochs : epochs;
    if (s->kind == RT_SCHED_COSINE && s->t_max == 0) {
        s->t_max = units - s->warmup;
        if (s->t_max <= 0)
            return RT_ERR(err, RT_EINVAL,
                          "schedule cosine: warmup=%lld leaves no %ss for the cosine in a "
                          "run of %lld %ss; ---> HINT: shorten warmup or set t_max",
                          (long long)s->warmup, unit_name(s), (long long)units, unit_name(s));
    }
    if (s->kind == RT_SCHED_STEP && s->step_size > 0 &&
        !isfinite(pow(s->gamma, (double)(units / s->step_size))))
        return RT_ERR(err, RT_EINVAL,
                      "schedule step: gamma=%g over the run's %lld decays makes the learning "
                      "rate overflow; ---> HINT: a gamma nearer 1 or a larger step_size",
                      s->gamma, (long long)(units / s->step_size));
    if (s->kind == RT_SCHED_MULTISTEP && (!isfinite(pow(s->gamma, (double)s->nmilestones)) ||
                                          !(pow(s->gamma, (double)s->nmilestones) > 0)))
        return RT_ERR(err, RT_EINVAL,
                      "schedule multistep: gamma=%g over %d milestones makes the learning rate "
                      "overflow or vanish; ---> HINT: a gamma nearer 1",
                      s->gamma, s->nmilestones);
    if (s->kind == RT_SCHED_ONECYCLE) {
        if (s->total_steps == 0) s->total_steps = units;
        double end1 = s->pct_start * (double)s->total_steps - 1.0;
        if (!(end1 > 0.0))
            return RT_ERR(err, RT_EINVAL,
                          "schedule onecycle: total_steps=%lld with pct_start=%g leaves "
                          "no warm-up phase; ---> HINT: more steps or a larger pct_start",
                          (long long)s->total_steps, s->pct_start);
        if (s->three_phase &&
            !(2.0 * s->pct_start * (double)s->total_steps - 2.0 < (double)s->total_steps - 1.0))
            return RT_ERR(err, RT_EINVAL,
                          "schedule onecycle: three_phase needs pct_start < 0.5 (got %g)",
                          s->pct_start);
        if (s->total_steps < units)
            return RT_ERR(err, RT_EINVAL,
                          "schedule onecycle: total_steps=%lld is shorter than the run "
                          "(%lld %ss); ---> HINT: leave total_steps out to use the run length",
                          (long long)s->total_steps, (long long)units, unit_name(s));
    }
    *out = r;
    return RT_OK;
}

static double anneal(const rt_schedule *s, double start, double end, double pct)
{
    if (s->anneal_linear) return (end - start) * pct + start;
    double cos_out = cos(M_PI * pct) + 1.0;
    return end + (start - end) / 2.0 * cos_out;
}

/* torch.optim.lr_scheduler.OneCycleLR.get_lr for last_epoch = t. */
static double onecycle_lr(const rt_schedule *s, double base_lr, int64_t t)
{
    double max_lr = s->max_lr > 0.0 ? s->max_lr : base_lr;
    double initial_lr = max_lr / s->div_factor;
    double min_lr = initial_lr / s->final_div_factor;
    double total = (double)s->total_steps;
    double ends[3], starts_lr[3], ends_lr[3];
    int nphases;
    ends[0] = s->pct_start * total - 1.0;
    starts_lr[0] = initial_lr;
    ends_lr[0] = max_lr;
    if (s->three_phase) {
        ends[1] = 2.0 * s->pct_start * total - 2.0;
        starts_lr[1] = max_lr;
        ends_lr[1] = initial_lr;
        ends[2] = total - 1.0;
        starts_lr[2] = initial_lr;
        ends_lr[2] = min_lr;
        nphases = 3;
    } else {
        ends[1] = total - 1.0;
        starts_lr[1] = max_lr;
        ends_lr[1] = min_lr;
        nphases = 2;
    }
    if (t > s->total_steps) t = s->total_steps; /* torch raises; we hold the end value */
    double step_num = (double)t, start = 0.0;
    for (int i = 0; i < nphases; i++) {
        if (step_num <= ends[i] || i == nphases - 1) {
            double pct = (step_num - start) / (ends[i] - start);
            return anneal(s, starts_lr[i], ends_lr[i], pct);
        }
        start = ends[i];
    }
    return min_lr; /* not reached */
}

double rt_schedule_lr(const rt_schedule *s, double base_lr, int64_t step)
{
    if (step < 0) step = 0;
    int64_t spe = s->steps_per_epoch > 0 ? s->steps_per_epoch : 1;
    int64_t t = s->per_step ? step : step / spe;
    if (s->kind == RT_SCHED_ONECYCLE) return onecycle_lr(s, base_lr, t);
    if (s->warmup > 0) {
        if (t < s->warmup) {
            /* LinearLR closed form, end_factor 1 */
            double f = s->warmup_start + (1.0 - s->warmup_start) * (double)t / (double)s->warmup;
            return base_lr * f;
        }
        t -= s->warmup;
    }
    switch (s->kind) {
    case RT_SCHED_STEP: return base_lr * pow(s->gamma, (double)(t / s->step_size));
    case RT_SCHED_MULTISTEP: {
        int passed = 0; /* bisect_right(milestones, t) */
        while (passed < s->nmilestones && s->milestones[passed] <= t) passed++;
        return base_lr * pow(s->gamma, (double)passed);
    }
    case RT_SCHED_COSINE:
        if (s->t_max <= 0) return base_lr;
        return s->eta_min +
               (base_lr - s->eta_min) * (1.0 + cos(M_PI * (double)t / (double)s->t_max)) / 2.0;
    default: return base_lr;
    }
}

/* The shortest %g text that reads back as exactly x (0.1, not 0.10000000000000001):
 * the canonical text is also what a user sees when a run resumes. */
typedef struct num_text {
    char s[32];
} num_text;

static num_text num(double x)
{
    num_text t;
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(t.s, sizeof t.s, "%.*g", prec, x);
        if (strtod(t.s, NULL) == x) break;
    }
    return t;
}

int rt_schedule_format(const rt_schedule *s, char *buf, size_t n)
{
    char common[160];
    snprintf(common, sizeof common, "unit=%s steps_per_epoch=%lld", unit_name(s),
             (long long)s->steps_per_epoch);
    char warm[96] = "";
    if (s->kind != RT_SCHED_ONECYCLE)
        snprintf(warm, sizeof warm, " warmup=%lld warmup_start=%s", (long long)s->warmup,
                 num(s->warmup_start).s);
    switch (s->kind) {
    case RT_SCHED_STEP:
        return snprintf(buf, n, "step %s%s step_size=%lld gamma=%s", common, warm,
                        (long long)s->step_size, num(s->gamma).s);
    case RT_SCHED_COSINE:
        return snprintf(buf, n, "cosine %s%s t_max=%lld eta_min=%s", common, warm,
                        (long long)s->t_max, num(s->eta_min).s);
    case RT_SCHED_MULTISTEP: {
        char ms[RT_SCHED_MAX_MILESTONES * 21 + 1] = "";
        size_t k = 0;
        for (int i = 0; i < s->nmilestones && k < sizeof ms; i++)
            k += (size_t)snprintf(ms + k, sizeof ms - k, "%s%lld", i ? ";" : "",
                                  (long long)s->milestones[i]);
        return snprintf(buf, n, "multistep %s%s milestones=%s gamma=%s", common, warm, ms,
                        num(s->gamma).s);
    }
    case RT_SCHED_PLATEAU:
        return snprintf(buf, n,
                        "plateau %s%s factor=%s patience=%lld threshold=%s cooldown=%lld "
                        "min_lr=%s",
                        common, warm, num(s->factor).s, (long long)s->patience, num(s->threshold).s,
                        (long long)s->cooldown, num(s->min_lr).s);
    case RT_SCHED_ONECYCLE:
        return snprintf(buf, n,
                        "onecycle %s max_lr=%s total_steps=%lld pct_start=%s "
                        "anneal=%s div_factor=%s final_div_factor=%s three_phase=%d",
                        common, num(s->max_lr).s, (long long)s->total_steps, num(s->pct_start).s,
                        s->anneal_linear ? "linear" : "cos", num(s->div_factor).s,
                        num(s->final_div_factor).s, s->three_phase);
    default: return snprintf(buf, n, "constant %s%s", common, warm);
    }
}
