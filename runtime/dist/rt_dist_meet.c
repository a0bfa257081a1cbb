/* rt_dist_meet.c - the ranks of a launch without MPI meet over TCP once (rt_dist_meet.h).
 *
 * Frames are fixed-size and signed (rt_dist_meet_frame.h): rank 0 sends each connection
 * a challenge, the rank answers with its hello, rank 0 answers every rank at the end.
 * Rank 0 polls its listening socket and every accepted connection together, each
 * connection with its own deadline (PEER_S), so a connection that sends nothing (or a
 * stray program) holds nobody up; when more than PENDING_MIN wait at once, the oldest
 * is dropped. A connection whose first bytes are not the magic, that speaks another
 * version, or whose hello is not signed with the launch's secret is closed, logged on
 * stderr and ignored: only a signed hello can fail the launch (another WORLD_SIZE, a
 * rank twice). A rank whose connection rank 0 closed without an answer tries again
 * until its deadline. Sends use MSG_NOSIGNAL: a rank that went away is an error, not a
 * SIGPIPE.
 */
#include "rt_dist_meet.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rt_clock.h"
#include "rt_dist_meet_frame.h"

_Static_assert(RTP_MEET_BLOB == RT_DIST_MEET_BLOB, "a frame carries the meeting's blob");

#define NAMED_MAX 16 /* missing ranks named in a message, then a count */

static int ms_left(double deadline)
{
    double left = deadline - rt_clock_s();
    return left <= 0 ? 0 : left > 1e6 ? 1000000000 : (int)(left * 1000.0) + 1;
}

/* All of buf over fd by the deadline: 0, or -1 (errno set; ETIMEDOUT for the deadline,
 * ECONNRESET for an end of file). */
static int io_all(int fd, unsigned char *buf, size_t n, int out, double deadline)
{
    size_t done = 0;
    while (done < n) {
        struct pollfd p = {.fd = fd, .events = out ? POLLOUT : POLLIN};
        int rc = poll(&p, 1, ms_left(deadline));
        if (rc < 0 && errno == EINTR) continue;
        if (rc < 0) return -1;
        if (rc == 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        ssize_t k =
            out ? send(fd, buf + done, n - done, MSG_NOSIGNAL) : recv(fd, buf + done, n - done, 0);
        if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (k < 0) return -1;
        if (k == 0) {
            errno = ECONNRESET;
            return -1;
        }
        done += (size_t)k;
    }
    return 0;
}

/* the variable the port came from, for messages */
static const char *port_var(const rt_dist_meet *m)
{
    return m->port_var && *m->port_var ? m->port_var : "MASTER_PORT";
}

static rt_status resolve(const rt_dist_meet *m, struct addrinfo **ai, rt_error *err)
{
    char *end;
    long port = m->port ? strtol(m->port, &end, 10) : 0;
    if (!m->addr || !*m->addr || !m->port || !*m->port || *end || port < 1 || port > 65535)
        return RT_ERR(err, RT_EINVAL,
                      "rank %d of %d: a launch without MPI needs MASTER_ADDR (rank 0's "
                      "host) and %s (a free TCP port, 1-65535); they are '%s' and "
                      "'%s' ---> HINT: set both the same for every rank, or launch with "
                      "mpirun",
                      m->rank, m->world, port_var(m), m->addr ? m->addr : "",
                      m->port ? m->port : "");
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    int rc = getaddrinfo(m->addr, m->port, &hints, ai);
    if (rc != 0)
        return RT_ERR(err, RT_EINVAL, "rank %d of %d: MASTER_ADDR %s: %s", m->rank, m->world,
                      m->addr, gai_strerror(rc));
    return RT_OK;
}

static int is_loopback(const struct addrinfo *a)
{
    if (a->ai_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)a->ai_addr)->sin_addr.s_addr) >> 24) == 127;
    return a->ai_family == AF_INET6 &&
           IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)a->ai_addr)->sin6_addr);
}

/* ---- rank 0 ---- */

#define PEER_S 10.0     /* a connection says hello within this, or is dropped */
#define PENDING_MIN 256 /* connections heard at once; beyond, the oldest is dropped */
#define LOGGED_MAX 16   /* drops logged one by one, then counted */

