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
    json_t *v = json_object_get(klp_vars(c->eng), n->str);
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

static json_t *eval_seq(klp_ctx *c, const klp_node *n)
{
    json_t *arr = json_array();
    if (!arr) return oom(c, n);
    int nested = 0;
    for (size_t i = 0; i < n->n; i++) {
        json_t *v = klp_eval(c, n->kids[i]);
        if (!v) {
            json_decref(arr);
            return NULL;
        }
        nested |= json_is_array(v) || json_is_object(v);
        if (json_array_append_new(arr, v) < 0) {
            json_decref(arr);
            return oom(c, n);
        }
    }
    if (nested && klp_check_depth(c, n, arr) < 0) {
        json_decref(arr);
        return NULL;
    }
    return arr;
}

static json_t *eval_dict(klp_ctx *c, const klp_node *n)
{
    json_t *obj = json_object();
    if (!obj) return oom(c, n);
    int nested = 0;
    for (size_t i = 0; i + 1 < n->n; i += 2) {
        json_t *k = klp_eval(c, n->kids[i]);
        if (!k) goto fail;
        if (!json_is_string(k)) {
            klp_fail(c->err, n->kids[i]->line, n->kids[i]->col, "TypeError",
                     "dict keys must be str in Kiln (JSON objects), not %s", klp_type_name(k));
            json_decref(k);
            goto fail;
        }
        json_t *v = klp_eval(c, n->kids[i + 1]);
        if (!v) {
            json_decref(k);
            goto fail;
        }
        nested |= json_is_array(v) || json_is_object(v);
        int rc = json_object_setn_new(obj, json_string_value(k), json_string_length(k), v);
        json_decref(k);
        if (rc < 0) {
            oom(c, n);
            goto fail;
        }
    }
    if (nested && klp_check_depth(c, n, obj) < 0) goto fail;
    return obj;
fail:
    json_decref(obj);
    return NULL;
}

static json_t *eval_call(klp_ctx *c, const klp_node *n)
{
    const klp_node *callee = n->kids[0];
    size_t na = 0, nk = 0, total = n->n - 1;
    json_t **args = calloc(total + 1, sizeof *args), **kw = calloc(total + 1, sizeof *kw);
    const char **kwn = calloc(total + 1, sizeof *kwn);
    json_t *self = NULL, *res = NULL;
    if (!args || !kw || !kwn) {
        oom(c, n);
        goto done;
    }
    for (size_t i = 1; i < n->n; i++) {
        json_t *v = klp_eval(c, n->kids[i]);
        if (!v) goto done;
        if (n->ops[i]) {
            kwn[nk] = n->ops[i];
            kw[nk++] = v;
        } else {
            args[na++] = v;
        }
    }
    if (callee->kind == KLP_N_ATTR) {
        if (nk) {
            klp_fail(c->err, n->line, n->col, "TypeError", "%s() takes no keyword arguments",
                     callee->str);
            goto done;
        }
        if (!(self = klp_eval(c, callee->kids[0]))) goto done;
        res = klp_call_method(c, n, self, callee->str, args, na);
    } else if (callee->kind == KLP_N_NAME && !json_object_get(klp_vars(c->eng), callee->str)) {
        /* a builtin, or a NameError that lists the builtins */
        res = klp_call_builtin(c, n, callee->str, args, na, kwn, kw, nk);
    } else {
        json_t *v = klp_eval(c, callee);
        if (v)
            klp_fail(c->err, n->line, n->col, "TypeError", "'%s' object is not callable",
                     klp_type_name(v));
        json_decref(v);
    }
done:
    for (size_t i = 0; args && i < na; i++) json_decref(args[i]);
    for (size_t i = 0; kw && i < nk; i++) json_decref(kw[i]);
    json_decref(self);
    free(args);
    free(kw);
    free(kwn);
    return res;
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
    json_t *a, *b, *r;
    switch (n->kind) {
    case KLP_N_CONST_INT: return (r = json_integer(n->ival)) ? r : oom(c, n);
    case KLP_N_CONST_FLOAT: return klp_real(c, n, n->fval);
    case KLP_N_CONST_STR: return (r = json_stringn(n->str, n->len)) ? r : oom(c, n);
    case KLP_N_NONE: return json_null();
    case KLP_N_TRUE: return json_true();
    case KLP_N_FALSE: return json_false();
    case KLP_N_NAME: return eval_name(c, n);
    case KLP_N_LIST: return eval_seq(c, n);
    case KLP_N_DICT: return eval_dict(c, n);
    case KLP_N_BINOP:
        if (!(a = klp_eval(c, n->kids[0]))) return NULL;
        if (!(b = klp_eval(c, n->kids[1]))) {
            json_decref(a);
            return NULL;
        }
        r = klp_binop(c, n, n->op, a, b);
        json_decref(a);
        json_decref(b);
        return r;
    case KLP_N_UNARY:
        if (!(a = klp_eval(c, n->kids[0]))) return NULL;
        r = klp_unary(c, n, n->op, a);
        json_decref(a);
        return r;
    case KLP_N_NOT:
        if (!(a = klp_eval(c, n->kids[0]))) return NULL;
        r = json_boolean(!klp_truthy(a));
        json_decref(a);
        return r;
    case KLP_N_AND:
    case KLP_N_OR:
        if (!(a = klp_eval(c, n->kids[0]))) return NULL;
        if (klp_truthy(a) == (n->kind == KLP_N_OR)) return a;
        json_decref(a);
        return klp_eval(c, n->kids[1]);
    case KLP_N_COMPARE: {
        int ok = -1;
        if ((a = klp_eval(c, n->kids[0])) && (b = klp_eval(c, n->kids[1]))) {
            ok = klp_compare(c, n, n->op, a, b);
            json_decref(b);
        }
        json_decref(a);
        return ok < 0 ? NULL : json_boolean(ok);
    }
    case KLP_N_IFEXP: {
        if (!(a = klp_eval(c, n->kids[1]))) return NULL;
        int t = klp_truthy(a);
        json_decref(a);
        return klp_eval(c, n->kids[t ? 0 : 2]);
    }
    case KLP_N_CALL: return eval_call(c, n);
    case KLP_N_INDEX:
        if (!(a = klp_eval(c, n->kids[0]))) return NULL;
        if (!(b = klp_eval(c, n->kids[1]))) {
            json_decref(a);
            return NULL;
        }
        r = klp_index(c, n, a, b);
        json_decref(a);
        json_decref(b);
        return r;
    case KLP_N_SLICE: {
        json_t *v[3] = {NULL, NULL, NULL};
        r = NULL;
        for (int i = 0; i < 3; i++)
            if (n->kids[i] && !(v[i] = klp_eval(c, n->kids[i]))) goto slice_done;
        r = klp_slice(c, n, v[0], v[1], v[2]);
    slice_done:
        for (int i = 0; i < 3; i++) json_decref(v[i]);
        return r;
    }
    case KLP_N_ATTR:
        if (!(a = klp_eval(c, n->kids[0]))) return NULL;
        klp_fail(c->err, n->line, n->col, "AttributeError",
                 "'%s' object has no attribute '%s' (methods must be called, e.g. x.%s())",
                 klp_type_name(a), n->str, n->str);
        json_decref(a);
        return NULL;
    case KLP_N_FSTR: return eval_fstr(c, n);
    default:
        klp_syntax(c->err, n->line, n->col, "invalid syntax (a statement is not an expression)");
        return NULL;
    }
}

json_t *klp_eval(klp_ctx *c, const klp_node *n)
{
    json_t *v = eval_node(c, n);
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
