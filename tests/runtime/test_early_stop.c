/* test_early_stop.c - the epoch-level controls of rt_early_stop.h: --monitor names,
 * early stopping (a run that never improves stops after exactly 1 + PATIENCE epochs,
 * one that keeps improving never does, --min-delta), and the plateau schedule against
 * torch.optim.lr_scheduler.ReduceLROnPlateau (plateau_fixtures.txt from
 * gen_optim_fixtures.py). Usage: test_early_stop PATH/plateau_fixtures.txt */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_early_stop.h"
#include "t.h"

static const char *g_path;

T_TEST(test_monitor_names)
{
    rt_monitor m;
    rt_error err;
    const char *names[] = {"val_loss", "val_acc", "train_loss", "train_acc"};
    for (int i = 0; i < 4; i++) {
        ASSERT_EQ(rt_monitor_parse(names[i], &m, &err), RT_OK);
        ASSERT_STR_EQ(rt_monitor_name(m), names[i]);
    }
    ASSERT_EQ(rt_monitor_parse("val_accuracy", &m, &err), RT_OK);
    ASSERT_EQ(m, RT_MONITOR_VAL_ACC);
    ASSERT_EQ(rt_monitor_parse("val_los", &m, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "unknown metric 'val_los'; expected one of val_loss, val_acc");
    ASSERT(rt_monitor_higher_is_better(RT_MONITOR_VAL_ACC));
    ASSERT(!rt_monitor_higher_is_better(RT_MONITOR_TRAIN_LOSS));
    ASSERT_EQ(rt_monitor_without_val(RT_MONITOR_VAL_LOSS), RT_MONITOR_TRAIN_LOSS);
    ASSERT_EQ(rt_monitor_without_val(RT_MONITOR_VAL_ACC), RT_MONITOR_TRAIN_ACC);
}

/* Epochs run until the watch says stop (at most max), the metric of epoch e being f(e). */
static int64_t run_until_stop(rt_monitor m, int patience, double min_delta, double (*f)(int),
                              int max, int64_t *best_epoch)
{
    rt_watch_state w;
    rt_watch_init(&w);
    rt_early_stop es = {.patience = patience, .min_delta = min_delta};
    int e = 1;
    for (; e <= max && !w.stopped; e++) {
        rt_epoch_metrics em = {
            .train_loss = f(e), .train_acc = f(e), .val_loss = f(e), .val_acc = f(e)};
        int improved;
        if (rt_watch_epoch(&w, m, &es, NULL, 0.1, e, e, &em, &improved, NULL) != RT_OK) return -1;
    }
    *best_epoch = w.best_epoch;
    return e - 1;
}

static double flat(int e) { return e == 1 ? 0.5 : 0.5 + 1e-9 * e; } /* never better */
static double falling(int e) { return 1.0 / e; }
static double rising(int e) { return 1.0 - 1.0 / (e + 1); }
static double tiny_steps(int e) { return 1.0 - 1e-4 * e; } /* better, by less than 1e-3 */

T_TEST(test_early_stop_patience)
{
    int64_t best = 0;
    for (int p = 1; p <= 5; p++) {
        ASSERT_EQ(run_until_stop(RT_MONITOR_VAL_LOSS, p, 0, flat, 50, &best), 1 + p);
        ASSERT_EQ(best, 1);
    }
    /* keeps improving: never stopped, the last epoch is the best */
    ASSERT_EQ(run_until_stop(RT_MONITOR_VAL_LOSS, 2, 0, falling, 30, &best), 30);
    ASSERT_EQ(best, 30);
    ASSERT_EQ(run_until_stop(RT_MONITOR_VAL_ACC, 1, 0, rising, 20, &best), 20);
    ASSERT_EQ(best, 20);
    /* a falling accuracy is no improvement */
    ASSERT_EQ(run_until_stop(RT_MONITOR_VAL_ACC, 3, 0, falling, 30, &best), 4);
    /* min_delta: improvements smaller than it do not count */
    ASSERT_EQ(run_until_stop(RT_MONITOR_TRAIN_LOSS, 3, 1e-3, tiny_steps, 30, &best), 4);
    ASSERT_EQ(run_until_stop(RT_MONITOR_TRAIN_LOSS, 3, 1e-5, tiny_steps, 30, &best), 30);
    /* patience 0: off */
    ASSERT_EQ(run_until_stop(RT_MONITOR_VAL_LOSS, 0, 0, flat, 12, &best), 12);
}

T_TEST(test_missing_metric_and_bad_state)
{
    rt_watch_state w;
    rt_watch_init(&w);
    rt_epoch_metrics em = {.train_loss = 1, .train_acc = 0.5, .val_loss = NAN, .val_acc = NAN};
    rt_error err;
    int improved;
    ASSERT_EQ(rt_watch_epoch(&w, RT_MONITOR_VAL_LOSS, NULL, NULL, 0.1, 1, 1, &em, &improved, &err),
              RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "val_loss was not measured");
    ASSERT_EQ(
        rt_watch_epoch(&w, RT_MONITOR_TRAIN_LOSS, NULL, NULL, 0.1, 1, 1, &em, &improved, &err),
        RT_OK);
    ASSERT_EQ(improved, 1);
    ASSERT_EQ(rt_watch_check(&w, &err), RT_OK);
    w.lr_scale = 0;
    ASSERT_EQ(rt_watch_check(&w, &err), RT_EINVAL);
    rt_watch_init(&w);
    w.wait = -1;
    ASSERT_EQ(rt_watch_check(&w, &err), RT_EINVAL);
}

/* The lr of each epoch under --schedule plateau equals torch's ReduceLROnPlateau. */
T_TEST(test_plateau_against_pytorch)
{
    FILE *f = fopen(g_path, "r");
    ASSERT(f);
    char *line = NULL, spec[256] = "", mon[32] = "";
    size_t cap = 0;
    double base = 0, metrics[64];
    int nm = 0, cases = 0;
    while (f && getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = 0;
        char *p, *end;
        if (!strncmp(line, "plateau ", 8)) snprintf(spec, sizeof spec, "%s", line + 8);
        else if (!strncmp(line, "monitor ", 8)) snprintf(mon, sizeof mon, "%s", line + 8);
        else if (!strncmp(line, "run ", 4)) base = strtod(line + 4, NULL);
        else if (!strncmp(line, "metrics ", 8)) {
            nm = 0;
            for (p = line + 8; nm < 64; p = end) {
                metrics[nm] = strtod(p, &end);
                if (end == p) break;
                nm++;
            }
        } else if (!strncmp(line, "lrs ", 4)) {
            rt_schedule s;
            rt_monitor m;
            rt_error err;
            ASSERT_EQ(rt_schedule_parse(&s, spec, &err), RT_OK);
            ASSERT_EQ(rt_schedule_resolve(&s, 5, nm, &err), RT_OK);
            ASSERT_EQ(rt_monitor_parse(mon, &m, &err), RT_OK);
            rt_watch_state w;
            rt_watch_init(&w);
            int e = 0;
            double worst = 0;
            for (p = line + 4; e < nm; p = end, e++) {
                double want = strtod(p, &end);
                ASSERT(end != p);
                /* the lr of the epoch's first step */
                double got = rt_schedule_lr(&s, base, (int64_t)e * 5) * w.lr_scale;
                double rel = fabs(got - want) / want;
                if (rel > worst) worst = rel;
                if (rel > 1e-12)
                    T_FAIL_("'%s' epoch %d: lr %.17g, torch %.17g", spec, e + 1, got, want);
                rt_epoch_metrics em = {metrics[e], metrics[e], metrics[e], metrics[e]};
                int improved;
                ASSERT_EQ(rt_watch_epoch(&w, m, NULL, &s, base, e + 1, e + 1, &em, &improved, &err),
                          RT_OK);
            }
            printf("  %-32s %2d epochs, worst relative error %.2g, %lld reductions\n", spec, nm,
                   worst, (long long)w.reductions);
            cases++;
        }
    }
    free(line);
    if (f) fclose(f);
    ASSERT_EQ(cases, 7);
}

/* plateau with warmup: the warmup's epochs are not judged; the rate is the warmup's
 * times the reductions. */
T_TEST(test_plateau_after_warmup)
{
    rt_schedule s;
    rt_error err;
    ASSERT_EQ(rt_schedule_parse(&s, "plateau:0.5:0 warmup=3", &err), RT_OK);
    ASSERT_EQ(rt_schedule_resolve(&s, 4, 10, &err), RT_OK);
    rt_watch_state w;
    rt_watch_init(&w);
    rt_epoch_metrics em = {1, 1, 1, 1}; /* never improves */
    int improved;
    for (int e = 1; e <= 3; e++) /* units done after epoch e: e */
        ASSERT_EQ(
            rt_watch_epoch(&w, RT_MONITOR_VAL_LOSS, NULL, &s, 0.1, e, e, &em, &improved, &err),
            RT_OK);
    ASSERT_EQ(w.reductions, 0); /* epochs 1, 2 inside the warmup; epoch 3 sets the best */
    ASSERT_EQ(rt_watch_epoch(&w, RT_MONITOR_VAL_LOSS, NULL, &s, 0.1, 4, 4, &em, &improved, &err),
              RT_OK);
    ASSERT_EQ(w.reductions, 1);
    ASSERT(rt_schedule_lr(&s, 0.1, 4 * 4) * w.lr_scale == 0.1 * 0.5);
    ASSERT(rt_schedule_lr(&s, 0.1, 4) * w.lr_scale < 0.1 * 0.5); /* a warmup step */
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_early_stop plateau_fixtures.txt\n");
        return 2;
    }
    g_path = argv[1];
    T_RUN(test_monitor_names);
    T_RUN(test_early_stop_patience);
    T_RUN(test_missing_metric_and_bad_state);
    T_RUN(test_plateau_against_pytorch);
    T_RUN(test_plateau_after_warmup);
    return T_EXIT();
}