typedef struct peer {
    int fd;
    double by; /* its own deadline */
    size_t got;
    unsigned char nonce0[RTP_MEET_NONCE];
    unsigned char hello[RTP_MEET_HELLO_BYTES];
    char from[64]; /* its address, for the log */
} peer;

typedef struct host {
    const rt_dist_meet *m;
    int lfd;
    peer *pending; /* accepted, hello not complete (cap) */
    int npending, cap;
    int *fd; /* (world) a rank's connection, -1 until it said hello */
    unsigned char (*n0)[RTP_MEET_NONCE], (*nr)[RTP_MEET_NONCE]; /* (world) its nonces */
    char (*why)[RTP_MEET_WHY];
    int *can;
    int arrived; /* ranks other than 0 that said hello */
    int dropped; /* connections dropped */
    char last_drop[160];
    char msg[RTP_MEET_MSG];
    rt_status fail; /* RT_OK while the meeting goes on */
} host;

static void host_fail(host *h, rt_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void host_fail(host *h, rt_status code, const char *fmt, ...)
{
    if (h->fail != RT_OK) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->msg, sizeof h->msg, fmt, ap);
    va_end(ap);
    h->fail = code;
}

/* A connection that is not a rank of this launch: closed, logged (the first few), and
 * remembered for the message of a meeting that then misses a rank. */
static void drop(host *h, peer *p, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void drop(host *h, peer *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->last_drop, sizeof h->last_drop, fmt, ap);
    va_end(ap);
    close(p->fd);
    if (++h->dropped <= LOGGED_MAX)
        fprintf(stderr, "kiln: rank 0 of %d: dropped a connection from %s: %s%s\n", h->m->world,
                p->from, h->last_drop,
                h->dropped == LOGGED_MAX ? " (further drops are counted, not logged)" : "");
}

static void answer(host *h, int r, int ok, const unsigned char *blob, double by)
{
    rtp_meet_answer a = {.ok = ok};
    if (ok) memcpy(a.blob, blob, RT_DIST_MEET_BLOB);
    snprintf(a.msg, sizeof a.msg, "%s", h->msg);
    unsigned char out[RTP_MEET_ANSWER_BYTES];
    rtp_meet_answer_put(out, &a, h->m->token, h->n0[r], h->nr[r]);
    explicit_bzero(&a, sizeof a);
    if (io_all(h->fd[r], out, sizeof out, 1, by) != 0) errno = errno ? errno : EIO;
    explicit_bzero(out, sizeof out);
}

static void host_hello(host *h, peer *p)
{
    const rt_dist_meet *m = h->m;
    rtp_meet_hello hi;
    if (rtp_meet_hello_get(p->hello, &hi, m->token, p->nonce0) != 0) {
        drop(h, p,
             "its hello does not carry this launch's signature (a stranger, or a rank "
             "given another KILN_DIST_TOKEN)");
        return;
    }
    /* signed with the launch's secret: a rank of this launch, misconfigured or not */
    if (hi.world != (uint32_t)m->world) {
        host_fail(h, RT_EINVAL,
                  "rank %u was launched with WORLD_SIZE=%u but rank 0 with WORLD_SIZE=%d "
                  "---> HINT: give every rank the same WORLD_SIZE",
                  hi.rank, hi.world, m->world);
    } else if (hi.rank == 0 || hi.rank >= hi.world) {
        host_fail(h, RT_EINVAL,
                  "a rank said it is rank %u of %u: only ranks 1 to %d connect to rank 0 "
                  "---> HINT: give every process its own RANK, 0 to WORLD_SIZE-1",
                  hi.rank, hi.world, m->world - 1);
    } else if (h->fd[hi.rank] >= 0) {
        host_fail(h, RT_EINVAL,
                  "two processes say they are rank %u ---> HINT: give every process its own "
                  "RANK, 0 to WORLD_SIZE-1",
                  hi.rank);
    } else {
        h->fd[hi.rank] = p->fd;
        h->can[hi.rank] = hi.can != 0;
        memcpy(h->why[hi.rank], hi.why, RTP_MEET_WHY);
        memcpy(h->n0[hi.rank], p->nonce0, RTP_MEET_NONCE);
        memcpy(h->nr[hi.rank], hi.nonce, RTP_MEET_NONCE);
        h->arrived++;
        return;
    }
    /* it hears why at once, signed as any answer */
    h->fd[0] = p->fd;
    memcpy(h->n0[0], p->nonce0, RTP_MEET_NONCE);
    memcpy(h->nr[0], hi.nonce, RTP_MEET_NONCE);
    answer(h, 0, 0, NULL, rt_clock_s() + 1.0);
    h->fd[0] = -1;
    close(p->fd);
}

