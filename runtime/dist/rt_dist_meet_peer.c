/* rt_dist_meet_peer.c - which user a loopback connection comes from (rt_dist_meet.c
 * uses it when the ranks meet on the loopback without a secret, so only processes of
 * the user who launched rank 0 can take a seat). Linux keeps every TCP socket of the
 * network namespace in /proc/net/tcp and tcp6 with its owner's uid: the peer's socket
 * is the one whose local end is our remote end and whose remote end is our local end.
 */
#include "rt_dist_meet_frame.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/* "0100007F" or 32 hex digits: the address words as the kernel prints them (each a
 * 32-bit word of the address in memory order, printed as a number). */
static int parse_words(const char *hex, uint32_t *w, int n)
{
    if (strlen(hex) != (size_t)n * 8) return -1;
    for (int i = 0; i < n; i++) {
        char part[9];
        memcpy(part, hex + 8 * i, 8);
        part[8] = '\0';
        unsigned v;
        if (sscanf(part, "%8x", &v) != 1) return -1;
        w[i] = v;
    }
    return 0;
}

/* The address of sa as n 32-bit words in memory order, and its port. */
static int words_of(const struct sockaddr_storage *sa, uint32_t *w, int *n, unsigned *port)
{
    if (sa->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)sa;
        memcpy(w, &a->sin_addr, 4);
        *n = 1;
        *port = ntohs(a->sin_port);
        return 0;
    }
    if (sa->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;
        memcpy(w, &a->sin6_addr, 16);
        *n = 4;
        *port = ntohs(a->sin6_port);
        return 0;
    }
    return -1;
}

int rtp_meet_peer_uid(int fd, unsigned *uid)
{
    struct sockaddr_storage me = {0}, peer = {0};
    socklen_t ml = sizeof me, pl = sizeof peer;
    uint32_t mw[4], pw[4];
    int n = 0, n2 = 0;
    unsigned mport = 0, pport = 0;
    if (getsockname(fd, (struct sockaddr *)&me, &ml) != 0 ||
        getpeername(fd, (struct sockaddr *)&peer, &pl) != 0 || words_of(&me, mw, &n, &mport) ||
        words_of(&peer, pw, &n2, &pport) || n != n2)
        return -1;
    FILE *f = fopen(n == 1 ? "/proc/net/tcp" : "/proc/net/tcp6", "r");
    if (!f) return -1;
    char line[512];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        char la[40], ra[40];
        unsigned lp, rp, u;
        uint32_t lw[4], rw[4];
        if (sscanf(line, " %*d: %39[0-9A-Fa-f]:%x %39[0-9A-Fa-f]:%x %*x %*x:%*x %*x:%*x %*x %u", la,
                   &lp, ra, &rp, &u) != 5 ||
            parse_words(la, lw, n) || parse_words(ra, rw, n))
            continue;
        /* the peer's socket: its local end is the peer, its remote end is us */
        if (lp == pport && rp == mport && !memcmp(lw, pw, 4 * (size_t)n) &&
            !memcmp(rw, mw, 4 * (size_t)n)) {
            *uid = u;
            found = 1;
        }
    }
    fclose(f);
    return found ? 1 : 0;
}
