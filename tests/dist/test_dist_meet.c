/* test_dist_meet.c - the ranks of a launch without MPI meeting over TCP on 127.0.0.1
 * (rt_dist_meet.h), each rank a process of its own (fork):
 *  - 2 and 3 ranks: every rank gets rank 0's blob, the same bytes;
 *  - a stray connection that sends something else does not stop the meeting;
 *  - the port taken by another program: rank 0 says so at once, naming MASTER_PORT;
 *  - ranks given different WORLD_SIZEs: both fail, naming WORLD_SIZE;
 *  - a rank that never comes: rank 0 names it within the timeout, and the rank that came
 *    gets the same message; rank 0 that never comes: the others time out naming it;
 *  - a rank that cannot join NCCL: every rank fails naming it and mpirun;
 *  - a bad MASTER_PORT, and a port answered by something that is not Kiln;
 *  - strangers on the meeting port (a hello of the first version claiming rank 1 before
 *    rank 1 comes, a hello of another version, a hello signed with another secret, many
 *    idle connections, more than rank 0 hears at once): dropped, and the real ranks
 *    still meet; a rank given another KILN_DIST_TOKEN is dropped, never seated;
 *  - a MASTER_ADDR that is not loopback without a token is refused on every rank, and
 *    rank 0 listens on MASTER_ADDR's own address only;
 *  - the frames' signatures: another secret, another challenge, one flipped bit;
 *  - without a token, another user's process (root only: it becomes nobody) is dropped.
 */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rt_dist_meet.h"
#include "rt_dist_meet_frame.h"
#include "t.h"

typedef struct result {
    rt_status s;
    unsigned char blob[RT_DIST_MEET_BLOB];
    char msg[512];
    double seconds;
} result;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static rt_status make_blob(unsigned char blob[RT_DIST_MEET_BLOB], rt_error *err)
{
    for (int i = 0; i < RT_DIST_MEET_BLOB; i++) blob[i] = (unsigned char)(i * 7 + getpid());
    return RT_OK;
}

/* A port nobody listens on now (the kernel's pick for port 0, then released). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        return 29500;
    close(fd);
    return ntohs(a.sin_port);
}

#define TOKEN "a-test-launch-secret-0123456789"

static result meet_as(const char *addr, const char *token, int rank, int world, int port,
                      double timeout, int can)
{
    char p[16];
    snprintf(p, sizeof p, "%d", port);
    rt_dist_meet m = {.addr = addr,
                      .token = token,
                      .port = p,
                      .rank = rank,
                      .world = world,
                      .timeout_s = timeout,
                      .can = can,
                      .why_not = can ? NULL : "it trains on cpu"};
    result r = {0};
    rt_error err = {0};
    double t0 = now();
    r.s = rt_dist_meet_run(&m, make_blob, r.blob, &err);
    r.seconds = now() - t0;
    snprintf(r.msg, sizeof r.msg, "%s", r.s == RT_OK ? "" : err.msg);
    return r;
}

static result meet(int rank, int world, int port, double timeout, int can)
{
    return meet_as("127.0.0.1", TOKEN, rank, world, port, timeout, can);
}

/* Rank `rank` in a child process; its result comes back through a pipe (wait_rank). */
typedef struct child {
    pid_t pid;
    int fd;
} child;

static child spawn_as(const char *token, int rank, int world, int port, double timeout, int can)
{
    int pfd[2];
    child c = {-1, -1};
    if (pipe(pfd) != 0) return c;
    c.pid = fork();
    if (c.pid == 0) {
        close(pfd[0]);
        result r = meet_as("127.0.0.1", token, rank, world, port, timeout, can);
        ssize_t k = write(pfd[1], &r, sizeof r);
        _exit(k == (ssize_t)sizeof r ? 0 : 1);
    }
    close(pfd[1]);
    c.fd = pfd[0];
    return c;
}

static child spawn(int rank, int world, int port, double timeout, int can)
{
    return spawn_as(TOKEN, rank, world, port, timeout, can);
}

static result wait_rank(child c)
{
    result r = {.s = RT_EINVAL, .msg = "the child failed"};
    size_t got = 0;
    while (got < sizeof r) {
        ssize_t k = read(c.fd, (char *)&r + got, sizeof r - got);
        if (k <= 0) break;
        got += (size_t)k;
    }
    close(c.fd);
    waitpid(c.pid, NULL, 0);
    return r;
}

/* Rank 1 (told world1 ranks, can1) in a child, rank 0 (world ranks) here, on a free
 * port. */
