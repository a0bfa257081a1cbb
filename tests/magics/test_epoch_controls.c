/* test_epoch_controls.c - %train's epoch-level controls through the engine, on the tiny
 * IDX data set of tm_util.h (300 training images, 90 test): --early-stop stops a run
 * that does not improve after exactly 1 + PATIENCE epochs and says why (summary and
 * results row), a run that improves is not stopped, --restore-best ends with the best
 * epoch's weights, --monitor picks the "best" checkpoint, and bad values are errors
 * that name the option before anything trains. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mg.h"
#include "rt_ckpt.h"
#include "rt_ckpt_dir.h"
#include "rt_results.h"
#include "rt_results_query.h"
#include "t.h"
#include "tm_util.h"

static char g_dir[128], g_store[256];
static mg_session *g_s;
static mg_error g_err;

static int train(const char *more)
{
    char line[900];
    snprintf(line, sizeof line, "train tiny --batch 30 --results %s %s", g_store, more);
    tm_reset();
    int rc = tm_magic(g_s, line, NULL, &g_err);
    if (rc) fprintf(stderr, "(%s: %s)\n", g_err.ename, g_err.evalue);
    return rc;
}

static int setup(void)
{
    if (tm_fresh_session(&g_s) < 0) return -1;
    tm_reset();
    return tm_setup_model(g_s, g_dir, 0, "conv2d 4 3 pad=1\nrelu\nmaxpool 2\nflatten\ndense 3\n",
                          &g_err);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++) n++;
    return n;
}

static void last_param(const char *key, char *buf, size_t n)
{
    rt_results_run r;
    double num;
    int isnum;
    buf[0] = 0;
    if (tm_last_run(g_store, &r) == 0) {
        if (!rt_results_run_value(&r, key, buf, n, &num, &isnum)) buf[0] = 0;
        rt_results_run_free(&r);
    }
}

/* No epoch improves by 100 (--min-delta): the first sets the best, PATIENCE more end it. */
T_TEST(test_no_improvement_stops_after_patience)
{
    ASSERT_EQ(setup(), 0);
    for (int patience = 1; patience <= 2; patience++) {
        char more[128];
        snprintf(more, sizeof more, "--epochs 10 --early-stop %d --min-delta 100", patience);
        ASSERT_EQ(train(more), 0);
        ASSERT_EQ(count(tm_c.out, "\nepoch "), 1 + patience); /* the epoch lines */
        char want[160];
        snprintf(want, sizeof want,
                 "Run tiny: stopped early at epoch %d of 10 (best epoch 1, val_loss ",
                 1 + patience);
        ASSERT_EQ(capture_count(&tm_c, "text/plain", want, NULL, NULL), 1);
        char v[64];
        last_param("stop_reason", v, sizeof v);
        ASSERT_STR_EQ(v, "early_stop");
        last_param("best_epoch", v, sizeof v);
        ASSERT_STR_EQ(v, "1");
        rt_results_run r;
        ASSERT_EQ(tm_last_run(g_store, &r), 0);
        ASSERT_EQ(r.status, RT_RESULTS_FINISHED); /* stopping early is how it finished */
        rt_results_run_free(&r);
    }
}

/* The training loss of this learnable set falls every epoch: patience 1 never fires. */
T_TEST(test_improving_run_is_not_stopped)
{
    ASSERT_EQ(setup(), 0);
    ASSERT_EQ(train("--epochs 4 --lr 0.01 --early-stop 1 --monitor train_loss"), 0);
    ASSERT_EQ(count(tm_c.out, "\nepoch "), 4);
    ASSERT_EQ(capture_count(&tm_c, "text/plain", "Run tiny: finished", NULL, NULL), 1);
    char v[64];
    last_param("stop_reason", v, sizeof v);
    ASSERT_STR_EQ(v, "finished");
    last_param("best_epoch", v, sizeof v);
    ASSERT_STR_EQ(v, "4");
}

/* --restore-best with a run that gets worse: the model ends with epoch 1's weights, so
 * %evaluate on the validation data gives epoch 1's loss. */
T_TEST(test_restore_best)
{
    ASSERT_EQ(setup(), 0);
    /* --min-delta 100: no epoch after the first is better */
    ASSERT_EQ(train("--epochs 3 --lr 0.02 --monitor val_acc --early-stop 5 --min-delta 100 "
                    "--restore-best"),
              0);
    ASSERT_STR_CONTAINS(tm_c.out, "--restore-best: the model has the weights of epoch 1 (val_acc ");
    const char *at = strstr(tm_c.out, "\nepoch 1/3");
    ASSERT(at != NULL);
    const char *acc = at ? strstr(at, "test_acc ") : NULL;
    ASSERT(acc != NULL);
    double want = acc ? atof(acc + 9) : -1;
    tm_reset();
    ASSERT_EQ(tm_magic(g_s, "evaluate tiny --split test", NULL, &g_err), 0);
    const char *rep = NULL;
    size_t i;
    json_t *x;
    json_array_foreach(tm_c.log, i, x)
    {
        const char *tp =
            json_string_value(json_object_get(json_object_get(x, "data"), "text/plain"));
        if (tp && strstr(tp, "accuracy ")) rep = strstr(tp, "accuracy ");
    }
    ASSERT(rep != NULL);
    ASSERT_NEAR(rep ? atof(rep + 9) : -2, want, 5e-5);
}

