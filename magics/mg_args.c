/* mg_args.c - the one argument parser every magic shares.
 * Splits the (already interpolated) argument string into shell-like words
 * ('single' quotes literal, "double" quotes with \" \\ escapes, backslash escapes
 * outside quotes), then matches `--opt value` / `--opt=value` against the magic's
 * option table and checks the values' kinds. Every error names the magic and the
 * option (and suggests the nearest option name). All strings live in one block,
 * args->storage, freed by mg_args_deinit. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg.h"

/* Splits line into words written into buf (NUL-separated); returns the count or -1
 * on an unterminated quote (*bad_quote set). */
static int split_words(const char *line, char *buf, char **words, int max, char *bad_quote)
{
    int n = 0;
    const char *p = line;
    char *w = buf;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
        if (!*p) break;
        if (n == max) return -2;
        words[n++] = w;
        while (*p && !(*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) {
            if (*p == '\'' || *p == '"') {
                char q = *p++;
                while (*p && *p != q) {
                    if (q == '"' && *p == '\\' && (p[1] == '"' || p[1] == '\\')) p++;
                    *w++ = *p++;
                }
                if (!*p) {
                    *bad_quote = q;
                    return -1;
                }
                p++;
            } else if (*p == '\\' && p[1]) {
                p++;
                *w++ = *p++;
            } else {
                *w++ = *p++;
            }
        }
        *w++ = 0;
    }
    return n;
}

static int is_number(const char *s)
{
    if (*s == '-' || *s == '+') s++;
    return isdigit((unsigned char)*s) || (*s == '.' && isdigit((unsigned char)s[1]));
}

size_t mg_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 40 || lb > 40) return 99;
    size_t d[41][41];
    for (size_t i = 0; i <= la; i++) d[i][0] = i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            d[i][j] = best;
        }
    return d[la][lb];
}

static int unknown_option(const mg_command *cmd, const char *opt, mg_error *err)
{
    const char *best = NULL;
    size_t bd = 99;
    for (const mg_option *o = cmd->options; o && o->name; o = mg_option_next(cmd, o)) {
        size_t d = mg_edit_distance(opt, o->name);
        if (!strncmp(o->name, opt, strlen(opt)) && strlen(opt) > 2) d = 1;
        if (d < bd) bd = d, best = o->name;
    }
    if (best && bd <= 3)
        return mg_fail(err, "UsageError", "%%%s: unknown option %s (did you mean %s?)", cmd->name,
                       opt, best);
    return mg_fail(err, "UsageError", "%%%s: unknown option %s (see %%%s --help)", cmd->name, opt,
                   cmd->name);
}

/* An optional flag value: w's first comma-separated item starts with one of starts
 * ("crop:|flip|none"). */
static int takes_value(const char *starts, const char *w)
{
    size_t item = strcspn(w, ",");
    for (const char *s = starts; *s;) {
        size_t sl = strcspn(s, "|");
        if (sl > 0 && sl <= item && !strncmp(s, w, sl)) return 1;
        s += sl + (s[sl] == '|');
    }
    return 0;
}

static int check_value(const mg_command *cmd, const mg_option *o, const char *v, mg_error *err)
{
    char *end;
    errno = 0;
    switch (o->kind) {
    case MG_OPT_INT:
        strtol(v, &end, 10);
        if (!*v || *end || errno == ERANGE)
            return mg_fail(err, "ValueError", "%%%s: option %s expects an integer, got '%s'",
                           cmd->name, o->name, v);
        return 0;
    case MG_OPT_FLOAT: {
        double d = strtod(v, &end);
        if (!*v || *end || !isfinite(d) || isspace((unsigned char)*v))
            return mg_fail(err, "ValueError", "%%%s: option %s expects a number, got '%s'",
                           cmd->name, o->name, v);
        return 0;
    }
    case MG_OPT_CHOICE: {
        const char *c = o->choices ? o->choices : "";
        size_t vl = strlen(v);
        while (*c) {
            const char *bar = strchr(c, '|');
            size_t cl = bar ? (size_t)(bar - c) : strlen(c);
            if (cl == vl && !strncmp(c, v, vl)) return 0;
            c = bar ? bar + 1 : c + cl;
        }
        char list[512];
        snprintf(list, sizeof list, "%s", o->choices ? o->choices : "");
        for (char *p = list; *p; p++)
            if (*p == '|') *p = ',';
        return mg_fail(err, "ValueError", "%%%s: option %s must be one of {%s}, got '%s'",
                       cmd->name, o->name, list, v);
    }
    default: return 0;
    }
}

