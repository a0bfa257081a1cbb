/* jk_iopub.c - the sending half of IOPub, one instance per thread that publishes
 * (shell, control). Each owns a PUSH socket connected over inproc to the publisher
 * thread (jk_publisher.c), which alone owns the real PUB socket. Messages are built
 * and signed here, in the sending thread, so the publisher only forwards frames and
 * the order of one thread's messages is kept.
 *
 * Publishing never fails the caller: a message that cannot be sent is logged.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <zmq.h>

#include "jk_internal.h"

int jkp_iopub_init(jkp_iopub *io, void *zctx, jkp_session *s, jk_error *err)
{
    memset(io, 0, sizeof *io);
    io->session = s;
    io->sock = zmq_socket(zctx, ZMQ_PUSH);
    if (!io->sock) return jkp_fail(err, "iopub push socket: %s", zmq_strerror(errno));
    /* Back-pressure instead of loss: a PUSH blocks when the inproc pipe is full. */
    int hwm = 100000, linger = 1000;
    zmq_setsockopt(io->sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(io->sock, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_connect(io->sock, JKP_IOPUB_INPROC) != 0) {
        jkp_fail(err, "connect %s: %s", JKP_IOPUB_INPROC, zmq_strerror(errno));
        zmq_close(io->sock);
        io->sock = NULL;
        return -1;
    }
    pthread_mutex_init(&io->lock, NULL);
    return 0;
}

void jkp_iopub_deinit(jkp_iopub *io)
{
    if (!io || !io->sock) return;
    zmq_close(io->sock);
    io->sock = NULL;
    pthread_mutex_destroy(&io->lock);
}

void jkp_publish(jkp_iopub *io, const char *msg_type, json_t *parent, json_t *metadata,
                 json_t *content)
{
    char topic[128];
    snprintf(topic, sizeof topic, "kernel.%s.%s", io->session->session, msg_type);
    jkp_bytes ids = {topic, strlen(topic)};
    jk_error err;
    pthread_mutex_lock(&io->lock);
    int rc =
        jkp_msg_send(io->sock, io->session, &ids, 1, msg_type, parent, metadata, content, &err);
    pthread_mutex_unlock(&io->lock);
    if (rc != 0) jkp_log("iopub: %s", err.msg);
}

void jkp_publish_status(jkp_iopub *io, json_t *parent, const char *state)
{
    jkp_publish(io, "status", parent, NULL, json_pack("{s:s}", "execution_state", state));
}
