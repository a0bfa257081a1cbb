/* kl_builtins.c - the builtin functions: print, input, len, int, float, str, bool,
 * repr, abs, round, min, max, sum, range, list, dict, sorted, enumerate, zip, any,
 * all, format. One small function each, found through a static table that also
 * feeds completion and inspect. range() builds a list (there are no lazy objects),
 * limited to KLP_MAX_ITEMS items. */
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
        klp_fail(k->c->err, k->n->line, k->n->col, "TypeError", "%s() takes exactly %zu "
                 "argument%s (%zu given)", k->name, lo, lo == 1 ? "" : "s", k->na);
    else if (k->na < lo)
        klp_fail(k->c->err, k->n->line, k->n->col, "TypeError", "%s() takes at least %zu "
                 "argument%s (%zu given)", k->name, lo, lo == 1 ? "" : "s", k->na);
    else
        klp_fail(k->c->err, k->n->line, k->n->col, "TypeError", "%s() takes at most %zu "
                 "argument%s (%zu given)", k->name, hi, hi == 1 ? "" : "s", k->na);
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
            klp_fail(k->c->err, k->n->line, k->n->col, "TypeError", "%s() got an unexpected "
                     "keyword argument '%s'", k->name, k->kwn[i]);
            return -1;
        }
        vals[found] = k->kw[i];
    }
    return 0;
}

json_t *klpb_str_new(klp_buf *b)
{
    json_t *r = b->oom ? NULL : json_stringn(b->s ? b->s : "", b->n);
    klp_buf_free(b);
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
    klp_buf b = {0};
    for (size_t i = 0; i < k->na; i++) {
        if (i) {
            if (kv[0] && json_is_string(kv[0]))
                klp_buf_add(&b, json_string_value(kv[0]), json_string_length(kv[0]));
            else klp_buf_add(&b, " ", 1);
        }
        klp_str(&b, k->args[i]);
    }
    if (kv[1] && json_is_string(kv[1])) klp_buf_add(&b, json_string_value(kv[1]), json_string_length(kv[1]));
    else klp_buf_add(&b, "\n", 1);
    if (!b.oom && b.n && k->c->out && k->c->out->stream)
        k->c->out->stream(k->c->out->user, "stdout", b.s, b.n);
    klp_buf_free(&b);
    return json_null();
}

