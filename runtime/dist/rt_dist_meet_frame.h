/* rt_dist_meet_frame.h - the frames of the ranks' meeting (rt_dist_meet.c) and their
 * signatures. Integers are in network byte order; every frame starts with the magic
 * "KILNMEET" and the meeting's version.
 *
 *   challenge (rank 0 -> r, on accept): magic, version, nonce0[16]
 *   hello     (r -> rank 0): magic, version, rank, world, can, why[64], nonce_r[16], mac[32]
 *   answer    (rank 0 -> r): magic, version, ok, blob[128], msg[400], mac[32]
 *
 * mac is HMAC-SHA256 keyed with the launch's secret (KILN_DIST_TOKEN; empty when a
 * loopback meeting has none) over a label, the nonces so far and the frame before it:
 * a hello answers this connection's challenge only, an answer this hello only, so a
 * frame recorded on the network is worth nothing on another connection. The blob
 * travels XORed with an HMAC-SHA256 keystream of the same key and both nonces.
 */
#ifndef RT_DIST_MEET_FRAME_H
#define RT_DIST_MEET_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define RTP_MEET_VERSION 2u
#define RTP_MEET_BLOB 128 /* the answer's blob: RT_DIST_MEET_BLOB (checked in rt_dist_meet.c) */
#define RTP_MEET_NONCE 16
#define RTP_MEET_MAC 32
#define RTP_MEET_WHY 64
#define RTP_MEET_MSG 400
#define RTP_MEET_HEAD 12 /* magic and version: enough to drop a stranger */
#define RTP_MEET_CHALLENGE_BYTES (RTP_MEET_HEAD + RTP_MEET_NONCE)
#define RTP_MEET_HELLO_BYTES (RTP_MEET_HEAD + 3 * 4 + RTP_MEET_WHY + RTP_MEET_NONCE + RTP_MEET_MAC)
#define RTP_MEET_ANSWER_BYTES (RTP_MEET_HEAD + 4 + RTP_MEET_BLOB + RTP_MEET_MSG + RTP_MEET_MAC)

typedef struct rtp_meet_hello {
    uint32_t rank, world, can;
    char why[RTP_MEET_WHY];
    unsigned char nonce[RTP_MEET_NONCE];
} rtp_meet_hello;

typedef struct rtp_meet_answer {
    int ok;
    unsigned char blob[RTP_MEET_BLOB];
    char msg[RTP_MEET_MSG];
} rtp_meet_answer;

/* The first RTP_MEET_HEAD bytes of a frame: 0 when they are the magic and this
 * version; -1 when they are not the magic (not a Kiln rank); else the version they
 * carry (another Kiln), which is never 0 here. */
long rtp_meet_head(const unsigned char *b);

/* Fresh random bytes (OpenSSL): 0, or -1. */
int rtp_meet_nonce(unsigned char nonce[RTP_MEET_NONCE]);

void rtp_meet_challenge_put(unsigned char out[RTP_MEET_CHALLENGE_BYTES],
                            const unsigned char nonce0[RTP_MEET_NONCE]);

/* token: the launch's secret ("" for none). */
void rtp_meet_hello_put(unsigned char out[RTP_MEET_HELLO_BYTES], const rtp_meet_hello *h,
                        const char *token, const unsigned char nonce0[RTP_MEET_NONCE]);
/* 0 with *h filled (why NUL-terminated), -1 when the signature is not token's for
 * nonce0 (the head is checked first, rtp_meet_head). */
int rtp_meet_hello_get(const unsigned char in[RTP_MEET_HELLO_BYTES], rtp_meet_hello *h,
                       const char *token, const unsigned char nonce0[RTP_MEET_NONCE]);

void rtp_meet_answer_put(unsigned char out[RTP_MEET_ANSWER_BYTES], const rtp_meet_answer *a,
                         const char *token, const unsigned char nonce0[RTP_MEET_NONCE],
                         const unsigned char nonce_r[RTP_MEET_NONCE]);
/* 0 with *a filled (msg NUL-terminated), -1 when the signature is not token's for this
 * hello. */
int rtp_meet_answer_get(const unsigned char in[RTP_MEET_ANSWER_BYTES], rtp_meet_answer *a,
                        const char *token, const unsigned char nonce0[RTP_MEET_NONCE],
                        const unsigned char nonce_r[RTP_MEET_NONCE]);

/* The uid owning the other end of TCP connection fd, when that end is on this host
 * (rt_dist_meet_peer.c, /proc/net/tcp[6]): 1 with *uid, 0 when it is not found there,
 * -1 when it cannot be known. */
int rtp_meet_peer_uid(int fd, unsigned *uid);

#endif
