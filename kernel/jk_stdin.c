/* jk_stdin.c - input_request / input_reply on the stdin channel (mg_out.input).
 *
 * Only when the running execute_request said allow_stdin: the request goes to the
 * same identities as the shell request (a client's stdin socket shares its shell
 * identity) with the execute_request as parent; the shell thread then waits for the
 * input_reply, checking the interrupt flag every 100 ms, so an interrupt (or a
 * shutdown) ends the wait. Stale replies are drained before asking.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "jk_internal.h"
#include "kl.h"

static void drain(void *sock)
{
    zmq_msg_t part;
    zmq_msg_init(&part);
    while (zmq_msg_recv(&part, sock, ZMQ_DONTWAIT) >= 0) {}
    zmq_msg_close(&part);
}

char *jkp_stdin_input(jkp_exec *x, const char *prompt, int password)
{
    jkp_kernel *k = x->ch->k;
    if (!x->allow_stdin || !k->stdin_sock) return NULL;
    drain(k->stdin_sock);
    jk_error err;
    if (jkp_msg_send(k->stdin_sock, &k->session, x->req->ids, x->req->nids, "input_request",
                     x->req->header, NULL,
                     json_pack("{s:o, s:b}", "prompt",
                               kl_json_text(prompt ? prompt : "", prompt ? strlen(prompt) : 0),
                               "password", password),
                     &err) != 0) {
        jkp_log("stdin: %s", err.msg);
        return NULL;
    }
    zmq_pollitem_t item = {k->stdin_sock, 0, ZMQ_POLLIN, 0};
    while (!atomic_load(&k->interrupt) && !atomic_load(&k->shutdown)) {
        int n = zmq_poll(&item, 1, 100);
        if (n < 0 && errno != EINTR) {
            jkp_log("stdin: poll failed: %s", zmq_strerror(errno));
            return NULL;
        }
        if (n <= 0) continue;
        jkp_msg m;
        int rc = jkp_msg_recv(k->stdin_sock, &k->session, &m, &err);
        if (rc == -1 || rc == -3) jkp_log("stdin: dropped a message: %s", err.msg);
        if (rc == -3) jkp_msg_deinit(&m); /* an input_reply is not a request: no reply */
        if (rc != 0) continue;
        char *value = NULL;
        int is_reply = !strcmp(m.msg_type, "input_reply");
        if (is_reply) {
            const char *v = json_string_value(json_object_get(m.content, "value"));
            value = strdup(v ? v : "");
        } else {
            jkp_log("stdin: unexpected '%.64s' ignored", m.msg_type);
        }
        jkp_msg_deinit(&m);
        if (is_reply) return value;
    }
    return NULL;
}