/* A connection's address, for the log. */
static void peer_name(int fd, char *out, size_t cap)
{
    struct sockaddr_storage sa = {0};
    socklen_t len = sizeof sa;
    char name[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (getpeername(fd, (struct sockaddr *)&sa, &len) != 0) sa.ss_family = AF_UNSPEC;
    if (sa.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&sa;
        inet_ntop(AF_INET, &a->sin_addr, name, sizeof name);
        port = ntohs(a->sin_port);
    } else if (sa.ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&sa;
        inet_ntop(AF_INET6, &a->sin6_addr, name, sizeof name);
        port = ntohs(a->sin6_port);
    }
    snprintf(out, cap, "%s port %u", name, port);
}

static void host_accept(host *h)
{
    int fd = accept4(h->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    if (h->npending == h->cap) { /* full: the oldest has had the longest to speak */
        int old = 0;
        for (int i = 1; i < h->npending; i++)
            if (h->pending[i].by < h->pending[old].by) old = i;
        drop(h, &h->pending[old], "more than %d connections waited at once; it was the oldest",
             h->cap);
        h->pending[old] = h->pending[--h->npending];
    }
    peer *p = &h->pending[h->npending];
    *p = (peer){.fd = fd, .by = rt_clock_s() + PEER_S};
    peer_name(fd, p->from, sizeof p->from);
    unsigned uid = 0;
    if (!(h->m->token && *h->m->token) && rtp_meet_peer_uid(fd, &uid) == 1 &&
        uid != (unsigned)geteuid()) { /* no secret (so a loopback meeting): this user only */
        drop(h, p, "it belongs to another user (uid %u) ---> HINT: set KILN_DIST_TOKEN", uid);
        return;
    }
    unsigned char c[RTP_MEET_CHALLENGE_BYTES];
    if (rtp_meet_nonce(p->nonce0) != 0) {
        host_fail(h, RT_EIO, "no random bytes for the meeting (OpenSSL RAND_bytes)");
        close(fd);
        return;
    }
    rtp_meet_challenge_put(c, p->nonce0);
    /* a fresh socket's buffer takes these few bytes at once */
    if (send(fd, c, sizeof c, MSG_NOSIGNAL) != (ssize_t)sizeof c) {
        drop(h, p, "it went away before rank 0's challenge");
        return;
    }
    h->npending++;
}

/* One round of poll over the listening socket and the connections not yet heard. */
static void host_poll(host *h, double deadline)
{
    struct pollfd *pf = calloc((size_t)h->npending + 1, sizeof *pf);
    if (!pf) {
        host_fail(h, RT_ENOMEM, "out of memory while the ranks meet");
        return;
    }
    pf[0] = (struct pollfd){.fd = h->lfd, .events = POLLIN};
    double wake = deadline;
    for (int i = 0; i < h->npending; i++) {
        pf[i + 1] = (struct pollfd){.fd = h->pending[i].fd, .events = POLLIN};
        if (h->pending[i].by < wake) wake = h->pending[i].by;
    }
    const int n = h->npending;
    int ms = ms_left(wake);
    int rc = poll(pf, (nfds_t)n + 1, ms < 200 ? ms : 200);
    if (rc < 0 && errno != EINTR) host_fail(h, RT_EIO, "poll: %s", strerror(errno));
    const double t = rt_clock_s();
    for (int i = n - 1; i >= 0; i--) {
        peer *p = &h->pending[i];
        if (rc > 0 && pf[i + 1].revents) {
            ssize_t k = recv(p->fd, p->hello + p->got, RTP_MEET_HELLO_BYTES - p->got, 0);
            if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
            if (k <= 0) {
                drop(h, p, "it closed before its hello");
            } else {
                const size_t before = p->got;
                p->got += (size_t)k;
                long v = 0;
                if (before < RTP_MEET_HEAD && p->got >= RTP_MEET_HEAD) v = rtp_meet_head(p->hello);
                if (v == -1) {
                    drop(h, p, "it is not a Kiln rank (its first bytes are not the meeting's)");
                } else if (v != 0) {
                    drop(h, p,
                         "it runs another Kiln (meeting version %ld; rank 0's is %u) ---> "
                         "HINT: launch the same Kiln on every rank",
                         v == 0xffffffffL ? 0L : v, RTP_MEET_VERSION);
                } else if (p->got == RTP_MEET_HELLO_BYTES) {
                    host_hello(h, p);
                } else {
                    continue;
                }
            }
        } else if (t < p->by) {
            continue;
        } else {
            drop(h, p, "it said no hello within %g s", PEER_S);
        }
        h->pending[i] = h->pending[--h->npending];
    }
    if (rc > 0 && pf[0].revents && h->fail == RT_OK) host_accept(h);
    free(pf);
}

/* "1, 4, 7" (ranks with flag == want among 1..world-1, and 0 when rank0 says so) */
static void list_ranks(char *out, size_t cap, const int *flag, int want, int world, int rank0)
{
    size_t used = 0;
    int named = 0, more = 0;
    out[0] = '\0';
    for (int r = rank0 ? 0 : 1; r < world; r++) {
        if (r > 0 && flag[r] != want) continue;
        if (named == NAMED_MAX) {
            more++;
            continue;
        }
        used +=
            (size_t)snprintf(out + used, used < cap ? cap - used : 0, "%s%d", named ? ", " : "", r);
        named++;
    }
    if (more && used < cap) snprintf(out + used, cap - used, " and %d more", more);
}

static const char *plural(const char *list)
{
    return strchr(list, ',') || strstr(list, "more") ? "s" : "";
}

/* Listen on MASTER_ADDR's own address: the first of its addresses this host has; when
 * it has none of them (an address translated on the way), every interface, said on
 * stderr. -1 with errno set when the port cannot be had. */
static int host_listen(const rt_dist_meet *m, const struct addrinfo *list)
{
    const int one = 1;
    int e = EADDRNOTAVAIL;
    for (int any = 0; any < 2; any++) {
        for (const struct addrinfo *ai = list; ai; ai = ai->ai_next) {
            if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6) continue;
            struct sockaddr_storage sa;
            memcpy(&sa, ai->ai_addr, ai->ai_addrlen);
            if (any && ai->ai_family == AF_INET)
                ((struct sockaddr_in *)&sa)->sin_addr.s_addr = htonl(INADDR_ANY);
            else if (any) ((struct sockaddr_in6 *)&sa)->sin6_addr = in6addr_any;
            int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
            if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) == 0 &&
                bind(fd, (struct sockaddr *)&sa, ai->ai_addrlen) == 0 && listen(fd, 128) == 0) {
                if (any)
                    fprintf(stderr,
                            "kiln: rank 0 of %d: MASTER_ADDR %s is none of this host's "
                            "addresses: the meeting listens on every interface\n",
                            m->world, m->addr);
                return fd;
            }
            if (fd >= 0) {
                e = errno;
                close(fd);
            }
            if (e != EADDRNOTAVAIL) goto fail; /* the port is taken: no point going on */
        }
    }
