/* kl_index.c - subscripts and slices of lists, str (by code point, as Python) and
 * dicts; iteration (for unpacking, builtins and methods); and the value-nesting check
 * that keeps lists of lists (and self-containing values) bounded. */
#include <stdlib.h>
#include <string.h>

#include "kl_internal.h"

static int as_index(klp_ctx *c, const klp_node *n, json_t *idx, const char *what, long long *out)
{
    if (json_is_integer(idx)) *out = (long long)json_integer_value(idx);
    else if (json_is_boolean(idx)) *out = json_is_true(idx);
    else
        return klp_fail(c->err, n->line, n->col, "TypeError",
                        "%s indices must be integers "
                        "or slices, not %s",
                        what, klp_type_name(idx));
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

/* Python's PySlice_AdjustIndices. */
static long long adjust(long long len, long long *start, long long *stop, long long step)
{
    if (*start < 0) {
        *start += len;
        if (*start < 0) *start = step < 0 ? -1 : 0;
    } else if (*start >= len) {
        *start = step < 0 ? len - 1 : len;
    }
    if (*stop < 0) {
        *stop += len;
        if (*stop < 0) *stop = step < 0 ? -1 : 0;
    } else if (*stop >= len) {
        *stop = step < 0 ? len - 1 : len;
    }
    if (step < 0) return *stop < *start ? (*start - *stop - 1) / (-step) + 1 : 0;
    return *start < *stop ? (*stop - *start - 1) / step + 1 : 0;
}

static int slice_part(klp_ctx *c, const klp_node *n, json_t *v, long long def, long long *out)
{
    if (!v || json_is_null(v)) {
        *out = def;
        return 0;
    }
    if (json_is_integer(v) || json_is_boolean(v)) return as_index(c, n, v, "slice", out);
    return klp_fail(c->err, n->line, n->col, "TypeError",
                    "slice indices must be integers or "
                    "None, not %s",
                    klp_type_name(v));
}

json_t *klp_slice(klp_ctx *c, const klp_node *n, json_t *obj, json_t *lo, json_t *hi, json_t *stepv)
{
    long long step, start, stop;
    if (slice_part(c, n, stepv, 1, &step) < 0) return NULL;
    if (step == 0) {
        klp_fail(c->err, n->line, n->col, "ValueError", "slice step cannot be zero");
        return NULL;
    }
    if (step == INT64_MIN) step = -INT64_MAX;
    long long big = step < 0 ? INT64_MIN : INT64_MAX;
    if (slice_part(c, n, lo, step < 0 ? INT64_MAX : 0, &start) < 0 ||
        slice_part(c, n, hi, big, &stop) < 0)
        return NULL;
    if (json_is_array(obj)) {
        long long cnt = adjust((long long)json_array_size(obj), &start, &stop, step);
        json_t *r = json_array();
        for (long long k = 0, i = start; r && k < cnt; k++, i += step)
            json_array_append(r, json_array_get(obj, (size_t)i));
        return r;
    }
    if (json_is_string(obj)) {
        const char *s = json_string_value(obj);
        size_t ncp;
        size_t *o = cp_offsets(s, json_string_length(obj), &ncp);
        if (!o) return NULL;
        long long cnt = adjust((long long)ncp, &start, &stop, step);
        kl_buf b = {0};
        for (long long k = 0, i = start; k < cnt; k++, i += step)
            kl_buf_add(&b, s + o[i], o[i + 1] - o[i]);
        free(o);
        json_t *r = b.oom ? NULL : json_stringn(b.s ? b.s : "", b.n);
        kl_buf_free(&b);
        return r;
    }
    klp_fail(c->err, n->line, n->col, "TypeError", "'%s' object is not subscriptable%s",
             klp_type_name(obj), json_is_object(obj) ? " with a slice" : "");
    return NULL;
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

static int depth_of(json_t *v, int limit)
{
    if (!json_is_array(v) && !json_is_object(v)) return 0;
    if (limit <= 0) return 1;
    int d = 0;
    if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            if (!json_is_array(x) && !json_is_object(x)) continue;
            int k = depth_of(x, limit - 1);
            if (k > d) d = k;
            if (d >= limit) break;
        }
    } else {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x)
        {
            int dd = depth_of(x, limit - 1);
            if (dd > d) d = dd;
            if (d >= limit) break;
        }
    }
    return d + 1;
}

int klp_check_depth(klp_ctx *c, const klp_node *n, json_t *v)
{
    if (depth_of(v, KLP_MAX_DEPTH) > KLP_MAX_DEPTH - 1)
        return klp_fail(c->err, n->line, n->col, "RecursionError",
                        "value nested more than "
                        "%d levels deep (or containing itself)",
                        KLP_MAX_DEPTH - 1);
    return 0;
}

static int reaches(json_t *v, json_t *target, int depth)
{
    if (v == target) return 1;
    if (depth > KLP_MAX_DEPTH) return 1;
    size_t i;
    const char *k;
    json_t *x;
    if (json_is_array(v)) {
        json_array_foreach(v, i, x) if ((json_is_array(x) || json_is_object(x)) &&
                                        reaches(x, target, depth + 1)) return 1;
    } else if (json_is_object(v)) {
        json_object_foreach(v, k, x) if ((json_is_array(x) || json_is_object(x)) &&
                                         reaches(x, target, depth + 1)) return 1;
    }
    return 0;
}

int klp_reaches(json_t *v, json_t *target)
{
    return (json_is_array(v) || json_is_object(v)) && reaches(v, target, 0);
}
