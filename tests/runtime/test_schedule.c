/* test_schedule.c - learning-rate schedules against torch.optim.lr_scheduler fixtures
 * (schedule_fixtures.txt from gen_optim_fixtures.py), the canonical text round trip,
 * and the parser's errors. Usage: test_schedule PATH/schedule_fixtures.txt */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_schedule.h"
#include "t.h"

static const char *g_path;

/* torch steps its schedulers recursively (lr *= factor); we use closed forms, so the
 * values differ by accumulated double rounding only: relative 1e-9 is still far below
 * the 1e-6 that float parameters could notice. */
#define RTOL 1e-9

T_TEST(test_against_pytorch)
{
    FILE *f = fopen(g_path, "r");
    ASSERT(f);
    char *line = NULL;
    size_t cap = 0;
    char spec[512] = "";
    double base = 0;
    long long spe = 0, epochs = 0;
    int cases = 0, failed = 0;
    while (getline(&line, &cap, f) > 0) {
        line[strcspn(line, "\n")] = '\0';
        if (!strncmp(line, "sched ", 6)) {
            snprintf(spec, sizeof spec, "%s", line + 6);
        } else if (!strncmp(line, "run ", 4)) {
            if (sscanf(line, "run %lf %lld %lld", &base, &spe, &epochs) != 3) failed = 1;
        } else if (!strncmp(line, "lrs ", 4)) {
            rt_schedule s;
            rt_error err;
            if (rt_schedule_parse(&s, spec, &err) != RT_OK ||
                rt_schedule_resolve(&s, spe, epochs, &err) != RT_OK) {
                fprintf(stderr, "  '%s': %s\n", spec, err.msg);
                failed = 1;
                continue;
            }
            char *p = line + 4, *end;
            long long step = 0;
            double worst = 0;
            for (double want = strtod(p, &end); end != p; want = strtod(p, &end)) {
                double got = rt_schedule_lr(&s, base, step);
                double rel = fabs(got - want) / fabs(want);
                if (rel > worst) worst = rel;
                if (rel > RTOL && !failed) {
                    fprintf(stderr, "  '%s' step %lld: lr %.17g, torch %.17g\n", spec, step, got,
                            want);
                    failed = 1;
                }
                p = end;
                step++;
            }
            if (step != spe * epochs) failed = 1;
            printf("  %-45s %3lld steps, worst relative error %.2g\n", spec, step, worst);
            cases++;
        }
    }
    free(line);
    fclose(f);
    ASSERT(!failed);
    ASSERT_EQ(cases, 13);
}

/* format -> parse gives the same schedule (the text names every field that matters for
 * the kind; struct padding makes memcmp unusable), so checkpoints restore it. */
T_TEST(test_format_roundtrip)
{
    const char *specs[] = {"constant",
                           "step:3:0.5 warmup=2",
                           "cosine:0:1e-5 unit=step",
                           "onecycle:0.1 three_phase=1 anneal=linear pct_start=0.2",
                           "cosine warmup=4 warmup_start=0.3333333333333333",
                           "multistep:3,7,11:0.5 warmup=1",
                           "plateau:0.5:3 threshold=0.001",
                           "multistep:32000,48000 unit=step",
                           "plateau:0.5:3 cooldown=2 min_lr=1e-5"};
    for (int i = 0; i < 9; i++) {
        rt_schedule a, b;
        rt_error err;
        ASSERT_EQ(rt_schedule_parse(&a, specs[i], &err), RT_OK);
        ASSERT_EQ(rt_schedule_resolve(&a, 13, 20, &err), RT_OK);
        char text[512];
        ASSERT(rt_schedule_format(&a, text, sizeof text) < (int)sizeof text);
        if (rt_schedule_parse(&b, text, &err) != RT_OK) T_FAIL_("'%s': %s", text, err.msg);
        char again[512];
        rt_schedule_format(&b, again, sizeof again);
        ASSERT_STR_EQ(again, text);
        ASSERT_EQ(a.kind, b.kind);
        ASSERT_EQ(a.steps_per_epoch, 13);
        for (int64_t t = 0; t < 300; t += 7)
            ASSERT(rt_schedule_lr(&a, 0.1, t) == rt_schedule_lr(&b, 0.1, t));
    }
}

