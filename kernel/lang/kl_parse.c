/* kl_parse.c - recursive-descent parser: tokens -> AST (in the cell's arena).
 *
 * Grammar (Python's, restricted to simple statements):
 *   line   := MAGIC | SHELL | HELP | simple (';' simple)* [';'] NEWLINE
 *   simple := 'pass' | 'del' targets | exprs ('=' exprs)* | target AUGOP exprs | exprs
 *   expr   := or ['if' or 'else' expr], then by precedence: or, and, not,
 *             one comparison, + -, * / // %, unary - +, **, primary (calls,
 *             [index], [a:b], .attr)
 *   atom   := NAME | number | str+ | (exprs) | [exprs] | {dict}
 * There are no comprehensions and no bitwise operators (the lexer refuses those).
 * Nesting is bounded (KLP_MAX_DEPTH) both in recursion and in AST depth, so hostile
 * input gets a SyntaxError instead of a stack overflow. Expressions in f-strings are
 * parsed here too (kl_fstr.c splits the template).
 */
#include <stdlib.h>
#include <string.h>

#include "kl_internal.h"
#include "kl_parse.h"

#define ENTER()                                                                               \
    do {                                                                                      \
        if (++P->rdepth > KLP_MAX_DEPTH) {                                                    \
            klp_syntax(P->err, cur(P)->line, cur(P)->col, "expression is too deeply nested"); \
            return NULL;                                                                      \
        }                                                                                     \
    } while (0)
#define LEAVE(x)     \
    do {             \
        P->rdepth--; \
        return (x);  \
    } while (0)

klp_tok *klpp_cur(klpp *P) { return &P->t->v[P->i]; }
#define cur klpp_cur

static const char *const kw_unsupported[] = {
    "if",    "for",      "while",  "def",      "class",  "import",  "from",  "return", "try",
    "with",  "lambda",   "global", "nonlocal", "assert", "raise",   "yield", "async",  "await",
    "break", "continue", "elif",   "else",     "except", "finally", "as",    NULL};

int klpp_is_op(klpp *P, const char *op)
{
    klp_tok *t = cur(P);
    return t->kind == KLP_T_OP && !strcmp(t->text, op);
}

int klpp_is_kw(klpp *P, const char *kw)
{
    klp_tok *t = cur(P);
    return t->kind == KLP_T_NAME && !strcmp(t->text, kw);
}

klp_tok *klpp_next(klpp *P)
{
    klp_tok *t = cur(P);
    if (t->kind != KLP_T_EOF) P->i++;
    P->prev_line = t->line;
    P->prev_end = t->end_col;
    return t;
}

klp_node *klpp_error(klpp *P, klp_tok *t, const char *msg)
{
    klp_syntax(P->err, t->line, t->col, "%s", msg ? msg : "invalid syntax");
    return NULL;
}

klp_node *klpp_mk(klpp *P, klp_node_kind k, const klp_tok *t)
{
    klp_node *n = klp_arena_alloc(P->a, sizeof *n);
    if (!n) {
        klp_fail(P->err, t->line, t->col, "MemoryError", "out of memory");
        return NULL;
    }
    n->kind = k;
    n->line = t->line;
    n->col = t->col;
    return n;
}

/* Sets end column and depth once all children are attached. */
klp_node *klpp_finish(klpp *P, klp_node *n)
{
    if (!n) return NULL;
    if (P->prev_line == n->line && P->prev_end > n->col) n->end_col = P->prev_end;
    int d = 0;
    for (size_t i = 0; i < n->n; i++)
        if (n->kids[i] && n->kids[i]->depth > d) d = n->kids[i]->depth;
    n->depth = d + 1;
    if (n->depth > KLP_MAX_DEPTH) {
        klp_syntax(P->err, n->line, n->col, "expression is too deeply nested");
        return NULL;
    }
    return n;
}

