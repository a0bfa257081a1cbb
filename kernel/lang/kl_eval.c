/* kl_eval.c - evaluates expression nodes to jansson values (new references).
 * Every failure fills c->err with the node's line/column and returns NULL; nothing
 * here aborts. Operators live in kl_ops.c/kl_compare.c/kl_index.c, calls in
 * kl_builtins.c/kl_methods.c. */
#include <stdlib.h>
#include <string.h>

#include "kl_internal.h"

static json_t *oom(klp_ctx *c, const klp_node *n)
{
    klp_fail(c->err, n->line, n->col, "MemoryError", "out of memory");
    return NULL;
}

static json_t *eval_name(klp_ctx *c, const klp_node *n)
{
    json_t *v = json_object_get(c->eng->vars, n->str);
    if (v) return json_incref(v);
    if (!strcmp(n->str, "help")) { /* as IPython answers a bare `help`: where help is */
        if (c->out && c->out->stream)
            c->out->stream(c->out->user, "stdout", klp_help_pointer, strlen(klp_help_pointer));
        return json_null();
    }
    if (klp_is_builtin(n->str))
        klp_fail(c->err, n->line, n->col, "TypeError",
                 "the builtin '%s' can only be called here (Kiln values are data, not functions)",
                 n->str);
    else klp_fail(c->err, n->line, n->col, "NameError", "name '%s' is not defined", n->str);
    return NULL;
}

/* A list or dict display: items (dict: key, value) evaluated left to right. */
static json_t *eval_display(klp_ctx *c, const klp_node *n)
{
    int dict = n->kind == KLP_N_DICT, nested = 0, rc = 0;
    json_t *r = dict ? json_object() : json_array();
    for (size_t i = 0; r && rc == 0 && i < n->n; i += 1 + (size_t)dict) {
        json_t *k = dict ? klp_eval(c, n->kids[i]) : NULL, *v = NULL;
        if (dict && k && !json_is_string(k))
            rc = klp_fail(c->err, n->kids[i]->line, n->kids[i]->col, "TypeError",
                          "dict keys must be str in Kiln (JSON objects), not %s", klp_type_name(k));
        else if ((!dict || k) && (v = klp_eval(c, n->kids[i + (size_t)dict]))) {
            nested |= json_is_array(v) || json_is_object(v);
            rc = dict ? json_object_setn_new(r, json_string_value(k), json_string_length(k), v)
                      : json_array_append_new(r, v);
            if (rc < 0) oom(c, n);
        } else rc = -1;
        json_decref(k);
    }
    if (!r) return oom(c, n);
    if (rc == 0 && (!nested || klp_check_depth(c, n, r) == 0)) return r;
    json_decref(r);
    return NULL;
}

/* A builtin's or a method's call: positional arguments come first (the parser sees
 * to it), then the keyword ones, named in n->ops. */
static json_t *eval_call(klp_ctx *c, const klp_node *n)
{
    const klp_node *callee = n->kids[0];
    json_t **v = calloc(n->n, sizeof *v), *self = NULL, *res = NULL;
    size_t nv = 0, na = 0;
    if (!v) return oom(c, n);
    for (size_t i = 1; i < n->n; i++, nv++) {
        if (!(v[nv] = klp_eval(c, n->kids[i]))) goto done;
        na += !n->ops[i];
    }
    if (callee->kind == KLP_N_ATTR && na < nv)
        klp_fail(c->err, n->line, n->col, "TypeError", "%s() takes no keyword arguments",
                 callee->str);
    else if (callee->kind == KLP_N_ATTR && (self = klp_eval(c, callee->kids[0])))
        res = klp_call_method(c, n, self, callee->str, v, na);
    else if (callee->kind == KLP_N_NAME && !json_object_get(c->eng->vars, callee->str))
        /* a builtin, or a NameError that lists the builtins */
        res = klp_call_builtin(c, n, callee->str, v, na, n->ops + 1 + na, v + na, nv - na);
    else if (callee->kind != KLP_N_ATTR && (self = klp_eval(c, callee)))
        klp_fail(c->err, n->line, n->col, "TypeError", "'%s' object is not callable",
                 klp_type_name(self));
done:
    for (size_t i = 0; i < nv; i++) json_decref(v[i]);
    json_decref(self);
    free(v);
    return res;
}

