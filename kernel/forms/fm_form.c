/* fm_form.c - small queries on a parsed form shared by the widgets, the text
 * fallback and coercion. */
#include <string.h>

#include "fm_internal.h"

const char *fm_kind_name(fm_kind k) {
    switch (k) {
    case FM_STRING: return "string";
    case FM_NUMBER: return "number";
    case FM_INTEGER: return "integer";
    case FM_SLIDER: return "slider";
    case FM_BOOLEAN: return "boolean";
    case FM_DATE: return "date";
    case FM_RAW: return "raw";
    case FM_UNTYPED: return "untyped";
    case FM_DROPDOWN: return "dropdown";
    }
    return "?";
}

const fm_field *fm_form_find(const fm_form *f, const char *name) {
    for (size_t i = 0; f && i < f->n; i++)
        if (f->items[i].field && !strcmp(f->items[i].field->name, name)) return f->items[i].field;
    return NULL;
}

/* As Colab does, a form shows the values written in the code; only where the code
 * is an expression rather than a literal does it show what the variable holds. */
json_t *fm_field_current(const fm_field *fd, const mg_host *host) {
    if (fd->code_value) return fd->code_value;
    if (host && host->var_get) return host->var_get(host->user, fd->name);
    return NULL;
}
