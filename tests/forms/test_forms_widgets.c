/* test_forms_widgets.c - the widget states a form opens (ipywidgets protocol 2.1,
 * @jupyter-widgets/controls and base 2.0.0), their order on the wire, the display
 * message, the text/HTML fallback without comms, re-showing a cell and the saved
 * widget state. Uses a fake mg_out that records every message. */
#include "../t.h"
#include "fm_fake.h"

static int show(fake *fk, const mg_host *host, const mg_out *out, fm_registry *r, const char *code,
                const char *cell_id)
{
    fm_form *f = NULL;
    mg_error err = {{0}, {0}};
    if (fm_form_parse(code, &f, &err)) {
        fprintf(stderr, "  parse: %s\n", err.evalue);
        return -1;
    }
    json_t *meta = cell_id ? json_pack("{s:s}", "cellId", cell_id) : NULL;
    int rc = fm_registry_show(r, f, meta, host, out, &err);
    json_decref(meta);
    return rc;
}

static const char *sv(json_t *st, const char *k)
{
    return json_string_value(json_object_get(st, k));
}

/* Identity keys of a controls widget and its layout/style references. */
static int check_identity(json_t *st, const char *model, const char *view)
{
    return !strcmp(sv(st, "_model_name"), model) && !strcmp(sv(st, "_view_name"), view) &&
           !strcmp(sv(st, "_model_module"), "@jupyter-widgets/controls") &&
           !strcmp(sv(st, "_model_module_version"), "2.0.0") &&
           !strcmp(sv(st, "_view_module"), "@jupyter-widgets/controls") &&
           !strcmp(sv(st, "_view_module_version"), "2.0.0") &&
           !strncmp(sv(st, "layout"), "IPY_MODEL_", 10);
}

/* Position of the comm_open with id in the log, or -1. */
static int open_pos(fake *fk, const char *id)
{
    size_t i;
    json_t *e;
    json_array_foreach(fk->cap.log, i, e)
    {
        const char *eid = json_string_value(json_object_get(e, "id"));
        if (eid && !strcmp(eid, id) &&
            !strcmp(json_string_value(json_object_get(e, "type")), "comm_open"))
            return (int)i;
    }
    return -1;
}

