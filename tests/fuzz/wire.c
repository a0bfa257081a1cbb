/* wire.c - fuzz target: Jupyter wire frames -> jkp_msg (jkp_msg_parse: delimiter,
 * identities, HMAC verification before any JSON, header checks, buffers).
 *
 * Input: byte 0 = mode, then frames separated by '\n' (the layout of
 * tests/kernel/wire/<case>/frames, without its escapes).
 *   mode & 1: verify with the key "secret-key" (else signing is off);
 *   mode & 2: the harness re-signs the frame after <IDS|MSG> with the key, so the
 *             fuzzer also reaches the JSON parsing behind a valid signature.
 * Invariants: a parsed message has a msg_type and msg_id and four JSON objects; a
 * refused one leaves the message empty; a signed message with one byte of its
 * content changed is refused. */
#include <string.h>

#include "fz.h"
#include "jk_internal.h"

#define MAX_FRAMES 64

static jkp_hmac *keyed, *unkeyed;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    jk_error err;
    keyed = jkp_hmac_create("hmac-sha256", "secret-key", 10, &err);
    unkeyed = jkp_hmac_create("hmac-sha256", "", 0, &err);
    FZ_CHECK(keyed && unkeyed);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!keyed) LLVMFuzzerInitialize(NULL, NULL);
    if (size < 1) return 0;
    unsigned mode = data[0];
    data++, size--;
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    if (size) memcpy(buf, data, size);
    jkp_view fr[MAX_FRAMES];
    size_t n = 0, start = 0;
    for (size_t i = 0; i <= size && n < MAX_FRAMES; i++)
        if (i == size || buf[i] == '\n') {
            fr[n++] = (jkp_view){buf + start, i - start};
            start = i + 1;
        }
    const jkp_hmac *h = (mode & 1) ? keyed : unkeyed;
    char hex[JKP_HMAC_HEX_MAX];
    size_t delim = n;
    for (size_t i = 0; i < n; i++)
        if (fr[i].len == 9 && !memcmp(fr[i].data, "<IDS|MSG>", 9)) {
            delim = i;
            break;
        }
    int signed_by_us = 0;
    if ((mode & 3) == 3 && delim + 6 <= n) {
        jk_error err;
        if (jkp_hmac_sign(h, &fr[delim + 2], hex, &err) == 0) {
            fr[delim + 1] = (jkp_view){hex, strlen(hex)};
            signed_by_us = 1;
        }
    }
    jkp_msg m;
    memset(&m, 0xA5, sizeof m); /* parse must initialise it whatever happens */
    jk_error err;
    int rc = jkp_msg_parse(fr, n, h, &m, &err);
    if (rc == 0) {
        FZ_CHECK(m.msg_type && m.msg_id && m.msg_type[0]);
        FZ_CHECK(json_is_object(m.header) && json_is_object(m.parent) &&
                 json_is_object(m.metadata) && json_is_object(m.content));
        FZ_CHECK(m.nids == delim);
        FZ_CHECK(m.nbuffers == n - delim - 6);
        jkp_msg_deinit(&m);
        /* the same message with one content byte flipped must not verify */
        if (signed_by_us && fr[delim + 5].len > 0) {
            uint8_t *c = (uint8_t *)fr[delim + 5].data;
            c[0] ^= 1;
            jkp_msg m2;
            int rc2 = jkp_msg_parse(fr, n, h, &m2, &err);
            FZ_CHECK(rc2 != 0);
        }
    } else {
        FZ_CHECK(rc == -1);
        FZ_CHECK(m.header == NULL && m.content == NULL && m.ids == NULL && m.buffers == NULL);
        FZ_CHECK(err.msg[0] != '\0');
    }
    free(buf);
    return 0;
}
