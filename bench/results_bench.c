/* results_bench.c - the Kiln side of bench/results_bench.py: cost of one logged
 * metric in the results store.
 *
 *   results_bench DIR N     prints "name ns_per_metric" lines:
 *   kiln_log_call       rt_results_log_metric as the training loop pays it (N values,
 *                       2 keys; batches are handed to the writer thread)
 *   kiln_log_total      the same up to everything committed (run_end waits for the
 *                       writer): the store's throughput
 *   kiln_log_call_mlflow_down / _total_  the same with the MLflow mirror pointed at a
 *                       closed port
 *   sqlite_autocommit   the naive way: one INSERT per value, autocommit, same WAL file
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "rt_results.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void bench_kiln(const char *path, const char *mlflow, long n, double *call, double *total)
{
    rt_results_config cfg = {.path = path, .mlflow_url = mlflow, .mlflow_timeout_ms = 500};
    rt_results *rs = NULL;
    rt_error err;
    int64_t run = 0;
    if (rt_results_open_config(&cfg, &rs, &err) != RT_OK ||
        rt_results_run_begin(rs, NULL, &run, &err) != RT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    rt_results_set_warn(rs, NULL, NULL);
    double t0 = now();
    for (long i = 0; i < n; i++)
        if (rt_results_log_metric(rs, run, i & 1 ? "acc" : "loss", 1.0 / (double)(i + 1), i / 2, 0,
                                  RT_RESULTS_STEP, &err) != RT_OK) {
            fprintf(stderr, "%s\n", err.msg);
            exit(1);
        }
    double t1 = now();
    if (rt_results_run_end(rs, run, RT_RESULTS_FINISHED, &err) != RT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        exit(1);
    }
    double t2 = now();
    rt_results_close(rs);
    *call = (t1 - t0) / (double)n * 1e9;
    *total = (t2 - t0) / (double)n * 1e9;
}

static double bench_autocommit(const char *path, long n)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_open(path, &db) != SQLITE_OK ||
        sqlite3_exec(db,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; CREATE TABLE "
                     "IF NOT EXISTS m(run_id, key, kind, step, epoch, value, time)",
                     NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO m VALUES(1, ?, 0, ?, 0, ?, 0)", -1, &st, NULL) !=
            SQLITE_OK) {
        fprintf(stderr, "sqlite: %s\n", sqlite3_errmsg(db));
        exit(1);
    }
    double t0 = now();
    for (long i = 0; i < n; i++) {
        sqlite3_bind_text(st, 1, i & 1 ? "acc" : "loss", -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, i / 2);
        sqlite3_bind_double(st, 3, 1.0 / (double)(i + 1));
        sqlite3_step(st);
        sqlite3_reset(st);
    }
    double t = now() - t0;
    sqlite3_finalize(st);
    sqlite3_close(db);
    return t / (double)n * 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: results_bench DIR N\n");
        return 2;
    }
    long n = atol(argv[2]);
    char a[4096], b[4096], c[4096];
    snprintf(a, sizeof a, "%s/bench-kiln-%d.sqlite", argv[1], (int)getpid());
    snprintf(b, sizeof b, "%s/bench-kiln-down-%d.sqlite", argv[1], (int)getpid());
    snprintf(c, sizeof c, "%s/bench-auto-%d.sqlite", argv[1], (int)getpid());
    double call, total;
    bench_kiln(a, NULL, n, &call, &total);
    printf("kiln_log_call %.1f\nkiln_log_total %.1f\n", call, total);
    bench_kiln(b, "http://127.0.0.1:9", n, &call, &total);
    printf("kiln_log_call_mlflow_down %.1f\nkiln_log_total_mlflow_down %.1f\n", call, total);
    printf("sqlite_autocommit %.1f\n", bench_autocommit(c, n / 10 > 0 ? n / 10 : 1));
    const char *files[] = {a, b, c};
    for (int i = 0; i < 3; i++) {
        char p[4200];
        unlink(files[i]);
        snprintf(p, sizeof p, "%s-wal", files[i]);
        unlink(p);
        snprintf(p, sizeof p, "%s-shm", files[i]);
        unlink(p);
    }
    return 0;
}
