/* mg_results.c - the %results magic: list, show, compare, export and delete the runs
 * of the results store (runtime/results). This file holds the command table entry,
 * the option table, the subcommand table, list/export/delete and the output helpers;
 * show and compare are in mg_results_view.c.
 *
 * Which store: --results PATH, else what %train last used in this session (session
 * key "results.spec", a char * set by %train), else $KILN_RESULTS, else the default
 * (~/.local/share/kiln/results.sqlite). An MLflow spec reads its local store. The
 * store is opened for queries only: %results never creates a file, except --pull
 * (mg_results_sync.c), which replaces the store with a copy from an s3:// URL.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mg_results_internal.h"

static const mg_option results_options[] = {
    {"--results", MG_OPT_STRING, "PATH",
     "the results store (default $KILN_RESULTS or "
     "~/.local/share/kiln/results.sqlite)",
     NULL},
    {"--status", MG_OPT_CHOICE, "STATUS", "only runs with this status",
     "running|finished|interrupted|failed"},
    {"--where", MG_OPT_STRING, "KEY=VALUE",
     "only runs whose parameter, metric or field "
     "matches (also != < <= > >=); repeat or separate with commas",
     NULL},
    {"--sort", MG_OPT_STRING, "KEY", "sort by a field, parameter or metric (last value)", NULL},
    {"--desc", MG_OPT_FLAG, NULL, "sort in descending order (highest first)", NULL},
    {"--limit", MG_OPT_INT, "N", "show at most N runs", NULL},
    {"--metric", MG_OPT_STRING, "KEY",
     "show/compare: plot only these metrics (repeat or "
     "separate with commas)",
     NULL},
    {"--force", MG_OPT_FLAG, NULL, "delete a running run; --push/--pull over the other copy", NULL},
    {"--push", MG_OPT_STRING, "URL", "upload the store as one object (s3://BUCKET/KEY)", NULL},
    {"--pull", MG_OPT_STRING, "URL", "replace the store with the object at URL", NULL},
    {NULL, 0, NULL, NULL, NULL},
};

/* ---- helpers shared with mg_results_view.c ---- */

void mgp_display(mg_ctx *ctx, const char *text, const char *html)
{
    json_t *data = json_object();
    if (text) json_object_set_new(data, "text/plain", json_string(text));
    if (html) json_object_set_new(data, "text/html", json_string(html));
    if (ctx->out && ctx->out->display) ctx->out->display(ctx->out->user, data, NULL, NULL, 0);
    else if (text) mg_printf(ctx->out, "%s", text);
    json_decref(data);
}

int mgp_load_run(rt_results *rs, const char *which, rt_results_run *r, mg_error *err)
{
    rt_error e = {0};
    int64_t id = 0;
    if (rt_results_find(rs, which, &id, &e) != RT_OK || rt_results_get_run(rs, id, r, &e) != RT_OK)
        return mgp_fail_rt(err, &e);
    return 0;
}

void mgp_report_open(mgp_report *r)
{
    *r = (mgp_report){0};
    r->t = open_memstream(&r->text, &r->tl);
    r->h = open_memstream(&r->html, &r->hl);
}

void mgp_report_show(mg_ctx *ctx, mgp_report *r)
{
    if (r->t) fclose(r->t);
    if (r->h) fclose(r->h);
    mgp_display(ctx, r->text, r->html);
    free(r->text);
    free(r->html);
    *r = (mgp_report){0};
}

void mgp_display_svg(mg_ctx *ctx, char *svg, const char *alt)
{
    if (!svg) return;
    json_t *data = json_pack("{s:s, s:s}", "image/svg+xml", svg, "text/plain", alt);
    if (data && ctx->out && ctx->out->display)
        ctx->out->display(ctx->out->user, data, NULL, NULL, 0);
    json_decref(data);
    free(svg);
}

int mgp_fail_rt(mg_error *err, const rt_error *e)
{
    return mg_fail_status(err, e, "%%results: %s", e->msg);
}

char **mgp_option_list(const mg_args *a, const char *name, size_t *n)
{
    char **v = calloc(MG_MAX_ARGS * 4 + 1, sizeof *v);
    *n = 0;
    if (!v) return NULL;
    for (int i = 0; i < a->nopt; i++) {
        if (!a->opt[i] || strcmp(a->opt[i]->name, name) != 0 || !a->val[i]) continue;
        char *copy = strdup(a->val[i]), *save = NULL;
        for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL; tok && *n < MG_MAX_ARGS * 4;
             tok = strtok_r(NULL, ",", &save)) {
            while (*tok == ' ') tok++;
            if (*tok) v[(*n)++] = strdup(tok);
        }
        free(copy);
    }
    return v;
}

