/* test_results_magic.c - %results through its command table entry, with a capturing
 * mg_out (tests/support/capture.h): what a user sees for list/show/compare/export/delete, and the errors.
 */
#include <jansson.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "mg.h"
#include "mg_plot.h"
#include "results_test_util.h"
#include "rt_results.h"
#include "t.h"

extern const mg_command mg_cmd_results;

static capture g_cap;
static mg_out g_out = {.user = &g_cap, .stream = capture_stream, .display = capture_display};
static mg_session *g_session;
static char g_dir[512], g_store[600];
static mg_error g_err;

/* Runs "%results LINE"; returns the magic's status (parse errors too). */
static int magic(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int magic(const char *fmt, ...)
{
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    capture_reset(&g_cap, 1);
    memset(&g_err, 0, sizeof g_err);
    mg_args args;
    if (mg_args_parse(&mg_cmd_results, line, NULL, &args, &g_err) < 0) return -1;
    mg_ctx ctx = {.out = &g_out, .session = g_session};
    int rc = mg_cmd_results.run(&ctx, &args, &g_err);
    mg_args_deinit(&args);
    return rc;
}

/* Three runs: 1 "base" lr 0.001 (val_acc .80), 2 "fast" lr 0.01 (.90), 3 "slow" failed. */
static int populate(void)
{
    rt_results *rs = NULL;
    if (rt_results_open(g_store, &rs, NULL) != RT_OK) return -1;
    const char *names[] = {"base", "fast", "slow"}, *lrs[] = {"0.001", "0.01", "0.001"};
    for (int k = 0; k < 3; k++) {
        rt_results_run_info info = {
            .name = names[k], .device = "cpu", .precision = "fp32", .model_spec = "dense 10"};
        int64_t run;
        if (rt_results_run_begin(rs, &info, &run, NULL) != RT_OK) return -1;
        int bad = rt_results_log_param(rs, run, "lr", lrs[k], NULL) != RT_OK;
        bad |= rt_results_log_param(rs, run, "batch", "64", NULL) != RT_OK;
        for (int s = 1; s <= 50; s++)
            bad |= rt_results_log_metric(rs, run, "loss", 2.0 / s + k, s, s / 10, RT_RESULTS_STEP,
                                         NULL) != RT_OK;
        for (int e = 1; e <= 5; e++)
            bad |= rt_results_log_metric(rs, run, "val_acc", 0.7 + 0.1 * k + e / 50.0 - 0.1, e * 10,
                                         e, RT_RESULTS_EPOCH, NULL) != RT_OK;
        bad |= rt_results_log_checkpoint(rs, run, "/ck/a.safetensors", 50, 5, "val_acc", 0.8,
                                         NULL) != RT_OK;
        bad |= rt_results_run_end(rs, run, k == 2 ? RT_RESULTS_FAILED : RT_RESULTS_FINISHED,
                                  NULL) != RT_OK;
        if (bad) {
            rt_results_close(rs);
            return -1;
        }
    }
    rt_results_close(rs);
    return 0;
}

T_TEST(t_empty_store)
{
    ASSERT_EQ(magic("list --results %s/none.sqlite", g_dir), 0);
    ASSERT_STR_CONTAINS(g_cap.text, "No runs recorded yet");
    ASSERT_STR_CONTAINS(g_cap.text, "none.sqlite");
}

T_TEST(t_list)
{
    ASSERT_EQ(magic("list --results %s --status finished --sort val_acc --desc", g_store), 0);
    char *text = capture_shown(&g_cap, "text/plain"), *html = capture_shown(&g_cap, "text/html");
    ASSERT(text && html);
    const char *fast = strstr(text, "fast"), *base = strstr(text, "base");
    int order = fast && base && fast < base;
    int no_failed = strstr(text, "slow") == NULL;
    int common = strstr(text, "same in all: batch=64") != NULL;
    int cols = strstr(text, "val_acc") && strstr(text, "lr");
    int table =
        strstr(html, "<table") && strstr(html, "click to sort") &&
        strstr(html, "<td style=\"padding:2px 8px;text-align:right;white-space:nowrap\">0.01</td>");
    free(text);
    free(html);
    ASSERT(order);     /* 0.9 before 0.8 */
    ASSERT(no_failed); /* --status finished */
    ASSERT(common);    /* equal parameters folded into one line */
    ASSERT(cols);
    ASSERT(table);

    ASSERT_EQ(magic("--results %s --where lr=0.001 --where status=failed", g_store), 0);
    text = capture_shown(&g_cap, "text/plain");
    int only_slow = text && strstr(text, "slow") && !strstr(text, "base") && !strstr(text, "fast");
    free(text);
    ASSERT(only_slow);

    ASSERT_EQ(magic("list --results %s --where lr=42", g_store), 0);
    ASSERT_STR_CONTAINS(g_cap.text, "No runs match");
}

/* The run list leads with what runs achieved: validation metrics, then training ones,
 * then the parameters that differ; parameters empty in every run (name=, results= as
 * %train records them when not given) are left out; the HTML does not wrap. Per-step
 * metrics (the last step's loss, lr) are no columns when there are per-epoch ones, no
 * key shows twice (lr was a metric and a parameter column, device a column and a
 * parameter), and one run's parameters are a line, not columns (it needed scrolling). */
T_TEST(t_list_columns)
{
    char store[700];
    snprintf(store, sizeof store, "%s/columns.sqlite", g_dir);
    rt_results *rs = NULL;
    ASSERT_EQ(rt_results_open(store, &rs, NULL), RT_OK);
    const char *lrs[] = {"0.001", "0.01"};
    for (int k = 0; k < 2; k++) {
        rt_results_run_info info = {.name = "cnn", .device = "cpu", .precision = "fp32"};
        int64_t run;
        ASSERT_EQ(rt_results_run_begin(rs, &info, &run, NULL), RT_OK);
        ASSERT_EQ(rt_results_log_param(rs, run, "lr", lrs[k], NULL), RT_OK);
        ASSERT_EQ(rt_results_log_param(rs, run, "results", "", NULL), RT_OK);
        ASSERT_EQ(rt_results_log_param(rs, run, "batch", "64", NULL), RT_OK);
        ASSERT_EQ(rt_results_log_param(rs, run, "device", "auto", NULL), RT_OK);
        ASSERT_EQ(rt_results_log_metric(rs, run, "lr", 0.5, 1, 0, RT_RESULTS_STEP, NULL), RT_OK);
        ASSERT_EQ(rt_results_log_metric(rs, run, "loss", 1.5, 1, 0, RT_RESULTS_STEP, NULL), RT_OK);
        ASSERT_EQ(rt_results_log_metric(rs, run, "train_loss", 1.25, 1, 1, RT_RESULTS_EPOCH, NULL),
                  RT_OK);
        ASSERT_EQ(rt_results_log_metric(rs, run, "val_accuracy", 0.75 + k * 0.1, 1, 1,
                                        RT_RESULTS_EPOCH, NULL),
                  RT_OK);
        ASSERT_EQ(rt_results_run_end(rs, run, RT_RESULTS_FINISHED, NULL), RT_OK);
    }
    rt_results_close(rs);
    ASSERT_EQ(magic("list --results %s", store), 0);
    char *text = capture_shown(&g_cap, "text/plain"), *html = capture_shown(&g_cap, "text/html");
    ASSERT(text && html);
    const char *head = strstr(text, "\nid ");
    const char *va = head ? strstr(head, "val_accuracy") : NULL,
               *tl = head ? strstr(head, "train_loss") : NULL,
               *lo = head ? strstr(head, " loss") : NULL, *lr = head ? strstr(head, " lr") : NULL;
    const char *eol = head ? strchr(head + 1, '\n') : NULL;
    int order = va && tl && !lo && lr && va < tl && tl < lr && eol && !strstr(lr + 1, " lr") &&
                strstr(head, "device") && !strstr(strstr(head, "device") + 1, "device");
    int common = strstr(text, "same in all: batch=64") != NULL;
    int no_empty = strstr(text, "results=") == NULL && strstr(text, "results ") == NULL;
    int nowrap =
        strstr(html, "<td style=\"padding:2px 8px;text-align:left;white-space:nowrap\">cnn") !=
        NULL;
    free(text);
    free(html);
    ASSERT(order);
    ASSERT(common);
    ASSERT(no_empty);
    ASSERT(nowrap);
    /* one run: its parameters on a line; no table line wider than a notebook */
    ASSERT_EQ(magic("list --results %s --limit 1", store), 0);
    text = capture_shown(&g_cap, "text/plain");
    ASSERT(text != NULL);
    int line_param = strstr(text, "\nparameters: ") && strstr(text, "batch=64") &&
                     strstr(text, "lr=0.0") && !strstr(text, " batch ");
    size_t widest = 0;
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        if (strncmp(p, "parameters:", 11) && n > widest) widest = n;
        p += n + (p[n] == '\n');
    }
    free(text);
    ASSERT(line_param);
    ASSERT(widest < 100);
}

