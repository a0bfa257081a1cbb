/* fm_lit.c - the JSON5-ish values inside annotations (`{type:"slider", min:0}`,
 * `["a", 'b', 3]`). Python literals on the code side of a `#@param` line and the
 * reprs in text boxes and the text fallback are the cell language's
 * (kl_literal_parse, kl_value_repr), so a form reads and shows values as cells do.
 *
 * Strings and numbers are read by the cell language's scanner (kl_literal_scan), so an
 * annotation's "a\tb", 0x10 or 1e-3 means what it means in a cell.
 *
 * Everything here reads untrusted bytes (the fuzz targets feed it random input):
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

static int word_is(const char *s, const char *w)
{
    size_t n = strlen(w);
    return strncmp(s, w, n) == 0 && !isalnum((unsigned char)s[n]) && s[n] != '_';
}

/* ---- annotation literals ---- */

json_t *fm_lit_annotation(const char **p, char **text, char *msg, size_t msg_len)
{
    const char *s = *p;
    char why[200] = "expected a value";
    json_t *v = NULL;
    if (*s == '"' || *s == '\'' || isdigit((unsigned char)*s) || *s == '-' || *s == '+' ||
        *s == '.') {
        size_t used = 0; /* the cell language's scanner: one way to read a literal */
        v = kl_literal_scan(s, &used, why, sizeof why);
        if (v && json_is_string(v) && memchr(json_string_value(v), '\0', json_string_length(v))) {
            json_decref(v);
            v = NULL;
            snprintf(why, sizeof why, "bad escape in string (NUL)");
        }
        s += used;
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
        snprintf(msg, msg_len, "%.200s at '%.20s'", why, *p);
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
