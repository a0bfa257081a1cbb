/* mg_results_view.c - %results show RUN and %results compare RUN RUN...
 *
 * show: the run's fields, parameters, metric summary and checkpoints as tables, and
 * its curves (one chart for the per-step metrics, one for the per-epoch metrics).
 * compare: one chart per metric with a curve per run (SVG via mg_plot), then the
 * runs side by side - fields, parameters, last metric values - with the rows whose
 * values differ highlighted. --metric KEY[,KEY...] limits the charts.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mg_plot.h"
#include "mg_results_internal.h"

#define MAX_CHARTS 12

typedef struct series_buf {
    double *x, *y;
    size_t n;
    char label[160];
} series_buf;

static int wanted(char **metrics, size_t nm, const char *key)
{
    if (nm == 0) return 1;
    for (size_t i = 0; i < nm; i++)
        if (strcmp(metrics[i], key) == 0) return 1;
    return 0;
}

/* Emits text and HTML of a finished table into the two streams. */
static void emit_table(mgp_table *t, FILE *ft, FILE *fh, const char *title)
{
    if (title) {
        fprintf(ft, "\n%s\n", title);
        fputs("<h4 style=\"margin:8px 0 4px\">", fh);
        mgp_html(fh, title);
        fputs("</h4>\n", fh);
    }
    mgp_table_text(t, ft);
    mgp_table_html(t, fh, 0);
}

static void show_tables(mg_ctx *ctx, const rt_results_run *r, const char *store)
{
    char a[64], b[64], c[64];
    mgp_report rep;
    mgp_report_open(&rep);
    FILE *ft = rep.t, *fh = rep.h;
    if (!ft || !fh) goto out;
    fprintf(ft, "Run %lld  %s  (%s)\n", (long long)r->id, r->name ? r->name : "",
            rt_results_status_name(r->status));
    fprintf(fh, "<h3 style=\"margin:4px 0\">Run %lld &middot; ", (long long)r->id);
    mgp_html(fh, r->name ? r->name : "");
    fprintf(fh, " &middot; %s</h3>\n", rt_results_status_name(r->status));
    mgp_table t;
    if (mgp_table_init(&t, 2) == 0) {
        mgp_table_set(&t, 0, 0, "field");
        mgp_table_set(&t, 0, 1, "value");
        mgp_time(r->start_time, a, sizeof a);
        mgp_time(r->end_time, b, sizeof b);
        mgp_duration(r->end_time > 0 ? r->end_time - r->start_time : -1, c, sizeof c);
        char pid[300];
        snprintf(pid, sizeof pid, "%s (pid %ld)", r->host ? r->host : "?", r->pid);
        const char *k[] = {"notebook", "dataset",  "device", "precision", "started",
                           "ended",    "duration", "host",   "kiln",      "store"};
        const char *v[] = {r->notebook, r->dataset, r->device, r->precision,    a,
                           b,           c,          pid,       r->kiln_version, store};
        for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
            long row = mgp_table_add_row(&t);
            if (row < 0) break;
            mgp_table_set(&t, (size_t)row, 0, "%s", k[i]);
            mgp_table_set(&t, (size_t)row, 1, "%s", v[i] ? v[i] : "-");
        }
        emit_table(&t, ft, fh, NULL);
        mgp_table_deinit(&t);
    }
    if (r->nparams && mgp_table_init(&t, 2) == 0) {
        mgp_table_set(&t, 0, 0, "parameter");
        mgp_table_set(&t, 0, 1, "value");
        for (size_t i = 0; i < r->nparams; i++) {
            long row = mgp_table_add_row(&t);
            if (row < 0) break;
            mgp_table_set(&t, (size_t)row, 0, "%s", r->params[i].key);
            mgp_table_set(&t, (size_t)row, 1, "%s", r->params[i].value ? r->params[i].value : "");
        }
        emit_table(&t, ft, fh, "Parameters");
        mgp_table_deinit(&t);
    }
    if (r->nmetrics && mgp_table_init(&t, 6) == 0) {
        const char *head[] = {"metric", "per", "values", "last", "min", "max"};
        for (size_t c2 = 0; c2 < 6; c2++) mgp_table_set(&t, 0, c2, "%s", head[c2]);
        for (size_t i = 0; i < r->nmetrics; i++) {
            const rt_results_summary *m = &r->metrics[i];
            long row = mgp_table_add_row(&t);
            if (row < 0) break;
            mgp_number(m->last, a, sizeof a);
            mgp_number(m->min, b, sizeof b);
            mgp_number(m->max, c, sizeof c);
            mgp_table_set(&t, (size_t)row, 0, "%s", m->key);
            mgp_table_set(&t, (size_t)row, 1, "%s", m->kind == RT_RESULTS_EPOCH ? "epoch" : "step");
            mgp_table_set(&t, (size_t)row, 2, "%ld", m->count);
            mgp_table_set(&t, (size_t)row, 3, "%s", a);
            mgp_table_set(&t, (size_t)row, 4, "%s", b);
            mgp_table_set(&t, (size_t)row, 5, "%s", c);
        }
        emit_table(&t, ft, fh, "Metrics");
        mgp_table_deinit(&t);
    }
    if (r->nckpts && mgp_table_init(&t, 5) == 0) {
        /* rotation (--keep) deletes files the store still lists: say which are gone */
        const char *head[] = {"checkpoint", "step", "epoch", "metric", "file"};
        for (size_t c2 = 0; c2 < 5; c2++) mgp_table_set(&t, 0, c2, "%s", head[c2]);
        for (size_t i = 0; i < r->nckpts; i++) {
            long row = mgp_table_add_row(&t);
            if (row < 0) break;
            mgp_number(r->ckpts[i].metric_value, a, sizeof a);
            mgp_table_set(&t, (size_t)row, 0, "%s", r->ckpts[i].path);
            mgp_table_set(&t, (size_t)row, 1, "%lld", (long long)r->ckpts[i].step);
            mgp_table_set(&t, (size_t)row, 2, "%d", r->ckpts[i].epoch);
            if (r->ckpts[i].metric)
                mgp_table_set(&t, (size_t)row, 3, "%s=%s", r->ckpts[i].metric, a);
            struct stat sb;
            const char *p = r->ckpts[i].path;
            mgp_table_set(&t, (size_t)row, 4, "%s",
                          !p || strstr(p, "://") ? "-" /* an object store's: not looked up */
                          : stat(p, &sb) == 0    ? "present"
                                                 : "gone (deleted)");
        }
        emit_table(&t, ft, fh, "Checkpoints");
        mgp_table_deinit(&t);
    }
    if (r->model_spec && *r->model_spec) {
        fprintf(ft, "\nModel\n%s\n", r->model_spec);
        fputs("<h4 style=\"margin:8px 0 4px\">Model</h4><pre>", fh);
        mgp_html(fh, r->model_spec);
        fputs("</pre>\n", fh);
    }
