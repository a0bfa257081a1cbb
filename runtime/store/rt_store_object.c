/* rt_store_object.c - opening a store (and checking it) and the object operations:
 * put (single request or multipart), get, delete. Listing: rt_store_list.c. */
#include "rt_store_internal.h"

#include "rt_file.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MIB ((uint64_t)1 << 20)

__attribute__((format(printf, 1, 2))) char *rtp_store_fmt(const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    char *s = NULL;
    if (vasprintf(&s, f, ap) < 0) s = NULL;
    va_end(ap);
    return s;
}

void rt_store_close(rt_store *s)
{
    if (!s) return;
    rtp_store_config_free(&s->cfg);
    free(s->bucket);
    free(s->bucket_url);
    free(s->base);
    free(s->endpoint);
    free(s->sigv4);
    free(s);
}

const char *rt_store_bucket_url(const rt_store *s) { return s->bucket_url; }
void rt_store_set_cancel(rt_store *s, const _Atomic int *flag) { s->cancel = flag; }
const char *rt_store_endpoint(const rt_store *s) { return s->endpoint; }

rt_status rt_store_open(const char *url, rt_store **out, char **prefix_out, rt_error *err)
{
    *out = NULL;
    if (prefix_out) *prefix_out = NULL;
    char *bucket = NULL, *prefix = NULL;
    RT_TRY(rtp_store_url_parse(url, &bucket, &prefix, err));
    rt_store *s = calloc(1, sizeof *s);
    if (!s) {
        free(bucket);
        free(prefix);
        return RT_ERR(err, RT_ENOMEM, "out of memory opening %s", url);
    }
    s->bucket = bucket;
    rt_status st = rtp_store_config_load(&s->cfg, err);
    if (st != RT_OK) {
        free(prefix);
        rt_store_close(s);
        return st;
    }
    const char *region = s->cfg.region;
    s->bucket_url = rtp_store_fmt("s3://%s", bucket);
    s->sigv4 = rtp_store_fmt("aws:amz:%s:s3", region);
    if (s->cfg.endpoint) { /* path-style: what MinIO, R2, B2, moto expect */
        s->endpoint = strdup(s->cfg.endpoint);
        s->base = rtp_store_fmt("%s/%s", s->cfg.endpoint, bucket);
    } else {
        s->endpoint = rtp_store_fmt("https://s3.%s.amazonaws.com", region);
        s->base = rtp_store_fmt("https://%s.s3.%s.amazonaws.com", bucket, region);
    }
    const char *mb = getenv("KILN_S3_PART_MB");
    long part = mb ? strtol(mb, NULL, 10) : 8;
    s->part_size = (uint64_t)(part >= 5 && part <= 5120 ? part : 8) * MIB;
    if (!s->bucket_url || !s->sigv4 || !s->endpoint || !s->base) {
        free(prefix);
        rt_store_close(s);
        return RT_ERR(err, RT_ENOMEM, "out of memory opening %s", url);
    }
    char what[200];
    snprintf(what, sizeof what, "checking s3://%.120s", bucket);
    rtp_store_req r = rtp_store_req_make("HEAD", NULL, NULL);
    st = rtp_store_do(s, &r, what, err);
    free(r.resp);
    if (st != RT_OK) {
        free(prefix);
        rt_store_close(s);
        return st;
    }
    *out = s;
    if (prefix_out) *prefix_out = prefix;
    else free(prefix);
    return RT_OK;
}

static rt_status put_one(rt_store *s, const char *key, const void *buf, size_t len, rt_error *err)
{
    char what[300];
    snprintf(what, sizeof what, "uploading '%.200s' to %s", key, s->bucket_url);
    rtp_store_req r = rtp_store_req_make("PUT", key, NULL);
    r.body = buf;
    r.body_len = len;
    rt_status st = rtp_store_do(s, &r, what, err);
    free(r.resp);
    return st;
}

static void abort_upload(rt_store *s, const char *key, const char *qid)
{
    char q[1200];
    snprintf(q, sizeof q, "uploadId=%s", qid);
    rtp_store_req r = rtp_store_req_make("DELETE", key, q);
    rt_error ignored;
    /* Best effort on a path that is already failing: the upload's own error is the one
     * reported, and the store drops an abandoned upload by its lifecycle rules. */
    RT_IGNORE(rtp_store_do(s, &r, "aborting an upload", &ignored));
    free(r.resp);
}

/* CreateMultipartUpload, UploadPart x N (rt_store_parts.c: several at a time),
 * CompleteMultipartUpload; abort on failure. */
