/* kl_methods.c - the methods of str, list and dict that parameter and form cells
 * use, in one table that also feeds completion: str lower/upper/strip/split/join/
 * replace/startswith/endswith, list append, dict get/keys/values/items. append
 * changes the list in place (shared, as in Python) and refuses to make a value
 * contain itself. */
#include <stdlib.h>
#include <string.h>

#include "kl_internal.h"

#define SPACES " \t\n\r\f\v"

typedef struct klpm_call {
    klp_ctx *c;
    const klp_node *n;
    const char *name;
    json_t *self;
    json_t **a; /* borrowed; the count is checked against the table */
    size_t na;
} klpm_call;

/* ---- str ---- */

static json_t *change_case(klpm_call *k, int upper)
{
    const char *s = json_string_value(k->self);
    size_t len = json_string_length(k->self);
    char *t = malloc(len + 1);
    if (!t) return NULL;
    for (size_t i = 0; i < len; i++)
        t[i] = (char)(upper ? (s[i] >= 'a' && s[i] <= 'z' ? s[i] - 32 : s[i])
                            : (s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]));
    json_t *r = json_stringn(t, len);
    free(t);
    return r;
}

static json_t *m_strip(klpm_call *k, int of)
{
    const char *p = json_string_value(k->self);
    size_t a = 0, b = json_string_length(k->self);
    while (a < b && p[a] && strchr(SPACES, p[a])) a++;
    while (b > a && p[b - 1] && strchr(SPACES, p[b - 1])) b--;
    return json_stringn(p + a, b - a);
}

static json_t *m_split(klpm_call *k, int of)
{
    const char *p = json_string_value(k->self), *end = p + json_string_length(k->self);
    json_t *sepv = k->na ? k->a[0] : NULL;
    if (sepv && !json_string_length(sepv))
        return klpb_fail(k->c, k->n, "ValueError", "empty separator");
    json_t *r = json_array();
    if (!sepv) {
        while (p < end) {
            while (p < end && *p && strchr(SPACES, *p)) p++;
            const char *st = p;
            while (p < end && !(*p && strchr(SPACES, *p))) p++;
            if (p > st) json_array_append_new(r, json_stringn(st, (size_t)(p - st)));
        }
        return r;
    }
    const char *sep = json_string_value(sepv);
    size_t sl = json_string_length(sepv);
    for (const char *hit; (hit = memmem(p, (size_t)(end - p), sep, sl)); p = hit + sl)
        json_array_append_new(r, json_stringn(p, (size_t)(hit - p)));
    json_array_append_new(r, json_stringn(p, (size_t)(end - p)));
    return r;
}

static json_t *m_join(klpm_call *k, int of)
{
    json_t *items, *x;
    if (klp_iter_items(k->c, k->n, k->a[0], &items) < 0) return NULL;
    kl_buf b = {0};
    size_t i;
    json_array_foreach(items, i, x)
    {
        if (!json_is_string(x)) {
            kl_buf_free(&b);
            json_decref(items);
            return klpb_fail(k->c, k->n, "TypeError",
                             "sequence item %zu: expected str instance, %s found", i,
                             klp_type_name(x));
        }
        if (i) kl_buf_add(&b, json_string_value(k->self), json_string_length(k->self));
        kl_buf_add(&b, json_string_value(x), json_string_length(x));
        if (b.n > KLP_MAX_STR) break;
    }
    json_decref(items);
    return klpb_str_new(&b);
}

static json_t *m_replace(klpm_call *k, int of)
{
    const char *p = json_string_value(k->self), *end = p + json_string_length(k->self);
    size_t ol = json_string_length(k->a[0]);
    kl_buf b = {0};
    while (ol && b.n <= KLP_MAX_STR) {
        const char *hit = memmem(p, (size_t)(end - p), json_string_value(k->a[0]), ol);
        if (!hit) break;
        kl_buf_add(&b, p, (size_t)(hit - p));
        kl_buf_add(&b, json_string_value(k->a[1]), json_string_length(k->a[1]));
        p = hit + ol;
    }
    kl_buf_add(&b, p, (size_t)(end - p));
    return klpb_str_new(&b);
}

static json_t *affix(klpm_call *k, int at_end)
{
    size_t len = json_string_length(k->self), pl = json_string_length(k->a[0]);
    const char *s = json_string_value(k->self);
    return json_boolean(pl <= len &&
                        !memcmp(at_end ? s + len - pl : s, json_string_value(k->a[0]), pl));
}

/* ---- list ---- */

