/* jk_execute.c - execute_request: the order clients wait for is
 *   busy -> execute_input -> outputs -> execute_reply -> idle
 * (busy/idle come from jk_dispatch.c). The cell itself runs in the engine
 * (kernel/lang, kl_engine_execute); this file maps the request's flags onto it:
 * silent (no execute_input, no outputs, no history), store_history (counts and
 * records), user_expressions (evaluated only after success), allow_stdin (jk_stdin.c),
 * stop_on_error (jk_dispatch.c sets the queued requests aside before the idle).
 *
 * A one-line `NAME?`/`NAME??` cell whose NAME the engine can inspect becomes a pager
 * payload ({"source": "page"}), which is how Jupyter frontends show help.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "jk_internal.h"
#include "kl.h"

/* For `name?` / `%magic??` returns a new string "name" and the detail level; else NULL.
 */
static char *help_target(const char *code, int *detail)
{
    while (isspace((unsigned char)*code)) code++;
    size_t n = strlen(code);
    while (n && isspace((unsigned char)code[n - 1])) n--;
    size_t q = 0;
    while (q < n && q < 2 && code[n - 1 - q] == '?') q++;
    if (q == 0 || q == n) return NULL;
    size_t len = n - q;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)code[i];
        if (!(isalnum(c) || c == '_' || c == '.' || (c == '%' && i < 2))) return NULL;
    }
    char *name = strndup(code, len);
    *detail = (int)q - 1;
    return name;
}

static json_t *page_payload(jkp_kernel *k, const char *code)
{
    int detail = 0;
    char *name = help_target(code, &detail);
    if (!name) return NULL;
    json_t *bundle = kl_engine_inspect(k->engine, name, (int)jkp_utf8_len(name), detail);
    free(name);
    if (!json_is_object(bundle) || !json_object_get(bundle, "text/plain")) {
        json_decref(bundle);
        return NULL;
    }
    return json_pack("[{s:s, s:o, s:i}]", "source", "page", "data", bundle, "start", 0);
}

static json_t *eval_user_expressions(jkp_kernel *k, json_t *exprs)
{
    json_t *out = json_object();
    const char *name;
    json_t *v;
    json_object_foreach(exprs, name, v)
    {
        json_t *r =
            json_is_string(v) ? kl_engine_eval_expression(k->engine, json_string_value(v)) : NULL;
        if (!r)
            r = json_pack("{s:s, s:s, s:s, s:[]}", "status", "error", "ename", "TypeError",
                          "evalue", "user expression must be a string", "traceback");
        json_object_set_new(out, name, r);
    }
    return out;
}

static json_t *reply_metadata(jkp_kernel *k, const char *started, const char *status)
{
    return json_pack("{s:s, s:b, s:s, s:s}", "started", started, "dependencies_met", 1, "engine",
                     k->session.session, "status", status);
}

/* The cell failed: one iopub error (unless silent) and an error execute_reply with the
 * same ename/evalue/traceback (text made valid UTF-8 whatever the engine wrote). */
static void send_error(jkp_chan *ch, const jkp_exec *x, const kl_error *e, const char *started)
{
    jkp_kernel *k = ch->k;
    const char *ename = e->ename[0] ? e->ename : "Error";
    size_t nlen = strnlen(ename, sizeof e->ename), vlen = strnlen(e->evalue, sizeof e->evalue);
    json_t *tb = json_is_array(e->traceback) ? json_incref(e->traceback) : json_array();
    if (!x->silent)
        jkp_publish(ch->iopub, "error", x->req->header, NULL,
                    json_pack("{s:o, s:o, s:O}", "ename", kl_json_text(ename, nlen), "evalue",
                              kl_json_text(e->evalue, vlen), "traceback", tb));
    jkp_reply(ch->sock, &k->session, x->req, "execute_reply", reply_metadata(k, started, "error"),
              json_pack("{s:s, s:i, s:o, s:o, s:o}", "status", "error", "execution_count", x->count,
                        "ename", kl_json_text(ename, nlen), "evalue", kl_json_text(e->evalue, vlen),
                        "traceback", tb));
}

void jkp_handle_execute(jkp_chan *ch, const jkp_msg *req)
{
    jkp_kernel *k = ch->k;
    json_t *c = req->content;
    const char *code = json_string_value(json_object_get(c, "code"));
    int silent = json_is_true(json_object_get(c, "silent"));
    json_t *sh = json_object_get(c, "store_history");
    int store = !silent && (sh ? json_is_true(sh) : 1);
    json_t *soe = json_object_get(c, "stop_on_error");
    int stop_on_error = soe ? json_is_true(soe) : 1;
    json_t *uexpr = json_object_get(c, "user_expressions");
    char started[40];
    jkp_now_iso(started, sizeof started);

    if (!code) { /* not a cell we can run: say so, run nothing */
        jkp_reply(ch->sock, &k->session, req, "execute_reply", reply_metadata(k, started, "error"),
                  json_pack("{s:s, s:s, s:s, s:[], s:i}", "status", "error", "ename", "ValueError",
                            "evalue", "execute_request without a string 'code'", "traceback",
                            "execution_count", k->execution_count));
        return;
    }
    if (store) k->execution_count++;
    jkp_exec x = {
        ch, req, silent, json_is_true(json_object_get(c, "allow_stdin")), k->execution_count, NULL};
    if (!silent)
        jkp_publish(ch->iopub, "execute_input", req->header, NULL,
                    json_pack("{s:s, s:i}", "code", code, "execution_count", x.count));

    atomic_store(&k->interrupt, 0);
    kl_error e;
    memset(&e, 0, sizeof e);
    int rc = 0;
    json_t *payload = page_payload(k, code);
    if (!payload) {
        mg_out out;
        jkp_outputs_init(&out, &x);
        rc = kl_engine_execute(k->engine, code, &out, req->metadata, &e);
        payload = json_array();
        char *next = kl_engine_take_next_input(k->engine);
        if (next) /* a form's values written into its cell (replace: the cell itself) */
            json_array_append_new(payload, json_pack("{s:s, s:s, s:b}", "source", "set_next_input",
                                                     "text", next, "replace", 1));
        free(next);
    }
    if (store && jkp_history_add(k->history, x.count, code, x.result_text) != 0)
        jkp_log("history: out of memory, cell %d not recorded", x.count);
    free(x.result_text);

    if (rc == 0) {
        json_t *ue = json_is_object(uexpr) ? eval_user_expressions(k, uexpr) : json_object();
        jkp_reply(ch->sock, &k->session, req, "execute_reply", reply_metadata(k, started, "ok"),
                  json_pack("{s:s, s:i, s:o, s:o}", "status", "ok", "execution_count", x.count,
                            "payload", payload, "user_expressions", ue));
        return;
    }
    json_decref(payload);
    /* Set the queued requests aside BEFORE the error reply: they were sent without
     * knowing of the error ("Run all"), while a client that waits for this reply
     * and then sends its next cell (after an interrupt, say) must not lose it. */
    if (stop_on_error && !silent) jkp_abort_snapshot(ch);
    send_error(ch, &x, &e, started);
    kl_error_deinit(&e);
}
