/* fm_internal.h - the parsed form and the helpers shared by kernel/forms/ files.
 * Not a public header: the engine and the kernel only see fm.h.
 *
 * A form is the list of annotation items of one cell, in source order: the title
 * (at most one), markdown lines and parameters. Each parameter (fm_field) keeps
 * everything the annotation said plus the literal written in the code, so the
 * widgets, the text fallback and `kiln run -p` type checks all work from it.
 */
#ifndef FM_INTERNAL_H
#define FM_INTERNAL_H

#include <stddef.h>
#include "fm.h"
#include "kl_buf.h"

typedef enum {
    FM_STRING,
    FM_NUMBER,
    FM_INTEGER,
    FM_SLIDER,
    FM_BOOLEAN,
    FM_DATE,
    FM_RAW,
    FM_UNTYPED, /* `#@param` with no options: a text box, no type checking */
    FM_DROPDOWN /* `#@param [..]`; raw and allow_input refine it */
} fm_kind;

typedef struct fm_field {
    char *name;
    int line; /* 1-based line of the annotation in the cell */
    fm_kind kind;
    int raw;               /* dropdown with {type:"raw"}: options are code text */
    int allow_input;       /* dropdown with {allow-input: true}: a combobox */
    double min, max, step; /* slider bounds (defaults 0, 100, 1) */
    int int_slider;        /* slider whose bounds, step and value are integers */
    char *placeholder;     /* may be NULL */
    json_t *labels;        /* dropdown: array of option texts as shown */
    json_t *values;        /* dropdown: array of the values the options assign */
    char *code_text;       /* the value expression exactly as written */
    json_t *code_value;    /* that expression as a literal, or NULL when it is not one */
} fm_field;

typedef enum { FM_ITEM_TITLE, FM_ITEM_MARKDOWN, FM_ITEM_PARAM } fm_item_kind;

typedef struct fm_item {
    fm_item_kind kind;
    char *text;      /* title / markdown text (NULL for params) */
    fm_field *field; /* params only */
} fm_item;

struct fm_form {
    fm_item *items;
    size_t n, cap;
    json_t *title_options; /* {"display-mode": "form", ...} or NULL */
    char *source;          /* the cell's code the form was parsed from */
};

/* ---- fm_lit.c: annotation literals (Python literals and reprs: kl_literal_parse and
 * kl_value_repr, kl.h) ---- */

/* Parses a JSON5-ish literal at *p (double/single-quoted string, number, true/false/
 * True/False, null/None) for annotation option values and dropdown lists. On success
 * returns a new ref and advances *p; *text (when not NULL) gets a malloc'd copy of the
 * literal as written (strings without their quotes). NULL with msg on failure. */
json_t *fm_lit_annotation(const char **p, char **text, char *msg, size_t msg_len);

/* json_stringn that returns NULL on invalid UTF-8 (never aborts). */
json_t *fm_jstr(const char *s, size_t n);

/* ---- fm_coerce.c: values against annotations ---- */

/* Checks a JSON value against field f and converts it to what the variable holds
 * (e.g. integral reals to ints for integer fields). New ref, or NULL with msg. */
json_t *fm_check_value(const fm_field *f, json_t *v, char *msg, size_t msg_len);

/* "YYYY-MM-DD" to y, m (1-12), d; 0 when valid, -1 otherwise. */
int fm_date_parse(const char *s, int *y, int *m, int *d);

/* ---- fm_form.c ---- */

const char *fm_kind_name(fm_kind k);
const fm_field *fm_form_find(const fm_form *f, const char *name);
/* Value the form shows for field: the variable if host has it, else the code's literal. */
json_t *fm_field_current(const fm_field *fd, const mg_host *host); /* borrowed, may be NULL */

/* ---- fm_widget.c ---- */

/* Index of value among the dropdown's values (-1 when absent). */
int fm_dropdown_index(const fm_field *f, const json_t *value);
/* Text a Text/Combobox widget shows for value (string content or Python repr). */
char *fm_field_text(const fm_field *f, const json_t *value);

/* ---- fm_fallback.c ---- */

/* {"text/plain": ..., "text/html": ...} table of the form's values. New ref. */
json_t *fm_fallback_bundle(const fm_form *f, const mg_host *host);
/* Minimal Markdown line to HTML (headings, rules, **bold**, *em*, `code`). malloc'd. */
char *fm_markdown_html(const char *text);
/* A title line as <h3> HTML (leading #s dropped, inline Markdown kept). malloc'd. */
char *fm_title_html(const char *text);

/* ---- errors ---- */
int fm_fail(mg_error *err, const char *ename, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
