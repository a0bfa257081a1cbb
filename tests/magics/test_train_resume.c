/* test_train_resume.c - %train on a run directory that already holds a run (--resume
 * auto|never|must and the `kiln run --no-resume` setting), and what a continued run
 * shows: epochs counted from 1, the schedule in the user's words, images/s of the
 * first resumed epoch, the whole loss curve, the one hint for training longer. On the
 * tiny IDX data set of tm_util.h (300 training images: 19 steps of 16 an epoch). */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mg.h"
#include "rt_results.h"
#include "rt_results_query.h"
#include "t.h"
#include "tm_util.h"

static char g_dir[128], g_store[256];
static mg_session *g_s;
static mg_error g_err;

static const char *small_net = "conv2d 4 3 pad=1\nrelu\nmaxpool 2\nflatten\ndense 3\n";

static int setup(void)
{
    if (tm_fresh_session(&g_s) < 0) return -1;
    tm_reset();
    return tm_setup_model(g_s, g_dir, 0, small_net, &g_err);
}

static int train(const char *dir, const char *more)
{
    char line[900];
    snprintf(line, sizeof line, "train tiny --batch 16 --epochs 2 --run-dir %s --results %s %s",
             dir, g_store, more);
    tm_reset();
    int rc = tm_magic(g_s, line, NULL, &g_err);
    if (rc) fprintf(stderr, "(%s: %s)\n", g_err.ename, g_err.evalue);
    return rc;
}

/* The names in dir, sorted, one a line (new string). */
static char *listing(const char *dir)
{
    struct dirent **names = NULL;
    int n = scandir(dir, &names, NULL, alphasort);
    char *s = calloc(1, 8192);
    for (int i = 0; i < n; i++) {
        if (s && strlen(s) + strlen(names[i]->d_name) + 2 < 8192) {
            strcat(s, names[i]->d_name);
            strcat(s, "\n");
        }
        free(names[i]);
    }
    free(names);
    return s;
}

static int has_checkpoint(const char *dir)
{
    char *l = listing(dir);
    int yes = l && strstr(l, ".safetensors") != NULL;
    free(l);
    return yes;
}

static double epoch_metric(int64_t run, const char *key, int epoch)
{
    rt_results *rs = NULL;
    rt_error re;
    double v = NAN, *x = NULL, *y = NULL;
    size_t n = 0;
    if (rt_results_open(g_store, &rs, &re) != RT_OK) return NAN;
    if (rt_results_series(rs, run, key, RT_RESULTS_EPOCH, &x, &y, &n, &re) == RT_OK)
        for (size_t i = 0; i < n; i++)
            if (x[i] == epoch) v = y[i];
    free(x);
    free(y);
    rt_results_close(rs);
    return v;
}

/* Other hyperparameters in the same run directory train a new run beside it (the old
 * run stays as it was); the same cell again continues that new run; a larger --epochs
 * trains it longer and says so. It used to continue the old run with the old values
 * ("the checkpoint's values are used") and train nothing. */
T_TEST(test_auto_versions_a_changed_run)
{
    ASSERT_EQ(setup(), 0);
    char d[256], d2[300], want[2000];
    snprintf(d, sizeof d, "%s/auto", g_dir);
    snprintf(d2, sizeof d2, "%s-v2", d);
    ASSERT_EQ(train(d, ""), 0);
    char *before = listing(d);
    ASSERT_EQ(train(d, "--lr 0.002"), 0);
    snprintf(want, sizeof want,
             "%s holds a run with other options: --lr 0.002 (checkpoint "
             "0.001)\nThis run goes to %s (the run in %s is kept; --resume never would start "
             "over in %s instead)\n",
             d, d2, d, d);
    ASSERT_STR_CONTAINS(tm_c.out, want);
    ASSERT_STR_CONTAINS(tm_c.out, "adam lr 0.002 |");
    ASSERT_EQ(capture_count(&tm_c, "text/plain", "Run tiny: finished", NULL, NULL), 1);
    char *after = listing(d);
    ASSERT_STR_EQ(after, before); /* the old run is intact */
    free(before);
    free(after);
    ASSERT(has_checkpoint(d2));
    /* the same cell again: the v2 run is the one continued (complete: nothing to do) */
    ASSERT_EQ(train(d, "--lr 0.002"), 0);
    snprintf(want, sizeof want,
             "%s holds this run (same options): continuing it (--resume "
             "never starts a new one)\n",
             d2);
    ASSERT_STR_CONTAINS(tm_c.out, want);
    ASSERT_EQ(capture_count(&tm_c, "text/plain",
                            "Run tiny: already complete at step 38 (epoch 2 of 2); "
                            "nothing to train",
                            NULL, NULL),
              1);
    snprintf(want, sizeof want,
             "  to train longer: a larger --epochs, e.g. %%resume %s "
             "--epochs 3 (or this %%train with --epochs 3)\n",
             d2);
    const char *id = NULL;
    ASSERT_EQ(capture_count(&tm_c, "text/plain", "Run tiny: already complete", &id, NULL), 1);
    size_t i;
    json_t *x;
    int found = 0;
    json_array_foreach(tm_c.log, i, x)
    {
        const char *tp =
            json_string_value(json_object_get(json_object_get(x, "data"), "text/plain"));
        if (tp && strstr(tp, want)) found = 1;
    }
    ASSERT(found);
    /* a larger --epochs on the original run: train longer, said so */
    char line[900];
    snprintf(line, sizeof line, "train tiny --batch 16 --epochs 3 --run-dir %s --results %s", d,
             g_store);
    tm_reset();
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), 0);
    snprintf(want, sizeof want,
             "%s holds this run (same options): continuing it and training "
             "it longer: --epochs 3 (it planned 2)\n",
             d);
    ASSERT_STR_CONTAINS(tm_c.out, want);
    ASSERT_STR_CONTAINS(tm_c.out, "epoch 3/3  loss");
    ASSERT_EQ(capture_count(&tm_c, "text/plain", "Run tiny: finished", NULL, NULL), 1);
    /* continued from the checkpoint at epoch 2's end: epoch 3 is all trained here, its
     * images/s x seconds the whole epoch's 300 images (it said 0 img/s) */
    const char *rid = strstr(tm_c.out, "Recording as run ");
    ASSERT(rid != NULL);
    int64_t run = strtoll(rid + strlen("Recording as run "), NULL, 10);
    double ips = epoch_metric(run, "images_per_s", 3), secs = epoch_metric(run, "epoch_seconds", 3);
    ASSERT(isfinite(ips) && isfinite(secs));
    ASSERT(fabs(ips * secs - 300.0) < 0.5);
    ASSERT(strstr(tm_c.out, " 0 img/s") == NULL);
}