fail:
    errno = e;
    return -1;
}

static rt_status host_run(const rt_dist_meet *m, const struct addrinfo *ai, rt_dist_meet_make make,
                          unsigned char blob[RT_DIST_MEET_BLOB], rt_error *err)
{
    const double deadline = rt_clock_s() + m->timeout_s;
    host h = {.m = m, .lfd = -1, .cap = m->world + PENDING_MIN};
    h.pending = calloc((size_t)h.cap, sizeof *h.pending);
    h.fd = malloc((size_t)m->world * sizeof *h.fd);
    h.can = calloc((size_t)m->world, sizeof *h.can);
    h.why = calloc((size_t)m->world, sizeof *h.why);
    h.n0 = calloc((size_t)m->world, sizeof *h.n0);
    h.nr = calloc((size_t)m->world, sizeof *h.nr);
    rt_status s = RT_OK;
    if (!h.pending || !h.fd || !h.can || !h.why || !h.n0 || !h.nr) {
        s = RT_ERR(err, RT_ENOMEM, "out of memory while the ranks meet");
        goto out;
    }
    for (int r = 0; r < m->world; r++) h.fd[r] = -1;
    h.lfd = host_listen(m, ai);
    if (h.lfd < 0) {
        s = RT_ERR(err, RT_EIO,
                   "rank 0 of %d: cannot listen on port %s (%s) for the other ranks: "
                   "%s ---> HINT: another program holds the port: give the launch a free "
                   "one (KILN_DIST_PORT sets the ranks' port apart from MASTER_PORT)",
                   m->world, m->port, port_var(m), strerror(errno));
        goto out;
    }
    while (h.fail == RT_OK && h.arrived < m->world - 1 && ms_left(deadline) > 0)
        host_poll(&h, deadline);
    if (h.fail == RT_OK && h.arrived < m->world - 1) {
        char missing[200];
        list_ranks(missing, sizeof missing, h.fd, -1, m->world, 0);
        host_fail(&h, RT_EDEVICE_LOST,
                  "rank%s %s of %d did not join rank 0 at %s:%s within %g s "
                  "(KILN_DIST_TIMEOUT) ---> HINT: start every rank with the same MASTER_ADDR, "
                  "%s, WORLD_SIZE and KILN_DIST_TOKEN; the launch stops%s%s%s",
                  plural(missing), missing, m->world, m->addr, m->port, m->timeout_s, port_var(m),
                  h.dropped ? " (rank 0 dropped connections that were not ranks of this "
                              "launch; the last: "
                            : "",
                  h.dropped ? h.last_drop : "", h.dropped ? ")" : "");
    }
    if (h.fail == RT_OK) {
        int all = m->can;
        for (int r = 1; r < m->world; r++) all &= h.can[r];
        if (!all) {
            char who[200];
            h.can[0] = m->can;
            list_ranks(who, sizeof who, h.can, 0, m->world, !m->can);
            int first = !m->can ? 0 : 1;
            while (first < m->world && h.can[first]) first++;
            host_fail(&h, RT_EINVAL,
                      "rank%s %s cannot join NCCL (rank %d: %s): a launch without MPI trains "
                      "GPU ranks only, whose NCCL carries the gradients ---> HINT: give every "
                      "rank a GPU (--device cuda), or launch with mpirun (OpenMPI) for CPU "
                      "ranks",
                      plural(who), who, first,
                      first == 0 ? (m->why_not ? m->why_not : "?") : h.why[first]);
        }
    }
    rt_error me = {0};
    if (h.fail == RT_OK && make(blob, &me) != RT_OK)
        host_fail(&h, me.code, "rank 0 could not make NCCL's id: %s", me.msg);
    const double send_by = rt_clock_s() + (m->timeout_s < 10 ? m->timeout_s : 10);
    const int ok = h.fail == RT_OK;
    for (int r = 1; r < m->world; r++) {
        if (h.fd[r] < 0) continue;
        errno = 0;
        answer(&h, r, ok, blob, send_by);
        if (errno && h.fail == RT_OK)
            host_fail(&h, RT_EDEVICE_LOST, "rank %d left before rank 0's answer: %s", r,
                      strerror(errno));
    }
    if (h.fail != RT_OK) s = RT_ERR(err, h.fail, "rank 0 of %d: %s", m->world, h.msg);
out:
    for (int i = 0; i < h.npending; i++) close(h.pending[i].fd);
    for (int r = 0; h.fd && r < m->world; r++)
        if (h.fd[r] >= 0) close(h.fd[r]);
    if (h.lfd >= 0) close(h.lfd);
    free(h.pending);
    free(h.fd);
    free(h.can);
    free(h.why);
    free(h.n0);
    free(h.nr);
    return s;
}