static rt_status put_multipart(rt_store *s, const char *key, const void *mem, int fd, uint64_t size,
                               const char *path, rt_error *err)
{
    char what[300], q[1200];
    snprintf(what, sizeof what, "uploading '%.200s' to %s", key, s->bucket_url);
    rtp_store_req r = rtp_store_req_make("POST", key, "uploads=");
    RT_TRY(rtp_store_do(s, &r, what, err));
    size_t pos = 0;
    int oom = 0;
    char *id = rtp_store_xml_next(r.resp, "UploadId", &pos, &oom);
    free(r.resp);
    char *qid = id ? rtp_store_query_escape(id) : NULL;
    free(id);
    if (!qid || strlen(qid) > 1000) {
        free(qid);
        return RT_ERR(err, oom || !id ? RT_ENOMEM : RT_EFORMAT,
                      "%s: the store's reply to starting a multipart upload has no usable "
                      "UploadId",
                      what);
    }
    uint64_t nparts = (size + s->part_size - 1) / s->part_size;
    size_t cap = 128 + nparts * 200, len = 0;
    char *xml = malloc(cap);
    char(*etags)[128] = calloc(nparts, sizeof *etags);
    rt_status st = xml && etags ? RT_OK : RT_ERR(err, RT_ENOMEM, "%s: out of memory", what);
    if (st == RT_OK) st = rtp_store_put_parts(s, key, qid, mem, fd, size, path, what, etags, err);
    if (st == RT_OK) {
        len = (size_t)snprintf(xml, cap, "<CompleteMultipartUpload>");
        for (uint64_t i = 0; i < nparts; i++)
            len += (size_t)snprintf(xml + len, cap - len,
                                    "<Part><PartNumber>%" PRIu64 "</PartNumber>"
                                    "<ETag>%s</ETag></Part>",
                                    i + 1, etags[i]);
    }
    free(etags);
    if (st == RT_OK) {
        len += (size_t)snprintf(xml + len, cap - len, "</CompleteMultipartUpload>");
        snprintf(q, sizeof q, "uploadId=%s", qid);
        rtp_store_req cr = rtp_store_req_make("POST", key, q);
        cr.body = xml;
        cr.body_len = len;
        cr.content_type = "Content-Type: application/xml";
        st = rtp_store_do(s, &cr, what, err);
        /* S3 can answer 200 with an <Error> body when completing fails late */
        if (st == RT_OK && cr.resp && strstr(cr.resp, "<Error>"))
            st = RT_ERR(err, RT_EIO, "%s: completing the multipart upload failed: %.300s", what,
                        cr.resp);
        free(cr.resp);
    }
    if (st != RT_OK) abort_upload(s, key, qid);
    free(xml);
    free(qid);
    return st;
}

rt_status rt_store_put_mem(rt_store *s, const char *key, const void *buf, size_t len, rt_error *err)
{
    if (len <= s->part_size) return put_one(s, key, buf, len, err);
    return put_multipart(s, key, buf, -1, len, key, err);
}

rt_status rt_store_put_file(rt_store *s, const char *key, const char *path, rt_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        rt_status e = RT_ERR(err, errno == ENOENT ? RT_ENOTFOUND : RT_EIO,
                             "cannot read '%s' to upload it: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return e;
    }
    uint64_t size = (uint64_t)st.st_size;
    rt_status r;
    if (size > s->part_size) {
        r = put_multipart(s, key, NULL, fd, size, path, err);
    } else {
        char *buf = malloc(size ? size : 1);
        r = buf ? rtp_store_read_at(fd, buf, (size_t)size, 0, path, err)
                : RT_ERR(err, RT_ENOMEM, "out of memory uploading '%s'", path);
        if (r == RT_OK) r = put_one(s, key, buf, (size_t)size, err);
        free(buf);
    }
    close(fd);
    return r;
}

rt_status rt_store_put_mem_if(rt_store *s, const char *key, const void *buf, size_t len,
                              const char *if_etag, int *conflict, char etag[128], rt_error *err)
{
    char what[300], cond[200];
    *conflict = 0;
    snprintf(what, sizeof what, "uploading '%.200s' to %s", key, s->bucket_url);
    if (if_etag && strlen(if_etag) > 130)
        return RT_ERR(err, RT_EINVAL, "%s: ETag '%.40s...' too long", what, if_etag);
    rtp_store_req r = rtp_store_req_make("PUT", key, NULL);
    r.body = buf;
    r.body_len = len;
    if (if_etag) {
        if (*if_etag) snprintf(cond, sizeof cond, "If-Match: %s", if_etag);
        else snprintf(cond, sizeof cond, "If-None-Match: *");
        r.condition = cond;
    }
    rt_status st = rtp_store_do(s, &r, what, err);
    free(r.resp);
    if (st != RT_OK && (r.status == 412 || (r.status == 404 && if_etag && *if_etag))) {
        *conflict = 1;
        return RT_ERR(err, RT_EINVAL, "%s: %s", what,
                      *if_etag ? "the object is no longer the version last seen (ETag "
                                 "differs, or it was deleted)"
                               : "the object exists already");
    }
    if (st == RT_OK && etag) snprintf(etag, 128, "%s", r.etag);
    return st;
}

