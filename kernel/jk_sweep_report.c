/* jk_sweep_report.c - a sweep's variants read back from the results store (each
 * variant's %train recorded its row with the parameters sweep=NAME and variant=V; the
 * newest such row is the variant's), and the summary: a table sorted by the monitored
 * metric (its best epoch value: highest, or lowest for a loss), printed, written as
 * DIR/summary.csv, and DIR/summary.svg with every variant's epoch curve of that metric
 * overlaid. A failed variant is named with the last lines of its log. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jk_sweep.h"
#include "rt_results.h"
#include "rt_results_query.h"

static int open_store(const jk_sweep *sw, rt_results **rs)
{
    char path[JK_SWEEP_PATH];
    rt_error err = {0};
    if (rt_results_resolve_path(sw->store, path, sizeof path) < 0)
        return fprintf(stderr, "kiln sweep: cannot tell where %s is\n", sw->store), -1;
    if (access(path, F_OK) != 0) return 1; /* nothing recorded yet */
    rt_results_config cfg = {.path = path, .readonly = 1};
    if (rt_results_open_config(&cfg, rs, &err) != RT_OK)
        return err.code == RT_ENOTFOUND /* being created by a variant */
                   ? 1
                   : (fprintf(stderr, "kiln sweep: results store %s: %s\n", path, err.msg), -1);
    return 0;
}

static const char *param(const rt_results_run *r, const char *key)
{
    for (size_t i = 0; i < r->nparams; i++)
        if (!strcmp(r->params[i].key, key)) return r->params[i].value;
    return NULL;
}

static const rt_results_summary *metric(const rt_results_run *r, const char *key)
{
    const rt_results_summary *m = NULL;
    for (size_t i = 0; i < r->nmetrics; i++)
        if (!strcmp(r->metrics[i].key, key) && (!m || r->metrics[i].kind == RT_RESULTS_EPOCH))
            m = &r->metrics[i];
    return m;
}

/* The best of run's epoch values of the metric over epochs 1..upto; NaN when none. */
static double best_upto(const jk_sweep *sw, rt_results *rs, int64_t run, int upto)
{
    double *x = NULL, *y = NULL, best = NAN;
    size_t n = 0;
    rt_error err = {0};
    if (rt_results_series(rs, run, sw->metric, RT_RESULTS_EPOCH, &x, &y, &n, &err) != RT_OK)
        return NAN;
    for (size_t i = 0; i < n; i++)
        if (x[i] <= upto && !isnan(y[i]) &&
            (isnan(best) || (sw->metric_lower ? y[i] < best : y[i] > best)))
            best = y[i];
    free(x);
    free(y);
    return best;
}

int jk_sweep_collect(jk_sweep *sw) { return jk_sweep_collect_upto(sw, 0); }

int jk_sweep_collect_upto(jk_sweep *sw, int upto)
{
    rt_results *rs = NULL;
    int o = open_store(sw, &rs);
    if (o != 0) return o < 0 ? -1 : 0;
    char where[600];
    snprintf(where, sizeof where, "sweep=%s", sw->name);
    const char *w[] = {where};
    rt_results_query q = {.status = -1, .nwhere = 1, .where = w};
    rt_results_list l = {0};
    rt_error err = {0};
    if (rt_results_list_runs(rs, &q, &l, &err) != RT_OK) {
        fprintf(stderr, "kiln sweep: reading the results store: %s\n", err.msg);
        rt_results_close(rs);
        return -1;
    }
    for (int i = 0; i < sw->nv; i++) {
        jk_variant *v = &sw->v[i];
        const rt_results_run *mine = NULL;
        for (size_t k = 0; k < l.n; k++) {
            /* the variant's, in this folder (another sweep of the same name elsewhere
             * has other run directories) */
            const char *name = param(&l.runs[k], "variant");
            const char *rd = param(&l.runs[k], "run_dir");
            size_t dl = strlen(v->where);
            if (name && !strcmp(name, v->name) && (!rd || !strncmp(rd, v->where, dl)) &&
                (!mine || l.runs[k].id > mine->id))
                mine = &l.runs[k];
        }
        v->run_id = mine ? mine->id : 0;
        const rt_results_summary *m = mine ? metric(mine, sw->metric) : NULL;
        v->metric = m ? (sw->metric_lower ? m->min : m->max) : NAN;
        if (mine && upto > 0) v->metric = best_upto(sw, rs, mine->id, upto);
        /* a variant that reached the end of its --epochs before the rung is done */
        if (mine && v->state == JK_V_PAUSED && mine->status == RT_RESULTS_FINISHED) {
            v->state = JK_V_FINISHED;
            jk_sweep_save_state(sw, v);
        }
    }
    rt_results_list_free(&l);
    rt_results_close(rs);
    return 0;
}

/* ---- the summary ---- */

typedef struct row {
    jk_variant *v;
    double last_val_acc, last_val_loss, ips;
    int epochs;
    double *x, *y; /* the metric's epoch curve */
    size_t n;
} row;

static double last_of(const rt_results_run *r, const char *key)
{
    const rt_results_summary *m = metric(r, key);
    return m ? m->last : NAN;
}

