/* fm_lit.c - the JSON5-ish values inside annotations (`{type:"slider", min:0}`,
 * `["a", 'b', 3]`). Python literals on the code side of a `#@param` line and the
 * reprs in text boxes and the text fallback are the cell language's
 * (kl_literal_parse, kl_value_repr), so a form reads and shows values as cells do.
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
#include "kl.h"

json_t *fm_jstr(const char *s, size_t n)
{
    if (!kl_utf8_valid(s, n) || memchr(s, '\0', n)) return NULL;
    return json_stringn(s, n);
}

/* ---- shared scanners ---- */

static void put_utf8(kl_buf *b, unsigned cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    kl_buf_add(b, u, n);
}

static int hex_digits(const char *s, int n, unsigned *out)
{
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
static json_t *scan_string(const char **p, const char **why)
{
    char q = **p;
    const char *s = *p + 1;
    kl_buf b = {0};
    *why = "unterminated string";
    while (*s && *s != q && *s != '\n') {
        if (*s != '\\') {
            kl_buf_add(&b, s++, 1);
            continue;
        }
        s++;
        unsigned cp;
        switch (*s) {
        case 'n':
            kl_buf_add(&b, "\n", 1);
            s++;
            break;
        case 't':
            kl_buf_add(&b, "\t", 1);
            s++;
            break;
        case 'r':
            kl_buf_add(&b, "\r", 1);
            s++;
            break;
        case '\\':
        case '\'':
        case '"': kl_buf_add(&b, s++, 1); break;
        case 'x':
        case 'u':
            if (hex_digits(s + 1, *s == 'x' ? 2 : 4, &cp) || cp == 0 ||
                (cp >= 0xD800 && cp <= 0xDFFF)) {
                *why = "bad escape in string";
                free(kl_buf_take(&b));
                return NULL;
            }
            s += *s == 'x' ? 3 : 5;
            put_utf8(&b, cp);
            break;
        case '\0': free(kl_buf_take(&b)); return NULL;
        default:
            kl_buf_add(&b, "\\", 1);
            kl_buf_add(&b, s++, 1);
            break;
        }
    }
    if (*s != q) {
        free(kl_buf_take(&b));
        return NULL;
    }
    size_t n = b.n;
    char *text = kl_buf_take(&b);
    if (!text) {
        *why = "out of memory";
        return NULL;
    }
    json_t *v = fm_jstr(text, n);
    free(text);
    if (!v) {
        *why = "string is not valid UTF-8";
        return NULL;
    }
    *p = s + 1;
    return v;
}

/* A number at *p: [+-] digits [. digits] [e[+-]digits]. New json integer/real or NULL. */
static json_t *scan_number(const char **p)
{
    const char *s = *p;
    char tmp[128];
    size_t n = 0;
    int digits = 0, is_real = 0;
    if (*s == '+' || *s == '-') tmp[n++] = *s++;
    while (n < sizeof tmp - 1) {
        if (isdigit((unsigned char)*s)) {
            tmp[n++] = *s++;
            digits++;
        } else if (*s == '.' && !is_real) {
            tmp[n++] = *s++;
            is_real = 1;
        } else break;
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
        if (errno == 0 && *end == '\0') {
            *p = s;
            return json_integer(v);
        }
        errno = 0; /* too large for an int: keep it as a real, as JSON readers do */
    }
    double d = strtod(tmp, &end);
    if (*end != '\0' || !isfinite(d)) return NULL;
    *p = s;
    return json_real(d);
}

static int word_is(const char *s, const char *w)
{
    size_t n = strlen(w);
    return strncmp(s, w, n) == 0 && !isalnum((unsigned char)s[n]) && s[n] != '_';
}

/* ---- annotation literals ---- */

json_t *fm_lit_annotation(const char **p, char **text, char *msg, size_t msg_len)
{
    const char *s = *p, *why = "expected a value";
    json_t *v = NULL;
    if (*s == '"' || *s == '\'') {
        v = scan_string(&s, &why);
    } else if (isdigit((unsigned char)*s) || *s == '-' || *s == '+' || *s == '.') {
        v = scan_number(&s);
        why = "bad number";
    } else if (word_is(s, "true") || word_is(s, "True")) {
        v = json_true();
        s += 4;
    } else if (word_is(s, "false") || word_is(s, "False")) {
        v = json_false();
        s += 5;
    } else if (word_is(s, "null") || word_is(s, "None")) {
        v = json_null();
        s += 4;
    } else if (isalpha((unsigned char)*s) || *s == '_') {
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
