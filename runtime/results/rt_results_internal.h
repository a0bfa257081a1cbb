/* rt_results_internal.h - private to runtime/results/: the store handle, the
 * process identity used to detect dead runs, and the MLflow mirror's interface.
 */
#ifndef RT_RESULTS_INTERNAL_H
#define RT_RESULTS_INTERNAL_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_results.h"

#define RTP_RESULTS_SCHEMA_VERSION 1
#define RTP_RESULTS_BUSY_MS 10000

/* ---- process identity (rt_results_proc.c) ---- */

typedef struct rtp_proc_id {
    char host[256];
    long pid;
    char start[128]; /* "BOOTID:STARTTIME"; identifies the process across pid reuse */
} rtp_proc_id;

void rtp_proc_self(rtp_proc_id *id);
/* 1 = alive, 0 = certainly gone, -1 = cannot tell (another host). */
int rtp_proc_alive(const char *host, long pid, const char *start);
double rtp_now(void);     /* wall clock, unix seconds */
double rtp_mono_ms(void); /* monotonic milliseconds (coarse) */

/* ---- MLflow mirror (rt_results_mlflow.c) ---- */

/* 1 for localhost, 127.x.y.z and ::1: where plain http carries no secret off the box. */
int rtp_mlflow_is_loopback(const char *host);

typedef struct rtp_mlflow rtp_mlflow;
typedef struct rtp_metric_row {
    int64_t run;
    const char *key; /* interned in the store; the mirror copies what it keeps */
    double value;
    int64_t step;
    int epoch;
    int kind;
    double time;
} rtp_metric_row;

RT_MUST_USE rt_status rtp_mlflow_create(const char *url, const char *experiment, int timeout_ms,
                                        const char *local_path, rtp_mlflow **out, rt_error *err);
void rtp_mlflow_run_begin(rtp_mlflow *m, int64_t run, const rt_results_run_info *info,
                          double start_time, const char *host);
void rtp_mlflow_param(rtp_mlflow *m, int64_t run, const char *key, const char *value);
void rtp_mlflow_metrics(rtp_mlflow *m, const rtp_metric_row *rows, size_t n);
void rtp_mlflow_run_end(rtp_mlflow *m, int64_t run, rt_results_status status, double end_time);
/* A warning raised by the background thread since the last call (new string, free())
 * or NULL. Delivered by the store on the caller's thread. */
char *rtp_mlflow_take_warning(rtp_mlflow *m);
/* Waits up to wait_ms for queued requests, then aborts what is left and joins the
 * thread (once; later calls return at once). Accepts NULL. */
void rtp_mlflow_stop(rtp_mlflow *m, int wait_ms);
/* Stops (as above) and frees. Accepts NULL. */
void rtp_mlflow_destroy(rtp_mlflow *m, int wait_ms);

/* ---- the metric writer thread (rt_results_writer.c) ---- */

typedef struct rtp_writer rtp_writer;
/* Opens its own connection to the (existing) store at path; mirror may be NULL. */
RT_MUST_USE rt_status rtp_writer_create(const char *path, rtp_mlflow *mirror, rtp_writer **out,
                                        rt_error *err);
/* Hands rows (malloc'd array of n, keys borrowed until destroy) to the thread, which
 * frees it. -1 when the queue is full (rows dropped, warning queued). Never blocks
 * on I/O. */
int rtp_writer_submit(rtp_writer *w, rtp_metric_row *rows, size_t n);
/* Waits until everything submitted is committed; RT_EIO when a fresh attempt failed. */
RT_MUST_USE rt_status rtp_writer_sync(rtp_writer *w, rt_error *err);
/* A warning from the thread (new string, free()) or NULL. */
char *rtp_writer_take_warning(rtp_writer *w);
/* Makes a last attempt, stops, frees. Returns the number of rows never written. */
size_t rtp_writer_destroy(rtp_writer *w);

/* ---- the handle (rt_results.c) ---- */

struct rt_results {
    sqlite3 *db;
    char path[4096];
    int readonly;
    rtp_proc_id self;
    rt_results_warn_fn warn;
    void *warn_user;
    unsigned warned; /* bit per warning kind, each given once */
    /* interned metric keys: pending rows point into these */
    char **keys;
    size_t nkeys, capkeys;
    rtp_metric_row *pending;
    size_t npending, cappending;
    double last_flush_ms;
    rtp_writer *writer;
    int64_t *open_runs; /* begun here, not yet ended */
    size_t nopen, capopen;
    rtp_mlflow *mlflow;
};

enum { RTP_WARN_FLUSH = 1u, RTP_WARN_MLFLOW = 2u, RTP_WARN_LOST = 4u };
void rtp_results_warn(rt_results *rs, unsigned kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- schema (rt_results_schema.c) ---- */

/* Opens path with WAL and the busy timeout, creates or checks the schema. */
RT_MUST_USE rt_status rtp_schema_open(const char *path, int readonly, sqlite3 **db, rt_error *err);
/* Marks running runs of dead processes on this host as interrupted. */
RT_MUST_USE rt_status rtp_schema_repair(sqlite3 *db, rt_error *err);
/* Runs one statement with no result rows; RT_EIO with the SQLite message. */
RT_MUST_USE rt_status rtp_exec(sqlite3 *db, const char *sql, rt_error *err);
/* Prepares sql; RT_EIO with the message on failure. */
RT_MUST_USE rt_status rtp_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, rt_error *err);
/* strdup of a column's text, or NULL for SQL NULL. */
char *rtp_col_dup(sqlite3_stmt *st, int col);
/* A column as double; SQL NULL is NaN (SQLite stores NaN as NULL). */
double rtp_col_double(sqlite3_stmt *st, int col);

/* ---- queries (rt_results_query.c) ---- */

struct rt_results_run;
#define RTP_RUN_COLS                                                 \
    "id, name, notebook, device, precision, kiln_version, dataset, " \
    "model_spec, host, pid, status, start_time, end_time"
/* Fills r's fields from a row selected with RTP_RUN_COLS. */
void rtp_fill_run(sqlite3_stmt *st, struct rt_results_run *r);
/* Loads params, metric summaries and (with_ckpts) checkpoints of r->id. */
RT_MUST_USE rt_status rtp_load_details(rt_results *rs, struct rt_results_run *r, int with_ckpts,
                                       rt_error *err);

#endif
