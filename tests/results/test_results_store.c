/* test_results_store.c - the results store in one process: what is logged comes back
 * exactly, lists filter and sort, bad input gives clear errors and loses nothing,
 * dead runs become interrupted, export and delete, the MLflow mirror with no server.
 */
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "results_test_util.h"
#include "rt_results.h"
#include "rt_results_internal.h"
#include "rt_results_query.h"
#include "t.h"

static char g_dir[512];

static void store_path(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", g_dir, name);
}

/* Opens a store and logs one run: params lr/batch, loss per step 1..steps, val_acc
 * per epoch (every 10 steps), one checkpoint; ends it with status st. */
static int64_t log_run(rt_results *rs, const char *name, const char *lr, double acc_base, int steps,
                       rt_results_status st)
{
    rt_results_run_info info = {.name = name,
                                .device = "cpu",
                                .precision = "fp32",
                                .dataset = "fashion-mnist",
                                .notebook = "t.ipynb",
                                .model_spec = "conv2d 8 3\nrelu\ndense 10"};
    int64_t run = 0;
    if (rt_results_run_begin(rs, &info, &run, NULL) != RT_OK) return -1;
    if (rt_results_log_param(rs, run, "lr", lr, NULL) != RT_OK) return -1;
    if (rt_results_log_param(rs, run, "batch", "64", NULL) != RT_OK) return -1;
    for (int s = 1; s <= steps; s++) {
        if (rt_results_log_metric(rs, run, "loss", 1.0 / s, s, (s - 1) / 10, RT_RESULTS_STEP,
                                  NULL) != RT_OK)
            return -1;
        if (s % 10 == 0 && rt_results_log_metric(rs, run, "val_acc", acc_base + s / 1000.0, s,
                                                 s / 10, RT_RESULTS_EPOCH, NULL) != RT_OK)
            return -1;
    }
    if (rt_results_log_checkpoint(rs, run, "/ck/last.safetensors", steps, steps / 10, "val_acc",
                                  acc_base, NULL) != RT_OK)
        return -1;
    if (st != RT_RESULTS_RUNNING && rt_results_run_end(rs, run, st, NULL) != RT_OK) return -1;
    return run;
}

static const rt_results_summary *summary(const rt_results_run *r, const char *key)
{
    for (size_t i = 0; i < r->nmetrics; i++)
        if (strcmp(r->metrics[i].key, key) == 0) return &r->metrics[i];
    return NULL;
}

T_TEST(t_roundtrip)
{
    char path[600];
    store_path(path, sizeof path, "sub/dir/rt.sqlite"); /* parents are created */
    rt_results *rs = NULL;
    rt_error err = {0};
    ASSERT_EQ(rt_results_open(path, &rs, &err), RT_OK);
    ASSERT_STR_EQ(rt_results_path(rs), path);
    int64_t run = log_run(rs, "mnist", "0.001", 0.8, 35, RT_RESULTS_FINISHED);
    ASSERT(run > 0);
    rt_results_close(rs);

    ASSERT_EQ(rt_results_open(path, &rs, &err), RT_OK);
    rt_results_run r;
    ASSERT_EQ(rt_results_get_run(rs, run, &r, &err), RT_OK);
    ASSERT_STR_EQ(r.name, "mnist");
    ASSERT_STR_EQ(r.device, "cpu");
    ASSERT_STR_EQ(r.dataset, "fashion-mnist");
    ASSERT_STR_EQ(r.model_spec, "conv2d 8 3\nrelu\ndense 10");
    ASSERT(r.kiln_version && *r.kiln_version);
    ASSERT_EQ(r.status, RT_RESULTS_FINISHED);
    ASSERT(r.end_time >= r.start_time && r.start_time > 1.6e9);
    ASSERT_EQ(r.nparams, 2);
    ASSERT_STR_EQ(r.params[0].key, "batch");
    ASSERT_STR_EQ(r.params[1].value, "0.001");
    const rt_results_summary *loss = summary(&r, "loss"), *acc = summary(&r, "val_acc");
    ASSERT(loss && acc);
    ASSERT_EQ(loss->count, 35);
    ASSERT_EQ(loss->kind, RT_RESULTS_STEP);
    ASSERT_NEAR(loss->last, 1.0 / 35, 1e-15);
    ASSERT_NEAR(loss->min, 1.0 / 35, 1e-15);
    ASSERT_NEAR(loss->max, 1.0, 1e-15);
    ASSERT_EQ(acc->kind, RT_RESULTS_EPOCH);
    ASSERT_EQ(acc->count, 3);
    ASSERT_EQ(acc->last_epoch, 3);
    ASSERT_EQ(r.nckpts, 1);
    ASSERT_STR_EQ(r.ckpts[0].path, "/ck/last.safetensors");
    ASSERT_EQ(r.ckpts[0].step, 35);
    rt_results_run_free(&r);

    double *x = NULL, *y = NULL;
    size_t n = 0;
    ASSERT_EQ(rt_results_series(rs, run, "loss", RT_RESULTS_STEP, &x, &y, &n, &err), RT_OK);
    ASSERT_EQ(n, 35);
    int exact = 1;
    for (size_t i = 0; i < n; i++)
        exact &= x[i] == (double)(i + 1) && y[i] == 1.0 / (double)(i + 1);
    free(x);
    free(y);
    ASSERT(exact);
    ASSERT_EQ(rt_results_series(rs, run, "val_acc", RT_RESULTS_EPOCH, &x, &y, &n, &err), RT_OK);
    ASSERT_EQ(n, 3);
    ASSERT_EQ(x[2], 3);
    ASSERT_NEAR(y[2], 0.83, 1e-12);
    free(x);
    free(y);
    int64_t found = 0;
    ASSERT_EQ(rt_results_find(rs, "mnist", &found, &err), RT_OK);
    ASSERT_EQ(found, run);
    ASSERT_EQ(rt_results_find(rs, "last", &found, &err), RT_OK);
    ASSERT_EQ(found, run);
    rt_results_close(rs);
}