/* ---- ranks 1.. ---- */

/* A connection to rank 0 at any of MASTER_ADDR's addresses, retried until the
 * deadline: the fd, or -1 (timed out). */
static int dial(const struct addrinfo *list, double deadline)
{
    for (;;) {
        for (const struct addrinfo *ai = list; ai; ai = ai->ai_next) {
            int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
            if (fd < 0) continue;
            int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
            if (rc != 0 && errno == EINPROGRESS) {
                struct pollfd p = {.fd = fd, .events = POLLOUT};
                int e = 0;
                socklen_t len = sizeof e;
                rc = poll(&p, 1, ms_left(deadline)) == 1 &&
                             getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) == 0 && e == 0
                         ? 0
                         : -1;
            }
            if (rc == 0) return fd;
            close(fd);
        }
        int ms = ms_left(deadline);
        if (ms == 0) return -1;
        struct timespec ts = {0, (ms < 100 ? ms : 100) * 1000000L}; /* rank 0 not there yet */
        nanosleep(&ts, NULL);
    }
}

/* One try at the meeting over a connection to rank 0: 0 with *a (its answer), 1 when
 * rank 0 closed the connection before answering (worth another try: it dropped this
 * connection, or it was not listening yet), -1 otherwise (errno; *bad for a peer that is
 * not Kiln's rank 0: -1 not the meeting, else its version; 0 for an answer whose
 * signature is not the launch's). */
