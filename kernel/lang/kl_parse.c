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

/* Appends a child (and its operator or keyword name); the arrays double as they fill. */
int klpp_push(klpp *P, klp_node *n, klp_node *kid, const char *op)
{
    if (n->n == 0 || (n->n >= 8 && !(n->n & (n->n - 1)))) {
        size_t cap = n->n ? 2 * n->n : 8;
        klp_node **k = klp_arena_alloc(P->a, cap * sizeof *k);
        const char **o = klp_arena_alloc(P->a, cap * sizeof *o);
        if (!k || !o) {
            klp_fail(P->err, n->line, n->col, "MemoryError", "out of memory");
            return -1;
        }
        if (n->n) memcpy(k, n->kids, n->n * sizeof *k), memcpy(o, n->ops, n->n * sizeof *o);
        n->kids = k;
        n->ops = o;
    }
    n->kids[n->n] = kid;
    n->ops[n->n++] = op;
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

/* Recursion guard: 0, or -1 with a SyntaxError when nested too deeply (leave() undoes). */
static int enter(klpp *P)
{
    if (++P->rdepth <= KLP_MAX_DEPTH) return 0;
    klp_syntax(P->err, cur(P)->line, cur(P)->col, "expression is too deeply nested");
    return -1;
}

static klp_node *leave(klpp *P, klp_node *n)
{
    P->rdepth--;
    return n;
}

/* A node of kind k at token t over one operand (not, unary - +). */
static klp_node *prefix(klpp *P, klp_node_kind k, klp_tok *t, klp_node *a)
{
    klp_node *n = a ? klpp_mk(P, k, t) : NULL;
    if (!n || klpp_push(P, n, a, NULL) < 0) return NULL;
    n->op = t->text;
    return klpp_finish(P, n);
}

/* Operands from sub joined left to right by any of ops (keywords unless k is BINOP). */
static klp_node *left_assoc(klpp *P, klp_node *(*sub)(klpp *), klp_node_kind k,
                            const char *const *ops)
{
    klp_node *l = sub(P);
    for (int i = 0; l && ops[i]; i++) {
        if (k == KLP_N_BINOP ? !klpp_is_op(P, ops[i]) : !klpp_is_kw(P, ops[i])) continue;
        klp_tok *t = klpp_next(P);
        klp_node *r = sub(P);
        l = r ? binary(P, k, ops[i], t, l, r) : NULL;
        i = -1;
    }
    return l;
}

static klp_node *p_factor(klpp *P)
{
    if (enter(P) < 0) return NULL;
    if (klpp_is_op(P, "-") || klpp_is_op(P, "+")) {
        klp_tok *t = klpp_next(P);
        return leave(P, prefix(P, KLP_N_UNARY, t, p_factor(P)));
    }
    klp_node *base = klpp_primary(P);
    if (!base || !klpp_is_op(P, "**")) return leave(P, base);
    klp_tok *t = klpp_next(P);
    klp_node *e = p_factor(P);
    return leave(P, e ? binary(P, KLP_N_BINOP, "**", t, base, e) : NULL);
}

static const char *const mul_ops[] = {"*", "/", "//", "%", NULL},
                         *const add_ops[] = {"+", "-", NULL}, *const and_ops[] = {"and", NULL},
                         *const or_ops[] = {"or", NULL};

static klp_node *p_term(klpp *P) { return left_assoc(P, p_factor, KLP_N_BINOP, mul_ops); }
static klp_node *p_arith(klpp *P) { return left_assoc(P, p_term, KLP_N_BINOP, add_ops); }

static int next_is(klpp *P, const char *kw)
{
    return cur(P)->kind == KLP_T_NAME && P->t->v[P->i + 1].kind == KLP_T_NAME &&
           !strcmp(P->t->v[P->i + 1].text, kw);
}

static const char *comp_op(klpp *P)
{
    static const char *const ops[] = {"<", ">", "==", ">=", "<=", "!=", NULL};
    for (int i = 0; ops[i]; i++)
        if (klpp_is_op(P, ops[i])) return klpp_next(P), ops[i];
    if (klpp_is_kw(P, "in")) return klpp_next(P), "in";
    if (klpp_is_kw(P, "not") && next_is(P, "in")) return klpp_next(P), klpp_next(P), "not in";
    if (klpp_is_kw(P, "is") && next_is(P, "not")) return klpp_next(P), klpp_next(P), "is not";
    if (klpp_is_kw(P, "is")) return klpp_next(P), "is";
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
    if (enter(P) < 0) return NULL;
    if (!klpp_is_kw(P, "not")) return leave(P, p_comparison(P));
    klp_tok *t = klpp_next(P);
    return leave(P, prefix(P, KLP_N_NOT, t, p_not(P)));
}

static klp_node *p_and(klpp *P) { return left_assoc(P, p_not, KLP_N_AND, and_ops); }
static klp_node *p_or(klpp *P) { return left_assoc(P, p_and, KLP_N_OR, or_ops); }

/* test := or ['if' or 'else' test] */
klp_node *klpp_test(klpp *P)
{
    if (enter(P) < 0) return NULL;
    klp_node *body = p_or(P), *cond, *other, *n;
    if (!body || !klpp_is_kw(P, "if")) return leave(P, body);
    klp_tok *t = klpp_next(P);
    if (!(cond = p_or(P))) return NULL;
    if (!klpp_is_kw(P, "else"))
        return klpp_error(P, cur(P), "expected 'else' after 'if' expression");
    klpp_next(P);
    if (!(other = klpp_test(P)) || !(n = klpp_mk(P, KLP_N_IFEXP, t)) ||
        klpp_push(P, n, body, NULL) || klpp_push(P, n, cond, NULL) || klpp_push(P, n, other, NULL))
        return NULL;
    n->line = body->line;
    n->col = body->col;
    return leave(P, klpp_finish(P, n));
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
