/* fm_registry.c - forms on screen. fm_registry_show() turns a parsed form into
 * ipywidgets models and opens them in the order the frontend needs (each Layout and
 * Style before the widget that references it, children before their box, the VBox
 * last, then the display_data), or, without comms, just records them and shows the
 * text/HTML table. A form is keyed by its cell (JupyterLab's cellId): showing a cell
 * again closes the old models first, so re-running a cell replaces its form.
 *
 * The model table (id -> state) is what request_state, the control comm's
 * request_states and the notebook's saved widget state are answered from; the
 * frontend's edits are merged into it (fm_update.c).
 *
 * Layout of a form: VBox[ HTML(title), HTML(markdown)..., HBox[Label(name), control]... ]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "fm_registry.h"
#include "fm_widget.h"

#define FM_ID_LEN 40

fm_registry *fm_registry_create(void)
{
    fm_registry *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->models = json_object();
    if (!r->models) {
        free(r);
        return NULL;
    }
    unsigned long long seed = 0;
    if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != (ssize_t)sizeof seed)
        seed =
            (unsigned long long)time(NULL) * 6364136223846793005ULL ^ (unsigned long long)getpid();
    snprintf(r->prefix, sizeof r->prefix, "%016llx", seed);
    r->next_serial = 1;
    return r;
}

static void shown_free(fm_shown *s)
{
    if (!s) return;
    free(s->cell_key);
    free(s->shown_text);
    fm_form_destroy(s->form);
    json_decref(s->ids);
    free(s);
}

void fm_registry_destroy(fm_registry *r)
{
    if (!r) return;
    for (size_t i = 0; i < r->n; i++) shown_free(r->forms[i]);
    free(r->forms);
    json_decref(r->models);
    free(r->control_comm);
    json_decref(r->carried);
    free(r);
}

fm_shown *fm_registry_find_serial(fm_registry *r, unsigned long serial)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->forms[i]->serial == serial) return r->forms[i];
    return NULL;
}

/* Closes and forgets the form shown for cell_key (the cell is being re-run). */
static void drop_cell(fm_registry *r, const char *cell_key, const mg_out *out)
{
    for (size_t i = 0; i < r->n; i++) {
        fm_shown *s = r->forms[i];
        if (!s->cell_key || strcmp(s->cell_key, cell_key)) continue;
        size_t k;
        json_t *id;
        json_array_foreach(s->ids, k, id)
        {
            const char *mid = json_string_value(id);
            if (out && out->comm_close && json_object_get(r->models, mid)) {
                json_t *empty = json_object();
                out->comm_close(out->user, mid, empty);
                json_decref(empty);
            }
            json_object_del(r->models, mid);
        }
        shown_free(s);
        r->forms[i] = r->forms[--r->n];
        return;
    }
}

/* ---- building the models ---- */

typedef struct {
    fm_registry *r;
    json_t *opens; /* [[id, state, item], ...] in open order */
} builder;

/* Takes state; writes the new model's id. */
static int push(builder *b, json_t *state, int item, char id[FM_ID_LEN])
{
    if (!state) return -1;
    snprintf(id, FM_ID_LEN, "%s%016llx", b->r->prefix, b->r->next_id++);
    json_t *rec = json_pack("[s,O,i]", id, state, item);
    json_decref(state);
    return rec ? json_array_append_new(b->opens, rec) : -1;
}

static int push_layout(builder *b, const char *key, const char *val, char id[FM_ID_LEN])
{
    json_t *st = fm_w_state("LayoutModel", NULL, NULL);
    if (st && key && json_object_set_new(st, key, json_string(val))) {
        json_decref(st);
        st = NULL;
    }
    return push(b, st, -1, id);
}

/* An HTML or Label widget with its layout and style. */
static int push_text(builder *b, const char *model, const char *style_model, const char *value,
                     const char *width, char id[FM_ID_LEN])
{
    char lid[FM_ID_LEN], sid[FM_ID_LEN];
    if (push_layout(b, width ? "width" : NULL, width, lid) ||
        push(b, fm_w_state(style_model, NULL, NULL), -1, sid))
        return -1;
    json_t *st = fm_w_state(model, lid, sid), *v = value ? fm_jstr(value, strlen(value)) : NULL;
    if (!st || !v) {
        json_decref(st);
        json_decref(v);
        return -1;
    }
    if (json_object_set_new(st, "value", v)) {
        json_decref(st);
        return -1;
    }
    return push(b, st, -1, id);
}