/* The canonical text is shown when a run resumes: numbers in their shortest exact form
 * (0.1, not 0.10000000000000001), and still exact where that needs 17 digits. */
T_TEST(test_format_short_numbers)
{
    rt_schedule a, b;
    rt_error err;
    char text[512];
    ASSERT_EQ(rt_schedule_parse(&a, "constant", &err), RT_OK);
    rt_schedule_format(&a, text, sizeof text);
    ASSERT(strstr(text, "warmup_start=0.1") != NULL);
    ASSERT(strstr(text, "0000000") == NULL);
    ASSERT_EQ(rt_schedule_parse(&a, "step:3:0.30000000000000004", &err), RT_OK);
    rt_schedule_format(&a, text, sizeof text);
    ASSERT(strstr(text, "gamma=0.30000000000000004") != NULL);
    ASSERT_EQ(rt_schedule_parse(&b, text, &err), RT_OK);
    ASSERT(b.gamma == 0.1 + 0.2 && b.gamma != 0.3);
    ASSERT_EQ(rt_schedule_parse(&a, "onecycle:0.1", &err), RT_OK);
    ASSERT_EQ(rt_schedule_resolve(&a, 10, 3, &err), RT_OK);
    rt_schedule_format(&a, text, sizeof text);
    ASSERT(strstr(text, "max_lr=0.1 ") && strstr(text, "pct_start=0.3 ") &&
           strstr(text, "div_factor=25 ") && strstr(text, "final_div_factor=10000 "));
}

T_TEST(test_parse_forms)
{
    rt_schedule a, b;
    ASSERT_EQ(rt_schedule_parse(&a, "step:10:0.1", NULL), RT_OK);
    ASSERT_EQ(rt_schedule_parse(&b, "step step_size=10 gamma=0.1", NULL), RT_OK);
    ASSERT(a.kind == b.kind && a.step_size == b.step_size && a.gamma == b.gamma);
    ASSERT_EQ(a.kind, RT_SCHED_STEP);
    ASSERT_EQ(a.step_size, 10);
    ASSERT_EQ(rt_schedule_parse(&b, "STEP:10, gamma=0.1", NULL), RT_OK);
    ASSERT(a.kind == b.kind && a.step_size == b.step_size && a.gamma == b.gamma);
    ASSERT_EQ(rt_schedule_parse(&a, "onecycle", NULL), RT_OK);
    ASSERT_EQ(a.per_step, 1);
    ASSERT_NEAR(a.pct_start, 0.3, 0);
    ASSERT_NEAR(a.div_factor, 25, 0);
    ASSERT_NEAR(a.final_div_factor, 1e4, 0);
    ASSERT_EQ(a.three_phase, 0);
    ASSERT_EQ(a.anneal_linear, 0);
    /* defaults filled from the run by resolve */
    ASSERT_EQ(rt_schedule_resolve(&a, 50, 4, NULL), RT_OK);
    ASSERT_EQ(a.total_steps, 200);
    ASSERT_EQ(rt_schedule_parse(&a, "cosine warmup=2", NULL), RT_OK);
    ASSERT_EQ(rt_schedule_resolve(&a, 50, 12, NULL), RT_OK);
    ASSERT_EQ(a.t_max, 10);
    /* constant is constant; steps beyond onecycle's end hold its last value */
    ASSERT_EQ(rt_schedule_parse(&a, "constant", NULL), RT_OK);
    ASSERT_EQ(rt_schedule_resolve(&a, 5, 2, NULL), RT_OK);
    ASSERT(rt_schedule_lr(&a, 0.25, 0) == 0.25 && rt_schedule_lr(&a, 0.25, 1000) == 0.25);
    ASSERT_EQ(rt_schedule_parse(&a, "onecycle", NULL), RT_OK);
    ASSERT_EQ(rt_schedule_resolve(&a, 10, 1, NULL), RT_OK);
    ASSERT(rt_schedule_lr(&a, 0.1, 10) == rt_schedule_lr(&a, 0.1, 500));
    ASSERT(rt_schedule_lr(&a, 0.1, 9) < 1e-4);
}

