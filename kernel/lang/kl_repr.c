/* kl_repr.c - Python's repr() and str() of the engine's values (jansson json_t):
 * 'text' with Python's quote choice and escapes, shortest round-trip floats
 * (1e+16, 0.0001, 2.5), True/False/None, [lists] and {'dicts': ...}.
 * Output is capped at KLP_MAX_REPR bytes (shared sub-lists can make a small value
 * print enormously) and nesting at KLP_MAX_DEPTH. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kl_internal.h"

const char *klp_type_name(json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_INTEGER: return "int";
    case JSON_REAL: return "float";
    case JSON_STRING: return "str";
    case JSON_TRUE:
    case JSON_FALSE: return "bool";
    case JSON_NULL: return "NoneType";
    case JSON_ARRAY: return "list";
    case JSON_OBJECT: return "dict";
    }
    return "object";
}

/* Python's repr: the fewest digits that read back the same, positional for exponents
 * -4 to 15 ("1000000000000000.0", "0.0001"), else scientific ("1e+16", "1e-05"). */
static void klp_float_repr(kl_buf *b, double d)
{
    char buf[400];
    int prec = 1;
    if (d == 0 || !isfinite(d)) {
        kl_buf_puts(b, d == 0     ? (signbit(d) ? "-0.0" : "0.0")
                       : isnan(d) ? "nan"
                       : d > 0    ? "inf"
                                  : "-inf");
        return;
    }
    for (; prec < 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec - 1, d);
        if (strtod(buf, NULL) == d) break;
    }
    snprintf(buf, sizeof buf, "%.*e", prec - 1, d);
    int exp = atoi(strchr(buf, 'e') + 1);
    if (exp >= -4 && exp < 16)
        snprintf(buf, sizeof buf, "%.*f", prec - 1 - exp > 0 ? prec - 1 - exp : 1, d);
    kl_buf_puts(b, buf);
}

static void str_repr(kl_buf *b, const char *s, size_t n)
{
    int has_sq = memchr(s, '\'', n) != NULL, has_dq = memchr(s, '"', n) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    kl_buf_add(b, &q, 1);
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n && b->n < KLP_MAX_REPR; i++) {
        unsigned c = u[i];
        if (c == (unsigned char)q || c == '\\') {
            kl_buf_add(b, "\\", 1);
            kl_buf_add(b, s + i, 1);
        } else if (c == '\n') kl_buf_puts(b, "\\n");
        else if (c == '\r') kl_buf_puts(b, "\\r");
        else if (c == '\t') kl_buf_puts(b, "\\t");
        else if (c < 0x20 || c == 0x7f) kl_buf_printf(b, "\\x%02x", c);
        else kl_buf_add(b, s + i, 1);
    }
    kl_buf_add(b, &q, 1);
}

static void repr_depth(kl_buf *b, json_t *v, int depth)
{
    if (b->n >= KLP_MAX_REPR) return;
    if (depth > KLP_MAX_DEPTH) {
        kl_buf_puts(b, "...");
        return;
    }
    switch (json_typeof(v)) {
    case JSON_INTEGER: kl_buf_printf(b, "%lld", (long long)json_integer_value(v)); break;
    case JSON_REAL: klp_float_repr(b, json_real_value(v)); break;
    case JSON_STRING: str_repr(b, json_string_value(v), json_string_length(v)); break;
    case JSON_TRUE: kl_buf_puts(b, "True"); break;
    case JSON_FALSE: kl_buf_puts(b, "False"); break;
    case JSON_NULL: kl_buf_puts(b, "None"); break;
    case JSON_ARRAY: {
        kl_buf_add(b, "[", 1);
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            if (b->n >= KLP_MAX_REPR) break;
            if (i) kl_buf_add(b, ", ", 2);
            repr_depth(b, x, depth + 1);
        }
        kl_buf_add(b, "]", 1);
        break;
    }
    case JSON_OBJECT: {
        kl_buf_add(b, "{", 1);
        const char *k;
        json_t *x;
        int first = 1;
        json_object_foreach(v, k, x)
        {
            if (b->n >= KLP_MAX_REPR) break;
            if (!first) kl_buf_add(b, ", ", 2);
            first = 0;
            str_repr(b, k, strlen(k));
            kl_buf_add(b, ": ", 2);
            repr_depth(b, x, depth + 1);
        }
        kl_buf_add(b, "}", 1);
        break;
    }
    }
    if (b->n >= KLP_MAX_REPR && depth == 0) kl_buf_puts(b, "... (output truncated)");
}

void klp_repr(kl_buf *b, json_t *v)
{
    size_t start = b->n;
    repr_depth(b, v, 0);
    if (b->n - start >= KLP_MAX_REPR && !b->oom) {
        /* the cut may have split a character: re-sanitise the tail */
        kl_buf tmp = {0};
        klp_utf8_sanitize(&tmp, b->s + start, b->n - start, 1);
        b->n = start;
        kl_buf_add(b, tmp.s ? tmp.s : "", tmp.n);
        kl_buf_free(&tmp);
    }
}

void klp_str(kl_buf *b, json_t *v)
{
    if (json_is_string(v)) kl_buf_add(b, json_string_value(v), json_string_length(v));
    else klp_repr(b, v);
}
