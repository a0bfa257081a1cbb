/* kl_literal.c - Python literals without an engine: kl_literal_parse reads one
 * (numbers, strings, True/False/None, lists, tuples and str-keyed dicts of literals,
 * unary minus) with the cell language's lexer and parser, and kl_value_repr writes
 * any value as the engine's repr() does. `kiln run -p` and the Colab forms use both,
 * so a value reads and prints the same way wherever it comes from. */
#include <stdio.h>
#include <string.h>

#include "kl_internal.h"

/* The node's value when it is a literal; NULL otherwise (names, calls, operators). */
static json_t *literal_value(const klp_node *n)
{
    json_t *r;
    switch (n->kind) {
    case KLP_N_CONST_INT: return json_integer(n->ival);
    case KLP_N_CONST_FLOAT: return json_real(n->fval);
    case KLP_N_CONST_STR: return json_stringn(n->str, n->len);
    case KLP_N_NONE: return json_null();
    case KLP_N_TRUE: return json_true();
    case KLP_N_FALSE: return json_false();
    case KLP_N_UNARY: {
        const klp_node *k = n->kids[0];
        double sign = n->op[0] == '-' ? -1 : 1;
        return k->kind == KLP_N_CONST_INT     ? json_integer((long long)sign * k->ival)
               : k->kind == KLP_N_CONST_FLOAT ? json_real(sign * k->fval)
                                              : NULL;
    }
    case KLP_N_LIST:
    case KLP_N_DICT: {
        int dict = n->kind == KLP_N_DICT;
        r = dict ? json_object() : json_array();
        for (size_t i = 0; r && i < n->n; i += 1 + (size_t)dict) {
            json_t *k = dict ? literal_value(n->kids[i]) : NULL,
                   *v = literal_value(n->kids[i + (size_t)dict]);
            if (dict && !json_is_string(k)) json_decref(v), v = NULL;
            if (dict ? !v || json_object_setn_new(r, json_string_value(k), json_string_length(k),
                                                  v) < 0
                     : json_array_append_new(r, v) < 0)
                json_decref(r), r = NULL;
            json_decref(k);
        }
        return r;
    }
    default: return NULL;
    }
}

json_t *kl_literal_parse(const char *text)
{
    if (!text || !klp_utf8_valid(text, strlen(text))) return NULL;
    text += strspn(text, " \t"); /* an indented line would be an IndentationError */
    klp_arena *a = klp_arena_create();
    klp_node *n;
    klp_err err = {0};
    json_t *v = a && klp_parse_expr(a, text, &n, &err) == 0 ? literal_value(n) : NULL;
    klp_arena_destroy(a);
    return v;
}

json_t *kl_literal_scan(const char *s, size_t *used, char *why, size_t why_len)
{
    int sign = *s == '-' || *s == '+', str = *s == '"' || *s == '\'';
    klp_arena *a = klp_arena_create();
    klp_tok t;
    klp_err err = {0};
    size_t n = 0;
    json_t *v = NULL;
    if (!a) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    if (klp_lex_literal(a, s + sign, &t, &n, &err) == 0) {
        if (t.kind == KLP_T_STR && !sign) v = json_stringn(t.text, t.len); /* NULL: not UTF-8 */
        else if (t.kind == KLP_T_INT) v = json_integer(*s == '-' ? -t.ival : t.ival);
        else if (t.kind == KLP_T_FLOAT) v = json_real(*s == '-' ? -t.fval : t.fval);
        if (!v) snprintf(why, why_len, "%s", str ? "string is not valid UTF-8" : "bad number");
    } else {
        snprintf(why, why_len, "%s: %s", str ? "bad string or escape" : "bad number", err.evalue);
    }
    klp_arena_destroy(a);
    if (v) *used = (size_t)sign + n;
    return v;
}

char *kl_value_repr(const json_t *v)
{
    kl_buf b = {0};
    if (v) klp_repr(&b, (json_t *)v);
    else kl_buf_puts(&b, "None");
    kl_buf_add(&b, "", 0);
    if (b.oom) {
        kl_buf_free(&b);
        return NULL;
    }
    return b.s;
}

int kl_utf8_valid(const char *s, size_t n) { return klp_utf8_valid(s, n); }
