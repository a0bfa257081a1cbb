/* fm_fake.h - a fake mg_host (variables in a JSON object) and a fake mg_out that
 * records every comm_open/comm_msg/comm_close/display as JSON, for the forms tests. */
#ifndef FM_FAKE_H
#define FM_FAKE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fm.h"

typedef struct {
    json_t *vars; /* name -> value */
    json_t *
        log; /* [{"type": "comm_open", "id": ..., "target": ..., "data": ..., "metadata": ...}, ...] */
    int set_calls;
    int run_calls;
} fake;

static json_t *fake_get(void *u, const char *name)
{
    return json_object_get(((fake *)u)->vars, name);
}
static int fake_set(void *u, const char *name, json_t *value)
{
    fake *f = u;
    f->set_calls++;
    return json_object_set_new(f->vars, name, value);
}
/* Understands only "NAME = OTHER_VARIABLE"; anything else is a NameError. */
static int fake_run(void *u, const char *code, const mg_out *out, mg_error *err)
{
    fake *f = u;
    char name[64], other[64];
    f->run_calls++;
    if (sscanf(code, "%63[A-Za-z_0-9] = %63[A-Za-z_0-9]", name, other) == 2 &&
        json_object_get(f->vars, other)) {
        json_object_set(f->vars, name, json_object_get(f->vars, other));
        return 0;
    }
    snprintf(err->ename, sizeof err->ename, "NameError");
    snprintf(err->evalue, sizeof err->evalue, "cannot evaluate %s", code);
    return -1;
}

static void log_add(fake *f, const char *type, const char *id, const char *target, json_t *data,
                    json_t *meta)
{
    json_t *e = json_pack("{s:s,s:s?,s:s?,s:O?,s:O?}", "type", type, "id", id, "target", target,
                          "data", data, "metadata", meta);
    json_array_append_new(f->log, e);
}
static void fake_open(void *u, const char *id, const char *target, json_t *data, json_t *meta)
{
    log_add(u, "comm_open", id, target, data, meta);
}
static void fake_msg(void *u, const char *id, json_t *data, json_t *meta)
{
    log_add(u, "comm_msg", id, NULL, data, meta);
}
static void fake_close(void *u, const char *id, json_t *data)
{
    log_add(u, "comm_close", id, NULL, data, NULL);
}
static void fake_display(void *u, json_t *data, json_t *meta, const char *display_id, int update)
{
    log_add(u, "display", NULL, NULL, data, meta);
}

static void fake_init(fake *f, mg_host *host, mg_out *out, int with_comms)
{
    memset(f, 0, sizeof *f);
    f->vars = json_object();
    f->log = json_array();
    *host = (mg_host){.user = f, .var_get = fake_get, .var_set = fake_set, .run_cell = fake_run};
    *out = (mg_out){.user = f, .display = fake_display};
    if (with_comms) {
        out->comm_open = fake_open;
        out->comm_msg = fake_msg;
        out->comm_close = fake_close;
    }
}

static void fake_deinit(fake *f)
{
    json_decref(f->vars);
    json_decref(f->log);
}

/* The n-th logged entry of a type (n from 0), or NULL. */
static inline json_t *fake_find(fake *f, const char *type, int n)
{
    size_t i;
    json_t *e;
    json_array_foreach(f->log, i, e)
    {
        if (!strcmp(json_string_value(json_object_get(e, "type")), type) && n-- == 0) return e;
    }
    return NULL;
}

/* The state of the first comm_open whose _model_name is model (n-th match). */
static inline json_t *fake_model(fake *f, const char *model, int n, const char **id)
{
    size_t i;
    json_t *e;
    json_array_foreach(f->log, i, e)
    {
        if (strcmp(json_string_value(json_object_get(e, "type")), "comm_open")) continue;
        json_t *st = json_object_get(json_object_get(e, "data"), "state");
        if (!strcmp(json_string_value(json_object_get(st, "_model_name")), model) && n-- == 0) {
            if (id) *id = json_string_value(json_object_get(e, "id"));
            return st;
        }
    }
    return NULL;
}

#endif
