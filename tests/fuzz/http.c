/* http.c - fuzz target: the download code's handling of HTTP responses
 * (rt_download_file: status codes, Content-Range checks on resume, 200-instead-of-206
 * restarts, 416, cut-off bodies and retries, the .part file and the atomic rename).
 * A server thread in this process answers every request on 127.0.0.1 with the fuzzed
 * bytes verbatim (status line, headers, body: libcurl parses them, Kiln's header and
 * body callbacks decide), then closes the connection.
 * Input: byte 0 = flags, byte 1 = length of an existing DEST.part, then that many
 * bytes of .part, then the raw response.
 *   flags & 1: DEST.part exists (a resume: Kiln sends a Range request);
 *   flags & 2: an expected SHA-256 is given (the all-zero hash: a mismatch);
 *   flags >> 2 & 3: retries.
 * Responses containing "location" are skipped (a redirect must not leave the host).
 * Invariants: success leaves DEST with info.bytes bytes and no DEST.part; a
 * checksum failure leaves neither. */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fz.h"
#include "rt_download.h"

typedef struct server {
    int lfd;
    const uint8_t *resp;
    size_t len;
    atomic_int stop;
} server;

static void serve_one(server *s, int fd)
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
    size_t off = 0;
    while (off < s->len) {
        ssize_t w = send(fd, s->resp + off, s->len - off, MSG_NOSIGNAL);
        if (w <= 0) break;
        off += (size_t)w;
    }
    shutdown(fd, SHUT_WR);
    close(fd);
}

static void *serve(void *arg)
{
    server *s = arg;
    while (!atomic_load(&s->stop)) {
        struct pollfd p = {s->lfd, POLLIN, 0};
        if (poll(&p, 1, 1000) <= 0) continue;
        int fd = accept(s->lfd, NULL, NULL);
        if (fd >= 0) serve_one(s, fd);
        else if (atomic_load(&s->stop)) break;
    }
    return NULL;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    return 0;
}

static int has_location(const uint8_t *d, size_t n)
{
    for (size_t i = 0; i + 8 <= n; i++)
        if (!strncasecmp((const char *)d + i, "location", 8)) return 1;
    return 0;
}

static off_t size_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    unsigned flags = data[0];
    size_t plen = data[1];
    data += 2, size -= 2;
    if (plen > size) plen = size;
    const uint8_t *part = data, *resp = data + plen;
    size_t rlen = size - plen;
    if (has_location(resp, rlen)) return -1;

    const char *dir = fz_dir();
    FZ_CHECK(dir != NULL);
    fz_dir_clear();
    char dest[512], partpath[520];
    snprintf(dest, sizeof dest, "%s/f.bin", dir);
    snprintf(partpath, sizeof partpath, "%s.part", dest);
    if (flags & 1) FZ_CHECK(fz_write_file(dir, "f.bin.part", part, plen) == 0);

    server s = {.resp = resp, .len = rlen};
    s.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    FZ_CHECK(s.lfd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    FZ_CHECK(bind(s.lfd, (struct sockaddr *)&a, sizeof a) == 0 && listen(s.lfd, 8) == 0 &&
             getsockname(s.lfd, (struct sockaddr *)&a, &al) == 0);
    pthread_t th;
    FZ_CHECK(pthread_create(&th, NULL, serve, &s) == 0);

    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/f.bin", ntohs(a.sin_port));
    rt_download_opts o = {.url = url, .dest = dest, .connect_timeout_s = 2,
                          .stall_timeout_s = 2, .retries = (int)(flags >> 2 & 3)};
    static const char zeros[] = "0000000000000000000000000000000000000000000000000000000000000000";
    if (flags & 2) o.sha256_hex = zeros;
    rt_download_info info;
    memset(&info, 0, sizeof info);
    rt_error err = {0};
    rt_status st = rt_download_file(&o, &info, &err);
    atomic_store(&s.stop, 1);
    shutdown(s.lfd, SHUT_RDWR); /* wakes the server's poll */
    pthread_join(th, NULL);
    close(s.lfd);

    if (st == RT_OK) {
        FZ_CHECK(size_of(dest) == (off_t)info.bytes);
        FZ_CHECK(size_of(partpath) < 0);
    } else {
        FZ_CHECK(err.msg[0] != '\0');
        FZ_CHECK(size_of(dest) < 0);
        if (st == RT_EFORMAT) FZ_CHECK(size_of(partpath) < 0);
    }
    FZ_CHECK(info.attempts <= 1 + o.retries + 2); /* restarts add at most a few */
    return 0;
}
