/* kl_complete.c - is_complete_request and complete_request.
 * is_complete: incomplete inside open brackets, an open triple-quoted string, after
 * a trailing backslash, or in a cell magic until a blank line; invalid when the
 * code cannot parse; complete otherwise.
 * complete: magic names after % / %%, option names (and choice values) of a magic,
 * $variables in magic/shell lines, variable names, builtins and keywords elsewhere,
 * methods after `value.`. Cursor positions count code points, as the protocol says. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kl_internal.h"

const char *kl_engine_is_complete(kl_engine *e, const char *code, const char **indent)
{
    (void)e;
    *indent = "";
    if (!code || !klp_utf8_valid(code, strlen(code))) return "invalid";
    const char *p = code;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (p[0] == '%' && p[1] == '%') {
        size_t n = strlen(code);
        return n >= 2 && code[n - 1] == '\n' && code[n - 2] == '\n' ? "complete" : "incomplete";
    }
    klp_arena *a = klp_arena_create();
    if (!a) return "unknown";
    klp_toks toks;
    klp_prog prog;
    klp_err err = {0};
    const char *r = "complete";
    if (klp_lex(a, code, &toks, &err) < 0) r = toks.incomplete ? "incomplete" : "invalid";
    else if (klp_parse(a, &toks, &prog, &err) < 0) r = "invalid";
    klp_arena_destroy(a);
    return r;
}

static int is_word(unsigned char c) { return isalnum(c) || c == '_' || c >= 0x80; }

static void add(json_t *m, const char *word, size_t wl, const char *pre, const char *name)
{
    char buf[300];
    snprintf(buf, sizeof buf, "%s%s", pre, name);
    if (strncmp(buf, word, wl)) return;
    size_t i;
    json_t *x;
    json_array_foreach(m, i, x) if (!strcmp(json_string_value(x), buf)) return;
    json_array_append_new(m, json_string(buf));
}

/* Each word of "a|b|c" that starts with word[0..wl). */
static void add_choices(json_t *m, const char *word, size_t wl, const char *choices)
{
    const char *c = choices ? choices : "";
    while (*c) {
        const char *bar = strchr(c, '|');
        size_t cl = bar ? (size_t)(bar - c) : strlen(c);
        char one[128];
        snprintf(one, sizeof one, "%.*s", (int)(cl < 127 ? cl : 127), c);
        add(m, word, wl, "", one);
        c = bar ? bar + 1 : c + cl;
    }
}

/* Start of the word ending at cur (after a space, '=' or a quote). */
static size_t token_start(const char *code, size_t ls, size_t cur)
{
    size_t t = cur;
    while (t > ls && !strchr(" \t='\"", code[t - 1])) t--;
    return t;
}

static const mg_command *magic_of_line(const char *line, size_t len)
{
    const char *p = line;
    while (p < line + len && *p == '%') p++;
    char name[64];
    size_t n = 0;
    while (p < line + len && is_word((unsigned char)*p) && n < sizeof name - 1) name[n++] = *p++;
    name[n] = 0;
    return mg_registry_find(name);
}