void mgp_strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++) free(v[i]);
    free(v);
}

void mgp_duration(double secs, char *buf, size_t n)
{
    if (!(secs >= 0)) snprintf(buf, n, "-");
    else if (secs < 60) snprintf(buf, n, "%.1fs", secs);
    else if (secs < 3600) snprintf(buf, n, "%dm%02ds", (int)secs / 60, (int)secs % 60);
    else snprintf(buf, n, "%dh%02dm", (int)(secs / 3600), ((int)secs % 3600) / 60);
}

void mgp_time(double t, char *buf, size_t n)
{
    time_t s = (time_t)t;
    struct tm tm;
    if (t <= 0 || !localtime_r(&s, &tm) || !strftime(buf, n, "%Y-%m-%d %H:%M", &tm))
        snprintf(buf, n, "-");
}

void mgp_number(double v, char *buf, size_t n)
{
    if (isnan(v)) snprintf(buf, n, "nan");
    else snprintf(buf, n, "%.4g", v);
}

/* ---- opening the store ---- */

static int open_store(mg_ctx *ctx, const mg_args *a, rt_results **rs, char *path, size_t n,
                      rt_error *e)
{
    const char *spec = mg_args_get(a, "--results");
    if (!spec && ctx->session) spec = mg_session_get(ctx->session, "results.spec");
    if (rt_results_resolve_path(spec, path, n) != 0) {
        rt_error_set(e, RT_EINVAL, __FILE__, __LINE__, "--results: path too long");
        return -1;
    }
    rt_results_config cfg = {.path = path, .readonly = 1};
    return rt_results_open_config(&cfg, rs, e) == RT_OK ? 0 : -1;
}

/* Status, where and sort options as a query; *where must be freed by the caller. */
static int make_query(const mg_args *a, rt_results_query *q, char ***where, mg_error *err)
{
    memset(q, 0, sizeof *q);
    q->status = -1;
    const char *st = mg_args_get(a, "--status");
    if (st && (q->status = rt_results_status_parse(st)) < 0)
        return mg_fail(err, "UsageError",
                       "%%results --status %s: expected running, "
                       "finished, interrupted or failed",
                       st);
    *where = mgp_option_list(a, "--where", &q->nwhere);
    if (!*where) return mg_fail(err, "MemoryError", "%%results: out of memory");
    q->where = (const char *const *)*where;
    q->sort = mg_args_get(a, "--sort");
    q->descending = mg_args_has(a, "--desc");
    long limit = 0;
    if (mg_args_int(a, "--limit", 0, &limit, err) < 0) return -1;
    if (limit < 0)
        return mg_fail(err, "UsageError", "%%results --limit %ld: must be 0 or more", limit);
    q->limit = (size_t)limit;
    return 0;
}

/* ---- list ---- */

/* A key the list shows in a column of its own already (the run's device) or as a
 * metric: not repeated as a parameter column. */
static int shown_elsewhere(const char *key, const char *const *metric_keys)
{
    if (!strcmp(key, "device")) return 1; /* the device column: what it ran on */
    for (size_t i = 0; metric_keys && metric_keys[i]; i++)
        if (!strcmp(metric_keys[i], key)) return 1;
    return 0;
}

/* Parameter keys whose values differ between the runs (columns); the others go to
 * *common as "k=v, ..." (for one run: all of them, so one run fits the width of a
 * notebook). Borrowed strings, NULL-terminated. */
static const char **split_params(const rt_results_list *l, const char *const *metric_keys,
                                 char **common)
{
    const char **keys = calloc(1, sizeof *keys);
    size_t nk = 0;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    for (size_t i = 0; keys && f && i < l->n; i++)
        for (size_t j = 0; j < l->runs[i].nparams; j++) {
            const rt_results_kv *kv = &l->runs[i].params[j];
            int seen = 0;
            for (size_t k = 0; k < nk && !seen; k++) seen = strcmp(keys[k], kv->key) == 0;
            for (size_t r = 0; r < i && !seen; r++) /* first listed in an earlier run */
                for (size_t p = 0; p < l->runs[r].nparams && !seen; p++)
                    seen = strcmp(l->runs[r].params[p].key, kv->key) == 0;
            if (seen || shown_elsewhere(kv->key, metric_keys)) continue;
            int empty = 1; /* empty in every run (e.g. name=, results=): nothing to show */
            for (size_t r = 0; r < l->n && empty; r++)
                for (size_t p = 0; p < l->runs[r].nparams; p++)
                    if (strcmp(l->runs[r].params[p].key, kv->key) == 0 &&
                        l->runs[r].params[p].value && l->runs[r].params[p].value[0])
                        empty = 0;
            if (empty) continue;
            int same = 1;
            for (size_t r = 0; r < l->n && same && l->n > 1; r++) {
                const char *v = NULL;
                for (size_t p = 0; p < l->runs[r].nparams; p++)
                    if (strcmp(l->runs[r].params[p].key, kv->key) == 0)
                        v = l->runs[r].params[p].value;
                same = v && strcmp(v, kv->value) == 0;
            }
            if (same) {
                fprintf(f, "%s%s=%s", len ? ", " : "", kv->key, kv->value);
                fflush(f);
                continue;
            }
            const char **p = realloc(keys, (nk + 2) * sizeof *p);
            if (!p) break;
            keys = p;
            keys[nk++] = kv->key;
            keys[nk] = NULL;
        }
    if (f) fclose(f);
    *common = buf;
    return keys;
}

