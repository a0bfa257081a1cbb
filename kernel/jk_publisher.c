/* jk_publisher.c - the IOPub publisher thread: the only owner of the PUB socket.
 *
 * Shell and control threads hand it complete, signed multipart messages over an
 * inproc PULL (jk_iopub.c); it forwards each one frame by frame, zero-copy. On "stop"
 * it drains what is still queued, so the last idle/shutdown_reply reaches the clients
 * before the socket closes (with a short linger).
 */
#include <errno.h>

#include <zmq.h>

#include "jk_internal.h"

/* Forwards one whole multipart message from pull to pub; 0, or -1 when nothing came. */
static int forward_one(void *pull, void *pub, int flags)
{
    int more = 1, first = 1;
    while (more) {
        zmq_msg_t part;
        zmq_msg_init(&part);
        if (zmq_msg_recv(&part, pull, first ? flags : 0) < 0) {
            zmq_msg_close(&part);
            if (first) return -1;
            if (errno == EINTR) continue;
            return -1;
        }
        first = 0;
        more = zmq_msg_more(&part);
        if (zmq_msg_send(&part, pub, more ? ZMQ_SNDMORE : 0) < 0) {
            jkp_log("iopub: send failed: %s", zmq_strerror(errno));
            zmq_msg_close(&part);
        }
    }
    return 0;
}

void *jkp_publisher_main(void *arg)
{
    jkp_worker *w = arg;
    zmq_pollitem_t items[2] = {{w->sock2, 0, ZMQ_POLLIN, 0}, {w->peer, 0, ZMQ_POLLIN, 0}};
    for (;;) {
        if (zmq_poll(items, 2, -1) < 0) {
            if (errno == EINTR) continue;
            jkp_log("publisher: poll failed: %s", zmq_strerror(errno));
            break;
        }
        if (items[0].revents & ZMQ_POLLIN) forward_one(w->sock2, w->sock, 0);
        if (items[1].revents & ZMQ_POLLIN) break; /* "stop" */
    }
    while (forward_one(w->sock2, w->sock, ZMQ_DONTWAIT) == 0) {}
    zmq_close(w->sock2);
    zmq_close(w->sock);
    zmq_close(w->peer);
    return NULL;
}
