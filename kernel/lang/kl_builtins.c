/* kl_builtins.c - the builtin functions: print, input, len, int, float, str, bool,
 * repr, abs, round, min, max, sum, range, list, dict. One small function each, found
 * through a static table that also feeds completion and inspect. range() builds a
 * list (there are no lazy objects), limited to KLP_MAX_ITEMS items. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kl_builtins.h"

json_t *klpb_fail(klp_ctx *c, const klp_node *n, const char *ename, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    klp_fail(c->err, n->line, n->col, ename, "%s", msg);
    return NULL;
}

int klpb_nargs(klpb_call *k, size_t lo, size_t hi)
{
    if (k->na >= lo && k->na <= hi) return 0;
    if (lo == hi)
        klp_fail(k->c->err, k->n->line, k->n->col, "TypeError",
                 "%s() takes exactly %zu "
                 "argument%s (%zu given)",
                 k->name, lo, lo == 1 ? "" : "s", k->na);
    else if (k->na < lo)
        klp_fail(k->c->err, k->n->line, k->n->col, "TypeError",
                 "%s() takes at least %zu "
                 "argument%s (%zu given)",
                 k->name, lo, lo == 1 ? "" : "s", k->na);
    else
        klp_fail(k->c->err, k->n->line, k->n->col, "TypeError",
                 "%s() takes at most %zu "
                 "argument%s (%zu given)",
                 k->name, hi, hi == 1 ? "" : "s", k->na);
    return -1;
}

/* Refuses keywords not listed in allowed ("sep,end"); *vals[i] gets each one or NULL. */
int klpb_kwargs(klpb_call *k, const char *allowed, json_t **vals)
{
    for (size_t i = 0; i < k->nk; i++) {
        const char *p = allowed;
        int idx = 0, found = -1;
        size_t ln = strlen(k->kwn[i]);
        while (p && *p) {
            const char *e = strchr(p, ',');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            if (len == ln && !strncmp(p, k->kwn[i], len)) found = idx;
            idx++;
            p = e ? e + 1 : NULL;
        }
        if (found < 0) {
            klp_fail(k->c->err, k->n->line, k->n->col, "TypeError",
                     "%s() got an unexpected "
                     "keyword argument '%s'",
                     k->name, k->kwn[i]);
            return -1;
        }
        vals[found] = k->kw[i];
    }
    return 0;
}

json_t *klpb_str_new(kl_buf *b)
{
    json_t *r = b->oom ? NULL : json_stringn(b->s ? b->s : "", b->n);
    kl_buf_free(b);
    return r;
}

/* ---- output and input ---- */

/* `help` and help(): where Kiln's help is, as IPython's `help` says where Python's is;
 * help("train") / help("%train") shows that magic's (or builtin's) help. */
const char klp_help_pointer[] =
    "Kiln's help: %lsmagic lists the magics; NAME? shows the help of a magic or a "
    "variable (%train?, lr?);\n%train --help lists a magic's options; help(\"train\") "
    "does the same from code.\n";

static json_t *b_help(klpb_call *k)
{
    if (k->na > 1) return klpb_fail(k->c, k->n, "TypeError", "help() takes at most 1 argument");
    if (k->na == 1 && json_is_string(k->args[0])) {
        klp_help(k->c, json_string_value(k->args[0]));
        return json_null();
    }
    if (k->c->out && k->c->out->stream)
        k->c->out->stream(k->c->out->user, "stdout", klp_help_pointer, strlen(klp_help_pointer));
    return json_null();
}

static json_t *b_print(klpb_call *k)
{
    json_t *kv[4] = {NULL, NULL, NULL, NULL};
    if (klpb_kwargs(k, "sep,end,flush,file", kv) < 0) return NULL;
    for (int i = 0; i < 2; i++)
        if (kv[i] && !json_is_null(kv[i]) && !json_is_string(kv[i]))
            return klpb_fail(k->c, k->n, "TypeError", "%s must be None or a string, not %s",
                             i ? "end" : "sep", klp_type_name(kv[i]));
    if (kv[3] && !json_is_null(kv[3]))
        return klpb_fail(k->c, k->n, "TypeError", "print(file=...) is not supported");
    kl_buf b = {0};
    for (size_t i = 0; i < k->na; i++) {
        if (i) {
            if (kv[0] && json_is_string(kv[0]))
                kl_buf_add(&b, json_string_value(kv[0]), json_string_length(kv[0]));
            else kl_buf_add(&b, " ", 1);
        }
        klp_str(&b, k->args[i]);
    }
    if (kv[1] && json_is_string(kv[1]))
        kl_buf_add(&b, json_string_value(kv[1]), json_string_length(kv[1]));
    else kl_buf_add(&b, "\n", 1);
    if (!b.oom && b.n && k->c->out && k->c->out->stream)
        k->c->out->stream(k->c->out->user, "stdout", b.s, b.n);
    kl_buf_free(&b);
    return json_null();
}