/* --resume must refuses other options and an empty directory, naming both choices;
 * --resume never (and the `kiln run --no-resume` setting) starts over, moving the old
 * checkpoints aside. */
T_TEST(test_must_and_never)
{
    ASSERT_EQ(setup(), 0);
    char d[256], want[2000];
    snprintf(d, sizeof d, "%s/must", g_dir);
    ASSERT_EQ(train(d, ""), 0);
    ASSERT_EQ(train(d, "--seed 3 --resume must"), -1);
    ASSERT_STR_EQ(g_err.ename, "ValueError");
    snprintf(want, sizeof want,
             "%%train --resume must: the run in %s has other options: "
             "--seed 3 (checkpoint 0) ---> HINT: --resume auto trains these options in a new "
             "directory beside it (%s-v2...); --resume never starts over in %s",
             d, d, d);
    ASSERT_STR_EQ(g_err.evalue, want);
    char empty[300];
    snprintf(empty, sizeof empty, "%s/empty", g_dir);
    ASSERT_EQ(train(empty, "--resume must"), -1);
    ASSERT_STR_EQ(g_err.ename, "FileNotFoundError");
    snprintf(want, sizeof want,
             "%%train: --resume must: no valid checkpoint in %s to "
             "continue ---> HINT: --resume auto starts a new run there",
             empty);
    ASSERT_STR_EQ(g_err.evalue, want);
    ASSERT_EQ(train(d, "--resume never"), 0);
    snprintf(want, sizeof want, "--resume never: a new run in %s; its ", d);
    ASSERT_STR_CONTAINS(tm_c.out, want);
    ASSERT_STR_CONTAINS(tm_c.out, "earlier checkpoints moved to ");
    ASSERT(strstr(tm_c.out, "continuing") == NULL);
    ASSERT_EQ(capture_count(&tm_c, "text/plain", "Run tiny: finished", NULL, NULL), 1);
    /* the host's setting (kiln run --no-resume) does the same when --resume is not given */
    tm_settings.train_resume = MG_RESUME_NEVER;
    int rc = train(d, "");
    tm_settings.train_resume = MG_RESUME_AUTO;
    ASSERT_EQ(rc, 0);
    ASSERT_STR_CONTAINS(tm_c.out, want);
    ASSERT_EQ(capture_count(&tm_c, "text/plain", "Run tiny: finished", NULL, NULL), 1);
    char *l = listing(d);
    int prev = 0;
    for (char *p = l; (p = strstr(p, "previous-")); p++) prev++;
    free(l);
    ASSERT(prev >= 1);
}

/* The metric value of the run's epoch `epoch` (per-epoch metrics), NAN when absent. */

/* A continued run: "after step 5 of 38 (epoch 1 of 2)" (it said "epoch 0 of 2"); the
 * start line names the schedule as typed ("schedule cosine", not its resolved internals;
 * nothing for the default); the first resumed epoch's images/s counts only the images of
 * the steps run (it divided the whole epoch's images by their time); the loss plot holds
 * the steps before the resume too. */
