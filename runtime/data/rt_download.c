/* rt_download.c - rt_download_file(): libcurl transfer into DEST.part, resume with a
 * Range header, SHA-256 check, atomic rename (contract in rt_download.h).
 *
 * Resume: when DEST.part has L bytes we send "Range: bytes=L-" ourselves
 * (CURLOPT_RANGE, not CURLOPT_RESUME_FROM, so that curl hands us a 200 reply
 * instead of failing). The first body byte decides: 206 starting at L -> append;
 * anything else -> truncate and start over. 416 (range not satisfiable) means the
 * .part is already whole or too long: it is checked, and restarted if wrong.
 * Interrupts: should_stop and the progress callback are polled from curl's
 * progress hook, which curl calls at least once a second even when no data flows.
 * No total timeout (big files on slow links are fine); a stall or a slow connect
 * is one. Downloads into one directory are serialised across processes with a
 * flock on the directory, so two kernels sharing a cache never write one .part.
 * libcurl is loaded by the first download (rt_curl_dl.c), not at process start.
 */
#include "rt_download.h"
#include "rt_curl_dl.h"
#include "rt_clock.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct xfer {
    const rt_download_opts *o;
    const char *file; /* base name, for messages and progress */
    char part[PATH_MAX];
    FILE *fp; /* opened at the first body byte */
    CURL *curl;
    uint64_t asked_from; /* Range start requested (0 = none) */
    uint64_t base;       /* bytes of .part kept under this response */
    uint64_t written;    /* body bytes written by this response */
    long range_start;    /* from Content-Range, -1 if absent */
    int stopped, write_errno, bad_range;
    double last_report;
} xfer;

static uint64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
}

/* The directory part of path ("." when there is none). */
static void dir_of(const char *path, char dir[PATH_MAX])
{
    size_t n = strnlen(path, PATH_MAX - 1);
    memcpy(dir, path, n);
    dir[n] = '\0';
    char *slash = strrchr(dir, '/');
    if (slash) *(slash == dir ? slash + 1 : slash) = '\0';
    else memcpy(dir, ".", 2);
}

static size_t on_header(char *buf, size_t size, size_t n, void *user)
{
    xfer *x = user;
    size_t len = size * n;
    if (len >= 5 && !strncmp(buf, "HTTP/", 5)) x->range_start = -1; /* new response */
    if (len > 14 && !strncasecmp(buf, "Content-Range:", 14)) {
        long start = -1;
        if (sscanf(buf + 14, " bytes %ld-", &start) == 1) x->range_start = start;
    }
    return len;
}

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
    xfer *x = user;
    if (!x->fp) {
        long code = 0;
        if (curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &code) != CURLE_OK) code = 0;
        int append = x->asked_from > 0 && (code == 206 || code == 0); /* 0: file:// */
        if (append && code == 206 && x->range_start != (long)x->asked_from) {
            x->bad_range = 1;
            return 0;
        }
        x->base = append ? x->asked_from : 0;
        x->fp = fopen(x->part, append ? "ab" : "wb");
        if (!x->fp) {
            x->write_errno = errno;
            return 0;
        }
    }
    size_t len = size * n;
    if (fwrite(data, 1, len, x->fp) != len) {
        x->write_errno = errno ? errno : EIO;
        return 0;
    }
    x->written += len;
    return len;
}

static int on_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    xfer *x = user;
    const rt_download_opts *o = x->o;
    if (o->should_stop && o->should_stop(o->user)) {
        x->stopped = 1;
        return 1;
    }
    double t = rt_clock_s();
    if (o->progress && t - x->last_report >= 0.1) {
        x->last_report = t;
        uint64_t base = x->fp ? x->base : x->asked_from;
        uint64_t total = dltotal > 0 ? base + (uint64_t)dltotal : 0;
        if (o->progress(x->file, base + (uint64_t)dlnow, total, o->user)) {
            x->stopped = 1;
            return 1;
        }
    }
    return 0;
}

