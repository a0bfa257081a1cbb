/* kl_magic.c - `%magic args`, `%%magic args\nbody` and `NAME?` help.
 * Looks the magic up in the registry (magics/mg_registry.c), interpolates $name and
 * {expr} in its arguments (unless the magic says MG_NO_VAR_EXPAND), answers
 * --help itself, parses the options with the shared parser and runs it with the
 * engine's host and session. Unknown magics are a UsageError naming them. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kl_internal.h"

static int dispatch(kl_engine *e, const char *text, const char *body, const mg_out *out, int line,
                    klp_err *err)
{
    int cell = body != NULL;
    const char *p = text;
    while (*p == ' ' || *p == '\t') p++;
    const char *ns = p;
    while (isalnum((unsigned char)*p) || *p == '_') p++;
    size_t nlen = (size_t)(p - ns);
    char name[64];
    if (nlen == 0 || nlen >= sizeof name || (*p && *p != ' ' && *p != '\t' && *p != '\r'))
        return klp_fail(err, line, 0, "UsageError", "%s needs a magic name, as in %s%s",
                        cell ? "%%" : "%", cell ? "%%" : "%", cell ? "time" : "lsmagic");
    memcpy(name, ns, nlen);
    name[nlen] = 0;
    const mg_command *cmd = mg_registry_find(name);
    if (!cmd) {
        const char *near = mg_registry_suggest(name);
        const mg_command *nc = near ? mg_registry_find(near) : NULL;
        int near_cell = cell || (nc && (nc->flags & MG_CELL) && !(nc->flags & MG_LINE));
        return klp_fail(err, line, 0, "UsageError", "%s `%s%s` not found.%s%s%s%s",
                        cell ? "Cell magic" : "Line magic function", cell ? "%%" : "%", name,
                        near ? " Did you mean `" : "", near ? (near_cell ? "%%" : "%") : "",
                        near ? near : "", near ? "`?" : "");
    }
    if (cell && !(cmd->flags & MG_CELL))
        return klp_fail(
            err, line, 0, "UsageError",
            "`%%%s` is a line magic, not a cell magic (write it as %%%s on a line of its own)",
            name, name);
    if (!cell && !(cmd->flags & MG_LINE))
        return klp_fail(err, line, 0, "UsageError",
                        "`%%%%%s` is a cell magic: put %%%%%s on the first line of the cell", name,
                        name);
    while (*p == ' ' || *p == '\t') p++;
    klp_err name_err = {0};
    char undef[64] = "";
    char *args = cmd->flags & MG_NO_VAR_EXPAND
                     ? strdup(p)
                     : klp_interpolate_args(e, p, !(cmd->flags & MG_RAW_ARGS), &name_err, undef,
                                            sizeof undef);
    if (!args && name_err.ename[0])
        return klp_fail(err, line, 0, "NameError", "%s (in %s%s's arguments)", name_err.evalue,
                        cell ? "%%" : "%", name);
    if (!args)
        return klp_fail(
            err, line, 0, "MemoryError",
            "the arguments are too large after $name/{expr} expansion (or out of memory)");
    size_t al = strlen(args);
    while (al && (args[al - 1] == '\r' || args[al - 1] == ' ')) args[--al] = 0;
    int rc = 0;
    if (!(cmd->flags & MG_RAW_ARGS) ? mg_args_wants_help(args)
                                    : (!strcmp(args, "--help") || !strcmp(args, "-h"))) {
        char *help = mg_command_help(cmd);
        if (help && out && out->stream) out->stream(out->user, "stdout", help, strlen(help));
        free(help);
        free(args);
        return 0;
    }
    mg_args margs;
    mg_error merr;
    memset(&merr, 0, sizeof merr);
    if (cmd->flags & MG_RAW_ARGS) {
        memset(&margs, 0, sizeof margs);
        margs.raw = args;
        margs.body = body;
    }
    if (!(cmd->flags & MG_RAW_ARGS) && mg_args_parse(cmd, args, body, &margs, &merr) < 0) {
        /* `--lr $lr` with lr undefined stays "$lr", which then fails to parse */
        int hint = undef[0] && strstr(merr.evalue, undef);
        rc = klp_fail(err, line, 0, merr.ename[0] ? merr.ename : "UsageError", "%s%s%s%s",
                      merr.evalue, hint ? " (is `" : "", hint ? undef : "",
                      hint ? "` defined?)" : "");
    } else {
        mg_ctx ctx = {.out = out,
                      .host = &e->host,
                      .session = e->session,
                      .cell_metadata = e->cell_metadata,
                      .settings = &e->settings};
        klp_err *nested = &e->nested;
        nested->set = 0;
        if (cmd->run(&ctx, &margs, &merr) < 0) {
            if (nested->set && !strcmp(nested->ename, merr.ename) && nested->line > 0) {
                /* the error came from code the magic ran (%%time's body, %time's
                 * statement): point at that code's line in the cell */
                *err = *nested;
                err->line = cell ? line + nested->line : line;
                if (!cell) err->col = err->end_col = 0;
                rc = -1;
            } else {
                /* a cell magic naming its body's line at fault ("cell line N: ", mg.h):
                 * the traceback points there */
                const char *cl = cell ? strstr(merr.evalue, ": cell line ") : NULL;
                int at = line, n = 0;
                if (cl && sscanf(cl, ": cell line %d: ", &n) == 1 && n > 1) at = line + n - 1;
                rc = klp_fail(err, at, 0, merr.ename[0] ? merr.ename : "UsageError", "%s",
                              merr.evalue[0] ? merr.evalue : "the magic failed");
            }
        }
        mg_args_deinit(&margs);
    }
    free(args);
    return rc;
}

