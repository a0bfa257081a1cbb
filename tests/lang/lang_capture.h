/* lang_capture.h - an mg_out that records everything a cell shows, for the engine
 * tests: stdout/stderr text, the last execute_result's text/plain, displays. */
#ifndef LANG_CAPTURE_H
#define LANG_CAPTURE_H

#include <stdlib.h>
#include <string.h>

#include "kl.h"

typedef struct capture {
    char out[65536], err[65536], result[65536];
    size_t nout, nerr;
    int nresults, ndisplays, nchunks;
    const char *input_reply; /* what input() gets; NULL = no stdin */
} capture;

static void cap_stream(void *u, const char *name, const char *text, size_t len)
{
    capture *c = u;
    char *dst = strcmp(name, "stdout") ? c->err : c->out;
    size_t *n = strcmp(name, "stdout") ? &c->nerr : &c->nout;
    if (*n + len >= sizeof c->out) len = sizeof c->out - 1 - *n;
    memcpy(dst + *n, text, len);
    *n += len;
    dst[*n] = 0;
    c->nchunks++;
}

static void cap_result(void *u, json_t *data, json_t *meta)
{
    (void)meta;
    capture *c = u;
    const char *t = json_string_value(json_object_get(data, "text/plain"));
    snprintf(c->result, sizeof c->result, "%s", t ? t : "(no text/plain)");
    c->nresults++;
}

static void cap_display(void *u, json_t *data, json_t *meta, const char *id, int update)
{
    (void)data;
    (void)meta;
    (void)id;
    (void)update;
    ((capture *)u)->ndisplays++;
}

static char *cap_input(void *u, const char *prompt, int password)
{
    (void)prompt;
    (void)password;
    capture *c = u;
    return c->input_reply ? strdup(c->input_reply) : NULL;
}

static mg_out cap_out(capture *c)
{
    memset(c, 0, sizeof *c);
    mg_out o = {0};
    o.user = c;
    o.stream = cap_stream;
    o.result = cap_result;
    o.display = cap_display;
    o.input = cap_input;
    return o;
}

#endif