static json_t *b_input(klpb_call *k)
{
    if (klpb_nargs(k, 0, 1) < 0) return NULL;
    kl_buf b = {0};
    if (k->na) klp_str(&b, k->args[0]);
    const mg_out *o = k->c->out;
    if (!o || !o->input) {
        kl_buf_free(&b);
        return klpb_fail(k->c, k->n, "StdinNotImplementedError",
                         "input() was called, but "
                         "this frontend does not support input requests.");
    }
    char *line = o->input(o->user, b.s ? b.s : "", 0);
    kl_buf_free(&b);
    if (!line) {
        if (klp_interrupted(k->c->eng))
            return klpb_fail(k->c, k->n, "KeyboardInterrupt", "interrupted");
        return klpb_fail(k->c, k->n, "StdinNotImplementedError",
                         "input() was called, but "
                         "this frontend does not support input requests.");
    }
    json_t *r = klp_utf8_valid(line, strlen(line)) ? json_string(line) : NULL;
    free(line);
    return r ? r : klpb_fail(k->c, k->n, "UnicodeDecodeError", "input is not valid UTF-8");
}

/* ---- conversions ---- */

static json_t *b_len(klpb_call *k)
{
    if (klpb_nargs(k, 1, 1) < 0) return NULL;
    json_t *v = k->args[0];
    if (json_is_string(v))
        return json_integer((json_int_t)klp_utf8_len(json_string_value(v), json_string_length(v)));
    if (json_is_array(v)) return json_integer((json_int_t)json_array_size(v));
    if (json_is_object(v)) return json_integer((json_int_t)json_object_size(v));
    return klpb_fail(k->c, k->n, "TypeError", "object of type '%s' has no len()", klp_type_name(v));
}

static json_t *b_str(klpb_call *k)
{
    if (klpb_nargs(k, 0, 1) < 0) return NULL;
    if (!k->na) return json_string("");
    kl_buf b = {0};
    klp_str(&b, k->args[0]);
    return klpb_str_new(&b);
}

static json_t *b_repr(klpb_call *k)
{
    if (klpb_nargs(k, 1, 1) < 0) return NULL;
    kl_buf b = {0};
    klp_repr(&b, k->args[0]);
    return klpb_str_new(&b);
}

static json_t *b_bool(klpb_call *k)
{
    if (klpb_nargs(k, 0, 1) < 0) return NULL;
    return json_boolean(k->na && klp_truthy(k->args[0]));
}

/* Parses int() text: whitespace, sign, decimal digits with single underscores between. */
static int parse_int_text(const char *s, long long *out, int *overflow)
{
    while (*s && strchr(" \t\n\r\f\v", *s)) s++;
    int neg = 0;
    if (*s == '+' || *s == '-') neg = *s++ == '-';
    unsigned long long v = 0;
    int nd = 0, last_us = 0;
    for (; *s && !strchr(" \t\n\r\f\v", *s); s++) {
        if (*s == '_' && nd && !last_us) {
            last_us = 1;
            continue;
        }
        if (*s < '0' || *s > '9') return -1;
        last_us = 0;
        if (v > (ULLONG_MAX - (unsigned)(*s - '0')) / 10) *overflow = 1;
        else v = v * 10 + (unsigned)(*s - '0');
        nd++;
    }
    while (*s && strchr(" \t\n\r\f\v", *s)) s++;
    if (*s || !nd || last_us) return -1;
    if (v > (unsigned long long)INT64_MAX + (unsigned)neg) *overflow = 1;
    *out = neg ? (long long)(0ULL - v) : (long long)v;
    return 0;
}

static json_t *b_int(klpb_call *k)
{
    if (klpb_nargs(k, 0, 1) < 0) return NULL;
    if (!k->na) return json_integer(0);
    json_t *v = k->args[0];
    if (json_is_integer(v)) return json_incref(v);
    if (json_is_boolean(v)) return json_integer(json_is_true(v));
    if (json_is_real(v)) {
        double d = trunc(json_real_value(v));
        if (d >= 9.2233720368547758e18 || d < -9.2233720368547758e18)
            return klpb_fail(k->c, k->n, "OverflowError",
                             "int too large (Kiln integers are "
                             "64-bit)");
        return json_integer((json_int_t)d);
    }
    if (json_is_string(v)) {
        long long r;
        int of = 0;
        if (parse_int_text(json_string_value(v), &r, &of) < 0) {
            klp_fail_repr(k->c->err, k->n->line, k->n->col, "ValueError",
                          "invalid literal for "
                          "int() with base 10: ",
                          v);
            return NULL;
        }
        if (of)
            return klpb_fail(k->c, k->n, "OverflowError",
                             "int too large (Kiln integers "
                             "are 64-bit)");
        return json_integer(r);
    }
    return klpb_fail(k->c, k->n, "TypeError",
                     "int() argument must be a string or a number, "
                     "not '%s'",
                     klp_type_name(v));
}

