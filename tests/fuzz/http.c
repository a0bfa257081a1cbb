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
#include <curl/curl.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "fz.h"
#include "fz_server.h"
#include "rt_download.h"

typedef struct answer {
    const uint8_t *resp;
    size_t len;
} answer;

static const uint8_t *same_answer(void *user, size_t n, size_t *len)
{
    (void)n;
    *len = ((answer *)user)->len;
    return ((answer *)user)->resp;
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

    answer ans = {resp, rlen};
    int port = 0;
    fz_server *srv = fz_server_start(same_answer, &ans, &port);
    FZ_CHECK(srv != NULL);

    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/f.bin", port);
    rt_download_opts o = {.url = url,
                          .dest = dest,
                          .connect_timeout_s = 2,
                          .stall_timeout_s = 2,
                          .retries = (int)(flags >> 2 & 3)};
    static const char zeros[] = "0000000000000000000000000000000000000000000000000000000000000000";
    if (flags & 2) o.sha256_hex = zeros;
    rt_download_info info;
    memset(&info, 0, sizeof info);
    rt_error err = {0};
    rt_status st = rt_download_file(&o, &info, &err);
    fz_server_stop(srv);

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
