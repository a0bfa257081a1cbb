/* fm_carry.c - forms carried across a kernel restart.
 *
 * A restart is a new process, and a page reloaded before it has lost the display ids
 * that let the old kernel replace each form by its table (fm_registry_fallback_all):
 * the saved outputs still point at the old widget models, which the new kernel
 * would not know ("Error displaying widget: model not found"). So the kernel going
 * for a restart hands over, per form shown in a cell: the cell id, the cell's code,
 * the parameters' values and the models' states (fm_registry_carry). The new kernel
 * takes them in (fm_registry_carry_in) and
 *   - answers the widget manager's request_states with each form's root box holding
 *     one HTML widget, the table of the values it had (as_table): JupyterLab drops the
 *     old kernel's last messages when a person restarts it from the page, so the new
 *     kernel is the one that can still turn the page's form into its table;
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
#include "fm_widget.h"

#define CARRIED_CLASS "kiln-carried"

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

static json_t *carried_var(void *values, const char *name);

/* {model_name, model_module, model_module_version, state, buffers} of state (taken). */
static json_t *entry_of(json_t *st)
{
    if (!st) return NULL;
    return json_pack("{s:O,s:O,s:O,s:o,s:[]}", "model_name", json_object_get(st, "_model_name"),
                     "model_module", json_object_get(st, "_model_module"), "model_module_version",
                     json_object_get(st, "_model_module_version"), "state", st, "buffers");
}

/* The id of the model a form's output shows: the VBox no other model holds. */
static const char *root_of(json_t *states)
{
    const char *id, *id2, *root = NULL;
    json_t *e, *e2;
    json_object_foreach(states, id, e)
    {
        const char *model = json_string_value(json_object_get(e, "model_name"));
        if (!model || strcmp(model, "VBoxModel")) continue;
        char ref[96];
        snprintf(ref, sizeof ref, "IPY_MODEL_%s", id);
        int held = 0;
        json_object_foreach(states, id2, e2)
        {
            size_t i;
            json_t *c;
            json_array_foreach(json_object_get(json_object_get(e2, "state"), "children"), i, c)
                held |= json_is_string(c) && !strcmp(json_string_value(c), ref);
        }
        if (!held) root = id;
    }
    return root;
}

/* What a carried form shows after the restart: its root box (the model the cell's
 * output displays; the page may still hold it, disconnected) holding one HTML widget,
 * the table of the values, instead of controls that can no longer reach a kernel. The
 * widget manager sets the root's state on the model it has (or makes it, in a reloaded
 * page) and makes the table: so the page shows the values as a table, not greyed
 * controls, and its style hides ipywidgets' broken-link mark on that root. 0, or -1 on
 * no memory (a form whose root or code cannot be read is left as it came). */
static int as_table(fm_registry *r, json_t *one)
{
    json_t *states = json_object_get(one, "states");
    const char *root = root_of(states);
    fm_form *f = NULL;
    mg_error err = {{0}, {0}};
    if (!root || fm_form_parse(json_string_value(json_object_get(one, "code")), &f, &err) != 0 ||
        !f)
        return 0;
    mg_host h = {.user = json_object_get(one, "values"), .var_get = carried_var};
    json_t *bundle = fm_fallback_bundle(f, &h);
    fm_form_destroy(f);
    const char *table = json_string_value(json_object_get(bundle, "text/html"));
    json_t *rst = json_deep_copy(json_object_get(json_object_get(states, root), "state"));
    const char *lref = json_string_value(json_object_get(rst, "layout"));
    json_t *rlayout = lref && !strncmp(lref, "IPY_MODEL_", 10)
                          ? json_incref(json_object_get(states, lref + 10))
                          : NULL;
    char lid[40], sid[40], tid[40], *html = NULL;
    snprintf(lid, sizeof lid, "%s%016llx", r->prefix, r->next_id++);
    snprintf(sid, sizeof sid, "%s%016llx", r->prefix, r->next_id++);
    snprintf(tid, sizeof tid, "%s%016llx", r->prefix, r->next_id++);
    json_t *tst = fm_w_state("HTMLModel", lid, sid), *mine = json_object();
    char child[96];
    snprintf(child, sizeof child, "IPY_MODEL_%s", tid);
    int rc = -1;
    if (table && rst && tst && mine &&
        asprintf(&html,
                 "<style>." CARRIED_CLASS ".jupyter-widgets-disconnected::before{display:none}"
                 "</style>%s<p><small>The values before the kernel restarted: run the cell "
                 "to change them.</small></p>",
                 table) >= 0 &&
        !json_object_set_new(tst, "value", json_string(html)) &&
        !json_object_set_new(rst, "children", json_pack("[s]", child)) &&
        !json_object_set_new(rst, "_dom_classes", json_pack("[s]", CARRIED_CLASS)) &&
        !json_object_set_new(mine, root, entry_of(json_incref(rst))) &&
        !json_object_set_new(mine, tid, entry_of(json_incref(tst))) &&
        !json_object_set_new(mine, lid, entry_of(fm_w_state("LayoutModel", NULL, NULL))) &&
        !json_object_set_new(mine, sid, entry_of(fm_w_state("HTMLStyleModel", NULL, NULL))) &&
        (!rlayout || !json_object_set(mine, lref + 10, rlayout)))
        rc = json_object_set(one, "states", mine);
    free(html);
    json_decref(rst);
    json_decref(tst);
    json_decref(rlayout);
    json_decref(mine);
    json_decref(bundle);
    return rc;
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
    json_array_foreach(r->carried, i, one) if (as_table(r, one)) return -1;
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