static void fill(rt_results *rs, const jk_sweep *sw, row *w)
{
    w->last_val_acc = w->last_val_loss = w->ips = NAN;
    rt_results_run r;
    rt_error err = {0};
    if (!rs || !w->v->run_id || rt_results_get_run(rs, w->v->run_id, &r, &err) != RT_OK) return;
    w->last_val_acc = last_of(&r, "val_accuracy");
    w->last_val_loss = last_of(&r, "val_loss");
    w->ips = last_of(&r, "images_per_s");
    const rt_results_summary *m = metric(&r, "val_loss");
    w->epochs = m ? (int)m->count : 0;
    rt_results_run_free(&r);
    if (rt_results_series(rs, w->v->run_id, sw->metric, RT_RESULTS_EPOCH, &w->x, &w->y, &w->n,
                          &err) != RT_OK)
        w->x = w->y = NULL, w->n = 0;
}

static int better(const jk_sweep *sw, const row *a, const row *b)
{
    double x = a->v->metric, y = b->v->metric;
    if (isnan(x) || isnan(y)) return !isnan(x) && isnan(y);
    return sw->metric_lower ? x < y : x > y;
}

static void num(FILE *f, double v, const char *fmt)
{
    if (isnan(v)) fputs("", f);
    else fprintf(f, fmt, v);
}

static int write_csv(const jk_sweep *sw, row *rows, int n, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs("rank,variant,state", f);
    for (int k = 0; k < sw->nparams; k++) fputc(',', f), rt_results_csv_field(f, sw->pnames[k]);
    fprintf(f, ",best_");
    rt_results_csv_field(f, sw->metric);
    fputs(",epochs_done,val_accuracy,val_loss,images_per_s,run_id,dir\n", f);
    for (int i = 0; i < n; i++) {
        const jk_variant *v = rows[i].v;
        fprintf(f, "%d,", i + 1);
        rt_results_csv_field(f, v->name);
        fprintf(f, ",%s", jk_sweep_state_name(v->state));
        for (int k = 0; k < sw->nparams; k++) fputc(',', f), rt_results_csv_field(f, v->values[k]);
        fputc(',', f), num(f, v->metric, "%.6g");
        fprintf(f, ",%d,", rows[i].epochs);
        num(f, rows[i].last_val_acc, "%.6g");
        fputc(',', f), num(f, rows[i].last_val_loss, "%.6g");
        fputc(',', f), num(f, rows[i].ips, "%.1f");
        fprintf(f, ",%lld,", (long long)v->run_id);
        rt_results_csv_field(f, v->where);
        fputc('\n', f);
    }
    return fclose(f) == 0 ? 0 : -1;
}

static void xml_text(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '<') fputs("&lt;", f);
        else if (*s == '>') fputs("&gt;", f);
        else if (*s == '&') fputs("&amp;", f);
        else if (*s == '"') fputs("&quot;", f);
        else fputc(*s, f);
    }
}

