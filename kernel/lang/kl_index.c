/* kl_index.c - subscripts of lists, str (by code point, as Python) and dicts, slices
 * [lo:hi] of lists and str; iteration (for builtins and methods); and the value-nesting
 * check that keeps lists of lists (and self-containing values) bounded. */
#include <stdlib.h>
#include <string.h>

#include "kl_internal.h"

static int as_index(klp_ctx *c, const klp_node *n, json_t *idx, const char *what, long long *out)
{
    if (json_is_integer(idx)) *out = (long long)json_integer_value(idx);
    else if (json_is_boolean(idx)) *out = json_is_true(idx);
    else
        return klp_fail(c->err, n->line, n->col, "TypeError",
                        "%s indices must be integers or slices, not %s", what, klp_type_name(idx));
    return 0;
}

/* Byte offsets of every code point of s, plus one at the end; caller frees. */
static size_t *cp_offsets(const char *s, size_t n, size_t *count)
{
    size_t k = klp_utf8_len(s, n);
    size_t *o = malloc((k + 1) * sizeof *o);
    if (!o) return NULL;
    size_t j = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xc0) != 0x80) o[j++] = i;
    o[j] = n;
    *count = k;
    return o;
}

json_t *klp_index(klp_ctx *c, const klp_node *n, json_t *obj, json_t *idx)
{
    long long i = 0;
    if (json_is_array(obj)) {
        if (as_index(c, n, idx, "list", &i) < 0) return NULL;
        long long len = (long long)json_array_size(obj);
        if (i < 0) i += len;
        if (i < 0 || i >= len) {
            klp_fail(c->err, n->line, n->col, "IndexError", "list index out of range");
            return NULL;
        }
        return json_incref(json_array_get(obj, (size_t)i));
    }
    if (json_is_string(obj)) {
        if (as_index(c, n, idx, "string", &i) < 0) return NULL;
        size_t cnt;
        size_t *o = cp_offsets(json_string_value(obj), json_string_length(obj), &cnt);
        if (!o) return NULL;
        long long len = (long long)cnt;
        if (i < 0) i += len;
        json_t *r = NULL;
        if (i < 0 || i >= len)
            klp_fail(c->err, n->line, n->col, "IndexError", "string index out of range");
        else r = json_stringn(json_string_value(obj) + o[i], o[i + 1] - o[i]);
        free(o);
        return r;
    }
    if (json_is_object(obj)) {
        json_t *v = json_is_string(idx)
                        ? json_object_getn(obj, json_string_value(idx), json_string_length(idx))
                        : NULL;
        if (!v) {
            klp_fail_repr(c->err, n->line, n->col, "KeyError", "", idx);
            return NULL;
        }
        return json_incref(v);
    }
    klp_fail(c->err, n->line, n->col, "TypeError", "'%s' object is not subscriptable",
             klp_type_name(obj));
    return NULL;
}

/* A slice bound: None or left out is def, a negative one counts from the end; the
 * result is clamped to [0, len]. */
static int bound(klp_ctx *c, const klp_node *n, json_t *v, long long len, long long def,
                 long long *out)
{
    if (v && !json_is_null(v) && as_index(c, n, v, "slice", out) < 0) return -1;
    if (!v || json_is_null(v)) *out = def;
    else if (*out < 0) *out = *out + len < 0 ? 0 : *out + len;
    else if (*out > len) *out = len;
    return 0;
}

json_t *klp_slice(klp_ctx *c, const klp_node *n, json_t *obj, json_t *lo, json_t *hi)
{
    int str = json_is_string(obj);
    if (!str && !json_is_array(obj)) {
        klp_fail(c->err, n->line, n->col, "TypeError", "'%s' object is not subscriptable%s",
                 klp_type_name(obj), json_is_object(obj) ? " with a slice" : "");
        return NULL;
    }
    const char *s = str ? json_string_value(obj) : NULL;
    size_t ncp = 0, *o = str ? cp_offsets(s, json_string_length(obj), &ncp) : NULL;
    long long len = str ? (long long)ncp : (long long)json_array_size(obj), a = 0, b = 0;
    json_t *r = NULL;
    if (str && !o) return NULL;
    if (bound(c, n, lo, len, 0, &a) == 0 && bound(c, n, hi, len, len, &b) == 0) {
        if (str) r = json_stringn(s + o[a], a < b ? o[b] - o[a] : 0);
        else {
            r = json_array();
            for (long long i = a; r && i < b; i++)
                json_array_append(r, json_array_get(obj, (size_t)i));
        }
    }
    free(o);
    return r;
}

/* A new list of the items of v: list items, str characters, dict keys. */
int klp_iter_items(klp_ctx *c, const klp_node *n, json_t *v, json_t **list_out)
{
    json_t *r = NULL;
    if (json_is_array(v)) {
        r = json_copy(v);
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t ncp;
        size_t *o = cp_offsets(s, json_string_length(v), &ncp);
        r = o ? json_array() : NULL;
        for (size_t i = 0; r && i < ncp; i++)
            json_array_append_new(r, json_stringn(s + o[i], o[i + 1] - o[i]));
        free(o);
    } else if (json_is_object(v)) {
        r = json_array();
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x) json_array_append_new(r, json_string(k));
    } else {
        return klp_fail(c->err, n->line, n->col, "TypeError", "'%s' object is not iterable",
                        klp_type_name(v));
    }
    if (!r) return klp_fail(c->err, n->line, n->col, "MemoryError", "out of memory");
    *list_out = r;
    return 0;
}

/* Walks the containers below v, at most limit levels: the depth reached (more than
 * limit - 1 when it goes deeper), or -1 when target is met on the way. */
static int walk(json_t *v, const json_t *target, int limit)
{
    if (v == target) return -1;
    if (!json_is_array(v) && !json_is_object(v)) return 0;
    if (limit <= 0) return 1;
    int d = 0;
    void *it = json_is_object(v) ? json_object_iter(v) : NULL;
    for (size_t i = 0; d < limit; i++) {
        json_t *x = json_is_array(v) ? json_array_get(v, i) : json_object_iter_value(it);
        if (!x) break;
        it = it ? json_object_iter_next(v, it) : NULL;
        int k = walk(x, target, limit - 1);
        if (k < 0) return -1;
        if (k > d) d = k;
    }
    return d + 1;
}

int klp_check_depth(klp_ctx *c, const klp_node *n, json_t *v)
{
    if (walk(v, NULL, KLP_MAX_DEPTH) > KLP_MAX_DEPTH - 1)
        return klp_fail(c->err, n->line, n->col, "RecursionError",
                        "value nested more than %d levels deep (or containing itself)",
                        KLP_MAX_DEPTH - 1);
    return 0;
}

int klp_reaches(json_t *v, json_t *target)
{
    int w = walk(v, target, KLP_MAX_DEPTH + 1);
    return w < 0 || w > KLP_MAX_DEPTH;
}