int klpp_push(klpp *P, klp_node *n, klp_node *kid, const char *op)
{
    if (n->n % 8 == 0) {
        klp_node **k = klp_arena_alloc(P->a, (n->n + 8) * sizeof *k);
        const char **o = klp_arena_alloc(P->a, (n->n + 8) * sizeof *o);
        if (!k || !o) {
            klp_fail(P->err, n->line, n->col, "MemoryError", "out of memory");
            return -1;
        }
        if (n->n) {
            memcpy(k, n->kids, n->n * sizeof *k);
            memcpy(o, n->ops, n->n * sizeof *o);
        }
        n->kids = k;
        n->ops = o;
    }
    n->kids[n->n] = kid;
    n->ops[n->n] = op;
    n->n++;
    return 0;
}

static klp_node *binary(klpp *P, klp_node_kind k, const char *op, klp_tok *t, klp_node *l,
                        klp_node *r)
{
    klp_node *n = klpp_mk(P, k, t);
    if (!n || klpp_push(P, n, l, NULL) < 0 || klpp_push(P, n, r, NULL) < 0) return NULL;
    n->line = l->line;
    n->col = l->col;
    n->op = op;
    return klpp_finish(P, n);
}

/* ---- expressions, lowest precedence first ---- */

static klp_node *p_or(klpp *P);

klp_node *klpp_or(klpp *P) { return p_or(P); }

klp_node *klpp_test(klpp *P)
{
    ENTER();
    klp_node *body = p_or(P);
    if (!body) LEAVE(NULL);
    if (klpp_is_kw(P, "if")) {
        klp_tok *t = klpp_next(P);
        klp_node *cond = p_or(P);
        if (!cond) LEAVE(NULL);
        if (!klpp_is_kw(P, "else"))
            LEAVE(klpp_error(P, cur(P), "expected 'else' after 'if' expression"));
        klpp_next(P);
        klp_node *other = klpp_test(P);
        if (!other) LEAVE(NULL);
        klp_node *n = klpp_mk(P, KLP_N_IFEXP, t);
        if (!n || klpp_push(P, n, body, NULL) || klpp_push(P, n, cond, NULL) ||
            klpp_push(P, n, other, NULL))
            LEAVE(NULL);
        n->line = body->line;
        n->col = body->col;
        LEAVE(klpp_finish(P, n));
    }
    LEAVE(body);
}

static klp_node *p_not(klpp *P);

static klp_node *p_and(klpp *P)
{
    klp_node *l = p_not(P);
    while (l && klpp_is_kw(P, "and")) {
        klp_tok *t = klpp_next(P);
        klp_node *r = p_not(P);
        l = r ? binary(P, KLP_N_AND, "and", t, l, r) : NULL;
    }
    return l;
}

static klp_node *p_or(klpp *P)
{
    klp_node *l = p_and(P);
    while (l && klpp_is_kw(P, "or")) {
        klp_tok *t = klpp_next(P);
        klp_node *r = p_and(P);
        l = r ? binary(P, KLP_N_OR, "or", t, l, r) : NULL;
    }
    return l;
}

static klp_node *p_arith(klpp *P);

static const char *comp_op(klpp *P)
{
    static const char *const ops[] = {"<", ">", "==", ">=", "<=", "!=", NULL};
    for (int i = 0; ops[i]; i++)
        if (klpp_is_op(P, ops[i])) {
            klpp_next(P);
            return ops[i];
        }
    if (klpp_is_kw(P, "in")) {
        klpp_next(P);
        return "in";
    }
    if (klpp_is_kw(P, "not") && P->t->v[P->i + 1].kind == KLP_T_NAME &&
        !strcmp(P->t->v[P->i + 1].text, "in")) {
        klpp_next(P);
        klpp_next(P);
        return "not in";
    }
    if (klpp_is_kw(P, "is")) {
        klpp_next(P);
        if (klpp_is_kw(P, "not")) {
            klpp_next(P);
            return "is not";
        }
        return "is";
    }
    return NULL;
}

/* One comparison, a op b: a chain (a < b < c) is refused, write a < b and b < c. */
static klp_node *p_comparison(klpp *P)
{
    klp_node *l = p_arith(P);
    klp_tok *t = cur(P);
    const char *op = l ? comp_op(P) : NULL;
    if (!op) return l;
    klp_node *r = p_arith(P);
    klp_tok *more = cur(P);
    if (r && comp_op(P))
        return klpp_error(P, more, "chained comparisons are not supported (write a < b and b < c)");
    return r ? binary(P, KLP_N_COMPARE, op, t, l, r) : NULL;
}

