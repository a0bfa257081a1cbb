/* capture.c - the recording mg_out of capture.h. */
#include "capture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void capture_append(char *buf, size_t *n, const char *what, const char *text, size_t len)
{
    if (len >= CAPTURE_TEXT_MAX - *n) {
        fprintf(stderr, "capture: more than %d bytes on %s; raise CAPTURE_TEXT_MAX\n",
                CAPTURE_TEXT_MAX - 1, what);
        abort();
    }
    memcpy(buf + *n, text, len);
    *n += len;
    buf[*n] = '\0';
}

static void capture_log(capture *c, json_t *entry)
{
    if (c->log) json_array_append(c->log, entry);
    json_decref(entry);
}

void capture_stream(void *user, const char *name, const char *text, size_t len)
{
    capture *c = user;
    if (strcmp(name, "stdout")) capture_append(c->err, &c->nerr, "stderr", text, len);
    else capture_append(c->out, &c->nout, "stdout", text, len);
    capture_append(c->text, &c->ntext, "stdout and stderr", text, len);
    c->nchunks++;
}

void capture_display(void *user, json_t *data, json_t *metadata, const char *id, int update)
{
    capture *c = user;
    c->ndisplays++;
    capture_log(c, json_pack("{s:s, s:O?, s:O?, s:s?, s:b}", "type", "display", "data", data,
                             "metadata", metadata, "id", id, "update", update));
}

void capture_result(void *user, json_t *data, json_t *metadata)
{
    capture *c = user;
    const char *t = json_string_value(json_object_get(data, "text/plain"));
    snprintf(c->result, sizeof c->result, "%s", t ? t : "(no text/plain)");
    c->nresults++;
    capture_log(
        c, json_pack("{s:s, s:O?, s:O?}", "type", "result", "data", data, "metadata", metadata));
}

void capture_clear(void *user, int wait)
{
    capture *c = user;
    c->nclears++;
    capture_log(c, json_pack("{s:s, s:b}", "type", "clear", "wait", wait));
}

char *capture_input(void *user, const char *prompt, int password)
{
    (void)prompt;
    (void)password;
    capture *c = user;
    return c->input_reply ? strdup(c->input_reply) : NULL;
}

void capture_comm_open(void *user, const char *id, const char *target, json_t *data,
                       json_t *metadata)
{
    capture *c = user;
    c->ncomms++;
    capture_log(c, json_pack("{s:s, s:s?, s:s?, s:O?, s:O?}", "type", "comm_open", "id", id,
                             "target", target, "data", data, "metadata", metadata));
}

void capture_comm_msg(void *user, const char *id, json_t *data, json_t *metadata)
{
    capture *c = user;
    c->ncomms++;
    capture_log(c, json_pack("{s:s, s:s?, s:O?, s:O?}", "type", "comm_msg", "id", id, "data", data,
                             "metadata", metadata));
}

void capture_comm_close(void *user, const char *id, json_t *data)
{
    capture *c = user;
    c->ncomms++;
    capture_log(c, json_pack("{s:s, s:s?, s:O?}", "type", "comm_close", "id", id, "data", data));
}

mg_out capture_out(capture *c)
{
    memset(c, 0, sizeof *c);
    return (mg_out){.user = c,
                    .stream = capture_stream,
                    .display = capture_display,
                    .result = capture_result,
                    .clear = capture_clear,
                    .input = capture_input};
}

void capture_reset(capture *c, int log)
{
    json_t *keep = c->log;
    const char *reply = c->input_reply;
    json_array_clear(keep);
    memset(c, 0, sizeof *c);
    c->log = keep ? keep : log ? json_array() : NULL;
    c->input_reply = reply;
}

void capture_deinit(capture *c)
{
    json_decref(c->log);
    c->log = NULL;
}

json_t *capture_find(const capture *c, const char *type, int n)
{
    size_t i;
    json_t *e;
    json_array_foreach(c->log, i, e)
    {
        if (!strcmp(json_string_value(json_object_get(e, "type")), type) && n-- == 0) return e;
    }
    return NULL;
}

char *capture_shown(const capture *c, const char *mime)
{
    char *all = strdup("");
    size_t i;
    json_t *e;
    json_array_foreach(c->log, i, e)
    {
        const char *s = json_string_value(json_object_get(json_object_get(e, "data"), mime));
        if (!s || !all || strcmp(json_string_value(json_object_get(e, "type")), "display"))
            continue;
        char *p = realloc(all, strlen(all) + strlen(s) + 1);
        if (!p) {
            free(all);
            return NULL;
        }
        all = strcat(p, s);
    }
    return all;
}

int capture_count(const capture *c, const char *mime, const char *prefix, const char **id,
                  int *updates)
{
    int n = 0;
    size_t i;
    json_t *e;
    if (updates) *updates = 0;
    json_array_foreach(c->log, i, e)
    {
        json_t *data = json_object_get(e, "data");
        const char *tp = json_string_value(json_object_get(data, "text/plain"));
        if (strcmp(json_string_value(json_object_get(e, "type")), "display")) continue;
        if (!json_object_get(data, mime)) continue;
        if (prefix && (!tp || strncmp(tp, prefix, strlen(prefix)))) continue;
        if (!n && id) *id = json_string_value(json_object_get(e, "id"));
        if (updates && json_is_true(json_object_get(e, "update"))) ++*updates;
        n++;
    }
    return n;
}
