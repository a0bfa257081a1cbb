/* fm_parse.c - Colab's annotation grammar, one cell at a time:
 *
 *   #@title TEXT { display-mode: "form" }      at most one per cell
 *   #@markdown TEXT                            any number
 *   name = value  #@param [list] {options}     any number; list and options optional
 *
 * Options and lists accept both spellings seen in the wild (bare keys `{type:"slider"}`
 * and Colab's current JSON `{"type":"slider"}`, single or double quotes). The `#` that
 * starts an annotation is the first one outside string literals. Lines starting with
 * `%` or `!` (magics, shell) are never parameters.
 *
 * What the annotation says is checked here (known type, option keys that apply to it,
 * slider bounds, a literal value that fits the type and, for dropdowns without
 * allow-input, is one of the options). A violation is a SyntaxError naming the line;
 * the code itself is not touched: the engine still runs the assignment as written.
 */
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fm_internal.h"
#include "kl.h"

typedef struct {
    int line;
    mg_error *err;
} pctx;

#define PFAIL(pc, ...) fail_line((pc), __VA_ARGS__)

static int fail_line(pctx *pc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail_line(pctx *pc, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return fm_fail(pc->err, "SyntaxError", "line %d: %s", pc->line, msg);
}

static void skip_blank(const char **p)
{
    while (**p == ' ' || **p == '\t') (*p)++;
}

/* Non-zero when p starts with "@kw" followed by a non-word character. */
static int at_keyword(const char *p, const char *kw)
{
    size_t n = strlen(kw);
    return p[0] == '@' && strncmp(p + 1, kw, n) == 0 && !isalnum((unsigned char)p[n + 1]) &&
           p[n + 1] != '_';
}

/* First '#' outside string literals, or NULL. */
static const char *find_comment(const char *s)
{
    char q = 0;
    for (; *s; s++) {
        if (q) {
            if (*s == '\\' && s[1]) s++;
            else if (*s == q) q = 0;
        } else if (*s == '"' || *s == '\'') {
            q = *s;
        } else if (*s == '#') {
            return s;
        }
    }
    return NULL;
}

static char *trimmed(const char *s, const char *e)
{
    while (s < e && isspace((unsigned char)*s)) s++;
    while (e > s && isspace((unsigned char)e[-1])) e--;
    return strndup(s, (size_t)(e - s));
}

/* ---- the {options} object and the [list] ---- */

static json_t *parse_options(pctx *pc, const char **p)
{
    json_t *obj = json_object();
    char msg[160];
    if (!obj) {
        PFAIL(pc, "out of memory");
        return NULL;
    }
    (*p)++;
    for (;;) {
        skip_blank(p);
        if (**p == '}') {
            (*p)++;
            return obj;
        }
        char *key = NULL;
        if (**p == '"' || **p == '\'') {
            json_t *k = fm_lit_annotation(p, &key, msg, sizeof msg);
            int bad = !json_is_string(k);
            json_decref(k);
            if (bad) {
                free(key);
                PFAIL(pc, "bad option name in {...}");
                goto fail;
            }
        } else if (isalpha((unsigned char)**p) || **p == '_') {
            const char *s = *p;
            while (isalnum((unsigned char)**p) || **p == '_' || **p == '-') (*p)++;
            key = strndup(s, (size_t)(*p - s));
        } else {
            PFAIL(pc, "expected an option name or '}' at '%.20s'", *p);
            goto fail;
        }
        if (!key) {
            PFAIL(pc, "out of memory");
            goto fail;
        }
        skip_blank(p);
        if (**p != ':') {
            PFAIL(pc, "expected ':' after option '%s'", key);
            free(key);
            goto fail;
        }
        (*p)++;
        skip_blank(p);
        json_t *v = fm_lit_annotation(p, NULL, msg, sizeof msg);
        if (!v) {
            PFAIL(pc, "option '%s': %s", key, msg);
            free(key);
            goto fail;
        }
        int rc = json_object_set_new(obj, key, v);
        free(key);
        if (rc) {
            PFAIL(pc, "out of memory");
            goto fail;
        }
        skip_blank(p);
        if (**p == ',') {
            (*p)++;
            continue;
        }
        if (**p == '}') {
            (*p)++;
            return obj;
        }
        PFAIL(pc, "expected ',' or '}' in options at '%.20s'", *p);
        goto fail;
    }
fail:
    json_decref(obj);
    return NULL;
}

/* Fills labels (texts as shown) and lits (the literals). */
static int parse_list(pctx *pc, const char **p, json_t *labels, json_t *lits)
{
    char msg[160];
    (*p)++;
    for (;;) {
        skip_blank(p);
        if (**p == ']') {
            (*p)++;
            break;
        }
        char *text = NULL;
        json_t *v = fm_lit_annotation(p, &text, msg, sizeof msg);
        if (!v) return PFAIL(pc, "dropdown list: %s", msg);
        json_t *label = fm_jstr(text, strlen(text));
        free(text);
        if (!label) {
            json_decref(v);
            return PFAIL(pc, "dropdown list: option is not valid text");
        }
        if (json_array_append_new(labels, label) || json_array_append_new(lits, v))
            return PFAIL(pc, "out of memory");
        skip_blank(p);
        if (**p == ',') {
            (*p)++;
            continue;
        }
        if (**p == ']') {
            (*p)++;
            break;
        }
        return PFAIL(pc, "expected ',' or ']' in dropdown list at '%.20s'", *p);
    }
    if (json_array_size(labels) == 0) return PFAIL(pc, "dropdown list is empty");
    return 0;
}

/* ---- checking what the annotation says ---- */

static int only_keys(pctx *pc, json_t *opts, const char *allowed, const char *what)
{
    const char *k;
    json_t *v;
    json_object_foreach(opts, k, v)
    {
        char pat[80];
        snprintf(pat, sizeof pat, " %s ", k);
        if (!strstr(allowed, pat))
            return PFAIL(pc, "option '%s' does not apply to %s (allowed:%s)", k, what, allowed);
    }
    return 0;
}

static int opt_number(pctx *pc, json_t *opts, const char *key, double def, double *out)
{
    json_t *v = json_object_get(opts, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (!json_is_number(v)) return PFAIL(pc, "slider option '%s' must be a number", key);
    *out = json_number_value(v);
    return 0;
}

static int is_integral(double d) { return isfinite(d) && d == floor(d) && fabs(d) < 9e15; }

static int setup_slider(pctx *pc, fm_field *f, json_t *opts)
{
    if (only_keys(pc, opts, " type min max step ", "a slider") ||
        opt_number(pc, opts, "min", 0, &f->min) || opt_number(pc, opts, "max", 100, &f->max) ||
        opt_number(pc, opts, "step", 1, &f->step))
        return -1;
    if (!(f->min < f->max))
        return PFAIL(pc, "slider min (%g) must be below max (%g)", f->min, f->max);
    if (!(f->step > 0)) return PFAIL(pc, "slider step must be positive, not %g", f->step);
    f->int_slider = is_integral(f->min) && is_integral(f->max) && is_integral(f->step);
    json_t *v = f->code_value;
    if (v && json_is_real(v) && !is_integral(json_real_value(v))) f->int_slider = 0;
    return 0;
}

static int setup_dropdown(pctx *pc, fm_field *f, json_t *opts, json_t *lits)
{
    json_t *t = json_object_get(opts, "type"), *ai = json_object_get(opts, "allow-input");
    if (only_keys(pc, opts, " type allow-input placeholder ", "a dropdown")) return -1;
    if (t && !(json_is_string(t) &&
               (!strcmp(json_string_value(t), "string") || !strcmp(json_string_value(t), "raw"))))
        return PFAIL(pc, "a dropdown's type must be \"string\" or \"raw\"");
    if (ai && !json_is_boolean(ai)) return PFAIL(pc, "allow-input must be true or false");
    f->kind = FM_DROPDOWN;
    f->raw = t && !strcmp(json_string_value(t), "raw");
    f->allow_input = ai && json_is_true(ai);
    if (f->raw) { /* a raw option is code: its value is what the text means */
        for (size_t i = 0; i < json_array_size(f->labels); i++) {
            json_t *v = kl_literal_parse(json_string_value(json_array_get(f->labels, i)));
            if (json_array_append_new(f->values, v ? v : json_null()))
                return PFAIL(pc, "out of memory");
        }
    } else if (json_array_extend(f->values, lits)) {
        return PFAIL(pc, "out of memory");
    }
    if (f->code_value && !f->allow_input && fm_dropdown_index(f, f->code_value) < 0)
        return PFAIL(pc, "value %s is not one of the dropdown's options", f->code_text);
    return 0;
}

static const struct {
    const char *name;
    fm_kind kind;
} type_names[] = {
    {"string", FM_STRING},   {"number", FM_NUMBER}, {"integer", FM_INTEGER}, {"slider", FM_SLIDER},
    {"boolean", FM_BOOLEAN}, {"date", FM_DATE},     {"raw", FM_RAW},
};

static int setup_typed(pctx *pc, fm_field *f, json_t *opts)
{
    json_t *t = json_object_get(opts, "type");
    if (json_object_get(opts, "allow-input"))
        return PFAIL(
            pc, "allow-input needs a dropdown list: #@param [\"a\", \"b\"] {allow-input: true}");
    if (!t) {
        f->kind = FM_UNTYPED;
    } else {
        if (!json_is_string(t)) return PFAIL(pc, "type must be a quoted name such as \"string\"");
        size_t i, n = sizeof type_names / sizeof type_names[0];
        for (i = 0; i < n && strcmp(type_names[i].name, json_string_value(t)); i++) {}
        if (i == n)
            return PFAIL(pc,
                         "unknown @param type \"%.40s\" (string, number, integer, slider, "
                         "boolean, date, raw)",
                         json_string_value(t));
        f->kind = type_names[i].kind;
    }
    if (f->kind == FM_SLIDER) return setup_slider(pc, f, opts);
    return only_keys(pc, opts, " type placeholder ", "this type");
}

/* The literal written in the code must fit the annotation (expressions are not checked). */
static int check_code_value(pctx *pc, fm_field *f)
{
    char msg[300];
    if (!f->code_value || f->kind == FM_DROPDOWN) return 0;
    json_t *v = fm_check_value(f, f->code_value, msg, sizeof msg);
    if (!v) return PFAIL(pc, "%s", msg);
    json_decref(v);
    return 0;
}

/* ---- lines ---- */

/* A form with more items than this is surely not meant as a form (and would open
 * thousands of widget models); it also keeps the duplicate-name check linear enough. */
#define FM_MAX_ITEMS 1000

static int add_item(fm_form *form, fm_item_kind kind, char *text, fm_field *field)
{
    if (form->n == form->cap) {
        size_t cap = form->cap ? form->cap * 2 : 8;
        fm_item *items = realloc(form->items, cap * sizeof *items);
        if (!items) return -1;
        form->items = items;
        form->cap = cap;
    }
    form->items[form->n++] = (fm_item){kind, text, field};
    return 0;
}

static void field_free(fm_field *f)
{
    if (!f) return;
    free(f->name);
    free(f->placeholder);
    free(f->code_text);
    json_decref(f->labels);
    json_decref(f->values);
    json_decref(f->code_value);
    free(f);
}

static int is_identifier(const char *s)
{
    if (!(isalpha((unsigned char)*s) || *s == '_')) return 0;
    for (s++; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_')) return 0;
    return 1;
}

static int parse_param(pctx *pc, fm_form *form, const char *line, const char *hash, const char *ann)
{
    const char *eq = NULL;
    for (const char *s = line; s < hash; s++) {
        if (*s == '"' || *s == '\'') break;
        if (*s == '=') {
            eq = s;
            break;
        }
    }
    if (!eq || eq[1] == '=')
        return PFAIL(pc, "#@param belongs on an assignment: name = value  #@param ...");
    fm_field *f = calloc(1, sizeof *f);
    json_t *opts = NULL, *lits = json_array();
    if (!f || !lits) {
        free(f);
        json_decref(lits);
        return PFAIL(pc, "out of memory");
    }
    f->line = pc->line;
    f->name = trimmed(line, eq);
    f->code_text = trimmed(eq + 1, hash);
    f->labels = json_array();
    f->values = json_array();
    if (!f->name || !f->code_text || !f->labels || !f->values) {
        PFAIL(pc, "out of memory");
        goto fail;
    }
    if (!is_identifier(f->name)) {
        PFAIL(pc, "#@param target must be a plain variable name, not '%.40s'", f->name);
        goto fail;
    }
    if (!*f->code_text) {
        PFAIL(pc, "#@param needs a value after '='");
        goto fail;
    }
    f->code_value = kl_literal_parse(f->code_text);

    const char *p = ann;
    skip_blank(&p);
    int has_list = *p == '[';
    if (has_list && parse_list(pc, &p, f->labels, lits)) goto fail;
    skip_blank(&p);
    opts = *p == '{' ? parse_options(pc, &p) : json_object();
    if (!opts) goto fail;
    skip_blank(&p);
    if (*p && *p != '\r') {
        PFAIL(pc, "unexpected text after #@param annotation: '%.30s'", p);
        goto fail;
    }
    json_t *ph = json_object_get(opts, "placeholder");
    if (ph && !json_is_string(ph)) {
        PFAIL(pc, "placeholder must be a string");
        goto fail;
    }
    if (ph && !(f->placeholder = strdup(json_string_value(ph)))) {
        PFAIL(pc, "out of memory");
        goto fail;
    }
    if (has_list ? setup_dropdown(pc, f, opts, lits) : setup_typed(pc, f, opts)) goto fail;
    if (check_code_value(pc, f)) goto fail;
    if (fm_form_find(form, f->name)) {
        PFAIL(pc, "'%s' already has a #@param in this cell", f->name);
        goto fail;
    }
    if (add_item(form, FM_ITEM_PARAM, NULL, f)) {
        PFAIL(pc, "out of memory");
        goto fail;
    }
    json_decref(opts);
    json_decref(lits);
    return 0;
fail:
    json_decref(opts);
    json_decref(lits);
    field_free(f);
    return -1;
}

static int parse_title(pctx *pc, fm_form *form, const char *p)
{
    if (form->title_options) return PFAIL(pc, "a cell has only one #@title");
    const char *brace = strchr(p, '{');
    const char *end = brace ? brace : p + strlen(p);
    json_t *opts = NULL;
    if (brace) {
        const char *q = brace;
        if (!(opts = parse_options(pc, &q))) return -1;
        skip_blank(&q);
        if (*q && *q != '\r') {
            json_decref(opts);
            return PFAIL(pc, "unexpected text after #@title options: '%.30s'", q);
        }
    } else if (!(opts = json_object())) {
        return PFAIL(pc, "out of memory");
    }
    char *text = trimmed(p, end);
    if (!text || add_item(form, FM_ITEM_TITLE, text, NULL)) {
        free(text);
        json_decref(opts);
        return PFAIL(pc, "out of memory");
    }
    form->title_options = opts;
    return 0;
}

static int parse_markdown(pctx *pc, fm_form *form, const char *p)
{
    if (*p == ' ') p++;
    char *text = trimmed(p, p + strlen(p));
    if (!text || add_item(form, FM_ITEM_MARKDOWN, text, NULL)) {
        free(text);
        return PFAIL(pc, "out of memory");
    }
    return 0;
}

/* One line (NUL-terminated copy). */
static int parse_line(pctx *pc, fm_form *form, const char *line)
{
    const char *p = line;
    skip_blank(&p);
    if (*p == '%' || *p == '!') return 0;
    const char *hash = find_comment(p);
    if (!hash) return 0;
    const char *a = hash + 1;
    skip_blank(&a);
    int is_title = at_keyword(a, "title"), is_md = at_keyword(a, "markdown"),
        is_param = at_keyword(a, "param");
    if (!is_title && !is_md && !is_param) return 0;
    if (form->n >= FM_MAX_ITEMS)
        return PFAIL(pc, "a form holds at most %d annotation lines", FM_MAX_ITEMS);
    if (!kl_utf8_valid(line, strlen(line))) return PFAIL(pc, "annotation is not valid UTF-8");
    if (hash != p) { /* after code: only @param means something there */
        return is_param ? parse_param(pc, form, p, hash, a + 6) : 0;
    }
    if (is_param) return PFAIL(pc, "#@param belongs on an assignment: name = value  #@param ...");
    return is_title ? parse_title(pc, form, a + 6) : parse_markdown(pc, form, a + 9);
}

int fm_form_parse(const char *code, fm_form **out, mg_error *err)
{
    *out = NULL;
    if (!code) return 0;
    fm_form *form = calloc(1, sizeof *form);
    if (!form) return fm_fail(err, "MemoryError", "out of memory parsing the form");
    pctx pc = {0, err};
    const char *s = code;
    while (*s) {
        const char *e = strchr(s, '\n');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        pc.line++;
        if (memchr(s, '@', n)) { /* fast path: most lines have no annotation */
            char *line = strndup(s, n);
            if (!line) {
                fm_form_destroy(form);
                return fm_fail(err, "MemoryError", "out of memory");
            }
            int rc = parse_line(&pc, form, line);
            free(line);
            if (rc) {
                fm_form_destroy(form);
                return -1;
            }
        }
        s += n;
        if (*s == '\n') s++;
    }
    if (form->n == 0) {
        fm_form_destroy(form);
        return 0;
    }
    if (!(form->source = strdup(code))) {
        fm_form_destroy(form);
        return fm_fail(err, "MemoryError", "out of memory");
    }
    *out = form;
    return 0;
}

void fm_form_destroy(fm_form *f)
{
    if (!f) return;
    free(f->source);
    for (size_t i = 0; i < f->n; i++) {
        free(f->items[i].text);
        field_free(f->items[i].field);
    }
    free(f->items);
    json_decref(f->title_options);
    free(f);
}
