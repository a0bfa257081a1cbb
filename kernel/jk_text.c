/* jk_text.c - UTF-8 for the wire: code point counts and offsets (cursor_pos counts
 * code points), and JSON strings that are always valid UTF-8 whatever bytes a cell or
 * a shell command produced (invalid sequences and NUL become U+FFFD). */
#include <stdlib.h>
#include <string.h>

#include "jk_internal.h"

/* Continuation bytes (10xxxxxx) do not start a code point. */
size_t jkp_utf8_len(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xc0) != 0x80) n++;
    return n;
}

size_t jkp_utf8_offset(const char *s, size_t cp)
{
    size_t i = 0, seen = 0;
    for (; s[i]; i++) {
        if (((unsigned char)s[i] & 0xc0) != 0x80) {
            if (seen == cp) return i;
            seen++;
        }
    }
    return i;
}

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0 if invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    size_t len;
    unsigned min;
    unsigned cp;
    if (s[0] < 0x80) return 1;
    if ((s[0] & 0xe0) == 0xc0)
        len = 2, min = 0x80, cp = s[0] & 0x1fu;
    else if ((s[0] & 0xf0) == 0xe0)
        len = 3, min = 0x800, cp = s[0] & 0x0fu;
    else if ((s[0] & 0xf8) == 0xf0)
        len = 4, min = 0x10000, cp = s[0] & 0x07u;
    else
        return 0;
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return len;
}

json_t *jkp_json_text(const char *s, size_t len)
{
    json_t *v = json_stringn(s, len); /* fast path: valid UTF-8 without NUL */
    if (v) return v;
    char *buf = malloc(3 * len + 1), *o = buf;
    if (!buf) return NULL;
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        size_t k = p[i] ? utf8_seq(p + i, len - i) : 0;
        if (k) {
            memcpy(o, p + i, k);
            o += k;
            i += k;
        } else { /* invalid byte or NUL -> U+FFFD */
            memcpy(o, "\xef\xbf\xbd", 3);
            o += 3;
            i++;
        }
    }
    v = json_stringn(buf, (size_t)(o - buf));
    free(buf);
    return v;
}