T_TEST(test_parse_errors)
{
    struct {
        const char *text, *msg;
    } cases[] = {
        {"", "expected one of constant, step, cosine, onecycle"},
        {"linear", "unknown schedule 'linear'; expected one of constant, step, cosine"},
        {"step", "schedule step needs step_size > 0 (e.g. step:10:0.1"},
        {"step:0", "needs step_size > 0"},
        {"step:ten:0.1", "step_size must be a non-negative integer, got 'ten'"},
        {"step:10:0.1:3", "takes at most 2 positional values (step_size, gamma)"},
        {"step:10 gama=0.5", "unknown option 'gama'; expected one of step_size, gamma, unit"},
        {"step:10 gamma", "expected key=value, got 'gamma'"},
        {"step:10 step_size=3", "step_size is given twice"},
        {"step:10 gamma=-1", "gamma must be > 0"},
        {"step:10 gamma=nan", "gamma must be a number, got 'nan'"},
        {"step:10 unit=hour", "unit must be epoch or step, got 'hour'"},
        {"constant gamma=0.5", "schedule constant: unknown option 'gamma'; expected one of unit"},
        {"constant:3", "takes at most 0 positional values"},
        {"cosine eta_min=-0.1", "eta_min must be >= 0"},
        {"cosine warmup_start=0", "warmup_start must be in (0, 1]"},
        {"onecycle warmup=3", "schedule onecycle: unknown option 'warmup'"},
        {"onecycle pct_start=1.5", "pct_start must be between 0 and 1"},
        {"onecycle anneal=exp", "anneal must be cos or linear"},
        {"onecycle three_phase=maybe", "three_phase must be true or false"},
        {"step:", "step_size must be a non-negative integer, got ''"},
        {"multistep", "schedule multistep needs milestones (e.g. multistep:30,60:0.1)"},
        {"multistep:30,20", "milestones must be increasing positive integers"},
        {"multistep:30,,60", "milestones must be increasing positive integers"},
        {"multistep:0,5", "milestones must be increasing positive integers"},
        {"multistep:5,10:0", "gamma must be > 0"},
        {"plateau:1.5", "schedule plateau: factor must be in (0, 1), got 1.5"},
        {"plateau:0.5:-2", "patience must be a non-negative integer, got '-2'"},
        {"plateau threshold=2", "threshold must be in [0, 1)"},
        {"plateau step_size=3", "schedule plateau: unknown option 'step_size'; expected one of "
                                "factor, patience, threshold, cooldown, min_lr"},
        {"plateau cooldown=-1",
         "schedule plateau: cooldown must be a non-negative integer, got '-1'"},
        {"plateau min_lr=-1e-5", "schedule plateau: min_lr must be >= 0, got -1e-05"},
        {"plateau min_lr=low", "schedule plateau: min_lr must be a number, got 'low'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        rt_schedule s = rt_schedule_default(RT_SCHED_COSINE);
        s.t_max = 1234;
        rt_error err;
        rt_error_clear(&err);
        if (rt_schedule_parse(&s, cases[i].text, &err) != RT_EINVAL)
            T_FAIL_("'%s' was accepted", cases[i].text);
        ASSERT_STR_CONTAINS(err.msg, cases[i].msg);
        ASSERT_EQ(s.t_max, 1234); /* output untouched */
    }
    /* resolve errors */
    rt_schedule s;
    rt_error err;
    ASSERT_EQ(rt_schedule_parse(&s, "cosine warmup=10", NULL), RT_OK);
    ASSERT_EQ(rt_schedule_resolve(&s, 100, 10, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "HINT");
    ASSERT_EQ(rt_schedule_parse(&s, "onecycle total_steps=50", NULL), RT_OK);
    ASSERT_EQ(rt_schedule_resolve(&s, 100, 1, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "shorter than the run (100 steps)");
    ASSERT_EQ(rt_schedule_parse(&s, "onecycle", NULL), RT_OK);
    ASSERT_EQ(rt_schedule_resolve(&s, 3, 1, &err), RT_EINVAL); /* 0.3*3-1 < 0 */
    ASSERT_EQ(rt_schedule_resolve(&s, 0, 1, &err), RT_EINVAL);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_schedule schedule_fixtures.txt\n");
        return 99;
    }
    g_path = argv[1];
    T_RUN(test_against_pytorch);
    T_RUN(test_format_roundtrip);
    T_RUN(test_format_short_numbers);
    T_RUN(test_parse_forms);
    T_RUN(test_parse_errors);
    return T_EXIT();
}