static int metric_rank(const char *k)
{
    return strncmp(k, "val_", 4) == 0 ? 0 : strncmp(k, "train_", 6) == 0 ? 1 : 2;
}

/* Metric keys over the runs (borrowed, NULL-terminated): validation metrics first,
 * then training ones, then the rest, each in first-seen order, so the columns that
 * tell runs apart are the first ones a reader sees. Per-step metrics (the last step's
 * loss, accuracy, lr) only when no run has per-epoch ones, and no epoch_seconds (the
 * duration column) or images_per_s: the list stays narrow; `show` has them all. */
static const char **metric_keys(const rt_results_list *l)
{
    const char **keys = calloc(1, sizeof *keys);
    size_t nk = 0;
    int any_epoch = 0;
    for (size_t i = 0; i < l->n; i++)
        for (size_t j = 0; j < l->runs[i].nmetrics; j++)
            any_epoch |= l->runs[i].metrics[j].kind == RT_RESULTS_EPOCH;
    for (int rank = 0; rank < 3; rank++)
        for (size_t i = 0; keys && i < l->n; i++)
            for (size_t j = 0; j < l->runs[i].nmetrics; j++) {
                const char *k = l->runs[i].metrics[j].key;
                if (metric_rank(k) != rank || !strcmp(k, "epoch_seconds") ||
                    !strcmp(k, "images_per_s") ||
                    (any_epoch && l->runs[i].metrics[j].kind != RT_RESULTS_EPOCH))
                    continue;
                int seen = 0;
                for (size_t x = 0; x < nk && !seen; x++) seen = strcmp(keys[x], k) == 0;
                if (seen) continue;
                const char **p = realloc(keys, (nk + 2) * sizeof *p);
                if (!p) return keys;
                keys = p;
                keys[nk++] = k;
                keys[nk] = NULL;
            }
    return keys;
}

static void run_row(mgp_table *t, size_t row, const rt_results_run *r)
{
    char when[32], dur[32];
    mgp_time(r->start_time, when, sizeof when);
    if (r->status == RT_RESULTS_RUNNING) snprintf(dur, sizeof dur, "-");
    else mgp_duration(r->end_time - r->start_time, dur, sizeof dur);
    mgp_table_set(t, row, 0, "%lld", (long long)r->id);
    mgp_table_set(t, row, 1, "%s", r->name ? r->name : "");
    mgp_table_set(t, row, 2, "%s", rt_results_status_name(r->status));
    mgp_table_set(t, row, 3, "%s", when);
    mgp_table_set(t, row, 4, "%s", dur);
    mgp_table_set(t, row, 5, "%s", r->device ? r->device : "");
}

