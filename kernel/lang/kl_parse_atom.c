/* kl_parse_atom.c - atoms and trailers: names, literals (adjacent strings joined,
 * f-strings split into parts), (tuples), [lists], {dicts}, calls with keyword
 * arguments, subscripts and slices without a step, attributes. A comprehension is a SyntaxError
 * that says so. */
#include <stdlib.h>
#include <string.h>

#include "kl_parse.h"

#define cur klpp_cur

static const char *const reserved[] = {
    "and",    "as",   "assert", "async",  "await",    "break", "class", "continue", "def",
    "del",    "elif", "else",   "except", "finally",  "for",   "from",  "global",   "if",
    "import", "in",   "is",     "lambda", "nonlocal", "not",   "or",    "pass",     "raise",
    "return", "try",  "while",  "with",   "yield",    NULL};

static int is_reserved(const char *s)
{
    for (int i = 0; reserved[i]; i++)
        if (!strcmp(s, reserved[i])) return 1;
    return 0;
}

static klp_node *expect(klpp *P, const char *op, klp_node *ok)
{
    if (!ok) return NULL;
    if (!klpp_is_op(P, op)) {
        char msg[64];
        snprintf(msg, sizeof msg, "expected '%s'", op);
        return klpp_error(P, cur(P), msg);
    }
    klpp_next(P);
    return ok;
}

/* ---- strings ---- */

static klp_node *p_strings(klpp *P)
{
    klp_tok *first = cur(P);
    size_t total = 0;
    int any_f = 0;
    size_t j = P->i;
    for (; P->t->v[j].kind == KLP_T_STR; j++) {
        total += P->t->v[j].len * 2;
        any_f |= P->t->v[j].fstring;
    }
    char *s = klp_arena_alloc(P->a, total + 1), *w = s;
    if (!s) return klpp_error(P, first, "out of memory");
    while (cur(P)->kind == KLP_T_STR) {
        klp_tok *t = klpp_next(P);
        for (size_t k = 0; k < t->len; k++) {
            *w++ = t->text[k];
            if (any_f && !t->fstring && (t->text[k] == '{' || t->text[k] == '}')) *w++ = t->text[k];
        }
    }
    size_t len = (size_t)(w - s);
    if (any_f) return klpp_fstring(P, first, s, len);
    klp_node *n = klpp_mk(P, KLP_N_CONST_STR, first);
    if (!n) return NULL;
    n->str = s;
    n->len = len;
    return klpp_finish(P, n);
}

/* ---- (...), [...], {...} ---- */

static klp_node *no_comprehension(klpp *P)
{
    return klpp_error(P, cur(P),
                      "comprehensions are not supported: Kiln cells hold parameters (write the "
                      "list out, or use range())");
}

static klp_node *p_paren(klpp *P, klp_tok *t)
{
    if (klpp_is_op(P, ")")) {
        klpp_next(P);
        return klpp_finish(P, klpp_mk(P, KLP_N_LIST, t));
    }
    klp_node *e = klpp_exprs(P);
    if (e && klpp_is_kw(P, "for")) return no_comprehension(P);
    return expect(P, ")", e);
}

/* [a, b, ...] or {k: v, ...} */
static klp_node *p_display(klpp *P, klp_tok *t, int dict)
{
    klp_node *n = klpp_mk(P, dict ? KLP_N_DICT : KLP_N_LIST, t), *k, *v = NULL;
    const char *close = dict ? "}" : "]";
    while (n && !klpp_is_op(P, close)) {
        if (!(k = klpp_test(P))) return NULL;
        if (klpp_is_kw(P, "for")) return no_comprehension(P);
        if (dict && !klpp_is_op(P, ":"))
            return klpp_error(P, cur(P),
                              n->n == 0 && (klpp_is_op(P, ",") || klpp_is_op(P, "}"))
                                  ? "sets are not supported (use a list)"
                                  : "expected ':' in dict literal");
        if (dict && (klpp_next(P), !(v = klpp_test(P)))) return NULL;
        if (klpp_push(P, n, k, NULL) < 0 || (dict && klpp_push(P, n, v, NULL) < 0)) return NULL;
        if (klpp_is_kw(P, "for")) return no_comprehension(P);
        if (!klpp_is_op(P, ",")) break;
        klpp_next(P);
    }
    return klpp_finish(P, expect(P, close, n));
}

