/* rt_results.c - the writer side of the results store: open/close, runs, parameters,
 * buffered metrics, checkpoints.
 *
 * Metrics are appended to an in-memory buffer (keys interned, so a log call costs no
 * allocation once a key is known); every RT_RESULTS_FLUSH_ROWS rows or
 * RT_RESULTS_FLUSH_MS the buffer is handed to the writer thread (rt_results_writer.c),
 * which commits it in one transaction and then passes it to the MLflow mirror. The
 * caller never waits for SQLite while logging metrics; run_end, flush and close wait
 * until everything is written. Parameters, run begin/end and checkpoints are rare and
 * written at once on the caller's connection.
 */
#include "rt_results_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_config.h"

const char *rt_results_status_name(rt_results_status s)
{
    switch (s) {
    case RT_RESULTS_RUNNING: return "running";
    case RT_RESULTS_FINISHED: return "finished";
    case RT_RESULTS_INTERRUPTED: return "interrupted";
    case RT_RESULTS_FAILED: return "failed";
    }
    return "unknown";
}

int rt_results_status_parse(const char *name)
{
    for (int s = RT_RESULTS_RUNNING; s <= RT_RESULTS_FAILED; s++)
        if (name && strcmp(name, rt_results_status_name((rt_results_status)s)) == 0) return s;
    return -1;
}

static void default_warn(void *user, const char *msg)
{
    (void)user;
    fprintf(stderr, "kiln: results: %s\n", msg);
}

void rtp_results_warn(rt_results *rs, unsigned kind, const char *fmt, ...)
{
    if (rs->warned & kind) return;
    rs->warned |= kind;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    rs->warn(rs->warn_user, msg);
}

void rt_results_set_warn(rt_results *rs, rt_results_warn_fn fn, void *user)
{
    rs->warn = fn ? fn : default_warn;
    rs->warn_user = fn ? user : NULL;
}

const char *rt_results_path(const rt_results *rs) { return rs->path; }

void rt_results_redact(const char *spec, char *out, size_t n)
{
    if (!n) return;
    const char *s = spec ? spec : "", *auth = strstr(s, "://");
    if (!auth) {
        snprintf(out, n, "%s", s);
        return;
    }
    auth += 3;
    size_t alen = strcspn(auth, "/?#"); /* RFC 3986: the authority ends there */
    const char *at = NULL;
    for (size_t i = 0; i < alen; i++)
        if (auth[i] == '@') at = auth + i; /* the last one: a password may hold '@' */
    if (!at) snprintf(out, n, "%s", s);
    else snprintf(out, n, "%.*s%s", (int)(auth - s), s, at + 1);
}