static json_t *b_input(klpb_call *k)
{
    if (klpb_nargs(k, 0, 1) < 0) return NULL;
    klp_buf b = {0};
    if (k->na) klp_str(&b, k->args[0]);
    const mg_out *o = k->c->out;
    if (!o || !o->input) {
        klp_buf_free(&b);
        return klpb_fail(k->c, k->n, "StdinNotImplementedError", "input() was called, but "
                         "this frontend does not support input requests.");
    }
    char *line = o->input(o->user, b.s ? b.s : "", 0);
    klp_buf_free(&b);
    if (!line) {
        if (klp_interrupted(k->c->eng))
            return klpb_fail(k->c, k->n, "KeyboardInterrupt", "interrupted");
        return klpb_fail(k->c, k->n, "StdinNotImplementedError", "input() was called, but "
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
    return klpb_fail(k->c, k->n, "TypeError", "object of type '%s' has no len()",
                     klp_type_name(v));
}

static json_t *b_str(klpb_call *k)
{
    if (klpb_nargs(k, 0, 1) < 0) return NULL;
    if (!k->na) return json_string("");
    klp_buf b = {0};
    klp_str(&b, k->args[0]);
    return klpb_str_new(&b);
}

static json_t *b_repr(klpb_call *k)
{
    if (klpb_nargs(k, 1, 1) < 0) return NULL;
    klp_buf b = {0};
    klp_repr(&b, k->args[0]);
    return klpb_str_new(&b);
}

static json_t *b_bool(klpb_call *k)
{
    if (klpb_nargs(k, 0, 1) < 0) return NULL;
    return json_boolean(k->na && klp_truthy(k->args[0]));
}

/* Parses Python int() text: whitespace, sign, underscores between digits, base prefixes. */
static int parse_int_text(const char *s, int base, long long *out, int *overflow)
{
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\f' || *s == '\v') s++;
    int neg = 0;
    if (*s == '+' || *s == '-') neg = *s++ == '-';
    if (base == 0 || base == 16 || base == 8 || base == 2) {
        if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && (base == 0 || base == 16)) base = 16, s += 2;
        else if (s[0] == '0' && (s[1] == 'o' || s[1] == 'O') && (base == 0 || base == 8)) base = 8, s += 2;
        else if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B') && (base == 0 || base == 2)) base = 2, s += 2;
        else if (base == 0) base = 10;
    }
    unsigned long long v = 0;
    int nd = 0, last_us = 0;
    for (; *s; s++) {
        if (*s == '_') {
            if (!nd || last_us) return -1;
            last_us = 1;
            continue;
        }
        int d = *s >= '0' && *s <= '9' ? *s - '0' : *s >= 'a' && *s <= 'z' ? *s - 'a' + 10
                : *s >= 'A' && *s <= 'Z' ? *s - 'A' + 10 : 99;
        if (d >= base) break;
        last_us = 0;
        if (v > (ULLONG_MAX - (unsigned)d) / (unsigned)base) *overflow = 1;
        else v = v * (unsigned)base + (unsigned)d;
        nd++;
    }
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\f' || *s == '\v') s++;
    if (*s || !nd || last_us) return -1;
    if (v > (unsigned long long)INT64_MAX + (unsigned)neg) *overflow = 1;
    *out = neg ? (long long)(0ULL - v) : (long long)v;
    return 0;
}

static json_t *b_int(klpb_call *k)
{
    json_t *kv[1] = {NULL};
    if (klpb_nargs(k, 0, 2) < 0 || klpb_kwargs(k, "base", kv) < 0) return NULL;
    if (!k->na) return json_integer(0);
    json_t *v = k->args[0], *bv = k->na > 1 ? k->args[1] : kv[0];
    if (bv && !json_is_string(v))
        return klpb_fail(k->c, k->n, "TypeError", "int() can't convert non-string with "
                         "explicit base");
    if (json_is_integer(v)) return json_incref(v);
    if (json_is_boolean(v)) return json_integer(json_is_true(v));
    if (json_is_real(v)) {
        double d = trunc(json_real_value(v));
        if (d >= 9.2233720368547758e18 || d < -9.2233720368547758e18)
            return klpb_fail(k->c, k->n, "OverflowError", "int too large (Kiln integers are "
                             "64-bit)");
        return json_integer((json_int_t)d);
    }
    if (json_is_string(v)) {
        long long base = 10;
        if (bv) {
            if (!json_is_integer(bv) || (base = (long long)json_integer_value(bv)) == 1 ||
                base < 0 || base > 36)
                return klpb_fail(k->c, k->n, "ValueError", "int() base must be >= 2 and <= 36, "
                                 "or 0");
        }
        long long r;
        int of = 0;
        if (parse_int_text(json_string_value(v), (int)base, &r, &of) < 0) {
            klp_buf b = {0};
            klp_repr(&b, v);
            json_t *e = klpb_fail(k->c, k->n, "ValueError", "invalid literal for int() with "
                                  "base %lld: %.900s", base, b.s ? b.s : "");
            klp_buf_free(&b);
            return e;
        }
        if (of) return klpb_fail(k->c, k->n, "OverflowError", "int too large (Kiln integers "
                                 "are 64-bit)");
        return json_integer(r);
    }
    return klpb_fail(k->c, k->n, "TypeError", "int() argument must be a string or a number, "
                     "not '%s'", klp_type_name(v));
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
            klp_buf b = {0};
            klp_repr(&b, v);
            json_t *e = klpb_fail(k->c, k->n, "ValueError", "could not convert string to "
                                  "float: %.900s", b.s ? b.s : "");
            klp_buf_free(&b);
            return e;
        }
        return klp_real(k->c, k->n, d);
    }
    return klpb_fail(k->c, k->n, "TypeError", "float() argument must be a string or a real "
                     "number, not '%s'", klp_type_name(v));
}

