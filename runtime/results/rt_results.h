/* rt_results.h - the results store: every training run, its parameters, metrics
 * and checkpoints, in one SQLite file (optionally mirrored to an MLflow server).
 *
 * For %train (the writer), the whole API is:
 *
 *     rt_results *rs;  int64_t run;  rt_error err;
 *     if (rt_results_open(spec, &rs, &err))          // spec: --results value or NULL
 *         -> report err.msg as a UsageError naming --results; do not start training
 *     rt_results_set_warn(rs, my_warn, ctx);         // optional: warnings to the cell
 *     rt_results_run_info info = {.name = "mnist", .device = "cpu", ...};
 *     rt_results_run_begin(rs, &info, &run, &err);
 *     rt_results_log_param(rs, run, "lr", "0.001", &err);       // every hyperparameter
 *     rt_results_log_metric(rs, run, "loss", 0.42, step, epoch, RT_RESULTS_STEP, &err);
 *     rt_results_log_metric(rs, run, "val_acc", 0.91, step, epoch, RT_RESULTS_EPOCH, &err);
 *     rt_results_log_checkpoint(rs, run, path, step, epoch, "val_acc", 0.91, &err);
 *     rt_results_run_end(rs, run, RT_RESULTS_FINISHED, &err);   // or INTERRUPTED / FAILED
 *     rt_results_close(rs);
 *
 * Where the store is: `spec` (e.g. %train --results PATH), else the environment
 * variable KILN_RESULTS, else $XDG_DATA_HOME/kiln/results.sqlite (default
 * ~/.local/share/kiln/results.sqlite). A spec "mlflow+http://HOST:PORT[/PREFIX]" (or
 * https) also sends every run to that MLflow tracking server (REST API 2.0, experiment
 * $KILN_MLFLOW_EXPERIMENT or "kiln") while the local default store is still written.
 *
 * Guarantees:
 * - Several processes may write one store at once (WAL mode, busy timeout, short
 *   BEGIN IMMEDIATE transactions). Metrics are buffered in memory and handed, every
 *   RT_RESULTS_FLUSH_ROWS rows or RT_RESULTS_FLUSH_MS milliseconds, to a writer thread
 *   that commits them in one transaction: a log call costs a few hundred nanoseconds
 *   and never waits for the disk or for another kernel holding the lock (see
 *   bench/results_bench.py). run_end, flush and close wait until all is written.
 * - A run whose process died (kill -9, OOM, the VM going away) is shown as
 *   "interrupted" the next time the store is opened on that host (pid + boot id +
 *   process start time are recorded, so a reused pid is not mistaken for the run).
 * - Bad input is a clear error, never a crash: a file that is not a Kiln store, a
 *   location that cannot be written, an unknown run. Decision: open problems are
 *   reported by rt_results_open BEFORE training starts (the caller refuses to train
 *   and names --results), so no run is silently unrecorded. Write failures during a
 *   run (disk full, a lock held for longer than the busy timeout) keep the rows queued
 *   for retry, warn once, and make run_end/flush return RT_EIO; training goes on.
 * - The MLflow mirror never slows or breaks training: it runs in a background thread
 *   with a bounded queue; an absent or failing server gives one warning and the
 *   local record stays complete. Epoch metrics are sent with step = epoch, so use
 *   distinct names for per-step and per-epoch series ("loss" vs "train_loss").
 * - NaN metric values are kept (stored as SQL NULL, read back as NaN).
 *
 * Not thread-safe: one rt_results per thread (open the same path twice if needed).
 * Query functions (list/get/series/delete/export) are in rt_results_query.h.
 */
#ifndef RT_RESULTS_H
#define RT_RESULTS_H

#include <stdint.h>

#include "rt_error.h"

#define RT_RESULTS_FLUSH_ROWS 1024
#define RT_RESULTS_FLUSH_MS 1000

typedef struct rt_results rt_results;

typedef enum {
    RT_RESULTS_RUNNING = 0,
    RT_RESULTS_FINISHED,
    RT_RESULTS_INTERRUPTED,
    RT_RESULTS_FAILED
} rt_results_status;

typedef enum { RT_RESULTS_STEP = 0, RT_RESULTS_EPOCH = 1 } rt_results_kind;

/* Describes a run at its start; every field may be NULL. Strings are copied. */
typedef struct rt_results_run_info {
    const char *name;       /* run_name, e.g. "mnist" */
    const char *notebook;   /* notebook path or name */
    const char *device;     /* "cpu", "cuda:0" */
    const char *precision;  /* "fp32", "bf16", "fp16" */
    const char *dataset;    /* "fashion-mnist" */
    const char *model_spec; /* the %%model text */
} rt_results_run_info;

