/* test_wire.c - jk_wire.c, jk_text.c and kl_json_text beyond the data-driven cases:
 * messages the kernel builds parse back with the same key, carry the header clients
 * need (fresh msg_id, one session, UTC date, version 5.4), travel over real
 * ROUTER/DEALER sockets, an oversized message is refused without desynchronising the
 * socket, a signed message refused for its frame count still yields the header to
 * answer, and a replayed signature is dropped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#include "jk_internal.h"
#include "kl.h"
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
                            json_pack("{s:s, s:i}", "status", "ok", "execution_count", 3), f, &err),
              0);
    ASSERT_EQ(jkp_msg_build(s, "execute_reply", parent, NULL, json_pack("{s:s}", "status", "ok"), g,
                            &err),
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

static void pair(void *ctx, const char *ep, void **router, void **dealer)
{
    int zero = 0;
    *router = zmq_socket(ctx, ZMQ_ROUTER);
    *dealer = zmq_socket(ctx, ZMQ_DEALER);
    zmq_setsockopt(*router, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(*dealer, ZMQ_LINGER, &zero, sizeof zero);
    zmq_bind(*router, ep);
    zmq_connect(*dealer, ep);
}

/* Sends the 5 built frames (after the delimiter), then nextra empty buffer frames. */
static void send_built(void *dealer, jkp_bytes f[5], size_t nextra)
{
    zmq_send(dealer, JKP_DELIM, 9, ZMQ_SNDMORE);
    for (int i = 0; i < 5; i++)
        zmq_send(dealer, f[i].data, f[i].len, i < 4 || nextra ? ZMQ_SNDMORE : 0);
    for (size_t i = 0; i < nextra; i++) zmq_send(dealer, "", 0, i + 1 < nextra ? ZMQ_SNDMORE : 0);
}

/* Too many frames: nothing beyond the limit is kept, and since the signed part
 * verifies, the caller gets the identities and header to send an error reply. An
 * unsigned one with as many frames is just dropped. */
T_TEST(too_many_frames_signed_is_answerable)
{
    void *ctx = zmq_ctx_new(), *router, *dealer;
    pair(ctx, "inproc://frames-test", &router, &dealer);
    jkp_session *s = new_session("frames-key");
    jk_error err;
    jkp_bytes f[5];
    ASSERT_EQ(
        jkp_msg_build(s, "execute_request", NULL, NULL, json_pack("{s:s}", "code", "1"), f, &err),
        0);
    send_built(dealer, f, 3 * JKP_MAX_FRAMES);
    jkp_msg m;
    ASSERT_EQ(jkp_msg_recv(router, s, &m, &err), -3);
    ASSERT_STR_CONTAINS(err.msg, "frames refused");
    ASSERT_STR_EQ(m.msg_type, "execute_request");
    ASSERT_EQ(m.nids, 1);
    ASSERT(m.content == NULL && m.nbuffers == 0);
    jkp_msg_deinit(&m);
    jkp_session *other = new_session("not-the-key");
    jkp_bytes g[5];
    ASSERT_EQ(jkp_msg_build(other, "execute_request", NULL, NULL, json_pack("{s:s}", "code", "1"),
                            g, &err),
              0);
    send_built(dealer, g, 3 * JKP_MAX_FRAMES);
    ASSERT_EQ(jkp_msg_recv(router, s, &m, &err), -1);
    ASSERT(m.header == NULL && m.ids == NULL);
    /* signed, within the limits, but its content is not JSON: answerable too */
    jkp_bytes_deinit(&f[4]);
    f[4].data = strdup("{\"code\": ");
    f[4].len = strlen(f[4].data);
    jkp_view parts[4];
    for (int i = 0; i < 4; i++) parts[i] = (jkp_view){f[i + 1].data, f[i + 1].len};
    char hex[JKP_HMAC_HEX_MAX];
    ASSERT_EQ(jkp_hmac_sign(s->hmac, parts, hex, &err), 0);
    memcpy(f[0].data, hex, f[0].len);
    send_built(dealer, f, 0);
    ASSERT_EQ(jkp_msg_recv(router, s, &m, &err), -3);
    ASSERT_STR_CONTAINS(err.msg, "malformed JSON in content");
    ASSERT_STR_EQ(m.msg_type, "execute_request");
    jkp_msg_deinit(&m);
    for (int i = 0; i < 5; i++) {
        jkp_bytes_deinit(&f[i]);
        jkp_bytes_deinit(&g[i]);
    }
    free_session(s);
    free_session(other);
    zmq_close(router);
    zmq_close(dealer);
    zmq_ctx_term(ctx);
}