T_TEST(t_show)
{
    ASSERT_EQ(magic("show fast --results %s", g_store), 0);
    char *text = capture_shown(&g_cap, "text/plain"), *svg = capture_shown(&g_cap, "image/svg+xml");
    int ok = text && strstr(text, "Run 2  fast  (finished)") && strstr(text, "Parameters") &&
             strstr(text, "0.01") && strstr(text, "Checkpoints") && strstr(text, "dense 10");
    int charts = svg && strstr(svg, "<svg") && strstr(svg, "per step") && strstr(svg, "per epoch");
    free(text);
    free(svg);
    ASSERT(ok);
    ASSERT(charts);
    ASSERT_EQ(capture_count(&g_cap, "image/svg+xml", NULL, NULL, NULL), 2);
}

T_TEST(t_compare)
{
    ASSERT_EQ(magic("compare 1 2 --results %s", g_store), 0);
    ASSERT_EQ(capture_count(&g_cap, "image/svg+xml", NULL, NULL, NULL), 2); /* val_acc, then loss */
    const char *first_chart = json_string_value(
        json_object_get(json_object_get(capture_find(&g_cap, "display", 0), "data"), "text/plain"));
    ASSERT(first_chart && strstr(first_chart, "val_acc")); /* validation first */
    char *svg = capture_shown(&g_cap, "image/svg+xml"), *text = capture_shown(&g_cap, "text/plain"),
         *html = capture_shown(&g_cap, "text/html");
    int legends =
        svg && strstr(svg, "#1 base") && strstr(svg, "#2 fast") && strstr(svg, "loss (per step)");
    /* lr differs (marked), batch is equal (not marked) */
    int marks = text && strstr(text, "* lr") && strstr(text, "  batch");
    int highlight = html && strstr(html, "background:#fff3c4");
    free(svg);
    free(text);
    free(html);
    ASSERT(legends);
    ASSERT(marks);
    ASSERT(highlight);

    ASSERT_EQ(magic("compare 1 2 3 --metric val_acc --results %s", g_store), 0);
    ASSERT_EQ(capture_count(&g_cap, "image/svg+xml", NULL, NULL, NULL), 1);
}