out:
    mgp_report_show(ctx, &rep);
}

/* One chart of the given (run, key, kind) series; returns 0 or -1 on a store error. */
static int chart(mg_ctx *ctx, rt_results *rs, const int64_t *runs, const char *const *labels,
                 const char *const *keys, const rt_results_kind *kinds, size_t n, const char *title,
                 rt_error *e)
{
    series_buf *b = calloc(n, sizeof *b);
    mg_plot_series *s = calloc(n, sizeof *s);
    int rc = b && s ? 0 : -1;
    size_t points = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (rt_results_series(rs, runs[i], keys[i], kinds[i], &b[i].x, &b[i].y, &b[i].n, e))
            rc = -1;
        s[i] = (mg_plot_series){labels[i], b[i].x, b[i].y, b[i].n};
        points += b[i].n;
    }
    if (rc == 0 && points > 0) {
        int epoch = kinds[0] == RT_RESULTS_EPOCH;
        mg_plot_opts o = {.title = title, .xlabel = epoch ? "epoch" : "step"};
        char alt[300];
        snprintf(alt, sizeof alt, "<chart: %s>", title);
        mgp_display_svg(ctx, mg_plot_svg(s, (int)n, &o), alt);
    }
    for (size_t i = 0; b && i < n; i++) {
        free(b[i].x);
        free(b[i].y);
    }
    free(b);
    free(s);
    return rc;
}

