/* fm_fake.h - a fake mg_host (variables in a JSON object) and an mg_out that records
 * every comm_open/comm_msg/comm_close/display in order (cap.log, tests/support's
 * capture.h), for the forms tests. */
#ifndef FM_FAKE_H
#define FM_FAKE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "fm.h"

typedef struct {
    json_t *vars; /* name -> value */
    capture cap;  /* what the forms show; cap.log holds every message (capture.h) */
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

static void fake_init(fake *f, mg_host *host, mg_out *out, int with_comms)
{
    memset(f, 0, sizeof *f);
    f->vars = json_object();
    capture_reset(&f->cap, 1);
    *host = (mg_host){.user = f, .var_get = fake_get, .var_set = fake_set, .run_cell = fake_run};
    *out = (mg_out){.user = &f->cap, .display = capture_display};
    if (with_comms) {
        out->comm_open = capture_comm_open;
        out->comm_msg = capture_comm_msg;
        out->comm_close = capture_comm_close;
    }
}

static void fake_deinit(fake *f)
{
    json_decref(f->vars);
    capture_deinit(&f->cap);
}

/* The state of the first comm_open whose _model_name is model (n-th match). */
static inline json_t *fake_model(fake *f, const char *model, int n, const char **id)
{
    size_t i;
    json_t *e;
    json_array_foreach(f->cap.log, i, e)
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
