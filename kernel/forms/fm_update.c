/* fm_update.c - messages from the frontend's widget manager (ipywidgets protocol
 * 2.1): "update" when the user moves a control, "request_state" when a view needs a
 * model's full state, and the jupyter.widget.control comm's "request_states".
 *
 * An update of a control's value is checked against the parameter's annotation
 * (fm_check_value) and written to the variable at once through mg_host. Accepted
 * keys are echoed back ("echo_update", as 2.1 expects); a refused value changes
 * nothing in the kernel, is logged on stderr, and the kernel sends an "update" with
 * the value it keeps, so the control snaps back.
 *
 * Raw and untyped fields (text boxes holding code) take a Python literal; anything
 * else is run as the one-line assignment `name = text` through mg_host.run_cell,
 * which is what running the cell with that text would do.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fm_registry.h"
#include "fm_widget.h"
#include "kl.h"

static void send(const mg_out *out, const char *id, json_t *data)
{
    if (out && out->comm_msg && data) {
        json_t *meta = json_pack("{s:s}", "version", FM_PROTOCOL_VERSION);
        if (meta) out->comm_msg(out->user, id, data, meta);
        json_decref(meta);
    }
    json_decref(data);
}

/* Code text typed into a raw field: a literal becomes the value (*value set); other
 * code is assigned by running `name = text`. 0 on success, -1 with msg. */
static int assign_code(const fm_field *f, const char *text, const mg_host *host, const mg_out *out,
                       json_t **value, char *msg, size_t len)
{
    *value = kl_literal_parse(text);
    if (*value) return 0;
    if (!*text || strpbrk(text, "\r\n")) {
        snprintf(msg, len, "'%s' needs one line of code", f->name);
        return -1;
    }
    if (!host || !host->run_cell) {
        snprintf(msg, len, "'%s': %.60s is not a literal", f->name, text);
        return -1;
    }
    size_t n = strlen(f->name) + strlen(text) + 4;
    char *code = malloc(n);
    if (!code) {
        snprintf(msg, len, "out of memory");
        return -1;
    }
    snprintf(code, n, "%s = %s", f->name, text);
    mg_error err = {{0}, {0}};
    int rc = host->run_cell(host->user, code, out, &err);
    free(code);
    if (rc) snprintf(msg, len, "'%s': %.60s: %.300s", f->name, err.ename, err.evalue);
    return rc ? -1 : 0;
}

/* Applies wire value v of field f's control. 0 when the variable was set. */
static int apply_value(const fm_field *f, json_t *v, const mg_host *host, const mg_out *out,
                       char *msg, size_t len)
{
    const char *model = fm_w_control_model(f);
    json_t *nv = NULL;
    int code_field =
        f->kind == FM_RAW || f->kind == FM_UNTYPED || (f->kind == FM_DROPDOWN && f->raw);
    if (!strcmp(model, "DropdownModel")) {
        json_int_t i = json_is_integer(v) ? json_integer_value(v) : -1;
        if (i < 0 || (size_t)i >= json_array_size(f->labels)) {
            snprintf(msg, len, "'%s' has no option at that index", f->name);
            return -1;
        }
        if (f->raw) {
            if (assign_code(f, json_string_value(json_array_get(f->labels, (size_t)i)), host, out,
                            &nv, msg, len))
                return -1;
            if (!nv) return 0; /* assigned by running the code */
        } else {
            nv = json_incref(json_array_get(f->values, (size_t)i));
        }
    } else if (!strcmp(model, "TextModel") || !strcmp(model, "ComboboxModel")) {
        if (!json_is_string(v)) {
            snprintf(msg, len, "'%s' takes text", f->name);
            return -1;
        }
        if (code_field) {
            if (assign_code(f, json_string_value(v), host, out, &nv, msg, len)) return -1;
            if (!nv) return 0;
        } else {
            nv = fm_check_value(f, v, msg, len);
        }
    } else {
        nv = fm_check_value(f, v, msg, len);
    }
    if (!nv) return -1;
    if (!host || !host->var_set || host->var_set(host->user, f->name, nv)) {
        if (!host || !host->var_set) json_decref(nv);
        snprintf(msg, len, "could not set variable '%s'", f->name);
        return -1;
    }
    return 0;
}

