/* rt_store_http.c - one signed request to the object store, and what its failures
 * mean for the user.
 *
 * Each request is a fresh curl easy handle: URL (path-style under a custom endpoint,
 * virtual-hosted under AWS), CURLOPT_AWS_SIGV4 "aws:amz:REGION:s3" with the key pair
 * as user name and password (libcurl computes the signature; Kiln signs nothing),
 * x-amz-security-token for temporary credentials. Bodies are sent from memory
 * (CURLOPT_POSTFIELDS) with their SHA-256 in x-amz-content-sha256, which the
 * signature covers and the store checks the bytes it received against. Transport
 * failures and 5xx replies are retried with backoff; other statuses become errors
 * from the reply's <Code>, with a hint naming what to fix. No message includes the
 * secret key or the token; the access key only masked ("****WXYZ").
 */
#include "rt_store_internal.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rt_curl_dl.h"
#include "rt_download.h" /* rt_sha256_mem */

char *rtp_store_key_escape(const char *key)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = strlen(key);
    char *out = malloc(3 * n + 1), *w = out;
    if (!out) return NULL;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '_' || *p == '.' || *p == '~' || *p == '/') {
            *w++ = (char)*p;
        } else {
            *w++ = '%';
            *w++ = hex[*p >> 4];
            *w++ = hex[*p & 15];
        }
    }
    *w = '\0';
    return out;
}

char *rtp_store_query_escape(const char *v)
{
    char *e = rtp_store_key_escape(v);
    if (!e) return NULL;
    size_t slashes = 0;
    for (const char *p = e; *p; p++) slashes += *p == '/';
    char *out = malloc(strlen(e) + 2 * slashes + 1), *w = out;
    for (const char *p = e; out && *p; p++) {
        if (*p == '/') {
            memcpy(w, "%2F", 3);
            w += 3;
        } else {
            *w++ = *p;
        }
    }
    if (out) *w = '\0';
    free(e);
    return out;
}

rtp_store_req rtp_store_req_make(const char *method, const char *key, const char *query)
{
    rtp_store_req r;
    memset(&r, 0, sizeof r);
    r.method = method;
    r.key = key;
    r.query = query;
    r.resp_fd = -1;
    r.resp_max = 1 << 20;
    r.file_max = RT_STORE_ANY_SIZE;
    return r;
}

typedef struct sink {
    rtp_store_req *r;
    CURL *c;
    int failed; /* ENOMEM / over resp_max / write error */
    int overflow;
} sink;

static size_t on_body(char *p, size_t size, size_t nmemb, void *user)
{
    sink *k = user;
    rtp_store_req *r = k->r;
    size_t n = size * nmemb;
    if (r->status == 0) curl_easy_getinfo(k->c, CURLINFO_RESPONSE_CODE, &r->status);
    if (r->resp_fd >= 0 && r->status < 300) {
        if (r->file_max != RT_STORE_ANY_SIZE &&
            r->resp_len + n > r->file_max) { /* more than it was listed with */
            k->overflow = 1;
            return 0;
        }
        for (size_t off = 0; off < n;) {
            ssize_t w = write(r->resp_fd, p + off, n - off);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) {
                k->failed = 1;
                return 0;
            }
            off += (size_t)w;
        }
        r->resp_len += n;
        return n;
    }
    /* into memory: the reply body, or an error's XML when writing to a file */
    size_t max = r->resp_fd >= 0 ? 65536 : r->resp_max;
    if (r->resp_len + n > max) {
        k->overflow = 1;
        return 0;
    }
    char *q = realloc(r->resp, r->resp_len + n + 1);
    if (!q) {
        k->failed = 1;
        return 0;
    }
    memcpy(q + r->resp_len, p, n);
    r->resp = q;
    r->resp_len += n;
    r->resp[r->resp_len] = '\0';
    return n;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *user)
{
    rtp_store_req *r = ((sink *)user)->r;
    size_t n = size * nmemb;
    if (n > 5 && strncasecmp(p, "etag:", 5) == 0) {
        const char *v = p + 5;
        while (v < p + n && (*v == ' ' || *v == '\t')) v++;
        size_t len = (size_t)(p + n - v);
        while (len && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' ')) len--;
        if (len < sizeof r->etag) {
            memcpy(r->etag, v, len);
            r->etag[len] = '\0';
        }
    }
    return n;
}

static int on_progress(void *user, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)dt, (void)dn, (void)ut, (void)un;
    const _Atomic int *cancel = user;
    return cancel && *cancel ? 1 : 0;
}

static int cancelled(const rt_store *s) { return s->cancel && *s->cancel; }

static char *request_url(rt_store *s, const rtp_store_req *r)
{
    char *ek = r->key ? rtp_store_key_escape(r->key) : strdup("");
    if (!ek) return NULL;
    size_t n = strlen(s->base) + strlen(ek) + (r->query ? strlen(r->query) : 0) + 4;
    char *url = malloc(n);
    if (url)
        snprintf(url, n, "%s/%s%s%s", s->base, ek, r->query ? "?" : "", r->query ? r->query : "");
    free(ek);
    return url;
}

