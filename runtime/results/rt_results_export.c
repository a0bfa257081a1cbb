/* rt_results_export.c - %results export: the runs of a query as CSV (one row a run,
 * for spreadsheets) or JSON (everything, every metric value, for programs).
 *
 * The file is written beside its destination under a random name created O_EXCL
 * (rt_file.c: no planted file or symlink is followed), fsync'd and renamed, mode 0600,
 * so an export that fails half way (disk full, bad run) leaves no half file and an
 * older export at PATH stays intact. JSON: NaN metric values become null.
 */
#include "rt_results_internal.h"
#include "rt_file.h"
#include "rt_results_query.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const run_fields[] = {"id",      "name",       "status",       "start",
                                         "end",     "duration_s", "device",       "precision",
                                         "dataset", "notebook",   "kiln_version", "host"};
#define NFIELDS (sizeof run_fields / sizeof *run_fields)

static void iso_time(double t, char *buf, size_t n)
{
    buf[0] = '\0';
    if (t <= 0) return;
    time_t s = (time_t)t;
    struct tm tm;
    if (gmtime_r(&s, &tm)) strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void rt_results_csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void csv_field(FILE *f, const char *s, int first)
{
    if (!first) fputc(',', f);
    if (s) rt_results_csv_field(f, s);
}

/* Adds key to the set names[] (no duplicates, in first-seen order). */
static int add_name(char ***names, size_t *n, const char *key)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*names)[i], key) == 0) return 0;
    char **p = realloc(*names, (*n + 1) * sizeof *p);
    if (!p) return -1;
    *names = p;
    p[(*n)++] = (char *)key;
    return 0;
}

static void run_field(const rt_results_run *r, size_t i, char *buf, size_t n)
{
    buf[0] = '\0';
    switch (i) {
    case 0: snprintf(buf, n, "%lld", (long long)r->id); break;
    case 1: snprintf(buf, n, "%s", r->name ? r->name : ""); break;
    case 2: snprintf(buf, n, "%s", rt_results_status_name(r->status)); break;
    case 3: iso_time(r->start_time, buf, n); break;
    case 4: iso_time(r->end_time, buf, n); break;
    case 5:
        if (r->end_time > 0) snprintf(buf, n, "%.3f", r->end_time - r->start_time);
        break;
    default: {
        const char *v[] = {r->device,   r->precision,    r->dataset,
                           r->notebook, r->kiln_version, r->host};
        snprintf(buf, n, "%s", v[i - 6] ? v[i - 6] : "");
    }
    }
}

static int write_csv(FILE *f, const rt_results_list *l)
{
    char **pk = NULL, **mk = NULL;
    size_t npk = 0, nmk = 0;
    int rc = 0;
    for (size_t i = 0; i < l->n && rc == 0; i++) {
        for (size_t j = 0; j < l->runs[i].nparams && rc == 0; j++)
            rc = add_name(&pk, &npk, l->runs[i].params[j].key);
        for (size_t j = 0; j < l->runs[i].nmetrics && rc == 0; j++)
            rc = add_name(&mk, &nmk, l->runs[i].metrics[j].key);
    }
    char buf[512], head[300];
    for (size_t i = 0; i < NFIELDS; i++) csv_field(f, run_fields[i], i == 0);
    for (size_t i = 0; i < npk; i++) {
        snprintf(head, sizeof head, "param:%s", pk[i]);
        csv_field(f, head, 0);
    }
    for (size_t i = 0; i < nmk; i++) {
        snprintf(head, sizeof head, "metric:%s", mk[i]);
        csv_field(f, head, 0);
    }
    fputs("\r\n", f);
    for (size_t i = 0; i < l->n && rc == 0; i++) {
        const rt_results_run *r = &l->runs[i];
        for (size_t j = 0; j < NFIELDS; j++) {
            run_field(r, j, buf, sizeof buf);
            csv_field(f, buf, j == 0);
        }
        for (size_t j = 0; j < npk; j++) {
            const char *v = NULL;
            for (size_t k = 0; k < r->nparams && !v; k++)
                if (strcmp(r->params[k].key, pk[j]) == 0) v = r->params[k].value;
            csv_field(f, v, 0);
        }
        for (size_t j = 0; j < nmk; j++) {
            double num;
            int is_num;
            csv_field(
                f, rt_results_run_value(r, mk[j], buf, sizeof buf, &num, &is_num) ? buf : NULL, 0);
        }
        fputs("\r\n", f);
    }
    free(pk);
    free(mk);
    return rc;
}

static json_t *jstr(const char *s) { return s ? json_string(s) : json_null(); }

static json_t *jnum(double v) { return isfinite(v) ? json_real(v) : json_null(); }

