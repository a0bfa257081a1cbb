/* rt_results_query.c - reading runs back: one run complete, lists with filters and
 * sorting, metric series, run references, delete.
 *
 * Lists load every run of the wanted status with its parameters and metric
 * summaries, then filter and sort in C: a store holds hundreds of runs, not
 * millions, and the where/sort keys may be run fields, parameters or metrics alike.
 */
#include "rt_results_internal.h"
#include "rt_results_query.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void kv_free(rt_results_kv *kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(kv[i].key);
        free(kv[i].value);
    }
    free(kv);
}

void rt_results_run_free(rt_results_run *r)
{
    if (!r) return;
    char *fields[] = {r->name,         r->notebook, r->device,     r->precision,
                      r->kiln_version, r->dataset,  r->model_spec, r->host};
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) free(fields[i]);
    kv_free(r->params, r->nparams);
    for (size_t i = 0; i < r->nmetrics; i++) free(r->metrics[i].key);
    free(r->metrics);
    for (size_t i = 0; i < r->nckpts; i++) {
        free(r->ckpts[i].path);
        free(r->ckpts[i].metric);
    }
    free(r->ckpts);
    memset(r, 0, sizeof *r);
}

void rt_results_list_free(rt_results_list *l)
{
    if (!l) return;
    for (size_t i = 0; i < l->n; i++) rt_results_run_free(&l->runs[i]);
    free(l->runs);
    l->runs = NULL;
    l->n = 0;
}

/* Grows *arr (elements of size sz, n of them, filled from empty by this function only) to
 * hold n + 1: its capacity doubles from 8 whenever n reaches a power of two. */
static int grow(void *arr, size_t n, size_t sz)
{
    if (n && (n < 8 || (n & (n - 1)))) return 0;
    void *p = realloc(*(void **)arr, (n ? 2 * n : 8) * sz);
    if (!p) return -1;
    *(void **)arr = p;
    return 0;
}

void rtp_fill_run(sqlite3_stmt *st, rt_results_run *r)
{
    r->id = sqlite3_column_int64(st, 0);
    char **fields[] = {&r->name,         &r->notebook, &r->device,     &r->precision,
                       &r->kiln_version, &r->dataset,  &r->model_spec, &r->host};
    for (int i = 0; i < 8; i++) *fields[i] = rtp_col_dup(st, i + 1);
    r->pid = (long)sqlite3_column_int64(st, 9);
    int s = rt_results_status_parse((const char *)sqlite3_column_text(st, 10));
    r->status = s < 0 ? RT_RESULTS_FAILED : (rt_results_status)s;
    r->start_time = sqlite3_column_double(st, 11);
    r->end_time = sqlite3_column_double(st, 12);
}

rt_status rtp_load_details(rt_results *rs, rt_results_run *r, int with_ckpts, rt_error *err)
{
    sqlite3_stmt *st = NULL, *last = NULL;
    RT_TRY(rtp_prepare(rs->db, "SELECT key, value FROM params WHERE run_id = ? ORDER BY key", &st,
                       err));
    sqlite3_bind_int64(st, 1, r->id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (grow(&r->params, r->nparams, sizeof *r->params)) goto oom;
        r->params[r->nparams].key = rtp_col_dup(st, 0);
        r->params[r->nparams++].value = rtp_col_dup(st, 1);
    }
    sqlite3_finalize(st);
    RT_TRY(rtp_prepare(rs->db,
                       "SELECT key, kind, count(*), min(value), max(value) FROM "
                       "metrics WHERE run_id = ? GROUP BY key, kind ORDER BY key, kind",
                       &st, err));
    if (rtp_prepare(rs->db,
                    "SELECT value, step, epoch FROM metrics WHERE run_id = ? AND "
                    "key = ? AND kind = ? ORDER BY step DESC, epoch DESC, rowid DESC "
                    "LIMIT 1",
                    &last, err) != RT_OK) {
        sqlite3_finalize(st);
        return RT_EIO;
    }
    sqlite3_bind_int64(st, 1, r->id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (grow(&r->metrics, r->nmetrics, sizeof *r->metrics)) goto oom;
        rt_results_summary *m = &r->metrics[r->nmetrics++];
        m->key = rtp_col_dup(st, 0);
        m->kind = (rt_results_kind)sqlite3_column_int(st, 1);
        m->count = (long)sqlite3_column_int64(st, 2);
        m->min = rtp_col_double(st, 3);
        m->max = rtp_col_double(st, 4);
        sqlite3_bind_int64(last, 1, r->id);
        sqlite3_bind_text(last, 2, m->key, -1, SQLITE_STATIC);
        sqlite3_bind_int(last, 3, (int)m->kind);
        m->last = NAN;
        if (sqlite3_step(last) == SQLITE_ROW) {
            m->last = rtp_col_double(last, 0);
            m->last_step = sqlite3_column_int64(last, 1);
            m->last_epoch = sqlite3_column_int(last, 2);
        }
        sqlite3_reset(last);
    }
    sqlite3_finalize(st);
    sqlite3_finalize(last);
    st = last = NULL;
    if (!with_ckpts) return RT_OK;
    RT_TRY(rtp_prepare(rs->db,
                       "SELECT path, step, epoch, metric, metric_value, time FROM "
                       "checkpoints WHERE run_id = ? ORDER BY rowid",
                       &st, err));
    sqlite3_bind_int64(st, 1, r->id);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (grow(&r->ckpts, r->nckpts, sizeof *r->ckpts)) goto oom;
        rt_results_ckpt *c = &r->ckpts[r->nckpts++];
        c->path = rtp_col_dup(st, 0);
        c->step = sqlite3_column_int64(st, 1);
        c->epoch = sqlite3_column_int(st, 2);
        c->metric = rtp_col_dup(st, 3);
        c->metric_value = rtp_col_double(st, 4);
        c->time = sqlite3_column_double(st, 5);
    }
    sqlite3_finalize(st);
    return RT_OK;