/* One attempt. CURLcode in *cc, HTTP status in r->status. */
static rt_status attempt(rt_store *s, rtp_store_req *r, CURLcode *cc, char *errbuf, rt_error *err)
{
    CURL *c = curl_easy_init();
    char *url = request_url(s, r);
    struct curl_slist *hdr = NULL, *h2;
    char tok[64 + 4096], sha[65], shahdr[100];
    rt_status hs = rt_sha256_mem(r->body, (size_t)r->body_len, sha, err);
    if (hs != RT_OK) {
        free(url);
        if (c) curl_easy_cleanup(c);
        return hs;
    }
    /* The payload's hash, which the signature covers and the store checks the body
     * against (libcurl 7.x does not add this header itself; it signs the one given). */
    snprintf(shahdr, sizeof shahdr, "x-amz-content-sha256: %s", sha);
    int oom = !c || !url || !(hdr = curl_slist_append(NULL, shahdr));
    /* libcurl labels a POSTFIELDS body as a form, which servers may parse (and
     * consume); an object's bytes are opaque. */
    if (!oom && r->body)
        oom = !(h2 = curl_slist_append(hdr, r->content_type
                                                ? r->content_type
                                                : "Content-Type: application/octet-stream"));
    if (!oom && r->body) hdr = h2;
    if (!oom && r->condition) {
        oom = !(h2 = curl_slist_append(hdr, r->condition));
        if (!oom) hdr = h2;
    }
    if (!oom && s->cfg.session_token) {
        snprintf(tok, sizeof tok, "x-amz-security-token: %s", s->cfg.session_token);
        oom = !(h2 = curl_slist_append(hdr, tok));
        explicit_bzero(tok, sizeof tok);
        if (!oom) hdr = h2;
    }
    if (oom) {
        curl_slist_free_all(hdr);
        free(url);
        if (c) curl_easy_cleanup(c);
        return RT_ERR(err, RT_ENOMEM, "out of memory preparing an object store request");
    }
    sink k = {r, c, 0, 0};
    free(r->resp);
    r->resp = NULL;
    r->resp_len = 0;
    r->status = 0;
    r->etag[0] = '\0';
    CURLcode oc = CURLE_OK;
#define SETOPT(opt, val)                                        \
    do {                                                        \
        if (oc == CURLE_OK) oc = curl_easy_setopt(c, opt, val); \
    } while (0)
    SETOPT(CURLOPT_URL, url);
    SETOPT(CURLOPT_ERRORBUFFER, errbuf);
    SETOPT(CURLOPT_NOSIGNAL, 1L);
    SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
    SETOPT(CURLOPT_USERAGENT, "kiln-store/1");
    SETOPT(CURLOPT_AWS_SIGV4, s->sigv4);
    SETOPT(CURLOPT_USERNAME, s->cfg.access_key);
    SETOPT(CURLOPT_PASSWORD, s->cfg.secret_key);
    SETOPT(CURLOPT_HTTPHEADER, hdr);
    SETOPT(CURLOPT_CONNECTTIMEOUT, 10L);
    SETOPT(CURLOPT_LOW_SPEED_LIMIT, 1L);
    SETOPT(CURLOPT_LOW_SPEED_TIME, 60L);
    SETOPT(CURLOPT_WRITEFUNCTION, on_body);
    SETOPT(CURLOPT_WRITEDATA, &k);
    SETOPT(CURLOPT_HEADERFUNCTION, on_header);
    SETOPT(CURLOPT_HEADERDATA, &k);
    if (r->resp_fd >= 0 &&
        r->file_max < (uint64_t)INT64_MAX) /* refused up front when Content-Length says more */
        SETOPT(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)r->file_max);
    if (s->cancel) {
        SETOPT(CURLOPT_NOPROGRESS, 0L);
        SETOPT(CURLOPT_XFERINFOFUNCTION, on_progress);
        SETOPT(CURLOPT_XFERINFODATA, (void *)s->cancel);
    }
    if (strcmp(r->method, "HEAD") == 0) {
        SETOPT(CURLOPT_NOBODY, 1L);
    } else if (strcmp(r->method, "GET") != 0) {
        /* a body from memory (possibly empty): libcurl hashes it into the signature */
        SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
        SETOPT(CURLOPT_POSTFIELDS, r->body ? (const char *)r->body : "");
        SETOPT(CURLOPT_CUSTOMREQUEST, r->method);
    }
    *cc = oc == CURLE_OK ? curl_easy_perform(c) : oc;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    curl_easy_cleanup(c);
    curl_slist_free_all(hdr);
    free(url);
    if (k.failed && r->resp_fd >= 0 && r->status < 300)
        return RT_ERR(err, RT_EIO, "writing a downloaded object failed: %s", strerror(errno));
    if (k.failed) return RT_ERR(err, RT_ENOMEM, "out of memory reading a store reply");
    if ((k.overflow || *cc == CURLE_FILESIZE_EXCEEDED) && r->status < 300 && r->resp_fd >= 0)
        return RT_ERR(err, RT_EFORMAT,
                      "the object is larger than the %llu bytes it was listed with: the download "
                      "stopped there",
                      (unsigned long long)r->file_max);
    if (k.overflow && r->status < 300)
        return RT_ERR(err, RT_EFORMAT, "the object is larger than the %zu bytes expected",
                      r->resp_max);
    return RT_OK;
}

