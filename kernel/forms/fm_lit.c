/* fm_lit.c - literals: the JSON5-ish values inside annotations (`{type:"slider",
 * min:0}`, `["a", 'b', 3]`), Python literals on the code side of a `#@param` line,
 * and Python-style reprs of values for text boxes and the text fallback.
 *
 * Everything here reads untrusted bytes (the fuzz team feeds it random input):
 * every scan is bounded by the NUL terminator, nesting is depth-limited, numbers
 * that overflow or are not finite are refused, and strings with invalid UTF-8 or
 * NUL escapes are refused rather than handed to jansson (which would reject them).
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fm_internal.h"

#define FM_LIT_MAX_DEPTH 64

/* ---- UTF-8 ---- */

int fm_utf8_valid(const char *s, size_t n) {
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        unsigned c = *p;
        size_t len;
        unsigned cp;
        if (c < 0x80) { p++; continue; }
        else if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
        else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
        else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
        else return 0;
        if ((size_t)(end - p) < len) return 0;
        for (size_t i = 1; i < len; i++) {
            if ((p[i] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[i] & 0x3F);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        p += len;
    }
    return 1;
}

json_t *fm_jstr(const char *s, size_t n) {
    if (!fm_utf8_valid(s, n) || memchr(s, '\0', n)) return NULL;
    return json_stringn(s, n);
}

/* ---- shared scanners ---- */

static void skip_ws(const char **p) {
    while (**p == ' ' || **p == '\t' || **p == '\r' || **p == '\n') (*p)++;
}

static void put_utf8(fm_buf *b, unsigned cp) {
    char u[4];
    size_t n;
    if (cp < 0x80) { u[0] = (char)cp; n = 1; }
    else if (cp < 0x800) { u[0] = (char)(0xC0 | (cp >> 6)); u[1] = (char)(0x80 | (cp & 0x3F)); n = 2; }
    else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12)); u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F)); n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18)); u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); u[3] = (char)(0x80 | (cp & 0x3F)); n = 4;
    }
    fm_buf_add(b, u, n);
}

static int hex_digits(const char *s, int n, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < n; i++) {
        int c = (unsigned char)s[i];
        if (!isxdigit(c)) return -1;
        v = v * 16 + (unsigned)(isdigit(c) ? c - '0' : (tolower(c) - 'a' + 10));
    }
    *out = v;
    return 0;
}

/* A quoted string at *p ('..' or ".."; no triple quotes). New json string or NULL. */
static json_t *scan_string(const char **p, const char **why) {
    char q = **p;
    const char *s = *p + 1;
    fm_buf b = {0};
    *why = "unterminated string";
    while (*s && *s != q && *s != '\n') {
        if (*s != '\\') { fm_buf_add(&b, s++, 1); continue; }
        s++;
        unsigned cp;
        switch (*s) {
        case 'n': fm_buf_add(&b, "\n", 1); s++; break;
        case 't': fm_buf_add(&b, "\t", 1); s++; break;
        case 'r': fm_buf_add(&b, "\r", 1); s++; break;
        case '\\': case '\'': case '"': fm_buf_add(&b, s++, 1); break;
        case 'x': case 'u':
            if (hex_digits(s + 1, *s == 'x' ? 2 : 4, &cp) || cp == 0 ||
                (cp >= 0xD800 && cp <= 0xDFFF)) {
                *why = "bad escape in string";
                free(fm_buf_take(&b));
                return NULL;
            }
            s += *s == 'x' ? 3 : 5;
            put_utf8(&b, cp);
            break;
        case '\0': free(fm_buf_take(&b)); return NULL;
        default: fm_buf_add(&b, "\\", 1); fm_buf_add(&b, s++, 1); break;
        }
    }
    if (*s != q) { free(fm_buf_take(&b)); return NULL; }
    size_t n = b.n;
    char *text = fm_buf_take(&b);
    if (!text) { *why = "out of memory"; return NULL; }
    json_t *v = fm_jstr(text, n);
    free(text);
    if (!v) { *why = "string is not valid UTF-8"; return NULL; }
    *p = s + 1;
    return v;
}

/* A number at *p: [+-] digits [. digits] [e[+-]digits], '_' allowed between digits
 * when python is set. New json integer/real or NULL. */
