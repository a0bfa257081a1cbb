/* test_run_fixes.c - regressions from the QA pass over %train / %resume and their
 * checkpoints, on the tiny IDX data set of tm_util.h: a bad --run-dir fails before step
 * 1; the results store records the data set and val count in effect; checkpoint
 * options without --run-dir warn; checkpoint lines count epochs from 1 and periodic
 * mid-epoch saves show only in the progress display; a finished run directory trained
 * again says it is complete and how to train further; %resume bounds its options as
 * %train does.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mg.h"
#include "mg_run.h"
#include "rt_results.h"
#include "rt_results_query.h"
#include "t.h"
#include "tm_util.h"

static char g_dir[128], g_store[256];
static mg_session *g_s;
static mg_error g_err;

static const char *small_net = "conv2d 4 3 pad=1\nrelu\nmaxpool 2\nflatten\ndense 3\n";

static int fresh_session(void) { return tm_fresh_session(&g_s); }
static int setup_model(void) { return tm_setup_model(g_s, g_dir, 0, small_net, &g_err); }

/* Without --data / --val the store records the data set and the val count in effect
 * (it recorded data '' and val -1: runs could not be compared on them), and checkpoint
 * options without --run-dir are a warning saying they need it (they were ignored). */
T_TEST(test_recorded_data_and_val)
{
    ASSERT_EQ(fresh_session(), 0);
    tm_reset();
    char line[700];
    snprintf(line, sizeof line, "dataset %s --samples 0 --val 30", g_dir);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    ASSERT_EQ(tm_magic(g_s, "model tiny", small_net, &g_err), 0);
    tm_reset();
    snprintf(line, sizeof line,
             "train tiny --batch 32 --checkpoint-every 4steps --keep 2 "
             "--results %s",
             g_store);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    ASSERT_STR_CONTAINS(tm_c.err, "--checkpoint-every and --keep ignored");
    ASSERT_STR_CONTAINS(tm_c.err, "checkpoints need --run-dir");
    rt_results_run r;
    char buf[300];
    double num = 0;
    int isnum = 0;
    ASSERT_EQ(tm_last_run(g_store, &r), 0);
    ASSERT(rt_results_run_value(&r, "data", buf, sizeof buf, &num, &isnum));
    ASSERT_STR_EQ(buf, g_dir);
    ASSERT(rt_results_run_value(&r, "val", buf, sizeof buf, &num, &isnum));
    ASSERT(isnum && num == 30);
    rt_results_run_free(&r);
    /* with --run-dir there is no such warning */
    tm_reset();
    snprintf(line, sizeof line, "train tiny --batch 32 --keep 2 --run-dir %s/kept --results %s",
             g_dir, g_store);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    ASSERT(strstr(tm_c.err, "need --run-dir") == NULL);
}

/* A run directory that cannot be created or written is an error before step 1 that
 * names it and --run-dir (it trained a whole run without checkpoints, then "failed"). */
T_TEST(test_bad_run_dir_fails_at_once)
{
    ASSERT_EQ(fresh_session(), 0);
    tm_reset();
    ASSERT_EQ(setup_model(), 0);
    char blocker[256], line[700];
    snprintf(blocker, sizeof blocker, "%s/a-file", g_dir);
    FILE *f = fopen(blocker, "w");
    ASSERT(f != NULL);
    fclose(f);
    const char *dirs[] = {"/proc/forbidden", NULL};
    char sub[300];
    snprintf(sub, sizeof sub, "%s/sub", blocker);
    dirs[1] = sub;
    for (int i = 0; i < 2; i++) {
        tm_reset();
        snprintf(line, sizeof line, "train tiny --batch 32 --run-dir %s --results %s", dirs[i],
                 g_store);
        ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), -1);
        /* the status's exception: mkdir under /proc is ENOENT, under a file ENOTDIR */
        ASSERT_STR_EQ(g_err.ename, i == 0 ? "FileNotFoundError" : "OSError");
        ASSERT_STR_CONTAINS(g_err.evalue, dirs[i]);
        ASSERT_STR_CONTAINS(g_err.evalue, "--run-dir");
        ASSERT_EQ(capture_count(&tm_c, "text/plain", "epoch ", NULL, NULL), 0); /* not one step */
        ASSERT_EQ(capture_count(&tm_c, "text/plain", "Run tiny", NULL, NULL), 0);
        ASSERT(strstr(tm_c.out, "Training tiny") == NULL);
    }
}

/* The text/plain of the last display with the progress display's id. */
static const char *last_progress(void)
{
    const char *id = NULL, *text = NULL;
    if (capture_count(&tm_c, "text/html", "epoch ", &id, NULL) < 1 || !id) return NULL;
    size_t i;
    json_t *d;
    json_array_foreach(tm_c.log, i, d)
    {
        const char *did = json_string_value(json_object_get(d, "id"));
        if (did && !strcmp(did, id))
            text = json_string_value(json_object_get(json_object_get(d, "data"), "text/plain"));
    }
    return text;
}