T_TEST(t_nan_kept)
{
    char path[600];
    store_path(path, sizeof path, "nan.sqlite");
    rt_results *rs = NULL;
    ASSERT_EQ(rt_results_open(path, &rs, NULL), RT_OK);
    int64_t run = 0;
    ASSERT_EQ(rt_results_run_begin(rs, NULL, &run, NULL), RT_OK);
    ASSERT_EQ(rt_results_log_metric(rs, run, "loss", 2.0, 1, 0, RT_RESULTS_STEP, NULL), RT_OK);
    ASSERT_EQ(rt_results_log_metric(rs, run, "loss", NAN, 2, 0, RT_RESULTS_STEP, NULL), RT_OK);
    ASSERT_EQ(rt_results_log_metric(rs, run, "loss", INFINITY, 3, 0, RT_RESULTS_STEP, NULL), RT_OK);
    ASSERT_EQ(rt_results_run_end(rs, run, RT_RESULTS_FAILED, NULL), RT_OK);
    double *x, *y;
    size_t n;
    ASSERT_EQ(rt_results_series(rs, run, "loss", RT_RESULTS_STEP, &x, &y, &n, NULL), RT_OK);
    ASSERT_EQ(n, 3);
    int ok = y[0] == 2.0 && isnan(y[1]) && isinf(y[2]);
    free(x);
    free(y);
    ASSERT(ok);
    rt_results_close(rs);
}

