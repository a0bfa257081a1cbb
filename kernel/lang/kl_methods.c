/* kl_methods.c - the methods of str, list and dict that parameter and form cells
 * use: str.upper/lower/strip/lstrip/rstrip/split/join/replace/startswith/endswith/
 * find/count/format, list.append/extend/pop/insert/index/count, dict.get/keys/
 * values/items/pop/update. Mutating methods change the value in place (shared, as
 * in Python) and refuse to make a value contain itself. */
#include <stdlib.h>
#include <string.h>

#include "kl_builtins.h"

json_t *klp_str_format(klp_ctx *c, const klp_node *n, json_t *self, json_t **args, size_t na);

static json_t *arity(klp_ctx *c, const klp_node *n, const char *name, size_t lo, size_t hi,
                     size_t na)
{
    if (na >= lo && na <= hi) return json_true();
    klp_fail(c->err, n->line, n->col, "TypeError", "%s() takes %zu to %zu arguments (%zu "
             "given)", name, lo, hi, na);
    return NULL;
}

static int want_str(klp_ctx *c, const klp_node *n, const char *name, json_t *v)
{
    if (json_is_string(v)) return 0;
    return klp_fail(c->err, n->line, n->col, "TypeError", "%s() argument must be str, not %s",
                    name, klp_type_name(v));
}

static json_t *strip(json_t *s, const char *which, json_t *chars)
{
    const char *p = json_string_value(s), *set = chars && json_is_string(chars)
                                                     ? json_string_value(chars) : " \t\n\r\f\v";
    size_t a = 0, b = json_string_length(s);
    if (strchr(which, 'l')) while (a < b && strchr(set, p[a]) && p[a]) a++;
    if (strchr(which, 'r')) while (b > a && strchr(set, p[b - 1]) && p[b - 1]) b--;
    return json_stringn(p + a, b - a);
}

static json_t *split(klp_ctx *c, const klp_node *n, json_t *s, json_t *sepv)
{
    const char *p = json_string_value(s), *end = p + json_string_length(s);
    json_t *r = json_array();
    if (!sepv || json_is_null(sepv)) {
        while (p < end) {
            while (p < end && strchr(" \t\n\r\f\v", *p) && *p) p++;
            const char *st = p;
            while (p < end && !(strchr(" \t\n\r\f\v", *p) && *p)) p++;
            if (p > st) json_array_append_new(r, json_stringn(st, (size_t)(p - st)));
        }
        return r;
    }
    if (want_str(c, n, "split", sepv) < 0 || json_string_length(sepv) == 0) {
        if (!c->err->set) klp_fail(c->err, n->line, n->col, "ValueError", "empty separator");
        json_decref(r);
        return NULL;
    }
    const char *sep = json_string_value(sepv);
    size_t sl = json_string_length(sepv);
    for (;;) {
        const char *hit = memmem(p, (size_t)(end - p), sep, sl);
        if (!hit) break;
        json_array_append_new(r, json_stringn(p, (size_t)(hit - p)));
        p = hit + sl;
    }
    json_array_append_new(r, json_stringn(p, (size_t)(end - p)));
    return r;
}