static json_t *b_format(klpb_call *k)
{
    if (klpb_nargs(k, 1, 2) < 0) return NULL;
    if (k->na == 2 && !json_is_string(k->args[1]))
        return klpb_fail(k->c, k->n, "TypeError", "format() argument 2 must be str, not %s",
                         klp_type_name(k->args[1]));
    return klp_format_value(k->c, k->n, k->args[0], k->na == 2 ? json_string_value(k->args[1]) : "");
}

/* ---- the table ---- */

static const klpb_entry table[] = {
    {"abs", klpb_abs, "abs(x): the absolute value of a number."},
    {"all", klpb_all, "all(iterable): True when every item is true."},
    {"any", klpb_any, "any(iterable): True when some item is true."},
    {"bool", b_bool, "bool(x): the truth value of x."},
    {"dict", klpb_dict, "dict(mapping or key=value...): a new dict."},
    {"enumerate", klpb_enumerate, "enumerate(iterable, start=0): a list of [index, item]."},
    {"float", b_float, "float(x): a float from a number or a string."},
    {"format", b_format, "format(value, spec): value formatted with a format spec."},
    {"input", b_input, "input(prompt=''): a line typed by the user (stdin request)."},
    {"int", b_int, "int(x, base=10): an int from a number or a string."},
    {"len", b_len, "len(x): the number of items of a str, list or dict."},
    {"list", klpb_list, "list(iterable): a new list."},
    {"max", klpb_max, "max(iterable) or max(a, b, ...): the largest item."},
    {"min", klpb_min, "min(iterable) or min(a, b, ...): the smallest item."},
    {"help", b_help, "help() says where the help is; help(\"train\"): a magic's help."},
    {"print", b_print, "print(*values, sep=' ', end='\\n'): writes the values to stdout."},
    {"range", klpb_range, "range(stop) / range(start, stop[, step]): a list of ints."},
    {"repr", b_repr, "repr(x): the printable representation of x."},
    {"round", klpb_round, "round(x, ndigits=None): x rounded half to even."},
    {"sorted", klpb_sorted, "sorted(iterable, reverse=False): a new sorted list."},
    {"str", b_str, "str(x): x as a string."},
    {"sum", klpb_sum, "sum(iterable, start=0): the sum of the items."},
    {"zip", klpb_zip, "zip(a, b, ...): a list of [a[i], b[i], ...]."},
};
#define NTABLE (sizeof table / sizeof table[0])

static const klpb_entry *find(const char *name)
{
    for (size_t i = 0; i < NTABLE; i++)
        if (!strcmp(table[i].name, name)) return &table[i];
    return NULL;
}

int klp_is_builtin(const char *name) { return find(name) != NULL; }

const char *klp_builtin_doc(const char *name)
{
    const klpb_entry *e = find(name);
    return e ? e->doc : NULL;
}

const char *const *klp_builtin_names(size_t *n)
{
    static const char *const names[] = {"abs", "all", "any", "bool", "dict", "enumerate",
                                        "float", "format", "help", "input", "int", "len", "list",
                                        "max", "min", "print", "range", "repr", "round",
                                        "sorted", "str", "sum", "zip"};
    *n = sizeof names / sizeof names[0];
    return names;
}

json_t *klp_call_builtin(klp_ctx *c, const klp_node *n, const char *name, json_t **args,
                         size_t nargs, const char **kwnames, json_t **kwvals, size_t nkw)
{
    const klpb_entry *e = find(name);
    if (!e) {
        klp_fail(c->err, n->line, n->col, "NameError", "name '%s' is not defined", name);
        return NULL;
    }
    klpb_call k = {c, n, name, args, nargs, kwnames, kwvals, nkw};
    if (e->fn != b_print && e->fn != b_int && e->fn != klpb_sorted && e->fn != klpb_sum &&
        e->fn != klpb_enumerate && e->fn != klpb_dict && e->fn != klpb_round &&
        e->fn != klpb_max && e->fn != klpb_min && nkw) {
        klp_fail(c->err, n->line, n->col, "TypeError", "%s() takes no keyword arguments", name);
        return NULL;
    }
    json_t *r = e->fn(&k);
    if (!r && !c->err->set) klp_fail(c->err, n->line, n->col, "MemoryError", "out of memory");
    return r;
}