static int cmd_list(mg_ctx *ctx, rt_results *rs, const mg_args *a, mg_error *err)
{
    rt_results_query q;
    char **where = NULL;
    if (make_query(a, &q, &where, err) < 0) {
        mgp_strv_free(where);
        return -1;
    }
    rt_results_list l;
    rt_error e = {0};
    int rc = rt_results_list_runs(rs, &q, &l, &e) == RT_OK ? 0 : mgp_fail_rt(err, &e);
    mgp_strv_free(where);
    if (rc) return rc;
    if (l.n == 0) {
        mg_printf(ctx->out, "No runs%s in %s.\n", q.status >= 0 || q.nwhere ? " match" : "",
                  rt_results_path(rs));
        rt_results_list_free(&l);
        return 0;
    }
    char *common = NULL;
    const char **mk = metric_keys(&l), **pk = split_params(&l, mk, &common);
    size_t npk = 0, nmk = 0;
    while (pk && pk[npk]) npk++;
    while (mk && mk[nmk]) nmk++;
    mgp_table t;
    if (mgp_table_init(&t, 6 + npk + nmk) == 0) {
        const char *head[] = {"id", "name", "status", "started", "duration", "device"};
        for (size_t c = 0; c < 6; c++) mgp_table_set(&t, 0, c, "%s", head[c]);
        /* metrics first (what a run achieved), then the parameters that differ */
        for (size_t c = 0; c < nmk; c++) mgp_table_set(&t, 0, 6 + c, "%s", mk[c]);
        for (size_t c = 0; c < npk; c++) mgp_table_set(&t, 0, 6 + nmk + c, "%s", pk[c]);
        for (size_t i = 0; i < l.n; i++) {
            long row = mgp_table_add_row(&t);
            if (row < 0) break;
            run_row(&t, (size_t)row, &l.runs[i]);
            char buf[256];
            double num;
            int is_num;
            for (size_t c = 0; c < npk + nmk; c++) {
                const char *key = c < nmk ? mk[c] : pk[c - nmk];
                if (!rt_results_run_value(&l.runs[i], key, buf, sizeof buf, &num, &is_num))
                    snprintf(buf, sizeof buf, "-");
                else if (c < nmk) mgp_number(num, buf, sizeof buf);
                mgp_table_set(&t, (size_t)row, 6 + c, "%s", buf);
            }
        }
        mgp_report rep;
        mgp_report_open(&rep);
        FILE *ft = rep.t, *fh = rep.h;
        if (ft && fh) {
            fprintf(ft, "%zu run%s in %s\n", l.n, l.n == 1 ? "" : "s", rt_results_path(rs));
            fprintf(fh, "<div><b>%zu run%s</b> in <code>", l.n, l.n == 1 ? "" : "s");
            mgp_html(fh, rt_results_path(rs));
            fputs("</code>", fh);
            if (common && *common) {
                fprintf(ft, "%s: %s\n", l.n == 1 ? "parameters" : "same in all", common);
                fprintf(fh, "<br>%s: ", l.n == 1 ? "parameters" : "same in all");
                mgp_html(fh, common);
            }
            fputs("</div>\n", fh);
            mgp_table_text(&t, ft);
            mgp_table_html(&t, fh, 1);
        }
        mgp_report_show(ctx, &rep);
        mgp_table_deinit(&t);
    }
    free(pk);
    free(mk);
    free(common);
    rt_results_list_free(&l);
    return 0;
}

/* ---- export, delete ---- */

static int cmd_export(mg_ctx *ctx, rt_results *rs, const mg_args *a, mg_error *err)
{
    const char *format = a->pos[1], *path = a->pos[2];
    if (a->npos == 2) { /* `export PATH`: the format from the extension */
        path = a->pos[1];
        const char *dot = strrchr(path, '.');
        format = dot && !strcmp(dot, ".csv") ? "csv" : dot && !strcmp(dot, ".json") ? "json" : NULL;
        if (!format)
            return mg_fail(err, "UsageError",
                           "%%results export %s: cannot tell the format from "
                           "the name (.csv or .json); or say it: `%%results export csv|json PATH`",
                           path);
    }
    if (strcmp(format, "csv") != 0 && strcmp(format, "json") != 0)
        return mg_fail(err, "UsageError", "%%results export %s: the format is csv or json", format);
    rt_results_query q;
    char **where = NULL;
    int rc = make_query(a, &q, &where, err);
    rt_error e = {0};
    if (rc == 0 && rt_results_export(rs, format, path, &q, &e) != RT_OK) rc = mgp_fail_rt(err, &e);
    rt_results_list l = {0};
    if (rc == 0 && rt_results_list_runs(rs, &q, &l, &e) == RT_OK)
        mg_printf(ctx->out, "Exported %zu run%s to %s (%s).\n", l.n, l.n == 1 ? "" : "s", path,
                  format);
    rt_results_list_free(&l);
    mgp_strv_free(where);
    return rc;
}

static int cmd_delete(mg_ctx *ctx, rt_results *rs, const mg_args *a, mg_error *err)
{
    rt_error e = {0};
    rt_results_run r;
    if (mgp_load_run(rs, a->pos[1], &r, err) < 0) return -1;
    int64_t id = r.id;
    char name[256];
    snprintf(name, sizeof name, "%s", r.name ? r.name : "");
    rt_results_run_free(&r);
    if (rt_results_delete(rs, id, mg_args_has(a, "--force"), &e) != RT_OK)
        return mgp_fail_rt(err, &e);
    mg_printf(ctx->out, "Deleted run %lld (%s) and its metrics from %s.\n", (long long)id, name,
              rt_results_path(rs));
    return 0;
}