static json_t *str_method(klp_ctx *c, const klp_node *n, json_t *self, const char *m,
                          json_t **a, size_t na)
{
    const char *s = json_string_value(self);
    size_t len = json_string_length(self);
    if (!strcmp(m, "upper") || !strcmp(m, "lower")) {
        if (!arity(c, n, m, 0, 0, na)) return NULL;
        char *t = malloc(len + 1);
        if (!t) return NULL;
        for (size_t i = 0; i < len; i++)
            t[i] = (char)(m[0] == 'u' ? (s[i] >= 'a' && s[i] <= 'z' ? s[i] - 32 : s[i])
                                      : (s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]));
        json_t *r = json_stringn(t, len);
        free(t);
        return r;
    }
    if (!strcmp(m, "strip") || !strcmp(m, "lstrip") || !strcmp(m, "rstrip")) {
        if (!arity(c, n, m, 0, 1, na)) return NULL;
        return strip(self, m[0] == 's' ? "lr" : m[0] == 'l' ? "l" : "r", na ? a[0] : NULL);
    }
    if (!strcmp(m, "split")) {
        if (!arity(c, n, m, 0, 1, na)) return NULL;
        return split(c, n, self, na ? a[0] : NULL);
    }
    if (!strcmp(m, "join")) {
        json_t *items;
        if (!arity(c, n, m, 1, 1, na) || klp_iter_items(c, n, a[0], &items) < 0) return NULL;
        klp_buf b = {0};
        size_t i;
        json_t *x;
        json_array_foreach(items, i, x) {
            if (!json_is_string(x)) {
                klp_buf_free(&b);
                json_decref(items);
                klp_fail(c->err, n->line, n->col, "TypeError", "sequence item %zu: expected str "
                         "instance, %s found", i, klp_type_name(x));
                return NULL;
            }
            if (i) klp_buf_add(&b, s, len);
            klp_buf_add(&b, json_string_value(x), json_string_length(x));
            if (b.n > KLP_MAX_STR) break;
        }
        json_decref(items);
        return klpb_str_new(&b);
    }
    if (!strcmp(m, "replace")) {
        if (!arity(c, n, m, 2, 2, na) || want_str(c, n, m, a[0]) < 0 || want_str(c, n, m, a[1]) < 0)
            return NULL;
        size_t ol = json_string_length(a[0]);
        klp_buf b = {0};
        const char *p = s, *end = s + len;
        while (p <= end && b.n <= KLP_MAX_STR) {
            const char *hit = ol ? memmem(p, (size_t)(end - p), json_string_value(a[0]), ol) : NULL;
            if (!hit) break;
            klp_buf_add(&b, p, (size_t)(hit - p));
            klp_buf_add(&b, json_string_value(a[1]), json_string_length(a[1]));
            p = hit + ol;
        }
        klp_buf_add(&b, p, (size_t)(end - p));
        return klpb_str_new(&b);
    }
    if (!strcmp(m, "startswith") || !strcmp(m, "endswith")) {
        if (!arity(c, n, m, 1, 1, na) || want_str(c, n, m, a[0]) < 0) return NULL;
        size_t pl = json_string_length(a[0]);
        if (pl > len) return json_false();
        return json_boolean(!memcmp(m[0] == 's' ? s : s + len - pl, json_string_value(a[0]), pl));
    }
    if (!strcmp(m, "find") || !strcmp(m, "count")) {
        if (!arity(c, n, m, 1, 1, na) || want_str(c, n, m, a[0]) < 0) return NULL;
        const char *needle = json_string_value(a[0]);
        size_t nl = json_string_length(a[0]);
        if (m[0] == 'f') {
            const char *hit = memmem(s, len, needle, nl);
            return json_integer(hit ? (json_int_t)klp_utf8_len(s, (size_t)(hit - s)) : -1);
        }
        if (!nl) return json_integer((json_int_t)klp_utf8_len(s, len) + 1);
        long long cnt = 0;
        for (const char *p = s; (p = memmem(p, len - (size_t)(p - s), needle, nl)); p += nl) cnt++;
        return json_integer(cnt);
    }
    if (!strcmp(m, "format")) return klp_str_format(c, n, self, a, na);
    klp_fail(c->err, n->line, n->col, "AttributeError", "'str' object has no attribute '%s'", m);
    return NULL;
}

