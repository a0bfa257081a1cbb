/* kl_engine.c - the public face of the cell engine (kl.h): owns the variable
 * namespace (a JSON object, in definition order), the magics' session slots and the
 * host interface magics call back into; routes a cell to the cell-magic path or to
 * lex -> parse -> exec; converts the internal error into a Jupyter error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fm.h"
#include "kl_internal.h"

mg_settings *kl_engine_settings(kl_engine *e) { return &e->settings; }

int klp_interrupted(kl_engine *e) { return e->interrupt && atomic_load(e->interrupt) != 0; }

/* ---- host callbacks ---- */

static json_t *host_var_get(void *u, const char *name)
{
    return json_object_get(((kl_engine *)u)->vars, name);
}

static int host_var_set(void *u, const char *name, json_t *value)
{
    return kl_engine_var_set(u, name, value);
}

static const char *host_type_name(void *u, json_t *v) { return klp_type_name(v); }

static json_t *host_var_names(void *u)
{
    kl_engine *e = u;
    json_t *names = json_array();
    const char *k;
    json_t *v;
    json_object_foreach(e->vars, k, v) json_array_append_new(names, json_string(k));
    return names;
}

static int run_code(kl_engine *e, const char *code, const mg_out *out, klp_err *err);

static int host_run_cell(void *u, const char *code, const mg_out *out, mg_error *merr)
{
    kl_engine *e = u;
    klp_err err = {0};
    if (e->run_depth >= KLP_MAX_RUN_DEPTH) {
        snprintf(merr->ename, sizeof merr->ename, "RecursionError");
        snprintf(merr->evalue, sizeof merr->evalue, "cells nested too deeply");
        return -1;
    }
    e->run_depth++;
    int rc = run_code(e, code ? code : "", out, &err);
    e->run_depth--;
    e->nested = err; /* lets the magic's caller point at the failing body line */
    if (rc < 0) {
        snprintf(merr->ename, sizeof merr->ename, "%s", err.ename);
        snprintf(merr->evalue, sizeof merr->evalue, err.line > 0 ? "%.900s (line %d)" : "%s",
                 err.evalue, err.line);
    }
    return rc;
}

static int host_interrupted(void *u) { return klp_interrupted(u); }

/* ---- lifetime ---- */

kl_engine *kl_engine_create(atomic_int *interrupt)
{
    kl_engine *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    e->interrupt = interrupt;
    klp_budget_init(&e->budget, getenv("KILN_VALUE_BUDGET"));
    e->vars = json_object();
    e->session = mg_session_create();
    e->forms = fm_registry_create();
    if (!e->vars || !e->session || !e->forms) {
        kl_engine_destroy(e);
        return NULL;
    }
    e->host = (mg_host){.user = e,
                        .var_get = host_var_get,
                        .var_set = host_var_set,
                        .var_names = host_var_names,
                        .type_name = host_type_name,
                        .run_cell = host_run_cell,
                        .interrupted = host_interrupted};
    return e;
}

void kl_engine_destroy(kl_engine *e)
{
    if (!e) return;
    fm_registry_destroy(e->forms);
    free(e->next_input);
    mg_session_destroy(e->session);
    json_decref(e->vars);
    free(e);
}

/* ---- running code ---- */

static const char *skip_blank_lines(const char *code)
{
    const char *p = code, *line = code;
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') {
        if (*p == '\n') line = p + 1;
        p++;
    }
    return *p == '%' && p[1] == '%' ? p : line;
}

static int run_code(kl_engine *e, const char *code, const mg_out *out, klp_err *err)
{
    if (!klp_utf8_valid(code, strlen(code)))
        return klp_syntax(err, 1, 1, "(unicode error) the cell is not valid UTF-8");
    const char *start = skip_blank_lines(code);
    if (start[0] == '%' && start[1] == '%') {
        int rc = klp_magic_cell(e, start, out, err);
        for (const char *p = code; rc < 0 && err->line > 0 && p < start; p++)
            if (*p == '\n') err->line++;
        return rc;
    }
    klp_arena *a = klp_arena_create();
    if (!a) return klp_fail(err, 0, 0, "MemoryError", "out of memory");
    klp_toks toks;
    klp_prog prog;
    int rc = -1;
    if (klp_lex(a, code, &toks, err) == 0 && klp_parse(a, &toks, &prog, err) == 0) {
        klp_ctx c = {.eng = e, .out = out, .err = err};
        rc = klp_exec(&c, &prog);
    }
    klp_arena_destroy(a);
    return rc;
}

