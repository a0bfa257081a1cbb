/* kl_interp.c - IPython-style variable expansion in magic arguments and shell
 * lines: `$name` becomes str(name), `{expr}` becomes str(expr); `$$` and `{{`/`}}`
 * are a literal `$`/`{`/`}`. The expanded text is capped at 16 MiB (NULL beyond). As
 * in IPython, an unknown name or an expression that fails is left exactly as written,
 * so `!echo $HOME` and `!awk '{print $1}'` reach the shell untouched. Magic arguments
 * (klp_interpolate_args) are stricter: a `{expr}` that raises NameError is that error
 * (`--lr {lr}` with lr undefined), and the first undefined `$name` is reported back so
 * a failing option can ask "is `$lr` defined?".
 *
 * An interpolated value is one value. Unlike IPython, which splices the text and then
 * splits words, a value is quoted for where it lands, so `name = 'x; id'` stays one
 * word in `!echo $name` and `filt = 'a --bogus'` stays one option value in
 * `%results --where $filt`. The quoting follows the quote state of the text around it
 * (unquoted, '...' or "..."), so `!echo "$name"` prints the value, not its quotes.
 * Shell lines quote for sh; magic options quote for mg_args' word splitter; a
 * MG_RAW_ARGS magic (it splits nothing) gets the value as it is. In shell lines,
 * `$!name` and `{!expr}` splice the raw text (IPython's behaviour) for whoever wants
 * the value re-split and re-interpreted by the shell. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "kl_internal.h"

#define MAX_EXPANDED (16u << 20) /* argument strings stay far below this (ARG_MAX) */

enum { Q_NONE, Q_SINGLE, Q_DOUBLE }; /* quote state of the text around a value */

/* mode: how a value is written (QUOTE_*) */
enum { QUOTE_SHELL, QUOTE_ARGS, QUOTE_NONE };

/* Appends str(v) to b: as it is (raw, or QUOTE_NONE), else as one word in the given
 * quote state, for sh or for mg_args' splitter (whose double quotes know only \" and
 * \\ as escapes). */
static void add_value(kl_buf *b, json_t *v, int mode, int state, int raw)
{
    kl_buf t = {0};
    kl_buf_add(&t, "", 0);
    klp_str(&t, v);
    /* a ' can never appear inside '...': close, add it another way, reopen */
    const char *squote = mode == QUOTE_SHELL ? "'\\''" : "'\"'\"'";
    int quote = !raw && mode != QUOTE_NONE, shell = mode == QUOTE_SHELL;
    b->oom |= t.oom;
    if (quote && state == Q_NONE) kl_buf_add(b, "'", 1);
    for (size_t i = 0; !t.oom && i < t.n; i++) {
        char c = t.s[i];
        if (quote && state != Q_DOUBLE && c == '\'') kl_buf_add(b, squote, strlen(squote));
        else if (quote && state == Q_DOUBLE &&
                 (c == '"' || c == '\\' || (shell && (c == '$' || c == '`'))))
            kl_buf_add(b, "\\", 1), kl_buf_add(b, &c, 1);
        else kl_buf_add(b, &c, 1);
    }
    if (quote && state == Q_NONE) kl_buf_add(b, "'", 1);
    kl_buf_free(&t);
}

static char *interpolate(kl_engine *e, const char *text, int mode, klp_err *name_err, char *undef,
                         size_t nundef)
{
    kl_buf b = {0};
    kl_buf_add(&b, "", 0);
    int state = Q_NONE;
    for (size_t i = 0; text[i] && !b.oom;) {
        if (b.n > MAX_EXPANDED) b.oom = 1; /* reported as a MemoryError */
        char c = text[i];
        /* in shell lines, $!name / {!expr} splice raw text */
        int raw =
            mode == QUOTE_SHELL && text[i + 1] == '!' &&
            (c == '{' || (c == '$' && (isalpha((unsigned char)text[i + 2]) || text[i + 2] == '_')));
        if (c == '\\' && state != Q_SINGLE && text[i + 1] && text[i + 1] != '$' &&
            text[i + 1] != '{') {
            kl_buf_add(&b, text + i, 2); /* an escaped character, quote state unchanged */
            i += 2;
        } else if ((c == '\'' && state != Q_DOUBLE) || (c == '"' && state != Q_SINGLE)) {
            int q = c == '\'' ? Q_SINGLE : Q_DOUBLE;
            state = state == q ? Q_NONE : q;
            kl_buf_add(&b, &c, 1);
            i++;
        } else if (c == '$' && text[i + 1] == '$') {
            kl_buf_add(&b, "$", 1);
            i += 2;
        } else if (c == '$' && (raw || isalpha((unsigned char)text[i + 1]) || text[i + 1] == '_')) {
            size_t j = i + 1 + raw;
            while (isalnum((unsigned char)text[j]) || text[j] == '_') j++;
            char name[257];
            size_t n = j - i - 1 - raw;
            json_t *v = NULL;
            if (n < sizeof name) {
                memcpy(name, text + i + 1 + raw, n);
                name[n] = 0;
                v = json_object_get(e->vars, name);
            }
            if (v) add_value(&b, v, mode, state, raw);
            else kl_buf_add(&b, text + i, j - i);
            if (!v && undef && !undef[0] && j - i < nundef) {
                memcpy(undef, text + i, j - i);
                undef[j - i] = 0;
            }
            i = j;
        } else if ((c == '{' || c == '}') && text[i + 1] == c) {
            kl_buf_add(&b, &c, 1);
            i += 2;
        } else if (c == '{') {
            size_t rest = strlen(text + i + 1), end = klp_scan_expr(text + i + 1, rest, 0) + 1;
            if (end > rest) {
                kl_buf_add(&b, &c, 1);
                i++;
                continue;
            }
            char *src = strndup(text + i + 1 + raw, end - 1 - raw);
            klp_err err = {0};
            json_t *v = src ? klp_eval_source(e, src, NULL, &err) : NULL;
            free(src);
            if (!v && name_err && !strcmp(err.ename, "NameError")) {
                *name_err = err;
                kl_buf_free(&b);
                return NULL;
            }
            if (v) add_value(&b, v, mode, state, raw);
            else kl_buf_add(&b, text + i, end + 1);
            json_decref(v);
            i += end + 1;
        } else {
            kl_buf_add(&b, &c, 1);
            i++;
        }
    }
    if (b.oom || b.n > MAX_EXPANDED) {
        kl_buf_free(&b);
        return NULL;
    }
    return b.s;
}

char *klp_interpolate(kl_engine *e, const char *text)
{
    return interpolate(e, text, QUOTE_SHELL, NULL, NULL, 0);
}

char *klp_interpolate_args(kl_engine *e, const char *text, int quoted, klp_err *name_err,
                           char *undef, size_t nundef)
{
    name_err->set = 0;
    name_err->ename[0] = 0;
    if (nundef) undef[0] = 0;
    return interpolate(e, text, quoted ? QUOTE_ARGS : QUOTE_NONE, name_err, undef, nundef);
}
