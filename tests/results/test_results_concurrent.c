/* test_results_concurrent.c - two processes "train" at once into one store.
 *
 * Starts results_logger (argv[1]) twice on the same SQLite file, each logging a run
 * of STEPS steps (two metrics a step, two a simulated epoch, a checkpoint an epoch)
 * with a different tag. Both must finish, and each run must hold exactly its own
 * values: every step once, every value the logger's value_of(step, tag), nothing of
 * the other run mixed in.
 */
#include <spawn.h>
#include <sys/wait.h>

#include "results_test_util.h"
#include "rt_results.h"
#include "rt_results_query.h"
#include "t.h"

extern char **environ;

#define STEPS 20000
#define EVERY 100

static const char *g_logger;
static char g_dir[512];

static double value_of(int m, long step, long tag)
{
    return 1.0 / (1.0 + (double)step) + (double)m * 10.0 + (double)tag * 1000.0;
}

static pid_t spawn_logger(const char *store, const char *name, const char *tag, int out_fd)
{
    char steps[32], every[32];
    snprintf(steps, sizeof steps, "%d", STEPS);
    snprintf(every, sizeof every, "%d", EVERY);
    char *argv[] = {(char *)g_logger, (char *)store,   (char *)name, steps, "--tag",
                    (char *)tag,      "--epoch-every", every,        NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    pid_t pid = -1;
    if (posix_spawn(&pid, g_logger, &fa, NULL, argv, environ) != 0) pid = -1;
    posix_spawn_file_actions_destroy(&fa);
    return pid;
}

/* Checks one metric series of run r against value_of(m, ., tag). */
static int series_ok(rt_results *rs, int64_t run, const char *key, rt_results_kind kind, int m,
                     long tag, size_t want)
{
    double *x = NULL, *y = NULL;
    size_t n = 0;
    if (rt_results_series(rs, run, key, kind, &x, &y, &n, NULL) != RT_OK) return 0;
    int ok = n == want;
    for (size_t i = 0; ok && i < n; i++) {
        long step = kind == RT_RESULTS_STEP ? (long)(i + 1) : (long)(i + 1) * EVERY;
        ok = x[i] == (double)(kind == RT_RESULTS_STEP ? step : (long)(i + 1)) &&
             y[i] == value_of(m, step, tag);
        if (!ok)
            fprintf(stderr, "  %s[%zu] = (%g, %.17g), want step %ld value %.17g\n", key, i, x[i],
                    y[i], step, value_of(m, step, tag));
    }
    if (n != want) fprintf(stderr, "  %s: %zu values, want %zu\n", key, n, want);
    free(x);
    free(y);
    return ok;
}

T_TEST(t_two_writers)
{
    char store[600], out1[600], out2[600];
    snprintf(store, sizeof store, "%s/shared.sqlite", g_dir);
    snprintf(out1, sizeof out1, "%s/out1.txt", g_dir);
    snprintf(out2, sizeof out2, "%s/out2.txt", g_dir);
    FILE *f1 = fopen(out1, "w"), *f2 = fopen(out2, "w");
    ASSERT(f1 && f2);
    pid_t p1 = spawn_logger(store, "first", "1", fileno(f1));
    pid_t p2 = spawn_logger(store, "second", "2", fileno(f2));
    ASSERT(p1 > 0 && p2 > 0);
    int s1 = -1, s2 = -1;
    ASSERT_EQ(waitpid(p1, &s1, 0), p1);
    ASSERT_EQ(waitpid(p2, &s2, 0), p2);
    fclose(f1);
    fclose(f2);
    ASSERT(WIFEXITED(s1) && WEXITSTATUS(s1) == 0);
    ASSERT(WIFEXITED(s2) && WEXITSTATUS(s2) == 0);

    rt_results *rs = NULL;
    rt_error err = {0};
    ASSERT_EQ(rt_results_open(store, &rs, &err), RT_OK);
    rt_results_list l;
    ASSERT_EQ(rt_results_list_runs(rs, NULL, &l, &err), RT_OK);
    ASSERT_EQ(l.n, 2);
    for (size_t i = 0; i < l.n; i++) {
        const rt_results_run *r = &l.runs[i];
        long tag = strcmp(r->name, "first") == 0 ? 1 : 2;
        ASSERT_EQ(r->status, RT_RESULTS_FINISHED);
        ASSERT_EQ(r->nparams, 4);
        ASSERT(series_ok(rs, r->id, "loss", RT_RESULTS_STEP, 0, tag, STEPS));
        ASSERT(series_ok(rs, r->id, "acc", RT_RESULTS_STEP, 1, tag, STEPS));
        ASSERT(series_ok(rs, r->id, "val_loss", RT_RESULTS_EPOCH, 2, tag, STEPS / EVERY));
        ASSERT(series_ok(rs, r->id, "val_acc", RT_RESULTS_EPOCH, 3, tag, STEPS / EVERY));
        rt_results_run full;
        ASSERT_EQ(rt_results_get_run(rs, r->id, &full, &err), RT_OK);
        size_t nck = full.nckpts;
        rt_results_run_free(&full);
        ASSERT_EQ(nck, STEPS / EVERY);
    }
    ASSERT(strcmp(l.runs[0].name, l.runs[1].name) != 0);
    rt_results_list_free(&l);
    rt_results_close(rs);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_results_concurrent PATH/TO/results_logger\n");
        return 99;
    }
    g_logger = argv[1];
    if (tu_tmpdir(g_dir, sizeof g_dir) != 0) return 99;
    T_RUN(t_two_writers);
    int rc = T_EXIT();
    if (rc == 0) tu_rmtree(g_dir);
    else fprintf(stderr, "kept %s for inspection\n", g_dir);
    return rc;
}