static int guest_try(const rt_dist_meet *m, int fd, double by, rtp_meet_answer *a, long *bad)
{
    unsigned char c[RTP_MEET_CHALLENGE_BYTES], hello[RTP_MEET_HELLO_BYTES];
    unsigned char in[RTP_MEET_ANSWER_BYTES];
    if (io_all(fd, c, sizeof c, 0, by) != 0) return errno == ECONNRESET ? 1 : -1;
    if ((*bad = rtp_meet_head(c)) != 0) {
        errno = EPROTO;
        return -1;
    }
    rtp_meet_hello h = {.rank = (uint32_t)m->rank, .world = (uint32_t)m->world, .can = m->can};
    snprintf(h.why, sizeof h.why, "%s", m->can || !m->why_not ? "" : m->why_not);
    if (rtp_meet_nonce(h.nonce) != 0) {
        errno = EIO;
        return -1;
    }
    rtp_meet_hello_put(hello, &h, m->token, c + RTP_MEET_HEAD);
    if (io_all(fd, hello, sizeof hello, 1, by) != 0 || io_all(fd, in, sizeof in, 0, by) != 0)
        return errno == ECONNRESET || errno == EPIPE ? 1 : -1;
    if (rtp_meet_answer_get(in, a, m->token, c + RTP_MEET_HEAD, h.nonce) != 0) {
        *bad = rtp_meet_head(in) == 0 ? 0 : -1;
        errno = EPROTO;
        return -1;
    }
    return 0;
}

