/* kl_compare.c - truth values, equality (1 == 1.0 == True, deep for lists and
 * dicts), ordering (numbers, str by code point), `in`, `is`. Ordering between
 * unrelated types is a TypeError, as in Python 3. */
#include <string.h>

#include "kl_internal.h"

static int is_num(json_t *v) { return json_is_number(v) || json_is_boolean(v); }
static double num(json_t *v)
{
    if (json_is_boolean(v)) return json_is_true(v);
    if (json_is_integer(v)) return (double)json_integer_value(v);
    return json_real_value(v);
}

int klp_truthy(json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_TRUE: return 1;
    case JSON_FALSE:
    case JSON_NULL: return 0;
    case JSON_INTEGER: return json_integer_value(v) != 0;
    case JSON_REAL: return json_real_value(v) != 0;
    case JSON_STRING: return json_string_length(v) != 0;
    case JSON_ARRAY: return json_array_size(v) != 0;
    case JSON_OBJECT: return json_object_size(v) != 0;
    }
    return 0;
}

static int num_cmp(json_t *a, json_t *b)
{
    if (!json_is_real(a) && !json_is_real(b)) {
        long long x = json_is_boolean(a) ? json_is_true(a) : (long long)json_integer_value(a);
        long long y = json_is_boolean(b) ? json_is_true(b) : (long long)json_integer_value(b);
        return (x > y) - (x < y);
    }
    double x = num(a), y = num(b);
    return (x > y) - (x < y);
}

static int str_cmp(json_t *a, json_t *b)
{
    size_t la = json_string_length(a), lb = json_string_length(b);
    int r = memcmp(json_string_value(a), json_string_value(b), la < lb ? la : lb);
    if (r) return r < 0 ? -1 : 1;
    return (la > lb) - (la < lb);
}

static int equal_depth(json_t *a, json_t *b, int depth)
{
    if (a == b) return 1;
    if (depth > KLP_MAX_DEPTH) return 0;
    if (is_num(a) && is_num(b)) return num_cmp(a, b) == 0;
    if (json_typeof(a) != json_typeof(b)) return 0;
    switch (json_typeof(a)) {
    case JSON_STRING: return str_cmp(a, b) == 0;
    case JSON_NULL: return 1;
    case JSON_ARRAY: {
        size_t n = json_array_size(a);
        if (n != json_array_size(b)) return 0;
        for (size_t i = 0; i < n; i++)
            if (!equal_depth(json_array_get(a, i), json_array_get(b, i), depth + 1)) return 0;
        return 1;
    }
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b)) return 0;
        const char *k;
        json_t *x;
        json_object_foreach(a, k, x)
        {
            json_t *y = json_object_get(b, k);
            if (!y || !equal_depth(x, y, depth + 1)) return 0;
        }
        return 1;
    }
    default: return 0;
    }
}

static int klp_equal(json_t *a, json_t *b) { return equal_depth(a, b, 0); }

/* -2 = not orderable (only numbers with numbers and str with str are) */
static int order(json_t *a, json_t *b)
{
    if (is_num(a) && is_num(b)) return num_cmp(a, b);
    if (json_is_string(a) && json_is_string(b)) return str_cmp(a, b);
    return -2;
}

static int contains(klp_ctx *c, const klp_node *n, json_t *item, json_t *seq)
{
    if (json_is_string(seq)) {
        if (!json_is_string(item))
            return klp_fail(c->err, n->line, n->col, "TypeError",
                            "'in <string>' requires string as left operand, not %s",
                            klp_type_name(item));
        return memmem(json_string_value(seq), json_string_length(seq), json_string_value(item),
                      json_string_length(item)) != NULL ||
               json_string_length(item) == 0;
    }
    if (json_is_array(seq)) {
        size_t i;
        json_t *x;
        json_array_foreach(seq, i, x) if (klp_equal(x, item)) return 1;
        return 0;
    }
    if (json_is_object(seq)) {
        if (!json_is_string(item)) return 0;
        return json_object_getn(seq, json_string_value(item), json_string_length(item)) != NULL;
    }
    return klp_fail(c->err, n->line, n->col, "TypeError", "argument of type '%s' is not iterable",
                    klp_type_name(seq));
}

/* Returns 1/0, or -1 with err. */
int klp_compare(klp_ctx *c, const klp_node *n, const char *op, json_t *a, json_t *b)
{
    if (!strcmp(op, "==")) return klp_equal(a, b);
    if (!strcmp(op, "!=")) return !klp_equal(a, b);
    if (!strcmp(op, "in")) return contains(c, n, a, b);
    if (!strcmp(op, "not in")) {
        int r = contains(c, n, a, b);
        return r < 0 ? r : !r;
    }
    if (!strcmp(op, "is") || !strcmp(op, "is not")) {
        int same = a == b || (json_is_null(a) && json_is_null(b)) ||
                   (json_is_true(a) && json_is_true(b)) || (json_is_false(a) && json_is_false(b));
        return op[2] ? !same : same;
    }
    int r = order(a, b);
    if (r == -2)
        return klp_fail(c->err, n->line, n->col, "TypeError",
                        "'%s' not supported between instances of '%s' and '%s'", op,
                        klp_type_name(a), klp_type_name(b));
    if (!strcmp(op, "<")) return r < 0;
    if (!strcmp(op, "<=")) return r <= 0;
    if (!strcmp(op, ">")) return r > 0;
    return r >= 0;
}
