/* jk_heartbeat.c - the heartbeat thread: echoes every message on the hb ROUTER back
 * to its sender, frames unchanged. It runs apart from the shell so a kernel busy
 * training for hours still answers within the client's 1 s deadline.
 */
#include <errno.h>

#include <zmq.h>

#include "jk_internal.h"

static void echo_one(void *sock)
{
    int more = 1;
    while (more) {
        zmq_msg_t part;
        zmq_msg_init(&part);
        if (zmq_msg_recv(&part, sock, 0) < 0) {
            zmq_msg_close(&part);
            if (errno == EINTR) continue;
            return;
        }
        more = zmq_msg_more(&part);
        if (zmq_msg_send(&part, sock, more ? ZMQ_SNDMORE : 0) < 0) zmq_msg_close(&part);
    }
}

void *jkp_heartbeat_main(void *arg)
{
    jkp_worker *w = arg;
    zmq_pollitem_t items[2] = {{w->sock, 0, ZMQ_POLLIN, 0}, {w->peer, 0, ZMQ_POLLIN, 0}};
    for (;;) {
        if (zmq_poll(items, 2, -1) < 0) {
            if (errno == EINTR) continue;
            jkp_log("heartbeat: poll failed: %s", zmq_strerror(errno));
            break;
        }
        if (items[0].revents & ZMQ_POLLIN) echo_one(w->sock);
        if (items[1].revents & ZMQ_POLLIN) break; /* "stop" */
    }
    zmq_close(w->sock);
    zmq_close(w->peer);
    return NULL;
}
