/* mg_results_table.c - the tables %results shows: one grid of cells rendered twice,
 * as aligned plain text (for text/plain, `kiln run` and logs) and as HTML (for
 * JupyterLab). Column widths count UTF-8 code points, not bytes. The HTML version
 * can sort by a column on click: a few lines of inline script, which only trusted
 * notebooks run; the table reads fine without it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg_results_internal.h"

int mgp_table_init(mgp_table *t, size_t ncols)
{
    memset(t, 0, sizeof *t);
    t->ncols = ncols;
    return mgp_table_add_row(t) < 0 ? -1 : 0;
}

void mgp_table_deinit(mgp_table *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->nrows * t->ncols; i++) free(t->cells[i]);
    free(t->cells);
    free(t->mark);
    memset(t, 0, sizeof *t);
}

long mgp_table_add_row(mgp_table *t)
{
    if (t->nrows == t->caprows) {
        size_t cap = t->caprows ? t->caprows * 2 : 16;
        char **c = realloc(t->cells, cap * t->ncols * sizeof *c);
        if (!c) return -1;
        t->cells = c;
        unsigned char *m = realloc(t->mark, cap);
        if (!m) return -1;
        t->mark = m;
        t->caprows = cap;
    }
    for (size_t j = 0; j < t->ncols; j++) t->cells[t->nrows * t->ncols + j] = NULL;
    t->mark[t->nrows] = 0;
    return (long)t->nrows++;
}

int mgp_table_set(mgp_table *t, size_t row, size_t col, const char *fmt, ...)
{
    if (row >= t->nrows || col >= t->ncols) return -1;
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0) return -1;
    free(t->cells[row * t->ncols + col]);
    t->cells[row * t->ncols + col] = s;
    return 0;
}

static const char *cell(const mgp_table *t, size_t r, size_t c)
{
    const char *s = t->cells[r * t->ncols + c];
    return s ? s : "";
}

static size_t width(const char *s)
{
    size_t w = 0;
    for (; *s; s++) w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}

static int numeric(const char *s)
{
    if (!*s) return 0;
    char *end = NULL;
    strtod(s, &end);
    return *end == '\0';
}

void mgp_table_text(const mgp_table *t, FILE *f)
{
    size_t *w = calloc(t->ncols, sizeof *w);
    if (!w) return;
    int any_mark = 0;
    for (size_t r = 0; r < t->nrows; r++) {
        any_mark |= t->mark[r];
        for (size_t c = 0; c < t->ncols; c++)
            if (width(cell(t, r, c)) > w[c]) w[c] = width(cell(t, r, c));
    }
    for (size_t r = 0; r < t->nrows; r++) {
        if (any_mark) fputs(t->mark[r] ? "* " : "  ", f);
        for (size_t c = 0; c < t->ncols; c++) {
            const char *s = cell(t, r, c);
            int pad = (int)(w[c] - width(s));
            int right = r > 0 && numeric(s);
            if (right) fprintf(f, "%*s", pad, "");
            fputs(s, f);
            if (!right && c + 1 < t->ncols) fprintf(f, "%*s", pad, "");
            if (c + 1 < t->ncols) fputs("  ", f);
        }
        fputc('\n', f);
        if (r == 0) {
            size_t total = any_mark ? 2 : 0;
            for (size_t c = 0; c < t->ncols; c++) total += w[c] + (c + 1 < t->ncols ? 2 : 0);
            for (size_t i = 0; i < total; i++) fputc('-', f);
            fputc('\n', f);
        }
    }
    free(w);
}

void mgp_html(FILE *f, const char *s) { mg_html_put(f, s); }

/* Click a header to sort by it (numbers as numbers); click again to reverse. */
static const char sort_script[] =
    "<script>(function(){var t=document.currentScript.previousElementSibling;"
    "t.querySelectorAll('th').forEach(function(h,i){h.style.cursor='pointer';"
    "h.onclick=function(){var b=t.tBodies[0],r=Array.from(b.rows),d=h.dataset.d=="
    "'1'?-1:1;h.dataset.d=d>0?'1':'0';r.sort(function(x,y){var p=x.cells[i].innerText,"
    "q=y.cells[i].innerText,m=parseFloat(p),n=parseFloat(q);return d*((isNaN(m)||"
    "isNaN(n))?p.localeCompare(q):m-n)});r.forEach(function(e){b.appendChild(e)})}})"
    "})()</script>\n";

void mgp_table_html(const mgp_table *t, FILE *f, int sortable)
{
    /* the run list does not wrap (dates, paths); it scrolls sideways instead. On the
     * cells: JupyterLab's stylesheet sets td { white-space: normal } */
    fputs("<table class=\"kiln-results\" style=\"border-collapse:collapse\">\n<thead><tr>", f);
    for (size_t c = 0; c < t->ncols; c++) {
        fputs("<th style=\"text-align:left;padding:2px 8px;border-bottom:1px solid #888\"", f);
        if (sortable) fputs(" title=\"click to sort\"", f);
        fputs(">", f);
        mgp_html(f, cell(t, 0, c));
        fputs("</th>", f);
    }
    fputs("</tr></thead>\n<tbody>\n", f);
    for (size_t r = 1; r < t->nrows; r++) {
        fputs(t->mark[r] ? "<tr style=\"background:#fff3c4;font-weight:bold\">" : "<tr>", f);
        for (size_t c = 0; c < t->ncols; c++) {
            const char *s = cell(t, r, c);
            fprintf(f, "<td style=\"padding:2px 8px;text-align:%s%s\">",
                    numeric(s) ? "right" : "left", sortable ? ";white-space:nowrap" : "");
            mgp_html(f, s);
            fputs("</td>", f);
        }
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
    if (sortable) fputs(sort_script, f);
}
