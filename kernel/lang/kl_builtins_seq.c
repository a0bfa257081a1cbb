/* kl_builtins_seq.c - numeric and sequence builtins: abs, round (half to even, as
 * Python), min, max, sum, range, list. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kl_builtins.h"

static json_t *items_of(klpb_call *k, json_t *v)
{
    json_t *r;
    return klp_iter_items(k->c, k->n, v, &r) < 0 ? NULL : r;
}

json_t *klpb_abs(klpb_call *k)
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

json_t *klpb_round(klpb_call *k)
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

json_t *klpb_max(klpb_call *k) { return minmax(k, ">"); }
json_t *klpb_min(klpb_call *k) { return minmax(k, "<"); }

json_t *klpb_sum(klpb_call *k)
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

json_t *klpb_range(klpb_call *k)
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

json_t *klpb_list(klpb_call *k) { return k->na ? items_of(k, k->args[0]) : json_array(); }