/* Every variant's epoch curve of the metric, one colour each, a legend at the right. */
static int write_svg(const jk_sweep *sw, const row *rows, int n, const char *path)
{
    static const char *colour[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                   "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
    const double W = 720, H = 360, L = 60, R = 250, T = 30, B = 40;
    double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
    for (int i = 0; i < n; i++)
        for (size_t k = 0; k < rows[i].n; k++) {
            if (isnan(rows[i].y[k])) continue;
            x0 = fmin(x0, rows[i].x[k]), x1 = fmax(x1, rows[i].x[k]);
            y0 = fmin(y0, rows[i].y[k]), y1 = fmax(y1, rows[i].y[k]);
        }
    if (!(x0 <= x1)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
    if (x1 - x0 < 1) x1 = x0 + 1;
    if (y1 - y0 < 1e-9) y0 -= 0.05, y1 += 0.05;
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%g\" height=\"%g\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n"
            "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"%g\" y=\"18\">",
            W, H, L);
    xml_text(f, sw->name);
    fputs(": ", f);
    xml_text(f, sw->metric);
    fputs(" by epoch</text>\n", f);
    double pw = W - L - R, ph = H - T - B;
    fprintf(f,
            "<rect x=\"%g\" y=\"%g\" width=\"%g\" height=\"%g\" fill=\"none\" stroke=\"#888\"/>\n",
            L, T, pw, ph);
    for (int t = 0; t <= 4; t++) { /* y ticks */
        double yv = y0 + (y1 - y0) * t / 4, yp = T + ph - ph * t / 4;
        fprintf(f, "<text x=\"%g\" y=\"%g\" text-anchor=\"end\">%.3g</text>\n", L - 4, yp + 4, yv);
    }
    fprintf(f,
            "<text x=\"%g\" y=\"%g\">%g</text><text x=\"%g\" y=\"%g\" text-anchor=\"end\">%g"
            "</text><text x=\"%g\" y=\"%g\" text-anchor=\"middle\">epoch</text>\n",
            L, H - B + 16, x0, L + pw, H - B + 16, x1, L + pw / 2, H - 8);
    for (int i = 0; i < n; i++) {
        const char *c = colour[i % 10];
        if (rows[i].n) {
            fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", c);
            for (size_t k = 0; k < rows[i].n; k++)
                if (!isnan(rows[i].y[k]))
                    fprintf(f, "%.1f,%.1f ", L + pw * (rows[i].x[k] - x0) / (x1 - x0),
                            T + ph - ph * (rows[i].y[k] - y0) / (y1 - y0));
            fputs("\"/>\n", f);
        }
        double ly = T + 14 + 16 * i;
        fprintf(f,
                "<rect x=\"%g\" y=\"%g\" width=\"12\" height=\"3\" fill=\"%s\"/><text x=\"%g\" "
                "y=\"%g\">",
                W - R + 12, ly - 4, c, W - R + 30, ly);
        xml_text(f, rows[i].v->name);
        fputs("</text>\n", f);
    }
    fputs("</svg>\n", f);
    return fclose(f) == 0 ? 0 : -1;
}

static void tail_log(const jk_variant *v, int lines)
{
    char path[JK_SWEEP_PATH + 8];
    snprintf(path, sizeof path, "%s/log", v->dir);
    FILE *f = fopen(path, "rb");
    if (!f) return;
    char buf[8192];
    fseek(f, 0, SEEK_END);
    long size = ftell(f), from = size > (long)sizeof buf - 1 ? size - (long)sizeof buf + 1 : 0;
    fseek(f, from, SEEK_SET);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    while (n > 0 && buf[n - 1] == '\n') buf[--n] = 0;
    char *p = buf + n;
    for (int k = 0; p > buf && k < lines; p--)
        if (p[-1] == '\n' && ++k == lines) break;
    fprintf(stderr, "kiln sweep: %s failed (%s %d); the end of %s:\n%s\n", v->name,
            v->exit_code < 0 ? "signal" : "exit", v->exit_code < 0 ? -v->exit_code : v->exit_code,
            path, p);
}

int jk_sweep_report(jk_sweep *sw)
{
    if (jk_sweep_collect(sw) < 0) return -1;
    rt_results *rs = NULL;
    if (open_store(sw, &rs) < 0) rs = NULL;
    row *rows = calloc(sw->nv > 0 ? (size_t)sw->nv : 1, sizeof *rows);
    if (!rows) {
        rt_results_close(rs);
        return fprintf(stderr, "kiln sweep: out of memory\n"), -1;
    }
    for (int i = 0; i < sw->nv; i++) {
        rows[i].v = &sw->v[i];
        fill(rs, sw, &rows[i]);
    }
    rt_results_close(rs);
    for (int i = 1; i < sw->nv; i++) /* stable: ties keep the sweep's order */
        for (int j = i; j > 0 && better(sw, &rows[j], &rows[j - 1]); j--) {
            row t = rows[j];
            rows[j] = rows[j - 1];
            rows[j - 1] = t;
        }
    size_t wname = 7;
    for (int i = 0; i < sw->nv; i++)
        if (strlen(sw->v[i].name) > wname) wname = strlen(sw->v[i].name);
    printf("sweep %s: %d variant%s, by %s (%s first)\n", sw->name, sw->nv, sw->nv == 1 ? "" : "s",
           sw->metric, sw->metric_lower ? "lowest" : "highest");
    printf("%4s  %-*s  %-11s  %12s  %6s  %10s\n", "rank", (int)wname, "variant", "state",
           sw->metric, "epochs", "images/s");
    for (int i = 0; i < sw->nv; i++) {
        const row *w = &rows[i];
        char m[32] = "-", ips[32] = "-";
        if (!isnan(w->v->metric)) snprintf(m, sizeof m, "%.4f", w->v->metric);
        if (!isnan(w->ips)) snprintf(ips, sizeof ips, "%.1f", w->ips);
        printf("%4d  %-*s  %-11s  %12s  %6d  %10s\n", i + 1, (int)wname, w->v->name,
               jk_sweep_state_name(w->v->state), m, w->epochs, ips);
    }
    char csv[JK_SWEEP_PATH + 16], svg[JK_SWEEP_PATH + 16];
    snprintf(csv, sizeof csv, "%s/summary.csv", sw->dir);
    snprintf(svg, sizeof svg, "%s/summary.svg", sw->dir);
    int rc = 0;
    if (write_csv(sw, rows, sw->nv, csv) < 0 || write_svg(sw, rows, sw->nv, svg) < 0) {
        fprintf(stderr, "kiln sweep: cannot write the summary in %s: %s\n", sw->dir,
                strerror(errno));
        rc = -1;
    } else if (sw->url) {
        jk_sweep_store_put(sw, "summary.csv");
        jk_sweep_store_put(sw, "summary.svg");
        printf("wrote %s/summary.csv and %s/summary.svg (staged in %s)\n", sw->url, sw->url,
               sw->dir);
    } else {
        printf("wrote %s and %s\n", csv, svg);
    }
    for (int i = 0; i < sw->nv; i++)
        if (sw->v[i].state == JK_V_FAILED) tail_log(&sw->v[i], 12);
    for (int i = 0; i < sw->nv; i++) free(rows[i].x), free(rows[i].y);
    free(rows);
    return rc;
}
