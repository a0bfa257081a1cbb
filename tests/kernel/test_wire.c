/* test_wire.c - jk_wire.c / jk_text.c beyond the data-driven cases: messages the kernel
 * builds parse back with the same key, carry the header clients need (fresh msg_id,
 * one session, UTC date, version 5.4), travel over real ROUTER/DEALER sockets, and an
 * oversized message is refused without desynchronising the socket. */
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "jk_internal.h"
#include "t.h"

static jkp_session *new_session(const char *key)
{
    jk_error err;
    jkp_session *s = malloc(sizeof *s);
    jkp_hmac *h = jkp_hmac_create("hmac-sha256", key, strlen(key), &err);
    if (!s || !h || jkp_session_init(s, h, &err) != 0) return NULL;
    return s;
}

static void free_session(jkp_session *s)
{
    jkp_session_deinit(s);
    free(s);
}

/* Parses built frames back as if received after one identity. */
static int parse_built(jkp_bytes f[5], const jkp_hmac *h, jkp_msg *m, jk_error *err)
{
    jkp_view v[7] = {{"id", 2}, {JKP_DELIM, 9}};
    for (int i = 0; i < 5; i++) v[i + 2] = (jkp_view){f[i].data, f[i].len};
    return jkp_msg_parse(v, 7, h, m, err);
}

T_TEST(build_then_parse_round_trip)
{
    jkp_session *s = new_session("round-trip-key");
    ASSERT(s != NULL);
    json_t *parent = json_pack("{s:s}", "msg_id", "req-1");
    jkp_bytes f[5], g[5];
    jk_error err;
    ASSERT_EQ(jkp_msg_build(s, "execute_reply", parent, NULL,
                            json_pack("{s:s, s:i}", "status", "ok", "execution_count", 3),
                            f, &err),
              0);
    ASSERT_EQ(jkp_msg_build(s, "execute_reply", parent, NULL,
                            json_pack("{s:s}", "status", "ok"), g, &err),
              0);
    ASSERT_EQ(f[0].len, 64);
    ASSERT(strcmp(f[0].data, g[0].data) != 0); /* fresh msg_id -> fresh signature */
    jkp_msg m, n;
    ASSERT_EQ(parse_built(f, s->hmac, &m, &err), 0);
    ASSERT_EQ(parse_built(g, s->hmac, &n, &err), 0);
    ASSERT_STR_EQ(m.msg_type, "execute_reply");
    ASSERT(strcmp(m.msg_id, n.msg_id) != 0);
    ASSERT_STR_EQ(json_string_value(json_object_get(m.header, "version")), "5.4");
    ASSERT_STR_EQ(json_string_value(json_object_get(m.header, "session")), s->session);
    ASSERT_STR_EQ(json_string_value(json_object_get(n.header, "session")), s->session);
    const char *date = json_string_value(json_object_get(m.header, "date"));
    ASSERT(date && strlen(date) == 27 && date[10] == 'T' && date[26] == 'Z');
    ASSERT_STR_EQ(json_string_value(json_object_get(m.parent, "msg_id")), "req-1");
    ASSERT_EQ(json_integer_value(json_object_get(m.content, "execution_count")), 3);
    ASSERT_EQ(json_object_size(m.metadata), 0);
    ASSERT_EQ(m.nids, 1);
    jkp_msg_deinit(&m);
    /* a different key refuses the same frames */
    jkp_session *other = new_session("another-key");
    jkp_msg o;
    ASSERT_EQ(parse_built(g, other->hmac, &o, &err), -1);
    ASSERT_STR_CONTAINS(err.msg, "bad signature");
    jkp_msg_deinit(&n);
    for (int i = 0; i < 5; i++) {
        jkp_bytes_deinit(&f[i]);
        jkp_bytes_deinit(&g[i]);
    }
    json_decref(parent);
    free_session(s);
    free_session(other);
}

T_TEST(session_is_a_uuid4)
{
    jkp_session *s = new_session("k");
    ASSERT(s != NULL);
    ASSERT_EQ(strlen(s->session), 36);
    ASSERT(s->session[8] == '-' && s->session[14] == '4');
    jkp_session *t = new_session("k");
    ASSERT(strcmp(s->session, t->session) != 0);
    free_session(s);
    free_session(t);
}

