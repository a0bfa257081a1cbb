/* fm_widget.h - ipywidgets model states for forms (internal to kernel/forms/). */
#ifndef FM_WIDGET_H
#define FM_WIDGET_H

#include "fm_internal.h"

#define FM_PROTOCOL_VERSION "2.1.0"
#define FM_WIDGET_TARGET "jupyter.widget"
#define FM_CONTROL_TARGET "jupyter.widget.control"

/* Full default state of model (e.g. "IntSliderModel") with identity keys; DOM widgets
 * reference IPY_MODEL_<layout_id> and, when style_id is not NULL, IPY_MODEL_<style_id>.
 * New ref, NULL for an unknown model or on allocation failure. */
json_t *fm_w_state(const char *model, const char *layout_id, const char *style_id);

/* The control of a parameter: model name, its style model, the state key holding its
 * value ("index" for Dropdown, else "value"). */
const char *fm_w_control_model(const fm_field *f);
const char *fm_w_style_model(const fm_field *f);
const char *fm_w_value_key(const fm_field *f);

/* The control's wire value for kernel value v (borrowed, may be NULL). New ref. */
json_t *fm_w_value(const fm_field *f, const json_t *v);

/* Full control state showing value. New ref or NULL. */
json_t *fm_w_control_state(const fm_field *f, const json_t *value, const char *layout_id,
                           const char *style_id);

#endif