/* An operator: operands first, left to right (a slice's missing bounds stay NULL). */
static json_t *eval_op(klp_ctx *c, const klp_node *n)
{
    json_t *v[3] = {NULL, NULL, NULL}, *r = NULL;
    int ok;
    for (size_t i = 0; i < n->n; i++)
        if (n->kids[i] && !(v[i] = klp_eval(c, n->kids[i]))) goto done;
    switch (n->kind) {
    case KLP_N_BINOP: r = klp_binop(c, n, n->op, v[0], v[1]); break;
    case KLP_N_UNARY: r = klp_unary(c, n, n->op, v[0]); break;
    case KLP_N_NOT: r = json_boolean(!klp_truthy(v[0])); break;
    case KLP_N_COMPARE:
        r = (ok = klp_compare(c, n, n->op, v[0], v[1])) < 0 ? NULL : json_boolean(ok);
        break;
    case KLP_N_INDEX: r = klp_index(c, n, v[0], v[1]); break;
    case KLP_N_SLICE: r = klp_slice(c, n, v[0], v[1], v[2]); break;
    default: /* KLP_N_ATTR */
        klp_fail(c->err, n->line, n->col, "AttributeError",
                 "'%s' object has no attribute '%s' (methods must be called, e.g. x.%s())",
                 klp_type_name(v[0]), n->str, n->str);
    }
done:
    for (int i = 0; i < 3; i++) json_decref(v[i]);
    return r;
}

static json_t *eval_fstr(klp_ctx *c, const klp_node *n)
{
    kl_buf b = {0};
    for (size_t i = 0; i < n->n; i++) {
        const klp_node *k = n->kids[i];
        if (!n->ops[i]) {
            kl_buf_add(&b, k->str, k->len);
            continue;
        }
        json_t *v = klp_eval(c, k);
        if (!v) goto fail;
        if (n->ops[i][0] == 'r') klp_repr(&b, v);
        else klp_str(&b, v);
        json_decref(v);
        if (b.n > KLP_MAX_STR) {
            klp_fail(c->err, n->line, n->col, "MemoryError", "result would be too large");
            goto fail;
        }
    }
    json_t *r = b.oom ? NULL : json_stringn(b.s ? b.s : "", b.n);
    kl_buf_free(&b);
    return r ? r : oom(c, n);
fail:
    kl_buf_free(&b);
    return NULL;
}

static json_t *eval_node(klp_ctx *c, const klp_node *n)
{
    json_t *a, *r;
    switch (n->kind) {
    case KLP_N_CONST_INT: return (r = json_integer(n->ival)) ? r : oom(c, n);
    case KLP_N_CONST_FLOAT: return klp_real(c, n, n->fval);
    case KLP_N_CONST_STR: return (r = json_stringn(n->str, n->len)) ? r : oom(c, n);
    case KLP_N_NONE: return json_null();
    case KLP_N_TRUE: return json_true();
    case KLP_N_FALSE: return json_false();
    case KLP_N_NAME: return eval_name(c, n);
    case KLP_N_LIST:
    case KLP_N_DICT: return eval_display(c, n);
    case KLP_N_BINOP:
    case KLP_N_UNARY:
    case KLP_N_NOT:
    case KLP_N_COMPARE:
    case KLP_N_INDEX:
    case KLP_N_SLICE:
    case KLP_N_ATTR: return eval_op(c, n);
    case KLP_N_AND:
    case KLP_N_OR:
        if (!(a = klp_eval(c, n->kids[0]))) return NULL;
        if (klp_truthy(a) == (n->kind == KLP_N_OR)) return a;
        json_decref(a);
        return klp_eval(c, n->kids[1]);
    case KLP_N_IFEXP: {
        if (!(a = klp_eval(c, n->kids[1]))) return NULL;
        int t = klp_truthy(a);
        json_decref(a);
        return klp_eval(c, n->kids[t ? 0 : 2]);
    }
    case KLP_N_CALL: return eval_call(c, n);
    case KLP_N_FSTR: return eval_fstr(c, n);
    default:
        klp_syntax(c->err, n->line, n->col, "invalid syntax (a statement is not an expression)");
        return NULL;
    }
}

json_t *klp_eval(klp_ctx *c, const klp_node *n)
{
    json_t *v = eval_node(c, n);
    if (!v && !c->err->set) klp_fail(c->err, n->line, n->col, "MemoryError", "out of memory");
    if (v && klp_budget_charge_value(c, n, v) < 0) {
        json_decref(v);
        v = NULL;
    }
    /* an error raised at this node gets its full span, for the traceback's carets */
    if (!v && c->err->set && !c->err->end_col && c->err->line == n->line && c->err->col == n->col &&
        n->end_col > n->col)
        c->err->end_col = n->end_col;
    return v;
}
