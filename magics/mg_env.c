/* mg_env.c - %env: list the environment, show one variable, or set one
 * (`%env NAME=VALUE` or `%env NAME VALUE`). Shell commands (!cmd) and magics started
 * afterwards see the change. */
#include <stdlib.h>
#include <string.h>

#include "mg.h"

extern char **environ;

static int cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int valid_name(const char *s, size_t n)
{
    if (!n) return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '=' || s[i] == 0) return 0;
    return 1;
}

static int set(mg_ctx *ctx, const char *name, const char *value, mg_error *err)
{
    if (!valid_name(name, strlen(name)))
        return mg_fail(err, "UsageError", "%%env: invalid variable name '%s'", name);
    if (setenv(name, value, 1) < 0)
        return mg_fail(err, "OSError", "%%env: cannot set %s", name);
    mg_printf(ctx->out, "env: %s=%s\n", name, value);
    return 0;
}

static int run(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    if (args->npos == 0) {
        size_t n = 0;
        while (environ && environ[n]) n++;
        char **copy = malloc((n + 1) * sizeof *copy);
        if (!copy) return mg_fail(err, "MemoryError", "%%env: out of memory");
        memcpy(copy, environ, n * sizeof *copy);
        qsort(copy, n, sizeof *copy, cmp);
        for (size_t i = 0; i < n; i++) mg_printf(ctx->out, "%s\n", copy[i]);
        free(copy);
        return 0;
    }
    const char *a = args->pos[0];
    const char *eq = strchr(a, '=');
    if (eq) {
        if (args->npos > 1)
            return mg_fail(err, "UsageError", "%%env: use either NAME=VALUE or NAME VALUE");
        char *name = strndup(a, (size_t)(eq - a));
        if (!name) return mg_fail(err, "MemoryError", "%%env: out of memory");
        int rc = set(ctx, name, eq + 1, err);
        free(name);
        return rc;
    }
    if (args->npos == 2) return set(ctx, a, args->pos[1], err);
    if (args->npos > 2)
        return mg_fail(err, "UsageError", "%%env: too many arguments (quote a value with spaces)");
    const char *v = getenv(a);
    if (!v) return mg_fail(err, "UsageError", "%%env: environment does not have key: %s", a);
    mg_printf(ctx->out, "%s\n", v);
    return 0;
}

const mg_command mg_cmd_env = {
    .name = "env",
    .summary = "Get, set or list environment variables",
    .usage = "Usage: %env               list every variable\n"
             "       %env NAME          show one\n"
             "       %env NAME=VALUE    set one (also: %env NAME VALUE)\n\n"
             "Commands run with !cmd afterwards see the new value.\n"
             "Example: %env OMP_NUM_THREADS=2",
    .flags = MG_LINE,
    .options = NULL,
    .run = run,
};
