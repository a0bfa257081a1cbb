/* mg_html.c - %%html / %html: show markup as rich output (a display_data with
 * text/html), as IPython's %%html does. The cell body (or the rest of the line) is
 * shown as written; text/plain carries the same text for frontends without HTML. */
#include <string.h>

#include "mg.h"

static int run(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    /* line form: the words joined back with single spaces */
    char line[4096] = "";
    size_t used = 0;
    for (int i = 0; i < args->npos; i++) {
        size_t n = strlen(args->pos[i]);
        if (used + n + 2 > sizeof line)
            return mg_fail(err, "UsageError", "%%html: line too long; use the cell form %%%%html");
        if (i) line[used++] = ' ';
        memcpy(line + used, args->pos[i], n + 1);
        used += n;
    }
    const char *markup = args->body ? args->body : line;
    if (!*markup) return mg_fail(err, "UsageError", "%%html: nothing to show (usage: %%%%html, then markup)");
    json_t *data = json_pack("{s:s, s:s}", "text/html", markup, "text/plain", markup);
    if (!data) return mg_fail(err, "ValueError", "%%html: the markup is not valid UTF-8");
    ctx->out->display(ctx->out->user, data, NULL, NULL, 0);
    json_decref(data);
    return 0;
}

const mg_command mg_cmd_html = {
    .name = "html",
    .summary = "Show HTML markup as rich output",
    .usage = "Usage: %%html (cell: the body is the markup) or %html MARKUP\n\n"
             "Displays the markup as HTML (a display_data with text/html).\n\n"
             "Example:\n  %%html\n  <b>lr</b> = 0.001",
    .flags = MG_LINE | MG_CELL,
    .options = NULL,
    .run = run,
};