static int count_lines(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; p && (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* Checkpoint lines count epochs from 1 like the progress bar (a mid-epoch save of the
 * first epoch said "epoch 0"); periodic mid-epoch saves show in the progress display
 * ("last checkpoint: step N"), not one stream line each. */
T_TEST(test_checkpoint_lines)
{
    ASSERT_EQ(fresh_session(), 0);
    tm_reset();
    ASSERT_EQ(setup_model(), 0);
    char line[700];
    /* 2 epochs of ceil(300/32) = 10 steps: saves at 4, 8, 12, 16 (periodic) and 20
     * (epoch end, the last) */
    tm_reset();
    snprintf(line, sizeof line,
             "train tiny --batch 32 --epochs 2 --checkpoint-every 4steps "
             "--keep 10 --run-dir %s/every4 --results %s",
             g_dir, g_store);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    ASSERT_EQ(count_lines(tm_c.out, "checkpoint: "), 1);
    ASSERT_STR_CONTAINS(tm_c.out, "(step 20, epoch 2, ");
    ASSERT(strstr(tm_c.out, "(step 4,") == NULL && strstr(tm_c.out, "(step 16,") == NULL);
    ASSERT_STR_CONTAINS(last_progress(), "last checkpoint: step 20");
    /* the forced update at the end of epoch 1 (step 10) shows the save of step 8 */
    int seen8 = 0;
    size_t i;
    json_t *d;
    json_array_foreach(tm_c.log, i, d)
    {
        const char *tp =
            json_string_value(json_object_get(json_object_get(d, "data"), "text/plain"));
        if (tp && strstr(tp, "step 10/20") && strstr(tp, "last checkpoint: step 8")) seen8 = 1;
    }
    ASSERT(seen8);
    /* an interrupt after step 5 (mid epoch 1): its checkpoint line says epoch 1 */
    tm_reset();
    tm_interrupt_after = 5;
    snprintf(line, sizeof line,
             "train tiny --batch 32 --epochs 2 --run-dir %s/stopped "
             "--results %s",
             g_dir, g_store);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), -1);
    ASSERT_STR_EQ(g_err.ename, "KeyboardInterrupt");
    ASSERT_STR_CONTAINS(tm_c.out, "(step 5, epoch 1, ");
}

/* Training a finished run directory again (or %resume of it) says it is complete, where
 * it stands, its last metrics and how to train further (it printed "steps 0 (epoch 1 of
 * 2), 0 images in 00:00" and no metrics), and writes no second copy of its checkpoint. */
T_TEST(test_already_complete)
{
    ASSERT_EQ(fresh_session(), 0);
    tm_reset();
    ASSERT_EQ(setup_model(), 0);
    char line[700], dir[300];
    snprintf(dir, sizeof dir, "%s/done", g_dir);
    snprintf(line, sizeof line, "train tiny --batch 32 --epochs 2 --run-dir %s --results %s", dir,
             g_store);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    ASSERT_EQ(capture_count(&tm_c, "text/plain", "Run tiny: finished", NULL, NULL), 1);
    const char *cmds[2] = {line, NULL};
    char resume[700];
    /* the store is the user's to name: a checkpoint never chooses it (docs/resume.md) */
    snprintf(resume, sizeof resume, "resume %s --results %s", dir, g_store);
    cmds[1] = resume;
    for (int k = 0; k < 2; k++) {
        tm_reset();
        int rc = tm_magic(g_s, cmds[k], NULL, &g_err);
        if (rc) fprintf(stderr, "%s: %s\n", g_err.ename, g_err.evalue);
        ASSERT_EQ(rc, 0);
        const char *sum = NULL;
        ASSERT_EQ(capture_count(&tm_c, "text/plain",
                                "Run tiny: already complete at step 20 (epoch 2 of 2)", NULL, NULL),
                  1);
        size_t i;
        json_t *d;
        json_array_foreach(tm_c.log, i, d)
        {
            const char *tp =
                json_string_value(json_object_get(json_object_get(d, "data"), "text/plain"));
            if (tp && !strncmp(tp, "Run tiny:", 9)) sum = tp;
        }
        ASSERT(sum != NULL);
        ASSERT_STR_CONTAINS(sum, "last test loss ");
        ASSERT_STR_CONTAINS(sum, "last train loss ");
        char want[400];
        snprintf(want, sizeof want,
                 "to train longer: a larger --epochs, e.g. %%resume %s "
                 "--epochs 3 (or this %%train with --epochs 3)",
                 dir);
        ASSERT_STR_CONTAINS(sum, want);
        ASSERT(strstr(sum, "steps 0") == NULL);
        ASSERT(strstr(tm_c.out, "checkpoint: ") == NULL);
    }
}

/* %resume's --epochs and --keep are bounded as %train's rows are (--epochs up to 1e6
 * was taken: the run's checkpoints then held a value no later %resume could read), and
 * the message names the option and the bounds, before any file is looked at. */
T_TEST(test_resume_bounds)
{
    ASSERT_EQ(fresh_session(), 0);
    static const struct {
        const char *opts, *want;
    } bad[] = {
        {"--epochs 200000", "%resume: --epochs must be in 1..100000, got 200000"},
        {"--epochs 0", "%resume: --epochs must be in 1..100000, got 0"},
        {"--keep 0", "%resume: --keep must be in 1..100000, got 0"},
    };
    char line[700];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(line, sizeof line, "resume %s/no-such-run %s", g_dir, bad[i].opts);
        tm_reset();
        ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), -1);
        ASSERT_STR_EQ(g_err.ename, "ValueError");
        ASSERT_STR_EQ(g_err.evalue, bad[i].want);
    }
    /* in bounds, the same line gets as far as the missing run */
    snprintf(line, sizeof line, "resume %s/no-such-run --epochs 100000 --keep 2", g_dir);
    tm_reset();
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), -1);
    ASSERT_STR_EQ(g_err.ename, "FileNotFoundError");
}

int main(void)
{
    if (tm_start(g_dir, sizeof g_dir, g_store, sizeof g_store)) return 99;
    T_RUN(test_bad_run_dir_fails_at_once);
    T_RUN(test_recorded_data_and_val);
    T_RUN(test_checkpoint_lines);
    T_RUN(test_already_complete);
    T_RUN(test_resume_bounds);
    tm_teardown(g_s, g_dir);
    return T_EXIT();
}
