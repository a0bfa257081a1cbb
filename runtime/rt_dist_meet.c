/* rt_dist_meet.c - the ranks of a launch without MPI meet over TCP once (rt_dist_meet.h).
 *
 * Frames are fixed-size, integers in network byte order:
 *   hello  (rank r -> rank 0): "KILNMEET", version, rank, world, can, why[64]
 *   answer (rank 0 -> rank r): "KILNMEET", version, ok, blob[128], msg[400]
 * Rank 0 polls its listening socket and every accepted connection together, so a
 * connection that sends nothing (or a stray program) holds nobody up; a connection
 * whose first bytes are not the magic is closed and ignored. Sends use MSG_NOSIGNAL: a
 * rank that went away is an error, not a SIGPIPE.
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

#include "rt_dist_internal.h"

#define MAGIC "KILNMEET"
#define VERSION 1u
#define WHY_BYTES 64
#define MSG_BYTES 400
#define HELLO_BYTES (8 + 4 * 4 + WHY_BYTES)
#define ANSWER_BYTES (8 + 2 * 4 + RT_DIST_MEET_BLOB + MSG_BYTES)
#define NAMED_MAX 16 /* missing ranks named in a message, then a count */

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

static int ms_left(double deadline)
{
    double left = deadline - rtp_dist_now();
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

typedef struct peer {
    int fd;
    size_t got;
    unsigned char hello[HELLO_BYTES];
} peer;

typedef struct host {
    const rt_dist_meet *m;
    int lfd;
    peer *pending; /* accepted, hello not complete (cap) */
    int npending, cap;
    int *fd; /* (world) a rank's connection, -1 until it said hello */
    char (*why)[WHY_BYTES];
    int *can;
    int arrived; /* ranks other than 0 that said hello */
    char msg[MSG_BYTES];
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

static void answer(int fd, int ok, const unsigned char *blob, const char *msg, double by)
{
    unsigned char a[ANSWER_BYTES] = {0};
    memcpy(a, MAGIC, 8);
    put32(a + 8, VERSION);
    put32(a + 12, ok != 0);
    if (ok) memcpy(a + 16, blob, RT_DIST_MEET_BLOB);
    snprintf((char *)a + 16 + RT_DIST_MEET_BLOB, MSG_BYTES, "%s", msg);
    if (io_all(fd, a, sizeof a, 1, by) != 0) errno = errno ? errno : EIO;
}

static void host_hello(host *h, peer *p)
{
    const rt_dist_meet *m = h->m;
    const unsigned char *b = p->hello;
    if (memcmp(b, MAGIC, 8) != 0) { /* not a Kiln rank: ignored */
        close(p->fd);
        return;
    }
    const uint32_t ver = get32(b + 8), rank = get32(b + 12), world = get32(b + 16);
    if (ver != VERSION) {
        host_fail(h, RT_EINVAL,
                  "rank %u runs another Kiln (meeting version %u; rank 0's is %u) ---> "
                  "HINT: launch the same Kiln on every rank",
                  rank, ver, VERSION);
    } else if (world != (uint32_t)m->world) {
        host_fail(h, RT_EINVAL,
                  "rank %u was launched with WORLD_SIZE=%u but rank 0 with WORLD_SIZE=%d "
                  "---> HINT: give every rank the same WORLD_SIZE",
                  rank, world, m->world);
    } else if (rank == 0 || rank >= world) {
        host_fail(h, RT_EINVAL,
                  "a rank said it is rank %u of %u: only ranks 1 to %d connect to rank 0 "
                  "---> HINT: give every process its own RANK, 0 to WORLD_SIZE-1",
                  rank, world, m->world - 1);
    } else if (h->fd[rank] >= 0) {
        host_fail(h, RT_EINVAL,
                  "two processes say they are rank %u ---> HINT: give every process its own "
                  "RANK, 0 to WORLD_SIZE-1",
                  rank);
    } else {
        h->fd[rank] = p->fd;
        h->can[rank] = get32(b + 20) != 0;
        memcpy(h->why[rank], b + 24, WHY_BYTES);
        h->why[rank][WHY_BYTES - 1] = '\0';
        h->arrived++;
        return;
    }
    answer(p->fd, 0, NULL, h->msg, rtp_dist_now() + 1.0); /* it hears why at once */
    close(p->fd);
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
    for (int i = 0; i < h->npending; i++)
        pf[i + 1] = (struct pollfd){.fd = h->pending[i].fd, .events = POLLIN};
    int ms = ms_left(deadline);
    int rc = poll(pf, (nfds_t)h->npending + 1, ms < 200 ? ms : 200);
    if (rc < 0 && errno != EINTR) host_fail(h, RT_EIO, "poll: %s", strerror(errno));
    for (int i = h->npending - 1; rc > 0 && i >= 0; i--) {
        if (!pf[i + 1].revents) continue;
        peer *p = &h->pending[i];
        ssize_t k = recv(p->fd, p->hello + p->got, HELLO_BYTES - p->got, 0);
        if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        int done = k > 0 && (p->got += (size_t)k) == HELLO_BYTES;
        if (k > 0 && !done) continue;
        if (done) host_hello(h, p);
        else close(p->fd); /* closed or failed before its hello: forgotten */
        h->pending[i] = h->pending[--h->npending];
    }
    if (rc > 0 && pf[0].revents && h->fail == RT_OK) {
        int fd = accept(h->lfd, NULL, NULL);
        if (fd >= 0 && h->npending == h->cap) close(fd); /* a flood: not ours */
        else if (fd >= 0) h->pending[h->npending++] = (peer){.fd = fd};
    }
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

static rt_status host_run(const rt_dist_meet *m, const struct addrinfo *ai, rt_dist_meet_make make,
                          unsigned char blob[RT_DIST_MEET_BLOB], rt_error *err)
{
    const double deadline = rtp_dist_now() + m->timeout_s;
    host h = {.m = m, .lfd = -1, .cap = m->world + 16};
    h.pending = calloc((size_t)h.cap, sizeof *h.pending);
    h.fd = malloc((size_t)m->world * sizeof *h.fd);
    h.can = calloc((size_t)m->world, sizeof *h.can);
    h.why = calloc((size_t)m->world, sizeof *h.why);
    rt_status s = RT_OK;
    if (!h.pending || !h.fd || !h.can || !h.why) {
        s = RT_ERR(err, RT_ENOMEM, "out of memory while the ranks meet");
        goto out;
    }
    for (int r = 0; r < m->world; r++) h.fd[r] = -1;
    /* a loopback MASTER_ADDR: one host, listen there only; else every interface */
    struct sockaddr_storage sa;
    memcpy(&sa, ai->ai_addr, ai->ai_addrlen);
    if (!is_loopback(ai) && ai->ai_family == AF_INET)
        ((struct sockaddr_in *)&sa)->sin_addr.s_addr = htonl(INADDR_ANY);
    else if (!is_loopback(ai)) ((struct sockaddr_in6 *)&sa)->sin6_addr = in6addr_any;
    const int one = 1;
    h.lfd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (h.lfd < 0 || setsockopt(h.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(h.lfd, (struct sockaddr *)&sa, ai->ai_addrlen) != 0 || listen(h.lfd, 128) != 0) {
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
                  "%s and WORLD_SIZE; the launch stops",
                  plural(missing), missing, m->world, m->addr, m->port, m->timeout_s, port_var(m));
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
    const double send_by = rtp_dist_now() + (m->timeout_s < 10 ? m->timeout_s : 10);
    const int ok = h.fail == RT_OK;
    for (int r = 1; r < m->world; r++) {
        if (h.fd[r] < 0) continue;
        errno = 0;
        answer(h.fd[r], ok, blob, h.msg, send_by);
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

static rt_status guest_run(const rt_dist_meet *m, const struct addrinfo *ai,
                           unsigned char blob[RT_DIST_MEET_BLOB], rt_error *err)
{
    const double deadline = rtp_dist_now() + m->timeout_s;
    int fd = dial(ai, deadline);
    if (fd < 0)
        return RT_ERR(err, RT_EDEVICE_LOST,
                      "rank %d of %d: rank 0 did not answer at %s:%s within %g s "
                      "(KILN_DIST_TIMEOUT) ---> HINT: start rank 0 too, with the same "
                      "MASTER_ADDR and %s as every rank",
                      m->rank, m->world, m->addr, m->port, m->timeout_s, port_var(m));
    unsigned char hello[HELLO_BYTES] = {0}, a[ANSWER_BYTES];
    memcpy(hello, MAGIC, 8);
    put32(hello + 8, VERSION);
    put32(hello + 12, (uint32_t)m->rank);
    put32(hello + 16, (uint32_t)m->world);
    put32(hello + 20, m->can != 0);
    snprintf((char *)hello + 24, WHY_BYTES, "%s", m->can || !m->why_not ? "" : m->why_not);
    /* connected: rank 0 answers within its own timeout, which started before now */
    const double answer_by = rtp_dist_now() + m->timeout_s + 1.0;
    int rc = io_all(fd, hello, sizeof hello, 1, answer_by);
    if (rc == 0) rc = io_all(fd, a, sizeof a, 0, answer_by);
    const int e = errno;
    close(fd);
    if (rc != 0)
        return RT_ERR(err, RT_EDEVICE_LOST,
                      "rank %d of %d: no answer from rank 0 at %s:%s within %g s "
                      "(KILN_DIST_TIMEOUT): %s ---> HINT: rank 0's own error says why",
                      m->rank, m->world, m->addr, m->port, m->timeout_s,
                      e == ETIMEDOUT ? "it waits for other ranks, or hangs" : strerror(e));
    if (memcmp(a, MAGIC, 8) != 0 || get32(a + 8) != VERSION)
        return RT_ERR(err, RT_EINVAL,
                      "rank %d of %d: %s:%s answered, but not as Kiln's rank 0 ---> HINT: "
                      "another program holds %s: give the launch a free one",
                      m->rank, m->world, m->addr, m->port, port_var(m));
    char *msg = (char *)a + 16 + RT_DIST_MEET_BLOB;
    msg[MSG_BYTES - 1] = '\0';
    if (!get32(a + 12))
        return RT_ERR(err, strstr(msg, "did not join") ? RT_EDEVICE_LOST : RT_EINVAL,
                      "rank %d of %d: rank 0 says: %s", m->rank, m->world, msg);
    memcpy(blob, a + 16, RT_DIST_MEET_BLOB);
    return RT_OK;
}

rt_status rt_dist_meet_run(const rt_dist_meet *m, rt_dist_meet_make make,
                           unsigned char blob[RT_DIST_MEET_BLOB], rt_error *err)
{
    if (m->world < 2 || m->rank < 0 || m->rank >= m->world)
        return RT_ERR(err, RT_EINVAL, "rank %d of %d: nothing to meet", m->rank, m->world);
    struct addrinfo *ai = NULL;
    RT_TRY(resolve(m, &ai, err));
    rt_status s = m->rank == 0 ? host_run(m, ai, make, blob, err) : guest_run(m, ai, blob, err);
    freeaddrinfo(ai);
    return s;
}