static int transient(CURLcode cc, long status)
{
    if (cc == CURLE_OK) return status >= 500 || status == 429;
    return cc == CURLE_COULDNT_CONNECT || cc == CURLE_OPERATION_TIMEDOUT ||
           cc == CURLE_RECV_ERROR || cc == CURLE_SEND_ERROR || cc == CURLE_GOT_NOTHING ||
           cc == CURLE_PARTIAL_FILE || cc == CURLE_COULDNT_RESOLVE_HOST;
}

/* The error for a reply with status >= 300 (or a transport failure). */
static rt_status reply_error(rt_store *s, const rtp_store_req *r, CURLcode cc, const char *errbuf,
                             const char *what, rt_error *err)
{
    char masked[16];
    rtp_store_key_mask(s->cfg.access_key, masked);
    if (cc != CURLE_OK)
        return RT_ERR(err, RT_EIO,
                      "%s: cannot reach the object store at %s (%s) ---> HINT: check "
                      "AWS_ENDPOINT_URL (or the profile's endpoint_url) and that the "
                      "store is running and reachable",
                      what, s->endpoint, errbuf[0] ? errbuf : curl_easy_strerror(cc));
    size_t pos = 0;
    int oom = 0;
    char *code = rtp_store_xml_next(r->resp, "Code", &pos, &oom);
    pos = 0;
    char *msg = rtp_store_xml_next(r->resp, "Message", &pos, &oom);
    const char *cd = code ? code : "";
    char detail[400];
    snprintf(detail, sizeof detail, "%s%s%s%s", code ? code : "", code && msg ? ": " : "",
             msg ? msg : "", code || msg ? "" : "no details in the reply");
    rt_status st;
    if (strcmp(cd, "NoSuchBucket") == 0 || (r->status == 404 && !r->key))
        st = RT_ERR(err, RT_ENOTFOUND,
                    "%s: bucket %s does not exist at %s ---> HINT: create the bucket, or "
                    "correct the s3:// URL (and AWS_ENDPOINT_URL / AWS_REGION)",
                    what, s->bucket_url, s->endpoint);
    else if (strcmp(cd, "NoSuchKey") == 0 || r->status == 404)
        st =
            RT_ERR(err, RT_ENOTFOUND, "%s: no such object in %s (%s)", what, s->bucket_url, detail);
    else if (r->status == 401 || r->status == 403 || strcmp(cd, "InvalidAccessKeyId") == 0 ||
             strcmp(cd, "SignatureDoesNotMatch") == 0)
        st = RT_ERR(err, RT_EINVAL,
                    "%s: the object store at %s refused the credentials from %s (access "
                    "key %s): HTTP %ld %s ---> HINT: check AWS_ACCESS_KEY_ID and "
                    "AWS_SECRET_ACCESS_KEY (or the profile), that the key may use bucket "
                    "%s, and AWS_REGION",
                    what, s->endpoint, s->cfg.source, masked, r->status, detail, s->bucket_url);
    else
        st = RT_ERR(err, RT_EIO, "%s: the object store at %s answered HTTP %ld (%s)", what,
                    s->endpoint, r->status, detail);
    free(code);
    free(msg);
    return st;
}

rt_status rtp_store_do(rt_store *s, rtp_store_req *r, const char *what, rt_error *err)
{
    RT_TRY(rtp_curl_load(err));
    char errbuf[CURL_ERROR_SIZE];
    CURLcode cc = CURLE_OK;
    for (int i = 0;; i++) {
        errbuf[0] = '\0';
        if (r->resp_fd >= 0 &&
            (ftruncate(r->resp_fd, 0) != 0 || lseek(r->resp_fd, 0, SEEK_SET) != 0))
            return RT_ERR(err, RT_EIO, "%s: cannot reset the download file: %s", what,
                          strerror(errno));
        RT_TRY(attempt(s, r, &cc, errbuf, err));
        if (cc == CURLE_OK && r->status > 0 && r->status < 300) return RT_OK;
        if (cancelled(s)) return RT_ERR(err, RT_EINTERRUPTED, "%s: cancelled", what);
        if (!transient(cc, r->status) || i == 2) break;
        struct timespec ts = {0, (long)(200000000L << i)}; /* 0.2 s, 0.4 s */
        nanosleep(&ts, NULL);
    }
    return reply_error(s, r, cc, errbuf, what, err);
}
