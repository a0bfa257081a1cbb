/* kl_exec.c - runs a parsed cell statement by statement: assignments (chained, to
 * names and subscripts), augmented assignments, del, %magics, !commands and NAME?
 * help. The last statement, when it is a bare expression not ended by ';' and not
 * None, becomes the execute_result (repr).
 * The interrupt flag is checked between statements. */
#include <stdlib.h>
#include <string.h>

#include "kl_internal.h"

static int set_item(klp_ctx *c, const klp_node *n, json_t *obj, json_t *idx, json_t *value)
{
    if ((json_is_array(value) || json_is_object(value)) && klp_reaches(value, obj))
        return klp_fail(c->err, n->line, n->col, "ValueError",
                        "a list or dict cannot contain itself in Kiln (its values are JSON)");
    json_t *old = json_is_array(obj) ? klp_index(c, n, obj, idx) : NULL; /* checks idx */
    if (json_is_array(obj) && !old) return -1;
    if (old) {
        long long i = json_is_boolean(idx) ? json_is_true(idx) : json_integer_value(idx);
        json_decref(old);
        return json_array_set(obj, (size_t)(i < 0 ? i + (long long)json_array_size(obj) : i),
                              value);
    }
    if (json_is_object(obj)) {
        if (!json_is_string(idx))
            return klp_fail(c->err, n->line, n->col, "TypeError",
                            "dict keys must be str in Kiln (JSON objects), not %s",
                            klp_type_name(idx));
        if (json_object_setn(obj, json_string_value(idx), json_string_length(idx), value) < 0)
            return klp_fail(c->err, n->line, n->col, "MemoryError", "out of memory");
        return 0;
    }
    return klp_fail(c->err, n->line, n->col, "TypeError",
                    "'%s' object does not support item assignment", klp_type_name(obj));
}

/* t is a name or a subscript (the parser allows nothing else). */
static int assign(klp_ctx *c, const klp_node *t, json_t *value)
{
    if (t->kind == KLP_N_NAME)
        return json_object_set(c->eng->vars, t->str, value) < 0
                   ? klp_fail(c->err, t->line, t->col, "MemoryError", "out of memory")
                   : 0;
    json_t *obj = klp_eval(c, t->kids[0]), *idx = obj ? klp_eval(c, t->kids[1]) : NULL;
    int rc = idx ? set_item(c, t, obj, idx, value) : -1;
    json_decref(obj);
    json_decref(idx);
    return rc;
}

/* x op= y is x = x op y (a list gets a new list, as a str or a number does); a
 * subscript's object and index are evaluated once. */
static int aug_assign(klp_ctx *c, const klp_node *s)
{
    const klp_node *t = s->kids[0];
    char op[4] = {0};
    memcpy(op, s->op, strlen(s->op) - 1);
    json_t *obj = NULL, *idx = NULL, *cur, *rhs = NULL, *res = NULL;
    if (t->kind == KLP_N_INDEX) {
        obj = klp_eval(c, t->kids[0]);
        idx = obj ? klp_eval(c, t->kids[1]) : NULL;
        cur = idx ? klp_index(c, t, obj, idx) : NULL;
    } else {
        cur = klp_eval(c, t);
    }
    if (cur && (rhs = klp_eval(c, s->kids[1])) && (res = klp_binop(c, s, op, cur, rhs)) &&
        klp_budget_charge_value(c, s, res) < 0) {
        json_decref(res);
        res = NULL;
    }
    int rc = !res ? -1 : obj ? set_item(c, t, obj, idx, res) : assign(c, t, res);
    json_decref(obj);
    json_decref(idx);
    json_decref(cur);
    json_decref(rhs);
    json_decref(res);
    return rc;
}

static int show_result(klp_ctx *c, json_t *v)
{
    if (json_is_null(v) || !c->out || !c->out->result) return 0;
    kl_buf b = {0};
    klp_repr(&b, v);
    json_t *bundle = json_object();
    if (!b.oom && bundle)
        json_object_set_new(bundle, "text/plain", json_stringn(b.s ? b.s : "", b.n));
    if (bundle) c->out->result(c->out->user, bundle, NULL);
    json_decref(bundle);
    kl_buf_free(&b);
    return 0;
}

static int run_stmt(klp_ctx *c, const klp_node *s, int last)
{
    switch (s->kind) {
    case KLP_S_EXPR: {
        json_t *v = klp_eval(c, s->kids[0]);
        if (!v) return -1;
        if (last && !s->suppress) show_result(c, v);
        json_decref(v);
        return 0;
    }
    case KLP_S_ASSIGN: {
        json_t *v = klp_eval(c, s->kids[s->n - 1]);
        if (!v) return -1;
        int rc = 0;
        for (size_t i = 0; rc == 0 && i + 1 < s->n; i++) rc = assign(c, s->kids[i], v);
        json_decref(v);
        return rc;
    }
    case KLP_S_AUGASSIGN: return aug_assign(c, s);
    case KLP_S_DEL:
        for (size_t i = 0; i < s->n; i++)
            if (json_object_del(c->eng->vars, s->kids[i]->str) < 0)
                return klp_fail(c->err, s->kids[i]->line, s->kids[i]->col, "NameError",
                                "name '%s' is not defined", s->kids[i]->str);
        return 0;
    case KLP_S_PASS: return 0;
    case KLP_S_MAGIC: return klp_magic_line(c, s);
    case KLP_S_SHELL: {
        char *cmd = klp_interpolate(c->eng, s->str);
        if (!cmd)
            return klp_fail(
                c->err, s->line, 0, "MemoryError",
                "the command is too large after $name/{expr} expansion (or out of memory)");
        int status = 0;
        int rc = klp_shell_run(c->eng, cmd, c->out, &status, c->err);
        free(cmd);
        if (rc < 0 && c->err->line == 0) c->err->line = s->line;
        return rc;
    }
    case KLP_S_HELP: return klp_help(c, s->str);
    default: return klp_fail(c->err, s->line, s->col, "SystemError", "unknown statement");
    }
}

int klp_exec(klp_ctx *c, const klp_prog *p)
{
    for (size_t i = 0; i < p->n; i++) {
        if (klp_interrupted(c->eng))
            return klp_fail(c->err, p->stmts[i]->line, 0, "KeyboardInterrupt", "interrupted");
        klp_budget_statement(&c->eng->budget);
        if (run_stmt(c, p->stmts[i], i + 1 == p->n) < 0) {
            if (c->err->line == 0) c->err->line = p->stmts[i]->line;
            return -1;
        }
    }
    return 0;
}
