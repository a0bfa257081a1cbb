/* kl_builtins.c - the builtin functions: print, input, help, len, int, float, str,
 * bool, abs, round (half to even, as Python), min, max, sum, range, list. One small
 * function each, found through a static table that also feeds completion and
 * inspect. Only print takes keyword arguments (sep=, end=). */
#include <ctype.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kl_internal.h"

typedef struct klpb_call {
    klp_ctx *c;
    const klp_node *n;
    const char *name;
    json_t **args; /* borrowed */
    size_t na;
    const char **kwn;
    json_t **kw; /* borrowed */
    size_t nk;
} klpb_call;

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

int klpb_count(klp_ctx *c, const klp_node *n, const char *name, size_t na, size_t lo, size_t hi)
{
    if (na >= lo && na <= hi) return 0;
    size_t want = na < lo ? lo : hi;
    return klp_fail(c->err, n->line, n->col, "TypeError",
                    "%s() takes %s %zu argument%s (%zu given)", name,
                    lo == hi  ? "exactly"
                    : na < lo ? "at least"
                              : "at most",
                    want, want == 1 ? "" : "s", na);
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
const char klp_help_pointer[] = "Kiln's help: %lsmagic lists the magics; NAME? shows the help of a "
                                "magic or a variable (%train?, lr?);\n%train --help lists a "
                                "magic's options; help(\"train\") does the same from code.\n";

static json_t *b_help(klpb_call *k)
{
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
    json_t *kv[2] = {NULL, NULL}; /* sep, end */
    for (size_t i = 0; i < k->nk; i++) {
        int end = !strcmp(k->kwn[i], "end");
        if (!end && strcmp(k->kwn[i], "sep"))
            return klpb_fail(k->c, k->n, "TypeError",
                             "print() got an unexpected keyword argument '%s' (it takes sep= "
                             "and end=)",
                             k->kwn[i]);
        if (!json_is_null(k->kw[i]) && !json_is_string(k->kw[i]))
            return klpb_fail(k->c, k->n, "TypeError", "%s must be None or a string, not %s",
                             k->kwn[i], klp_type_name(k->kw[i]));
        kv[end] = json_is_string(k->kw[i]) ? k->kw[i] : NULL;
    }
    kl_buf b = {0};
    for (size_t i = 0; i < k->na; i++) {
        if (i && kv[0]) kl_buf_add(&b, json_string_value(kv[0]), json_string_length(kv[0]));
        else if (i) kl_buf_add(&b, " ", 1);
        klp_str(&b, k->args[i]);
    }
    if (kv[1]) kl_buf_add(&b, json_string_value(kv[1]), json_string_length(kv[1]));
    else kl_buf_add(&b, "\n", 1);
    if (!b.oom && b.n && k->c->out && k->c->out->stream)
        k->c->out->stream(k->c->out->user, "stdout", b.s, b.n);
    kl_buf_free(&b);
    return json_null();
}

static json_t *b_input(klpb_call *k)
{
    kl_buf b = {0};
    if (k->na) klp_str(&b, k->args[0]);
    const mg_out *o = k->c->out;
    char *line = o && o->input ? o->input(o->user, b.s ? b.s : "", 0) : NULL;
    kl_buf_free(&b);
    json_t *r = line && klp_utf8_valid(line, strlen(line)) ? json_string(line) : NULL;
    free(line);
    if (r || line)
        return r ? r : klpb_fail(k->c, k->n, "UnicodeDecodeError", "input is not valid UTF-8");
    if (klp_interrupted(k->c->eng))
        return klpb_fail(k->c, k->n, "KeyboardInterrupt", "interrupted");
    return klpb_fail(k->c, k->n, "StdinNotImplementedError",
                     "input() was called, but this frontend does not support input requests.");
}

/* ---- conversions ---- */

static json_t *b_len(klpb_call *k)
{
    json_t *v = k->args[0];
    if (json_is_string(v))
        return json_integer((json_int_t)klp_utf8_len(json_string_value(v), json_string_length(v)));
    if (json_is_array(v)) return json_integer((json_int_t)json_array_size(v));
    if (json_is_object(v)) return json_integer((json_int_t)json_object_size(v));
    return klpb_fail(k->c, k->n, "TypeError", "object of type '%s' has no len()", klp_type_name(v));
}

static json_t *b_str(klpb_call *k)
{
    if (!k->na) return json_string("");
    kl_buf b = {0};
    klp_str(&b, k->args[0]);
    return klpb_str_new(&b);
}

static json_t *b_bool(klpb_call *k) { return json_boolean(k->na && klp_truthy(k->args[0])); }

/* int() or float() of a str: one number as a cell reads it, by the lexer (digits with
 * underscores, a sign, blanks around it; int: decimal digits only). */
static json_t *str_number(klpb_call *k, json_t *v, int want_int)
{
    static const char blanks[] = " \t\n\r\f\v";
    const char *s = json_string_value(v), *p = s + strspn(s, blanks);
    int neg = *p == '-';
    p += *p == '-' || *p == '+';
    klp_arena *a = klp_arena_create();
    klp_tok t = {0};
    size_t used = 0;
    klp_err err = {0};
    json_t *r = NULL;
    int ok = a && (isdigit((unsigned char)*p) || *p == '.') &&
             klp_lex_literal(a, p, &t, &used, &err) == 0 && !p[used + strspn(p + used, blanks)] &&
             strcspn(p, "xXoObB") >= used && (t.kind == KLP_T_INT || !want_int);
    double d = t.kind == KLP_T_INT ? (double)t.ival : t.fval;
    char *end;
    if (ok)
        r = want_int ? json_integer(neg ? -t.ival : t.ival) : klp_real(k->c, k->n, neg ? -d : d);
    else if (!strcmp(err.ename, "OverflowError"))
        klpb_fail(k->c, k->n, "OverflowError", "%s", err.evalue);
    else if (!want_int && !isfinite(d = strtod(s, &end)) && !end[strspn(end, blanks)])
        klp_real(k->c, k->n, d); /* 'nan', 'inf': an OverflowError that names them */
    else
        klp_fail_repr(k->c->err, k->n->line, k->n->col, "ValueError",
                      want_int ? "invalid literal for int() with base 10: "
                               : "could not convert string to float: ",
                      v);
    klp_arena_destroy(a);
    return r;
}

static json_t *b_int(klpb_call *k)
{
    if (!k->na) return json_integer(0);
    json_t *v = k->args[0];
    if (json_is_integer(v)) return json_incref(v);
    if (json_is_boolean(v)) return json_integer(json_is_true(v));
    if (json_is_string(v)) return str_number(k, v, 1);
    if (!json_is_real(v))
        return klpb_fail(k->c, k->n, "TypeError",
                         "int() argument must be a string or a number, not '%s'", klp_type_name(v));
    double d = trunc(json_real_value(v));
    if (d >= 9.2233720368547758e18 || d < -9.2233720368547758e18)
        return klpb_fail(k->c, k->n, "OverflowError", "int too large (Kiln integers are 64-bit)");
    return json_integer((json_int_t)d);
}

static json_t *b_float(klpb_call *k)
{
    if (!k->na) return json_real(0.0);
    json_t *v = k->args[0];
    if (json_is_real(v)) return json_incref(v);
    if (json_is_integer(v)) return json_real((double)json_integer_value(v));
    if (json_is_boolean(v)) return json_real(json_is_true(v));
    if (json_is_string(v)) return str_number(k, v, 0);
    return klpb_fail(k->c, k->n, "TypeError",
                     "float() argument must be a string or a real number, not '%s'",
                     klp_type_name(v));
}

/* ---- numbers and sequences ---- */

static json_t *items_of(klpb_call *k, json_t *v)
{
    json_t *r;
    return klp_iter_items(k->c, k->n, v, &r) < 0 ? NULL : r;
}

static json_t *klpb_abs(klpb_call *k)
{
    json_t *v = k->args[0];
    if (json_is_real(v)) return json_real(fabs(json_real_value(v)));
    if (json_is_boolean(v)) return json_integer(json_is_true(v));
    if (json_is_integer(v)) {
        long long i = (long long)json_integer_value(v);
        if (i == INT64_MIN) return klpb_fail(k->c, k->n, "OverflowError", "integer overflow");
        return json_integer(i < 0 ? -i : i);
    }
    return klpb_fail(k->c, k->n, "TypeError", "bad operand type for abs(): '%s'", klp_type_name(v));
}

static json_t *klpb_round(klpb_call *k)
{
    json_t *v = k->args[0], *nd = k->na > 1 && !json_is_null(k->args[1]) ? k->args[1] : NULL;
    if (nd && !json_is_integer(nd))
        return klpb_fail(k->c, k->n, "TypeError", "'%s' object cannot be interpreted as an integer",
                         klp_type_name(nd));
    long long digits = nd ? (long long)json_integer_value(nd) : 0;
    if (digits < 0)
        return klpb_fail(k->c, k->n, "ValueError",
                         "round() with negative ndigits is not supported (ndigits >= 0)");
    if (json_is_integer(v) || json_is_boolean(v))
        return json_integer(json_is_boolean(v) ? json_is_true(v) : json_integer_value(v));
    if (!json_is_real(v))
        return klpb_fail(k->c, k->n, "TypeError", "type %s doesn't define __round__ method",
                         klp_type_name(v));
    double d = json_real_value(v);
    if (!nd) {
        double r = rint(d); /* default rounding mode: half to even */
        if (r >= 9.2233720368547758e18 || r < -9.2233720368547758e18)
            return klpb_fail(k->c, k->n, "OverflowError",
                             "int too large (Kiln integers are 64-bit)");
        return json_integer((json_int_t)r);
    }
    if (digits > 320) return json_incref(v);
    char buf[700];
    snprintf(buf, sizeof buf, "%.*f", (int)digits, d); /* correctly rounded */
    return klp_real(k->c, k->n, strtod(buf, NULL));
}

/* max(list) or max(a, b, ...) (op ">"), min likewise (op "<") */
static json_t *minmax(klpb_call *k, const char *op)
{
    json_t *items = k->na == 1 ? items_of(k, k->args[0]) : json_array(), *best = NULL, *x;
    for (size_t i = 0; k->na > 1 && items && i < k->na; i++) json_array_append(items, k->args[i]);
    if (!items) return NULL;
    size_t i;
    json_array_foreach(items, i, x)
    {
        int r = best ? klp_compare(k->c, k->n, op, x, best) : 1;
        if (r < 0) {
            json_decref(items);
            return NULL;
        }
        if (r) best = x;
    }
    json_t *res = best ? json_incref(best) : NULL;
    json_decref(items);
    if (!res) klpb_fail(k->c, k->n, "ValueError", "%s() arg is an empty sequence", k->name);
    return res;
}

static json_t *klpb_max(klpb_call *k) { return minmax(k, ">"); }
static json_t *klpb_min(klpb_call *k) { return minmax(k, "<"); }

static json_t *klpb_sum(klpb_call *k)
{
    json_t *items = items_of(k, k->args[0]), *acc = items ? json_integer(0) : NULL, *x;
    size_t i;
    json_array_foreach(items, i, x)
    {
        json_t *next = klp_binop(k->c, k->n, "+", acc, x);
        json_decref(acc);
        if (!(acc = next)) break;
    }
    json_decref(items);
    return acc;
}

static int as_ll(klpb_call *k, json_t *v, long long *out)
{
    if (json_is_integer(v)) *out = (long long)json_integer_value(v);
    else if (json_is_boolean(v)) *out = json_is_true(v);
    else {
        klpb_fail(k->c, k->n, "TypeError", "'%s' object cannot be interpreted as an integer",
                  klp_type_name(v));
        return -1;
    }
    return 0;
}

static json_t *klpb_range(klpb_call *k)
{
    long long a[3] = {0, 0, 1};
    for (size_t i = 0; i < k->na; i++)
        if (as_ll(k, k->args[i], &a[k->na == 1 ? 1 : i]) < 0) return NULL;
    long long start = a[0], stop = a[1], step = a[2];
    if (step == 0) return klpb_fail(k->c, k->n, "ValueError", "range() arg 3 must not be zero");
    double cnt = step > 0 ? ceil(((double)stop - (double)start) / (double)step)
                          : ceil(((double)start - (double)stop) / (double)-step);
    if (cnt > KLP_MAX_ITEMS)
        return klpb_fail(
            k->c, k->n, "MemoryError",
            "range() of %.0f items is too large (Kiln builds ranges as lists; the limit is %u)",
            cnt, KLP_MAX_ITEMS);
    /* a slot and an int each */
    if (cnt > 0 && klp_budget_ask(k->c, k->n, (size_t)cnt * (KLP_SZ_SLOT + KLP_SZ_SCALAR)) < 0)
        return NULL;
    json_t *r = json_array();
    for (long long i = start; r && (step > 0 ? i < stop : i > stop); i += step) {
        if (json_array_append_new(r, json_integer(i)) < 0) {
            json_decref(r);
            return NULL;
        }
        if (__builtin_add_overflow(i, step, &(long long){0})) break;
    }
    return r;
}

static json_t *klpb_list(klpb_call *k) { return k->na ? items_of(k, k->args[0]) : json_array(); }

/* ---- the table ---- */

static const struct {
    const char *name;
    json_t *(*fn)(klpb_call *k); /* new ref, or NULL with k->c->err */
    size_t lo, hi;               /* how many positional arguments */
    const char *doc;
} table[] = {
    {"abs", klpb_abs, 1, 1, "abs(x): the absolute value of a number."},
    {"bool", b_bool, 0, 1, "bool(x): the truth value of x."},
    {"float", b_float, 0, 1, "float(x): a float from a number or a string."},
    {"input", b_input, 0, 1, "input(prompt=''): a line typed by the user (stdin request)."},
    {"int", b_int, 0, 1, "int(x): an int from a number or a decimal string."},
    {"len", b_len, 1, 1, "len(x): the number of items of a str, list or dict."},
    {"list", klpb_list, 0, 1, "list(x): a new list of the items of a list, str or dict."},
    {"max", klpb_max, 1, 1u << 20, "max(list) or max(a, b, ...): the largest item."},
    {"min", klpb_min, 1, 1u << 20, "min(list) or min(a, b, ...): the smallest item."},
    {"help", b_help, 0, 1, "help() says where the help is; help(\"train\"): a magic's help."},
    {"print", b_print, 0, 1u << 20,
     "print(*values, sep=' ', end='\\n'): writes the values to stdout."},
    {"range", klpb_range, 1, 3, "range(stop) / range(start, stop[, step]): a list of ints."},
    {"round", klpb_round, 1, 2, "round(x, ndigits=None): x rounded half to even (ndigits >= 0)."},
    {"str", b_str, 0, 1, "str(x): x as a string."},
    {"sum", klpb_sum, 1, 1, "sum(list): the sum of the items."},
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
                 "format() is not supported: Kiln has no format specs (use round(x, 3), str(x) or "
                 "an f-string such as f'{x}')");
        return NULL;
    }
    if (i == NTABLE) {
        kl_buf b = {0};
        for (size_t j = 0; j < NTABLE; j++) kl_buf_printf(&b, "%s%s", j ? ", " : "", table[j].name);
        klp_fail(c->err, n->line, n->col, "NameError",
                 "name '%s' is not defined (Kiln cells hold parameters; their functions are %s)",
                 name, b.s ? b.s : "");
        kl_buf_free(&b);
        return NULL;
    }
    klpb_call k = {c, n, name, args, nargs, kwnames, kwvals, nkw};
    if (nkw && table[i].fn != b_print) {
        klp_fail(c->err, n->line, n->col, "TypeError", "%s() takes no keyword arguments", name);
        return NULL;
    }
    if (klpb_count(c, n, name, nargs, table[i].lo, table[i].hi) < 0) return NULL;
    json_t *r = table[i].fn(&k);
    if (!r && !c->err->set) klp_fail(c->err, n->line, n->col, "MemoryError", "out of memory");
    return r;
}