static rt_status close_part(xfer *x, rt_error *err)
{
    if (!x->fp) return RT_OK;
    int bad = fflush(x->fp) != 0 || fsync(fileno(x->fp)) != 0;
    int e = errno;
    bad |= fclose(x->fp) != 0;
    x->fp = NULL;
    return bad ? RT_ERR(err, RT_EIO, "%s: cannot write: %s", x->part, strerror(e)) : RT_OK;
}

static const char *u64_str(uint64_t v, char buf[24])
{
    snprintf(buf, 24, "%llu", (unsigned long long)v);
    return buf;
}

typedef enum { ATTEMPT_DONE, ATTEMPT_RETRY, ATTEMPT_FAIL, ATTEMPT_RESTART } attempt_result;

/* Sets every option of one request; returns the first failure. */
static CURLcode setup_request(xfer *x, CURL *c, char *errbuf, char range[32])
{
    const rt_download_opts *o = x->o;
    CURLcode oc = CURLE_OK;
#define SETOPT(opt, val)                                        \
    do {                                                        \
        if (oc == CURLE_OK) oc = curl_easy_setopt(c, opt, val); \
    } while (0)
    SETOPT(CURLOPT_URL, o->url);
    SETOPT(CURLOPT_ERRORBUFFER, errbuf);
    SETOPT(CURLOPT_NOSIGNAL, 1L);
    SETOPT(CURLOPT_FOLLOWLOCATION, 1L);
    SETOPT(CURLOPT_MAXREDIRS, 5L);
    SETOPT(CURLOPT_FAILONERROR, 1L);
    SETOPT(CURLOPT_USERAGENT, "kiln-dataset/1");
#if LIBCURL_VERSION_NUM >= 0x075500
    SETOPT(CURLOPT_PROTOCOLS_STR, "http,https,file");
    SETOPT(CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#endif
    SETOPT(CURLOPT_CONNECTTIMEOUT, o->connect_timeout_s > 0 ? o->connect_timeout_s : 30L);
    SETOPT(CURLOPT_LOW_SPEED_LIMIT, 1L);
    SETOPT(CURLOPT_LOW_SPEED_TIME, o->stall_timeout_s > 0 ? o->stall_timeout_s : 60L);
    SETOPT(CURLOPT_HEADERFUNCTION, on_header);
    SETOPT(CURLOPT_HEADERDATA, x);
    SETOPT(CURLOPT_WRITEFUNCTION, on_body);
    SETOPT(CURLOPT_WRITEDATA, x);
    SETOPT(CURLOPT_NOPROGRESS, 0L);
    SETOPT(CURLOPT_XFERINFOFUNCTION, on_progress);
    SETOPT(CURLOPT_XFERINFODATA, x);
    if (x->asked_from > 0) {
        snprintf(range, 32, "%llu-", (unsigned long long)x->asked_from);
        SETOPT(CURLOPT_RANGE, range);
    }
#undef SETOPT
    return oc;
}

/* Turns a failed request into an error, and says whether trying again helps. */
static attempt_result failure(const xfer *x, CURLcode rc, long code, curl_off_t total,
                              const char *errbuf, rt_status *st, rt_error *err)
{
    const rt_download_opts *o = x->o;
    const char *why = errbuf[0] ? errbuf : curl_easy_strerror(rc);
    uint64_t have = x->written ? x->base + x->written : x->asked_from;
    char num[24];
    switch (rc) {
    case CURLE_ABORTED_BY_CALLBACK:
        *st = RT_ERR(err, RT_EINTERRUPTED,
                     "download of %s interrupted after %llu bytes; %s is kept and the next "
                     "attempt resumes from it",
                     x->file, (unsigned long long)have, x->part);
        return ATTEMPT_FAIL;
    case CURLE_HTTP_RETURNED_ERROR:
        if (code == 416 && x->asked_from > 0) return ATTEMPT_RESTART;
        *st = RT_ERR(err, RT_EIO, "HTTP %ld from %s%s", code, o->url,
                     code == 404   ? " (not found) ---> HINT: check --url and the file name"
                     : code >= 500 ? " (server error) ---> HINT: try again later or another --url"
                                   : "");
        return ATTEMPT_FAIL;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
        *st = RT_ERR(err, RT_EIO,
                     "cannot resolve the host of %s (DNS failure: %s) ---> HINT: "
                     "offline? put the files in --dir, or point --url at a reachable mirror",
                     o->url, why);
        return ATTEMPT_FAIL;
    case CURLE_COULDNT_CONNECT:
        *st = RT_ERR(err, RT_EIO, "cannot connect to %s: %s", o->url, why);
        return ATTEMPT_FAIL;
    case CURLE_WRITE_ERROR:
        if (x->bad_range) {
            *st = RT_ERR(err, RT_EIO, "%s: the server answered a different byte range", o->url);
            return ATTEMPT_RESTART;
        }
        *st = RT_ERR(err, RT_EIO, "%s: cannot write: %s", x->part,
                     strerror(x->write_errno ? x->write_errno : EIO));
        return ATTEMPT_FAIL;
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_SEND_ERROR:
        *st = RT_ERR(err, RT_EIO,
                     "download of %s %s after %llu%s%s bytes (%s); %s is kept "
                     "and the next attempt resumes from it",
                     o->url, rc == CURLE_OPERATION_TIMEDOUT ? "timed out" : "cut off",
                     (unsigned long long)have, total > 0 ? " of " : "",
                     total > 0 ? u64_str(x->base + (uint64_t)total, num) : "", why, x->part);
        return ATTEMPT_RETRY;
    default:
        *st = RT_ERR(err, RT_EIO, "download of %s failed: %s", o->url, why);
        return ATTEMPT_FAIL;
    }
}

/* One request. Sets *st on failure; the result says whether to try again. */
static attempt_result attempt(xfer *x, rt_download_info *info, rt_status *st, rt_error *err)
{
    char errbuf[CURL_ERROR_SIZE] = "", range[32];
    x->asked_from = file_size(x->part);
    x->written = 0;
    x->range_start = -1;
    x->bad_range = 0;
    CURL *c = x->curl = curl_easy_init();
    if (!c) {
        *st = RT_ERR(err, RT_ENOMEM, "cannot start a transfer (curl)");
        return ATTEMPT_FAIL;
    }
    CURLcode rc = setup_request(x, c, errbuf, range);
    if (rc != CURLE_OK) {
        curl_easy_cleanup(c);
        x->curl = NULL;
        *st = RT_ERR(err, RT_EIO, "cannot set up the transfer of %s: %s", x->o->url,
                     curl_easy_strerror(rc));
        return ATTEMPT_FAIL;
    }
    rc = curl_easy_perform(c);
    long code = 0; /* both stay at "unknown" if curl cannot tell */
    curl_off_t total = -1;
    if (curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code) != CURLE_OK) code = 0;
    if (curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &total) != CURLE_OK) total = -1;
    curl_easy_cleanup(c);
    x->curl = NULL;
    info->attempts++;
    info->http_status = code;
    rt_status cs = close_part(x, err);
    if (rc != CURLE_OK) return failure(x, rc, code, total, errbuf, st, err);
    if (cs != RT_OK) {
        *st = cs;
        return ATTEMPT_FAIL;
    }
    if (x->written == 0 && (x->asked_from == 0 || code == 200)) { /* empty body */
        FILE *f = fopen(x->part, "wb");
        if (!f || fclose(f) != 0) {
            *st = RT_ERR(err, RT_EIO, "%s: cannot write", x->part);
            return ATTEMPT_FAIL;
        }
    }
    info->resumed_from = x->written ? x->base : x->asked_from;
    return ATTEMPT_DONE;
}

