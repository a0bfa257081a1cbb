/* jk_control.c - the control channel: its own thread, so kernel_info, interrupts and
 * shutdowns are answered while the shell thread is busy running a cell.
 *
 * interrupt_request (and SIGINT, see jk_kernel.c) only raise the kernel's atomic
 * interrupt flag; the engine polls it and ends the cell with KeyboardInterrupt.
 * shutdown_request replies on the channel it came on with `restart` echoed, raises
 * the interrupt flag so a running cell stops, and tells the shell thread to wind down;
 * the process then exits (a restart is the manager starting a new process).
 */
#include <errno.h>
#include <string.h>

#include <zmq.h>

#include "jk_internal.h"

static const jkp_handler control_handlers[] = {
    {"kernel_info_request", jkp_handle_kernel_info},
    {"interrupt_request", jkp_handle_interrupt},
    {"shutdown_request", jkp_handle_shutdown},
    {NULL, NULL},
};

void jkp_handle_interrupt(jkp_chan *ch, const jkp_msg *req)
{
    atomic_store(&ch->k->interrupt, 1);
    jkp_log("interrupt requested");
    jkp_reply(ch->sock, &ch->k->session, req, "interrupt_reply", NULL,
              json_pack("{s:s}", "status", "ok"));
}

void jkp_handle_shutdown(jkp_chan *ch, const jkp_msg *req)
{
    int restart = json_is_true(json_object_get(req->content, "restart"));
    json_t *content = json_pack("{s:s, s:b}", "status", "ok", "restart", restart);
    jkp_reply(ch->sock, &ch->k->session, req, "shutdown_reply", NULL, json_incref(content));
    jkp_publish(ch->iopub, "shutdown_reply", req->header, NULL, content); /* as ipykernel */
    atomic_store(&ch->k->restart, restart);
    atomic_store(&ch->k->shutdown, 1);
    atomic_store(&ch->k->interrupt, 1); /* a running cell stops */
    if (ch->notify && zmq_send(ch->notify, "shutdown", 8, 0) < 0)
        jkp_log("control: cannot notify the shell thread: %s", zmq_strerror(errno));
    jkp_log("shutdown requested on %s (restart=%s)", ch->name, restart ? "true" : "false");
}

void *jkp_control_main(void *arg)
{
    jkp_worker *w = arg;
    jkp_iopub iopub;
    jk_error err;
    if (jkp_iopub_init(&iopub, w->k->zctx, &w->k->session, &err) != 0) {
        jkp_log("control thread: %s", err.msg);
        zmq_close(w->sock);
        zmq_close(w->peer);
        return NULL;
    }
    jkp_chan ch = {w->k, w->sock, &iopub, "control", w->peer};
    zmq_pollitem_t items[2] = {{w->sock, 0, ZMQ_POLLIN, 0}, {w->peer, 0, ZMQ_POLLIN, 0}};
    for (;;) {
        if (zmq_poll(items, 2, -1) < 0) {
            if (errno == EINTR) continue;
            jkp_log("control: poll failed: %s", zmq_strerror(errno));
            break;
        }
        if (items[0].revents & ZMQ_POLLIN) {
            jkp_msg m;
            int rc = jkp_msg_recv(w->sock, &w->k->session, &m, &err);
            if (rc == -1) jkp_log("control: dropped a message: %s", err.msg);
            if (rc == -3) {
                jkp_refuse(&ch, &m, err.msg);
                jkp_msg_deinit(&m);
            }
            if (rc == 0) {
                jkp_dispatch(&ch, control_handlers, &m);
                jkp_msg_deinit(&m);
            }
        }
        if (items[1].revents & ZMQ_POLLIN) break; /* "stop" */
    }
    jkp_iopub_deinit(&iopub);
    zmq_close(w->sock);
    zmq_close(w->peer);
    return NULL;
}
