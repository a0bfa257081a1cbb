/* jk_hmac.c - message signatures: HMAC-<digest> over the four JSON frames of a
 * message, with OpenSSL 3's EVP_MAC.
 *
 * Invariants: the key is used as the raw bytes of the connection file's string; an
 * empty key turns signing off (empty signature out, nothing checked in). Verification
 * checks the signature's length (exactly 2 x digest size) before comparing, compares
 * in constant time (CRYPTO_memcmp), and runs on the received bytes, before any JSON
 * parsing. The EVP_MAC and key are immutable after create, so sign/verify may run
 * on several threads at once (each call makes its own EVP_MAC_CTX).
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "jk_internal.h"

struct jkp_hmac {
    EVP_MAC *mac; /* NULL when signing is off */
    char digest[24];
    unsigned char *key;
    size_t keylen;
    size_t hexlen;
};

jkp_hmac *jkp_hmac_create(const char *scheme, const void *key, size_t keylen, jk_error *err)
{
    if (!scheme || strncmp(scheme, "hmac-", 5) != 0 || strlen(scheme + 5) == 0 ||
        strlen(scheme + 5) >= sizeof(((jkp_hmac *)0)->digest)) {
        jkp_fail(err,
                 "unsupported signature_scheme '%s' (expected hmac-<digest>, e.g. "
                 "hmac-sha256)",
                 scheme ? scheme : "(null)");
        return NULL;
    }
    /* fetched, not looked up by name: a name OpenSSL knows may have no implementation in
     * the loaded providers (OpenSSL 3 keeps md4 & co in its legacy provider), and then
     * every signature would fail after the kernel had started (found by fuzzing) */
    EVP_MD *md = EVP_MD_fetch(NULL, scheme + 5, NULL);
    if (!md) {
        jkp_fail(err,
                 "signature_scheme '%s': digest '%s' is not available in this OpenSSL "
                 "---> HINT: use hmac-sha256",
                 scheme, scheme + 5);
        return NULL;
    }
    int mdsize = EVP_MD_get_size(md);
    EVP_MD_free(md);
    jkp_hmac *h = calloc(1, sizeof *h);
    if (!h) {
        jkp_fail(err, "out of memory");
        return NULL;
    }
    strcpy(h->digest, scheme + 5);
    if (keylen == 0) return h; /* signing off */
    h->hexlen = 2 * (size_t)mdsize;
    h->key = malloc(keylen);
    h->mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    if (!h->key || !h->mac || h->hexlen + 1 > JKP_HMAC_HEX_MAX) {
        jkp_fail(err, "cannot set up HMAC-%s (OpenSSL)", h->digest);
        jkp_hmac_destroy(h);
        return NULL;
    }
    memcpy(h->key, key, keylen);
    h->keylen = keylen;
    char hex[JKP_HMAC_HEX_MAX]; /* a trial signature: fail now, not on every message */
    jkp_view empty[4] = {{"", 0}, {"", 0}, {"", 0}, {"", 0}};
    if (jkp_hmac_sign(h, empty, hex, err) != 0) {
        jkp_hmac_destroy(h);
        return NULL;
    }
    return h;
}

void jkp_hmac_destroy(jkp_hmac *h)
{
    if (!h) return;
    EVP_MAC_free(h->mac);
    if (h->key) OPENSSL_cleanse(h->key, h->keylen);
    free(h->key);
    free(h);
}

size_t jkp_hmac_hexlen(const jkp_hmac *h) { return h->mac ? h->hexlen : 0; }

/* Raw digest of the 4 parts into md (>= 64 bytes); returns its length or 0. */
static size_t digest_parts(const jkp_hmac *h, const jkp_view parts[4], unsigned char *md)
{
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(h->mac);
    if (!ctx) {
        ERR_clear_error();
        return 0;
    }
    char digest[sizeof h->digest];
    memcpy(digest, h->digest, sizeof digest);
    OSSL_PARAM params[2] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
        OSSL_PARAM_construct_end(),
    };
    size_t out = 0;
    int ok = EVP_MAC_init(ctx, h->key, h->keylen, params);
    for (int i = 0; ok && i < 4; i++) ok = EVP_MAC_update(ctx, parts[i].data, parts[i].len);
    if (ok) ok = EVP_MAC_final(ctx, md, &out, JKP_HMAC_HEX_MAX / 2);
    EVP_MAC_CTX_free(ctx);
    if (!ok) ERR_clear_error(); /* reported by the caller; keep this thread's queue empty */
    return ok ? out : 0;
}

int jkp_hmac_sign(const jkp_hmac *h, const jkp_view parts[4], char *hex, jk_error *err)
{
    hex[0] = '\0';
    if (!h->mac) return 0;
    unsigned char md[JKP_HMAC_HEX_MAX / 2];
    size_t n = digest_parts(h, parts, md);
    if (n * 2 != h->hexlen) return jkp_fail(err, "HMAC-%s failed (OpenSSL)", h->digest);
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    hex[2 * n] = '\0';
    return 0;
}

int jkp_hmac_verify(const jkp_hmac *h, const jkp_view parts[4], const jkp_view *sig, jk_error *err)
{
    if (!h->mac) return 0;
    if (sig->len == 0) return jkp_fail(err, "unsigned message (empty signature)");
    if (sig->len != h->hexlen)
        return jkp_fail(err, "signature has %zu characters, HMAC-%s needs %zu", sig->len, h->digest,
                        h->hexlen);
    char want[JKP_HMAC_HEX_MAX];
    if (jkp_hmac_sign(h, parts, want, err) != 0) return -1;
    if (CRYPTO_memcmp(want, sig->data, h->hexlen) != 0)
        return jkp_fail(err, "bad signature (HMAC-%s mismatch)", h->digest);
    return 0;
}
