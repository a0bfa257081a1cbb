/* rt_results_list.c - %results list: runs filtered by status and "KEY OP VALUE"
 * clauses, sorted by any key (run field, parameter or metric), limited.
 *
 * A key is looked up in this order: run field, parameter, metric (the epoch series
 * when both kinds exist, since that is what a user compares runs by). Values compare
 * as numbers when both sides parse as numbers, else as text. Runs lacking the sort
 * key go last whatever the direction.
 */
#include "rt_results_internal.h"
#include "rt_results_query.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int parse_number(const char *s, double *out)
{
    if (!s || !*s) return 0;
    char *end = NULL;
    double v = strtod(s, &end);
    if (*end != '\0') return 0;
    *out = v;
    return 1;
}

static const rt_results_summary *find_metric(const rt_results_run *r, const char *key)
{
    const rt_results_summary *best = NULL;
    for (size_t i = 0; i < r->nmetrics; i++)
        if (strcmp(r->metrics[i].key, key) == 0 &&
            (!best || r->metrics[i].kind == RT_RESULTS_EPOCH))
            best = &r->metrics[i];
    return best;
}

int rt_results_run_value(const rt_results_run *r, const char *key, char *buf, size_t n, double *num,
                         int *is_num)
{
    const char *text = NULL;
    char idbuf[32];
    *is_num = 0;
    if (strcmp(key, "id") == 0) {
        snprintf(idbuf, sizeof idbuf, "%lld", (long long)r->id);
        text = idbuf;
    } else if (strcmp(key, "status") == 0) {
        text = rt_results_status_name(r->status);
    } else {
        const char *names[] = {"name",    "notebook",     "device", "precision",
                               "dataset", "kiln_version", "host"};
        const char *vals[] = {r->name,    r->notebook,     r->device, r->precision,
                              r->dataset, r->kiln_version, r->host};
        for (size_t i = 0; i < sizeof names / sizeof *names && !text; i++)
            if (strcmp(key, names[i]) == 0) {
                if (!vals[i]) return 0;
                text = vals[i];
            }
    }
    if (!text && (strcmp(key, "start") == 0 || strcmp(key, "duration") == 0)) {
        double v = key[0] == 's'     ? r->start_time
                   : r->end_time > 0 ? r->end_time - r->start_time
                                     : NAN;
        if (isnan(v)) return 0;
        snprintf(buf, n, "%.3f", v);
        *num = v;
        *is_num = 1;
        return 1;
    }
    for (size_t i = 0; !text && i < r->nparams; i++)
        if (strcmp(r->params[i].key, key) == 0) text = r->params[i].value;
    if (!text) {
        const rt_results_summary *m = find_metric(r, key);
        if (!m) return 0;
        snprintf(buf, n, "%.6g", m->last);
        *num = m->last;
        *is_num = !isnan(m->last);
        return 1;
    }
    snprintf(buf, n, "%s", text);
    *is_num = parse_number(text, num);
    return 1;
}

typedef struct clause {
    char key[256];
    char op[3];
    const char *value;
} clause;

static rt_status parse_clause(const char *w, clause *c, rt_error *err)
{
    size_t k = strcspn(w, "=!<>");
    if (k == 0 || w[k] == '\0' || k >= sizeof c->key)
        return RT_ERR(err, RT_EINVAL,
                      "--where '%s': expected KEY=VALUE (or != < <= > >=), "
                      "e.g. lr=0.001",
                      w);
    memcpy(c->key, w, k);
    c->key[k] = '\0';
    while (k > 0 && c->key[k - 1] == ' ') c->key[--k] = '\0';
    const char *p = w + strlen(c->key);
    while (*p == ' ') p++;
    size_t oplen = (p[1] == '=') ? 2 : 1;
    if (p[0] == '!' && oplen == 1)
        return RT_ERR(err, RT_EINVAL, "--where '%s': '!' must be '!='", w);
    if (p[0] == '=' && p[1] == '=') oplen = 2;
    memcpy(c->op, p, oplen);
    c->op[oplen] = '\0';
    c->value = p + oplen;
    while (*c->value == ' ') c->value++;
    return RT_OK;
}

static int matches(const rt_results_run *r, const clause *c)
{
    char buf[512];
    double a = 0, b = 0;
    int anum = 0;
    if (!rt_results_run_value(r, c->key, buf, sizeof buf, &a, &anum)) return 0;
    int cmp;
    if (anum && parse_number(c->value, &b)) cmp = a < b ? -1 : a > b ? 1 : 0;
    else cmp = strcmp(buf, c->value);
    const char *op = c->op;
    if (strcmp(op, "=") == 0 || strcmp(op, "==") == 0) return cmp == 0;
    if (strcmp(op, "!=") == 0) return cmp != 0;
    if (strcmp(op, "<") == 0) return cmp < 0;
    if (strcmp(op, "<=") == 0) return cmp <= 0;
    if (strcmp(op, ">") == 0) return cmp > 0;
    if (strcmp(op, ">=") == 0) return cmp >= 0;
    return 0;
}

typedef struct sort_item {
    rt_results_run run;
    int has, is_num;
    double num;
    char text[256];
} sort_item;

static int cmp_items(const void *pa, const void *pb, void *desc)
{
    const sort_item *a = pa, *b = pb;
    if (a->has != b->has) return a->has ? -1 : 1; /* missing keys last */
    int c = 0;
    if (a->has) {
        if (a->is_num && b->is_num) c = a->num < b->num ? -1 : a->num > b->num ? 1 : 0;
        else c = strcmp(a->text, b->text);
    }
    if (*(int *)desc) c = -c;
    if (c == 0) c = a->run.id < b->run.id ? -1 : a->run.id > b->run.id ? 1 : 0;
    return c;
}