/* {"key", "kind", "steps", "epochs", "values"} for every series of run r. */
static rt_status json_metrics(rt_results *rs, int64_t run, json_t *out, rt_error *err)
{
    sqlite3_stmt *st = NULL;
    RT_TRY(rtp_prepare(rs->db,
                       "SELECT key, kind, step, epoch, value FROM metrics WHERE "
                       "run_id = ? ORDER BY key, kind, step, rowid",
                       &st, err));
    sqlite3_bind_int64(st, 1, run);
    json_t *cur = NULL;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *key = (const char *)sqlite3_column_text(st, 0);
        int kind = sqlite3_column_int(st, 1);
        if (!cur || strcmp(json_string_value(json_object_get(cur, "key")), key) != 0 ||
            json_integer_value(json_object_get(cur, "kind_id")) != kind) {
            if (cur) json_object_del(cur, "kind_id");
            cur = json_pack("{s:s, s:s, s:i, s:[], s:[], s:[]}", "key", key, "kind",
                            kind ? "epoch" : "step", "kind_id", kind, "steps", "epochs", "values");
            json_array_append_new(out, cur);
        }
        json_array_append_new(json_object_get(cur, "steps"),
                              json_integer(sqlite3_column_int64(st, 2)));
        json_array_append_new(json_object_get(cur, "epochs"),
                              json_integer(sqlite3_column_int(st, 3)));
        json_array_append_new(json_object_get(cur, "values"), jnum(rtp_col_double(st, 4)));
    }
    if (cur) json_object_del(cur, "kind_id");
    sqlite3_finalize(st);
    return RT_OK;
}

static rt_status write_json(rt_results *rs, FILE *f, const rt_results_list *l, rt_error *err)
{
    json_t *runs = json_array();
    for (size_t i = 0; i < l->n; i++) {
        const rt_results_run *r = &l->runs[i];
        rt_results_run full;
        RT_TRY(rt_results_get_run(rs, r->id, &full, err));
        json_t *params = json_object(), *metrics = json_array(), *ckpts = json_array();
        for (size_t j = 0; j < full.nparams; j++)
            json_object_set_new(params, full.params[j].key, jstr(full.params[j].value));
        for (size_t j = 0; j < full.nckpts; j++)
            json_array_append_new(
                ckpts, json_pack("{s:s, s:I, s:i, s:o, s:o, s:f}", "path", full.ckpts[j].path,
                                 "step", (json_int_t)full.ckpts[j].step, "epoch",
                                 full.ckpts[j].epoch, "metric", jstr(full.ckpts[j].metric), "value",
                                 jnum(full.ckpts[j].metric_value), "time", full.ckpts[j].time));
        json_t *o = json_pack(
            "{s:I, s:o, s:o, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o,"
            " s:I}",
            "id", (json_int_t)full.id, "name", jstr(full.name), "notebook", jstr(full.notebook),
            "status", rt_results_status_name(full.status), "start_time", jnum(full.start_time),
            "end_time", full.end_time > 0 ? jnum(full.end_time) : json_null(), "device",
            jstr(full.device), "precision", jstr(full.precision), "kiln_version",
            jstr(full.kiln_version), "dataset", jstr(full.dataset), "model_spec",
            jstr(full.model_spec), "host", jstr(full.host), "pid", (json_int_t)full.pid);
        rt_results_run_free(&full);
        rt_status s = o ? json_metrics(rs, r->id, metrics, err)
                        : RT_ERR(err, RT_ENOMEM, "results: out of memory");
        json_object_set_new(o, "params", params);
        json_object_set_new(o, "metrics", metrics);
        json_object_set_new(o, "checkpoints", ckpts);
        json_array_append_new(runs, o);
        if (s != RT_OK) {
            json_decref(runs);
            return s;
        }
    }
    json_t *doc =
        json_pack("{s:i, s:o}", "kiln_results_version", RTP_RESULTS_SCHEMA_VERSION, "runs", runs);
    int rc = doc ? json_dumpf(doc, f, JSON_INDENT(1) | JSON_SORT_KEYS) : -1;
    json_decref(doc);
    if (rc != 0) return RT_ERR(err, RT_EIO, "results: cannot write the JSON export");
    fputc('\n', f);
    return RT_OK;
}

rt_status rt_results_export(rt_results *rs, const char *format, const char *path,
                            const rt_results_query *q, rt_error *err)
{
    int csv = format && strcmp(format, "csv") == 0;
    if (!csv && !(format && strcmp(format, "json") == 0))
        return RT_ERR(err, RT_EINVAL, "export format '%s': expected csv or json",
                      format ? format : "");
    if (!path || !*path) return RT_ERR(err, RT_EINVAL, "export: which file? give a PATH");
    rt_results_list l;
    RT_TRY(rt_results_list_runs(rs, q, &l, err));
    rt_file w;
    rt_status s = rt_file_begin(&w, path, err);
    if (s != RT_OK) {
        rt_results_list_free(&l);
        return s;
    }
    FILE *f = w.f;
    if (csv) {
        if (write_csv(f, &l) != 0) s = RT_ERR(err, RT_ENOMEM, "results: out of memory");
    } else {
        s = write_json(rs, f, &l, err);
    }
    rt_results_list_free(&l);
    if (s != RT_OK) {
        rt_file_abort(&w);
        return s;
    }
    return rt_file_commit(&w, 0600, err); /* parameters can name hosts and paths */
}
