/* jk_outputs.c - the IOPub implementation of mg_out (magics/mg.h): what a cell or a
 * comm handler shows becomes stream, display_data / update_display_data,
 * execute_result, clear_output and comm_* messages whose parent is the request being
 * served. A silent execute_request publishes no outputs (comm traffic still flows:
 * it is state, not output). Kernel-opened comms are entered in the comm registry so
 * comm_info_request lists them.
 *
 * All text goes through kl_json_text (kl.h), so bytes that are not UTF-8 (a shell
 * command's binary output) become U+FFFD instead of an unsendable message.
 */
#include <stdlib.h>
#include <string.h>

#include "jk_internal.h"
#include "kl.h"
#include "mg.h"

static void out_stream(void *user, const char *name, const char *text, size_t len)
{
    jkp_exec *x = user;
    if (x->silent || len == 0) return;
    const char *n = (name && !strcmp(name, "stderr")) ? "stderr" : "stdout";
    jkp_publish(x->ch->iopub, "stream", x->req->header, NULL,
                json_pack("{s:s, s:o}", "name", n, "text", kl_json_text(text, len)));
}

static void out_display(void *user, json_t *data, json_t *metadata, const char *display_id,
                        int update)
{
    jkp_exec *x = user;
    if (x->silent || !json_is_object(data)) return;
    json_t *md = json_is_object(metadata) ? json_incref(metadata) : json_object();
    json_t *content = json_pack("{s:O, s:o}", "data", data, "metadata", md);
    if (!content) return;
    if (display_id)
        json_object_set_new(content, "transient", json_pack("{s:s}", "display_id", display_id));
    jkp_publish(x->ch->iopub, update && display_id ? "update_display_data" : "display_data",
                x->req->header, NULL, content);
}

static void out_result(void *user, json_t *data, json_t *metadata)
{
    jkp_exec *x = user;
    if (x->silent || !json_is_object(data)) return;
    const char *text = json_string_value(json_object_get(data, "text/plain"));
    if (text) {
        free(x->result_text);
        x->result_text = strdup(text);
    }
    json_t *md = json_is_object(metadata) ? json_incref(metadata) : json_object();
    jkp_publish(
        x->ch->iopub, "execute_result", x->req->header, NULL,
        json_pack("{s:i, s:O, s:o}", "execution_count", x->count, "data", data, "metadata", md));
}

static void out_clear(void *user, int wait)
{
    jkp_exec *x = user;
    if (x->silent) return;
    jkp_publish(x->ch->iopub, "clear_output", x->req->header, NULL,
                json_pack("{s:b}", "wait", wait));
}

static json_t *comm_content(const char *comm_id, json_t *data)
{
    return json_pack("{s:s, s:o}", "comm_id", comm_id, "data",
                     json_is_object(data) ? json_incref(data) : json_object());
}

static void out_comm_open(void *user, const char *comm_id, const char *target_name, json_t *data,
                          json_t *metadata)
{
    jkp_exec *x = user;
    if (jkp_comms_add(x->ch->k->comms, comm_id, target_name) != 0)
        jkp_log("comm %s: cannot register (out of memory)", comm_id);
    json_t *content = comm_content(comm_id, data);
    json_object_set_new(content, "target_name", json_string(target_name));
    jkp_publish(x->ch->iopub, "comm_open", x->req->header,
                json_is_object(metadata) ? json_incref(metadata) : NULL, content);
}

static void out_comm_msg(void *user, const char *comm_id, json_t *data, json_t *metadata)
{
    jkp_exec *x = user;
    jkp_publish(x->ch->iopub, "comm_msg", x->req->header,
                json_is_object(metadata) ? json_incref(metadata) : NULL,
                comm_content(comm_id, data));
}

static void out_comm_close(void *user, const char *comm_id, json_t *data)
{
    jkp_exec *x = user;
    jkp_comms_remove(x->ch->k->comms, comm_id);
    jkp_publish(x->ch->iopub, "comm_close", x->req->header, NULL, comm_content(comm_id, data));
}

static char *out_input(void *user, const char *prompt, int password)
{
    return jkp_stdin_input(user, prompt, password);
}

/* A cell's outputs kept past the cell: the request's header copied, stream and
 * display only (jkp_publish takes the IOPub lock, so any thread may call them). */
typedef struct detached {
    mg_out out; /* first: release gets it back */
    jkp_msg req;
    jkp_exec x;
} detached;

static void out_release(mg_out *self)
{
    detached *d = (detached *)self;
    if (!d) return;
    json_decref(d->req.header);
    free(d);
}

static mg_out *out_detach(void *user)
{
    jkp_exec *x = user;
    detached *d = calloc(1, sizeof *d);
    if (!d || !(d->req.header = json_deep_copy(x->req->header))) {
        free(d);
        return NULL;
    }
    d->x = (jkp_exec){x->ch, &d->req, x->silent, 0, x->count, NULL};
    d->out = (mg_out){
        .user = &d->x, .stream = out_stream, .display = out_display, .release = out_release};
    return &d->out;
}

void jkp_outputs_init(mg_out *out, jkp_exec *x)
{
    *out = (mg_out){.user = x,
                    .stream = out_stream,
                    .display = out_display,
                    .result = out_result,
                    .clear = out_clear,
                    .comm_open = out_comm_open,
                    .comm_msg = out_comm_msg,
                    .comm_close = out_comm_close,
                    .input = out_input,
                    .detach = out_detach};
}