int mgp_results_show(mg_ctx *ctx, rt_results *rs, const mg_args *a, mg_error *err)
{
    rt_error e = {0};
    rt_results_run r;
    if (mgp_load_run(rs, a->pos[1], &r, err) < 0) return -1;
    show_tables(ctx, &r, rt_results_path(rs));
    size_t nm = 0;
    char **metrics = mgp_option_list(a, "--metric", &nm);
    int rc = 0;
    for (int kind = RT_RESULTS_STEP; kind <= RT_RESULTS_EPOCH && rc == 0; kind++) {
        int64_t runs[MAX_CHARTS];
        const char *keys[MAX_CHARTS];
        rt_results_kind kinds[MAX_CHARTS];
        size_t n = 0;
        for (size_t i = 0; i < r.nmetrics && n < MAX_CHARTS; i++)
            if ((int)r.metrics[i].kind == kind && wanted(metrics, nm, r.metrics[i].key)) {
                runs[n] = r.id;
                keys[n] = r.metrics[i].key;
                kinds[n++] = (rt_results_kind)kind;
            }
        if (n && chart(ctx, rs, runs, keys, keys, kinds, n,
                       kind == RT_RESULTS_EPOCH ? "per epoch" : "per step", &e) < 0)
            rc = mgp_fail_rt(err, &e);
    }
    mgp_strv_free(metrics);
    rt_results_run_free(&r);
    return rc;
}

/* The value of row key `key` (field, parameter or metric) for run r, or "-". */
static void compare_cell(const rt_results_run *r, const char *key, int metric, char *buf, size_t n)
{
    double num;
    int is_num;
    if (!rt_results_run_value(r, key, buf, n, &num, &is_num)) snprintf(buf, n, "-");
    else if (metric) snprintf(buf, n, "%.6g", num); /* enough digits to see a difference */
}

/* Rows: fields, then the union of parameters, then the union of metrics. */
static void compare_table(mg_ctx *ctx, const rt_results_run *runs, size_t nr)
{
    mgp_table t;
    if (mgp_table_init(&t, nr + 1) != 0) return;
    mgp_table_set(&t, 0, 0, "run");
    for (size_t j = 0; j < nr; j++)
        mgp_table_set(&t, 0, j + 1, "#%lld %s", (long long)runs[j].id,
                      runs[j].name ? runs[j].name : "");
    static const char *const fields[] = {"status", "device", "precision", "dataset", "duration"};
    const char **keys = NULL;
    unsigned char *is_metric = NULL;
    size_t nk = 0, cap = 0;
    for (size_t f = 0; f < sizeof fields / sizeof *fields + 2; f++) {
        /* pass 0..4: fields; 5: parameters; 6: metrics */
        for (size_t j = 0; j < (f < 5 ? 1 : nr); j++) {
            size_t cnt = f < 5 ? 1 : f == 5 ? runs[j].nparams : runs[j].nmetrics;
            for (size_t i = 0; i < cnt; i++) {
                const char *k = f < 5    ? fields[f]
                                : f == 5 ? runs[j].params[i].key
                                         : runs[j].metrics[i].key;
                int seen = 0;
                for (size_t x = 0; x < nk && !seen; x++) seen = strcmp(keys[x], k) == 0;
                if (seen) continue;
                if (nk == cap) {
                    cap = cap ? cap * 2 : 32;
                    const char **p = realloc(keys, cap * sizeof *p);
                    unsigned char *q = realloc(is_metric, cap);
                    if (p) keys = p;
                    if (q) is_metric = q;
                    if (!p || !q) goto done;
                }
                is_metric[nk] = f == 6;
                keys[nk++] = k;
            }
        }
    }
    for (size_t i = 0; i < nk; i++) {
        long row = mgp_table_add_row(&t);
        if (row < 0) break;
        mgp_table_set(&t, (size_t)row, 0, "%s", keys[i]);
        char first[256], buf[256];
        for (size_t j = 0; j < nr; j++) {
            compare_cell(&runs[j], keys[i], is_metric[i], buf, sizeof buf);
            if (strcmp(keys[i], "duration") == 0)
                mgp_duration(runs[j].end_time > 0 ? runs[j].end_time - runs[j].start_time : -1, buf,
                             sizeof buf);
            mgp_table_set(&t, (size_t)row, j + 1, "%s", buf);
            if (j == 0) memcpy(first, buf, sizeof first);
            else if (strcmp(first, buf) != 0 && strcmp(keys[i], "duration") != 0) t.mark[row] = 1;
        }
    }
    mgp_report rep;
    mgp_report_open(&rep);
    FILE *ft = rep.t, *fh = rep.h;
    if (ft && fh) {
        fputs("Runs side by side (* = values differ; metrics: last value)\n", ft);
        fputs("<div><b>Runs side by side</b> (highlighted rows differ; metrics: last "
              "value)</div>\n",
              fh);
        mgp_table_text(&t, ft);
        mgp_table_html(&t, fh, 0);
    }
    mgp_report_show(ctx, &rep);
done:
    free(keys);
    free(is_metric);
    mgp_table_deinit(&t);
}

