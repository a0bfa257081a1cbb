/* rt_store_xml.c - the few values Kiln reads from S3's XML replies (<Key>, <Size>,
 * <UploadId>, <Code>, <Message>, ...). The replies are flat, machine-written documents
 * without attributes on these elements, so finding <tag>text</tag> in order and
 * decoding the five predefined entities and numeric references is all it takes; an
 * XML library would add a dependency for no gain. */
#include "rt_store_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Decodes &amp; &lt; &gt; &quot; &apos; &#N; &#xN; (ASCII range) in place. */
static void decode(char *s)
{
    static const struct {
        const char *ent;
        char c;
    } ents[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    char *w = s;
    for (const char *r = s; *r;) {
        int done = 0;
        for (size_t i = 0; *r == '&' && !done && i < sizeof ents / sizeof *ents; i++) {
            size_t n = strlen(ents[i].ent);
            if (strncmp(r, ents[i].ent, n) == 0) {
                *w++ = ents[i].c;
                r += n;
                done = 1;
            }
        }
        if (!done && r[0] == '&' && r[1] == '#') {
            char *end;
            long v = r[2] == 'x' ? strtol(r + 3, &end, 16) : strtol(r + 2, &end, 10);
            if (*end == ';' && v > 0 && v < 128) {
                *w++ = (char)v;
                r = end + 1;
                done = 1;
            }
        }
        if (!done) *w++ = *r++;
    }
    *w = '\0';
}

char *rtp_store_xml_raw(const char *xml, const char *tag, size_t *pos, int *oom)
{
    char open[80], close[80];
    if (!xml || strlen(tag) > 70) return NULL;
    snprintf(open, sizeof open, "<%s>", tag);
    snprintf(close, sizeof close, "</%s>", tag);
    const char *a = strstr(xml + *pos, open);
    if (!a) return NULL;
    a += strlen(open);
    const char *b = strstr(a, close);
    if (!b) return NULL;
    char *out = strndup(a, (size_t)(b - a));
    if (!out) {
        *oom = 1;
        return NULL;
    }
    *pos = (size_t)(b - xml) + strlen(close);
    return out;
}

char *rtp_store_xml_next(const char *xml, const char *tag, size_t *pos, int *oom)
{
    char *out = rtp_store_xml_raw(xml, tag, pos, oom);
    if (out) decode(out);
    return out;
}