int rt_results_resolve_path(const char *spec, char *buf, size_t n)
{
    if (!spec || !*spec || strncmp(spec, "mlflow+", 7) == 0) {
        const char *env = getenv("KILN_RESULTS");
        if (env && *env && strncmp(env, "mlflow+", 7) != 0) spec = env;
        else spec = NULL;
    }
    int w;
    if (spec) {
        w = snprintf(buf, n, "%s", spec);
    } else {
        const char *xdg = getenv("XDG_DATA_HOME"), *home = getenv("HOME");
        if (xdg && *xdg) w = snprintf(buf, n, "%s/kiln/results.sqlite", xdg);
        else if (home && *home) w = snprintf(buf, n, "%s/.local/share/kiln/results.sqlite", home);
        else w = snprintf(buf, n, "kiln-results.sqlite");
    }
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

rt_status rt_results_open(const char *spec, rt_results **out, rt_error *err)
{
    rt_results_config cfg = {0};
    if (!spec || !*spec) spec = getenv("KILN_RESULTS");
    if (spec && strncmp(spec, "mlflow+", 7) == 0) {
        char shown[1024];
        rt_results_redact(spec, shown, sizeof shown);
        if (strncmp(spec + 7, "http://", 7) != 0 && strncmp(spec + 7, "https://", 8) != 0)
            return RT_ERR(err, RT_EINVAL,
                          "results store '%s': expected mlflow+http://HOST:"
                          "PORT or mlflow+https://HOST:PORT",
                          shown);
        cfg.mlflow_url = spec + 7;
    } else {
        cfg.path = spec;
    }
    return rt_results_open_config(&cfg, out, err);
}

/* A reader of a file with no tables yet: a store that a writer is creating (its file
 * exists before its schema commits) reads as no store at all (RT_ENOTFOUND, which
 * %results shows as "no runs yet"), not as "no such table" on the first query. */
static rt_status has_schema(sqlite3 *db, const char *path, rt_error *err)
{
    sqlite3_stmt *st = NULL;
    RT_TRY(rtp_prepare(
        db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'runs'", &st, err));
    int n = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    sqlite3_finalize(st);
    if (n < 0)
        return RT_ERR(err, RT_EIO, "cannot read results store %s: %s", path, sqlite3_errmsg(db));
    if (n == 0)
        return RT_ERR(err, RT_ENOTFOUND, "no runs recorded yet in %s (it is being created)", path);
    return RT_OK;
}

rt_status rt_results_open_config(const rt_results_config *cfg, rt_results **out, rt_error *err)
{
    *out = NULL;
    rt_results *rs = calloc(1, sizeof *rs);
    if (!rs) return RT_ERR(err, RT_ENOMEM, "results store: out of memory");
    rt_results_set_warn(rs, NULL, NULL);
    rs->readonly = cfg->readonly;
    rtp_proc_self(&rs->self);
    rs->last_flush_ms = rtp_mono_ms();
    if (rt_results_resolve_path(cfg->path, rs->path, sizeof rs->path) != 0) {
        free(rs);
        return RT_ERR(err, RT_EINVAL, "results store path too long");
    }
    rt_status s = rtp_schema_open(rs->path, rs->readonly, &rs->db, err);
    if (s == RT_OK && rs->readonly) s = has_schema(rs->db, rs->path, err);
    if (s == RT_OK && !sqlite3_db_readonly(rs->db, "main")) s = rtp_schema_repair(rs->db, err);
    if (s == RT_OK && !rs->readonly && cfg->mlflow_url) {
        const char *exp = cfg->experiment ? cfg->experiment : getenv("KILN_MLFLOW_EXPERIMENT");
        s = rtp_mlflow_create(cfg->mlflow_url, exp && *exp ? exp : "kiln",
                              cfg->mlflow_timeout_ms > 0 ? cfg->mlflow_timeout_ms : 5000, rs->path,
                              &rs->mlflow, err);
    }
    if (s == RT_OK && !rs->readonly) s = rtp_writer_create(rs->path, rs->mlflow, &rs->writer, err);
    if (s != RT_OK) {
        rt_results_close(rs);
        return s;
    }
    *out = rs;
    return RT_OK;
}

static void take_mlflow_warning(rt_results *rs)
{
    char *w = rs->mlflow ? rtp_mlflow_take_warning(rs->mlflow) : NULL;
    if (w) rtp_results_warn(rs, RTP_WARN_MLFLOW, "%s", w);
    free(w);
}

static void take_writer_warning(rt_results *rs)
{
    char *w = rs->writer ? rtp_writer_take_warning(rs->writer) : NULL;
    if (w) rtp_results_warn(rs, RTP_WARN_FLUSH, "%s", w);
    free(w);
}

/* Hands the buffer to the writer thread; a new buffer is allocated on the next log. */
static void submit(rt_results *rs)
{
    rs->last_flush_ms = rtp_mono_ms();
    take_mlflow_warning(rs);
    take_writer_warning(rs);
    if (rs->npending == 0 || !rs->writer) return;
    rtp_writer_submit(rs->writer, rs->pending, rs->npending);
    rs->pending = NULL;
    rs->npending = rs->cappending = 0;
}

rt_status rt_results_flush(rt_results *rs, rt_error *err)
{
    if (!rs || !rs->writer) return RT_OK;
    submit(rs);
    rt_status s = rtp_writer_sync(rs->writer, err);
    take_writer_warning(rs);
    take_mlflow_warning(rs);
    return s;
}

static int is_open_run(const rt_results *rs, int64_t run)
{
    for (size_t i = 0; i < rs->nopen; i++)
        if (rs->open_runs[i] == run) return 1;
    return 0;
}

static void forget_open_run(rt_results *rs, int64_t run)
{
    for (size_t i = 0; i < rs->nopen; i++)
        if (rs->open_runs[i] == run) {
            rs->open_runs[i] = rs->open_runs[--rs->nopen];
            return;
        }
}

static const char *intern_key(rt_results *rs, const char *key)
{
    for (size_t i = rs->nkeys; i-- > 0;)
        if (strcmp(rs->keys[i], key) == 0) return rs->keys[i];
    if (rs->nkeys == rs->capkeys) {
        size_t cap = rs->capkeys ? rs->capkeys * 2 : 16;
        char **k = realloc(rs->keys, cap * sizeof *k);
        if (!k) return NULL;
        rs->keys = k;
        rs->capkeys = cap;
    }
    char *dup = strdup(key);
    if (!dup) return NULL;
    rs->keys[rs->nkeys++] = dup;
    return dup;
}

rt_status rt_results_log_metric(rt_results *rs, int64_t run, const char *key, double value,
                                int64_t step, int epoch, rt_results_kind kind, rt_error *err)
{
    if (!rs || rs->readonly || run <= 0 || !key || !*key)
        return RT_ERR(err, RT_EINVAL,
                      "results: log_metric needs an open store, a run and "
                      "a key");
    if (!is_open_run(rs, run))
        return RT_ERR(err, RT_EINVAL,
                      "results: run %lld was not begun (or resumed) with "
                      "this store handle",
                      (long long)run);
    const char *k = intern_key(rs, key);
    if (!k) return RT_ERR(err, RT_ENOMEM, "results: out of memory");
    if (rs->npending == rs->cappending) {
        size_t cap = rs->cappending ? rs->cappending * 2 : RT_RESULTS_FLUSH_ROWS;
        rtp_metric_row *p = realloc(rs->pending, cap * sizeof *p);
        if (!p) return RT_ERR(err, RT_ENOMEM, "results: out of memory");
        rs->pending = p;
        rs->cappending = cap;
    }
    double now_ms = rtp_mono_ms();
    rs->pending[rs->npending++] =
        (rtp_metric_row){run, k, value, step, epoch, (int)kind, rtp_now()};
    if (rs->npending >= RT_RESULTS_FLUSH_ROWS || now_ms - rs->last_flush_ms >= RT_RESULTS_FLUSH_MS)
        submit(rs);
    return RT_OK;
}

static rt_status reserve_open_run(rt_results *rs, rt_error *err)
{
    if (rs->nopen < rs->capopen) return RT_OK;
    size_t cap = rs->capopen ? rs->capopen * 2 : 4;
    int64_t *p = realloc(rs->open_runs, cap * sizeof *p);
    if (!p) return RT_ERR(err, RT_ENOMEM, "results: out of memory");
    rs->open_runs = p;
    rs->capopen = cap;
    return RT_OK;
}

rt_status rt_results_run_begin(rt_results *rs, const rt_results_run_info *info, int64_t *run_id,
                               rt_error *err)
{
    static const rt_results_run_info none = {0};
    if (!info) info = &none;
    *run_id = 0;
    if (!rs || rs->readonly) return RT_ERR(err, RT_EINVAL, "results: store opened read-only");
    RT_TRY(reserve_open_run(rs, err));
    sqlite3_stmt *st = NULL;
    RT_TRY(rtp_prepare(rs->db,
                       "INSERT INTO runs(name, notebook, status, start_time, device,"
                       " precision, kiln_version, dataset, model_spec, host, pid, proc_start)"
                       " VALUES(?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       &st, err));
    double now = rtp_now();
    const char *text[] = {info->name, info->notebook};
    for (int i = 0; i < 2; i++) sqlite3_bind_text(st, i + 1, text[i], -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 3, now);
    const char *more[] = {info->device,  info->precision,  KILN_VERSION,
                          info->dataset, info->model_spec, rs->self.host};
    for (int i = 0; i < 6; i++) sqlite3_bind_text(st, i + 4, more[i], -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 10, rs->self.pid);
    sqlite3_bind_text(st, 11, rs->self.start, -1, SQLITE_STATIC);
    rt_status s = RT_OK;
    if (sqlite3_step(st) != SQLITE_DONE)
        s = RT_ERR(err, RT_EIO, "results store %s: cannot start a run: %s", rs->path,
                   sqlite3_errmsg(rs->db));
    sqlite3_finalize(st);
    if (s != RT_OK) return s;
    *run_id = sqlite3_last_insert_rowid(rs->db);
    rs->open_runs[rs->nopen++] = *run_id;
    if (rs->mlflow) rtp_mlflow_run_begin(rs->mlflow, *run_id, info, now, rs->self.host);
    return RT_OK;
}

/* Runs one prepared write with text/number bindings done by the caller. */
static rt_status step_write(rt_results *rs, sqlite3_stmt *st, const char *what, rt_error *err)
{
    rt_status s = RT_OK;
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE)
        s = RT_ERR(err, rc == SQLITE_CONSTRAINT ? RT_ENOTFOUND : RT_EIO,
                   "results store %s: cannot %s: %s", rs->path, what,
                   rc == SQLITE_CONSTRAINT ? "no such run" : sqlite3_errmsg(rs->db));
    sqlite3_finalize(st);
    return s;
}

rt_status rt_results_log_param(rt_results *rs, int64_t run, const char *key, const char *value,
                               rt_error *err)
{
    if (!rs || rs->readonly || !key || !*key)
        return RT_ERR(err, RT_EINVAL, "results: log_param needs an open store and a key");
    sqlite3_stmt *st = NULL;
    RT_TRY(rtp_prepare(rs->db, "INSERT OR REPLACE INTO params VALUES(?, ?, ?)", &st, err));
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, value ? value : "", -1, SQLITE_STATIC);
    RT_TRY(step_write(rs, st, "log a parameter", err));
    if (rs->mlflow) rtp_mlflow_param(rs->mlflow, run, key, value ? value : "");
    return RT_OK;
}

rt_status rt_results_log_checkpoint(rt_results *rs, int64_t run, const char *path, int64_t step,
                                    int epoch, const char *metric, double metric_value,
                                    rt_error *err)
{
    if (!rs || rs->readonly || !path)
        return RT_ERR(err, RT_EINVAL, "results: log_checkpoint needs an open store and a path");
    sqlite3_stmt *st = NULL;
    RT_TRY(rtp_prepare(rs->db, "INSERT INTO checkpoints VALUES(?, ?, ?, ?, ?, ?, ?)", &st, err));
    sqlite3_bind_int64(st, 1, run);
    sqlite3_bind_text(st, 2, path, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, step);
    sqlite3_bind_int(st, 4, epoch);
    sqlite3_bind_text(st, 5, metric, -1, SQLITE_STATIC);
    if (metric) sqlite3_bind_double(st, 6, metric_value);
    sqlite3_bind_double(st, 7, rtp_now());
    return step_write(rs, st, "record a checkpoint", err);
}

rt_status rt_results_run_resume(rt_results *rs, int64_t run, rt_error *err)
{
    if (!rs || rs->readonly) return RT_ERR(err, RT_EINVAL, "results: store opened read-only");
    if (is_open_run(rs, run)) return RT_OK;
    RT_TRY(reserve_open_run(rs, err));
    sqlite3_stmt *st = NULL;
    RT_TRY(rtp_prepare(rs->db,
                       "UPDATE runs SET status = 'running', end_time = NULL, "
                       "host = ?, pid = ?, proc_start = ? WHERE id = ?",
                       &st, err));
    sqlite3_bind_text(st, 1, rs->self.host, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, rs->self.pid);
    sqlite3_bind_text(st, 3, rs->self.start, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, run);
    RT_TRY(step_write(rs, st, "resume a run", err));
    if (sqlite3_changes(rs->db) == 0)
        return RT_ERR(err, RT_ENOTFOUND,
                      "results store %s has no run %lld ---> HINT: "
                      "%%results list shows the runs",
                      rs->path, (long long)run);
    rs->open_runs[rs->nopen++] = run;
    return RT_OK;
}

rt_status rt_results_run_end(rt_results *rs, int64_t run, rt_results_status status, rt_error *err)
{
    if (!rs || rs->readonly) return RT_ERR(err, RT_EINVAL, "results: store opened read-only");
    rt_status fs = rt_results_flush(rs, err);
    sqlite3_stmt *st = NULL;
    RT_TRY(rtp_prepare(rs->db, "UPDATE runs SET status = ?, end_time = ? WHERE id = ?", &st, err));
    double now = rtp_now();
    sqlite3_bind_text(st, 1, rt_results_status_name(status), -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 2, now);
    sqlite3_bind_int64(st, 3, run);
    RT_TRY(step_write(rs, st, "end a run", err));
    if (sqlite3_changes(rs->db) == 0)
        return RT_ERR(err, RT_ENOTFOUND, "results store %s has no run %lld", rs->path,
                      (long long)run);
    forget_open_run(rs, run);
    if (rs->mlflow) rtp_mlflow_run_end(rs->mlflow, run, status, now);
    return fs;
}

void rt_results_close(rt_results *rs)
{
    if (!rs) return;
    if (rs->db && rs->writer) {
        /* Rows a failed flush leaves behind are counted as lost and warned about when
         * the writer is destroyed below. */
        RT_IGNORE(rt_results_flush(rs, NULL));
        while (rs->nopen > 0) {
            size_t before = rs->nopen;
            int64_t run = rs->open_runs[rs->nopen - 1];
            rt_error e;
            if (rt_results_run_end(rs, run, RT_RESULTS_INTERRUPTED, &e) != RT_OK)
                rtp_results_warn(rs, RTP_WARN_FLUSH, "run %lld stays open in %s: %s",
                                 (long long)run, rs->path, e.msg);
            if (rs->nopen == before) rs->nopen--;
        }
    }
    if (rs->writer) {
        size_t lost = rtp_writer_destroy(rs->writer);
        rs->writer = NULL;
        if (lost)
            rtp_results_warn(rs, RTP_WARN_LOST,
                             "%zu metric rows could not be written to %s "
                             "and are lost",
                             lost, rs->path);
    }
    if (rs->mlflow) {
        /* How long closing waits for the MLflow queue to drain before giving up on a
         * slow server: 5 s by default, KILN_MLFLOW_FLUSH_S to change it (a batch job
         * that must mirror everything can afford to wait longer). */
        const char *flush = getenv("KILN_MLFLOW_FLUSH_S");
        double flush_s = flush && *flush ? strtod(flush, NULL) : 5.0;
        if (!(flush_s >= 0 && flush_s <= 3600)) flush_s = 5.0;
        rtp_mlflow_stop(rs->mlflow, (int)(flush_s * 1000));
        take_mlflow_warning(rs);
    }
    rtp_mlflow_destroy(rs->mlflow, 0);
    sqlite3_close(rs->db);
    for (size_t i = 0; i < rs->nkeys; i++) free(rs->keys[i]);
    free(rs->keys);
    free(rs->pending);
    free(rs->open_runs);
    free(rs);
}