static json_t *b_float(klpb_call *k)
{
    if (klpb_nargs(k, 0, 1) < 0) return NULL;
    if (!k->na) return json_real(0.0);
    json_t *v = k->args[0];
    if (json_is_real(v)) return json_incref(v);
    if (json_is_integer(v)) return json_real((double)json_integer_value(v));
    if (json_is_boolean(v)) return json_real(json_is_true(v));
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char clean[256];
        size_t j = 0;
        while (*s == ' ' || *s == '\t' || *s == '\n') s++;
        for (; *s && j < sizeof clean - 1; s++)
            if (*s != '_') clean[j++] = *s;
        while (j && (clean[j - 1] == ' ' || clean[j - 1] == '\t' || clean[j - 1] == '\n')) j--;
        clean[j] = 0;
        char *end;
        errno = 0;
        double d = j ? strtod(clean, &end) : 0;
        if (!j || *end || strchr(clean, 'x') || strchr(clean, 'X') || *s) {
            klp_fail_repr(k->c->err, k->n->line, k->n->col, "ValueError",
                          "could not convert "
                          "string to float: ",
                          v);
            return NULL;
        }
        return klp_real(k->c, k->n, d);
    }
    return klpb_fail(k->c, k->n, "TypeError",
                     "float() argument must be a string or a real "
                     "number, not '%s'",
                     klp_type_name(v));
}

/* ---- the table ---- */

static const struct {
    const char *name;
    json_t *(*fn)(klpb_call *k); /* new ref, or NULL with k->c->err */
    int kw;                      /* takes keyword arguments (klpb_kwargs names them) */
    const char *doc;
} table[] = {
    {"abs", klpb_abs, 0, "abs(x): the absolute value of a number."},
    {"bool", b_bool, 0, "bool(x): the truth value of x."},
    {"dict", klpb_dict, 1, "dict(mapping) or dict(key=value, ...): a new dict."},
    {"float", b_float, 0, "float(x): a float from a number or a string."},
    {"input", b_input, 0, "input(prompt=''): a line typed by the user (stdin request)."},
    {"int", b_int, 0, "int(x): an int from a number or a decimal string."},
    {"len", b_len, 0, "len(x): the number of items of a str, list or dict."},
    {"list", klpb_list, 0, "list(iterable): a new list."},
    {"max", klpb_max, 1, "max(iterable) or max(a, b, ...): the largest item."},
    {"min", klpb_min, 1, "min(iterable) or min(a, b, ...): the smallest item."},
    {"help", b_help, 0, "help() says where the help is; help(\"train\"): a magic's help."},
    {"print", b_print, 1, "print(*values, sep=' ', end='\\n'): writes the values to stdout."},
    {"range", klpb_range, 0, "range(stop) / range(start, stop[, step]): a list of ints."},
    {"repr", b_repr, 0, "repr(x): the printable representation of x."},
    {"round", klpb_round, 1, "round(x, ndigits=None): x rounded half to even."},
    {"str", b_str, 0, "str(x): x as a string."},
    {"sum", klpb_sum, 1, "sum(iterable, start=0): the sum of the items."},
};
#define NTABLE (sizeof table / sizeof table[0])

static size_t find(const char *name)
{
    for (size_t i = 0; i < NTABLE; i++)
        if (!strcmp(table[i].name, name)) return i;
    return NTABLE;
}

int klp_is_builtin(const char *name) { return find(name) < NTABLE; }

const char *klp_builtin_doc(const char *name)
{
    size_t i = find(name);
    return i < NTABLE ? table[i].doc : NULL;
}

const char *klp_builtin_name(size_t i) { return i < NTABLE ? table[i].name : NULL; }

json_t *klp_call_builtin(klp_ctx *c, const klp_node *n, const char *name, json_t **args,
                         size_t nargs, const char **kwnames, json_t **kwvals, size_t nkw)
{
    size_t i = find(name);
    if (!strcmp(name, "format")) {
        klp_fail(c->err, n->line, n->col, "NameError",
                 "format() is not supported: Kiln has no "
                 "format specs (use round(x, 3), str(x) or an f-string such as f'{x}')");
        return NULL;
    }
    if (i == NTABLE) {
        kl_buf b = {0};
        for (size_t j = 0; j < NTABLE; j++) kl_buf_printf(&b, "%s%s", j ? ", " : "", table[j].name);
        klp_fail(c->err, n->line, n->col, "NameError",
                 "name '%s' is not defined (Kiln cells "
                 "hold parameters; their functions are %s)",
                 name, b.s ? b.s : "");
        kl_buf_free(&b);
        return NULL;
    }
    klpb_call k = {c, n, name, args, nargs, kwnames, kwvals, nkw};
    if (nkw && !table[i].kw) {
        klp_fail(c->err, n->line, n->col, "TypeError", "%s() takes no keyword arguments", name);
        return NULL;
    }
    json_t *r = table[i].fn(&k);
    if (!r && !c->err->set) klp_fail(c->err, n->line, n->col, "MemoryError", "out of memory");
    return r;
}
