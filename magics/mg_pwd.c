/* mg_pwd.c - %pwd: print the kernel's working directory. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mg.h"

static int run(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    if (args->npos) return mg_fail(err, "UsageError", "%%pwd takes no arguments");
    char *cwd = getcwd(NULL, 0);
    if (!cwd) return mg_fail(err, "OSError", "%%pwd: %s", strerror(errno));
    mg_printf(ctx->out, "%s\n", cwd);
    free(cwd);
    return 0;
}

const mg_command mg_cmd_pwd = {
    .name = "pwd",
    .summary = "Print the working directory",
    .usage = "Usage: %pwd\n\nPrints the kernel's current working directory.",
    .flags = MG_LINE,
    .options = NULL,
    .run = run,
};
