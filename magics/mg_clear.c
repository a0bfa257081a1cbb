/* mg_clear.c - %clear: clear the cell's output (clear_output), optionally only when
 * the next output arrives (--wait), which is how a loop redraws without flicker. */
#include "mg.h"

static const mg_option options[] = {
    {"--wait", MG_OPT_FLAG, NULL, "clear when the next output arrives (no flicker)", NULL},
    {NULL, 0, NULL, NULL, NULL},
};

static int run(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    if (args->npos) return mg_fail(err, "UsageError", "%%clear takes no arguments (see --wait)");
    if (ctx->out->clear) ctx->out->clear(ctx->out->user, mg_args_has(args, "--wait"));
    return 0;
}

const mg_command mg_cmd_clear = {
    .name = "clear",
    .summary = "Clear the cell's output",
    .usage = "Usage: %clear [--wait]\n\n"
             "Clears what the cell has shown so far. With --wait the output is cleared\n"
             "only when the next output arrives, so a redrawn table does not flicker.",
    .flags = MG_LINE,
    .options = options,
    .run = run,
};