T_TEST(t_export_delete)
{
    char csv[700];
    snprintf(csv, sizeof csv, "%s/runs.csv", g_dir);
    ASSERT_EQ(magic("export csv %s --results %s --status finished", csv, g_store), 0);
    ASSERT_STR_CONTAINS(g_cap.text, "Exported 2 runs");
    char *data = tu_read_file(csv);
    int ok = data && strstr(data, "fast") && !strstr(data, "slow");
    free(data);
    ASSERT(ok);

    /* `export PATH` (as docs/results.md writes it): the format from the extension */
    char json_path[700];
    snprintf(json_path, sizeof json_path, "%s/runs.json", g_dir);
    ASSERT_EQ(magic("export %s --results %s", json_path, g_store), 0);
    ASSERT_STR_CONTAINS(g_cap.text, "(json)");
    data = tu_read_file(json_path);
    ok = data && data[0] == '{' && strstr(data, "fast");
    free(data);
    ASSERT(ok);
    ASSERT_EQ(magic("export %s/runs.txt --results %s", g_dir, g_store), -1);
    ASSERT_STR_EQ(g_err.ename, "UsageError");
    ASSERT_STR_CONTAINS(g_err.evalue, ".csv or .json");

    ASSERT_EQ(magic("delete 3 --results %s", g_store), 0);
    ASSERT_STR_CONTAINS(g_cap.text, "Deleted run 3 (slow)");
    ASSERT_EQ(magic("show 3 --results %s", g_store), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "no run '3'");
}

/* A store a writer is creating (a kiln sweep's first variant, while %results reads):
 * its file exists before its tables do. It reads as "no runs yet", never as an error
 * ("no such table: runs"). */
T_TEST(t_store_being_created)
{
    char empty[700], wal[700];
    snprintf(empty, sizeof empty, "%s/creating.sqlite", g_dir);
    ASSERT_EQ(tu_write_file(empty, ""), 0); /* created O_EXCL, nothing written yet */
    ASSERT_EQ(magic("list --results %s", empty), 0);
    ASSERT_STR_CONTAINS(g_cap.text, "No runs recorded yet");
    ASSERT_STR_CONTAINS(g_cap.text, "is being created");
    ASSERT_EQ(magic("list --where sweep=lr --results %s", empty), 0);
    ASSERT_STR_CONTAINS(g_cap.text, "No runs recorded yet");
    /* the next moment: WAL mode set, the schema not committed yet */
    snprintf(wal, sizeof wal, "%s/creating-wal.sqlite", g_dir);
    sqlite3 *db = NULL;
    ASSERT_EQ(sqlite3_open(wal, &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL), SQLITE_OK);
    ASSERT_EQ(magic("list --sort val_acc --results %s", wal), 0);
    ASSERT_STR_CONTAINS(g_cap.text, "No runs recorded yet");
    sqlite3_close(db);
    /* once the writer has made it, it is a store like any other */
    rt_results *rs = NULL;
    ASSERT_EQ(rt_results_open(empty, &rs, NULL), RT_OK);
    rt_results_close(rs);
    ASSERT_EQ(magic("list --results %s", empty), 0);
    ASSERT(strstr(g_cap.text, "No runs recorded yet") == NULL);
}