json_t *kl_engine_complete(kl_engine *e, const char *code, int cursor_pos)
{
    if (!code) code = "";
    size_t len = strlen(code);
    int valid = klp_utf8_valid(code, len);
    size_t cur = valid && cursor_pos >= 0 ? klp_utf8_offset(code, len, (size_t)cursor_pos) : len;
    if (!valid) cur = 0;
    size_t ls = cur;
    while (ls > 0 && code[ls - 1] != '\n') ls--;
    size_t ws = cur; /* start of the word being completed */
    while (ws > ls && (is_word((unsigned char)code[ws - 1]) || code[ws - 1] == '-' ||
                       code[ws - 1] == '%' || code[ws - 1] == '$'))
        ws--;
    const char *word = code + ws;
    size_t wl = cur - ws;
    json_t *m = json_array();
    size_t lead = ls;
    while (lead < cur && (code[lead] == ' ' || code[lead] == '\t')) lead++;
    int magic_line = code[lead] == '%' && lead < cur;
    int shell_line = code[lead] == '!' && lead < cur;
    size_t n = 0;
    if (magic_line && ws == lead) {
        const mg_command *const *all = mg_registry_all(&n);
        for (size_t i = 0; i < n; i++) {
            int cell_only = (all[i]->flags & MG_CELL) && !(all[i]->flags & MG_LINE);
            if (!cell_only) add(m, word, wl, "%", all[i]->name);
            if (all[i]->flags & MG_CELL) add(m, word, wl, "%%", all[i]->name);
        }
    } else if ((magic_line || shell_line) && wl && word[0] == '$') {
        const char *k;
        json_t *v;
        json_object_foreach(e->vars, k, v) add(m, word, wl, "$", k);
    } else if (magic_line) {
        const mg_command *cmd = magic_of_line(code + lead, cur - lead);
        /* the previous word: an option taking a choice? */
        size_t pe = ws;
        while (pe > lead && (code[pe - 1] == ' ' || code[pe - 1] == '=')) pe--;
        size_t ps = pe;
        while (ps > lead && !isspace((unsigned char)code[ps - 1])) ps--;
        const mg_option *prev = NULL;
        for (const mg_option *o = cmd ? cmd->options : NULL; o && o->name;
             o = mg_option_next(cmd, o))
            if (pe > ps && strlen(o->name) == pe - ps && !strncmp(o->name, code + ps, pe - ps))
                prev = o;
        /* the first positional word (%dataset NAME): the magic's known values */
        size_t ts = token_start(code, ls, cur), fw = lead + 1;
        while (fw < cur && !isspace((unsigned char)code[fw])) fw++; /* end of "%name" */
        while (fw < cur && isspace((unsigned char)code[fw])) fw++;  /* the first word */
        int at_first = cmd && cmd->positional && ts == fw && (ts == cur || code[ts] != '-');
        if (prev && prev->kind == MG_OPT_CHOICE && prev->choices) {
            add_choices(m, word, wl, prev->choices);
        } else if (cmd && (wl == 0 || word[0] == '-')) {
            if (at_first && ts == cur) add_choices(m, "", 0, cmd->positional);
            for (const mg_option *o = cmd->options; o && o->name; o = mg_option_next(cmd, o))
                add(m, word, wl, "", o->name);
            add(m, word, wl, "", "--help");
        } else if (at_first) {
            ws = ts;
            add_choices(m, code + ws, cur - ws, cmd->positional);
        }
    } else if (ws > ls && code[ws - 1] == '.' && !shell_line) {
        /* value.method: find the name before the dot */
        size_t ne = ws - 1, nb = ne;
        while (nb > ls && is_word((unsigned char)code[nb - 1])) nb--;
        char name[257];
        json_t *v = NULL;
        if (ne > nb && ne - nb < sizeof name) {
            memcpy(name, code + nb, ne - nb);
            name[ne - nb] = 0;
            v = json_object_get(e->vars, name);
        }
        size_t i = 0;
        for (const char *meth; (meth = klp_method_name(v, &i));) add(m, word, wl, "", meth);
    } else if (!shell_line && wl && !isdigit((unsigned char)word[0])) {
        const char *k;
        json_t *v;
        json_object_foreach(e->vars, k, v) add(m, word, wl, "", k);
        for (size_t i = 0; klp_builtin_name(i); i++) add(m, word, wl, "", klp_builtin_name(i));
        static const char *const kws[] = {"True", "False", "None", "and", "or",   "not", "in",
                                          "is",   "if",    "else", "del", "pass", NULL};
        for (int i = 0; kws[i]; i++) add(m, word, wl, "", kws[i]);
    }
    size_t start_cp = klp_utf8_len(code, ws), end_cp = klp_utf8_len(code, cur);
    return json_pack("{s:o, s:I, s:I, s:{}}", "matches", m, "cursor_start", (json_int_t)start_cp,
                     "cursor_end", (json_int_t)end_cp, "metadata");
}

json_t *kl_engine_inspect(kl_engine *e, const char *code, int cursor_pos, int detail_level)
{
    (void)detail_level;
    if (!code || !klp_utf8_valid(code, strlen(code))) return NULL;
    size_t len = strlen(code);
    size_t cur = cursor_pos >= 0 ? klp_utf8_offset(code, len, (size_t)cursor_pos) : len;
    size_t s = cur, t = cur;
    while (s > 0 && (is_word((unsigned char)code[s - 1]) || code[s - 1] == '%')) s--;
    while (t < len && is_word((unsigned char)code[t])) t++;
    if (t == s) {
        /* the cursor may sit just after "name(" or on a '?' */
        while (s > 0 && (code[s - 1] == '(' || code[s - 1] == '?' || code[s - 1] == ' ')) s--;
        t = s;
        while (s > 0 && (is_word((unsigned char)code[s - 1]) || code[s - 1] == '%')) s--;
    }
    if (t <= s || t - s > 256) return NULL;
    char name[260];
    memcpy(name, code + s, t - s);
    name[t - s] = 0;
    char *text = klp_help_text(e, name);
    if (!text) return NULL;
    json_t *r = json_pack("{s:s}", "text/plain", text);
    free(text);
    return r;
}