/* --monitor is the metric the checkpoints carry, and the best kept by --keep. */
T_TEST(test_monitor_picks_the_best_checkpoint)
{
    ASSERT_EQ(setup(), 0);
    char more[512], dir[256];
    snprintf(dir, sizeof dir, "%s/best", g_dir);
    snprintf(more, sizeof more, "--epochs 3 --run-dir %s --keep 1 --monitor train_loss --lr 0.01",
             dir);
    ASSERT_EQ(train(more), 0);
    /* the newest (epoch 3) is also the best: one file, carrying train_loss */
    char *path = NULL, *skipped = NULL;
    rt_error re = {0};
    ASSERT_EQ(rt_ckpt_dir_latest(dir, &path, &skipped, &re), RT_OK);
    rt_ckpt_reader *rd = NULL;
    ASSERT_EQ(rt_ckpt_reader_open(path, RT_CKPT_OPEN_HEADER_ONLY, &rd, &re), RT_OK);
    rt_ckpt_metric m;
    ASSERT_EQ(rt_ckpt_reader_metric(rd, RT_CKPT_KEY_METRIC, &m, &re), RT_OK);
    ASSERT_STR_EQ(m.name, "train_loss");
    ASSERT_EQ(m.higher_is_better, 0);
    rt_ckpt_reader_destroy(rd);
    free(path);
    free(skipped);
}

T_TEST(test_bad_values_are_errors_before_training)
{
    ASSERT_EQ(setup(), 0);
    ASSERT_EQ(train("--early-stop -1"), -1);
    ASSERT_STR_EQ(g_err.ename, "ValueError");
    ASSERT_STR_EQ(g_err.evalue, "%train: --early-stop must be in 0..100000, got -1");
    ASSERT_EQ(train("--monitor val_los"), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--monitor");
    ASSERT_STR_CONTAINS(g_err.evalue, "val_loss");
    ASSERT_EQ(train("--min-delta -0.5"), -1);
    ASSERT_STR_EQ(g_err.evalue, "%train: --min-delta must be >= 0, got -0.5");
    ASSERT_EQ(train("--schedule multistep:5,2"), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--schedule: schedule multistep: milestones must be");
    ASSERT_EQ(train("--schedule plateau:2"), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "factor must be in (0, 1)");
    ASSERT(strstr(tm_c.out, "Training tiny") == NULL); /* nothing trained */
}

/* plateau through %train: the lr the progress shows halves after the first epoch that
 * fails to improve (patience 0; threshold 0.99 makes every epoch after the first one;
 * the per-epoch rates are checked against torch in tests/runtime/test_early_stop.c). */
T_TEST(test_plateau_lowers_the_lr)
{
    ASSERT_EQ(setup(), 0);
    ASSERT_EQ(train("--epochs 3 --schedule plateau:0.5:0,threshold=0.99 --lr 0.001"), 0);
    char *shown = capture_shown(&tm_c, "text/plain");
    ASSERT(shown != NULL);
    /* epochs 1 and 2 at 0.001 (epoch 1 sets the best, epoch 2 is the first that fails
     * to improve), epoch 3 at 0.0005 */
    const char *e2 = shown ? strstr(shown, "epoch 2/3 [") : NULL;
    const char *e3 = shown ? strstr(shown, "epoch 3/3 [") : NULL;
    ASSERT(e2 && e3);
    ASSERT(e2 && strstr(e2, "lr 0.001 ") != NULL && strstr(e2, "lr 0.001 ") < e3);
    ASSERT(e3 && strstr(e3, "lr 0.0005 ") != NULL);
    ASSERT(e2 && strstr(e2, "lr 0.0005 ") > e3);
    free(shown);
}

/* The trainer's device path (what a GPU runs; here on the CPU): early stopping, the
 * plateau's lowered lr and --restore-best act the same way there. */
T_TEST(test_device_path)
{
    tm_settings.device_path = 1;
    ASSERT_EQ(setup(), 0);
    ASSERT_EQ(train("--epochs 5 --early-stop 1 --min-delta 100 --restore-best "
                    "--schedule plateau:0.5:0,threshold=0.99"),
              0);
    ASSERT_EQ(count(tm_c.out, "\nepoch "), 2);
    ASSERT_EQ(
        capture_count(&tm_c, "text/plain", "Run tiny: stopped early at epoch 2 of 5", NULL, NULL),
        1);
    ASSERT_STR_CONTAINS(tm_c.out, "--restore-best: the model has the weights of epoch 1 ");
    tm_settings.device_path = 0;
}

int main(void)
{
    if (tm_start(g_dir, sizeof g_dir, g_store, sizeof g_store)) return 99;
    T_RUN(test_no_improvement_stops_after_patience);
    T_RUN(test_improving_run_is_not_stopped);
    T_RUN(test_restore_best);
    T_RUN(test_monitor_picks_the_best_checkpoint);
    T_RUN(test_bad_values_are_errors_before_training);
    T_RUN(test_plateau_lowers_the_lr);
    T_RUN(test_device_path);
    tm_teardown(g_s, g_dir);
    return T_EXIT();
}