int mg_args_parse(const mg_command *cmd, const char *line, const char *body, mg_args *args,
                  mg_error *err)
{
    memset(args, 0, sizeof *args);
    args->body = body;
    if (!line) line = "";
    args->raw = line;
    size_t len = strlen(line);
    args->storage = malloc(len + 2 * MG_MAX_ARGS + 16);
    if (!args->storage) return mg_fail(err, "MemoryError", "%%%s: out of memory", cmd->name);
    char *words[MG_MAX_ARGS * 2];
    char q = 0;
    int n = split_words(line, args->storage, words, MG_MAX_ARGS * 2, &q);
    if (n == -1) {
        mg_args_deinit(args);
        return mg_fail(err, "UsageError", "%%%s: unterminated %s quote in the arguments", cmd->name,
                       q == '"' ? "double" : "single");
    }
    if (n == -2) {
        mg_args_deinit(args);
        return mg_fail(err, "UsageError", "%%%s: too many arguments (at most %d)", cmd->name,
                       MG_MAX_ARGS);
    }
    int only_pos = 0;
    for (int i = 0; i < n; i++) {
        char *w = words[i];
        if (!only_pos && !strcmp(w, "--")) {
            only_pos = 1;
            continue;
        }
        if (only_pos || w[0] != '-' || !w[1] || is_number(w)) {
            if (args->npos == MG_MAX_ARGS) goto too_many;
            args->pos[args->npos++] = w;
            continue;
        }
        char *eq = strchr(w, '=');
        if (eq) *eq = 0;
        const mg_option *o = NULL;
        for (const mg_option *c = cmd->options; c && c->name; c = mg_option_next(cmd, c))
            if (!strcmp(c->name, w)) o = c;
        if (!o) {
            if (eq) *eq = '=';
            char name[128];
            snprintf(name, sizeof name, "%.*s", (int)(eq ? (size_t)(eq - w) : strlen(w)), w);
            mg_args_deinit(args);
            return unknown_option(cmd, name, err);
        }
        char *val;
        if (o->kind == MG_OPT_FLAG && o->choices) { /* a flag that may take a value */
            val = eq ? eq + 1 : w + strlen(w);
            if (!eq && !only_pos && i + 1 < n && takes_value(o->choices, words[i + 1]))
                val = words[++i];
        } else if (o->kind == MG_OPT_FLAG) {
            if (eq) {
                mg_fail(err, "UsageError", "%%%s: option %s takes no value", cmd->name, o->name);
                mg_args_deinit(args);
                return -1;
            }
            val = w + strlen(w); /* "" */
        } else if (eq) {
            val = eq + 1;
        } else if (i + 1 < n) {
            val = words[++i];
        } else {
            mg_fail(err, "UsageError", "%%%s: option %s needs a value%s%s", cmd->name, o->name,
                    o->metavar ? " " : "", o->metavar ? o->metavar : "");
            mg_args_deinit(args);
            return -1;
        }
        if (check_value(cmd, o, val, err) < 0) {
            mg_args_deinit(args);
            return -1;
        }
        if (args->nopt == MG_MAX_ARGS) goto too_many;
        args->opt[args->nopt] = o;
        args->val[args->nopt++] = val;
    }
    return 0;
too_many:
    mg_args_deinit(args);
    return mg_fail(err, "UsageError", "%%%s: too many arguments (at most %d)", cmd->name,
                   MG_MAX_ARGS);
}

void mg_args_deinit(mg_args *args)
{
    if (!args) return;
    free(args->storage);
    memset(args, 0, sizeof *args);
}

const char *mg_args_get(const mg_args *args, const char *name)
{
    const char *v = NULL;
    for (int i = 0; i < args->nopt; i++)
        if (!strcmp(args->opt[i]->name, name)) v = args->val[i];
    return v;
}

int mg_args_has(const mg_args *args, const char *name) { return mg_args_get(args, name) != NULL; }

int mg_args_int(const mg_args *args, const char *name, long def, long *out, mg_error *err)
{
    const char *v = mg_args_get(args, name);
    if (!v) {
        *out = def;
        return 0;
    }
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (!*v || *end || errno == ERANGE)
        return mg_fail(err, "ValueError", "option %s expects an integer, got '%s'", name, v);
    *out = x;
    return 0;
}

int mg_args_float(const mg_args *args, const char *name, double def, double *out, mg_error *err)
{
    const char *v = mg_args_get(args, name);
    if (!v) {
        *out = def;
        return 0;
    }
    char *end;
    double x = strtod(v, &end);
    if (!*v || *end || !isfinite(x))
        return mg_fail(err, "ValueError", "option %s expects a number, got '%s'", name, v);
    *out = x;
    return 0;
}

int mg_args_wants_help(const char *line)
{
    char *buf = malloc(strlen(line ? line : "") + 2 * MG_MAX_ARGS + 16);
    char *words[MG_MAX_ARGS * 2];
    char q = 0;
    if (!buf) return 0;
    int n = split_words(line ? line : "", buf, words, MG_MAX_ARGS * 2, &q);
    int want = 0;
    for (int i = 0; i < n; i++) {
        if (!strcmp(words[i], "--")) break;
        if (!strcmp(words[i], "--help") || !strcmp(words[i], "-h")) want = 1;
    }
    free(buf);
    return want;
}

char *mg_command_help(const mg_command *cmd)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f) return NULL;
    const char *usage = cmd->usage ? cmd->usage : "";
    if (*usage) {
        fputs(usage, f);
        if (usage[strlen(usage) - 1] != '\n') fputc('\n', f);
    } else {
        fprintf(f, "%s%s\n\n%s\n", cmd->flags & MG_LINE ? "%" : "%%", cmd->name,
                cmd->summary ? cmd->summary : "");
    }
    fputs("\nOptions:\n", f);
    for (const mg_option *o = cmd->options; o && o->name; o = mg_option_next(cmd, o)) {
        char left[96];
        if (o->kind == MG_OPT_FLAG && o->choices && o->metavar)
            snprintf(left, sizeof left, "%s [%s]", o->name, o->metavar);
        else if (o->kind == MG_OPT_FLAG) snprintf(left, sizeof left, "%s", o->name);
        else if (o->kind == MG_OPT_CHOICE && o->choices)
            snprintf(left, sizeof left, "%s {%s}", o->name, o->choices);
        else snprintf(left, sizeof left, "%s %s", o->name, o->metavar ? o->metavar : "VALUE");
        for (char *p = left; *p; p++)
            if (*p == '|' && o->kind == MG_OPT_CHOICE) *p = ',';
        char def[128];
        const char *d = cmd->option_default ? cmd->option_default(o, def, sizeof def) : NULL;
        fprintf(f, "  %-26s %s%s%s%s\n", left, o->help ? o->help : "", d && *d ? " (" : "",
                d && *d ? d : "", d && *d ? ")" : "");
    }
    fprintf(f, "  %-26s %s\n", "--help", "show this help");
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}