static json_t *m_append(klpm_call *k, int of)
{
    if (klp_reaches(k->a[0], k->self))
        return klpb_fail(k->c, k->n, "ValueError",
                         "a list cannot contain itself in Kiln (its values are JSON)");
    if (json_array_size(k->self) + 1 > KLP_MAX_ITEMS)
        return klpb_fail(k->c, k->n, "MemoryError", "list would be too large");
    /* the item was charged when made; the list grows by its slot */
    if (klp_budget_charge(k->c, k->n, KLP_SZ_SLOT) < 0 || json_array_append(k->self, k->a[0]) < 0)
        return NULL;
    return klp_check_depth(k->c, k->n, k->self) < 0 ? NULL : json_null();
}

/* ---- dict ---- */

static json_t *m_get(klpm_call *k, int of)
{
    json_t *key = k->a[0],
           *v = json_is_string(key)
                    ? json_object_getn(k->self, json_string_value(key), json_string_length(key))
                    : NULL;
    return json_incref(v ? v : k->na > 1 ? k->a[1] : json_null());
}

/* keys(), values(), items(): lists (Kiln has no views). */
static json_t *dict_list(klpm_call *k, int what)
{
    json_t *r = json_array(), *x;
    const char *key;
    json_object_foreach(k->self, key, x)
    {
        json_t *item = what == 'k'   ? json_string(key)
                       : what == 'v' ? json_incref(x)
                                     : json_pack("[sO]", key, x);
        if (!r || json_array_append_new(r, item) < 0) {
            json_decref(r);
            return NULL;
        }
    }
    return r;
}

/* ---- the table ---- */

static const struct {
    json_type type;
    const char *name;
    size_t lo, hi;                       /* number of arguments */
    unsigned strs;                       /* bit i: argument i must be a str */
    json_t *(*fn)(klpm_call *k, int of); /* new ref, or NULL with k->c->err (or out of memory) */
    int of;                              /* what fn is asked for (upper or lower, ...) */
} methods[] = {
    {JSON_STRING, "endswith", 1, 1, 1, affix, 1},
    {JSON_STRING, "join", 1, 1, 0, m_join, 0},
    {JSON_STRING, "lower", 0, 0, 0, change_case, 0},
    {JSON_STRING, "replace", 2, 2, 3, m_replace, 0},
    {JSON_STRING, "split", 0, 1, 1, m_split, 0},
    {JSON_STRING, "startswith", 1, 1, 1, affix, 0},
    {JSON_STRING, "strip", 0, 0, 0, m_strip, 0},
    {JSON_STRING, "upper", 0, 0, 0, change_case, 1},
    {JSON_ARRAY, "append", 1, 1, 0, m_append, 0},
    {JSON_OBJECT, "get", 1, 2, 0, m_get, 0},
    {JSON_OBJECT, "items", 0, 0, 0, dict_list, 'i'},
    {JSON_OBJECT, "keys", 0, 0, 0, dict_list, 'k'},
    {JSON_OBJECT, "values", 0, 0, 0, dict_list, 'v'},
};
#define NMETHODS (sizeof methods / sizeof methods[0])

const char *klp_method_name(json_t *self, size_t *i)
{
    for (; self && *i < NMETHODS; ++*i)
        if (methods[*i].type == json_typeof(self)) return methods[(*i)++].name;
    return NULL;
}

static json_t *no_such_method(klpm_call *k)
{
    const char *type = klp_type_name(k->self);
    if (json_is_string(k->self) && !strcmp(k->name, "format"))
        return klpb_fail(k->c, k->n, "AttributeError",
                         "str.format() is not supported: Kiln has no format specs (use an f-string "
                         "such as f'{x}', or round(x, 3))");
    kl_buf b = {0};
    size_t i = 0;
    for (const char *m; (m = klp_method_name(k->self, &i));)
        kl_buf_printf(&b, "%s%s", b.n ? ", " : "", m);
    if (b.n)
        klpb_fail(k->c, k->n, "AttributeError",
                  "'%s' object has no attribute '%s' (Kiln's %s methods: %s)", type, k->name, type,
                  b.s);
    else
        klpb_fail(k->c, k->n, "AttributeError", "'%s' object has no attribute '%s'", type, k->name);
    kl_buf_free(&b);
    return NULL;
}

json_t *klp_call_method(klp_ctx *c, const klp_node *n, json_t *self, const char *name,
                        json_t **args, size_t nargs)
{
    klpm_call k = {c, n, name, self, args, nargs};
    for (size_t i = 0; i < NMETHODS; i++) {
        if (methods[i].type != json_typeof(self) || strcmp(methods[i].name, name)) continue;
        if (klpb_count(c, n, name, nargs, methods[i].lo, methods[i].hi) < 0) return NULL;
        for (size_t j = 0; j < nargs; j++)
            if ((methods[i].strs >> j & 1) && !json_is_string(args[j]))
                return klpb_fail(c, n, "TypeError", "%s() argument must be str, not %s", name,
                                 klp_type_name(args[j]));
        return methods[i].fn(&k, methods[i].of);
    }
    return no_such_method(&k);
}