static json_t *list_method(klp_ctx *c, const klp_node *n, json_t *self, const char *m,
                           json_t **a, size_t na)
{
    if (!strcmp(m, "append") || !strcmp(m, "extend") || !strcmp(m, "insert")) {
        int ins = m[0] == 'i';
        if (!arity(c, n, m, ins ? 2 : 1, ins ? 2 : 1, na)) return NULL;
        json_t *v = a[ins];
        json_t *items = NULL;
        if (m[0] == 'e' && klp_iter_items(c, n, v, &items) < 0) return NULL;
        json_t *probe = items ? items : v;
        if (klp_reaches(probe, self)) {
            json_decref(items);
            klp_fail(c->err, n->line, n->col, "ValueError", "a list cannot contain itself in "
                     "Kiln (its values are JSON)");
            return NULL;
        }
        if (json_array_size(self) + (items ? json_array_size(items) : 1) > KLP_MAX_ITEMS) {
            json_decref(items);
            klp_fail(c->err, n->line, n->col, "MemoryError", "list would be too large");
            return NULL;
        }
        if (m[0] == 'a') json_array_append(self, v);
        else if (m[0] == 'e') json_array_extend(self, items);
        else {
            long long i = json_is_integer(a[0]) ? (long long)json_integer_value(a[0]) : 0;
            long long sz = (long long)json_array_size(self);
            if (i < 0) i += sz;
            if (i < 0) i = 0;
            if (i > sz) i = sz;
            json_array_insert(self, (size_t)i, v);
        }
        json_decref(items);
        if (klp_check_depth(c, n, self) < 0) return NULL;
        return json_null();
    }
    if (!strcmp(m, "pop")) {
        if (!arity(c, n, m, 0, 1, na)) return NULL;
        long long sz = (long long)json_array_size(self);
        long long i = na && json_is_integer(a[0]) ? (long long)json_integer_value(a[0]) : -1;
        if (i < 0) i += sz;
        if (i < 0 || i >= sz) {
            klp_fail(c->err, n->line, n->col, "IndexError", sz ? "pop index out of range"
                                                             : "pop from empty list");
            return NULL;
        }
        json_t *v = json_incref(json_array_get(self, (size_t)i));
        json_array_remove(self, (size_t)i);
        return v;
    }
    if (!strcmp(m, "index") || !strcmp(m, "count")) {
        if (!arity(c, n, m, 1, 1, na)) return NULL;
        long long cnt = 0;
        size_t i;
        json_t *x;
        json_array_foreach(self, i, x) if (klp_equal(x, a[0])) {
            if (m[0] == 'i') return json_integer((json_int_t)i);
            cnt++;
        }
        if (m[0] == 'c') return json_integer(cnt);
        klp_buf b = {0};
        klp_repr(&b, a[0]);
        klp_fail(c->err, n->line, n->col, "ValueError", "%.900s is not in list", b.s ? b.s : "");
        klp_buf_free(&b);
        return NULL;
    }
    klp_fail(c->err, n->line, n->col, "AttributeError", "'list' object has no attribute '%s'", m);
    return NULL;
}

static json_t *dict_method(klp_ctx *c, const klp_node *n, json_t *self, const char *m,
                           json_t **a, size_t na)
{
    const char *k;
    json_t *x;
    if (!strcmp(m, "keys") || !strcmp(m, "values") || !strcmp(m, "items")) {
        if (!arity(c, n, m, 0, 0, na)) return NULL;
        json_t *r = json_array();
        json_object_foreach(self, k, x) {
            if (m[0] == 'k') json_array_append_new(r, json_string(k));
            else if (m[0] == 'v') json_array_append(r, x);
            else {
                json_t *p = json_array();
                json_array_append_new(p, json_string(k));
                json_array_append(p, x);
                json_array_append_new(r, p);
            }
        }
        return r;
    }
    if (!strcmp(m, "get") || !strcmp(m, "pop")) {
        if (!arity(c, n, m, 1, 2, na)) return NULL;
        json_t *v = json_is_string(a[0]) ? json_object_getn(self, json_string_value(a[0]),
                                                            json_string_length(a[0])) : NULL;
        if (v) {
            v = json_incref(v);
            if (m[0] == 'p') json_object_deln(self, json_string_value(a[0]), json_string_length(a[0]));
            return v;
        }
        if (na > 1) return json_incref(a[1]);
        if (m[0] == 'g') return json_null();
        klp_buf b = {0};
        klp_repr(&b, a[0]);
        klp_fail(c->err, n->line, n->col, "KeyError", "%.900s", b.s ? b.s : "");
        klp_buf_free(&b);
        return NULL;
    }
    if (!strcmp(m, "update")) {
        if (!arity(c, n, m, 1, 1, na)) return NULL;
        if (!json_is_object(a[0])) {
            klp_fail(c->err, n->line, n->col, "TypeError", "update() needs a dict, not %s",
                     klp_type_name(a[0]));
            return NULL;
        }
        json_object_foreach(a[0], k, x) if (klp_reaches(x, self)) {
            klp_fail(c->err, n->line, n->col, "ValueError", "a dict cannot contain itself");
            return NULL;
        }
        json_object_update(self, a[0]);
        return json_null();
    }
    klp_fail(c->err, n->line, n->col, "AttributeError", "'dict' object has no attribute '%s'", m);
    return NULL;
}

json_t *klp_call_method(klp_ctx *c, const klp_node *n, json_t *self, const char *name,
                        json_t **args, size_t nargs)
{
    if (json_is_string(self)) return str_method(c, n, self, name, args, nargs);
    if (json_is_array(self)) return list_method(c, n, self, name, args, nargs);
    if (json_is_object(self)) return dict_method(c, n, self, name, args, nargs);
    klp_fail(c->err, n->line, n->col, "AttributeError", "'%s' object has no attribute '%s'",
             klp_type_name(self), name);
    return NULL;
}