static int push_box(builder *b, const char *model, json_t *children, char id[FM_ID_LEN])
{
    char lid[FM_ID_LEN];
    if (push_layout(b, NULL, NULL, lid)) return -1;
    json_t *st = fm_w_state(model, lid, NULL);
    if (!st || json_object_set(st, "children", children)) {
        json_decref(st);
        return -1;
    }
    return push(b, st, -1, id);
}

static int add_child(json_t *children, const char *id)
{
    char ref[64];
    snprintf(ref, sizeof ref, "IPY_MODEL_%s", id);
    return json_array_append_new(children, json_string(ref));
}

static int push_param(builder *b, const fm_field *fd, int item, const char *label_width,
                      const mg_host *host, char id[FM_ID_LEN])
{
    char lab[FM_ID_LEN], lid[FM_ID_LEN], sid[FM_ID_LEN], cid[FM_ID_LEN];
    if (push_text(b, "LabelModel", "LabelStyleModel", fd->name, label_width, lab) ||
        push_layout(b, NULL, NULL, lid) ||
        push(b, fm_w_state(fm_w_style_model(fd), NULL, NULL), -1, sid) ||
        push(b, fm_w_control_state(fd, fm_field_current(fd, host), lid, sid), item, cid))
        return -1;
    json_t *row = json_array();
    int rc =
        !row || add_child(row, lab) || add_child(row, cid) || push_box(b, "HBoxModel", row, id);
    json_decref(row);
    return rc ? -1 : 0;
}

static int build(builder *b, const fm_form *f, const mg_host *host, char root[FM_ID_LEN])
{
    size_t width = 4;
    for (size_t i = 0; i < f->n; i++)
        if (f->items[i].field && strlen(f->items[i].field->name) > width)
            width = strlen(f->items[i].field->name);
    char label_width[32];
    snprintf(label_width, sizeof label_width, "%zuch", width + 2);
    json_t *children = json_array();
    if (!children) return -1;
    for (size_t i = 0; i < f->n; i++) {
        const fm_item *it = &f->items[i];
        char id[FM_ID_LEN];
        int rc;
        if (it->kind == FM_ITEM_PARAM) {
            rc = push_param(b, it->field, (int)i, label_width, host, id);
        } else {
            if (it->kind == FM_ITEM_TITLE && !*it->text) continue;
            char *html =
                it->kind == FM_ITEM_TITLE ? fm_title_html(it->text) : fm_markdown_html(it->text);
            rc = !html || push_text(b, "HTMLModel", "HTMLStyleModel", html, NULL, id);
            free(html);
        }
        if (rc || add_child(children, id)) {
            json_decref(children);
            return -1;
        }
    }
    int rc = push_box(b, "VBoxModel", children, root);
    json_decref(children);
    return rc;
}

/* ---- showing ---- */

static int register_and_open(fm_registry *r, fm_shown *s, json_t *opens, const mg_out *out)
{
    size_t i;
    json_t *rec;
    json_array_foreach(opens, i, rec)
    {
        const char *id = json_string_value(json_array_get(rec, 0));
        json_t *st = json_array_get(rec, 1);
        json_t *entry = json_pack("{s:O,s:I,s:O}", "state", st, "form", (json_int_t)s->serial,
                                  "item", json_array_get(rec, 2));
        if (!entry || json_object_set_new(r->models, id, entry) ||
            json_array_append_new(s->ids, json_string(id)))
            return -1;
        if (out && out->comm_open) {
            json_t *data = json_pack("{s:O,s:[]}", "state", st, "buffer_paths");
            json_t *meta = json_pack("{s:s}", "version", FM_PROTOCOL_VERSION);
            if (data && meta) out->comm_open(out->user, id, FM_WIDGET_TARGET, data, meta);
            json_decref(data);
            json_decref(meta);
        }
    }
    return 0;
}