static void meet_two(int world, int world1, double timeout, int can1, result *r0, result *r1)
{
    int port = free_port();
    child c = spawn(1, world1, port, timeout, can1);
    *r0 = meet(0, world, port, timeout, 1);
    *r1 = wait_rank(c);
}

T_TEST(two_ranks_share_rank_0s_blob)
{
    result r0, r1;
    meet_two(2, 2, 10, 1, &r0, &r1);
    ASSERT_EQ(r0.s, RT_OK);
    ASSERT_EQ(r1.s, RT_OK);
    ASSERT(memcmp(r0.blob, r1.blob, RT_DIST_MEET_BLOB) == 0);
    unsigned char want[RT_DIST_MEET_BLOB];
    make_blob(want, NULL);
    ASSERT(memcmp(r0.blob, want, RT_DIST_MEET_BLOB) == 0); /* rank 0 made it */
}

T_TEST(three_ranks_rank_0_last_and_a_stray_connection)
{
    int port = free_port();
    child c1 = spawn(1, 3, port, 10, 1), c2 = spawn(2, 3, port, 10, 1);
    usleep(300000); /* ranks 1 and 2 retry until rank 0 listens */
    pid_t stray = fork();
    if (stray == 0) { /* something else connects and talks nonsense */
        usleep(100000);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        for (int i = 0; i < 50 && connect(fd, (struct sockaddr *)&a, sizeof a) != 0; i++)
            usleep(20000);
        static const char junk[200] = "GET / HTTP/1.0\r\n\r\n";
        ssize_t k = send(fd, junk, sizeof junk, MSG_NOSIGNAL);
        (void)k;
        usleep(500000);
        _exit(0);
    }
    result r0 = meet(0, 3, port, 10, 1);
    result r1 = wait_rank(c1), r2 = wait_rank(c2);
    waitpid(stray, NULL, 0);
    ASSERT_EQ(r0.s, RT_OK);
    ASSERT_EQ(r1.s, RT_OK);
    ASSERT_EQ(r2.s, RT_OK);
    ASSERT(memcmp(r0.blob, r1.blob, RT_DIST_MEET_BLOB) == 0);
    ASSERT(memcmp(r0.blob, r2.blob, RT_DIST_MEET_BLOB) == 0);
}

T_TEST(a_taken_port_is_named)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    ASSERT(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && listen(fd, 1) == 0);
    ASSERT(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    result r0 = meet(0, 2, ntohs(a.sin_port), 10, 1);
    printf("port taken: %.3f s: %s\n", r0.seconds, r0.msg);
    ASSERT_EQ(r0.s, RT_EIO);
    ASSERT_STR_CONTAINS(r0.msg, "MASTER_PORT");
    ASSERT_STR_CONTAINS(r0.msg, "in use");
    ASSERT(r0.seconds < 1.0);
    /* the other rank reaches the program that holds the port: not Kiln's rank 0 */
    child c = spawn(1, 2, ntohs(a.sin_port), 2, 1);
    int peer = accept(fd, NULL, NULL);
    static const unsigned char zeros[600];
    ssize_t k = send(peer, zeros, sizeof zeros, MSG_NOSIGNAL);
    (void)k;
    result r1 = wait_rank(c);
    close(peer);
    close(fd);
    printf("another program on the port: %s\n", r1.msg);
    ASSERT_EQ(r1.s, RT_EINVAL);
    ASSERT_STR_CONTAINS(r1.msg, "not as Kiln's rank 0");
}

T_TEST(different_world_sizes_fail_on_both)
{
    result r0, r1;
    meet_two(2, 3, 10, 1, &r0, &r1);
    printf("world sizes 2 and 3: %s\n", r0.msg);
    ASSERT_EQ(r0.s, RT_EINVAL);
    ASSERT_EQ(r1.s, RT_EINVAL);
    ASSERT_STR_CONTAINS(r0.msg, "rank 1 was launched with WORLD_SIZE=3 but rank 0 with "
                                "WORLD_SIZE=2");
    ASSERT_STR_CONTAINS(r1.msg, "WORLD_SIZE=3");
    ASSERT(r0.seconds < 5.0);
}

