/* mg_escape.c - HTML escaping, the one copy: magics' rich outputs and the forms'
 * text/html fallback (kernel/forms) both use it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg.h"

static const char *entity(char c)
{
    switch (c) {
    case '&': return "&amp;";
    case '<': return "&lt;";
    case '>': return "&gt;";
    case '"': return "&quot;";
    case '\'': return "&#39;";
    default: return NULL;
    }
}

char *mg_html_escape_n(const char *s, size_t n)
{
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        const char *e = entity(s[i]);
        len += e ? strlen(e) : 1;
    }
    char *out = malloc(len + 1), *o = out;
    if (!out) return NULL;
    for (size_t i = 0; i < n; i++) {
        const char *e = entity(s[i]);
        if (!e) {
            *o++ = s[i];
            continue;
        }
        size_t k = strlen(e);
        memcpy(o, e, k);
        o += k;
    }
    *o = 0;
    return out;
}

char *mg_html_escape(const char *s) { return mg_html_escape_n(s, strlen(s)); }

void mg_html_put(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        const char *e = entity(*s);
        if (e) fputs(e, f);
        else if ((unsigned char)*s >= 0x20 || *s == '\t' || *s == '\n' || *s == '\r') fputc(*s, f);
    }
}