static klp_node *p_not(klpp *P)
{
    ENTER();
    if (klpp_is_kw(P, "not")) {
        klp_tok *t = klpp_next(P);
        klp_node *a = p_not(P);
        if (!a) LEAVE(NULL);
        klp_node *n = klpp_mk(P, KLP_N_NOT, t);
        if (!n || klpp_push(P, n, a, NULL) < 0) LEAVE(NULL);
        LEAVE(klpp_finish(P, n));
    }
    LEAVE(p_comparison(P));
}

typedef klp_node *(*level_fn)(klpp *P);

static klp_node *left_assoc(klpp *P, level_fn sub, const char *const *ops)
{
    klp_node *l = sub(P);
    while (l) {
        const char *op = NULL;
        for (int i = 0; ops[i]; i++)
            if (klpp_is_op(P, ops[i])) op = ops[i];
        if (!op) break;
        klp_tok *t = klpp_next(P);
        klp_node *r = sub(P);
        l = r ? binary(P, KLP_N_BINOP, op, t, l, r) : NULL;
    }
    return l;
}

static klp_node *p_factor(klpp *P);

static klp_node *p_term(klpp *P)
{
    static const char *const ops[] = {"*", "/", "//", "%", NULL};
    return left_assoc(P, p_factor, ops);
}

static klp_node *p_arith(klpp *P)
{
    static const char *const ops[] = {"+", "-", NULL};
    return left_assoc(P, p_term, ops);
}

static klp_node *p_factor(klpp *P)
{
    ENTER();
    if (klpp_is_op(P, "-") || klpp_is_op(P, "+")) {
        klp_tok *t = klpp_next(P);
        klp_node *a = p_factor(P);
        if (!a) LEAVE(NULL);
        klp_node *n = klpp_mk(P, KLP_N_UNARY, t);
        if (!n || klpp_push(P, n, a, NULL) < 0) LEAVE(NULL);
        n->op = t->text;
        LEAVE(klpp_finish(P, n));
    }
    klp_node *base = klpp_primary(P);
    if (base && klpp_is_op(P, "**")) {
        klp_tok *t = klpp_next(P);
        klp_node *e = p_factor(P);
        LEAVE(e ? binary(P, KLP_N_BINOP, "**", t, base, e) : NULL);
    }
    LEAVE(base);
}

/* exprs := expr (',' expr)* [','] -> the expression, or a LIST when commas appear
 * (tuples are lists). */
klp_node *klpp_exprs(klpp *P)
{
    klp_tok *t = cur(P);
    klp_node *first = klpp_test(P);
    if (!first || !klpp_is_op(P, ",")) return first;
    klp_node *tup = klpp_mk(P, KLP_N_LIST, t);
    if (!tup || klpp_push(P, tup, first, NULL) < 0) return NULL;
    while (klpp_is_op(P, ",")) {
        klpp_next(P);
        klp_tok *c = cur(P);
        if (c->kind == KLP_T_NEWLINE || c->kind == KLP_T_EOF || klpp_is_op(P, "=") ||
            klpp_is_op(P, ")") || klpp_is_op(P, ";") || klpp_is_op(P, "]"))
            break;
        klp_node *e = klpp_test(P);
        if (!e || klpp_push(P, tup, e, NULL) < 0) return NULL;
    }
    return klpp_finish(P, tup);
}

int klpp_check_unsupported_kw(klpp *P)
{
    klp_tok *t = cur(P);
    if (t->kind != KLP_T_NAME) return 0;
    for (int i = 0; kw_unsupported[i]; i++)
        if (!strcmp(t->text, kw_unsupported[i])) {
            klp_syntax(P->err, t->line, t->col,
                       "'%s' is not supported: Kiln cells hold assignments, expressions, %%magics "
                       "and !commands",
                       t->text);
            return -1;
        }
    return 0;
}