T_TEST(control_per_kind)
{
    static const struct {
        const char *code, *model, *view, *style;
    } cases[] = {
        {"x = 'hi'  #@param {type:\"string\", placeholder:\"name\"}", "TextModel", "TextView",
         "TextStyleModel"},
        {"x = 0.001  #@param {type:\"number\"}", "FloatTextModel", "FloatTextView",
         "DescriptionStyleModel"},
        {"x = 10  #@param {type:\"integer\"}", "IntTextModel", "IntTextView",
         "DescriptionStyleModel"},
        {"x = 16  #@param {type:\"slider\", min:8, max:256, step:8}", "IntSliderModel",
         "IntSliderView", "SliderStyleModel"},
        {"x = 0.3  #@param {type:\"slider\", min:-1, max:1, step:0.05}", "FloatSliderModel",
         "FloatSliderView", "SliderStyleModel"},
        {"x = True  #@param {type:\"boolean\"}", "CheckboxModel", "CheckboxView",
         "CheckboxStyleModel"},
        {"x = \"2024-09-19\"  #@param {type:\"date\"}", "DatePickerModel", "DatePickerView",
         "DescriptionStyleModel"},
        {"x = [1280, 768]  #@param {type:\"raw\"}", "TextModel", "TextView", "TextStyleModel"},
        {"x = \"sgd\"  #@param [\"adam\", \"sgd\"]", "DropdownModel", "DropdownView",
         "DescriptionStyleModel"},
        {"x = \"vgg\"  #@param [\"resnet\"] {allow-input: true}", "ComboboxModel", "ComboboxView",
         "TextStyleModel"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        fake fk;
        mg_host host;
        mg_out out;
        fake_init(&fk, &host, &out, 1);
        fm_registry *r = fm_registry_create();
        ASSERT_EQ(show(&fk, &host, &out, r, cases[c].code, NULL), 0);
        const char *cid = NULL;
        json_t *st = fake_model(&fk, cases[c].model, 0, &cid);
        if (!st) fprintf(stderr, "  case %zu: no %s\n", c, cases[c].model);
        ASSERT(st != NULL);
        ASSERT(check_identity(st, cases[c].model, cases[c].view));
        ASSERT_STR_EQ(sv(st, "description"), "");
        ASSERT(json_is_false(json_object_get(st, "disabled")));
        ASSERT(json_is_array(json_object_get(st, "_dom_classes")));
        /* its layout and style were opened before it, with the right models */
        const char *lid = sv(st, "layout") + 10, *sid = sv(st, "style") + 10;
        int lp = open_pos(&fk, lid), sp = open_pos(&fk, sid), cp = open_pos(&fk, cid);
        ASSERT(lp >= 0 && sp >= 0 && lp < cp && sp < cp);
        json_t *lay = json_object_get(
            json_object_get(json_array_get(fk.cap.log, (size_t)lp), "data"), "state");
        ASSERT_STR_EQ(sv(lay, "_model_name"), "LayoutModel");
        ASSERT_STR_EQ(sv(lay, "_model_module"), "@jupyter-widgets/base");
        ASSERT_STR_EQ(sv(lay, "_view_name"), "LayoutView");
        ASSERT(json_object_get(lay, "width") != NULL);
        json_t *sty = json_object_get(
            json_object_get(json_array_get(fk.cap.log, (size_t)sp), "data"), "state");
        ASSERT_STR_EQ(sv(sty, "_model_name"), cases[c].style);
        ASSERT_STR_EQ(sv(sty, "_model_module"), "@jupyter-widgets/controls");
        ASSERT_STR_EQ(sv(sty, "_view_module"), "@jupyter-widgets/base");
        ASSERT_STR_EQ(sv(sty, "_view_name"), "StyleView");
        ASSERT_STR_EQ(sv(sty, "description_width"), "");

        /* per kind values */
        json_t *v = json_object_get(st, "value");
        switch (c) {
        case 0:
            ASSERT_STR_EQ(json_string_value(v), "hi");
            ASSERT_STR_EQ(sv(st, "placeholder"), "name");
            break;
        case 1:
            ASSERT(json_is_real(v));
            ASSERT_NEAR(json_real_value(v), 0.001, 1e-15);
            break;
        case 2:
            ASSERT(json_is_integer(v));
            ASSERT_EQ(json_integer_value(v), 10);
            ASSERT_EQ(json_integer_value(json_object_get(st, "step")), 1);
            break;
        case 3:
            ASSERT_EQ(json_integer_value(v), 16);
            ASSERT_EQ(json_integer_value(json_object_get(st, "min")), 8);
            ASSERT_EQ(json_integer_value(json_object_get(st, "max")), 256);
            ASSERT_EQ(json_integer_value(json_object_get(st, "step")), 8);
            ASSERT_STR_EQ(sv(st, "readout_format"), "d");
            ASSERT_STR_EQ(sv(st, "orientation"), "horizontal");
            ASSERT_STR_EQ(sv(st, "behavior"), "drag-tap");
            ASSERT(json_is_true(json_object_get(st, "readout")));
            break;
        case 4:
            ASSERT(json_is_real(v));
            ASSERT_NEAR(json_real_value(v), 0.3, 1e-12);
            ASSERT_NEAR(json_real_value(json_object_get(st, "min")), -1, 0);
            ASSERT_NEAR(json_real_value(json_object_get(st, "step")), 0.05, 1e-12);
            ASSERT_STR_EQ(sv(st, "readout_format"), ".2f");
            break;
        case 5:
            ASSERT(json_is_true(v));
            ASSERT(json_is_false(json_object_get(st, "indent")));
            break;
        case 6:
            ASSERT_EQ(json_integer_value(json_object_get(v, "year")), 2024);
            ASSERT_EQ(json_integer_value(json_object_get(v, "month")), 8); /* 0-based */
            ASSERT_EQ(json_integer_value(json_object_get(v, "date")), 19);
            ASSERT(json_is_null(json_object_get(st, "min")));
            ASSERT_EQ(json_integer_value(json_object_get(st, "step")), 1);
            break;
        case 7: ASSERT_STR_EQ(json_string_value(v), "[1280, 768]"); break;
        case 8: {
            ASSERT(v == NULL); /* Dropdown syncs index + labels, no value */
            json_t *labels = json_object_get(st, "_options_labels");
            ASSERT_EQ(json_array_size(labels), 2);
            ASSERT_STR_EQ(json_string_value(json_array_get(labels, 1)), "sgd");
            ASSERT_EQ(json_integer_value(json_object_get(st, "index")), 1);
            break;
        }
        case 9:
            ASSERT_STR_EQ(json_string_value(v), "vgg");
            ASSERT_STR_EQ(json_string_value(json_array_get(json_object_get(st, "options"), 0)),
                          "resnet");
            ASSERT(json_is_false(json_object_get(st, "ensure_option")));
            break;
        }
        fm_registry_destroy(r);
        fake_deinit(&fk);
    }
}

T_TEST(form_layout_and_display)
{
    fake fk;
    mg_host host;
    mg_out out;
    fake_init(&fk, &host, &out, 1);
    fm_registry *r = fm_registry_create();
    const char *code = "#@title Train **MNIST** { display-mode: \"form\" }\n"
                       "#@markdown ### Optimiser <b>\n"
                       "epochs = 10  #@param {type:\"slider\", min:1, max:50}\n"
                       "lr = 0.001  #@param {type:\"number\"}\n";
    ASSERT_EQ(show(&fk, &host, &out, r, code, "cell-1"), 0);
    /* every comm_open targets jupyter.widget with protocol version 2.1.0 and no buffers */
    size_t i;
    json_t *e;
    int opens = 0, display_at = -1;
    json_array_foreach(fk.cap.log, i, e)
    {
        const char *type = json_string_value(json_object_get(e, "type"));
        if (!strcmp(type, "display")) {
            display_at = (int)i;
            continue;
        }
        ASSERT_STR_EQ(type, "comm_open");
        ASSERT(display_at < 0);
        opens++;
        ASSERT_STR_EQ(json_string_value(json_object_get(e, "target")), "jupyter.widget");
        ASSERT_STR_EQ(json_string_value(json_object_get(json_object_get(e, "metadata"), "version")),
                      "2.1.0");
        ASSERT_EQ(json_array_size(json_object_get(json_object_get(e, "data"), "buffer_paths")), 0);
        /* every IPY_MODEL_ reference points at a model opened earlier */
        json_t *st = json_object_get(json_object_get(e, "data"), "state");
        const char *k;
        json_t *v;
        json_object_foreach(st, k, v)
        {
            json_t *refs = json_is_array(v) ? v : NULL, *one;
            size_t j;
            if (json_is_string(v) && !strncmp(json_string_value(v), "IPY_MODEL_", 10))
                ASSERT(open_pos(&fk, json_string_value(v) + 10) >= 0 &&
                       open_pos(&fk, json_string_value(v) + 10) < (int)i);
            json_array_foreach(refs, j, one)
            {
                if (json_is_string(one) && !strncmp(json_string_value(one), "IPY_MODEL_", 10))
                    ASSERT(open_pos(&fk, json_string_value(one) + 10) < (int)i);
            }
        }
    }
    /* title, markdown: 3 each; 2 params: label 3 + control 3 + hbox 2; vbox 2 */
    ASSERT_EQ(opens, 3 + 3 + 2 * 8 + 2);
    ASSERT_EQ(display_at, opens);
    json_t *data = json_object_get(json_array_get(fk.cap.log, (size_t)display_at), "data");
    json_t *view = json_object_get(data, "application/vnd.jupyter.widget-view+json");
    ASSERT_EQ(json_integer_value(json_object_get(view, "version_major")), 2);
    ASSERT_EQ(json_integer_value(json_object_get(view, "version_minor")), 0);
    const char *vbox_id = NULL;
    json_t *vbox = fake_model(&fk, "VBoxModel", 0, &vbox_id);
    ASSERT(vbox != NULL);
    ASSERT_STR_EQ(json_string_value(json_object_get(view, "model_id")), vbox_id);
    ASSERT_EQ(json_array_size(json_object_get(vbox, "children")), 4);
    ASSERT(json_object_get(vbox, "style") == NULL);
    ASSERT_STR_CONTAINS(json_string_value(json_object_get(data, "text/plain")), "epochs = 10");
    ASSERT_STR_CONTAINS(json_string_value(json_object_get(data, "text/plain")), "Train **MNIST**");
    ASSERT_STR_CONTAINS(json_string_value(json_object_get(data, "text/html")),
                        "<code>0.001</code>");
    /* title and markdown as HTML widgets, escaped */
    json_t *title = fake_model(&fk, "HTMLModel", 0, NULL),
           *md = fake_model(&fk, "HTMLModel", 1, NULL);
    ASSERT_STR_EQ(sv(title, "value"), "<h3>Train <b>MNIST</b></h3>");
    ASSERT_STR_EQ(sv(md, "value"), "<h3>Optimiser &lt;b&gt;</h3>");
    /* each row: HBox[Label(name), control] */
    json_t *hbox = fake_model(&fk, "HBoxModel", 0, NULL),
           *label = fake_model(&fk, "LabelModel", 0, NULL);
    ASSERT_EQ(json_array_size(json_object_get(hbox, "children")), 2);
    ASSERT_STR_EQ(sv(label, "value"), "epochs");
    ASSERT(check_identity(label, "LabelModel", "LabelView"));
    fm_registry_destroy(r);
    fake_deinit(&fk);
}

T_TEST(reshow_replaces_cell_form)
{
    fake fk;
    mg_host host;
    mg_out out;
    fake_init(&fk, &host, &out, 1);
    fm_registry *r = fm_registry_create();
    const char *code = "x = 1  #@param {type:\"integer\"}";
    ASSERT_EQ(show(&fk, &host, &out, r, code, "cell-A"), 0);
    size_t first = json_array_size(fk.cap.log) - 1; /* comm_opens, then a display */
    json_t *ws = fm_registry_widget_state(r);
    ASSERT_EQ(json_object_size(json_object_get(ws, "state")), first);
    json_decref(ws);
    ASSERT_EQ(show(&fk, &host, &out, r, code, "cell-A"), 0);
    /* all old models closed before the new ones opened */
    for (size_t i = 0; i < first; i++) {
        json_t *c = capture_find(&fk.cap, "comm_close", (int)i);
        ASSERT(c != NULL);
        ASSERT_STR_EQ(json_string_value(json_object_get(c, "id")),
                      json_string_value(json_object_get(json_array_get(fk.cap.log, i), "id")));
    }
    ASSERT(capture_find(&fk.cap, "comm_close", (int)first) == NULL);
    ws = fm_registry_widget_state(r);
    ASSERT_EQ(json_object_size(json_object_get(ws, "state")), first);
    json_decref(ws);
    /* another cell keeps its own form; no cellId never replaces */
    ASSERT_EQ(show(&fk, &host, &out, r, code, "cell-B"), 0);
    ASSERT_EQ(show(&fk, &host, &out, r, code, NULL), 0);
    ASSERT_EQ(show(&fk, &host, &out, r, code, NULL), 0);
    ws = fm_registry_widget_state(r);
    ASSERT_EQ(json_object_size(json_object_get(ws, "state")), 4 * first);
    json_decref(ws);
    fm_registry_destroy(r);
    fake_deinit(&fk);
}

T_TEST(fallback_without_comms)
{
    fake fk;
    mg_host host;
    mg_out out;
    fake_init(&fk, &host, &out, 0);
    fm_registry *r = fm_registry_create();
    json_object_set_new(fk.vars, "steps", json_integer(7));
    const char *code = "#@title Run <1>\n"
                       "name = \"a<b\"  #@param {type:\"string\"}\n"
                       "steps = 3 + 4  #@param {type:\"integer\"}\n"
                       "flag = False  #@param {type:\"boolean\"}\n";
    ASSERT_EQ(show(&fk, &host, &out, r, code, "c"), 0);
    ASSERT_EQ(json_array_size(fk.cap.log), 1);
    json_t *data = json_object_get(capture_find(&fk.cap, "display", 0), "data");
    const char *plain = json_string_value(json_object_get(data, "text/plain"));
    const char *html = json_string_value(json_object_get(data, "text/html"));
    ASSERT_STR_CONTAINS(plain, "Run <1>\n");
    ASSERT_STR_CONTAINS(plain, "  name  = a<b\n");
    ASSERT_STR_CONTAINS(plain, "  steps = 7\n"); /* an expression: the variable's value */
    ASSERT_STR_CONTAINS(plain, "  flag  = False\n");
    ASSERT_STR_CONTAINS(html, "<h3>Run &lt;1&gt;</h3>");
    ASSERT_STR_CONTAINS(html, "<code>a&lt;b</code>");
    ASSERT(json_object_get(data, "application/vnd.jupyter.widget-view+json") != NULL);
    /* the saved state has the models so a saved notebook can show the form */
    json_t *ws = fm_registry_widget_state(r);
    ASSERT_EQ(json_integer_value(json_object_get(ws, "version_major")), 2);
    ASSERT_EQ(json_integer_value(json_object_get(ws, "version_minor")), 0);
    const char *id;
    json_t *m;
    int checkboxes = 0;
    json_object_foreach(json_object_get(ws, "state"), id, m)
    {
        json_t *st = json_object_get(m, "state");
        ASSERT_STR_EQ(json_string_value(json_object_get(m, "model_name")), sv(st, "_model_name"));
        ASSERT_STR_EQ(json_string_value(json_object_get(m, "model_module")),
                      sv(st, "_model_module"));
        ASSERT_STR_EQ(json_string_value(json_object_get(m, "model_module_version")), "2.0.0");
        if (!strcmp(sv(st, "_model_name"), "CheckboxModel")) {
            checkboxes++;
            ASSERT(json_is_false(json_object_get(st, "value")));
        }
    }
    ASSERT_EQ(checkboxes, 1);
    json_decref(ws);
    /* a `kiln run -p flag True` override applied after the cell shows in its table */
    json_object_set_new(fk.vars, "flag", json_true());
    ASSERT_EQ(show(&fk, &host, &out, r, code, "c"), 0);
    plain = json_string_value(json_object_get(
        json_object_get(capture_find(&fk.cap, "display", 1), "data"), "text/plain"));
    ASSERT_STR_CONTAINS(plain, "  flag  = True\n");
    fm_registry_destroy(r);
    fake_deinit(&fk);
}

int main(void)
{
    T_RUN(control_per_kind);
    T_RUN(form_layout_and_display);
    T_RUN(reshow_replaces_cell_form);
    T_RUN(fallback_without_comms);
    return T_EXIT();
}