/* DEALER -> ROUTER (kernel side) -> reply -> DEALER, and an oversized message. */
T_TEST(sockets_and_oversized_message)
{
    void *ctx = zmq_ctx_new();
    void *router = zmq_socket(ctx, ZMQ_ROUTER), *dealer = zmq_socket(ctx, ZMQ_DEALER);
    ASSERT_EQ(zmq_bind(router, "inproc://wire-test"), 0);
    ASSERT_EQ(zmq_setsockopt(dealer, ZMQ_ROUTING_ID, "client-7", 8), 0);
    ASSERT_EQ(zmq_connect(dealer, "inproc://wire-test"), 0);
    jkp_session *s = new_session("socket-key");
    jk_error err;
    /* 1. an oversized message: 9 MB content */
    size_t big = (size_t)9 << 20;
    char *blob = malloc(big);
    memset(blob, 'a', big);
    zmq_send(dealer, JKP_DELIM, 9, ZMQ_SNDMORE);
    zmq_send(dealer, "sig", 3, ZMQ_SNDMORE);
    for (int i = 0; i < 3; i++) zmq_send(dealer, "{}", 2, ZMQ_SNDMORE);
    zmq_send(dealer, blob, big, 0);
    free(blob);
    /* 2. a normal request right behind it */
    ASSERT_EQ(
        jkp_msg_send(dealer, s, NULL, 0, "kernel_info_request", NULL, NULL, NULL, &err),
        0);
    jkp_msg m;
    ASSERT_EQ(jkp_msg_recv(router, s->hmac, &m, &err), -1);
    ASSERT_STR_CONTAINS(err.msg, "refused");
    ASSERT_EQ(jkp_msg_recv(router, s->hmac, &m, &err), 0); /* still in step */
    ASSERT_STR_EQ(m.msg_type, "kernel_info_request");
    ASSERT_EQ(m.nids, 1);
    ASSERT_EQ(m.ids[0].len, 8);
    ASSERT(!memcmp(m.ids[0].data, "client-7", 8));
    /* 3. the reply finds its way back, parent = request header */
    ASSERT_EQ(jkp_reply(router, s, &m, "kernel_info_reply", NULL,
                        json_pack("{s:s}", "status", "ok")),
              0);
    jkp_msg r;
    ASSERT_EQ(jkp_msg_recv(dealer, s->hmac, &r, &err), 0);
    ASSERT_STR_EQ(r.msg_type, "kernel_info_reply");
    ASSERT_STR_EQ(json_string_value(json_object_get(r.parent, "msg_id")), m.msg_id);
    ASSERT_EQ(r.nids, 0);
    jkp_msg_deinit(&m);
    jkp_msg_deinit(&r);
    free_session(s);
    int zero = 0;
    zmq_setsockopt(router, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(dealer, ZMQ_LINGER, &zero, sizeof zero);
    zmq_close(router);
    zmq_close(dealer);
    zmq_ctx_term(ctx);
}

T_TEST(utf8_helpers)
{
    const char *s = "h\xc3\xa9\xe2\x98\x83\xf0\x9f\x98\x80!"; /* h é ☃ 😀 ! */
    ASSERT_EQ(jkp_utf8_len(s), 5);
    ASSERT_EQ(jkp_utf8_offset(s, 0), 0);
    ASSERT_EQ(jkp_utf8_offset(s, 2), 3);
    ASSERT_EQ(jkp_utf8_offset(s, 4), 10);
    ASSERT_EQ(jkp_utf8_offset(s, 99), strlen(s));
    json_t *ok = jkp_json_text(s, strlen(s));
    ASSERT_STR_EQ(json_string_value(ok), s);
    json_decref(ok);
    const char bad[] = {'a', (char)0xff, 'b', 0, 'c', (char)0xe2, (char)0x98};
    json_t *fixed = jkp_json_text(bad, sizeof bad);
    ASSERT(fixed != NULL);
    ASSERT_STR_EQ(json_string_value(fixed), "a\xef\xbf\xbd"
                                            "b\xef\xbf\xbd"
                                            "c\xef\xbf\xbd\xef\xbf\xbd");
    json_decref(fixed);
}

int main(void)
{
    T_RUN(build_then_parse_round_trip);
    T_RUN(session_is_a_uuid4);
    T_RUN(sockets_and_oversized_message);
    T_RUN(utf8_helpers);
    return T_EXIT();
}
