/* fm.h - Colab-style forms: `#@title`, `#@markdown` and `#@param` annotations
 * parsed into a form, shown as live ipywidgets (protocol 2.1) bound to the cell
 * language's variables, or as a text/HTML table where a frontend has no comms.
 *
 * The engine (kernel/lang) owns one fm_registry and calls, for each cell:
 *   fm_form_parse()  before running it (a malformed annotation is an error naming
 *                    the line; the cell's code still means what it says);
 *   fm_registry_show() after it ran successfully, when a form was parsed;
 * and forwards every incoming comm message to fm_registry_comm_msg().
 */
#ifndef FM_H
#define FM_H

#include <jansson.h>
#include "mg.h"

typedef struct fm_form fm_form;
typedef struct fm_registry fm_registry;

/* *out = NULL when code has no annotations. Returns 0, or -1 with err filled
 * (ename "SyntaxError", evalue "line N: ..."). The form is the caller's. */
RT_MUST_USE int fm_form_parse(const char *code, fm_form **out, mg_error *err);
void fm_form_destroy(fm_form *f); /* accepts NULL */

/* Type-checks a `kiln run -p NAME VALUE` override against the form's annotation
 * for NAME. Returns 1 and *value (new ref) when NAME is a parameter of this form,
 * 0 when it is not, -1 with err when VALUE does not fit the annotation. */
RT_MUST_USE int fm_form_coerce(const fm_form *f, const char *name, const char *value_text,
                               json_t **value, mg_error *err);

fm_registry *fm_registry_create(void);
void fm_registry_destroy(fm_registry *r); /* accepts NULL */

/* Shows form f (taken) with the current variable values from host: widgets through
 * out->comm_open when available, else a text/plain + text/html table. cell_metadata
 * (borrowed, may be NULL) keys the form to its cell, so re-running a cell replaces
 * its form. Returns 0 or -1 with err. */
RT_MUST_USE int fm_registry_show(fm_registry *r, fm_form *f, json_t *cell_metadata,
                                 const mg_host *host, const mg_out *out, mg_error *err);

/* An incoming comm_open/comm_msg/comm_close (content borrowed). Updates variables
 * through host and echoes through out as ipywidgets expects. Returns 0 when the
 * comm is one of ours, -1 when unknown (the caller logs it). */
int fm_registry_comm_msg(fm_registry *r, const char *msg_type, json_t *content, const mg_host *host,
                         const mg_out *out);

/* The cell's code with the values set in its form's widgets written in (new string),
 * when cell_key's form is shown (or carried over a restart) and was made from exactly
 * this code and some value differs from what the code says; else NULL. */
char *fm_registry_write_back(fm_registry *r, const char *cell_key, const char *code,
                             const mg_host *host);
/* The same for one form (its variables read through host); NULL when nothing differs. */
char *fm_form_write_back(const fm_form *f, const char *code, const mg_host *host);

/* Replaces every live form's display by its text/HTML table of the current values
 * (update_display_data), so a notebook saved after the kernel exits shows values, not
 * "model not found". Returns how many were replaced. */
/* Each live form whose controls changed values since its display was last sent gets its display
 * again (update_display_data: the widget view with the text/HTML table of the current
 * values), so a notebook saved at any time holds the values, even where the kernel
 * goes without a word reaching the page (JupyterLab's Restart drops the old kernel's
 * last messages). Called before each cell runs; returns how many were sent. */
int fm_registry_refresh(fm_registry *r, const mg_host *host, const mg_out *out);
int fm_registry_fallback_all(fm_registry *r, const mg_host *host, const mg_out *out);

/* Forms across a restart (fm_carry.c): the document the kernel hands to the next
 * process (new ref; NULL when no form was shown in a cell, or on no memory), and
 * taking one in (borrowed): the number of forms carried, -1 when doc is malformed. */
json_t *fm_registry_carry(fm_registry *r, const mg_host *host);
int fm_registry_carry_in(fm_registry *r, json_t *doc);

/* Widget state for the notebook's metadata (application/vnd.jupyter.widget-state+json),
 * new ref; used by `kiln run` so a saved notebook reopens showing its forms. */
json_t *fm_registry_widget_state(fm_registry *r);

#endif
