/* fm_widget.c - ipywidgets 2.1 model states (@jupyter-widgets/controls 2.0.0 and
 * base 2.0.0) for the pieces of a form: one control per parameter kind, Labels for
 * names, HTML for the title and markdown, HBox rows in a VBox, and the Layout and
 * Style models every DOM widget references.
 *
 * States are complete (every key ipywidgets 8.1 syncs, with its defaults), because
 * nbclient and saved notebooks keep only what the kernel sent. The default tables
 * below were checked against ipywidgets 8.1's get_state(); the protocol tests
 * compare key sets with the installed ipywidgets when it is present.
 *
 * Value mapping, kernel <-> widget:
 *   string/raw/untyped -> Text (raw shows the code text), number -> FloatText,
 *   integer -> IntText, slider -> IntSlider or FloatSlider, boolean -> Checkbox,
 *   date "YYYY-MM-DD" -> DatePicker {year, month (0-based), date},
 *   dropdown -> Dropdown (index into _options_labels), allow-input -> Combobox (text).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fm_internal.h"
#include "fm_widget.h"
#include "kl.h"

static const char *const desc_keys =
    "\"_dom_classes\":[],\"description\":\"\",\"description_allow_html\":false,"
    "\"tabbable\":null,\"tooltip\":null";

/* Defaults per model, beyond the identity keys and (for DOM widgets) layout/style. */
static const struct {
    const char *model, *defaults;
    int dom;
} defaults_table[] = {
    {"LayoutModel",
     "{\"align_content\":null,\"align_items\":null,\"align_self\":null,\"border_bottom\":null,"
     "\"border_left\":null,\"border_right\":null,\"border_top\":null,\"bottom\":null,"
     "\"display\":null,\"flex\":null,\"flex_flow\":null,\"grid_area\":null,"
     "\"grid_auto_columns\":null,\"grid_auto_flow\":null,\"grid_auto_rows\":null,"
     "\"grid_column\":null,\"grid_gap\":null,\"grid_row\":null,\"grid_template_areas\":null,"
     "\"grid_template_columns\":null,\"grid_template_rows\":null,\"height\":null,"
     "\"justify_content\":null,\"justify_items\":null,\"left\":null,\"margin\":null,"
     "\"max_height\":null,\"max_width\":null,\"min_height\":null,\"min_width\":null,"
     "\"object_fit\":null,\"object_position\":null,\"order\":null,\"overflow\":null,"
     "\"padding\":null,\"right\":null,\"top\":null,\"visibility\":null,\"width\":null}",
     0},
    {"DescriptionStyleModel", "{\"description_width\":\"\"}", 0},
    {"SliderStyleModel", "{\"description_width\":\"\",\"handle_color\":null}", 0},
    {"TextStyleModel",
     "{\"background\":null,\"description_width\":\"\",\"font_size\":null,"
     "\"text_color\":null}",
     0},
    {"CheckboxStyleModel", "{\"background\":null,\"description_width\":\"\"}", 0},
    {"HTMLStyleModel",
     "{\"background\":null,\"description_width\":\"\",\"font_size\":null,"
     "\"text_color\":null}",
     0},
    {"LabelStyleModel",
     "{\"background\":null,\"description_width\":\"\",\"font_family\":null,\"font_size\":null,"
     "\"font_style\":null,\"font_variant\":null,\"font_weight\":null,\"text_color\":null,"
     "\"text_decoration\":null}",
     0},
    {"IntSliderModel",
     "{\"behavior\":\"drag-tap\",\"continuous_update\":true,\"disabled\":false,"
     "\"max\":100,\"min\":0,\"orientation\":\"horizontal\",\"readout\":true,"
     "\"readout_format\":\"d\",\"step\":1,\"value\":0}",
     1},
    {"FloatSliderModel",
     "{\"behavior\":\"drag-tap\",\"continuous_update\":true,\"disabled\":false,"
     "\"max\":100.0,\"min\":0.0,\"orientation\":\"horizontal\",\"readout\":true,"
     "\"readout_format\":\".2f\",\"step\":0.1,\"value\":0.0}",
     1},
    {"IntTextModel", "{\"continuous_update\":false,\"disabled\":false,\"step\":1,\"value\":0}", 1},
    {"FloatTextModel",
     "{\"continuous_update\":false,\"disabled\":false,\"step\":null,"
     "\"value\":0.0}",
     1},
    {"TextModel",
     "{\"continuous_update\":true,\"disabled\":false,\"placeholder\":\"\\u200b\","
     "\"value\":\"\"}",
     1},
    {"CheckboxModel", "{\"disabled\":false,\"indent\":true,\"value\":false}", 1},
    {"DatePickerModel", "{\"disabled\":false,\"max\":null,\"min\":null,\"step\":1,\"value\":null}",
     1},
    {"DropdownModel", "{\"_options_labels\":[],\"disabled\":false,\"index\":null}", 1},
    {"ComboboxModel",
     "{\"continuous_update\":true,\"disabled\":false,\"ensure_option\":false,"
     "\"options\":[],\"placeholder\":\"\\u200b\",\"value\":\"\"}",
     1},
    {"LabelModel", "{\"placeholder\":\"\\u200b\",\"value\":\"\"}", 1},
    {"HTMLModel", "{\"placeholder\":\"\\u200b\",\"value\":\"\"}", 1},
    {"VBoxModel", "{\"box_style\":\"\",\"children\":[]}", 2},
    {"HBoxModel", "{\"box_style\":\"\",\"children\":[]}", 2},
};