/* Charts come in this order: validation, training, loss/accuracy per step, the rest
 * (lr, seconds, images/s), so the ones that tell runs apart are on top. */
static int chart_rank(const char *key)
{
    if (!strncmp(key, "val_", 4)) return 0;
    if (!strncmp(key, "train_", 6)) return 1;
    return strcmp(key, "loss") && strcmp(key, "accuracy") ? 3 : 2;
}

/* One chart per (metric, kind) present in any run, a curve per run having it. */
static int compare_charts(mg_ctx *ctx, rt_results *rs, const rt_results_run *runs, size_t nr,
                          char **metrics, size_t nm, rt_error *e)
{
    int charts = 0;
    for (int rank = 0; rank < 4; rank++)
        for (size_t j = 0; j < nr; j++)
            for (size_t i = 0; i < runs[j].nmetrics; i++) {
                const rt_results_summary *m = &runs[j].metrics[i];
                if (chart_rank(m->key) != rank || !wanted(metrics, nm, m->key)) continue;
                int done = 0; /* charted already for an earlier run */
                for (size_t p = 0; p < j && !done; p++)
                    for (size_t q = 0; q < runs[p].nmetrics && !done; q++)
                        done = strcmp(runs[p].metrics[q].key, m->key) == 0 &&
                               runs[p].metrics[q].kind == m->kind;
                if (done || charts >= MAX_CHARTS) continue;
                int64_t ids[MG_MAX_ARGS];
                const char *keys[MG_MAX_ARGS], *labels[MG_MAX_ARGS];
                rt_results_kind kinds[MG_MAX_ARGS];
                char names[MG_MAX_ARGS][96];
                size_t n = 0;
                for (size_t p = j; p < nr && n < MG_MAX_ARGS; p++)
                    for (size_t q = 0; q < runs[p].nmetrics; q++)
                        if (strcmp(runs[p].metrics[q].key, m->key) == 0 &&
                            runs[p].metrics[q].kind == m->kind) {
                            snprintf(names[n], sizeof names[n], "#%lld %s", (long long)runs[p].id,
                                     runs[p].name ? runs[p].name : "");
                            ids[n] = runs[p].id;
                            keys[n] = m->key;
                            labels[n] = names[n];
                            kinds[n++] = m->kind;
                        }
                char title[200];
                snprintf(title, sizeof title, "%s (per %s)", m->key,
                         m->kind == RT_RESULTS_EPOCH ? "epoch" : "step");
                if (chart(ctx, rs, ids, labels, keys, kinds, n, title, e) < 0) return -1;
                charts++;
            }
    return 0;
}

int mgp_results_compare(mg_ctx *ctx, rt_results *rs, const mg_args *a, mg_error *err)
{
    size_t nr = (size_t)a->npos - 1;
    rt_results_run *runs = calloc(nr, sizeof *runs);
    if (!runs) return mg_fail(err, "MemoryError", "%%results: out of memory");
    rt_error e = {0};
    int rc = 0;
    size_t loaded = 0;
    for (size_t j = 0; j < nr && rc == 0; j++)
        if ((rc = mgp_load_run(rs, a->pos[j + 1], &runs[j], err)) == 0) loaded++;
    size_t nm = 0;
    char **metrics = mgp_option_list(a, "--metric", &nm);
    if (rc == 0 && compare_charts(ctx, rs, runs, nr, metrics, nm, &e) < 0)
        rc = mgp_fail_rt(err, &e);
    if (rc == 0) compare_table(ctx, runs, nr);
    mgp_strv_free(metrics);
    for (size_t j = 0; j < loaded; j++) rt_results_run_free(&runs[j]);
    free(runs);
    return rc;
}
