/* mg_who.c - %who [TYPE...]: the names of the cell language's variables, sorted,
 * optionally only those of the given types (int float str bool list dict NoneType).
 * Names starting with '_' are internal (e.g. _exit_code) and not listed. The types are
 * the cell language's (mg_host.type_name). */
#include <stdlib.h>
#include <string.h>

#include "mg.h"

static int cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int run(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    static const char *const types[] = {"int",      "float", "str",  "bool",
                                        "NoneType", "list",  "dict", NULL};
    for (int i = 0; i < args->npos; i++) {
        int ok = 0;
        for (int t = 0; types[t]; t++) ok |= !strcmp(types[t], args->pos[i]);
        if (!ok)
            return mg_fail(err, "UsageError",
                           "%%who: unknown type '%s' (one of int float str "
                           "bool NoneType list dict)",
                           args->pos[i]);
    }
    json_t *names = ctx->host->var_names(ctx->host->user);
    if (!names) return mg_fail(err, "MemoryError", "%%who: out of memory");
    size_t n = json_array_size(names), k = 0;
    const char **keep = malloc((n + 1) * sizeof *keep);
    if (!keep) {
        json_decref(names);
        return mg_fail(err, "MemoryError", "%%who: out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        const char *name = json_string_value(json_array_get(names, i));
        if (!name || name[0] == '_') continue;
        json_t *v = ctx->host->var_get(ctx->host->user, name);
        int ok = args->npos == 0;
        for (int t = 0; v && t < args->npos; t++)
            ok |= !strcmp(ctx->host->type_name(ctx->host->user, v), args->pos[t]);
        if (ok) keep[k++] = name;
    }
    qsort(keep, k, sizeof *keep, cmp);
    if (!k)
        mg_printf(ctx->out, "%s\n",
                  args->npos ? "No variables match your requested type."
                             : "Interactive namespace is empty.");
    for (size_t i = 0; i < k; i++) mg_printf(ctx->out, "%s%s", keep[i], i + 1 < k ? "\t" : "\n");
    free(keep);
    json_decref(names);
    return 0;
}

const mg_command mg_cmd_who = {
    .name = "who",
    .summary = "List the variables",
    .usage = "Usage: %who [TYPE...]\n\nLists the names of the variables, sorted; with types "
             "(int float str bool NoneType list dict), only those.\nExample: %who int float",
    .flags = MG_LINE,
    .options = NULL,
    .run = run,
};