T_TEST(t_errors)
{
    ASSERT_EQ(magic("show 99 --results %s", g_store), -1);
    ASSERT_STR_EQ(g_err.ename, "FileNotFoundError");
    ASSERT_STR_CONTAINS(g_err.evalue, "%results");
    ASSERT_STR_CONTAINS(g_err.evalue, "%results list");
    ASSERT_EQ(magic("frobnicate --results %s", g_store), -1);
    ASSERT_STR_EQ(g_err.ename, "UsageError");
    ASSERT_STR_CONTAINS(g_err.evalue, "unknown subcommand");
    ASSERT_EQ(magic("compare 1 --results %s", g_store), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "RUN RUN");
    ASSERT_EQ(magic("export xml out.xml --results %s", g_store), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "csv or json");
    ASSERT_EQ(magic("list --status bogus --results %s", g_store), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "--status");
    ASSERT_EQ(magic("list --where lr --results %s", g_store), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "KEY=VALUE");

    char bad[700];
    snprintf(bad, sizeof bad, "%s/notes.txt", g_dir);
    ASSERT_EQ(tu_write_file(bad, "not a database at all, just some text here\n"), 0);
    ASSERT_EQ(magic("list --results %s", bad), -1);
    ASSERT_STR_CONTAINS(g_err.evalue, "not an SQLite database");
    /* the store is still fine afterwards */
    ASSERT_EQ(magic("list --results %s", g_store), 0);
    ASSERT_EQ(capture_count(&g_cap, "text/html", NULL, NULL, NULL), 1);
}

T_TEST(t_session_store_and_help)
{
    /* %train records the store it used; %results without --results follows it */
    ASSERT_EQ(mg_session_set(g_session, "results.spec", strdup(g_store), free), 0);
    ASSERT_EQ(magic("show last"), 0);
    char *text = capture_shown(&g_cap, "text/plain");
    int ok = text && strstr(text, "fast");
    free(text);
    ASSERT(ok);
    char *help = mg_command_help(&mg_cmd_results);
    int opts = help && strstr(help, "--where") && strstr(help, "--sort") &&
               strstr(help, "--status") && strstr(help, "--metric") && strstr(help, "compare");
    free(help);
    ASSERT(opts);
}

T_TEST(t_plot_basics)
{
    double x[3] = {1, 2, 3}, y[3] = {0.5, NAN, 0.25};
    mg_plot_series s[2] = {{"a <b> & \"c\"", x, y, 3}, {NULL, NULL, y, 1}};
    mg_plot_opts o = {.title = "t&t", .xlabel = "step", .ylabel = "loss", .log_y = 1};
    char *svg = mg_plot_svg(s, 2, &o);
    ASSERT(svg);
    int escaped = strstr(svg, "a &lt;b&gt; &amp; &quot;c&quot;") && strstr(svg, "t&amp;t");
    int dots = strstr(svg, "<circle") != NULL; /* isolated points after the NaN gap */
    int closed = strstr(svg, "</svg>") != NULL;
    free(svg);
    ASSERT(escaped);
    ASSERT(dots);
    ASSERT(closed);
    svg = mg_plot_svg(NULL, 0, NULL);
    ASSERT_STR_CONTAINS(svg, "no data");
    free(svg);
    ASSERT(mg_plot_svg(NULL, 1, NULL) == NULL);
    ASSERT(mg_plot_svg(s, -1, NULL) == NULL);
}

int main(void)
{
    if (tu_tmpdir(g_dir, sizeof g_dir) != 0) return 99;
    snprintf(g_store, sizeof g_store, "%s/store.sqlite", g_dir);
    capture_reset(&g_cap, 1);
    g_session = mg_session_create();
    unsetenv("KILN_RESULTS");
    if (populate() != 0) {
        fprintf(stderr, "could not populate %s\n", g_store);
        return 99;
    }
    T_RUN(t_empty_store);
    T_RUN(t_store_being_created);
    T_RUN(t_list);
    T_RUN(t_list_columns);
    T_RUN(t_show);
    T_RUN(t_compare);
    T_RUN(t_export_delete);
    T_RUN(t_errors);
    T_RUN(t_session_store_and_help);
    T_RUN(t_plot_basics);
    int rc = T_EXIT();
    capture_deinit(&g_cap);
    mg_session_destroy(g_session);
    if (rc == 0) tu_rmtree(g_dir);
    else fprintf(stderr, "kept %s for inspection\n", g_dir);
    return rc;
}