static void handle_update(fm_registry *r, const char *id, json_t *entry, json_t *delta,
                          const mg_host *host, const mg_out *out)
{
    json_t *st = json_object_get(entry, "state");
    json_int_t item = json_integer_value(json_object_get(entry, "item"));
    fm_shown *s = fm_registry_find_serial(
        r, (unsigned long)json_integer_value(json_object_get(entry, "form")));
    const fm_field *f =
        s && item >= 0 && (size_t)item < s->form->n ? s->form->items[item].field : NULL;
    const char *vkey = f ? fm_w_value_key(f) : NULL;
    json_t *echo = json_object();
    const char *k;
    json_t *v;
    if (!echo || !json_is_object(delta)) {
        json_decref(echo);
        return;
    }
    json_object_foreach(delta, k, v)
    {
        if (k[0] == '_' || !json_object_get(st, k)) continue; /* identity keys, unknown keys */
        if (vkey && !strcmp(k, vkey)) {
            char msg[600];
            if (apply_value(f, v, host, out, msg, sizeof msg)) {
                fprintf(stderr, "kiln forms: refused update: %s\n", msg);
                send(out, id,
                     json_pack("{s:s,s:{s:O},s:[]}", "method", "update", "state", vkey,
                               json_object_get(st, vkey), "buffer_paths"));
                continue;
            }
            s->moved = 1; /* its display's table is refreshed before the next cell */
        }
        json_object_set(st, k, v);
        json_object_set(echo, k, v);
    }
    if (json_object_size(echo))
        send(out, id,
             json_pack("{s:s,s:O,s:[]}", "method", "echo_update", "state", echo, "buffer_paths"));
    json_decref(echo);
}

static int control_msg(fm_registry *r, json_t *data, const mg_out *out)
{
    const char *method = json_string_value(json_object_get(data, "method"));
    if (method && !strcmp(method, "request_states")) {
        json_t *states = fm_registry_states(r);
        if (states && fm_registry_carried_states(r, states)) {
            json_decref(states);
            states = NULL;
        }
        if (states)
            send(out, r->control_comm,
                 json_pack("{s:s,s:o,s:[]}", "method", "update_states", "states", states,
                           "buffer_paths"));
    }
    return 0;
}

int fm_registry_comm_msg(fm_registry *r, const char *msg_type, json_t *content, const mg_host *host,
                         const mg_out *out)
{
    const char *id = json_string_value(json_object_get(content, "comm_id"));
    if (!r || !msg_type || !id) return -1;
    if (!strcmp(msg_type, "comm_open")) {
        const char *target = json_string_value(json_object_get(content, "target_name"));
        if (!target || strcmp(target, FM_CONTROL_TARGET)) return -1;
        char *copy = strdup(id);
        if (!copy) return -1;
        free(r->control_comm);
        r->control_comm = copy;
        return 0;
    }
    int is_control = r->control_comm && !strcmp(r->control_comm, id);
    json_t *entry = json_object_get(r->models, id);
    if (!strcmp(msg_type, "comm_close")) {
        if (is_control) {
            free(r->control_comm);
            r->control_comm = NULL;
            return 0;
        }
        if (!entry) return -1;
        json_object_del(r->models, id);
        return 0;
    }
    if (strcmp(msg_type, "comm_msg")) return -1;
    json_t *data = json_object_get(content, "data");
    if (is_control) return control_msg(r, data, out);
    if (!entry) return -1;
    const char *method = json_string_value(json_object_get(data, "method"));
    if (!method) return 0;
    if (!strcmp(method, "request_state")) {
        send(out, id,
             json_pack("{s:s,s:O,s:[]}", "method", "update", "state",
                       json_object_get(entry, "state"), "buffer_paths"));
    } else if (!strcmp(method, "update")) {
        handle_update(r, id, entry, json_object_get(data, "state"), host, out);
    }
    return 0;
}
