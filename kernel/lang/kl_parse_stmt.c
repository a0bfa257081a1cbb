/* kl_parse_stmt.c - statements: lines of magics / shell / help, `pass`, `del name`,
 * assignments (chained, to names and subscripts), augmented assignments and
 * expression statements separated by ';'. Also the one-expression entry point used
 * by interpolation, f-strings and user_expressions. */
#include <string.h>

#include "kl_parse.h"

#define cur klpp_cur

/* A name or a subscript (d["k"], lst[0]) can be assigned to; anything else cannot. */
static int valid_target(klpp *P, klp_node *t)
{
    const char *what;
    switch (t->kind) {
    case KLP_N_NAME:
    case KLP_N_INDEX: return 0;
    case KLP_N_LIST:
        what = "a list (unpacking a, b = ... is not supported: one name a line)";
        break;
    case KLP_N_CALL: what = "function call"; break;
    case KLP_N_SLICE: what = "slice (slice assignment is not supported)"; break;
    case KLP_N_ATTR: what = "attribute (Kiln values have no attributes)"; break;
    case KLP_N_CONST_INT:
    case KLP_N_CONST_FLOAT:
    case KLP_N_CONST_STR:
    case KLP_N_NONE:
    case KLP_N_TRUE:
    case KLP_N_FALSE:
    case KLP_N_FSTR: what = "literal"; break;
    default: what = "expression"; break;
    }
    klp_syntax(P->err, t->line, t->col, "cannot assign to %s%s", what,
               t->kind == KLP_N_COMPARE ? " here. Maybe you meant '=' instead of '=='?" : "");
    return -1;
}

static const char *const augops[] = {"+=", "-=", "*=", "/=", "//=", "%=", "**=", NULL};

static klp_node *p_simple(klpp *P)
{
    klp_tok *t = cur(P);
    if (klpp_is_kw(P, "pass")) {
        klpp_next(P);
        return klpp_finish(P, klpp_mk(P, KLP_S_PASS, t));
    }
    if (klpp_is_kw(P, "del")) { /* del name, ...: what it held counts no more */
        klpp_next(P);
        klp_node *n = klpp_mk(P, KLP_S_DEL, t), *e = n ? klpp_exprs(P) : NULL;
        if (!e) return NULL;
        klp_node **v = e->kind == KLP_N_LIST ? e->kids : &e;
        for (size_t i = 0, k = e->kind == KLP_N_LIST ? e->n : 1; i < k; i++) {
            if (v[i]->kind != KLP_N_NAME) {
                klp_syntax(P->err, v[i]->line, v[i]->col, "only names can be deleted (del name)");
                return NULL;
            }
            if (klpp_push(P, n, v[i], NULL) < 0) return NULL;
        }
        return klpp_finish(P, n);
    }
    if (klpp_check_unsupported_kw(P) < 0) return NULL;
    klp_node *e = klpp_exprs(P);
    if (!e) return NULL;
    for (int i = 0; augops[i]; i++)
        if (klpp_is_op(P, augops[i])) {
            klpp_next(P);
            if (valid_target(P, e) < 0) return NULL;
            klp_node *n = klpp_mk(P, KLP_S_AUGASSIGN, t);
            klp_node *v = n ? klpp_exprs(P) : NULL;
            if (!v || klpp_push(P, n, e, NULL) < 0 || klpp_push(P, n, v, NULL) < 0) return NULL;
            n->op = augops[i];
            return klpp_finish(P, n);
        }
    if (klpp_is_op(P, "=")) {
        klp_node *n = klpp_mk(P, KLP_S_ASSIGN, t);
        if (!n || klpp_push(P, n, e, NULL) < 0) return NULL;
        while (klpp_is_op(P, "=")) {
            klpp_next(P);
            klp_node *v = klpp_exprs(P);
            if (!v || klpp_push(P, n, v, NULL) < 0) return NULL;
        }
        for (size_t i = 0; i + 1 < n->n; i++)
            if (valid_target(P, n->kids[i]) < 0) return NULL;
        return klpp_finish(P, n);
    }
    if (klpp_is_op(P, ":"))
        return klpp_error(P, cur(P), "annotations (name: type) are not supported");
    klp_node *n = klpp_mk(P, KLP_S_EXPR, t);
    if (!n || klpp_push(P, n, e, NULL) < 0) return NULL;
    return klpp_finish(P, n);
}

static klp_node *p_line_special(klpp *P, klp_tok *t)
{
    klp_node_kind k = t->kind == KLP_T_MAGIC   ? KLP_S_MAGIC
                      : t->kind == KLP_T_SHELL ? KLP_S_SHELL
                                               : KLP_S_HELP;
    klpp_next(P);
    klp_node *n = klpp_mk(P, k, t);
    if (!n) return NULL;
    n->str = t->text;
    n->len = t->len;
    return klpp_finish(P, n);
}

int klp_parse(klp_arena *a, const klp_toks *toks, klp_prog *prog, klp_err *err)
{
    klpp P = {.a = a, .t = toks, .err = err};
    klp_node *all = klpp_mk(&P, KLP_S_PASS, cur(&P)); /* holds the statements */
    while (all && cur(&P)->kind != KLP_T_EOF) {
        klp_tok *t = cur(&P);
        int special = t->kind == KLP_T_MAGIC || t->kind == KLP_T_SHELL || t->kind == KLP_T_HELP;
        while (t->kind != KLP_T_NEWLINE) {
            klp_node *s = special ? p_line_special(&P, t) : p_simple(&P);
            if (!s || klpp_push(&P, all, s, NULL) < 0) return -1;
            if (special || !klpp_is_op(&P, ";")) break;
            klpp_next(&P);
            if (cur(&P)->kind == KLP_T_NEWLINE) s->suppress = 1; /* x; hides x */
            t = cur(&P);
        }
        if (cur(&P)->kind != KLP_T_NEWLINE) {
            klpp_error(&P, cur(&P),
                       klpp_is_op(&P, "=") || klpp_is_op(&P, ":=")
                           ? "invalid syntax (cannot assign here)"
                           : "invalid syntax");
            return -1;
        }
        klpp_next(&P);
    }
    if (!all) return -1;
    prog->stmts = all->kids;
    prog->n = all->n;
    return 0;
}

int klp_parse_expr(klp_arena *a, const char *src, klp_node **out, klp_err *err)
{
    klp_toks toks;
    if (klp_lex(a, src, &toks, err) < 0) return -1;
    klpp P = {.a = a, .t = &toks, .err = err};
    if (toks.n == 0 || toks.v[0].kind == KLP_T_EOF || toks.v[0].kind == KLP_T_NEWLINE)
        return klp_syntax(err, 1, 1, "empty expression");
    klp_node *e = klpp_exprs(&P);
    if (!e) return -1;
    if (cur(&P)->kind == KLP_T_NEWLINE) klpp_next(&P);
    if (cur(&P)->kind != KLP_T_EOF) {
        klpp_error(&P, cur(&P), "invalid syntax");
        return -1;
    }
    *out = e;
    return 0;
}
