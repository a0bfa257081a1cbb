/* jk_run_progress.c - see jk_run_progress.h. */
#include <string.h>

#include "jk_run_progress.h"
#include "rt_clock.h"

void jk_run_progress_init(jk_run_progress *p, FILE *to, int tty)
{
    memset(p, 0, sizeof p[0]);
    p->to = to;
    p->tty = tty;
    p->every = tty ? 0.5 : 10.0;
}

static void emit(jk_run_progress *p)
{
    if (p->tty) {
        fprintf(p->to, "\r%s\033[K", p->pending);
        p->open_line = 1;
    } else {
        fprintf(p->to, "%s\n", p->pending);
    }
    fflush(p->to);
    p->pending[0] = '\0';
    p->last = rt_clock_s();
}

/* One line of text: newlines and tabs become spaces, other control bytes are dropped
 * (no escape sequence of the cell's own reaches the log). */
static void one_line(char *out, size_t n, const char *text)
{
    size_t k = 0;
    for (const unsigned char *s = (const unsigned char *)text; *s && k + 1 < n; s++) {
        if (*s == '\n' || *s == '\t' || *s == '\r') out[k++] = ' ';
        else if (*s >= 0x20 && *s != 0x7f) out[k++] = (char)*s;
    }
    while (k && out[k - 1] == ' ') k--;
    out[k] = '\0';
}

void jk_run_progress_show(jk_run_progress *p, json_t *data)
{
    const char *key;
    json_t *v;
    json_object_foreach(data, key, v) if (!strncmp(key, "image/", 6)) return;
    const char *text = json_string_value(json_object_get(data, "text/plain"));
    if (!text || !*text || text[0] == '<') return;
    one_line(p->pending, sizeof p->pending, text);
    if (!p->last || rt_clock_s() - p->last >= p->every) emit(p);
}

void jk_run_progress_end(jk_run_progress *p)
{
    if (p->pending[0]) emit(p);
    if (p->open_line) {
        fputc('\n', p->to);
        fflush(p->to);
        p->open_line = 0;
    }
    p->last = 0;
}
