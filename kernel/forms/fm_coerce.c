/* fm_coerce.c - values against annotations. Two doors lead here: a widget moved in
 * the frontend (a JSON value: fm_check_value) and `kiln run -p NAME VALUE` (text:
 * fm_form_coerce). Both refuse what the annotation does not allow (wrong type, out of
 * a slider's range, not one of a dropdown's options, not a calendar date) with a
 * message naming the parameter, and never change anything themselves.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fm_internal.h"
#include "kl.h"

int fm_fail(mg_error *err, const char *ename, const char *fmt, ...)
{
    va_list ap;
    if (!err) return -1;
    snprintf(err->ename, sizeof err->ename, "%s", ename);
    va_start(ap, fmt);
    vsnprintf(err->evalue, sizeof err->evalue, fmt, ap);
    va_end(ap);
    return -1;
}

int fm_date_parse(const char *s, int *y, int *m, int *d)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    for (int i = 0; i < 10; i++) {
        if (i == 4 || i == 7) {
            if (s[i] != '-') return -1;
        } else if (s[i] < '0' || s[i] > '9') return -1;
    }
    if (s[10]) return -1;
    *y = atoi(s);
    *m = atoi(s + 5);
    *d = atoi(s + 8);
    if (*y < 1 || *m < 1 || *m > 12 || *d < 1) return -1;
    int leap = (*y % 4 == 0 && *y % 100 != 0) || *y % 400 == 0;
    return *d <= mdays[*m - 1] + (*m == 2 && leap) ? 0 : -1;
}

static int msgf(char *msg, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int msgf(char *msg, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, len, fmt, ap);
    va_end(ap);
    return 0;
}

/* A DatePicker value {"year":Y,"month":M0,"date":D} (month 0-based) as "YYYY-MM-DD". */
static json_t *date_from_picker(json_t *v)
{
    json_t *y = json_object_get(v, "year"), *m = json_object_get(v, "month"),
           *d = json_object_get(v, "date");
    if (!json_is_integer(y) || !json_is_integer(m) || !json_is_integer(d)) return NULL;
    json_int_t yy = json_integer_value(y), mm = json_integer_value(m), dd = json_integer_value(d);
    if (yy < 1 || yy > 9999 || mm < 0 || mm > 11 || dd < 1 || dd > 31) return NULL;
    char text[16];
    snprintf(text, sizeof text, "%04d-%02d-%02d", (int)yy, (int)mm + 1, (int)dd);
    int a, b, c;
    return fm_date_parse(text, &a, &b, &c) ? NULL : json_string(text);
}

static json_t *check_slider(const fm_field *f, json_t *v, char *msg, size_t len)
{
    if (!json_is_number(v)) {
        msgf(msg, len, "'%s' is a slider and takes a number", f->name);
        return NULL;
    }
    double d = json_number_value(v), tol = (f->max - f->min) * 1e-9;
    if (d < f->min - tol || d > f->max + tol) {
        char *r = kl_value_repr(v);
        msgf(msg, len, "%s is outside the range of slider '%s' [%g, %g]", r ? r : "value", f->name,
             f->min, f->max);
        free(r);
        return NULL;
    }
    if (f->int_slider) {
        if (d != floor(d)) {
            msgf(msg, len, "'%s' is an integer slider; %g is not an integer", f->name, d);
            return NULL;
        }
        return json_integer((json_int_t)d);
    }
    return json_real(d);
}

static json_t *check_dropdown(const fm_field *f, json_t *v, char *msg, size_t len)
{
    int i = fm_dropdown_index(f, v);
    if (i >= 0) return json_incref(json_array_get(f->values, (size_t)i));
    if (f->allow_input && (f->raw || json_is_string(v))) return json_incref(v);
    char *r = kl_value_repr(v), *opts = json_dumps(f->labels, JSON_COMPACT);
    msgf(msg, len, "%s is not one of the options of '%s': %s", r ? r : "value", f->name,
         opts ? opts : "");
    free(r);
    free(opts);
    return NULL;
}