T_TEST(a_rank_that_never_comes_is_named_within_the_timeout)
{
    result r0, r1;
    meet_two(3, 3, 1.0, 1, &r0, &r1);
    printf("rank 2 missing: %.2f s: %s\n", r0.seconds, r0.msg);
    ASSERT_EQ(r0.s, RT_EDEVICE_LOST);
    ASSERT_STR_CONTAINS(r0.msg, "rank 2 of 3 did not join rank 0");
    ASSERT_STR_CONTAINS(r0.msg, "KILN_DIST_TIMEOUT");
    ASSERT(r0.seconds >= 0.9 && r0.seconds < 3.0);
    ASSERT_EQ(r1.s, RT_EDEVICE_LOST); /* rank 1 hears rank 0's reason */
    ASSERT_STR_CONTAINS(r1.msg, "rank 2 of 3 did not join");
    /* rank 0 never comes */
    result lone = meet(1, 2, free_port(), 0.5, 1);
    printf("rank 0 missing: %.2f s: %s\n", lone.seconds, lone.msg);
    ASSERT_EQ(lone.s, RT_EDEVICE_LOST);
    ASSERT_STR_CONTAINS(lone.msg, "rank 0 did not answer");
    ASSERT(lone.seconds < 3.0);
}

T_TEST(a_rank_that_cannot_join_stops_all)
{
    result r0, r1;
    meet_two(2, 2, 10, 0, &r0, &r1);
    printf("rank 1 on the CPU: %s\n", r0.msg);
    ASSERT_EQ(r0.s, RT_EINVAL);
    ASSERT_EQ(r1.s, RT_EINVAL);
    ASSERT_STR_CONTAINS(r0.msg, "rank 1 cannot join NCCL (rank 1: it trains on cpu)");
    ASSERT_STR_CONTAINS(r0.msg, "mpirun");
    ASSERT_STR_CONTAINS(r1.msg, "rank 1 cannot join NCCL");
}

T_TEST(bad_variables_are_refused)
{
    rt_error err = {0};
    unsigned char blob[RT_DIST_MEET_BLOB];
    rt_dist_meet m = {
        .addr = "127.0.0.1", .port = "70000", .rank = 0, .world = 2, .timeout_s = 1, .can = 1};
    ASSERT_EQ(rt_dist_meet_run(&m, make_blob, blob, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "MASTER_PORT");
    m.port = "29x";
    ASSERT_EQ(rt_dist_meet_run(&m, make_blob, blob, &err), RT_EINVAL);
    m.port = "29500";
    m.addr = NULL;
    ASSERT_EQ(rt_dist_meet_run(&m, make_blob, blob, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "MASTER_ADDR");
}

/* A connection to 127.0.0.1:port, retried while nobody listens yet: the fd or -1. */
static int connect_local(int port)
{
    for (int i = 0; i < 100; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0) return fd;
        if (fd >= 0) close(fd);
        usleep(20000);
    }
    return -1;
}

static void put_be32(unsigned char *p, uint32_t v)
{
    v = htonl(v);
    memcpy(p, &v, 4);
}

/* The strangers of the next test, in a child: they are all on the port before rank 1
 * comes, and stay until it is over. */
static void strangers(int port, int idle)
{
    /* the first version's hello, claiming rank 1 of 2: it took rank 1's seat */
    unsigned char v1[88] = "KILNMEET";
    put_be32(v1 + 8, 1);
    put_be32(v1 + 12, 1);
    put_be32(v1 + 16, 2);
    put_be32(v1 + 20, 1);
    int fd = connect_local(port);
    ssize_t k = send(fd, v1, sizeof v1, MSG_NOSIGNAL);
    /* another version: it stopped the launch */
    unsigned char v9[RTP_MEET_HELLO_BYTES] = "KILNMEET";
    put_be32(v9 + 8, 9);
    int fd9 = connect_local(port);
    k = send(fd9, v9, sizeof v9, MSG_NOSIGNAL);
    /* this version, rank 1, signed with a guessed secret after reading the challenge */
    int fds = connect_local(port);
    unsigned char c[RTP_MEET_CHALLENGE_BYTES], hello[RTP_MEET_HELLO_BYTES];
    if (recv(fds, c, sizeof c, MSG_WAITALL) == (ssize_t)sizeof c) {
        rtp_meet_hello h = {.rank = 1, .world = 2, .can = 1};
        rtp_meet_hello_put(hello, &h, "guessed-secret-guessed-secret", c + RTP_MEET_HEAD);
        k = send(fds, hello, sizeof hello, MSG_NOSIGNAL);
    }
    (void)k;
    for (int i = 0; i < idle; i++) (void)connect_local(port); /* silent, kept open */
    sleep(3);
    _exit(0);
}

T_TEST(strangers_on_the_port_do_not_stop_the_real_ranks)
{
    /* world + 16 silent connections failed the launch; 300 is more than rank 0 hears at
     * once (the oldest are dropped) */
    const int idles[] = {2 + 16 + 4, 300};
    for (int t = 0; t < 2; t++) {
        int port = free_port();
        pid_t s = fork();
        if (s == 0) strangers(port, idles[t]);
        child c = {-1, -1};
        pid_t late = fork();
        if (late == 0) { /* rank 1 comes once the strangers are there */
            usleep(t ? 1500000 : 800000);
            result r = meet(1, 2, port, 10, 1);
            _exit(r.s == RT_OK ? 0 : 1);
        }
        (void)c;
        result r0 = meet(0, 2, port, 10, 1);
        int st = -1;
        waitpid(late, &st, 0);
        kill(s, SIGKILL);
        waitpid(s, NULL, 0);
        printf("%d idle strangers: rank 0 %s in %.2f s\n", idles[t], r0.s == RT_OK ? "met" : r0.msg,
               r0.seconds);
        ASSERT_EQ(r0.s, RT_OK);
        ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0); /* rank 1 met too */
    }
}