/* The same signed frames twice: the first is served, the second dropped as a replay. */
T_TEST(replayed_message_is_dropped)
{
    void *ctx = zmq_ctx_new(), *router, *dealer;
    pair(ctx, "inproc://replay-test", &router, &dealer);
    jkp_session *s = new_session("replay-key");
    jk_error err;
    jkp_bytes f[5];
    ASSERT_EQ(jkp_msg_build(s, "execute_request", NULL, NULL,
                            json_pack("{s:s}", "code", "x = x + 1"), f, &err),
              0);
    send_built(dealer, f, 0);
    send_built(dealer, f, 0);
    jkp_msg m;
    ASSERT_EQ(jkp_msg_recv(router, s, &m, &err), 0);
    jkp_msg_deinit(&m);
    ASSERT_EQ(jkp_msg_recv(router, s, &m, &err), -1);
    ASSERT_STR_CONTAINS(err.msg, "replayed");
    ASSERT(m.header == NULL);
    for (int i = 0; i < 5; i++) jkp_bytes_deinit(&f[i]);
    free_session(s);
    zmq_close(router);
    zmq_close(dealer);
    zmq_ctx_term(ctx);
}

/* The history is bounded: after JKP_REPLAY_HISTORY newer signatures the oldest is
 * forgotten (memory stays fixed), while a recent one is still caught. */
T_TEST(replay_history_is_bounded)
{
    jkp_replay *r = jkp_replay_create();
    ASSERT(r != NULL);
    char sig[65];
    for (int i = 0; i <= JKP_REPLAY_HISTORY; i++) {
        snprintf(sig, sizeof sig, "%08x%056d", i, 0);
        jkp_view v = {sig, 64};
        ASSERT_EQ(jkp_replay_seen(r, &v), 0);
    }
    snprintf(sig, sizeof sig, "%08x%056d", JKP_REPLAY_HISTORY - 5, 0);
    jkp_view recent = {sig, 64};
    ASSERT_EQ(jkp_replay_seen(r, &recent), 1);
    snprintf(sig, sizeof sig, "%08x%056d", 0, 0); /* evicted by the last insert */
    jkp_view oldest = {sig, 64};
    ASSERT_EQ(jkp_replay_seen(r, &oldest), 0);
    jkp_view unsigned_msg = {"", 0};
    ASSERT_EQ(jkp_replay_seen(r, &unsigned_msg), 0);
    ASSERT_EQ(jkp_replay_seen(r, &unsigned_msg), 0);
    jkp_replay_destroy(r);
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
    /* 1. an oversized message: two 40 MiB frames, 80 MiB in all */
    size_t big = (size_t)40 << 20;
    char *blob = malloc(big);
    memset(blob, 'a', big);
    zmq_send(dealer, JKP_DELIM, 9, ZMQ_SNDMORE);
    zmq_send(dealer, "sig", 3, ZMQ_SNDMORE);
    for (int i = 0; i < 3; i++) zmq_send(dealer, "{}", 2, ZMQ_SNDMORE);
    zmq_send(dealer, blob, big, ZMQ_SNDMORE);
    zmq_send(dealer, blob, big, 0);
    free(blob);
    /* 2. a normal request right behind it */
    ASSERT_EQ(jkp_msg_send(dealer, s, NULL, 0, "kernel_info_request", NULL, NULL, NULL, &err), 0);
    jkp_msg m;
    ASSERT_EQ(jkp_msg_recv(router, s, &m, &err), -1);
    ASSERT_STR_CONTAINS(err.msg, "bytes refused");
    ASSERT_EQ(jkp_msg_recv(router, s, &m, &err), 0); /* still in step */
    ASSERT_STR_EQ(m.msg_type, "kernel_info_request");
    ASSERT_EQ(m.nids, 1);
    ASSERT_EQ(m.ids[0].len, 8);
    ASSERT(!memcmp(m.ids[0].data, "client-7", 8));
    /* 3. the reply finds its way back, parent = request header */
    ASSERT_EQ(
        jkp_reply(router, s, &m, "kernel_info_reply", NULL, json_pack("{s:s}", "status", "ok")), 0);
    jkp_msg r;
    ASSERT_EQ(jkp_msg_recv(dealer, s, &r, &err), 0);
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
    json_t *ok = kl_json_text(s, strlen(s));
    ASSERT_STR_EQ(json_string_value(ok), s);
    json_decref(ok);
    const char bad[] = {'a', (char)0xff, 'b', 0, 'c', (char)0xe2, (char)0x98};
    json_t *fixed = kl_json_text(bad, sizeof bad);
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
    T_RUN(too_many_frames_signed_is_answerable);
    T_RUN(replayed_message_is_dropped);
    T_RUN(replay_history_is_bounded);
    T_RUN(utf8_helpers);
    return T_EXIT();
}