json_t *fm_check_value(const fm_field *f, json_t *v, char *msg, size_t len)
{
    int y, m, d;
    msgf(msg, len, "out of memory checking '%s'", f->name); /* unless a rule says more */
    if (!v) {
        msgf(msg, len, "'%s' needs a value", f->name);
        return NULL;
    }
    switch (f->kind) {
    case FM_STRING:
        if (json_is_string(v)) return json_incref(v);
        msgf(msg, len, "'%s' is a string parameter and takes a quoted string", f->name);
        return NULL;
    case FM_NUMBER:
        if (json_is_number(v)) return json_incref(v);
        msgf(msg, len, "'%s' is a number parameter and takes a number", f->name);
        return NULL;
    case FM_INTEGER:
        if (json_is_integer(v)) return json_incref(v);
        if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
            fabs(json_real_value(v)) < 9e15)
            return json_integer((json_int_t)json_real_value(v));
        msgf(msg, len, "'%s' is an integer parameter and takes a whole number", f->name);
        return NULL;
    case FM_SLIDER: return check_slider(f, v, msg, len);
    case FM_BOOLEAN:
        if (json_is_boolean(v)) return json_incref(v);
        msgf(msg, len, "'%s' is a boolean parameter and takes True or False", f->name);
        return NULL;
    case FM_DATE:
        if (json_is_object(v)) {
            json_t *s = date_from_picker(v);
            if (s) return s;
        } else if (json_is_string(v) && !fm_date_parse(json_string_value(v), &y, &m, &d)) {
            return json_incref(v);
        }
        msgf(msg, len, "'%s' is a date parameter and takes a date \"YYYY-MM-DD\"", f->name);
        return NULL;
    case FM_RAW:
    case FM_UNTYPED: return json_incref(v);
    case FM_DROPDOWN: return check_dropdown(f, v, msg, len);
    }
    return NULL;
}

/* ---- kiln run -p NAME VALUE ---- */

static json_t *text_value(const fm_field *f, const char *text, char *msg, size_t len)
{
    msgf(msg, len, "out of memory reading the value of '%s'", f->name);
    json_t *lit = kl_literal_parse(text);
    json_t *v = NULL;
    switch (f->kind) {
    case FM_STRING:
    case FM_DATE:
        json_decref(lit);
        lit = fm_jstr(text, strlen(text));
        if (!lit) {
            msgf(msg, len, "the value for '%s' is not valid UTF-8", f->name);
            return NULL;
        }
        break;
    case FM_BOOLEAN:
        if (!strcmp(text, "true") || !strcmp(text, "1")) {
            json_decref(lit);
            lit = json_true();
        }
        if (!strcmp(text, "false") || !strcmp(text, "0")) {
            json_decref(lit);
            lit = json_false();
        }
        break;
    case FM_UNTYPED:
        if (!lit) lit = fm_jstr(text, strlen(text));
        break;
    case FM_RAW:
        if (!lit) {
            msgf(msg, len,
                 "'%s' is a raw parameter: -p takes a Python literal for it "
                 "(a number, 'string', True/False/None, [list] or {dict}), not %.60s",
                 f->name, text);
            return NULL;
        }
        break;
    case FM_DROPDOWN:
        for (size_t i = 0; i < json_array_size(f->labels); i++) {
            if (strcmp(json_string_value(json_array_get(f->labels, i)), text)) continue;
            json_t *opt = f->raw ? kl_literal_parse(text) : NULL;
            json_decref(lit);
            if (f->raw && !opt) {
                msgf(msg, len, "option %.60s of '%s' is code, not a literal; -p cannot set it",
                     text, f->name);
                return NULL;
            }
            json_decref(opt);
            return json_incref(json_array_get(f->values, i));
        }
        if (!f->raw) {
            json_decref(lit);
            lit = fm_jstr(text, strlen(text));
        }
        break;
    default: break;
    }
    if (f->kind == FM_NUMBER || f->kind == FM_INTEGER || f->kind == FM_SLIDER) {
        if (!json_is_number(lit)) {
            msgf(msg, len, "'%s' is a %s parameter; %.60s is not a number", f->name,
                 fm_kind_name(f->kind), text);
            json_decref(lit);
            return NULL;
        }
    }
    if (!lit) {
        msgf(msg, len, "%.60s is not a valid value for '%s'", text, f->name);
        return NULL;
    }
    v = fm_check_value(f, lit, msg, len);
    json_decref(lit);
    return v;
}

int fm_form_coerce(const fm_form *f, const char *name, const char *value_text, json_t **value,
                   mg_error *err)
{
    char msg[700];
    *value = NULL;
    const fm_field *fd = f && name ? fm_form_find(f, name) : NULL;
    if (!fd) return 0;
    if (!value_text) return fm_fail(err, "ValueError", "no value for '%s'", name);
    *value = text_value(fd, value_text, msg, sizeof msg);
    if (!*value) return fm_fail(err, "ValueError", "%s", msg);
    return 1;
}
