/* test_chaos.c - allocation-failure sweep (jansson's test_chaos.c idea): fail the n-th
 * heap allocation, for every n, while parsing a request and while building a reply.
 * Each run must end in a clean error (or success once n is past the last allocation),
 * leave the output empty, and free every block it took. malloc/calloc/realloc are
 * interposed here, so this test skips itself under sanitizers and valgrind, which
 * own them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jk_internal.h"
#include "t.h"

#if defined(__SANITIZE_ADDRESS__)
#define KILN_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KILN_SANITIZED 1
#endif
#endif

#ifndef KILN_SANITIZED
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static long fail_at = -1, calls = 0, live = 0;

/* The blocks handed out here, so frees of blocks allocated elsewhere (before main, or
 * by aligned allocators) do not count. Open addressing; never near full here. */
#define NSLOT 65536
static void *slots[NSLOT];
static size_t slot_of(void *p) { return ((size_t)p >> 4) * 2654435761u % NSLOT; }
static void track(void *p)
{
    size_t i = slot_of(p);
    while (slots[i]) i = (i + 1) % NSLOT;
    slots[i] = p;
    live++;
}
static void untrack(void *p)
{
    for (size_t i = slot_of(p); slots[i]; i = (i + 1) % NSLOT) {
        if (slots[i] != p) continue;
        slots[i] = NULL; /* remove, then re-insert the rest of the cluster */
        live--;
        for (size_t j = (i + 1) % NSLOT; slots[j]; j = (j + 1) % NSLOT) {
            void *q = slots[j];
            slots[j] = NULL;
            live--;
            track(q);
        }
        return;
    }
}

static int should_fail(void) { return fail_at >= 0 && calls++ == fail_at; }

/* default visibility: the build hides symbols (-fvisibility=hidden), and a hidden
 * malloc would not interpose the one jansson and OpenSSL call */
#define EXPORT __attribute__((visibility("default")))
EXPORT void *malloc(size_t n)
{
    if (should_fail()) return NULL;
    void *p = __libc_malloc(n);
    if (p) track(p);
    return p;
}
EXPORT void *calloc(size_t a, size_t b)
{
    if (should_fail()) return NULL;
    void *p = __libc_calloc(a, b);
    if (p) track(p);
    return p;
}
EXPORT void *realloc(void *old, size_t n)
{
    if (should_fail()) return NULL;
    void *p = __libc_realloc(old, n);
    if (p) {
        if (old) untrack(old);
        track(p);
    }
    return p;
}
EXPORT void free(void *p)
{
    if (p) untrack(p);
    __libc_free(p);
}

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
    calls = 0;
    fail_at = 0; /* and its per-thread error state, made on the first error and kept */
    ASSERT_EQ(jkp_msg_parse(f, 8, h, &m, &err), -1);
    fail_at = -1;
    long n = 0, failures = 0;
    for (;; n++) {
        long before = live;
        calls = 0;
        fail_at = n;
        int rc = jkp_msg_parse(f, 8, h, &m, &err);
        fail_at = -1;
        if (rc == 0) {
            /* Only the run with no failure injected must be exact: jansson's lexer drops
             * a character when growing its token buffer fails (load.c lex_save ignores
             * strbuffer_append_byte's error), so a run that "succeeds" can carry a
             * truncated string, e.g. msg_type "execute_reques" (unknown: ignored). */
            if (calls <= n) ASSERT_STR_EQ(m.msg_type, "execute_request");
            jkp_msg_deinit(&m);
        } else {
            failures++;
            ASSERT(m.header == NULL && m.ids == NULL && m.buffers == NULL);
        }
        if (live != before) fprintf(stderr, "  n=%ld: %ld blocks leaked\n", n, live - before);
        ASSERT_EQ(live, before);
        if (calls <= n) break; /* this run never reached the n-th allocation */
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
        long before = live; /* the content below is stolen: freed whatever happens */
        json_t *content = json_pack("{s:s, s:i, s:[], s:{}}", "status", "ok", "execution_count", 3,
                                    "payload", "user_expressions");
        calls = 0;
        fail_at = n;
        int rc = jkp_msg_build(&s, "execute_reply", parent, NULL, content, out, &err);
        fail_at = -1;
        if (rc == 0) {
            for (int i = 0; i < 5; i++) jkp_bytes_deinit(&out[i]);
        } else {
            failures++;
            for (int i = 0; i < 5; i++) ASSERT(out[i].data == NULL);
        }
        if (live != before) fprintf(stderr, "  n=%ld: %ld blocks leaked\n", n, live - before);
        ASSERT_EQ(live, before);
        if (calls <= n) break;
    }
    printf("  build: %ld allocation points, each failing cleanly\n", failures);
    ASSERT(failures > 3);
    json_decref(parent);
    jkp_session_deinit(&s);
}
#endif

int main(void)
{
#ifdef KILN_SANITIZED
    printf("skipped: this test interposes malloc, which the sanitizer owns\n");
    (void)t_failures_;
    (void)t_count_;
    return 77;
#else
    /* Valgrind replaces malloc even in the executable: then nothing can be failed. */
    calls = 0;
    fail_at = 0;
    void *(*volatile alloc)(size_t) = malloc; /* a real call, not one GCC elides */
    void *probe = alloc(1);
    fail_at = -1;
    if (probe) {
        free(probe);
        printf("skipped: malloc is replaced by a tool (valgrind?), failures cannot be "
               "injected\n");
        return 77;
    }
    T_RUN(parse_sweep);
    T_RUN(build_sweep);
    return T_EXIT();
#endif
}
