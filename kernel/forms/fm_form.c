/* fm_form.c - small queries on a parsed form shared by the widgets, the text
 * fallback and coercion. */
#include <string.h>

#include "fm_internal.h"

const char *fm_kind_name(fm_kind k)
{
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

const fm_field *fm_form_find(const fm_form *f, const char *name)
{
    for (size_t i = 0; f && i < f->n; i++)
        if (f->items[i].field && !strcmp(f->items[i].field->name, name)) return f->items[i].field;
    return NULL;
}

/* What the variable holds right after the cell ran: the value written in the code
 * (so re-running a cell restores it, as Colab does), or a `kiln run -p` override
 * applied after the cell. Without the variable, the literal in the code. */
json_t *fm_field_current(const fm_field *fd, const mg_host *host)
{
    json_t *v = host && host->var_get ? host->var_get(host->user, fd->name) : NULL;
    return v ? v : fd->code_value;
}
