/* jk_complete_inspect.c - the editor helpers: complete_request, inspect_request and
 * is_complete_request, answered by the engine (kl_engine_complete/inspect/is_complete).
 * Cursor positions are Unicode code points on the wire and for the engine; a missing
 * cursor_pos means the end of the code, and an out-of-range one is clamped.
 */
#include <string.h>

#include "jk_internal.h"
#include "kl.h"

static const char *req_code(const jkp_msg *req)
{
    const char *code = json_string_value(json_object_get(req->content, "code"));
    return code ? code : "";
}

static int req_cursor(const jkp_msg *req, const char *code)
{
    int len = (int)jkp_utf8_len(code);
    json_t *c = json_object_get(req->content, "cursor_pos");
    if (!json_is_integer(c)) return len;
    json_int_t v = json_integer_value(c);
    return v < 0 ? 0 : v > len ? len : (int)v;
}

void jkp_handle_complete(jkp_chan *ch, const jkp_msg *req)
{
    const char *code = req_code(req);
    int cursor = req_cursor(req, code);
    json_t *r = kl_engine_complete(ch->k->engine, code, cursor);
    json_t *matches = json_object_get(r, "matches");
    json_t *start = json_object_get(r, "cursor_start"), *end = json_object_get(r, "cursor_end");
    json_t *md = json_object_get(r, "metadata");
    json_t *content = json_pack(
        "{s:s, s:o, s:I, s:I, s:o}", "status", "ok", "matches",
        json_is_array(matches) ? json_incref(matches) : json_array(), "cursor_start",
        (json_int_t)(json_is_integer(start) ? json_integer_value(start) : cursor), "cursor_end",
        (json_int_t)(json_is_integer(end) ? json_integer_value(end) : cursor), "metadata",
        json_is_object(md) ? json_incref(md) : json_object());
    json_decref(r);
    jkp_reply(ch->sock, &ch->k->session, req, "complete_reply", NULL, content);
}

void jkp_handle_inspect(jkp_chan *ch, const jkp_msg *req)
{
    const char *code = req_code(req);
    json_t *dl = json_object_get(req->content, "detail_level");
    int detail = json_is_integer(dl) && json_integer_value(dl) > 0 ? 1 : 0;
    json_t *data = kl_engine_inspect(ch->k->engine, code, req_cursor(req, code), detail);
    int found = json_is_object(data) && json_object_size(data) > 0;
    if (!found) {
        json_decref(data);
        data = json_object();
    }
    jkp_reply(ch->sock, &ch->k->session, req, "inspect_reply", NULL,
              json_pack("{s:s, s:b, s:o, s:{}}", "status", "ok", "found", found, "data", data,
                        "metadata"));
}

void jkp_handle_is_complete(jkp_chan *ch, const jkp_msg *req)
{
    const char *indent = "";
    const char *status = kl_engine_is_complete(ch->k->engine, req_code(req), &indent);
    if (!status) status = "unknown";
    json_t *content = json_pack("{s:s}", "status", status);
    if (!strcmp(status, "incomplete"))
        json_object_set_new(content, "indent", json_string(indent ? indent : ""));
    jkp_reply(ch->sock, &ch->k->session, req, "is_complete_reply", NULL, content);
}