int fm_registry_show(fm_registry *r, fm_form *f, json_t *cell_metadata, const mg_host *host,
                     const mg_out *out, mg_error *err)
{
    if (!f) return 0;
    if (!r) {
        fm_form_destroy(f);
        return fm_fail(err, "RuntimeError", "no form registry");
    }
    const char *key = json_string_value(json_object_get(cell_metadata, "cellId"));
    if (key) {
        drop_cell(r, key, out);
        fm_registry_carried_drop(r, key, out);
    }

    fm_shown *s = calloc(1, sizeof *s);
    builder b = {r, json_array()};
    char root[FM_ID_LEN];
    json_t *bundle = NULL;
    if (!s || !b.opens || !(s->ids = json_array()) || (key && !(s->cell_key = strdup(key))) ||
        build(&b, f, host, root) || !(bundle = fm_fallback_bundle(f, host)))
        goto oom;
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 8;
        fm_shown **forms = realloc(r->forms, cap * sizeof *forms);
        if (!forms) goto oom;
        r->forms = forms;
        r->cap = cap;
    }
    s->serial = r->next_serial++;
    s->form = f;
    r->forms[r->n++] = s;
    f = NULL;
    if (register_and_open(r, s, b.opens, out)) {
        json_decref(b.opens);
        json_decref(bundle);
        return fm_fail(err, "MemoryError", "out of memory showing the form");
    }
    json_t *view =
        json_pack("{s:i,s:i,s:s}", "version_major", 2, "version_minor", 0, "model_id", root);
    if (view) json_object_set_new(bundle, "application/vnd.jupyter.widget-view+json", view);
    snprintf(s->display_id, sizeof s->display_id, "kiln-form-%s-%lu", r->prefix, s->serial);
    snprintf(s->root, sizeof s->root, "%s", root);
    const char *text = json_string_value(json_object_get(bundle, "text/plain"));
    s->shown_text = text ? strdup(text) : NULL;
    if (out && out->display) out->display(out->user, bundle, NULL, s->display_id, 0);
    json_decref(b.opens);
    json_decref(bundle);
    return 0;
oom:
    if (s) shown_free(s);
    fm_form_destroy(f);
    json_decref(b.opens);
    json_decref(bundle);
    return fm_fail(err, "MemoryError", "out of memory showing the form");
}

/* ---- saved state ---- */

json_t *fm_registry_states(fm_registry *r)
{
    json_t *states = json_object();
    const char *id;
    json_t *entry;
    if (!states) return NULL;
    json_object_foreach(r->models, id, entry)
    {
        json_t *st = json_object_get(entry, "state");
        json_t *one = json_pack(
            "{s:O,s:O,s:O,s:o,s:[]}", "model_name", json_object_get(st, "_model_name"),
            "model_module", json_object_get(st, "_model_module"), "model_module_version",
            json_object_get(st, "_model_module_version"), "state", json_deep_copy(st), "buffers");
        if (!one || json_object_set_new(states, id, one)) {
            json_decref(states);
            return NULL;
        }
    }
    return states;
}

json_t *fm_registry_widget_state(fm_registry *r)
{
    if (!r) return NULL;
    json_t *states = fm_registry_states(r);
    if (!states) return NULL;
    return json_pack("{s:i,s:i,s:o}", "version_major", 2, "version_minor", 0, "state", states);
}

/* ---- leaving and coming back ---- */

char *fm_registry_write_back(fm_registry *r, const char *cell_key, const char *code,
                             const mg_host *host)
{
    for (size_t i = 0; r && cell_key && code && i < r->n; i++) {
        fm_shown *s = r->forms[i];
        if (!s->cell_key || strcmp(s->cell_key, cell_key) || !s->form->source ||
            strcmp(s->form->source, code))
            continue;
        return fm_form_write_back(s->form, code, host);
    }
    return fm_registry_carried_write_back(r, cell_key, code);
}

int fm_registry_refresh(fm_registry *r, const mg_host *host, const mg_out *out)
{
    int n = 0;
    for (size_t i = 0; r && out && out->display && i < r->n; i++) {
        fm_shown *s = r->forms[i];
        json_t *bundle = s->display_id[0] && s->moved ? fm_fallback_bundle(s->form, host) : NULL;
        const char *text = json_string_value(json_object_get(bundle, "text/plain"));
        s->moved = 0;
        char *copy = text && (!s->shown_text || strcmp(s->shown_text, text)) ? strdup(text) : NULL;
        json_t *view = copy ? json_pack("{s:i,s:i,s:s}", "version_major", 2, "version_minor", 0,
                                        "model_id", s->root)
                            : NULL;
        if (view &&
            !json_object_set_new(bundle, "application/vnd.jupyter.widget-view+json", view)) {
            out->display(out->user, bundle, NULL, s->display_id, 1);
            free(s->shown_text);
            s->shown_text = copy;
            copy = NULL;
            n++;
        }
        free(copy);
        json_decref(bundle);
    }
    return n;
}

int fm_registry_fallback_all(fm_registry *r, const mg_host *host, const mg_out *out)
{
    int n = 0;
    for (size_t i = 0; r && out && out->display && i < r->n; i++) {
        fm_shown *s = r->forms[i];
        json_t *bundle = s->display_id[0] ? fm_fallback_bundle(s->form, host) : NULL;
        if (!bundle) continue;
        out->display(out->user, bundle, NULL, s->display_id, 1);
        json_decref(bundle);
        n++;
    }
    return n;
}
