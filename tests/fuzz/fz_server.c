/* fz_server.c - the loopback server of fz_server.h. */
#include "fz_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct fz_server {
    int lfd;
    fz_answer_fn answer;
    void *user;
    size_t served;
    atomic_int stop;
    pthread_t thread;
};

static void serve_one(fz_server *s, int fd)
{
    char req[4096];
    size_t got = 0;
    struct pollfd p = {fd, POLLIN, 0};
    while (got < sizeof req - 1 && poll(&p, 1, 1000) > 0) {
        ssize_t r = recv(fd, req + got, sizeof req - 1 - got, 0);
        if (r <= 0) break;
        got += (size_t)r;
        req[got] = '\0';
        if (strstr(req, "\r\n\r\n")) break;
    }
    size_t len = 0, off = 0;
    const uint8_t *resp = s->answer(s->user, s->served++, &len);
    while (resp && off < len) {
        ssize_t w = send(fd, resp + off, len - off, MSG_NOSIGNAL);
        if (w <= 0) break;
        off += (size_t)w;
    }
    shutdown(fd, SHUT_WR);
    close(fd);
}

static void *serve(void *arg)
{
    fz_server *s = arg;
    while (!atomic_load(&s->stop)) {
        struct pollfd p = {s->lfd, POLLIN, 0};
        if (poll(&p, 1, 1000) <= 0) continue;
        int fd = accept(s->lfd, NULL, NULL);
        if (fd >= 0) serve_one(s, fd);
        else if (atomic_load(&s->stop)) break;
    }
    return NULL;
}

fz_server *fz_server_start(fz_answer_fn answer, void *user, int *port)
{
    fz_server *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->answer = answer;
    s->user = user;
    s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&a, sizeof a) != 0 ||
        listen(s->lfd, 8) != 0 || getsockname(s->lfd, (struct sockaddr *)&a, &al) != 0 ||
        pthread_create(&s->thread, NULL, serve, s) != 0) {
        if (s->lfd >= 0) close(s->lfd);
        free(s);
        return NULL;
    }
    *port = ntohs(a.sin_port);
    return s;
}

void fz_server_stop(fz_server *s)
{
    if (!s) return;
    atomic_store(&s->stop, 1);
    shutdown(s->lfd, SHUT_RDWR); /* wakes the server's poll */
    pthread_join(s->thread, NULL);
    close(s->lfd);
    free(s);
}