rt_status rt_store_get_file(rt_store *s, const char *key, const char *path, rt_error *err)
{
    return rt_store_get_file_etag(s, key, path, NULL, err);
}

rt_status rt_store_get_file_etag(rt_store *s, const char *key, const char *path, char etag[128],
                                 rt_error *err)
{
    return rt_store_get_file_checked(s, key, path, RT_STORE_ANY_SIZE, NULL, NULL, 1, etag, err);
}

/* Puts the finished download tmp at path: over it (replace), or only where nothing is
 * (RENAME_NOREPLACE, else a hard link): 0, or -1 with errno (EEXIST: something is
 * there). */
static int publish(const char *tmp, const char *path, int replace)
{
    if (replace) return rename(tmp, path);
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS) return -1;
    if (link(tmp, path) != 0) return -1; /* a file system without RENAME_NOREPLACE */
    unlink(tmp);
    return 0;
}

rt_status rt_store_get_file_checked(rt_store *s, const char *key, const char *path, uint64_t max,
                                    rt_store_check check, void *ctx, int replace, char etag[128],
                                    rt_error *err)
{
    char what[300];
    snprintf(what, sizeof what, "downloading '%.200s' from %s", key, s->bucket_url);
    /* a fresh name beside path (O_CREAT|O_EXCL, mode 0600): a file or symlink planted
     * there is never opened, followed or truncated */
    char *tmp = rtp_store_fmt("%s.part-XXXXXX", path);
    if (!tmp) return RT_ERR(err, RT_ENOMEM, "%s: out of memory", what);
    int fd = mkostemp(tmp, O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        rt_status e = RT_ERR(err, RT_EIO, "%s: cannot create a file beside '%s': %s", what, path,
                             strerror(errno));
        free(tmp);
        return e;
    }
    rtp_store_req r = rtp_store_req_make("GET", key, NULL);
    r.resp_fd = fd;
    r.file_max = max;
    rt_status st = rtp_store_do(s, &r, what, err);
    free(r.resp);
    if (st == RT_OK && (fchmod(fd, 0666 & ~rt_file_umask()) != 0 || fsync(fd) != 0))
        st = RT_ERR(err, RT_EIO, "%s: flushing '%s': %s", what, tmp, strerror(errno));
    if (close(fd) != 0 && st == RT_OK)
        st = RT_ERR(err, RT_EIO, "%s: closing '%s': %s", what, tmp, strerror(errno));
    if (st == RT_OK && check) st = check(tmp, ctx, err); /* verified before it is anywhere */
    if (st == RT_OK && publish(tmp, path, replace) != 0)
        st = errno == EEXIST
                 ? RT_ERR(err, RT_EINVAL,
                          "%s: '%s' appeared while it was downloaded; it is kept "
                          "as it is",
                          what, path)
                 : RT_ERR(err, RT_EIO, "%s: renaming '%s': %s", what, tmp, strerror(errno));
    if (st == RT_OK && etag) snprintf(etag, 128, "%s", r.etag);
    if (st != RT_OK) unlink(tmp); /* only ever our own file */
    free(tmp);
    return st;
}

rt_status rt_store_get_mem(rt_store *s, const char *key, size_t max, char **buf, size_t *len,
                           rt_error *err)
{
    char what[300];
    snprintf(what, sizeof what, "downloading '%.200s' from %s", key, s->bucket_url);
    rtp_store_req r = rtp_store_req_make("GET", key, NULL);
    r.resp_max = max;
    rt_status st = rtp_store_do(s, &r, what, err);
    if (st != RT_OK) {
        free(r.resp);
        *buf = NULL;
        *len = 0;
        return st;
    }
    if (!r.resp && !(r.resp = calloc(1, 1)))
        return RT_ERR(err, RT_ENOMEM, "%s: out of memory", what);
    *buf = r.resp;
    *len = r.resp_len;
    return RT_OK;
}

rt_status rt_store_delete(rt_store *s, const char *key, rt_error *err)
{
    char what[300];
    snprintf(what, sizeof what, "deleting '%.200s' from %s", key, s->bucket_url);
    rtp_store_req r = rtp_store_req_make("DELETE", key, NULL);
    rt_status st = rtp_store_do(s, &r, what, err);
    free(r.resp);
    return st;
}