int klp_magic_line(klp_ctx *c, const klp_node *n)
{
    return dispatch(c->eng, n->str, NULL, c->out, n->line, c->err);
}

int klp_magic_cell(kl_engine *e, const char *code, const mg_out *out, klp_err *err)
{
    /* code starts with "%%"; the magic's line ends at the first newline */
    const char *nl = strchr(code, '\n');
    size_t len = nl ? (size_t)(nl - code) : strlen(code);
    char *first = malloc(len + 1);
    if (!first) return klp_fail(err, 1, 0, "MemoryError", "out of memory");
    memcpy(first, code + 2, len - 2);
    first[len - 2] = 0;
    /* `%%time?` asks for help */
    size_t fl = strlen(first);
    while (fl && (first[fl - 1] == ' ' || first[fl - 1] == '\r')) first[--fl] = 0;
    int rc;
    if (fl && first[fl - 1] == '?' && !strchr(first, ' ')) {
        first[fl - 1] = 0;
        klp_ctx c = {.eng = e, .out = out, .err = err};
        char name[80];
        snprintf(name, sizeof name, "%%%.70s", first);
        rc = klp_help(&c, name);
    } else {
        /* count the lines before the magic so errors point at the right one */
        rc = dispatch(e, first, nl ? nl + 1 : "", out, 1, err);
    }
    free(first);
    return rc;
}

char *klp_help_text(kl_engine *e, const char *name)
{
    const char *n = name;
    int magic = 0;
    while (*n == '%') n++, magic = 1;
    const mg_command *cmd = mg_registry_find(n);
    json_t *v = magic ? NULL : json_object_get(e->vars, n);
    if (v) {
        kl_buf b = {0};
        kl_buf_printf(&b, "Name:  %s\nType:  %s\nValue: ", n, klp_type_name(v));
        klp_repr(&b, v);
        kl_buf_add(&b, "\n", 1);
        return b.oom ? (kl_buf_free(&b), NULL) : b.s;
    }
    if (cmd) return mg_command_help(cmd);
    const char *doc = magic ? NULL : klp_builtin_doc(n);
    if (doc) {
        kl_buf b = {0};
        kl_buf_printf(&b, "Builtin function %s\n\n%s\n", n, doc);
        return b.oom ? (kl_buf_free(&b), NULL) : b.s;
    }
    return NULL;
}

int klp_help(klp_ctx *c, const char *name)
{
    char *text = klp_help_text(c->eng, name);
    if (!text) {
        const char *n = name;
        while (*n == '%') n++;
        char msg[160];
        int k = snprintf(msg, sizeof msg, "Object `%.100s` not found.\n", n);
        if (c->out && c->out->stream) c->out->stream(c->out->user, "stdout", msg, (size_t)k);
        return 0;
    }
    if (c->out && c->out->stream) c->out->stream(c->out->user, "stdout", text, strlen(text));
    free(text);
    return 0;
}