static klp_node *p_atom(klpp *P)
{
    klp_tok *t = cur(P);
    klp_node *n;
    switch (t->kind) {
    case KLP_T_INT:
        klpp_next(P);
        if (!(n = klpp_mk(P, KLP_N_CONST_INT, t))) return NULL;
        n->ival = t->ival;
        return klpp_finish(P, n);
    case KLP_T_FLOAT:
        klpp_next(P);
        if (!(n = klpp_mk(P, KLP_N_CONST_FLOAT, t))) return NULL;
        n->fval = t->fval;
        return klpp_finish(P, n);
    case KLP_T_STR: return p_strings(P);
    case KLP_T_NAME:
        if (!strcmp(t->text, "None") || !strcmp(t->text, "True") || !strcmp(t->text, "False")) {
            klpp_next(P);
            n = klpp_mk(P,
                        t->text[0] == 'N'   ? KLP_N_NONE
                        : t->text[0] == 'T' ? KLP_N_TRUE
                                            : KLP_N_FALSE,
                        t);
            return klpp_finish(P, n);
        }
        if (is_reserved(t->text)) {
            if (klpp_check_unsupported_kw(P) < 0) return NULL;
            return klpp_error(P, t, NULL);
        }
        klpp_next(P);
        if (!(n = klpp_mk(P, KLP_N_NAME, t))) return NULL;
        n->str = t->text;
        n->len = t->len;
        return klpp_finish(P, n);
    case KLP_T_OP:
        if (!strcmp(t->text, "(")) return klpp_next(P), p_paren(P, t);
        if (!strcmp(t->text, "[")) return klpp_next(P), p_display(P, t, 0);
        if (!strcmp(t->text, "{")) return klpp_next(P), p_display(P, t, 1);
        if (!strcmp(t->text, "...")) return klpp_error(P, t, "'...' (Ellipsis) is not supported");
        return klpp_error(P, t, NULL);
    case KLP_T_NEWLINE:
    case KLP_T_EOF: return klpp_error(P, t, "invalid syntax (the expression is incomplete)");
    default: return klpp_error(P, t, NULL);
    }
}

/* ---- trailers: calls, subscripts, attributes ---- */

static klp_node *p_call(klpp *P, klp_tok *t, klp_node *callee)
{
    klp_node *n = klpp_mk(P, KLP_N_CALL, t);
    if (!n || klpp_push(P, n, callee, NULL) < 0) return NULL;
    n->line = callee->line;
    n->col = callee->col;
    int seen_kw = 0;
    while (!klpp_is_op(P, ")")) {
        klp_tok *a = cur(P);
        const char *kw = NULL;
        if (klpp_is_op(P, "*") || klpp_is_op(P, "**"))
            return klpp_error(P, a, "*args and **kwargs are not supported");
        if (a->kind == KLP_T_NAME && P->t->v[P->i + 1].kind == KLP_T_OP &&
            !strcmp(P->t->v[P->i + 1].text, "=")) {
            kw = a->text;
            klpp_next(P);
            klpp_next(P);
            seen_kw = 1;
        } else if (seen_kw) {
            return klpp_error(P, a, "positional argument follows keyword argument");
        }
        klp_node *e = klpp_test(P);
        if (!e || klpp_push(P, n, e, kw) < 0) return NULL;
        if (klpp_is_kw(P, "for")) return no_comprehension(P);
        if (!klpp_is_op(P, ",")) break;
        klpp_next(P);
    }
    return klpp_finish(P, expect(P, ")", n));
}

/* obj[i] or obj[lo:hi] (either bound may be left out); a step is refused. */
static klp_node *p_subscript(klpp *P, klp_tok *t, klp_node *obj)
{
    klp_node *part[2] = {NULL, NULL};
    int colons = 0;
    for (;;) {
        if (klpp_is_op(P, ":")) {
            if (++colons > 1)
                return klpp_error(P, cur(P), "slice steps are not supported (write s[a:b])");
            klpp_next(P);
            continue;
        }
        if (klpp_is_op(P, "]")) break;
        if (part[colons]) return klpp_error(P, cur(P), NULL);
        if (!(part[colons] = colons ? klpp_test(P) : klpp_exprs(P))) return NULL;
    }
    klpp_next(P);
    klp_node *n = klpp_mk(P, colons ? KLP_N_SLICE : KLP_N_INDEX, t);
    if (!n || klpp_push(P, n, obj, NULL) < 0) return NULL;
    n->line = obj->line;
    n->col = obj->col;
    if (!colons && !part[0]) return klpp_error(P, t, "invalid syntax (empty subscript)");
    for (int i = 0; i <= colons; i++)
        if (klpp_push(P, n, part[i], NULL) < 0) return NULL;
    return klpp_finish(P, n);
}

klp_node *klpp_primary(klpp *P)
{
    klp_node *n = p_atom(P);
    while (n) {
        klp_tok *t = cur(P);
        if (klpp_is_op(P, "(")) {
            klpp_next(P);
            n = p_call(P, t, n);
        } else if (klpp_is_op(P, "[")) {
            klpp_next(P);
            n = p_subscript(P, t, n);
        } else if (klpp_is_op(P, ".")) {
            klpp_next(P);
            klp_tok *name = cur(P);
            if (name->kind != KLP_T_NAME) return klpp_error(P, name, NULL);
            klpp_next(P);
            klp_node *a = klpp_mk(P, KLP_N_ATTR, name);
            if (!a || klpp_push(P, a, n, NULL) < 0) return NULL;
            a->str = name->text;
            a->line = n->line;
            a->col = n->col;
            n = klpp_finish(P, a);
        } else {
            break;
        }
    }
    return n;
}
