/* fm_writeback.c - the values set in a form's widgets written back into its cell's
 * code, as Colab does: each parameter line keeps its name, annotation and layout, and
 * its literal becomes the variable's current value, written the way the annotation
 * reads it (a string in the quotes the code used, a raw dropdown's option code). The
 * engine sends the new code to the frontend as a set_next_input payload with
 * replace: true when the form cell is run again with unchanged code. */
#include <stdlib.h>
#include <string.h>

#include "fm_internal.h"
#include "kl.h"

/* The code literal of value for field f (new string), NULL on no memory. */
static char *literal(const fm_field *f, const json_t *value)
{
    if (f->code_value && json_equal((json_t *)f->code_value, (json_t *)value))
        return strdup(f->code_text);
    if (f->kind == FM_DROPDOWN && f->raw) /* the option's code, as written */
        for (size_t i = 0; i < json_array_size(f->values); i++)
            if (json_equal(json_array_get(f->values, i), (json_t *)value))
                return strdup(json_string_value(json_array_get(f->labels, i)));
    if (json_is_string(value) && f->code_text && f->code_text[0] == '"')
        return json_dumps(value, JSON_ENCODE_ANY); /* "..." as the code wrote it */
    return kl_value_repr(value);
}

/* Replaces, on line `line` of code, the literal text `old` after the '=' by `new`,
 * keeping the annotation's column when there is room. Appends the line to b. */
static void rewrite_line(kl_buf *b, const char *s, size_t n, const char *old, const char *new)
{
    const char *eq = memchr(s, '=', n);
    const char *at = NULL;
    size_t ol = strlen(old);
    for (const char *p = eq ? eq + 1 : NULL; p && p + ol <= s + n; p++)
        if (!strncmp(p, old, ol)) {
            at = p;
            break;
        }
    if (!at) {
        kl_buf_add(b, s, n);
        return;
    }
    kl_buf_add(b, s, (size_t)(at - s));
    kl_buf_puts(b, new);
    const char *rest = at + ol;
    size_t spaces = 0;
    while (rest + spaces < s + n && rest[spaces] == ' ') spaces++;
    size_t nl = strlen(new);
    if (spaces && rest + spaces < s + n) { /* the comment where it was, 2 spaces at least */
        size_t least = spaces < 2 ? spaces : 2;
        size_t keep = ol + spaces > nl + least ? ol + spaces - nl : least;
        for (size_t i = 0; i < keep; i++) kl_buf_add(b, " ", 1);
        rest += spaces;
    }
    kl_buf_add(b, rest, (size_t)(s + n - rest));
}

char *fm_form_write_back(const fm_form *f, const char *code, const mg_host *host)
{
    kl_buf b = {0};
    int changed = 0, line = 0;
    const char *s = code;
    while (*s) {
        const char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        line++;
        const fm_field *fd = NULL;
        for (size_t i = 0; i < f->n && !fd; i++)
            if (f->items[i].field && f->items[i].field->line == line) fd = f->items[i].field;
        json_t *v = fd && host && host->var_get ? host->var_get(host->user, fd->name) : NULL;
        char *lit = v && fd->code_text ? literal(fd, v) : NULL;
        if (lit && strcmp(lit, fd->code_text)) {
            rewrite_line(&b, s, n, fd->code_text, lit);
            changed = 1;
        } else {
            kl_buf_add(&b, s, n);
        }
        free(lit);
        s += n;
        if (*s == '\n') kl_buf_add(&b, s++, 1);
    }
    char *out = kl_buf_take(&b);
    if (!changed) {
        free(out);
        return NULL;
    }
    return out;
}
