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

/* Strips surrounding whitespace and one level of matching quotes, in place. */
static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) s[--n] = 0;
    if (n >= 2 && (s[0] == '"' || s[0] == '\'') && s[n - 1] == s[0]) {
        s[n - 1] = 0;
        s++;
    }
    return s;
}

static int list_all(mg_ctx *ctx, mg_error *err)
{
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

/* The value is the rest of the line (spaces included), as in IPython. */
static int run(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    char *line = strdup(args->raw ? args->raw : "");
    if (!line) return mg_fail(err, "MemoryError", "%%env: out of memory");
    char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    int rc;
    size_t name_len = strcspn(p, " \t=");
    if (!*p) {
        rc = list_all(ctx, err);
    } else if (p[name_len] == '=' || p[name_len] == ' ' || p[name_len] == '\t') {
        char sep = p[name_len];
        p[name_len] = 0;
        char *value = p + name_len + 1;
        if (sep != '=') {
            while (*value == ' ' || *value == '\t') value++;
            if (*value == '=') value++;   /* "%env NAME = VALUE" */
        }
        value = trim(value);
        if (sep != '=' && !*value) {
            const char *v = getenv(p);
            rc = v ? (mg_printf(ctx->out, "%s\n", v), 0)
                   : mg_fail(err, "UsageError", "%%env: environment does not have key: %s", p);
        } else {
            rc = set(ctx, p, value, err);
        }
    } else {
        const char *v = getenv(p);
        rc = v ? (mg_printf(ctx->out, "%s\n", v), 0)
               : mg_fail(err, "UsageError", "%%env: environment does not have key: %s", p);
    }
    free(line);
    return rc;
}

const mg_command mg_cmd_env = {
    .name = "env",
    .summary = "Get, set or list environment variables",
    .usage = "Usage: %env               list every variable\n"
             "       %env NAME          show one\n"
             "       %env NAME=VALUE    set one (also: %env NAME VALUE)\n\n"
             "Commands run with !cmd afterwards see the new value.\n"
             "Example: %env OMP_NUM_THREADS=2",
    .flags = MG_LINE | MG_RAW_ARGS,
    .options = NULL,
    .run = run,
};
