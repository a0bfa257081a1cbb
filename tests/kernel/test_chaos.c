/* test_chaos.c - allocation-failure sweep (jansson's test_chaos.c idea): fail the n-th
 * heap allocation, for every n, while parsing a request and while building a reply.
 * Each run must end in a clean error (or success once n is past the last allocation),
 * leave the output empty, and free every block it took. The allocations of the wire
 * code, jansson and OpenSSL all go through tests/support/alloc_fail.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_fail.h"
#include "jk_internal.h"
#include "t.h"

static const char *request[] = {
    "client-id",
    JKP_DELIM,
    NULL /* signature */,
    "{\"msg_id\": \"m-1\", \"msg_type\": \"execute_request\", \"session\": \"s\", "
    "\"username\": \"u\", \"date\": \"2026-01-01T00:00:00Z\", \"version\": \"5.4\"}",
    "{}",
    "{\"cellId\": \"c-1\"}",
    "{\"code\": \"x = [1, 2, {\\\"a\\\": 3}]\", \"silent\": false, \"user_expressions\": "
    "{}}",
    "buffer-0"};

T_TEST(parse_sweep)
{
    jk_error err;
    jkp_hmac *h = jkp_hmac_create("hmac-sha256", "chaos", 5, &err);
    ASSERT(h != NULL);
    jkp_view f[8];
    for (int i = 0; i < 8; i++) f[i] = (jkp_view){request[i], request[i] ? strlen(request[i]) : 0};
    char sig[JKP_HMAC_HEX_MAX];
    ASSERT_EQ(jkp_hmac_sign(h, &f[3], sig, &err), 0);
    f[2] = (jkp_view){sig, strlen(sig)};
    jkp_msg m;
    ASSERT_EQ(jkp_msg_parse(f, 8, h, &m, &err), 0); /* warm-up: OpenSSL's one-time caches */
    jkp_msg_deinit(&m);
    alloc_fail_arm(0); /* and its per-thread error state, made on the first error and kept */
    ASSERT_EQ(jkp_msg_parse(f, 8, h, &m, &err), -1);
    alloc_fail_arm(-1);
    long n = 0, failures = 0;
    for (;; n++) {
        long before = alloc_live;
        alloc_fail_arm(n);
        int rc = jkp_msg_parse(f, 8, h, &m, &err);
        int reached = alloc_fail_reached();
        alloc_fail_arm(-1);
        if (rc == 0) {
            /* Only the run with no failure injected must be exact: jansson's lexer drops
             * a character when growing its token buffer fails (load.c lex_save ignores
             * strbuffer_append_byte's error), so a run that "succeeds" can carry a
             * truncated string, e.g. msg_type "execute_reques" (unknown: ignored). */
            if (!reached) ASSERT_STR_EQ(m.msg_type, "execute_request");
            jkp_msg_deinit(&m);
        } else {
            failures++;
            ASSERT(m.header == NULL && m.ids == NULL && m.buffers == NULL);
        }
        if (alloc_live != before)
            fprintf(stderr, "  n=%ld: %ld blocks leaked\n", n, alloc_live - before);
        ASSERT_EQ(alloc_live, before);
        if (!reached) break; /* this run never reached the n-th allocation */
    }
    printf("  parse: %ld allocation points, each failing cleanly\n", failures);
    ASSERT(failures > 5);
    jkp_hmac_destroy(h);
}

T_TEST(build_sweep)
{
    jk_error err;
    jkp_hmac *h = jkp_hmac_create("hmac-sha256", "chaos", 5, &err);
    jkp_session s;
    ASSERT(h != NULL);
    ASSERT_EQ(jkp_session_init(&s, h, &err), 0);
    json_t *parent = json_pack("{s:s}", "msg_id", "m-1");
    jkp_bytes out[5];
    ASSERT_EQ(jkp_msg_build(&s, "execute_reply", parent, NULL, json_pack("{s:s}", "status", "ok"),
                            out, &err),
              0);
    for (int i = 0; i < 5; i++) jkp_bytes_deinit(&out[i]);
    long n = 0, failures = 0;
    for (;; n++) {
        long before = alloc_live; /* the content below is stolen: freed whatever happens */
        json_t *content = json_pack("{s:s, s:i, s:[], s:{}}", "status", "ok", "execution_count", 3,
                                    "payload", "user_expressions");
        alloc_fail_arm(n);
        int rc = jkp_msg_build(&s, "execute_reply", parent, NULL, content, out, &err);
        int reached = alloc_fail_reached();
        alloc_fail_arm(-1);
        if (rc == 0) {
            for (int i = 0; i < 5; i++) jkp_bytes_deinit(&out[i]);
        } else {
            failures++;
            for (int i = 0; i < 5; i++) ASSERT(out[i].data == NULL);
        }
        if (alloc_live != before)
            fprintf(stderr, "  n=%ld: %ld blocks leaked\n", n, alloc_live - before);
        ASSERT_EQ(alloc_live, before);
        if (!reached) break;
    }
    printf("  build: %ld allocation points, each failing cleanly\n", failures);
    ASSERT(failures > 3);
    json_decref(parent);
    jkp_session_deinit(&s);
}
int main(void)
{
    json_set_alloc_funcs(__wrap_malloc, __wrap_free);
    if (alloc_fail_route_crypto() != 0) {
        fprintf(stderr, "OpenSSL allocated before its allocator could be set\n");
        return 99;
    }
    T_RUN(parse_sweep);
    T_RUN(build_sweep);
    return T_EXIT();
}
