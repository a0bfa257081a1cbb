/* mg_env.c - %env: list the environment, show one variable, or set one
 * (`%env NAME=VALUE` or `%env NAME VALUE`). Shell commands (!cmd) and magics started
 * afterwards see the change.
 *
 * Unlike IPython, %env never prints the value of a variable whose name says it holds a
 * credential (see is_secret), nor the user:password@ part of a URL: a notebook's
 * outputs are saved with it and shared. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "mg.h"
#include "rt_results.h"

#define HIDDEN "<hidden>"

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

/* Names that by convention hold credentials: AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
 * MLFLOW_TRACKING_PASSWORD, GITHUB_TOKEN, PGPASSWORD, *_API_KEY, ... (any case). */
static int is_secret(const char *name, size_t n)
{
    static const char *const marks[] = {"SECRET", "TOKEN",      "PASSWORD", "PASSWD",  "PASSPHRASE",
                                        "KEY",    "CREDENTIAL", "AUTH",     "PRIVATE", "COOKIE"};
    for (size_t m = 0; m < sizeof marks / sizeof *marks; m++) {
        size_t ml = strlen(marks[m]);
        for (size_t i = 0; i + ml <= n; i++) {
            size_t j = 0;
            while (j < ml && toupper((unsigned char)name[i + j]) == marks[m][j]) j++;
            if (j == ml) return 1;
        }
    }
    return 0;
}

/* Prints "<prefix>NAME=VALUE\n" (or VALUE alone when name is NULL) as it may be shown. */
static void show(mg_ctx *ctx, const char *prefix, const char *name, size_t name_len,
                 const char *value)
{
    const char *shown = value;
    char *redacted = NULL;
    if (name && is_secret(name, name_len)) {
        shown = HIDDEN;
    } else if (strstr(value, "://") && (redacted = malloc(strlen(value) + 1))) {
        rt_results_redact(value, redacted, strlen(value) + 1);
        shown = redacted;
    }
    if (name) mg_printf(ctx->out, "%s%.*s=%s\n", prefix, (int)name_len, name, shown);
    else mg_printf(ctx->out, "%s\n", shown);
    free(redacted);
}

static int show_one(mg_ctx *ctx, const char *name, mg_error *err)
{
    const char *v = getenv(name);
    if (!v) return mg_fail(err, "UsageError", "%%env: environment does not have key: %s", name);
    if (is_secret(name, strlen(name)))
        mg_printf(ctx->out,
                  HIDDEN " (set, %zu characters; %%env does not print variables "
                         "whose names look like credentials)\n",
                  strlen(v));
    else show(ctx, "", NULL, 0, v);
    return 0;
}

static int set(mg_ctx *ctx, const char *name, const char *value, mg_error *err)
{
    if (!valid_name(name, strlen(name)))
        return mg_fail(err, "UsageError", "%%env: invalid variable name '%s'", name);
    if (setenv(name, value, 1) < 0) return mg_fail(err, "OSError", "%%env: cannot set %s", name);
    show(ctx, "env: ", name, strlen(name), value);
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
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(copy[i], '=');
        if (eq) show(ctx, "", copy[i], (size_t)(eq - copy[i]), eq + 1);
        else mg_printf(ctx->out, "%s\n", copy[i]);
    }
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
            if (*value == '=') value++; /* "%env NAME = VALUE" */
        }
        value = trim(value);
        rc = sep != '=' && !*value ? show_one(ctx, p, err) : set(ctx, p, value, err);
    } else {
        rc = show_one(ctx, p, err);
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
             "Commands run with !cmd afterwards see the new value. Values of variables\n"
             "whose names contain SECRET, TOKEN, PASSWORD, KEY, AUTH, CREDENTIAL (and the\n"
             "like) are shown as <hidden>, and user:password@ is left out of URLs.\n"
             "Example: %env OMP_NUM_THREADS=2",
    .flags = MG_LINE | MG_RAW_ARGS,
    .options = NULL,
    .run = run,
};
