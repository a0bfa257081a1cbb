/* mg_results_internal.h - private to %results (mg_results*.c): a small table that
 * renders as aligned text and as HTML, output helpers, and the subcommands.
 */
#ifndef MG_RESULTS_INTERNAL_H
#define MG_RESULTS_INTERNAL_H

#include <stdio.h>

#include "mg.h"
#include "rt_results.h"
#include "rt_results_query.h"

/* ---- table (mg_results_table.c) ---- */

typedef struct mgp_table {
    size_t ncols, nrows, caprows;
    char **cells;        /* nrows x ncols, row 0 is the header; NULL = empty */
    unsigned char *mark; /* per row: highlighted (values differ) */
} mgp_table;

RT_MUST_USE int mgp_table_init(mgp_table *t, size_t ncols);
void mgp_table_deinit(mgp_table *t);
/* Appends an empty row; returns its index or -1 (out of memory). */
long mgp_table_add_row(mgp_table *t);
/* Sets a cell with printf formatting; 0 or -1. */
int mgp_table_set(mgp_table *t, size_t row, size_t col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Aligned columns; numbers right-aligned; a marked row starts with "*". */
void mgp_table_text(const mgp_table *t, FILE *f);
/* <table>; marked rows highlighted; sortable adds click-to-sort on the header. */
void mgp_table_html(const mgp_table *t, FILE *f, int sortable);

/* HTML-escapes s into f. */
void mgp_html(FILE *f, const char *s);

/* ---- shared by the subcommands (mg_results.c) ---- */

/* Sends a display_data with text/plain and text/html (either may be NULL). */
void mgp_display(mg_ctx *ctx, const char *text, const char *html);
/* A text/plain and a text/html report written side by side (memory streams t and h,
 * either NULL when it could not be opened); mgp_report_show closes both, sends them as
 * one display (mgp_display) and frees them. The struct must stay put in between. */
typedef struct mgp_report {
    FILE *t, *h;
    char *text, *html;
    size_t tl, hl;
} mgp_report;
void mgp_report_open(mgp_report *r);
void mgp_report_show(mg_ctx *ctx, mgp_report *r);
/* Sends an SVG chart as image/svg+xml with a text/plain fallback. Takes svg. */
void mgp_display_svg(mg_ctx *ctx, char *svg, const char *alt);
/* Turns an rt_error into the magic's error; returns -1. */
int mgp_fail_rt(mg_error *err, const rt_error *e);
/* The run which names or numbers (rt_results_find), read in full into r (free with
 * rt_results_run_free): 0, or -1 with the magic's error. */
int mgp_load_run(rt_results *rs, const char *which, rt_results_run *r, mg_error *err);
/* Values of a repeatable, comma-separated option, e.g. --where a=1,b=2 --where c=3.
 * Returns a NULL-terminated array of new strings (free with mgp_strv_free). */
char **mgp_option_list(const mg_args *a, const char *name, size_t *n);
void mgp_strv_free(char **v);
/* "1h02m", "3m12s", "12.3s", "-" */
void mgp_duration(double secs, char *buf, size_t n);
/* local "YYYY-MM-DD HH:MM" */
void mgp_time(double t, char *buf, size_t n);
/* %.4g, or "nan"/"-" */
void mgp_number(double v, char *buf, size_t n);

/* ---- --push / --pull URL (mg_results_sync.c): the store at path ---- */

RT_MUST_USE int mgp_results_sync(mg_ctx *ctx, const mg_args *a, const char *path, mg_error *err);

/* ---- subcommands (mg_results_view.c) ---- */

RT_MUST_USE int mgp_results_show(mg_ctx *ctx, rt_results *rs, const mg_args *a, mg_error *err);
RT_MUST_USE int mgp_results_compare(mg_ctx *ctx, rt_results *rs, const mg_args *a, mg_error *err);

#endif