static int set_str(json_t *o, const char *k, const char *v)
{
    return json_object_set_new(o, k, json_string(v));
}

json_t *fm_w_state(const char *model, const char *layout_id, const char *style_id)
{
    size_t i, n = sizeof defaults_table / sizeof defaults_table[0];
    for (i = 0; i < n && strcmp(defaults_table[i].model, model); i++) {}
    if (i == n) return NULL;
    json_t *st = json_loads(defaults_table[i].defaults, 0, NULL);
    if (!st) return NULL;
    int is_layout = !strcmp(model, "LayoutModel"), is_style = strstr(model, "StyleModel") != NULL;
    char view[64];
    snprintf(view, sizeof view, "%.*sView", (int)(strlen(model) - 5), model);
    const char *ctl = "@jupyter-widgets/controls", *base = "@jupyter-widgets/base";
    int rc = set_str(st, "_model_module", is_layout ? base : ctl) |
             set_str(st, "_model_module_version", "2.0.0") | set_str(st, "_model_name", model) |
             set_str(st, "_view_module", is_layout || is_style ? base : ctl) |
             set_str(st, "_view_module_version", "2.0.0") |
             set_str(st, "_view_name", is_style ? "StyleView" : view) |
             json_object_set_new(st, "_view_count", json_null());
    if (defaults_table[i].dom) {
        char ref[96];
        char buf[256];
        snprintf(buf, sizeof buf, "{%s}", desc_keys);
        json_t *common = json_loads(buf, 0, NULL);
        if (!common) {
            json_decref(st);
            return NULL;
        }
        if (defaults_table[i].dom == 2) { /* boxes: no description */
            json_object_del(common, "description");
            json_object_del(common, "description_allow_html");
        }
        rc |= json_object_update(st, common);
        json_decref(common);
        snprintf(ref, sizeof ref, "IPY_MODEL_%s", layout_id ? layout_id : "");
        rc |= set_str(st, "layout", ref);
        if (style_id) {
            snprintf(ref, sizeof ref, "IPY_MODEL_%s", style_id);
            rc |= set_str(st, "style", ref);
        }
    }
    if (rc) {
        json_decref(st);
        return NULL;
    }
    return st;
}

/* ---- values ---- */

static int values_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) return json_number_value(a) == json_number_value(b);
    return json_equal((json_t *)a, (json_t *)b);
}

int fm_dropdown_index(const fm_field *f, const json_t *value)
{
    if (!value) return -1;
    for (size_t i = 0; i < json_array_size(f->labels); i++) {
        if (f->raw) {
            json_t *lit = kl_literal_parse(json_string_value(json_array_get(f->labels, i)));
            int eq = lit && values_equal(lit, value);
            json_decref(lit);
            if (eq) return (int)i;
        } else if (values_equal(json_array_get(f->values, i), value)) {
            return (int)i;
        }
    }
    return -1;
}

char *fm_field_text(const fm_field *f, const json_t *value)
{
    int textual = f->kind == FM_STRING || f->kind == FM_DATE || (f->kind == FM_DROPDOWN && !f->raw);
    if (textual && json_is_string(value)) return strdup(json_string_value(value));
    if ((f->kind == FM_RAW || f->kind == FM_UNTYPED || f->kind == FM_DROPDOWN) && f->code_value &&
        value && values_equal(value, f->code_value))
        return strdup(f->code_text);
    if (!value && f->code_text) return strdup(f->code_text);
    return kl_value_repr(value);
}

