/* jk_kernel.c - `kiln kernel -f CONNECTION_FILE`: sets up the sockets and threads and
 * runs the shell loop on the calling (main) thread.
 *
 * Threads: publisher (owns the IOPub PUB), heartbeat (echo), control (kernel_info,
 * interrupt, shutdown) and this one, the shell, which runs cells in the engine and
 * owns shell + stdin. Workers are stopped over inproc PAIRs in a fixed order so the
 * last idle and shutdown_reply still reach the clients: control, heartbeat, then the
 * publisher, which drains its queue before closing.
 *
 * SIGINT is blocked in every worker and handled here: it only raises the same atomic
 * interrupt flag interrupt_request raises (the kernelspec asks for message-mode
 * interrupts, but `kill -INT` must not kill the kernel). The handler's pointer to that
 * flag is the one piece of static state, as the house style allows for signals.
 */
#include <errno.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "jk_cli.h"
#include "jk_internal.h"
#include "kl.h"

static atomic_int *volatile sigint_flag;

static void on_sigint(int sig)
{
    (void)sig;
    atomic_int *f = sigint_flag;
    if (f) atomic_store(f, 1);
}

/* A socket of type type bound to the connection's endpoint for channel ch. */
static void *bind_channel(jkp_kernel *k, const jkp_connection *c, int ch, int type, jk_error *err)
{
    char ep[300];
    if (jkp_connection_endpoint(c, ch, ep, sizeof ep) != 0) {
        jkp_fail(err, "%s endpoint too long", jkp_channel_names[ch]);
        return NULL;
    }
    void *s = zmq_socket(k->zctx, type);
    if (!s) {
        jkp_fail(err, "%s socket: %s", jkp_channel_names[ch], zmq_strerror(errno));
        return NULL;
    }
    int linger = 500, on = 1, hwm = 100000;
    int64_t maxmsg = (int64_t)JKP_MAX_MSG_BYTES; /* per frame; refused before buffering */
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg) != 0) {
        jkp_fail(err, "%s socket: ZMQ_MAXMSGSIZE: %s", jkp_channel_names[ch], zmq_strerror(errno));
        zmq_close(s);
        return NULL;
    }
    if (type == ZMQ_ROUTER) zmq_setsockopt(s, ZMQ_ROUTER_HANDOVER, &on, sizeof on);
    /* Training logs come in bursts; the default HWM (1000) would drop them silently.
     * 100k messages (~100 MB) still bounds what a stalled frontend can pin in memory. */
    if (type == ZMQ_PUB) zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm);
    if (zmq_bind(s, ep) != 0) {
        jkp_fail(err, "cannot bind %s to %s: %s", jkp_channel_names[ch], ep, zmq_strerror(errno));
        zmq_close(s);
        return NULL;
    }
    return s;
}

typedef struct kernel_threads {
    jkp_worker publisher, heartbeat, control;
} kernel_threads;

static int start(jkp_kernel *k, const jkp_connection *c, kernel_threads *t, jk_error *err)
{
    if (!(k->shell = bind_channel(k, c, JKP_SHELL, ZMQ_ROUTER, err))) return -1;
    if (!(k->stdin_sock = bind_channel(k, c, JKP_STDIN, ZMQ_ROUTER, err))) return -1;
    if (!(t->control.sock = bind_channel(k, c, JKP_CONTROL, ZMQ_ROUTER, err))) return -1;
    if (!(t->heartbeat.sock = bind_channel(k, c, JKP_HB, ZMQ_ROUTER, err))) return -1;
    if (!(t->publisher.sock = bind_channel(k, c, JKP_IOPUB, ZMQ_PUB, err))) return -1;
    void *pull = t->publisher.sock2 = zmq_socket(k->zctx, ZMQ_PULL);
    int hwm = 100000;
    if (!pull || zmq_setsockopt(pull, ZMQ_RCVHWM, &hwm, sizeof hwm) != 0 ||
        zmq_bind(pull, JKP_IOPUB_INPROC) != 0)
        return jkp_fail(err, "iopub inproc socket: %s", zmq_strerror(errno));
    if (!(k->engine = kl_engine_create(&k->interrupt)))
        return jkp_fail(err, "cannot create the cell engine");
    if (!(k->history = jkp_history_create()) || !(k->comms = jkp_comms_create()))
        return jkp_fail(err, "out of memory");
    if (jkp_worker_start(&t->publisher, k, "publisher", jkp_publisher_main, err) ||
        jkp_worker_start(&t->heartbeat, k, "heartbeat", jkp_heartbeat_main, err) ||
        jkp_worker_start(&t->control, k, "control", jkp_control_main, err))
        return -1;
    return jkp_iopub_init(&k->iopub, k->zctx, &k->session, err);
}

static void stop(jkp_kernel *k, kernel_threads *t)
{
    jkp_worker_stop(&t->control);
    jkp_worker_stop(&t->heartbeat);
    kl_engine_destroy(k->engine);
    jkp_iopub_deinit(&k->iopub);
    jkp_worker_stop(&t->publisher); /* last: drains what the others queued */
    if (k->shell) zmq_close(k->shell);
    if (k->stdin_sock) zmq_close(k->stdin_sock);
    for (size_t i = 0; i < k->naborting; i++) jkp_msg_deinit(&k->aborting[i]);
    free(k->aborting);
    jkp_history_destroy(k->history);
    jkp_comms_destroy(k->comms);
}

