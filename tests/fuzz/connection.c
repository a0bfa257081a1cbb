/* connection.c - fuzz target: Jupyter connection files (jkp_connection_parse and
 * jkp_connection_load), then what the kernel does next with a parsed one: the
 * endpoint of every channel and the HMAC signer for its scheme and key.
 * Input: the file's bytes. Invariants: parse and load agree; a parsed connection
 * has a transport of tcp/ipc, a non-empty ip and ports in 1..65535. */
#include <string.h>
#include <unistd.h>

#include "fz.h"
#include "jk_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fz_strdup(data, size);
    if (!text) return 0;
    jkp_connection c;
    jk_error err;
    int rc = jkp_connection_parse(text, &c, &err);
    if (rc == 0) {
        FZ_CHECK(!strcmp(c.transport, "tcp") || !strcmp(c.transport, "ipc"));
        FZ_CHECK(c.ip[0] && c.key);
        char ep[320];
        for (int ch = 0; ch < JKP_NCHANNELS; ch++) {
            FZ_CHECK(c.ports[ch] >= 1 && c.ports[ch] <= 65535);
            FZ_CHECK(jkp_connection_endpoint(&c, ch, ep, sizeof ep) == 0);
        }
        jkp_hmac *h = jkp_hmac_create(c.scheme, c.key, c.keylen, &err);
        if (h) {
            char hex[JKP_HMAC_HEX_MAX];
            jkp_view parts[4] = {{"{}", 2}, {"{}", 2}, {"{}", 2}, {text, size}};
            FZ_CHECK(jkp_hmac_sign(h, parts, hex, &err) == 0);
            FZ_CHECK(strlen(hex) == jkp_hmac_hexlen(h));
            jkp_view sig = {hex, strlen(hex)};
            FZ_CHECK(jkp_hmac_verify(h, parts, &sig, &err) == 0);
            jkp_hmac_destroy(h);
        }
    }
    /* the same bytes as a file: the same verdict (when they have no NUL: jansson's
     * string parser stops at the first one, its file parser refuses it) */
    char path[64];
    int fd = fz_memfile(data, size, path, sizeof path);
    if (fd >= 0) {
        jkp_connection c2;
        int rc2 = jkp_connection_load(path, &c2, &err);
        if (strlen(text) == size) FZ_CHECK(rc2 == rc);
        if (rc2 == 0 && rc == 0)
            FZ_CHECK(c2.keylen == c.keylen && !memcmp(c2.key, c.key, c.keylen));
        if (rc2 == 0) jkp_connection_deinit(&c2);
        else FZ_CHECK(strstr(err.msg, path) != NULL);
        close(fd);
    }
    if (rc == 0) jkp_connection_deinit(&c);
    free(text);
    return 0;
}