static json_t *scan_number(const char **p, int python) {
    const char *s = *p;
    char tmp[128];
    size_t n = 0;
    int digits = 0, is_real = 0;
    if (*s == '+' || *s == '-') tmp[n++] = *s++;
    while (n < sizeof tmp - 1) {
        if (isdigit((unsigned char)*s)) { tmp[n++] = *s++; digits++; }
        else if (python && *s == '_' && digits && isdigit((unsigned char)s[1])) s++;
        else if (*s == '.' && !is_real) { tmp[n++] = *s++; is_real = 1; }
        else break;
    }
    if (!digits) return NULL;
    if ((*s == 'e' || *s == 'E') && n < sizeof tmp - 8) {
        const char *e = s + 1;
        size_t m = n;
        tmp[m++] = 'e';
        if (*e == '+' || *e == '-') tmp[m++] = *e++;
        if (!isdigit((unsigned char)*e)) return NULL;
        while (isdigit((unsigned char)*e) && m < sizeof tmp - 1) tmp[m++] = *e++;
        if (isdigit((unsigned char)*e)) return NULL;
        n = m;
        s = e;
        is_real = 1;
    }
    if (n >= sizeof tmp - 1 || isalnum((unsigned char)*s) || *s == '_' || *s == '.') return NULL;
    tmp[n] = '\0';
    errno = 0;
    char *end;
    if (!is_real) {
        long long v = strtoll(tmp, &end, 10);
        if (errno == 0 && *end == '\0') { *p = s; return json_integer(v); }
        errno = 0;   /* too large for an int: keep it as a real, as JSON readers do */
    }
    double d = strtod(tmp, &end);
    if (*end != '\0' || !isfinite(d)) return NULL;
    *p = s;
    return json_real(d);
}

static int word_is(const char *s, const char *w) {
    size_t n = strlen(w);
    return strncmp(s, w, n) == 0 && !isalnum((unsigned char)s[n]) && s[n] != '_';
}

/* ---- annotation literals ---- */

json_t *fm_lit_annotation(const char **p, char **text, char *msg, size_t msg_len) {
    const char *s = *p, *why = "expected a value";
    json_t *v = NULL;
    if (*s == '"' || *s == '\'') {
        v = scan_string(&s, &why);
    } else if (isdigit((unsigned char)*s) || *s == '-' || *s == '+' || *s == '.') {
        v = scan_number(&s, 0);
        why = "bad number";
    } else if (word_is(s, "true") || word_is(s, "True")) { v = json_true(); s += 4; }
    else if (word_is(s, "false") || word_is(s, "False")) { v = json_false(); s += 5; }
    else if (word_is(s, "null") || word_is(s, "None")) { v = json_null(); s += 4; }
    else if (isalpha((unsigned char)*s) || *s == '_') {
        /* lenient: a bare word ({type: slider}) is a string */
        const char *e = s;
        while (isalnum((unsigned char)*e) || *e == '_' || *e == '-') e++;
        v = json_stringn(s, (size_t)(e - s));
        s = e;
    }
    if (!v) {
        snprintf(msg, msg_len, "%s at '%.20s'", why, *p);
        return NULL;
    }
    if (text) {
        const char *from = *p, *to = s;
        if (json_is_string(v)) {
            *text = strdup(json_string_value(v));
        } else {
            *text = strndup(from, (size_t)(to - from));
        }
        if (!*text) {
            json_decref(v);
            snprintf(msg, msg_len, "out of memory");
            return NULL;
        }
    }
    *p = s;
    return v;
}

/* ---- Python literals ---- */

static json_t *py_value(const char **p, int depth);

/* Items up to close; returns array, or NULL. *single set when "(x)" had no comma. */
static json_t *py_seq(const char **p, char close, int depth, int *single) {
    json_t *arr = json_array();
    int commas = 0;
    if (!arr) return NULL;
    (*p)++;
    for (;;) {
        skip_ws(p);
        if (**p == close) { (*p)++; break; }
        json_t *item = py_value(p, depth + 1);
        if (!item || json_array_append_new(arr, item)) { json_decref(arr); return NULL; }
        skip_ws(p);
        if (**p == ',') { (*p)++; commas++; continue; }
        if (**p == close) { (*p)++; break; }
        json_decref(arr);
        return NULL;
    }
    if (single) *single = commas == 0 && json_array_size(arr) == 1;
    return arr;
}

static json_t *py_dict(const char **p, int depth) {
    json_t *obj = json_object();
    if (!obj) return NULL;
    (*p)++;
    for (;;) {
        skip_ws(p);
        if (**p == '}') { (*p)++; return obj; }
        const char *why;
        json_t *key = (**p == '"' || **p == '\'') ? scan_string(p, &why) : NULL;
        skip_ws(p);
        if (!key || **p != ':') { json_decref(key); json_decref(obj); return NULL; }
        (*p)++;
        skip_ws(p);
        json_t *val = py_value(p, depth + 1);
        if (!val || json_object_set_new(obj, json_string_value(key), val)) {
            json_decref(key);
            json_decref(obj);
            return NULL;
        }
        json_decref(key);
        skip_ws(p);
        if (**p == ',') { (*p)++; continue; }
        if (**p == '}') { (*p)++; return obj; }
        json_decref(obj);
        return NULL;
    }
}

