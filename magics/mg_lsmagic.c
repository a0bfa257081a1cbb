/* mg_lsmagic.c - %lsmagic: every line and cell magic with its one-line summary,
 * straight from the registry table. */
#include "mg.h"

static int run(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    if (args->npos) return mg_fail(err, "UsageError", "%%lsmagic takes no arguments");
    size_t n = 0;
    const mg_command *const *all = mg_registry_all(&n);
    mg_printf(ctx->out, "Available line magics:\n");
    for (size_t i = 0; i < n; i++)
        if (all[i]->flags & MG_LINE)
            mg_printf(ctx->out, "  %%%-14s %s\n", all[i]->name,
                      all[i]->summary ? all[i]->summary : "");
    mg_printf(ctx->out, "\nAvailable cell magics:\n");
    for (size_t i = 0; i < n; i++)
        if (all[i]->flags & MG_CELL)
            mg_printf(ctx->out, "  %%%%%-13s %s\n", all[i]->name,
                      all[i]->summary ? all[i]->summary : "");
    mg_printf(ctx->out, "\n`%%name --help` or `%%name?` shows a magic's options.\n");
    return 0;
}

const mg_command mg_cmd_lsmagic = {
    .name = "lsmagic",
    .summary = "List the available magics",
    .usage = "Usage: %lsmagic\n\nLists every line magic (%name) and cell magic (%%name) with "
             "a one-line summary.",
    .flags = MG_LINE,
    .options = NULL,
    .run = run,
};