static rt_status guest_run(const rt_dist_meet *m, const struct addrinfo *ai,
                           unsigned char blob[RT_DIST_MEET_BLOB], rt_error *err)
{
    const double deadline = rt_clock_s() + m->timeout_s;
    /* connected: rank 0 answers within its own timeout, which started before now */
    const double answer_by = deadline + 1.0;
    rtp_meet_answer a = {0};
    int closed = 0, rc = 1, e = 0;
    long bad = 0;
    while (rc == 1) {
        int fd = dial(ai, deadline);
        if (fd < 0 && !closed)
            return RT_ERR(err, RT_EDEVICE_LOST,
                          "rank %d of %d: rank 0 did not answer at %s:%s within %g s "
                          "(KILN_DIST_TIMEOUT) ---> HINT: start rank 0 too, with the same "
                          "MASTER_ADDR and %s as every rank",
                          m->rank, m->world, m->addr, m->port, m->timeout_s, port_var(m));
        if (fd < 0)
            return RT_ERR(err, RT_EDEVICE_LOST,
                          "rank %d of %d: rank 0 at %s:%s closed this rank's connection "
                          "without an answer, %d time%s within %g s (KILN_DIST_TIMEOUT) "
                          "---> HINT: give every rank the same KILN_DIST_TOKEN; rank 0's "
                          "log says why it dropped the connection",
                          m->rank, m->world, m->addr, m->port, closed, closed == 1 ? "" : "s",
                          m->timeout_s);
        rc = guest_try(m, fd, answer_by, &a, &bad);
        e = errno;
        close(fd);
        if (rc == 1) {
            closed++;
            struct timespec ts = {0, 100000000L}; /* rank 0 dropped it: try again */
            nanosleep(&ts, NULL);
        }
    }
    if (rc != 0 && e == EPROTO && bad > 0)
        return RT_ERR(err, RT_EINVAL,
                      "rank %d of %d: rank 0 at %s:%s runs another Kiln (meeting version %ld; "
                      "this rank's is %u) ---> HINT: launch the same Kiln on every rank",
                      m->rank, m->world, m->addr, m->port, bad == 0xffffffffL ? 0L : bad,
                      RTP_MEET_VERSION);
    if (rc != 0 && e == EPROTO && bad == 0)
        return RT_ERR(err, RT_EINVAL,
                      "rank %d of %d: the answer from %s:%s does not carry this launch's "
                      "signature ---> HINT: give every rank the same KILN_DIST_TOKEN",
                      m->rank, m->world, m->addr, m->port);
    if (rc != 0 && e == EPROTO)
        return RT_ERR(err, RT_EINVAL,
                      "rank %d of %d: %s:%s answered, but not as Kiln's rank 0 ---> HINT: "
                      "another program holds %s: give the launch a free one",
                      m->rank, m->world, m->addr, m->port, port_var(m));
    if (rc != 0)
        return RT_ERR(err, RT_EDEVICE_LOST,
                      "rank %d of %d: no answer from rank 0 at %s:%s within %g s "
                      "(KILN_DIST_TIMEOUT): %s ---> HINT: rank 0's own error says why",
                      m->rank, m->world, m->addr, m->port, m->timeout_s,
                      e == ETIMEDOUT ? "it waits for other ranks, or hangs" : strerror(e));
    if (!a.ok)
        return RT_ERR(err, strstr(a.msg, "did not join") ? RT_EDEVICE_LOST : RT_EINVAL,
                      "rank %d of %d: rank 0 says: %s", m->rank, m->world, a.msg);
    memcpy(blob, a.blob, RT_DIST_MEET_BLOB);
    explicit_bzero(&a, sizeof a);
    return RT_OK;
}

/* Every address MASTER_ADDR has is a loopback one. */
static int all_loopback(const struct addrinfo *list)
{
    for (const struct addrinfo *ai = list; ai; ai = ai->ai_next)
        if (!is_loopback(ai)) return 0;
    return list != NULL;
}

rt_status rt_dist_meet_run(const rt_dist_meet *m, rt_dist_meet_make make,
                           unsigned char blob[RT_DIST_MEET_BLOB], rt_error *err)
{
    if (m->world < 2 || m->rank < 0 || m->rank >= m->world)
        return RT_ERR(err, RT_EINVAL, "rank %d of %d: nothing to meet", m->rank, m->world);
    struct addrinfo *ai = NULL;
    RT_TRY(resolve(m, &ai, err));
    const size_t tlen = m->token ? strlen(m->token) : 0;
    rt_status s = RT_OK;
    if (!all_loopback(ai) && tlen < RT_DIST_MEET_TOKEN_MIN)
        s = RT_ERR(err, RT_EINVAL,
                   "rank %d of %d: MASTER_ADDR %s is not a loopback address, and %s: the "
                   "ranks' meeting would take any host that can reach port %s ---> HINT: "
                   "give every rank the same secret in KILN_DIST_TOKEN (at least %d "
                   "characters, for example from `openssl rand -hex 32`)",
                   m->rank, m->world, m->addr,
                   tlen ? "KILN_DIST_TOKEN is too short" : "KILN_DIST_TOKEN is not set", m->port,
                   RT_DIST_MEET_TOKEN_MIN);
    if (s == RT_OK && m->rank == 0 && !tlen)
        fprintf(stderr,
                "kiln: rank 0 of %d: the ranks meet at %s:%s without KILN_DIST_TOKEN: "
                "any process of this user on this host can take a rank's seat (other "
                "users' are dropped); set KILN_DIST_TOKEN to the same secret on every rank\n",
                m->world, m->addr, m->port);
    if (s == RT_OK && m->rank == 0) s = host_run(m, ai, make, blob, err);
    else if (s == RT_OK) s = guest_run(m, ai, blob, err);
    freeaddrinfo(ai);
    return s;
}
