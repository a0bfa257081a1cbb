/* kl_error.c - raising errors inside the engine and turning them into Jupyter
 * errors: ename, a one-line evalue, and an IPython-like traceback (a list of
 * strings, ANSI-coloured) that quotes the cell line with a caret under the column.
 * SyntaxErrors put "(line L, column C)" in the evalue as well, since nothing ran. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kl_internal.h"

#define RED "\x1b[0;31m"
#define GREEN "\x1b[0;32m"
#define RESET "\x1b[0m"

static int vfail(klp_err *e, int line, int col, const char *ename, const char *fmt, va_list ap)
{
    if (e->set) return -1; /* the first error wins */
    memset(e, 0, sizeof *e);
    e->set = 1;
    e->line = line;
    e->col = col;
    snprintf(e->ename, sizeof e->ename, "%s", ename);
    vsnprintf(e->evalue, sizeof e->evalue, fmt, ap);
    return -1;
}

int klp_fail(klp_err *e, int line, int col, const char *ename, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(e, line, col, ename, fmt, ap);
    va_end(ap);
    return -1;
}

int klp_syntax(klp_err *e, int line, int col, const char *fmt, ...)
{
    if (e->set) return -1;
    va_list ap;
    va_start(ap, fmt);
    vfail(e, line, col, "SyntaxError", fmt, ap);
    va_end(ap);
    e->is_syntax = 1;
    return -1;
}

int klp_fail_repr(klp_err *e, int line, int col, const char *ename, const char *what, json_t *v)
{
    kl_buf b = {0};
    klp_repr(&b, v);
    klp_fail(e, line, col, ename, "%s%.900s", what, b.s ? b.s : "");
    kl_buf_free(&b);
    return -1;
}

void kl_error_deinit(kl_error *e)
{
    if (!e) return;
    json_decref(e->traceback);
    e->traceback = NULL;
}

/* Line `line` (1-based) of src, without its newline. */
static const char *src_line(const char *src, int line, size_t *len)
{
    const char *p = src;
    for (int i = 1; i < line && p; i++) {
        p = strchr(p, '\n');
        if (p) p++;
    }
    if (!p) return NULL;
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n && p[n - 1] == '\r') n--;
    *len = n;
    return p;
}

static void caret(kl_buf *b, int indent, const char *line, size_t len, int col, int end_col)
{
    for (int i = 0; i < indent; i++) kl_buf_add(b, " ", 1);
    /* keep tabs so the caret lines up under tab-indented text */
    size_t off = klp_utf8_offset(line, len, (size_t)(col - 1));
    for (size_t i = 0; i < off && i < len; i++)
        if (((unsigned char)line[i] & 0xc0) != 0x80) kl_buf_add(b, line[i] == '\t' ? "\t" : " ", 1);
    int w = end_col > col ? end_col - col : 1;
    kl_buf_puts(b, RED);
    for (int i = 0; i < w; i++) kl_buf_add(b, "^", 1);
    kl_buf_puts(b, RESET);
}

static void push_str(json_t *tb, kl_buf *b)
{
    if (!b->oom && b->s) json_array_append_new(tb, json_stringn(b->s, b->n));
    kl_buf_free(b);
}

/* Messages can quote user text cut at a byte limit (ours or another module's):
 * make evalue valid UTF-8 (it becomes a JSON string), cutting at a character. */
static void fix_utf8(char *s, size_t cap)
{
    size_t n = strlen(s);
    if (klp_utf8_valid(s, n)) return;
    kl_buf b = {0};
    klp_utf8_sanitize(&b, s, n, 1);
    size_t k = b.oom ? 0 : b.n;
    if (k >= cap) {
        k = cap - 1;
        while (k > 0 && ((unsigned char)b.s[k] & 0xc0) == 0x80) k--;
    }
    if (k) memcpy(s, b.s, k);
    s[k] = 0;
    kl_buf_free(&b);
}

void klp_err_export(const klp_err *e, const char *src, kl_error *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->ename, sizeof out->ename, "%s", e->set ? e->ename : "SystemError");
    if (e->is_syntax && e->line > 0)
        snprintf(out->evalue, sizeof out->evalue, "%.900s (line %d, column %d)", e->evalue, e->line,
                 e->col > 0 ? e->col : 1);
    else snprintf(out->evalue, sizeof out->evalue, "%s", e->set ? e->evalue : "unknown error");
    fix_utf8(out->evalue, sizeof out->evalue);
    fix_utf8(out->ename, sizeof out->ename);
    json_t *tb = json_array();
    if (!tb) return;
    kl_buf b = {0};
    size_t len = 0;
    const char *line = e->line > 0 && src ? src_line(src, e->line, &len) : NULL;
    if (line && !klp_utf8_valid(line, len)) line = NULL;
    if (e->is_syntax) {
        kl_buf_printf(&b, "  Cell line %d, column %d", e->line, e->col > 0 ? e->col : 1);
        push_str(tb, &b);
        if (line) {
            kl_buf_puts(&b, "    ");
            kl_buf_add(&b, line, len);
            kl_buf_puts(&b, "\n");
            caret(&b, 4, line, len, e->col > 0 ? e->col : 1, 0);
            push_str(tb, &b);
        }
    } else {
        kl_buf_puts(
            &b, RED
            "---------------------------------------------------------------------------" RESET);
        push_str(tb, &b);
        kl_buf_printf(&b, RED "%-42s" RESET "Traceback (most recent call last)", out->ename);
        push_str(tb, &b);
        if (line) {
            if (e->col > 0) kl_buf_printf(&b, "Cell line %d, column %d\n", e->line, e->col);
            else kl_buf_printf(&b, "Cell line %d\n", e->line);
            kl_buf_printf(&b, GREEN "---> %-3d" RESET, e->line);
            kl_buf_add(&b, line, len);
            if (e->col > 0) {
                kl_buf_puts(&b, "\n");
                caret(&b, 8, line, len, e->col, e->end_col);
            }
            push_str(tb, &b);
        }
    }
    kl_buf_printf(&b, RED "%s" RESET ": %s", out->ename, out->evalue);
    if (!klp_utf8_valid(b.s ? b.s : "", b.n)) {
        kl_buf_free(&b);
        kl_buf_printf(&b, RED "%s" RESET, out->ename);
    }
    push_str(tb, &b);
    out->traceback = tb;
}