/* ---- dispatch ---- */

typedef struct subcommand {
    const char *name;
    int min_pos, max_pos; /* positional words after the subcommand name */
    const char *usage;
    int (*run)(mg_ctx *ctx, rt_results *rs, const mg_args *a, mg_error *err);
} subcommand;

static const subcommand subcommands[] = {
    {"list", 0, 0, "%results list [--status S] [--where K=V] [--sort KEY] [--desc]", cmd_list},
    {"show", 1, 1, "%results show RUN", mgp_results_show},
    {"compare", 2, MG_MAX_ARGS, "%results compare RUN RUN...", mgp_results_compare},
    {"export", 1, 2, "%results export [csv|json] PATH", cmd_export},
    {"delete", 1, 1, "%results delete RUN [--force]", cmd_delete},
};

static int results_run(mg_ctx *ctx, const mg_args *a, mg_error *err)
{
    if (mg_args_has(a, "--push") || mg_args_has(a, "--pull")) {
        const char *spec = mg_args_get(a, "--results");
        char path[4096];
        if (!spec && ctx->session) spec = mg_session_get(ctx->session, "results.spec");
        if (rt_results_resolve_path(spec, path, sizeof path) != 0)
            return mg_fail(err, "ValueError", "%%results --results: path too long");
        return mgp_results_sync(ctx, a, path, err);
    }
    const char *name = a->npos > 0 ? a->pos[0] : "list";
    const subcommand *sc = NULL;
    for (size_t i = 0; i < sizeof subcommands / sizeof *subcommands; i++)
        if (strcmp(subcommands[i].name, name) == 0) sc = &subcommands[i];
    if (!sc)
        return mg_fail(err, "UsageError",
                       "%%results %s: unknown subcommand; expected list, "
                       "show, compare, export or delete",
                       name);
    int given = a->npos > 0 ? a->npos - 1 : 0;
    if (given < sc->min_pos || given > sc->max_pos)
        return mg_fail(err, "UsageError", "%%results %s: expected `%s`", name, sc->usage);
    char path[4096];
    rt_results *rs = NULL;
    rt_error e = {0};
    if (open_store(ctx, a, &rs, path, sizeof path, &e) < 0) {
        if (e.code == RT_ENOTFOUND && sc->run == cmd_list) {
            mg_printf(ctx->out, "No runs recorded yet (%s %s).\n", path,
                      access(path, F_OK) == 0 ? "is being created" : "does not exist");
            return 0;
        }
        return mgp_fail_rt(err, &e);
    }
    int rc = sc->run(ctx, rs, a, err);
    rt_results_close(rs);
    return rc;
}

const mg_command mg_cmd_results = {
    "results",
    "The results store: list, show, compare, export and delete training runs",
    "%results [list] [--status S] [--where KEY=VALUE] [--sort KEY] [--desc] [--limit N]\n"
    "%results show RUN [--metric KEY]\n"
    "%results compare RUN RUN... [--metric KEY]\n"
    "%results export [csv|json] PATH [--status S] [--where KEY=VALUE]\n"
    "%results delete RUN [--force]\n"
    "%results --push s3://BUCKET/KEY [--force] | --pull s3://BUCKET/KEY [--force]\n"
    "\n"
    "Every %train run is recorded with its parameters, per-step and per-epoch metrics and\n"
    "checkpoints. `list` shows them as a table (click a column to sort); `show` one run\n"
    "with its curves; `compare` overlays the curves of several runs and sets their\n"
    "parameters side by side, differences highlighted; `export` writes CSV (one row a\n"
    "run) or JSON (everything), by PATH's extension unless named; `delete` removes a\n"
    "run. RUN is an id from the list, a run name (its newest run) or `last`. KEY is a\n"
    "field (name, status, device, ...), a parameter or a metric (its last value, e.g.\n"
    "val_accuracy, val_loss, train_loss).\n"
    "\n"
    "The store is --results PATH, else the one %train used, else $KILN_RESULTS, else\n"
    "~/.local/share/kiln/results.sqlite. --push uploads it as one object, --pull\n"
    "replaces it with that object; neither overwrites runs the other side lacks (the\n"
    "object changed since this store's last push or pull, or the store did): an\n"
    "error says so, and --force does it anyway.\n"
    "\n"
    "Examples:\n"
    "  %results list --status finished --sort val_accuracy --desc --where lr=0.001\n"
    "  %results compare 3 4 --metric loss,val_accuracy\n"
    "  %results export runs.csv --where \"val_accuracy>=0.9\"\n",
    MG_LINE,
    results_options,
    results_run,
    NULL,
    0,
    NULL,
};