const char *fm_w_control_model(const fm_field *f)
{
    switch (f->kind) {
    case FM_NUMBER: return "FloatTextModel";
    case FM_INTEGER: return "IntTextModel";
    case FM_SLIDER: return f->int_slider ? "IntSliderModel" : "FloatSliderModel";
    case FM_BOOLEAN: return "CheckboxModel";
    case FM_DATE: return "DatePickerModel";
    case FM_DROPDOWN: return f->allow_input ? "ComboboxModel" : "DropdownModel";
    default: return "TextModel";
    }
}

const char *fm_w_style_model(const fm_field *f)
{
    const char *m = fm_w_control_model(f);
    if (strstr(m, "Slider")) return "SliderStyleModel";
    if (!strcmp(m, "TextModel") || !strcmp(m, "ComboboxModel")) return "TextStyleModel";
    if (!strcmp(m, "CheckboxModel")) return "CheckboxStyleModel";
    return "DescriptionStyleModel";
}

const char *fm_w_value_key(const fm_field *f)
{
    return !strcmp(fm_w_control_model(f), "DropdownModel") ? "index" : "value";
}

json_t *fm_w_value(const fm_field *f, const json_t *v)
{
    double d = json_is_number(v) ? json_number_value(v) : 0.0;
    int y, m, day;
    switch (f->kind) {
    case FM_NUMBER: return json_real(d);
    case FM_INTEGER: return json_integer(isfinite(d) && fabs(d) < 9e15 ? (json_int_t)d : 0);
    case FM_SLIDER:
        d = d < f->min ? f->min : d > f->max ? f->max : d;
        return f->int_slider ? json_integer((json_int_t)d) : json_real(d);
    case FM_BOOLEAN: return json_boolean(json_is_true(v));
    case FM_DATE:
        if (json_is_string(v) && !fm_date_parse(json_string_value(v), &y, &m, &day))
            return json_pack("{s:i,s:i,s:i}", "year", y, "month", m - 1, "date", day);
        return json_null();
    case FM_DROPDOWN:
        if (!f->allow_input) {
            int i = fm_dropdown_index(f, v);
            return i < 0 ? json_null() : json_integer(i);
        }
        __attribute__((fallthrough)); /* a combobox shows text */
    default: {
        char *text = fm_field_text(f, v);
        json_t *s = text ? fm_jstr(text, strlen(text)) : NULL;
        free(text);
        return s ? s : json_string("");
    }
    }
}

/* Decimal places of a step, for FloatSlider's readout_format (0.001 -> ".3f"). */
static int step_decimals(double step)
{
    for (int k = 0; k <= 10; k++) {
        double s = step * pow(10, k);
        if (fabs(s - round(s)) < 1e-9 * (s > 1 ? s : 1)) return k;
    }
    return 10;
}

json_t *fm_w_control_state(const fm_field *f, const json_t *value, const char *layout_id,
                           const char *style_id)
{
    const char *model = fm_w_control_model(f);
    json_t *st = fm_w_state(model, layout_id, style_id);
    if (!st) return NULL;
    int rc = json_object_set_new(st, fm_w_value_key(f), fm_w_value(f, value));
    if (f->kind == FM_SLIDER) {
        if (f->int_slider) {
            rc |= json_object_set_new(st, "min", json_integer((json_int_t)f->min)) |
                  json_object_set_new(st, "max", json_integer((json_int_t)f->max)) |
                  json_object_set_new(st, "step", json_integer((json_int_t)f->step));
        } else {
            char fmt[16];
            snprintf(fmt, sizeof fmt, ".%df", step_decimals(f->step));
            rc |= json_object_set_new(st, "min", json_real(f->min)) |
                  json_object_set_new(st, "max", json_real(f->max)) |
                  json_object_set_new(st, "step", json_real(f->step)) |
                  set_str(st, "readout_format", fmt);
        }
        rc |= json_object_set_new(st, "continuous_update", json_false());
    }
    if (!strcmp(model, "TextModel"))
        rc |= json_object_set_new(st, "continuous_update", json_false());
    if (!strcmp(model, "CheckboxModel")) rc |= json_object_set_new(st, "indent", json_false());
    if (!strcmp(model, "DropdownModel")) rc |= json_object_set(st, "_options_labels", f->labels);
    if (!strcmp(model, "ComboboxModel")) {
        rc |= json_object_set(st, "options", f->labels) |
              json_object_set_new(st, "continuous_update", json_false());
    }
    if (f->placeholder && json_object_get(st, "placeholder"))
        rc |= set_str(st, "placeholder", f->placeholder);
    if (rc) {
        json_decref(st);
        return NULL;
    }
    return st;
}
