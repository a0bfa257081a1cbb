/* mg_out.c - printf-style helpers over an mg_out, and mg_fail / mg_fail_status for errors.
 * Text that is not valid UTF-8 is still sent (outputs become JSON strings, and
 * jansson refuses invalid UTF-8), with the bad bytes replaced by U+FFFD. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "mg.h"
#include "rt_error.h"

static int valid_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (!len || i + len > n || (len == 2 && c < 0xc2)) return 0;
        for (size_t k = 1; k < len; k++)
            if ((s[i + k] & 0xc0) != 0x80) return 0;
        i += len;
    }
    return 1;
}

static void vsend(const mg_out *out, const char *name, const char *fmt, va_list ap)
{
    if (!out || !out->stream) return;
    char *text = NULL;
    int n = vasprintf(&text, fmt, ap);
    if (n < 0 || !text) return;
    if (!valid_utf8((const unsigned char *)text, (size_t)n)) {
        for (int i = 0; i < n; i++)
            if ((unsigned char)text[i] >= 0x80) text[i] = '?';
    }
    if (n > 0) out->stream(out->user, name, text, (size_t)n);
    free(text);
}

static void no_stream(void *u, const char *name, const char *text, size_t len)
{
    (void)u, (void)name, (void)text, (void)len;
}
static void no_display(void *u, json_t *data, json_t *meta, const char *id, int update)
{
    (void)u, (void)data, (void)meta, (void)id, (void)update;
}
static void no_result(void *u, json_t *data, json_t *meta) { (void)u, (void)data, (void)meta; }
static void no_clear(void *u, int wait) { (void)u, (void)wait; }

const mg_out *mg_out_complete(const mg_out *in, mg_out *buf)
{
    if (in) *buf = *in;
    else memset(buf, 0, sizeof *buf);
    if (!buf->stream) buf->stream = no_stream;
    if (!buf->display) buf->display = no_display;
    if (!buf->result) buf->result = no_result;
    if (!buf->clear) buf->clear = no_clear;
    return buf;
}

void mg_printf(const mg_out *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsend(out, "stdout", fmt, ap);
    va_end(ap);
}

void mg_eprintf(const mg_out *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsend(out, "stderr", fmt, ap);
    va_end(ap);
}

int mg_display_text_html(const mg_out *out, char *text, char *html)
{
    json_t *data =
        text && html ? json_pack("{s:s, s:s}", "text/plain", text, "text/html", html) : NULL;
    if (data && out && out->display) out->display(out->user, data, NULL, NULL, 0);
    json_decref(data);
    free(text);
    free(html);
    return data ? 0 : -1;
}

int mg_fail(mg_error *err, const char *ename, const char *fmt, ...)
{
    if (!err) return -1;
    snprintf(err->ename, sizeof err->ename, "%s", ename ? ename : "UsageError");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->evalue, sizeof err->evalue, fmt, ap);
    va_end(ap);
    return -1;
}

int mg_fail_status(mg_error *err, const rt_error *re, const char *fmt, ...)
{
    if (!err) return -1;
    snprintf(err->ename, sizeof err->ename, "%s", rt_status_exception(re ? re->code : RT_OK));
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->evalue, sizeof err->evalue, fmt, ap);
    va_end(ap);
    return -1;
}
