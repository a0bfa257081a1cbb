/* fm_carry.c - forms carried across a kernel restart.
 *
 * A restart is a new process, and a page reloaded before it has lost the display ids
 * that let the old kernel replace each form by its table (fm_registry_fallback_all):
 * the saved outputs still point at the old widget models, which the new kernel
 * would not know ("Error displaying widget: model not found"). So the kernel going
 * for a restart hands over, per form shown in a cell: the cell id, the cell's code,
 * the parameters' values and the models' states (fm_registry_carry). The new kernel
 * takes them in (fm_registry_carry_in) and
 *   - answers the widget manager's request_states with those models, controls
 *     disabled: the form shows the values it had, a picture until the cell runs;
 *   - when the same cell runs again with the same code, writes those values into the
 *     code (fm_registry_write_back), as a re-run in the old kernel would have done.
 * Running the cell drops its carried form (fm_registry_show). The kernel side keeps
 * the document in a file between the two processes (kernel/jk_carry.c).
 *
 * Document: {"version": 1, "forms": [{"cell", "code", "values": {name: value},
 *            "states": {model id: {model_name, model_module, model_module_version,
 *                                  state, buffers}}}]}
 */
#include <stdlib.h>
#include <string.h>

#include "fm_registry.h"

/* The states of form s's models (new ref), controls disabled. */
static json_t *shown_states(fm_registry *r, const fm_shown *s)
{
    json_t *all = fm_registry_states(r), *mine = json_object();
    size_t i;
    json_t *id;
    if (!all || !mine) goto fail;
    json_array_foreach(s->ids, i, id)
    {
        json_t *one = json_object_get(all, json_string_value(id));
        json_t *st = json_object_get(one, "state");
        if (!one) continue;
        if (json_object_get(st, "disabled") && json_object_set_new(st, "disabled", json_true()))
            goto fail;
        if (json_object_set(mine, json_string_value(id), one)) goto fail;
    }
    json_decref(all);
    return mine;
fail:
    json_decref(all);
    json_decref(mine);
    return NULL;
}

static json_t *shown_values(const fm_shown *s, const mg_host *host)
{
    json_t *values = json_object();
    for (size_t i = 0; values && i < s->form->n; i++) {
        const fm_field *f = s->form->items[i].field;
        json_t *v = f && host && host->var_get ? host->var_get(host->user, f->name) : NULL;
        if (v && json_object_set(values, f->name, v)) {
            json_decref(values);
            return NULL;
        }
    }
    return values;
}

json_t *fm_registry_carry(fm_registry *r, const mg_host *host)
{
    json_t *forms = r && r->carried ? json_deep_copy(r->carried) : json_array();
    for (size_t i = 0; forms && r && i < r->n; i++) {
        const fm_shown *s = r->forms[i];
        if (!s->cell_key || !s->form->source) continue; /* no cell to come back to */
        json_t *one = json_pack("{s:s,s:s,s:o*,s:o*}", "cell", s->cell_key, "code", s->form->source,
                                "values", shown_values(s, host), "states", shown_states(r, s));
        if (!one || !json_object_get(one, "values") || !json_object_get(one, "states") ||
            json_array_append_new(forms, one)) {
            json_decref(forms);
            return NULL;
        }
    }
    if (!json_array_size(forms)) {
        json_decref(forms);
        return NULL;
    }
    return json_pack("{s:i,s:o}", "version", 1, "forms", forms);
}

/* One carried form as the document holds it: the fields have their types. */
static int carried_valid(json_t *one)
{
    json_t *states = json_object_get(one, "states");
    const char *id;
    json_t *st;
    if (!json_is_string(json_object_get(one, "cell")) ||
        !json_is_string(json_object_get(one, "code")) ||
        !json_is_object(json_object_get(one, "values")) || !json_is_object(states))
        return 0;
    json_object_foreach(states, id, st) if (!json_is_string(json_object_get(st, "model_name")) ||
                                            !json_is_object(json_object_get(st, "state"))) return 0;
    return 1;
}

int fm_registry_carry_in(fm_registry *r, json_t *doc)
{
    json_t *forms = json_object_get(doc, "forms"), *one;
    size_t i;
    if (!r || json_integer_value(json_object_get(doc, "version")) != 1 || !json_is_array(forms))
        return -1;
    json_array_foreach(forms, i, one) if (!carried_valid(one)) return -1;
    json_decref(r->carried);
    r->carried = json_deep_copy(forms);
    return r->carried ? (int)json_array_size(r->carried) : -1;
}

int fm_registry_carried_states(const fm_registry *r, json_t *states)
{
    size_t i;
    json_t *one;
    if (!r || !r->carried) return 0;
    json_array_foreach(
        r->carried, i,
        one) if (json_object_update_missing(states, json_object_get(one, "states"))) return -1;
    return 0;
}

static json_t *carried_var(void *values, const char *name) { return json_object_get(values, name); }

char *fm_registry_carried_write_back(fm_registry *r, const char *cell_key, const char *code)
{
    size_t i;
    json_t *one;
    if (!r || !r->carried || !cell_key || !code) return NULL;
    json_array_foreach(r->carried, i, one)
    {
        if (strcmp(json_string_value(json_object_get(one, "cell")), cell_key) ||
            strcmp(json_string_value(json_object_get(one, "code")), code))
            continue;
        fm_form *f = NULL;
        mg_error err = {{0}, {0}};
        if (fm_form_parse(code, &f, &err) != 0 || !f) return NULL;
        mg_host h = {.user = json_object_get(one, "values"), .var_get = carried_var};
        char *out = fm_form_write_back(f, code, &h);
        fm_form_destroy(f);
        return out;
    }
    return NULL;
}

void fm_registry_carried_drop(fm_registry *r, const char *cell_key, const mg_out *out)
{
    for (size_t i = 0; r && r->carried && i < json_array_size(r->carried);) {
        json_t *one = json_array_get(r->carried, i);
        if (strcmp(json_string_value(json_object_get(one, "cell")), cell_key)) {
            i++;
            continue;
        }
        const char *id;
        json_t *st;
        json_object_foreach(json_object_get(one, "states"), id, st)
        {
            json_t *empty = json_object();
            if (out && out->comm_close && empty) out->comm_close(out->user, id, empty);
            json_decref(empty);
        }
        json_array_remove(r->carried, i);
    }
}