static json_t *py_value(const char **p, int depth) {
    const char *why;
    if (depth > FM_LIT_MAX_DEPTH) return NULL;
    skip_ws(p);
    const char *s = *p;
    if ((*s == '"' || *s == '\'') && !(s[1] == *s && s[2] == *s)) return scan_string(p, &why);
    if (isdigit((unsigned char)*s) || *s == '.' ||
        ((*s == '-' || *s == '+') && (isdigit((unsigned char)s[1]) || s[1] == '.')))
        return scan_number(p, 1);
    if (word_is(s, "True")) { *p += 4; return json_true(); }
    if (word_is(s, "False")) { *p += 5; return json_false(); }
    if (word_is(s, "None")) { *p += 4; return json_null(); }
    if (*s == '[') return py_seq(p, ']', depth, NULL);
    if (*s == '{') return py_dict(p, depth);
    if (*s == '(') {
        int single = 0;
        json_t *arr = py_seq(p, ')', depth, &single);
        if (arr && single) {   /* (x) is x, not a tuple */
            json_t *x = json_incref(json_array_get(arr, 0));
            json_decref(arr);
            return x;
        }
        return arr;
    }
    return NULL;
}

json_t *fm_lit_python(const char *text) {
    const char *p = text;
    json_t *v = py_value(&p, 0);
    if (!v) return NULL;
    skip_ws(&p);
    if (*p) { json_decref(v); return NULL; }
    return v;
}

/* ---- reprs ---- */

/* Python's repr() of a float: the shortest digits that read back, in fixed notation
 * for decimal exponents -4..15 and in scientific notation otherwise. */
static void repr_real(fm_buf *b, double d) {
    char tmp[64];
    int prec;
    for (prec = 0; prec < 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec, d);
        if (strtod(tmp, NULL) == d) break;
    }
    int exp10 = atoi(strchr(tmp, 'e') + 1);
    if (exp10 >= -4 && exp10 < 16) {
        int decimals = prec - exp10 > 0 ? prec - exp10 : 0;
        snprintf(tmp, sizeof tmp, "%.*f", decimals, d);
        fm_buf_puts(b, tmp);
        if (!strchr(tmp, '.')) fm_buf_puts(b, ".0");
    } else {
        fm_buf_puts(b, tmp);
    }
}

static void repr_string(fm_buf *b, const char *s, size_t n) {
    char q = (memchr(s, '\'', n) && !memchr(s, '"', n)) ? '"' : '\'';
    fm_buf_add(b, &q, 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\' || c == (unsigned char)q) { fm_buf_add(b, "\\", 1); fm_buf_add(b, s + i, 1); }
        else if (c == '\n') fm_buf_puts(b, "\\n");
        else if (c == '\t') fm_buf_puts(b, "\\t");
        else if (c == '\r') fm_buf_puts(b, "\\r");
        else if (c < 0x20 || c == 0x7F) fm_buf_printf(b, "\\x%02x", c);
        else fm_buf_add(b, s + i, 1);
    }
    fm_buf_add(b, &q, 1);
}

static void repr_value(fm_buf *b, const json_t *v, int depth) {
    if (depth > FM_LIT_MAX_DEPTH) { fm_buf_puts(b, "..."); return; }
    switch (json_typeof(v)) {
    case JSON_NULL: fm_buf_puts(b, "None"); break;
    case JSON_TRUE: fm_buf_puts(b, "True"); break;
    case JSON_FALSE: fm_buf_puts(b, "False"); break;
    case JSON_INTEGER: fm_buf_printf(b, "%lld", (long long)json_integer_value(v)); break;
    case JSON_REAL: repr_real(b, json_real_value(v)); break;
    case JSON_STRING: repr_string(b, json_string_value(v), json_string_length(v)); break;
    case JSON_ARRAY: {
        fm_buf_puts(b, "[");
        for (size_t i = 0; i < json_array_size(v); i++) {
            if (i) fm_buf_puts(b, ", ");
            repr_value(b, json_array_get(v, i), depth + 1);
        }
        fm_buf_puts(b, "]");
        break;
    }
    case JSON_OBJECT: {
        const char *k;
        json_t *x;
        int first = 1;
        fm_buf_puts(b, "{");
        json_object_foreach((json_t *)v, k, x) {
            if (!first) fm_buf_puts(b, ", ");
            first = 0;
            repr_string(b, k, strlen(k));
            fm_buf_puts(b, ": ");
            repr_value(b, x, depth + 1);
        }
        fm_buf_puts(b, "}");
        break;
    }
    }
}

char *fm_lit_repr(const json_t *v) {
    fm_buf b = {0};
    if (v) repr_value(&b, v, 0);
    else fm_buf_puts(&b, "None");
    return fm_buf_take(&b);
}