T_TEST(a_rank_with_another_token_is_dropped_not_seated)
{
    int port = free_port();
    child c = spawn_as("another-secret-another-secret", 1, 2, port, 1.5, 1);
    result r0 = meet(0, 2, port, 1.5, 1);
    result r1 = wait_rank(c);
    printf("another token: rank 0: %s\nrank 1: %s\n", r0.msg, r1.msg);
    ASSERT_EQ(r0.s, RT_EDEVICE_LOST);
    ASSERT_STR_CONTAINS(r0.msg, "rank 1 of 2 did not join");
    ASSERT_STR_CONTAINS(r0.msg, "signature");
    ASSERT_EQ(r1.s, RT_EDEVICE_LOST);
    ASSERT_STR_CONTAINS(r1.msg, "KILN_DIST_TOKEN");
}

/* This host's first IPv4 address that is not a loopback one, or 0. */
static int own_address(char *out, size_t cap)
{
    struct ifaddrs *list = NULL, *i;
    int found = 0;
    if (getifaddrs(&list) != 0) return 0;
    for (i = list; i && !found; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
        const struct sockaddr_in *a = (const struct sockaddr_in *)i->ifa_addr;
        if ((ntohl(a->sin_addr.s_addr) >> 24) == 127) continue;
        found = inet_ntop(AF_INET, &a->sin_addr, out, (socklen_t)cap) != NULL;
    }
    freeifaddrs(list);
    return found;
}

T_TEST(a_network_meeting_needs_a_token_and_listens_on_its_address)
{
    result r0 = meet_as("10.255.255.1", NULL, 0, 2, free_port(), 1, 1);
    result r1 = meet_as("10.255.255.1", "short", 1, 2, free_port(), 1, 1);
    printf("no token: %s\nshort token: %s\n", r0.msg, r1.msg);
    ASSERT_EQ(r0.s, RT_EINVAL);
    ASSERT_STR_CONTAINS(r0.msg, "KILN_DIST_TOKEN is not set");
    ASSERT(r0.seconds < 0.5);
    ASSERT_EQ(r1.s, RT_EINVAL);
    ASSERT_STR_CONTAINS(r1.msg, "KILN_DIST_TOKEN is too short");
    char addr[INET_ADDRSTRLEN];
    if (!own_address(addr, sizeof addr)) {
        printf("skipped: this host has no IPv4 address besides loopback\n");
        return;
    }
    int port = free_port();
    pid_t probe = fork();
    if (probe == 0) { /* while rank 0 waits: its port is not open on the loopback */
        usleep(400000);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        _exit(connect(fd, (struct sockaddr *)&a, sizeof a) == 0 ? 1 : 0);
    }
    result lone = meet_as(addr, TOKEN, 0, 2, port, 1.0, 1);
    int st = -1;
    waitpid(probe, &st, 0);
    printf("rank 0 at %s: %s\n", addr, lone.msg);
    ASSERT_EQ(lone.s, RT_EDEVICE_LOST);
    ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0); /* 127.0.0.1 refused the connection */
}