static rt_status load_runs(rt_results *rs, int status, sort_item **items, size_t *n, rt_error *err)
{
    sqlite3_stmt *st = NULL;
    size_t cap = 0;
    *items = NULL;
    *n = 0;
    RT_TRY(rtp_prepare(rs->db,
                       status < 0 ? "SELECT " RTP_RUN_COLS " FROM runs ORDER BY id"
                                  : "SELECT " RTP_RUN_COLS
                                    " FROM runs WHERE status = ? ORDER BY id",
                       &st, err));
    if (status >= 0)
        sqlite3_bind_text(st, 1, rt_results_status_name((rt_results_status)status), -1,
                          SQLITE_STATIC);
    rt_status s = RT_OK;
    while (s == RT_OK && sqlite3_step(st) == SQLITE_ROW) {
        if (*n == cap) {
            size_t c = cap ? cap * 2 : 16;
            sort_item *p = realloc(*items, c * sizeof *p);
            if (!p) {
                s = RT_ERR(err, RT_ENOMEM, "results: out of memory");
                break;
            }
            *items = p;
            cap = c;
        }
        sort_item *it = &(*items)[(*n)++];
        memset(it, 0, sizeof *it);
        rtp_fill_run(st, &it->run);
        s = rtp_load_details(rs, &it->run, 0, err);
    }
    sqlite3_finalize(st);
    return s;
}

/* A key of the runs' parameters or metrics that the typed one is short for or a case
 * slip of (val_acc: val_accuracy); the shortest such, "" when none. */
static void nearest_key(const sort_item *items, size_t n, const char *typed, char *out, size_t cap)
{
    out[0] = 0;
    size_t tl = strlen(typed), best = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        const rt_results_run *r = &items[i].run;
        for (size_t k = 0; k < r->nparams + r->nmetrics; k++) {
            const char *key = k < r->nparams ? r->params[k].key : r->metrics[k - r->nparams].key;
            size_t kl = key ? strlen(key) : 0;
            if (!kl || kl >= best || kl >= cap) continue;
            if ((kl > tl && !strncasecmp(key, typed, tl)) || !strcasecmp(key, typed))
                best = kl, memcpy(out, key, kl + 1);
        }
    }
}

rt_status rt_results_list_runs(rt_results *rs, const rt_results_query *q, rt_results_list *out,
                               rt_error *err)
{
    static const rt_results_query all = {.status = -1};
    if (!q) q = &all;
    out->n = 0;
    out->runs = NULL;
    clause *cl = q->nwhere ? calloc(q->nwhere, sizeof *cl) : NULL;
    if (q->nwhere && !cl) return RT_ERR(err, RT_ENOMEM, "results: out of memory");
    for (size_t i = 0; i < q->nwhere; i++)
        if (parse_clause(q->where[i], &cl[i], err) != RT_OK) {
            free(cl);
            return RT_EINVAL;
        }
    sort_item *items = NULL;
    size_t n = 0;
    rt_status s = load_runs(rs, q->status, &items, &n, err);
    /* filter in place */
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        int ok = s == RT_OK;
        for (size_t j = 0; ok && j < q->nwhere; j++) ok = matches(&items[i].run, &cl[j]);
        if (ok) items[kept++] = items[i];
        else rt_results_run_free(&items[i].run);
    }
    n = kept;
    free(cl);
    if (s == RT_OK && q->sort && *q->sort) {
        size_t having = 0;
        for (size_t i = 0; i < n; i++)
            having += items[i].has =
                rt_results_run_value(&items[i].run, q->sort, items[i].text, sizeof items[i].text,
                                     &items[i].num, &items[i].is_num) != 0;
        if (n && !having) { /* a typo (val_acc for val_accuracy) must not pass silently */
            char near[128];
            nearest_key(items, n, q->sort, near, sizeof near);
            for (size_t i = 0; i < n; i++) rt_results_run_free(&items[i].run);
            free(items);
            return RT_ERR(err, RT_EINVAL,
                          "--sort %s: no run has a field, parameter or metric of that name "
                          "(`%%results show RUN` lists a run's keys)%s%s%s",
                          q->sort, near[0] ? " ---> HINT: did you mean " : "", near,
                          near[0] ? "?" : "");
        }
        int desc = q->descending;
        qsort_r(items, n, sizeof *items, cmp_items, &desc);
    } else if (s == RT_OK && q->descending) {
        for (size_t i = 0; i < n / 2; i++) {
            sort_item t = items[i];
            items[i] = items[n - 1 - i];
            items[n - 1 - i] = t;
        }
    }
    if (q->limit && n > q->limit) {
        for (size_t i = q->limit; i < n; i++) rt_results_run_free(&items[i].run);
        n = q->limit;
    }
    out->runs = n ? malloc(n * sizeof *out->runs) : NULL;
    if (n && !out->runs) s = RT_ERR(err, RT_ENOMEM, "results: out of memory");
    for (size_t i = 0; i < n; i++) {
        if (out->runs) out->runs[i] = items[i].run;
        else rt_results_run_free(&items[i].run);
    }
    out->n = out->runs ? n : 0;
    free(items);
    if (s != RT_OK) rt_results_list_free(out);
    return s;
}