T_TEST(t_list_filter_sort)
{
    char path[600];
    store_path(path, sizeof path, "list.sqlite");
    rt_results *rs = NULL;
    rt_error err = {0};
    ASSERT_EQ(rt_results_open(path, &rs, &err), RT_OK);
    int64_t a = log_run(rs, "a", "0.001", 0.70, 20, RT_RESULTS_FINISHED);
    int64_t b = log_run(rs, "b", "0.01", 0.90, 20, RT_RESULTS_FINISHED);
    int64_t c = log_run(rs, "c", "0.001", 0.80, 20, RT_RESULTS_FINISHED);
    int64_t d = log_run(rs, "d", "0.001", 0.99, 20, RT_RESULTS_FAILED);
    ASSERT(a > 0 && b > 0 && c > 0 && d > 0);

    const char *where[] = {"lr=0.001"};
    rt_results_query q = {.status = RT_RESULTS_FINISHED,
                          .nwhere = 1,
                          .where = where,
                          .sort = "val_acc",
                          .descending = 1};
    rt_results_list l;
    ASSERT_EQ(rt_results_list_runs(rs, &q, &l, &err), RT_OK);
    ASSERT_EQ(l.n, 2);
    ASSERT_EQ(l.runs[0].id, c); /* 0.82 before 0.72; d is failed, b has lr 0.01 */
    ASSERT_EQ(l.runs[1].id, a);
    rt_results_list_free(&l);

    /* numeric comparison: "0.0010" equals 0.001 as a number; > on a metric */
    const char *w2[] = {"lr = 0.0010", "val_acc>0.75"};
    rt_results_query q2 = {.status = -1, .nwhere = 2, .where = w2, .sort = "name"};
    ASSERT_EQ(rt_results_list_runs(rs, &q2, &l, &err), RT_OK);
    ASSERT_EQ(l.n, 2);
    ASSERT_EQ(l.runs[0].id, c);
    ASSERT_EQ(l.runs[1].id, d);
    rt_results_list_free(&l);

    rt_results_query q3 = {.status = -1, .sort = "val_acc", .limit = 3};
    ASSERT_EQ(rt_results_list_runs(rs, &q3, &l, &err), RT_OK);
    ASSERT_EQ(l.n, 3);
    ASSERT_EQ(l.runs[0].id, a);
    ASSERT_EQ(l.runs[2].id, b);
    rt_results_list_free(&l);

    /* a key no run has: all kept by sort (missing last), none kept by where */
    const char *w4[] = {"nosuch=1"};
    rt_results_query q4 = {.status = -1, .nwhere = 1, .where = w4};
    ASSERT_EQ(rt_results_list_runs(rs, &q4, &l, &err), RT_OK);
    ASSERT_EQ(l.n, 0);
    rt_results_list_free(&l);

    const char *bad[] = {"lr"};
    rt_results_query q5 = {.status = -1, .nwhere = 1, .where = bad};
    ASSERT_EQ(rt_results_list_runs(rs, &q5, &l, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "KEY=VALUE");
    ASSERT_EQ(l.n, 0);

    /* sorting by a key no run has is a typo (val_acc for val_accuracy): an error naming
     * it, not a silently unsorted list; with no runs to sort there is nothing to say */
    rt_results_query q6 = {.status = -1, .sort = "val_accuracy"};
    ASSERT_EQ(rt_results_list_runs(rs, &q6, &l, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "--sort val_accuracy");
    ASSERT_EQ(l.n, 0);
    /* a key cut short (Kiln's val_accuracy typed as val_acc) is named with the fix */
    rt_results_query q6b = {.status = -1, .sort = "val_a"};
    ASSERT_EQ(rt_results_list_runs(rs, &q6b, &l, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "did you mean val_acc?");
    rt_results_query q7 = {.status = -1, .nwhere = 1, .where = w4, .sort = "val_accuracy"};
    ASSERT_EQ(rt_results_list_runs(rs, &q7, &l, &err), RT_OK);
    ASSERT_EQ(l.n, 0);
    rt_results_list_free(&l);
    rt_results_close(rs);
}

T_TEST(t_not_sqlite)
{
    char path[600];
    store_path(path, sizeof path, "notes.txt");
    const char *text = "these are my notes, not a database\n";
    ASSERT_EQ(tu_write_file(path, text), 0);
    rt_results *rs = NULL;
    rt_error err = {0};
    ASSERT_EQ(rt_results_open(path, &rs, &err), RT_EFORMAT);
    ASSERT(rs == NULL);
    ASSERT_STR_CONTAINS(err.msg, "not an SQLite database");
    ASSERT_STR_CONTAINS(err.msg, path);
    char *after = tu_read_file(path);
    int same = after && strcmp(after, text) == 0;
    free(after);
    ASSERT(same); /* nothing written into the user's file */

    /* an SQLite database of another program is refused too, and left alone */
    store_path(path, sizeof path, "other.db");
    sqlite3 *db = NULL;
    ASSERT_EQ(sqlite3_open(path, &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES(1);", NULL, NULL, NULL),
              SQLITE_OK);
    sqlite3_close(db);
    ASSERT_EQ(rt_results_open(path, &rs, &err), RT_EFORMAT);
    ASSERT_STR_CONTAINS(err.msg, "not a Kiln results store");

    /* ...and logging is still possible with a good store afterwards */
    store_path(path, sizeof path, "good.sqlite");
    ASSERT_EQ(rt_results_open(path, &rs, &err), RT_OK);
    ASSERT(log_run(rs, "x", "1", 0.5, 5, RT_RESULTS_FINISHED) > 0);
    rt_results_close(rs);
}

/* A store pulled from elsewhere (%results --pull) with a trigger or a view in it, or
 * damaged, never replaces the local one: the trigger would run on Kiln's own writes. */
T_TEST(t_replace_refuses_a_hostile_store)
{
    char local[600], evil[600], view[600];
    store_path(local, sizeof local, "mine.sqlite");
    store_path(evil, sizeof evil, "pulled.sqlite");
    store_path(view, sizeof view, "pulled-view.sqlite");
    rt_results *rs = NULL;
    rt_error err = {0};
    ASSERT_EQ(rt_results_open(local, &rs, &err), RT_OK);
    ASSERT(log_run(rs, "mine", "1", 0.5, 5, RT_RESULTS_FINISHED) > 0);
    rt_results_close(rs);
    const char *const extra[] = {
        "CREATE TRIGGER t AFTER INSERT ON runs BEGIN DELETE FROM params; END;",
        "CREATE VIEW v AS SELECT * FROM runs;"};
    const char *const paths[] = {evil, view};
    for (int k = 0; k < 2; k++) {
        ASSERT_EQ(rt_results_open(paths[k], &rs, &err), RT_OK); /* a real Kiln store... */
        rt_results_close(rs);
        sqlite3 *db = NULL;
        ASSERT_EQ(sqlite3_open(paths[k], &db), SQLITE_OK);
        ASSERT_EQ(sqlite3_exec(db, extra[k], NULL, NULL, NULL), SQLITE_OK); /* ...and more */
        sqlite3_close(db);
        ASSERT_EQ(rt_results_replace(local, paths[k], &err), RT_EFORMAT);
        printf("%s\n", err.msg);
        ASSERT_STR_CONTAINS(err.msg, k ? "holds a view" : "holds a trigger");
        ASSERT_STR_CONTAINS(err.msg, "the local store is unchanged");
    }
    ASSERT_EQ(rt_results_open(local, &rs, &err), RT_OK); /* still mine, still one run */
    rt_results_close(rs);
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    ASSERT_EQ(sqlite3_open(local, &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_schema WHERE type = 'trigger'",
                                 -1, &st, NULL),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    int triggers = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    ASSERT_EQ(triggers, 0);
}

T_TEST(t_unwritable)
{
    char file[600], path[700];
    store_path(file, sizeof file, "plainfile");
    ASSERT_EQ(tu_write_file(file, "x"), 0);
    snprintf(path, sizeof path, "%s/results.sqlite", file); /* parent is a file */
    rt_results *rs = NULL;
    rt_error err = {0};
    ASSERT_NE(rt_results_open(path, &rs, &err), RT_OK);
    ASSERT(rs == NULL);
    ASSERT_STR_CONTAINS(err.msg, "results store");
    ASSERT_STR_CONTAINS(err.msg, "HINT");

    ASSERT_NE(rt_results_open("/proc/kiln-no-such/results.sqlite", &rs, &err), RT_OK);
    ASSERT_STR_CONTAINS(err.msg, "writable");

    /* a read-only store file (as an unprivileged user would see it) */
    if (geteuid() != 0) {
        char ro[600];
        store_path(ro, sizeof ro, "ro.sqlite");
        ASSERT_EQ(rt_results_open(ro, &rs, &err), RT_OK);
        rt_results_close(rs);
        ASSERT_EQ(chmod(ro, 0444), 0);
        ASSERT_NE(rt_results_open(ro, &rs, &err), RT_OK);
        ASSERT_STR_CONTAINS(err.msg, "writ");
    }
}

T_TEST(t_unknown_run)
{
    char path[600];
    store_path(path, sizeof path, "unknown.sqlite");
    rt_results *rs = NULL;
    rt_error err = {0};
    ASSERT_EQ(rt_results_open(path, &rs, &err), RT_OK);
    int64_t good = log_run(rs, "g", "1", 0.5, 0, RT_RESULTS_RUNNING);
    ASSERT(good > 0);
    rt_results_run r;
    ASSERT_EQ(rt_results_get_run(rs, 4242, &r, &err), RT_ENOTFOUND);
    ASSERT_STR_CONTAINS(err.msg, "no run 4242");
    int64_t id;
    ASSERT_EQ(rt_results_find(rs, "nosuchname", &id, &err), RT_ENOTFOUND);
    ASSERT_STR_CONTAINS(err.msg, "nosuchname");
    ASSERT_EQ(rt_results_log_metric(rs, 4242, "loss", 1, 1, 0, RT_RESULTS_STEP, &err), RT_EINVAL);
    ASSERT_EQ(rt_results_log_param(rs, 4242, "lr", "1", &err), RT_ENOTFOUND);
    ASSERT_EQ(rt_results_run_end(rs, 4242, RT_RESULTS_FINISHED, &err), RT_ENOTFOUND);
    ASSERT_EQ(rt_results_delete(rs, 4242, 0, &err), RT_ENOTFOUND);
    ASSERT_EQ(rt_results_run_resume(rs, 4242, &err), RT_ENOTFOUND);
    /* the good run still logs */
    ASSERT_EQ(rt_results_log_metric(rs, good, "loss", 0.5, 1, 0, RT_RESULTS_STEP, &err), RT_OK);
    ASSERT_EQ(rt_results_run_end(rs, good, RT_RESULTS_FINISHED, &err), RT_OK);
    ASSERT_EQ(rt_results_get_run(rs, good, &r, &err), RT_OK);
    ASSERT_EQ(r.nmetrics, 1);
    ASSERT_EQ(r.metrics[0].count, 1);
    rt_results_run_free(&r);
    rt_results_close(rs);
}

/* A child begins a run, logs, then is killed with SIGKILL: reopening shows the run
 * as interrupted, while a run of a live process stays running. */
T_TEST(t_kill9_interrupted)
{
    char path[600];
    store_path(path, sizeof path, "kill.sqlite");
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    pid_t pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        rt_results *rs = NULL;
        int64_t run = 0;
        if (rt_results_open(path, &rs, NULL) != RT_OK ||
            rt_results_run_begin(rs, NULL, &run, NULL) != RT_OK)
            _exit(3);
        for (int s = 1; s <= 50; s++)
            if (rt_results_log_metric(rs, run, "loss", s, s, 0, RT_RESULTS_STEP, NULL) != RT_OK)
                _exit(5);
        if (rt_results_flush(rs, NULL) != RT_OK) _exit(6);
        if (write(fds[1], &run, sizeof run) != (ssize_t)sizeof run) _exit(4);
        for (;;) pause();
    }
    close(fds[1]);
    int64_t child_run = 0;
    ASSERT_EQ(read(fds[0], &child_run, sizeof child_run), (ssize_t)sizeof child_run);
    close(fds[0]);

    rt_results *rs = NULL;
    rt_error err = {0};
    ASSERT_EQ(rt_results_open(path, &rs, &err), RT_OK);
    rt_results_run r;
    ASSERT_EQ(rt_results_get_run(rs, child_run, &r, &err), RT_OK);
    ASSERT_EQ(r.status, RT_RESULTS_RUNNING); /* alive: left alone */
    rt_results_run_free(&r);
    int64_t mine = 0;
    ASSERT_EQ(rt_results_run_begin(rs, NULL, &mine, &err), RT_OK);
    ASSERT_EQ(rt_results_delete(rs, child_run, 0, &err), RT_EINVAL); /* live: refused */
    ASSERT_STR_CONTAINS(err.msg, "still running");
    rt_results_close(rs); /* marks "mine" interrupted */

    kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_EQ(rt_results_open(path, &rs, &err), RT_OK);
    ASSERT_EQ(rt_results_get_run(rs, child_run, &r, &err), RT_OK);
    ASSERT_EQ(r.status, RT_RESULTS_INTERRUPTED);
    ASSERT(r.end_time >= r.start_time);
    ASSERT_EQ(r.metrics[0].count, 50); /* what was flushed is all there */
    rt_results_run_free(&r);
    ASSERT_EQ(rt_results_get_run(rs, mine, &r, &err), RT_OK);
    ASSERT_EQ(r.status, RT_RESULTS_INTERRUPTED);
    rt_results_run_free(&r);

    /* a running run recorded on another host is not judged here */
    sqlite3 *db = NULL;
    ASSERT_EQ(sqlite3_open(path, &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "INSERT INTO runs(status, host, pid, start_time) VALUES("
                           "'running', 'elsewhere.example', 1, 1)",
                           NULL, NULL, NULL),
              SQLITE_OK);
    int64_t other = sqlite3_last_insert_rowid(db);
    sqlite3_close(db);
    rt_results_close(rs);
    ASSERT_EQ(rt_results_open(path, &rs, &err), RT_OK);
    ASSERT_EQ(rt_results_get_run(rs, other, &r, &err), RT_OK);
    ASSERT_EQ(r.status, RT_RESULTS_RUNNING);
    rt_results_run_free(&r);

    /* resume: the interrupted run continues in this process */
    ASSERT_EQ(rt_results_run_resume(rs, child_run, &err), RT_OK);
    ASSERT_EQ(rt_results_log_metric(rs, child_run, "loss", 51, 51, 0, RT_RESULTS_STEP, &err),
              RT_OK);
    ASSERT_EQ(rt_results_run_end(rs, child_run, RT_RESULTS_FINISHED, &err), RT_OK);
    ASSERT_EQ(rt_results_get_run(rs, child_run, &r, &err), RT_OK);
    ASSERT_EQ(r.status, RT_RESULTS_FINISHED);
    ASSERT_EQ(r.metrics[0].count, 51);
    rt_results_run_free(&r);
    rt_results_close(rs);
}

T_TEST(t_export)
{
    char path[600], csv[600], json[600];
    store_path(path, sizeof path, "export.sqlite");
    store_path(csv, sizeof csv, "out.csv");
    store_path(json, sizeof json, "out.json");
    rt_results *rs = NULL;
    rt_error err = {0};
    ASSERT_EQ(rt_results_open(path, &rs, &err), RT_OK);
    int64_t a = log_run(rs, "with,comma \"q\"", "0.001", 0.7, 20, RT_RESULTS_FINISHED);
    int64_t b = log_run(rs, "b", "0.01", 0.9, 30, RT_RESULTS_INTERRUPTED);
    ASSERT(a > 0 && b > 0);
    ASSERT_EQ(rt_results_export(rs, "csv", csv, NULL, &err), RT_OK);
    char *text = tu_read_file(csv);
    ASSERT(text);
    int lines = 0;
    for (char *p = text; *p; p++) lines += *p == '\n';
    int header_ok = strncmp(text, "id,name,status,", 15) == 0 && strstr(text, "param:lr") &&
                    strstr(text, "metric:val_acc");
    int quoted = strstr(text, "\"with,comma \"\"q\"\"\"") != NULL;
    int has_last = strstr(text, ",0.93") != NULL; /* b's last val_acc 0.9 + 30/1000 */
    free(text);
    ASSERT_EQ(lines, 3);
    ASSERT(header_ok);
    ASSERT(quoted);
    ASSERT(has_last);

    rt_results_query q = {.status = RT_RESULTS_INTERRUPTED};
    ASSERT_EQ(rt_results_export(rs, "json", json, &q, &err), RT_OK);
    json_error_t jerr;
    json_t *doc = json_load_file(json, 0, &jerr);
    ASSERT(doc);
    json_t *runs = json_object_get(doc, "runs");
    ASSERT_EQ(json_array_size(runs), 1);
    json_t *run = json_array_get(runs, 0);
    ASSERT_EQ(json_integer_value(json_object_get(run, "id")), b);
    ASSERT_STR_EQ(json_string_value(json_object_get(json_object_get(run, "params"), "lr")), "0.01");
    json_t *metrics = json_object_get(run, "metrics");
    ASSERT_EQ(json_array_size(metrics), 2);
    json_t *loss = json_array_get(metrics, 0);
    ASSERT_STR_EQ(json_string_value(json_object_get(loss, "key")), "loss");
    ASSERT_EQ(json_array_size(json_object_get(loss, "values")), 30);
    ASSERT_NEAR(json_real_value(json_array_get(json_object_get(loss, "values"), 3)), 0.25, 0);
    json_decref(doc);

    ASSERT_EQ(rt_results_export(rs, "xml", json, NULL, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "csv or json");
    char badpath[700];
    snprintf(badpath, sizeof badpath, "%s/no/such/dir/x.csv", g_dir);
    ASSERT_EQ(rt_results_export(rs, "csv", badpath, NULL, &err), RT_EIO);
    ASSERT_STR_CONTAINS(err.msg, "cannot write");
    rt_results_close(rs);
}

T_TEST(t_delete)
{
    char path[600];
    store_path(path, sizeof path, "delete.sqlite");
    rt_results *rs = NULL;
    rt_error err = {0};
    ASSERT_EQ(rt_results_open(path, &rs, &err), RT_OK);
    int64_t a = log_run(rs, "a", "1", 0.5, 20, RT_RESULTS_FINISHED);
    int64_t b = log_run(rs, "b", "1", 0.5, 20, RT_RESULTS_FINISHED);
    ASSERT_EQ(rt_results_delete(rs, a, 0, &err), RT_OK);
    rt_results_run r;
    ASSERT_EQ(rt_results_get_run(rs, a, &r, &err), RT_ENOTFOUND);
    double *x, *y;
    size_t n = 1;
    ASSERT_EQ(rt_results_series(rs, a, "loss", RT_RESULTS_STEP, &x, &y, &n, &err), RT_OK);
    ASSERT_EQ(n, 0); /* metrics went with the run */
    free(x);
    free(y);
    ASSERT_EQ(rt_results_get_run(rs, b, &r, &err), RT_OK);
    ASSERT_EQ(r.metrics[0].count, 20);
    rt_results_run_free(&r);
    rt_results_close(rs);
}

T_TEST(t_spec_resolution)
{
    char buf[600];
    setenv("XDG_DATA_HOME", "/xdg", 1);
    unsetenv("KILN_RESULTS");
    ASSERT_EQ(rt_results_resolve_path(NULL, buf, sizeof buf), 0);
    ASSERT_STR_EQ(buf, "/xdg/kiln/results.sqlite");
    setenv("KILN_RESULTS", "/env/r.sqlite", 1);
    ASSERT_EQ(rt_results_resolve_path(NULL, buf, sizeof buf), 0);
    ASSERT_STR_EQ(buf, "/env/r.sqlite");
    ASSERT_EQ(rt_results_resolve_path("/given.sqlite", buf, sizeof buf), 0);
    ASSERT_STR_EQ(buf, "/given.sqlite");
    /* an MLflow spec keeps the local store at the default place */
    ASSERT_EQ(rt_results_resolve_path("mlflow+http://h:1", buf, sizeof buf), 0);
    ASSERT_STR_EQ(buf, "/env/r.sqlite");
    unsetenv("KILN_RESULTS");
    rt_results *rs = NULL;
    rt_error err = {0};
    ASSERT_EQ(rt_results_open("mlflow+ftp://h", &rs, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "mlflow+http://");
    unsetenv("XDG_DATA_HOME");
    ASSERT_EQ(rt_results_status_parse("finished"), RT_RESULTS_FINISHED);
    ASSERT_EQ(rt_results_status_parse("done"), -1);
}

static int g_warnings;
static char g_warning[1024];
static void on_warn(void *user, const char *msg)
{
    (void)user;
    g_warnings++;
    snprintf(g_warning, sizeof g_warning, "%s", msg);
}

/* No MLflow server listening: logging goes on at full speed, one warning, the local
 * store is complete and closing does not hang. */
T_TEST(t_mlflow_absent)
{
    char path[600];
    store_path(path, sizeof path, "mlflow-local.sqlite");
    rt_results_config cfg = {
        .path = path, .mlflow_url = "http://127.0.0.1:9", .mlflow_timeout_ms = 1000};
    rt_results *rs = NULL;
    rt_error err = {0};
    ASSERT_EQ(rt_results_open_config(&cfg, &rs, &err), RT_OK);
    rt_results_set_warn(rs, on_warn, NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int64_t run = log_run(rs, "remote", "0.1", 0.5, 3000, RT_RESULTS_FINISHED);
    ASSERT(run > 0);
    rt_results_close(rs);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    ASSERT(secs < 8.0); /* bounded by the close timeout, not by the server */
    ASSERT_EQ(g_warnings, 1);
    ASSERT_STR_CONTAINS(g_warning, "127.0.0.1:9");
    ASSERT_STR_CONTAINS(g_warning, path);
    ASSERT_EQ(rt_results_open(path, &rs, &err), RT_OK);
    rt_results_run r;
    ASSERT_EQ(rt_results_get_run(rs, run, &r, &err), RT_OK);
    ASSERT_EQ(r.status, RT_RESULTS_FINISHED);
    ASSERT_EQ(summary(&r, "loss")->count, 3000);
    rt_results_run_free(&r);
    rt_results_close(rs);
}

/* The store is private: directories made for it 0700, a new file 0600 (whatever the
 * umask). An export is 0600 too and goes through a random O_EXCL temporary name: a
 * symlink planted at the old predictable PATH.tmp-PID is not followed. */
T_TEST(t_files_private)
{
    char dir[700], path[800], out[800], planted[900], victim[800];
    snprintf(dir, sizeof dir, "%s/private/nested", g_dir);
    snprintf(path, sizeof path, "%s/results.sqlite", dir);
    mode_t old = umask(022);
    rt_results *rs = NULL;
    rt_error err = {0};
    ASSERT_EQ(rt_results_open(path, &rs, &err), RT_OK);
    ASSERT(log_run(rs, "p", "0.1", 0.5, 5, RT_RESULTS_FINISHED) > 0);
    struct stat st;
    ASSERT_EQ(stat(path, &st), 0);
    ASSERT_EQ(st.st_mode & 0777, 0600);
    ASSERT_EQ(stat(dir, &st), 0);
    ASSERT_EQ(st.st_mode & 0777, 0700);
    snprintf(out, sizeof out, "%s/export.csv", g_dir);
    snprintf(victim, sizeof victim, "%s/victim.txt", g_dir);
    FILE *v = fopen(victim, "w");
    ASSERT(v != NULL);
    fputs("keep me\n", v);
    fclose(v);
    snprintf(planted, sizeof planted, "%s.tmp-%ld", out, (long)getpid());
    ASSERT_EQ(symlink(victim, planted), 0);
    ASSERT_EQ(rt_results_export(rs, "csv", out, NULL, &err), RT_OK);
    char *text = tu_read_file(victim);
    ASSERT(text && !strcmp(text, "keep me\n"));
    free(text);
    ASSERT_EQ(stat(out, &st), 0);
    ASSERT_EQ(st.st_mode & 0777, 0600);
    unlink(planted);
    rt_results_close(rs);
    umask(old);
}

/* URLs lose their user-info before they are stored, shown or sent; credentials bound
 * for another host over plain http are warned about (no request is made: the mirror's
 * thread sends nothing before a run begins). */
T_TEST(t_credentials_redacted_and_plain_http_warned)
{
    char out[256];
    rt_results_redact("mlflow+http://alice:pw@x@host:5000/p?q=a@b", out, sizeof out);
    ASSERT_STR_EQ(out, "mlflow+http://host:5000/p?q=a@b");
    rt_results_redact("mlflow+https://host:5000", out, sizeof out);
    ASSERT_STR_EQ(out, "mlflow+https://host:5000");
    rt_results_redact("/data/user@site/results.sqlite", out, sizeof out);
    ASSERT_STR_EQ(out, "/data/user@site/results.sqlite");
    rtp_mlflow *m = NULL;
    rt_error err = {0};
    ASSERT_EQ(rtp_mlflow_create("http://alice:s3cret@192.0.2.7:5000/", "kiln", 1000,
                                "/tmp/x.sqlite", &m, &err),
              RT_OK);
    char *w = rtp_mlflow_take_warning(m);
    ASSERT(w != NULL);
    ASSERT_STR_CONTAINS(w, "plain http");
    ASSERT_STR_CONTAINS(w, "http://192.0.2.7:5000");
    ASSERT(strstr(w, "s3cret") == NULL && strstr(w, "alice") == NULL);
    free(w);
    rtp_mlflow_destroy(m, 0);
    ASSERT_EQ(rtp_mlflow_create("http://alice:s3cret@127.0.0.1:9", "kiln", 1000, "/tmp/x.sqlite",
                                &m, &err),
              RT_OK);
    ASSERT(rtp_mlflow_take_warning(m) == NULL); /* loopback: nothing leaves the box */
    rtp_mlflow_destroy(m, 0);
    ASSERT(rtp_mlflow_is_loopback("localhost") && rtp_mlflow_is_loopback("[::1]") &&
           !rtp_mlflow_is_loopback("10.0.0.1"));
}

/* Another connection holds the write lock (as another kernel committing would): the
 * training thread's log calls neither wait for it nor fail; the rows are written once
 * the lock is gone. (Were logging synchronous it would wait out the busy timeout and
 * return RT_EIO.) */
T_TEST(t_logging_never_waits_for_the_lock)
{
    char path[600];
    store_path(path, sizeof path, "locked.sqlite");
    rt_results *rs = NULL;
    rt_error err = {0};
    ASSERT_EQ(rt_results_open(path, &rs, &err), RT_OK);
    int64_t run = 0;
    ASSERT_EQ(rt_results_run_begin(rs, NULL, &run, &err), RT_OK);
    sqlite3 *other = NULL;
    ASSERT_EQ(sqlite3_open(path, &other), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    int all_ok = 1;
    for (int s = 1; s <= 5000; s++)
        all_ok &= rt_results_log_metric(rs, run, "loss", s, s, 0, RT_RESULTS_STEP, &err) == RT_OK;
    ASSERT(all_ok);
    sqlite3_stmt *st = NULL;
    ASSERT_EQ(sqlite3_prepare_v2(other, "SELECT count(*) FROM metrics", -1, &st, NULL), SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    ASSERT_EQ(sqlite3_column_int(st, 0), 0); /* nothing got through the lock */
    sqlite3_finalize(st);
    ASSERT_EQ(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(other);
    ASSERT_EQ(rt_results_run_end(rs, run, RT_RESULTS_FINISHED, &err), RT_OK);
    rt_results_run r;
    ASSERT_EQ(rt_results_get_run(rs, run, &r, &err), RT_OK);
    long count = r.nmetrics ? r.metrics[0].count : 0;
    rt_results_run_free(&r);
    ASSERT_EQ(count, 5000);
    rt_results_close(rs);
}

int main(void)
{
    if (tu_tmpdir(g_dir, sizeof g_dir) != 0) {
        perror("mkdtemp");
        return 99;
    }
    T_RUN(t_roundtrip);
    T_RUN(t_nan_kept);
    T_RUN(t_list_filter_sort);
    T_RUN(t_not_sqlite);
    T_RUN(t_replace_refuses_a_hostile_store);
    T_RUN(t_unwritable);
    T_RUN(t_unknown_run);
    T_RUN(t_kill9_interrupted);
    T_RUN(t_export);
    T_RUN(t_delete);
    T_RUN(t_spec_resolution);
    T_RUN(t_mlflow_absent);
    T_RUN(t_credentials_redacted_and_plain_http_warned);
    T_RUN(t_files_private);
    T_RUN(t_logging_never_waits_for_the_lock);
    int rc = T_EXIT();
    if (rc == 0) tu_rmtree(g_dir);
    else fprintf(stderr, "kept %s for inspection\n", g_dir);
    return rc;
}
