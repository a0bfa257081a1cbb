/* rt_dist_meet_frame.c - the meeting's frames and their signatures
 * (rt_dist_meet_frame.h). */
#include "rt_dist_meet_frame.h"

#include <arpa/inet.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <string.h>

#define MAGIC "KILNMEET"

static void put32(unsigned char *p, uint32_t v)
{
    v = htonl(v);
    memcpy(p, &v, 4);
}

static uint32_t get32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return ntohl(v);
}

long rtp_meet_head(const unsigned char *b)
{
    if (memcmp(b, MAGIC, 8) != 0) return -1;
    const uint32_t v = get32(b + 8);
    return v == RTP_MEET_VERSION ? 0 : v == 0 ? 0xffffffffL : (long)v;
}

int rtp_meet_nonce(unsigned char nonce[RTP_MEET_NONCE])
{
    return RAND_bytes(nonce, RTP_MEET_NONCE) == 1 ? 0 : -1;
}

static void head_put(unsigned char *out)
{
    memcpy(out, MAGIC, 8);
    put32(out + 8, RTP_MEET_VERSION);
}

/* HMAC-SHA256(token, label || n0 || nr || data): nr may be NULL. */
static void mac(const char *token, const char *label, const unsigned char *n0,
                const unsigned char *nr, const unsigned char *data, size_t n,
                unsigned char out[RTP_MEET_MAC])
{
    unsigned char buf[64 + 2 * RTP_MEET_NONCE + RTP_MEET_ANSWER_BYTES];
    size_t used = strlen(label) + 1;
    memcpy(buf, label, used);
    memcpy(buf + used, n0, RTP_MEET_NONCE);
    used += RTP_MEET_NONCE;
    if (nr) memcpy(buf + used, nr, RTP_MEET_NONCE), used += RTP_MEET_NONCE;
    memcpy(buf + used, data, n);
    used += n;
    static const unsigned char none[1] = {0};
    const size_t klen = token ? strlen(token) : 0;
    unsigned int len = RTP_MEET_MAC;
    if (!HMAC(EVP_sha256(), klen ? (const void *)token : none, (int)klen, buf, used, out, &len))
        memset(out, 0, RTP_MEET_MAC); /* never matches a real signature by chance */
    OPENSSL_cleanse(buf, sizeof buf);
}

static int mac_ok(const char *token, const char *label, const unsigned char *n0,
                  const unsigned char *nr, const unsigned char *frame, size_t n)
{
    unsigned char want[RTP_MEET_MAC];
    mac(token, label, n0, nr, frame, n - RTP_MEET_MAC, want);
    static const unsigned char zero[RTP_MEET_MAC];
    return CRYPTO_memcmp(want, zero, RTP_MEET_MAC) != 0 &&
           CRYPTO_memcmp(want, frame + n - RTP_MEET_MAC, RTP_MEET_MAC) == 0;
}

void rtp_meet_challenge_put(unsigned char out[RTP_MEET_CHALLENGE_BYTES],
                            const unsigned char nonce0[RTP_MEET_NONCE])
{
    head_put(out);
    memcpy(out + RTP_MEET_HEAD, nonce0, RTP_MEET_NONCE);
}

void rtp_meet_hello_put(unsigned char out[RTP_MEET_HELLO_BYTES], const rtp_meet_hello *h,
                        const char *token, const unsigned char nonce0[RTP_MEET_NONCE])
{
    memset(out, 0, RTP_MEET_HELLO_BYTES);
    head_put(out);
    unsigned char *p = out + RTP_MEET_HEAD;
    put32(p, h->rank);
    put32(p + 4, h->world);
    put32(p + 8, h->can);
    snprintf((char *)p + 12, RTP_MEET_WHY, "%s", h->why);
    memcpy(p + 12 + RTP_MEET_WHY, h->nonce, RTP_MEET_NONCE);
    mac(token, "KILNMEET hello", nonce0, NULL, out, RTP_MEET_HELLO_BYTES - RTP_MEET_MAC,
        out + RTP_MEET_HELLO_BYTES - RTP_MEET_MAC);
}

