/* mg_html.c - %%html / %html: show markup as rich output (a display_data with
 * text/html), as IPython's %%html does. The cell body (or the rest of the line) is
 * shown as written; text/plain carries the same text for frontends without HTML.
 * --id names the output; --update replaces the output shown earlier with that id
 * (update_display_data), as IPython's display(..., display_id=, update=True). */
#include <string.h>

#include "mg.h"

static const mg_option options[] = {
    {"--id", MG_OPT_STRING, "NAME", "name this output so a later --update can replace it", NULL},
    {"--update", MG_OPT_FLAG, NULL, "replace the output named by --id instead of adding one", NULL},
    {NULL, 0, NULL, NULL, NULL},
};

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
    if (!*markup)
        return mg_fail(err, "UsageError", "%%html: nothing to show (usage: %%%%html, then markup)");
    const char *id = mg_args_get(args, "--id");
    int update = mg_args_has(args, "--update");
    if (update && !id) return mg_fail(err, "UsageError", "%%html: --update needs --id NAME");
    json_t *data = json_pack("{s:s, s:s}", "text/html", markup, "text/plain", markup);
    if (!data) return mg_fail(err, "ValueError", "%%html: the markup is not valid UTF-8");
    ctx->out->display(ctx->out->user, data, NULL, id, update);
    json_decref(data);
    return 0;
}

const mg_command mg_cmd_html = {
    .name = "html",
    .summary = "Show HTML markup as rich output",
    .usage = "Usage: %%html [--id NAME [--update]] (cell: the body is the markup)\n"
             "       %html [--id NAME [--update]] MARKUP\n\n"
             "Displays the markup as HTML (a display_data with text/html). With --id the\n"
             "output is named, and a later --update with the same name replaces it in\n"
             "place (a status line that changes without piling up outputs).\n\n"
             "Example:\n  %%html --id status\n  <b>epoch 1</b> running\n"
             "  (later) %html --id status --update <b>epoch 1</b> done",
    .flags = MG_LINE | MG_CELL,
    .options = options,
    .run = run,
};
