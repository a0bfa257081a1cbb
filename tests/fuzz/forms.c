/* forms.c - fuzz target: Colab form annotations (fm_form_parse: #@title,
 * #@markdown, #@param with every type and option), then what follows a parsed form:
 * `kiln run -p` coercion (fm_form_coerce), showing it as widgets and as the text/HTML
 * fallback (fm_registry_show), and widget updates from a frontend
 * (fm_registry_comm_msg).
 * Input: cell code, optionally followed by a NUL byte and the JSON value a frontend
 * sends as each widget's new "value" (text that is not JSON is sent as a string).
 * Invariants: a refused cell names the line ("line N: ..."); a form shown with comms
 * opens at least one comm. */
#include <stdio.h>
#include <string.h>

#include "fm.h"
#include "fz.h"

typedef struct host_state {
    json_t *vars;
    json_t *comms; /* comm ids opened */
} host_state;

static json_t *h_get(void *u, const char *name)
{
    return json_object_get(((host_state *)u)->vars, name);
}
static int h_set(void *u, const char *name, json_t *v)
{
    return json_object_set_new(((host_state *)u)->vars, name, v);
}
static int h_run(void *u, const char *code, const mg_out *out, mg_error *err)
{
    (void)u, (void)code, (void)out;
    snprintf(err->ename, sizeof err->ename, "NameError");
    snprintf(err->evalue, sizeof err->evalue, "no engine in this test");
    return -1;
}
static void o_open(void *u, const char *id, const char *target, json_t *d, json_t *m)
{
    (void)target, (void)d, (void)m;
    json_array_append_new(((host_state *)u)->comms, json_string(id));
}
static void o_msg(void *u, const char *id, json_t *d, json_t *m)
{
    (void)u, (void)id, (void)d, (void)m;
}
static void o_close(void *u, const char *id, json_t *d) { (void)u, (void)id, (void)d; }
static void o_display(void *u, json_t *d, json_t *m, const char *id, int up)
{
    (void)u, (void)d, (void)m, (void)id, (void)up;
}

static void try_coerce(const fm_form *f)
{
    static const char *const names[] = {"epochs",  "lr", "optimizer", "run_name",
                                        "augment", "x",  "d"};
    static const char *const values[] = {"5",    "0.1",    "'adam'",    "mnist",
                                         "True", "[1, 2]", "2026-01-02"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        for (size_t j = 0; j < sizeof values / sizeof *values; j++) {
            json_t *v = NULL;
            mg_error err = {{0}, {0}};
            int rc = fm_form_coerce(f, names[i], values[j], &v, &err);
            if (rc == 1) FZ_CHECK(v != NULL);
            if (rc < 0) FZ_CHECK(err.evalue[0] != '\0');
            json_decref(v);
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *code = fz_strdup(data, size);
    if (!code) return 0;
    size_t clen = strlen(code);
    json_t *update = NULL;
    if (clen < size) {
        const char *rest = (const char *)data + clen + 1;
        size_t rlen = size - clen - 1;
        update = json_loadb(rest, rlen, JSON_DECODE_ANY, NULL);
        if (!update) update = json_stringn(rest, rlen);
    }
    fm_form *f = NULL;
    mg_error err = {{0}, {0}};
    if (fm_form_parse(code, &f, &err) < 0) {
        FZ_CHECK(f == NULL);
        FZ_CHECK(!strncmp(err.evalue, "line ", 5));
        goto done;
    }
    if (!f) goto done;
    try_coerce(f);
    host_state hs = {json_object(), json_array()};
    mg_host host = {.user = &hs, .var_get = h_get, .var_set = h_set, .run_cell = h_run};
    mg_out out = {.user = &hs,
                  .display = o_display,
                  .comm_open = o_open,
                  .comm_msg = o_msg,
                  .comm_close = o_close};
    fm_registry *r = fm_registry_create();
    FZ_CHECK(r != NULL);
    /* the fallback first (a second parse: show takes the form) */
    fm_form *f2 = NULL;
    FZ_CHECK(fm_form_parse(code, &f2, &err) == 0 && f2);
    mg_out plain = {.user = &hs, .display = o_display};
    if (fm_registry_show(r, f2, NULL, &host, &plain, &err) < 0) FZ_CHECK(err.evalue[0]);
    if (fm_registry_show(r, f, NULL, &host, &out, &err) == 0) {
        size_t i;
        json_t *id;
        json_array_foreach(hs.comms, i, id)
        {
            json_t *msg = json_pack("{s:O,s:{s:s,s:{s:O?},s:[]}}", "comm_id", id, "data", "method",
                                    "update", "state", "value", update, "buffer_paths");
            if (msg) fm_registry_comm_msg(r, "comm_msg", msg, &host, &out);
            json_decref(msg);
            msg = json_pack("{s:O,s:{s:s}}", "comm_id", id, "data", "method", "request_state");
            if (msg) fm_registry_comm_msg(r, "comm_msg", msg, &host, &out);
            json_decref(msg);
        }
        json_decref(fm_registry_widget_state(r));
    } else {
        FZ_CHECK(err.evalue[0]);
    }
    fm_registry_destroy(r);
    json_decref(hs.vars);
    json_decref(hs.comms);
done:
    json_decref(update);
    free(code);
    return 0;
}