int kl_engine_execute(kl_engine *e, const char *code, const mg_out *out, json_t *cell_metadata,
                      kl_error *err)
{
    klp_err ie = {0};
    memset(err, 0, sizeof *err);
    if (!code) code = "";
    mg_out full;
    out = mg_out_complete(out, &full); /* magics and forms may call any output */
    e->cell_metadata = cell_metadata;
    /* Colab form annotations: parsed before the cell runs, shown after it succeeded.
     * A malformed annotation does not change what the code means: the cell runs as
     * written, then ends with the annotation's error (naming its line) so that "Run
     * all" stops there and the user sees it. */
    fm_form *form = NULL;
    mg_error merr = {{0}, {0}};
    int bad_form = klp_utf8_valid(code, strlen(code)) && fm_form_parse(code, &form, &merr) < 0;
    /* the form cell run again as it was: the values set in its widgets stay and are
     * written into the code (the frontend gets it as set_next_input), as Colab does */
    free(e->next_input);
    e->next_input = NULL;
    const char *key = json_string_value(json_object_get(cell_metadata, "cellId"));
    char *wb = form && key ? fm_registry_write_back(e->forms, key, code, &e->host) : NULL;
    fm_form *wform = NULL;
    mg_error werr = {{0}, {0}};
    if (wb && fm_form_parse(wb, &wform, &werr) == 0 && wform) {
        fm_form_destroy(form);
        form = wform;
        code = e->next_input = wb;
    } else {
        free(wb);
    }
    int rc = run_code(e, code, out, &ie);
    if (rc == 0 && bad_form) {
        int line = 0;
        sscanf(merr.evalue, "line %d", &line);
        rc = klp_fail(&ie, line, 0, merr.ename[0] ? merr.ename : "SyntaxError", "%s", merr.evalue);
    }
    if (rc == 0 && form) {
        mg_error serr = {{0}, {0}};
        rc = fm_registry_show(e->forms, form, cell_metadata, &e->host, out, &serr);
        form = NULL;
        if (rc < 0)
            klp_fail(&ie, 0, 0, serr.ename[0] ? serr.ename : "ValueError", "%s", serr.evalue);
    }
    fm_form_destroy(form);
    e->cell_metadata = NULL;
    if (rc < 0) klp_err_export(&ie, code, err);
    return rc;
}

/* Evaluates one expression source to a new value (for interpolation and
 * user_expressions); NULL with err. */
json_t *klp_eval_source(kl_engine *e, const char *src, const mg_out *out, klp_err *err)
{
    mg_out full;
    out = mg_out_complete(out, &full);
    if (!klp_utf8_valid(src, strlen(src))) {
        klp_syntax(err, 1, 1, "(unicode error) not valid UTF-8");
        return NULL;
    }
    klp_arena *a = klp_arena_create();
    if (!a) return NULL;
    klp_node *n;
    json_t *v = NULL;
    if (klp_parse_expr(a, src, &n, err) == 0) {
        klp_ctx c = {.eng = e, .out = out, .err = err};
        v = klp_eval(&c, n);
    }
    klp_arena_destroy(a);
    return v;
}

json_t *kl_engine_eval_expression(kl_engine *e, const char *expr)
{
    klp_err err = {0};
    json_t *v = klp_eval_source(e, expr ? expr : "", NULL, &err);
    if (!v) {
        kl_error ke;
        klp_err_export(&err, expr, &ke);
        json_t *r =
            json_pack("{s:s, s:s, s:s, s:o}", "status", "error", "ename", ke.ename, "evalue",
                      ke.evalue, "traceback", ke.traceback ? ke.traceback : json_array());
        return r;
    }
    kl_buf b = {0};
    klp_repr(&b, v);
    json_decref(v);
    json_t *r = json_pack("{s:s, s:{s:s%}, s:{}}", "status", "ok", "data", "text/plain",
                          b.s ? b.s : "", b.n, "metadata");
    kl_buf_free(&b);
    return r;
}

json_t *kl_engine_var_get(kl_engine *e, const char *name) { return json_object_get(e->vars, name); }

int kl_engine_var_set(kl_engine *e, const char *name, json_t *value)
{
    if (!value) return -1;
    if (!name || !*name || strlen(name) > 256) {
        json_decref(value);
        return -1;
    }
    return json_object_set_new(e->vars, name, value);
}

int kl_engine_comm_msg(kl_engine *e, const char *msg_type, json_t *content, const mg_out *out)
{
    if (!msg_type || !content) return -1;
    mg_out full;
    return fm_registry_comm_msg(e->forms, msg_type, content, &e->host, mg_out_complete(out, &full));
}

json_t *kl_engine_widget_state(kl_engine *e) { return fm_registry_widget_state(e->forms); }

char *kl_engine_take_next_input(kl_engine *e)
{
    char *s = e->next_input;
    e->next_input = NULL;
    return s;
}

int kl_engine_forms_fallback(kl_engine *e, const mg_out *out)
{
    mg_out full;
    return fm_registry_fallback_all(e->forms, &e->host, mg_out_complete(out, &full));
}

json_t *kl_engine_forms_carry(kl_engine *e) { return fm_registry_carry(e->forms, &e->host); }

int kl_engine_forms_carry_in(kl_engine *e, json_t *doc)
{
    return fm_registry_carry_in(e->forms, doc);
}