/* Advanced opening: explicit local path and MLflow URL (both optional). */
typedef struct rt_results_config {
    const char *path;       /* local SQLite file; NULL = KILN_RESULTS or the default */
    const char *mlflow_url; /* "http://HOST:PORT" (no "mlflow+"); NULL = no mirror */
    const char *experiment; /* MLflow experiment; NULL = $KILN_MLFLOW_EXPERIMENT or "kiln" */
    int mlflow_timeout_ms;  /* per request; 0 = 5000 */
    int readonly;           /* for %results: the file must exist; queries and delete
                                only, no runs begun, no mirror */
} rt_results_config;

/* Opens (creating if needed) the store named by spec (see top). On success *out is a
 * new handle for rt_results_close. Errors: RT_EFORMAT (not a Kiln store), RT_EIO
 * (cannot create or write the location), RT_EINVAL (bad spec). */
RT_MUST_USE rt_status rt_results_open(const char *spec, rt_results **out, rt_error *err);
RT_MUST_USE rt_status rt_results_open_config(const rt_results_config *cfg, rt_results **out,
                                             rt_error *err);
/* Flushes, marks runs this handle began and did not end as interrupted, stops the
 * MLflow thread (waiting at most a few seconds for it), frees. Accepts NULL. */
void rt_results_close(rt_results *rs);

/* spec with the user-info (user:password@) of any URL in it removed, into out (size
 * n, truncated): what may be stored, shown or sent. A path comes back unchanged. */
void rt_results_redact(const char *spec, char *out, size_t n);

/* Where spec puts the local SQLite file: writes it to buf (size n). 0 or -1. */
int rt_results_resolve_path(const char *spec, char *buf, size_t n);
/* The store at path, with what is still in its write-ahead log, as one self-contained
 * SQLite file dest (replaced). RT_ENOTFOUND when there is no store at path. */
RT_MUST_USE rt_status rt_results_snapshot(const char *path, const char *dest, rt_error *err);
/* Replaces the contents of the store at path (created if needed) with those of src,
 * which must be a Kiln results store this Kiln reads, holding no trigger or view and
 * passing SQLite's quick check (else RT_EFORMAT, path untouched). Every connection
 * Kiln opens has SQLITE_DBCONFIG_DEFENSIVE on, trusted_schema off and no extension
 * loading, since a store may come from elsewhere (%results --pull). */
RT_MUST_USE rt_status rt_results_replace(const char *path, const char *src, rt_error *err);
/* The local file this handle writes (borrowed). */
const char *rt_results_path(const rt_results *rs);

/* Warnings (MLflow unreachable, a write retried later): fn(user, line). The default
 * prints "kiln: results: ..." to stderr. Each kind of warning is given once. */
typedef void (*rt_results_warn_fn)(void *user, const char *msg);
void rt_results_set_warn(rt_results *rs, rt_results_warn_fn fn, void *user);

/* Starts a run (status running, start time now, this host/pid). *run_id > 0. */
RT_MUST_USE rt_status rt_results_run_begin(rt_results *rs, const rt_results_run_info *info,
                                           int64_t *run_id, rt_error *err);
/* A parameter (text value; a later value for the same key replaces it). */
RT_MUST_USE rt_status rt_results_log_param(rt_results *rs, int64_t run, const char *key,
                                           const char *value, rt_error *err);
/* One metric value (buffered), for a run begun or resumed with this handle. step is the global step, epoch counts from 0 or 1 as
 * the caller likes; kind says which series the value belongs to. */
RT_MUST_USE rt_status rt_results_log_metric(rt_results *rs, int64_t run, const char *key,
                                            double value, int64_t step, int epoch,
                                            rt_results_kind kind, rt_error *err);
/* A checkpoint file written for the run, with the metric that judged it (may be NULL). */
RT_MUST_USE rt_status rt_results_log_checkpoint(rt_results *rs, int64_t run, const char *path,
                                                int64_t step, int epoch, const char *metric,
                                                double metric_value, rt_error *err);
/* Continues an earlier run (e.g. %resume in a new process): status back to running,
 * owned by this process. Metrics may then be logged to it. The MLflow mirror only
 * follows runs begun by this handle. RT_ENOTFOUND for an unknown id. */
RT_MUST_USE rt_status rt_results_run_resume(rt_results *rs, int64_t run, rt_error *err);
/* Ends a run: flushes its metrics, sets status and end time. */
RT_MUST_USE rt_status rt_results_run_end(rt_results *rs, int64_t run, rt_results_status status,
                                         rt_error *err);
/* Writes buffered rows now. */
RT_MUST_USE rt_status rt_results_flush(rt_results *rs, rt_error *err);

/* "running", "finished", "interrupted", "failed"; parse returns -1 when unknown. */
const char *rt_results_status_name(rt_results_status s);
int rt_results_status_parse(const char *name);

#endif