T_TEST(test_resumed_output)
{
    ASSERT_EQ(setup(), 0);
    char d[256], want[1000], line[900];
    snprintf(d, sizeof d, "%s/stopped", g_dir);
    tm_reset();
    tm_interrupt_after = 5;
    snprintf(line, sizeof line,
             "train tiny --batch 16 --epochs 2 --schedule cosine --run-dir "
             "%s --results %s",
             d, g_store);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), -1);
    ASSERT_STR_EQ(g_err.ename, "KeyboardInterrupt");
    tm_reset();
    snprintf(line, sizeof line, "resume %s --results %s", d, g_store);
    int rc = tm_magic(g_s, line, NULL, &g_err);
    if (rc) fprintf(stderr, "%s: %s\n", g_err.ename, g_err.evalue);
    ASSERT_EQ(rc, 0);
    snprintf(want, sizeof want,
             "Resuming 'tiny' from %s/ckpt-step00000005.safetensors after "
             "step 5 of 38 (epoch 1 of 2), data set '%s' (checksum verified)\n",
             d, g_dir);
    ASSERT_STR_CONTAINS(tm_c.out, want);
    ASSERT_STR_CONTAINS(tm_c.out, "adam lr 0.001, schedule cosine |");
    ASSERT(strstr(tm_c.out, "unit=") == NULL && strstr(tm_c.out, "steps_per_epoch") == NULL);
    /* the final plot has all 38 steps: 5 from the checkpoint, 33 trained here */
    const char *plot_id = NULL;
    ASSERT(capture_count(&tm_c, "image/svg+xml", NULL, &plot_id, NULL) >= 1);
    const char *last = NULL;
    size_t i;
    json_t *x;
    json_array_foreach(tm_c.log, i,
                       x) if (json_object_get(json_object_get(x, "data"), "image/svg+xml")) last =
        json_string_value(json_object_get(json_object_get(x, "data"), "text/plain"));
    ASSERT(last != NULL);
    ASSERT_STR_EQ(last, "<loss/accuracy plot: 2 epochs, 38 steps>");
    /* images/s x seconds of epoch 1 = the 300 - 5 x 16 images trained after the resume */
    const char *rid = strstr(tm_c.out, "Recording as run ");
    ASSERT(rid != NULL);
    int64_t run = strtoll(rid + strlen("Recording as run "), NULL, 10);
    double ips = epoch_metric(run, "images_per_s", 1), secs = epoch_metric(run, "epoch_seconds", 1);
    ASSERT(isfinite(ips) && isfinite(secs));
    ASSERT(fabs(ips * secs - 220.0) < 0.5);
    /* without a --schedule the start line names none */
    ASSERT_EQ(setup(), 0);
    snprintf(d, sizeof d, "%s/plain", g_dir);
    ASSERT_EQ(train(d, ""), 0);
    ASSERT(strstr(tm_c.out, "schedule") == NULL);
}

/* Stopped before the first epoch ended: the plot's placeholder ("appears after the
 * first epoch") gives way to the steps' loss curve (it stayed forever); the summary
 * writes the parameter count with separators as the start line does. */
T_TEST(test_stopped_early_plot_and_counts)
{
    ASSERT_EQ(setup(), 0);
    ASSERT_EQ(tm_magic(g_s, "model tiny", "conv2d 8 3 pad=1\nrelu\nflatten\ndense 3\n", &g_err), 0);
    char line[600];
    tm_reset();
    tm_interrupt_after = 3;
    snprintf(line, sizeof line, "train tiny --batch 16 --results %s", g_store);
    ASSERT_EQ(tm_magic(g_s, line, NULL, &g_err), -1);
    const char *plot_id = NULL;
    ASSERT_EQ(capture_count(&tm_c, "text/html",
                            "<loss/accuracy plot appears after the first epoch>", &plot_id, NULL),
              1);
    ASSERT(plot_id != NULL);
    json_t *last = NULL;
    size_t i;
    json_t *x;
    json_array_foreach(tm_c.log, i,
                       x) if (!strcmp(json_string_value(json_object_get(x, "id")) ?: "", plot_id))
        last = x;
    ASSERT(last != NULL);
    json_t *data = json_object_get(last, "data");
    ASSERT(json_object_get(data, "image/svg+xml") != NULL);
    ASSERT_STR_EQ(json_string_value(json_object_get(data, "text/plain")),
                  "<loss/accuracy plot: 0 epochs, 3 steps>");
    ASSERT_STR_CONTAINS(tm_c.out, "Training tiny (1,619 params)");
    ASSERT_EQ(capture_count(&tm_c, "text/plain", "Run tiny: stopped by an interrupt", NULL, NULL),
              1);
    int found = 0;
    json_array_foreach(tm_c.log, i, x)
    {
        const char *tp =
            json_string_value(json_object_get(json_object_get(x, "data"), "text/plain"));
        if (tp && strstr(tp, "  model tiny: 1,619 parameters; data ")) found = 1;
    }
    ASSERT(found);
}

int main(void)
{
    if (tm_start(g_dir, sizeof g_dir, g_store, sizeof g_store)) return 99;
    T_RUN(test_auto_versions_a_changed_run);
    T_RUN(test_must_and_never);
    T_RUN(test_resumed_output);
    T_RUN(test_stopped_early_plot_and_counts);
    tm_teardown(g_s, g_dir);
    return T_EXIT();
}