/* Checks the finished .part and renames it into place. */
static rt_status finish(xfer *x, rt_download_info *info, rt_error *err)
{
    const rt_download_opts *o = x->o;
    info->bytes = file_size(x->part);
    if (o->sha256_hex) {
        char got[65];
        RT_TRY(rt_sha256_file(x->part, got, err));
        if (strcasecmp(got, o->sha256_hex) != 0) {
            unlink(x->part);
            return RT_ERR(err, RT_EFORMAT,
                          "%s: SHA-256 mismatch: expected %s, got %s (%llu bytes from %s); "
                          "the download was deleted",
                          x->file, o->sha256_hex, got, (unsigned long long)info->bytes, o->url);
        }
    }
    if (rename(x->part, o->dest) != 0)
        return RT_ERR(err, RT_EIO, "cannot rename %s to %s: %s", x->part, o->dest, strerror(errno));
    /* Make the rename durable: fsync the directory. */
    char dir[PATH_MAX];
    dir_of(o->dest, dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    if (o->progress) o->progress(x->file, info->bytes, info->bytes, o->user);
    return RT_OK;
}

static int valid_hex64(const char *h)
{
    for (int i = 0; i < 64; i++)
        if (!h[i] || !strchr("0123456789abcdefABCDEF", h[i])) return 0;
    return h[64] == '\0';
}

/* The attempts, then the check and rename; called with the directory locked. */
static rt_status download_locked(xfer *x, rt_download_info *info, rt_error *err)
{
    const rt_download_opts *o = x->o;
    rt_status st = RT_OK;
    int retries = o->retries > 0 ? o->retries : 0, restarts = 0;
    for (;;) {
        attempt_result r = attempt(x, info, &st, err);
        if (r == ATTEMPT_DONE) break;
        if (r == ATTEMPT_RESTART && restarts++ == 0) {
            /* 416 or a wrong range: is the part already the whole file? */
            rt_error tmp;
            if (o->sha256_hex && finish(x, info, &tmp) == RT_OK) return RT_OK;
            unlink(x->part);
            continue;
        }
        if (r == ATTEMPT_RETRY && retries-- > 0) continue;
        if (r == ATTEMPT_RESTART)
            st = RT_ERR(err, RT_EIO, "%s: the server keeps refusing the byte range; %s deleted",
                        o->url, x->part);
        return st;
    }
    return finish(x, info, err);
}

/* Two kernels fetching into one directory (a shared cache) would write one .part
 * together: an exclusive flock on the directory serialises them. The lock is
 * advisory and best-effort: where the file system refuses it, we go on without.
 * Returns the locked fd (or -1) and sets *waited if another holder was waited for. */
static rt_status lock_dir(const xfer *x, int *fd, int *waited, rt_error *err)
{
    char dir[PATH_MAX];
    dir_of(x->o->dest, dir);
    *waited = 0;
    *fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (*fd < 0) return RT_OK; /* the transfer will report a missing directory */
    while (flock(*fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) break;
        *waited = 1;
        if (x->o->should_stop && x->o->should_stop(x->o->user)) {
            close(*fd);
            *fd = -1;
            return RT_ERR(err, RT_EINTERRUPTED,
                          "interrupted while waiting for another "
                          "download into %s",
                          dir);
        }
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return RT_OK;
}

rt_status rt_download_file(const rt_download_opts *o, rt_download_info *info, rt_error *err)
{
    rt_download_info dummy;
    if (!info) info = &dummy;
    memset(info, 0, sizeof *info);
    if (!o || !o->url || !o->dest || !o->dest[0])
        return RT_ERR(err, RT_EINVAL, "rt_download_file: url and dest are required");
    if (o->sha256_hex && !valid_hex64(o->sha256_hex))
        return RT_ERR(err, RT_EINVAL, "expected SHA-256 \"%s\" is not 64 hex digits",
                      o->sha256_hex);
    xfer x = {.o = o};
    if (snprintf(x.part, sizeof x.part, "%s.part", o->dest) >= (int)sizeof x.part)
        return RT_ERR(err, RT_EINVAL, "%s: path too long", o->dest);
    x.file = strrchr(o->dest, '/') ? strrchr(o->dest, '/') + 1 : o->dest;
    RT_TRY(rtp_curl_load(err));
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return RT_ERR(err, RT_EIO, "cannot initialise libcurl");
    int fd, waited;
    RT_TRY(lock_dir(&x, &fd, &waited, err));
    rt_status st = RT_OK;
    char got[65];
    /* Someone else just finished it: keep theirs when it checks out. */
    if (waited && file_size(o->dest) > 0 &&
        (!o->sha256_hex ||
         (rt_sha256_file(o->dest, got, NULL) == RT_OK && !strcasecmp(got, o->sha256_hex))))
        info->bytes = file_size(o->dest);
    else st = download_locked(&x, info, err);
    if (fd >= 0) close(fd); /* releases the lock */
    return st;
}
