/* jk_worker.c - start and stop the helper threads (publisher, heartbeat, control).
 *
 * Each thread is stopped by the word "stop" sent over an inproc PAIR whose one end
 * main keeps (ctl) and whose other end the thread polls next to its socket (peer).
 * The same PAIR carries the control thread's "shutdown" notice back to main. SIGINT
 * is blocked in every worker, so the signal always lands on the shell thread.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <zmq.h>

#include "jk_internal.h"

int jkp_worker_start(jkp_worker *w, jkp_kernel *k, const char *name, void *(*fn)(void *),
                     jk_error *err)
{
    char ep[64];
    snprintf(ep, sizeof ep, "inproc://kiln-ctl-%s", name);
    w->k = k;
    w->ctl = zmq_socket(k->zctx, ZMQ_PAIR);
    w->peer = zmq_socket(k->zctx, ZMQ_PAIR);
    if (!w->ctl || !w->peer || zmq_bind(w->ctl, ep) != 0 || zmq_connect(w->peer, ep) != 0)
        return jkp_fail(err, "%s thread control socket: %s", name, zmq_strerror(errno));
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old); /* the new thread inherits this mask */
    int rc = pthread_create(&w->tid, NULL, fn, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) return jkp_fail(err, "cannot start the %s thread: %s", name, strerror(rc));
    w->started = 1;
    return 0;
}

void jkp_worker_stop(jkp_worker *w)
{
    if (w->started) {
        if (zmq_send(w->ctl, "stop", 4, 0) < 0)
            jkp_log("cannot stop a thread: %s", zmq_strerror(errno));
        pthread_join(w->tid, NULL);
        w->started = 0;
    } else {
        /* never started: the sockets it would have owned are still ours */
        if (w->peer) zmq_close(w->peer);
        if (w->sock) zmq_close(w->sock);
        if (w->sock2) zmq_close(w->sock2);
    }
    w->peer = w->sock = w->sock2 = NULL;
    if (w->ctl) zmq_close(w->ctl);
    w->ctl = NULL;
}
