/* kl_fstr.c - f-string templates: f"loss {loss} after {n!r} steps".
 * Splits the (already unescaped) template into literal parts and expressions, each
 * shown with str() or, with !r, repr(); `{{` and `}}` are literal braces. Format
 * specs ({x:.3f}) are a SyntaxError that says so: Kiln has no format mini-language. */
#include <string.h>

#include "kl_parse.h"

static klp_node *lit(klpp *P, const klp_tok *t, const char *s, size_t n)
{
    klp_node *k = klpp_mk(P, KLP_N_CONST_STR, t);
    char *c = klp_arena_alloc(P->a, n + 1);
    if (!k || !c) return NULL;
    memcpy(c, s, n);
    k->str = c;
    k->len = n;
    k->depth = 1;
    return k;
}

static klp_node *fail(klpp *P, const klp_tok *t, const char *msg)
{
    klp_syntax(P->err, t->line, t->col, "f-string: %s", msg);
    return NULL;
}

klp_node *klpp_fstring(klpp *P, const klp_tok *t, const char *s, size_t len)
{
    klp_node *n = klpp_mk(P, KLP_N_FSTR, t);
    if (!n) return NULL;
    char *buf = klp_arena_alloc(P->a, len + 1);
    if (!buf) return NULL;
    size_t blen = 0;
    klp_node *l, *e;
    for (size_t i = 0; i <= len;) {
        char c = i < len ? s[i] : 0;
        if ((c == '{' || c == '}') && i + 1 < len && s[i + 1] == c) {
            buf[blen++] = c;
            i += 2;
            continue;
        }
        if (c == '}') return fail(P, t, "single '}' is not allowed");
        if (i < len && c != '{') {
            buf[blen++] = c, i++;
            continue;
        }
        if (blen && (!(l = lit(P, t, buf, blen)) || klpp_push(P, n, l, NULL) < 0)) return NULL;
        blen = 0;
        if (i++ == len) break;
        size_t st = i;
        i += klp_scan_expr(s + i, len - i, 1);
        size_t en = i;
        int repr = i + 1 < len && s[i] == '!' && s[i + 1] == 'r';
        if (i < len && s[i] == '!' && !repr)
            return fail(P, t, "only the !r conversion is supported ({x!r})");
        i += repr ? 2 : 0;
        if (i < len && s[i] == ':')
            return fail(P, t,
                        "format specs such as {x:.3f} are not supported (Kiln has no format "
                        "mini-language; use {x}, {x!r} or {round(x, 3)})");
        if (i >= len || s[i] != '}') return fail(P, t, "expecting '}'");
        i++;
        char *src = klp_arena_alloc(P->a, en - st + 1);
        klp_err sub = {0};
        if (!src) return NULL;
        memcpy(src, s + st, en - st);
        if (strspn(src, " \t\n") == en - st) return fail(P, t, "empty expression not allowed");
        if (klp_parse_expr(P->a, src, &e, &sub) < 0) return fail(P, t, sub.evalue);
        if (klpp_push(P, n, e, repr ? "r" : "") < 0) return NULL;
    }
    return klpp_finish(P, n);
}
