/* jk_dispatch.c - the shell dispatch table and the rule every request follows:
 *   iopub busy -> handler (replies, outputs) -> iopub idle, all with parent = request.
 * Unknown message types are logged and still get busy/idle (no reply), as the spec
 * allows; nothing a client sends can crash the loop.
 *
 * stop_on_error: when an execute_request fails, the requests already queued behind it
 * are set aside before its idle goes out; then the execute_requests among them are
 * answered "aborted" without running (ipykernel's behaviour) and the other types are
 * served normally (papermill relies on that). Taking the snapshot before the idle
 * matters: a client that saw the idle and sent the next cell must not lose it.
 * The snapshot waits ABORT_WINDOW_MS for requests still on their way: "Run all" sends
 * every cell at once, and a cell that fails in microseconds (a NameError in the first
 * cell) used to finish before the cells behind it had arrived, so they ran anyway.
 * The window delays only a failing cell's reply and idle (the snapshot is taken before
 * both), so nothing sent after a client saw the reply is lost.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zmq.h>

#include "jk_internal.h"

const jkp_handler jkp_shell_handlers[] = {
    {"execute_request", jkp_handle_execute},
    {"kernel_info_request", jkp_handle_kernel_info},
    {"complete_request", jkp_handle_complete},
    {"inspect_request", jkp_handle_inspect},
    {"is_complete_request", jkp_handle_is_complete},
    {"history_request", jkp_handle_history},
    {"comm_info_request", jkp_handle_comm_info},
    {"comm_open", jkp_handle_comm_frontend},
    {"comm_msg", jkp_handle_comm_frontend},
    {"comm_close", jkp_handle_comm_frontend},
    {"shutdown_request", jkp_handle_shutdown}, /* deprecated on shell since 5.4 */
    {NULL, NULL},
};

void jkp_dispatch(jkp_chan *ch, const jkp_handler *table, const jkp_msg *req)
{
    jkp_publish_status(ch->iopub, req->header, "busy");
    const jkp_handler *h = table;
    while (h->msg_type && strcmp(h->msg_type, req->msg_type) != 0) h++;
    if (h->fn) h->fn(ch, req);
    else jkp_log("%s: unknown message type '%.64s' ignored", ch->name, req->msg_type);
    jkp_publish_status(ch->iopub, req->header, "idle");
}

void jkp_refuse(jkp_chan *ch, const jkp_msg *req, const char *why)
{
    jkp_log("%s: refused %.64s: %s", ch->name, req->msg_type, why);
    size_t len = strlen(req->msg_type), suffix = strlen("_request");
    if (len <= suffix || strcmp(req->msg_type + len - suffix, "_request") != 0) return;
    char reply[96];
    int base = (int)(len - suffix < 80 ? len - suffix : 80);
    snprintf(reply, sizeof reply, "%.*s_reply", base, req->msg_type);
    jkp_publish_status(ch->iopub, req->header, "busy");
    jkp_reply(ch->sock, &ch->k->session, req, reply, NULL,
              json_pack("{s:s, s:s, s:s, s:[]}", "status", "error", "ename", "MessageRefused",
                        "evalue", why, "traceback"));
    jkp_publish_status(ch->iopub, req->header, "idle");
}

static void send_aborted(jkp_chan *ch, const jkp_msg *req)
{
    jkp_publish_status(ch->iopub, req->header, "busy");
    jkp_log("aborting %s %s (an earlier cell failed)", req->msg_type, req->msg_id);
    jkp_reply(ch->sock, &ch->k->session, req, "execute_reply",
              json_pack("{s:s, s:b, s:s}", "status", "aborted", "dependencies_met", 1, "engine",
                        ch->k->session.session),
              json_pack("{s:s}", "status", "aborted"));
    jkp_publish_status(ch->iopub, req->header, "idle");
}

#define ABORT_WINDOW_MS 50

static long long monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void jkp_abort_snapshot(jkp_chan *ch)
{
    jkp_kernel *k = ch->k;
    zmq_pollitem_t item = {ch->sock, 0, ZMQ_POLLIN, 0};
    long long deadline = monotonic_ms() + ABORT_WINDOW_MS;
    for (;;) {
        long long left = deadline - monotonic_ms();
        int n = zmq_poll(&item, 1, left > 0 ? (long)left : 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0 || !(item.revents & ZMQ_POLLIN)) break;
        jkp_msg m;
        jk_error err;
        int rc = jkp_msg_recv(ch->sock, &k->session, &m, &err);
        if (rc == -2) break;
        if (rc == -1) {
            jkp_log("shell: dropped a message: %s", err.msg);
            continue;
        }
        if (rc == -3) {
            jkp_refuse(ch, &m, err.msg);
            jkp_msg_deinit(&m);
            continue;
        }
        jkp_msg *grown = realloc(k->aborting, (k->naborting + 1) * sizeof *grown);
        if (!grown) { /* cannot hold it back: serve it now rather than lose it */
            jkp_log("out of memory while aborting; serving %s", m.msg_type);
            jkp_dispatch(ch, jkp_shell_handlers, &m);
            jkp_msg_deinit(&m);
            continue;
        }
        k->aborting = grown;
        k->aborting[k->naborting++] = m;
    }
}

void jkp_abort_run(jkp_chan *ch)
{
    jkp_kernel *k = ch->k;
    jkp_msg *list = k->aborting;
    size_t n = k->naborting;
    k->aborting = NULL; /* a handler below may take a new snapshot */
    k->naborting = 0;
    for (size_t i = 0; i < n; i++) {
        if (!atomic_load(&k->shutdown)) {
            if (!strcmp(list[i].msg_type, "execute_request")) send_aborted(ch, &list[i]);
            else jkp_dispatch(ch, jkp_shell_handlers, &list[i]);
        }
        jkp_msg_deinit(&list[i]);
    }
    free(list);
}
