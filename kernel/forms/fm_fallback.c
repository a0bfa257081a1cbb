/* fm_fallback.c - the form as text/plain and text/html, for frontends that draw no
 * widgets (nbconvert, GitHub, `kiln run` outputs, consoles). Also the small Markdown
 * subset used by `#@markdown` lines and titles: headings, `---` rules, **bold**,
 * *emphasis*, `code`; everything else is HTML-escaped text.
 */
#include <stdlib.h>
#include <string.h>

#include "fm_internal.h"

/* Appends the HTML-escaped first n bytes of s (mg_html_escape_n, the one escaper). */
static void escape_into(kl_buf *b, const char *s, size_t n)
{
    char *e = mg_html_escape_n(s, n);
    if (!e) {
        b->oom = 1;
        return;
    }
    kl_buf_puts(b, e);
    free(e);
}

/* Inline spans: `code`, **bold**, *em*; unmatched markers stay as text. */
static void inline_md(kl_buf *b, const char *s)
{
    while (*s) {
        const char *mark = NULL, *tag = NULL;
        size_t ml = 0;
        if (*s == '`') {
            mark = "`";
            ml = 1;
            tag = "code";
        } else if (s[0] == '*' && s[1] == '*') {
            mark = "**";
            ml = 2;
            tag = "b";
        } else if (*s == '*' || *s == '_') {
            mark = *s == '*' ? "*" : "_";
            ml = 1;
            tag = "i";
        }
        const char *end = mark ? strstr(s + ml, mark) : NULL;
        if (end && end > s + ml) {
            kl_buf_printf(b, "<%s>", tag);
            escape_into(b, s + ml, (size_t)(end - s - ml));
            kl_buf_printf(b, "</%s>", tag);
            s = end + ml;
        } else {
            escape_into(b, s, 1);
            s++;
        }
    }
}

char *fm_markdown_html(const char *text)
{
    kl_buf b = {0};
    int level = 0;
    while (text[level] == '#' && level < 6) level++;
    if (!strcmp(text, "---") || !strcmp(text, "***") || !strcmp(text, "___")) {
        kl_buf_puts(&b, "<hr>");
    } else if (level && (text[level] == ' ' || !text[level])) {
        const char *t = text + level;
        while (*t == ' ') t++;
        kl_buf_printf(&b, "<h%d>", level);
        inline_md(&b, t);
        kl_buf_printf(&b, "</h%d>", level);
    } else if (!*text) {
        kl_buf_puts(&b, "<br>");
    } else {
        kl_buf_puts(&b, "<p style=\"margin:2px 0\">");
        inline_md(&b, text);
        kl_buf_puts(&b, "</p>");
    }
    return kl_buf_take(&b);
}

char *fm_title_html(const char *text)
{
    kl_buf b = {0};
    while (*text == '#' || *text == ' ') text++; /* `#@title ## Heading` */
    kl_buf_puts(&b, "<h3>");
    inline_md(&b, text);
    kl_buf_puts(&b, "</h3>");
    return kl_buf_take(&b);
}

json_t *fm_fallback_bundle(const fm_form *f, const mg_host *host)
{
    kl_buf t = {0}, h = {0};
    size_t width = 0;
    for (size_t i = 0; i < f->n; i++)
        if (f->items[i].field && strlen(f->items[i].field->name) > width)
            width = strlen(f->items[i].field->name);
    kl_buf_puts(&h, "<div class=\"kiln-form\">");
    int in_table = 0;
    for (size_t i = 0; i < f->n; i++) {
        const fm_item *it = &f->items[i];
        if (it->kind != FM_ITEM_PARAM) {
            if (in_table) {
                kl_buf_puts(&h, "</table>");
                in_table = 0;
            }
            if (it->kind == FM_ITEM_TITLE) {
                if (!*it->text) continue;
                const char *tt = it->text;
                while (*tt == '#' || *tt == ' ') tt++;
                char *th = fm_title_html(tt);
                kl_buf_printf(&t, "%s\n", tt);
                if (th) kl_buf_puts(&h, th);
                else h.oom = 1;
                free(th);
            } else {
                char *md = fm_markdown_html(it->text);
                kl_buf_printf(&t, "%s\n", it->text);
                if (md) kl_buf_puts(&h, md);
                else h.oom = 1;
                free(md);
            }
            continue;
        }
        const fm_field *fd = it->field;
        char *val = fm_field_text(fd, fm_field_current(fd, host));
        if (!val) {
            t.oom = 1;
            break;
        }
        kl_buf_printf(&t, "  %-*s = %s\n", (int)width, fd->name, val);
        if (!in_table) {
            kl_buf_puts(&h, "<table>");
            in_table = 1;
        }
        kl_buf_puts(&h, "<tr><td style=\"text-align:left\"><code>");
        escape_into(&h, fd->name, strlen(fd->name));
        kl_buf_puts(&h, "</code></td><td style=\"text-align:left\"><code>");
        escape_into(&h, val, strlen(val));
        kl_buf_printf(&h, "</code></td><td style=\"text-align:left\"><i>%s</i></td></tr>",
                      fm_kind_name(fd->kind));
        free(val);
    }
    if (in_table) kl_buf_puts(&h, "</table>");
    kl_buf_puts(&h, "</div>");
    size_t tn = t.n, hn = h.n;
    char *ts = kl_buf_take(&t), *hs = kl_buf_take(&h);
    json_t *plain = ts ? fm_jstr(ts, tn) : NULL, *html = hs ? fm_jstr(hs, hn) : NULL;
    free(ts);
    free(hs);
    if (!plain || !html) {
        json_decref(plain);
        json_decref(html);
        return NULL;
    }
    return json_pack("{s:o,s:o}", "text/plain", plain, "text/html", html);
}