T_TEST(frames_carry_the_launch_signature)
{
    unsigned char n0[RTP_MEET_NONCE] = {1, 2, 3}, other[RTP_MEET_NONCE] = {1, 2, 4};
    unsigned char nr[RTP_MEET_NONCE] = {9};
    rtp_meet_hello h = {.rank = 3, .world = 4, .can = 1, .why = "x", .nonce = {9}}, got;
    unsigned char f[RTP_MEET_HELLO_BYTES];
    rtp_meet_hello_put(f, &h, TOKEN, n0);
    ASSERT_EQ(rtp_meet_hello_get(f, &got, TOKEN, n0), 0);
    ASSERT_EQ(got.rank, 3u);
    ASSERT_EQ(got.world, 4u);
    ASSERT_EQ(rtp_meet_hello_get(f, &got, "another-secret-another", n0), -1);
    ASSERT_EQ(rtp_meet_hello_get(f, &got, TOKEN, other), -1); /* a replay elsewhere */
    f[14] ^= 1;
    ASSERT_EQ(rtp_meet_hello_get(f, &got, TOKEN, n0), -1);
    rtp_meet_answer a = {.ok = 1, .msg = "fine"}, back;
    for (int i = 0; i < RT_DIST_MEET_BLOB; i++) a.blob[i] = (unsigned char)i;
    unsigned char g[RTP_MEET_ANSWER_BYTES];
    rtp_meet_answer_put(g, &a, TOKEN, n0, nr);
    ASSERT(memmem(g, sizeof g, a.blob + 8, 16) == NULL); /* the blob is not in clear */
    ASSERT_EQ(rtp_meet_answer_get(g, &back, TOKEN, n0, nr), 0);
    ASSERT(memcmp(back.blob, a.blob, RT_DIST_MEET_BLOB) == 0);
    ASSERT_EQ(rtp_meet_answer_get(g, &back, TOKEN, n0, other), -1);
    ASSERT_EQ(rtp_meet_answer_get(g, &back, "", n0, nr), -1);
}

/* Without a secret (a loopback meeting) only this user's processes take a seat: a
 * process of another user that speaks the protocol perfectly (the empty key's
 * signature, rank 1) is dropped, and the real rank 1 meets. */
T_TEST(without_a_token_another_users_process_is_dropped)
{
    /* the owner of a local connection, as rank 0 finds it */
    int port = free_port();
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ASSERT(lfd >= 0 && bind(lfd, (struct sockaddr *)&a, sizeof a) == 0 && listen(lfd, 4) == 0);
    int cfd = connect_local(port), afd = accept(lfd, NULL, NULL);
    unsigned uid = 12345;
    ASSERT_EQ(rtp_meet_peer_uid(afd, &uid), 1);
    ASSERT_EQ(uid, (unsigned)geteuid());
    close(cfd);
    close(afd);
    close(lfd);
    if (geteuid() != 0) {
        printf("skipped: another user's process (needs root to become one)\n");
        return;
    }
    port = free_port();
    pid_t s = fork();
    if (s == 0) { /* nobody, knowing the protocol, claims rank 1 first */
        if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
        int fd = connect_local(port);
        unsigned char c[RTP_MEET_CHALLENGE_BYTES], hello[RTP_MEET_HELLO_BYTES];
        if (fd >= 0 && recv(fd, c, sizeof c, MSG_WAITALL) == (ssize_t)sizeof c) {
            rtp_meet_hello h = {.rank = 1, .world = 2, .can = 1};
            rtp_meet_hello_put(hello, &h, "", c + RTP_MEET_HEAD);
            ssize_t k = send(fd, hello, sizeof hello, MSG_NOSIGNAL);
            (void)k;
        }
        sleep(3);
        _exit(0);
    }
    pid_t late = fork();
    if (late == 0) { /* the real rank 1 comes once the stranger has spoken */
        usleep(800000);
        result r = meet_as("127.0.0.1", NULL, 1, 2, port, 10, 1);
        _exit(r.s == RT_OK ? 0 : 1);
    }
    result r0 = meet_as("127.0.0.1", NULL, 0, 2, port, 10, 1);
    int st = -1;
    waitpid(late, &st, 0);
    kill(s, SIGKILL);
    waitpid(s, NULL, 0);
    printf("another user's hello, no token: rank 0 %s\n", r0.s ? r0.msg : "met");
    ASSERT_EQ(r0.s, RT_OK);
    ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0); /* rank 1 met too */
}

int main(void)
{
    /* SIGPIPE left at its default (death): a rank that went away must not raise it */
    T_RUN(two_ranks_share_rank_0s_blob);
    T_RUN(three_ranks_rank_0_last_and_a_stray_connection);
    T_RUN(a_taken_port_is_named);
    T_RUN(different_world_sizes_fail_on_both);
    T_RUN(a_rank_that_never_comes_is_named_within_the_timeout);
    T_RUN(a_rank_that_cannot_join_stops_all);
    T_RUN(bad_variables_are_refused);
    T_RUN(strangers_on_the_port_do_not_stop_the_real_ranks);
    T_RUN(a_rank_with_another_token_is_dropped_not_seated);
    T_RUN(a_network_meeting_needs_a_token_and_listens_on_its_address);
    T_RUN(frames_carry_the_launch_signature);
    T_RUN(without_a_token_another_users_process_is_dropped);
    return T_EXIT();
}