/* The kernel is going (shutdown or restart): each live form's display becomes its
 * table of values, so the notebook saved after this shows them instead of "Error
 * displaying widget: model not found". Frontends route update_display_data by its
 * display_id, so the parent is empty. */
static void forms_fallback(jkp_kernel *k, jkp_chan *ch)
{
    jkp_msg parent;
    memset(&parent, 0, sizeof parent);
    parent.header = json_object();
    jkp_exec x = {ch, &parent, 0, 0, 0, NULL};
    mg_out out;
    jkp_outputs_init(&out, &x);
    int n = parent.header ? kl_engine_forms_fallback(k->engine, &out) : 0;
    if (n)
        jkp_log("shutdown: %d form%s shown as %s table", n, n == 1 ? "" : "s",
                n == 1 ? "its" : "their");
    json_decref(parent.header);
    free(x.result_text);
}

/* Serves shell until a shutdown_request; -1 if the shell socket itself fails. The
 * caller owns shell and keeps it until the engine is destroyed: a cell's detached outputs
 * (a background sweep's live table) publish through it from another thread until then. */
static int shell_loop(jkp_kernel *k, jkp_chan *shell, void *control_ctl)
{
    zmq_pollitem_t items[2] = {{k->shell, 0, ZMQ_POLLIN, 0}, {control_ctl, 0, ZMQ_POLLIN, 0}};
    while (!atomic_load(&k->shutdown)) {
        if (zmq_poll(items, 2, -1) < 0) {
            if (errno == EINTR) continue;
            jkp_log("shell: poll failed: %s", zmq_strerror(errno));
            return -1;
        }
        if (items[1].revents & ZMQ_POLLIN) { /* "shutdown" from the control thread */
            char word[16];
            zmq_recv(control_ctl, word, sizeof word, ZMQ_DONTWAIT);
        }
        if (!(items[0].revents & ZMQ_POLLIN) || atomic_load(&k->shutdown)) continue;
        jkp_msg m;
        jk_error err;
        int rc = jkp_msg_recv(k->shell, &k->session, &m, &err);
        if (rc == -2 && errno != EINTR && errno != EAGAIN) {
            jkp_log("shell: receive failed: %s", zmq_strerror(errno));
            return -1;
        }
        if (rc == -1) jkp_log("shell: dropped a message: %s", err.msg);
        if (rc == -3) {
            jkp_refuse(shell, &m, err.msg);
            jkp_msg_deinit(&m);
        }
        if (rc != 0) continue;
        jkp_dispatch(shell, jkp_shell_handlers, &m);
        jkp_msg_deinit(&m);
        while (k->naborting) jkp_abort_run(shell);
    }
    forms_fallback(k, shell);
    return 0;
}

int jk_kernel_main(const char *connection_file, const mg_settings *settings)
{
    jkp_connection conn;
    jk_error err;
    if (jkp_connection_load(connection_file, &conn, &err) != 0) {
        fprintf(stderr, "kiln kernel: %s\n", err.msg);
        return 2;
    }
    jkp_kernel k;
    memset(&k, 0, sizeof k);
    jkp_chan shell = {&k, NULL, &k.iopub, "shell", NULL}; /* lives until stop() */
    atomic_init(&k.interrupt, 0);
    atomic_init(&k.shutdown, 0);
    atomic_init(&k.restart, 0);
    kernel_threads t;
    memset(&t, 0, sizeof t);
    jkp_hmac *hmac = jkp_hmac_create(conn.scheme, conn.key, conn.keylen, &err);
    if (hmac && conn.keylen == 0) /* as jupyter_client warns: nothing is authenticated */
        jkp_log("WARNING: the connection file's key is empty, so message signing is "
                "disabled: anyone who can reach the kernel's ports can run code as this "
                "user. This is insecure and not recommended.");
    int rc = (hmac && jkp_session_init(&k.session, hmac, &err) == 0) ? 0 : -1;
    if (rc == 0 && !(k.zctx = zmq_ctx_new())) rc = jkp_fail(&err, "cannot create a zmq context");
    if (rc == 0) rc = start(&k, &conn, &t, &err);
    if (rc == 0 && settings) *kl_engine_settings(k.engine) = *settings;
    jkp_connection_deinit(&conn);
    char *carry = jkp_carry_path(connection_file);
    if (rc == 0) jkp_carry_in(&k, carry);
    if (rc == 0) {
        shell.sock = k.shell;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_sigint;
        sigemptyset(&sa.sa_mask);
        sigint_flag = &k.interrupt;
        sigaction(SIGINT, &sa, NULL);
        signal(SIGPIPE, SIG_IGN); /* a closed pipe is an error return, not death */
        jkp_log("kernel %s ready (protocol %s)", k.session.session, JKP_PROTOCOL_VERSION);
        jkp_publish_status(&k.iopub, NULL, "starting");
        rc = shell_loop(&k, &shell, t.control.ctl);
        sigint_flag = NULL;
        jkp_carry_out(&k, carry);
    } else {
        fprintf(stderr, "kiln kernel: %s\n", err.msg);
    }
    if (k.zctx) {
        stop(&k, &t);
        zmq_ctx_term(k.zctx);
    }
    jkp_session_deinit(&k.session); /* owns hmac from jkp_session_init on */
    free(carry);
    return rc == 0 ? 0 : 1;
}
