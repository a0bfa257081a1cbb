/* kl_interp.c - IPython-style variable expansion in magic arguments and shell
 * lines: `$name` becomes str(name), `{expr}` becomes str(expr); `$$` and `{{`/`}}`
 * are a literal `$`/`{`/`}`. The expanded text is capped at 16 MiB (NULL beyond). As in IPython, an unknown name or an expression that
 * fails is left exactly as written, so `!echo $HOME` and `!awk '{print $1}'` reach
 * the shell untouched. Magic arguments (klp_interpolate_args) are stricter: a `{expr}`
 * that raises NameError is that error (`--lr {lr}` with lr undefined), and the first
 * undefined `$name` is reported back so a failing option can ask "is `$lr` defined?". */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "kl_internal.h"

/* End of the {...} starting at s[0] == '{' (index of the matching '}'), or 0. */
static size_t brace_end(const char *s)
{
    int depth = 0;
    char q = 0;
    for (size_t i = 0; s[i]; i++) {
        char c = s[i];
        if (q) {
            if (c == '\\' && s[i + 1]) i++;
            else if (c == q) q = 0;
            continue;
        }
        if (c == '\'' || c == '"') q = c;
        else if (c == '{' || c == '[' || c == '(') depth++;
        else if (c == '}' || c == ']' || c == ')') {
            if (--depth == 0) return c == '}' ? i : 0;
        }
    }
    return 0;
}

#define MAX_EXPANDED (16u << 20)   /* argument strings stay far below this (ARG_MAX) */

static char *interpolate(kl_engine *e, const char *text, klp_err *name_err, char *undef,
                         size_t nundef)
{
    klp_buf b = {0};
    klp_buf_add(&b, "", 0);
    for (size_t i = 0; text[i] && !b.oom;) {
        if (b.n > MAX_EXPANDED) b.oom = 1;   /* reported as a MemoryError */
        char c = text[i];
        if (c == '$' && text[i + 1] == '$') {
            klp_buf_add(&b, "$", 1);
            i += 2;
        } else if (c == '$' && (isalpha((unsigned char)text[i + 1]) || text[i + 1] == '_')) {
            size_t j = i + 1;
            while (isalnum((unsigned char)text[j]) || text[j] == '_') j++;
            char name[257];
            size_t n = j - i - 1;
            json_t *v = NULL;
            if (n < sizeof name) {
                memcpy(name, text + i + 1, n);
                name[n] = 0;
                v = json_object_get(klp_vars(e), name);
            }
            if (v) klp_str(&b, v);
            else klp_buf_add(&b, text + i, j - i);
            if (!v && undef && !undef[0] && j - i < nundef) {
                memcpy(undef, text + i, j - i);
                undef[j - i] = 0;
            }
            i = j;
        } else if ((c == '{' || c == '}') && text[i + 1] == c) {
            klp_buf_add(&b, &c, 1);
            i += 2;
        } else if (c == '{') {
            size_t end = brace_end(text + i);
            if (!end) {
                klp_buf_add(&b, &c, 1);
                i++;
                continue;
            }
            char *src = strndup(text + i + 1, end - 1);
            klp_err err = {0};
            json_t *v = src ? klp_eval_source(e, src, NULL, &err) : NULL;
            free(src);
            if (!v && name_err && !strcmp(err.ename, "NameError")) {
                *name_err = err;
                klp_buf_free(&b);
                return NULL;
            }
            if (v) klp_str(&b, v);
            else klp_buf_add(&b, text + i, end + 1);
            json_decref(v);
            i += end + 1;
        } else {
            klp_buf_add(&b, &c, 1);
            i++;
        }
    }
    if (b.oom || b.n > MAX_EXPANDED) {
        klp_buf_free(&b);
        return NULL;
    }
    return b.s;
}

char *klp_interpolate(kl_engine *e, const char *text)
{
    return interpolate(e, text, NULL, NULL, 0);
}

char *klp_interpolate_args(kl_engine *e, const char *text, klp_err *name_err, char *undef,
                           size_t nundef)
{
    name_err->set = 0;
    name_err->ename[0] = 0;
    if (nundef) undef[0] = 0;
    return interpolate(e, text, name_err, undef, nundef);
}