oom:
    sqlite3_finalize(st);
    sqlite3_finalize(last);
    return RT_ERR(err, RT_ENOMEM, "results: out of memory");
}

/* RT_ENOTFOUND for a run id the store does not hold. */
static rt_status no_run(const rt_results *rs, int64_t run_id, rt_error *err)
{
    return RT_ERR(err, RT_ENOTFOUND,
                  "no run %lld in the results store %s ---> HINT: %%results list shows the runs",
                  (long long)run_id, rs->path);
}

rt_status rt_results_get_run(rt_results *rs, int64_t run_id, rt_results_run *out, rt_error *err)
{
    memset(out, 0, sizeof *out);
    sqlite3_stmt *st = NULL;
    RT_TRY(rtp_prepare(rs->db, "SELECT " RTP_RUN_COLS " FROM runs WHERE id = ?", &st, err));
    sqlite3_bind_int64(st, 1, run_id);
    int found = sqlite3_step(st) == SQLITE_ROW;
    if (found) rtp_fill_run(st, out);
    sqlite3_finalize(st);
    if (!found) return no_run(rs, run_id, err);
    rt_status s = rtp_load_details(rs, out, 1, err);
    if (s != RT_OK) rt_results_run_free(out);
    return s;
}

rt_status rt_results_find(rt_results *rs, const char *ref, int64_t *run_id, rt_error *err)
{
    *run_id = 0;
    if (!ref || !*ref) return RT_ERR(err, RT_EINVAL, "results: which run? give an id or name");
    char *end = NULL;
    long long id = strtoll(ref, &end, 10);
    sqlite3_stmt *st = NULL;
    const char *sql = *end == '\0'               ? "SELECT id FROM runs WHERE id = ?"
                      : strcmp(ref, "last") == 0 ? "SELECT max(id) FROM runs HAVING count(*) > 0"
                                                 : "SELECT max(id) FROM runs WHERE name = ? "
                                                   "HAVING count(*) > 0";
    RT_TRY(rtp_prepare(rs->db, sql, &st, err));
    if (*end == '\0') sqlite3_bind_int64(st, 1, id);
    else if (strcmp(ref, "last") != 0) sqlite3_bind_text(st, 1, ref, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW) *run_id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (*run_id <= 0)
        return RT_ERR(err, RT_ENOTFOUND,
                      "no run '%s' in the results store %s ---> HINT: "
                      "%%results list shows the runs",
                      ref, rs->path);
    return RT_OK;
}

rt_status rt_results_series(rt_results *rs, int64_t run_id, const char *key, rt_results_kind kind,
                            double **x, double **y, size_t *n, rt_error *err)
{
    *x = *y = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    RT_TRY(rtp_prepare(rs->db,
                       kind == RT_RESULTS_EPOCH
                           ? "SELECT epoch, value FROM metrics WHERE run_id = ? AND key = ? AND "
                             "kind = 1 ORDER BY epoch, step, rowid"
                           : "SELECT step, value FROM metrics WHERE run_id = ? AND key = ? AND "
                             "kind = 0 ORDER BY step, rowid",
                       &st, err));
    sqlite3_bind_int64(st, 1, run_id);
    sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (grow(x, *n, sizeof **x) || grow(y, *n, sizeof **y)) {
            sqlite3_finalize(st);
            free(*x);
            free(*y);
            *x = *y = NULL;
            *n = 0;
            return RT_ERR(err, RT_ENOMEM, "results: out of memory");
        }
        (*x)[*n] = sqlite3_column_double(st, 0);
        (*y)[(*n)++] = rtp_col_double(st, 1);
    }
    sqlite3_finalize(st);
    return RT_OK;
}

rt_status rt_results_delete(rt_results *rs, int64_t run_id, int force, rt_error *err)
{
    sqlite3_stmt *st = NULL;
    RT_TRY(rtp_prepare(rs->db, "SELECT status, host, pid, proc_start FROM runs WHERE id = ?", &st,
                       err));
    sqlite3_bind_int64(st, 1, run_id);
    int found = sqlite3_step(st) == SQLITE_ROW, alive = 0;
    long pid = found ? (long)sqlite3_column_int64(st, 2) : 0;
    if (found &&
        rt_results_status_parse((const char *)sqlite3_column_text(st, 0)) == RT_RESULTS_RUNNING)
        alive = rtp_proc_alive((const char *)sqlite3_column_text(st, 1), pid,
                               (const char *)sqlite3_column_text(st, 3));
    sqlite3_finalize(st);
    if (!found) return no_run(rs, run_id, err);
    if (alive != 0 && !force)
        return RT_ERR(err, RT_EINVAL,
                      "run %lld is still running (pid %ld); stop it first or "
                      "delete with --force",
                      (long long)run_id, pid);
    if (sqlite3_db_readonly(rs->db, "main") == 1)
        return RT_ERR(err, RT_EIO, "results store %s is read-only", rs->path);
    RT_TRY(rtp_prepare(rs->db, "DELETE FROM runs WHERE id = ?", &st, err));
    sqlite3_bind_int64(st, 1, run_id);
    rt_status s = RT_OK;
    if (sqlite3_step(st) != SQLITE_DONE)
        s = RT_ERR(err, RT_EIO, "results store %s: cannot delete run %lld: %s", rs->path,
                   (long long)run_id, sqlite3_errmsg(rs->db));
    sqlite3_finalize(st);
    return s;
}
