/* kl_utf8.c - UTF-8 helpers: validation (cells, shell output, form annotations),
 * code-point counting (the protocol's cursor positions count code points), encoding
 * of \u escapes, a streaming sanitiser for shell output whose chunks may split a
 * character, and the JSON strings the kernel puts on the wire (kl_json_text). */
#include <string.h>

#include "kl_internal.h"

/* Length of the valid sequence starting at s (n bytes available), 0 if invalid,
 * -1 if it is a valid but incomplete prefix. */
static int seq_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    int len;
    unsigned min;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) len = 2, min = 0x80;
    else if (c >= 0xe0 && c <= 0xef) len = 3, min = 0x800;
    else if (c >= 0xf0 && c <= 0xf4) len = 4, min = 0x10000;
    else return 0;
    unsigned cp = c & (0x3fu >> (len - 1));
    for (int i = 1; i < len; i++) {
        if ((size_t)i >= n) return -1;
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3fu);
        /* early rejection of overlongs / surrogates / > U+10FFFF on the 2nd byte */
        if (i == 1) {
            if (c == 0xe0 && s[1] < 0xa0) return 0;
            if (c == 0xed && s[1] >= 0xa0) return 0;
            if (c == 0xf0 && s[1] < 0x90) return 0;
            if (c == 0xf4 && s[1] >= 0x90) return 0;
        }
    }
    if (cp < min) return 0;
    return len;
}

int klp_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        int k = seq_len(p + i, n - i);
        if (k <= 0) return 0;
        i += (size_t)k;
    }
    return 1;
}

size_t klp_utf8_len(const char *s, size_t n)
{
    size_t cps = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xc0) != 0x80) cps++;
    return cps;
}

size_t klp_utf8_offset(const char *s, size_t n, size_t cp)
{
    size_t i = 0, k = 0;
    while (i < n) {
        if (((unsigned char)s[i] & 0xc0) != 0x80) {
            if (k == cp) return i;
            k++;
        }
        i++;
    }
    return n;
}

int klp_utf8_encode(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp >= 0xd800 && cp <= 0xdfff) return 0;
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    if (cp > 0x10ffff) return 0;
    out[0] = (char)(0xf0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Appends s[0..n) to b with each invalid byte (and NUL, when nul) as U+FFFD; a cut-off
 * sequence at the end is held back unless final: returns its length. */
static size_t sanitize(kl_buf *b, const char *s, size_t n, int final, int nul)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, start = 0;
    while (i < n) {
        int k = nul && !p[i] ? 0 : seq_len(p + i, n - i);
        if (k > 0) {
            i += (size_t)k;
            continue;
        }
        kl_buf_add(b, s + start, i - start);
        if (k < 0 && !final) return n - i;
        kl_buf_add(b, "\xef\xbf\xbd", 3);
        start = ++i;
    }
    kl_buf_add(b, s + start, i - start);
    return 0;
}

size_t klp_utf8_sanitize(kl_buf *b, const char *s, size_t n, int final)
{
    return sanitize(b, s, n, final, 0);
}

json_t *kl_json_text(const char *s, size_t n)
{
    if (!memchr(s, 0, n) && klp_utf8_valid(s, n)) return json_stringn(s, n); /* as it is */
    kl_buf b = {0};
    sanitize(&b, s, n, 1, 1);
    json_t *v = b.oom ? NULL : json_stringn(b.s ? b.s : "", b.n);
    kl_buf_free(&b);
    return v;
}
