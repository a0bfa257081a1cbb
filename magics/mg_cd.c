/* mg_cd.c - %cd [DIR]: change the kernel's working directory (no argument: home;
 * `-`: the previous directory; a leading ~ is the home directory). Prints the new
 * directory, as IPython does. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mg.h"

static int run(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    if (args->npos > 1)
        return mg_fail(err, "UsageError", "%%cd takes one directory (quote paths with spaces)");
    const char *home = getenv("HOME");
    const char *target = args->npos ? args->pos[0] : home;
    char *prev = mg_session_get(ctx->session, "cd.previous");
    char path[4096];
    if (!target) return mg_fail(err, "UsageError", "%%cd: HOME is not set");
    if (!strcmp(target, "-")) {
        if (!prev) return mg_fail(err, "UsageError", "%%cd -: no previous directory");
        target = prev;
    }
    if (target[0] == '~' && (target[1] == '/' || !target[1]) && home) {
        snprintf(path, sizeof path, "%s%s", home, target + 1);
        target = path;
    }
    char *old = getcwd(NULL, 0);
    if (chdir(target) < 0) {
        int e = errno;
        free(old);
        return mg_fail(err, e == ENOENT ? "FileNotFoundError" : "OSError", "%%cd: %s: %s", target,
                       strerror(e));
    }
    if (old && mg_session_set(ctx->session, "cd.previous", old, free) < 0)
        mg_eprintf(ctx->out, "warning: %%cd: out of memory: `%%cd -` cannot come back here\n");
    char *now = getcwd(NULL, 0);
    mg_printf(ctx->out, "%s\n", now ? now : target);
    free(now);
    return 0;
}

const mg_command mg_cmd_cd = {
    .name = "cd",
    .summary = "Change the working directory",
    .usage = "Usage: %cd [DIR]\n\nChanges the kernel's working directory: no DIR goes home, "
             "`%cd -` goes back to the previous one.\nExample: %cd /data/runs",
    .flags = MG_LINE,
    .options = NULL,
    .run = run,
};
