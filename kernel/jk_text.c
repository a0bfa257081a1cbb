/* jk_text.c - code point counts and offsets for the wire (cursor_pos counts code
 * points). The JSON strings that carry a cell's text are kl_json_text's (kl.h). */
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