int rtp_meet_hello_get(const unsigned char in[RTP_MEET_HELLO_BYTES], rtp_meet_hello *h,
                       const char *token, const unsigned char nonce0[RTP_MEET_NONCE])
{
    if (rtp_meet_head(in) != 0 ||
        !mac_ok(token, "KILNMEET hello", nonce0, NULL, in, RTP_MEET_HELLO_BYTES))
        return -1;
    const unsigned char *p = in + RTP_MEET_HEAD;
    h->rank = get32(p);
    h->world = get32(p + 4);
    h->can = get32(p + 8) != 0;
    memcpy(h->why, p + 12, RTP_MEET_WHY);
    h->why[RTP_MEET_WHY - 1] = '\0';
    memcpy(h->nonce, p + 12 + RTP_MEET_WHY, RTP_MEET_NONCE);
    return 0;
}

/* blob ^= HMAC(token, "KILNMEET blob" || n0 || nr || i), i = 0, 1, ... */
static void blob_xor(unsigned char blob[RTP_MEET_BLOB], const char *token, const unsigned char *n0,
                     const unsigned char *nr)
{
    for (unsigned i = 0; i * RTP_MEET_MAC < RTP_MEET_BLOB; i++) {
        unsigned char ctr[4], ks[RTP_MEET_MAC];
        put32(ctr, i);
        mac(token, "KILNMEET blob", n0, nr, ctr, sizeof ctr, ks);
        for (unsigned j = 0; j < RTP_MEET_MAC && i * RTP_MEET_MAC + j < RTP_MEET_BLOB; j++)
            blob[i * RTP_MEET_MAC + j] ^= ks[j];
        OPENSSL_cleanse(ks, sizeof ks);
    }
}

void rtp_meet_answer_put(unsigned char out[RTP_MEET_ANSWER_BYTES], const rtp_meet_answer *a,
                         const char *token, const unsigned char nonce0[RTP_MEET_NONCE],
                         const unsigned char nonce_r[RTP_MEET_NONCE])
{
    memset(out, 0, RTP_MEET_ANSWER_BYTES);
    head_put(out);
    unsigned char *p = out + RTP_MEET_HEAD;
    put32(p, a->ok != 0);
    if (a->ok) {
        memcpy(p + 4, a->blob, RTP_MEET_BLOB);
        blob_xor(p + 4, token, nonce0, nonce_r);
    }
    snprintf((char *)p + 4 + RTP_MEET_BLOB, RTP_MEET_MSG, "%s", a->msg);
    mac(token, "KILNMEET answer", nonce0, nonce_r, out, RTP_MEET_ANSWER_BYTES - RTP_MEET_MAC,
        out + RTP_MEET_ANSWER_BYTES - RTP_MEET_MAC);
}

int rtp_meet_answer_get(const unsigned char in[RTP_MEET_ANSWER_BYTES], rtp_meet_answer *a,
                        const char *token, const unsigned char nonce0[RTP_MEET_NONCE],
                        const unsigned char nonce_r[RTP_MEET_NONCE])
{
    if (rtp_meet_head(in) != 0 ||
        !mac_ok(token, "KILNMEET answer", nonce0, nonce_r, in, RTP_MEET_ANSWER_BYTES))
        return -1;
    const unsigned char *p = in + RTP_MEET_HEAD;
    a->ok = get32(p) != 0;
    memcpy(a->blob, p + 4, RTP_MEET_BLOB);
    if (a->ok) blob_xor(a->blob, token, nonce0, nonce_r);
    memcpy(a->msg, p + 4 + RTP_MEET_BLOB, RTP_MEET_MSG);
    a->msg[RTP_MEET_MSG - 1] = '\0';
    return 0;
}
