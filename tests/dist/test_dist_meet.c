/* test_dist_meet.c - the ranks of a launch without MPI meeting over TCP on 127.0.0.1
 * (rt_dist_meet.h), each rank a process of its own (fork):
 *  - 2 and 3 ranks: every rank gets rank 0's blob, the same bytes;
 *  - a stray connection that sends something else does not stop the meeting;
 *  - the port taken by another program: rank 0 says so at once, naming MASTER_PORT;
 *  - ranks given different WORLD_SIZEs: both fail, naming WORLD_SIZE;
 *  - a rank that never comes: rank 0 names it within the timeout, and the rank that came
 *    gets the same message; rank 0 that never comes: the others time out naming it;
 *  - a rank that cannot join NCCL: every rank fails naming it and mpirun;
 *  - a bad MASTER_PORT, and a port answered by something that is not Kiln.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rt_dist_meet.h"
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

static result meet(int rank, int world, int port, double timeout, int can)
{
    char p[16];
    snprintf(p, sizeof p, "%d", port);
    rt_dist_meet m = {.addr = "127.0.0.1",
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

/* Rank `rank` in a child process; its result comes back through a pipe (wait_rank). */
typedef struct child {
    pid_t pid;
    int fd;
} child;

static child spawn(int rank, int world, int port, double timeout, int can)
{
    int pfd[2];
    child c = {-1, -1};
    if (pipe(pfd) != 0) return c;
    c.pid = fork();
    if (c.pid == 0) {
        close(pfd[0]);
        result r = meet(rank, world, port, timeout, can);
        ssize_t k = write(pfd[1], &r, sizeof r);
        _exit(k == (ssize_t)sizeof r ? 0 : 1);
    }
    close(pfd[1]);
    c.fd = pfd[0];
    return c;
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
    return T_EXIT();
}
