/* rt_store_parts.c - the UploadPart requests of a multipart upload, several at a time.
 *
 * Up to RTP_STORE_PART_JOBS parts are in flight at once, each on its own connection
 * with its own buffer (file sources are read with pread, which has no shared
 * position), as boto3's transfer manager does; one at a time, a part's SHA-256 (which
 * the signature covers), its transfer and the server's work on it never overlapped.
 * The calling thread is one of the workers; each takes the next part not yet taken.
 * The first failure stops the taking of new parts, the parts in flight end, and that
 * failure is the result.
 */
#include "rt_store_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct parts {
    rt_store *s;
    const char *key, *qid, *mem, *path, *what;
    int fd;
    uint64_t size, nparts;
    char (*etags)[128];
    pthread_mutex_t mu;
    uint64_t next; /* the next part to take */
    rt_status st;  /* the first failure */
    rt_error err;  /* its message */
} parts;

rt_status rtp_store_read_at(int fd, char *buf, size_t len, uint64_t off, const char *path,
                            rt_error *err)
{
    for (size_t got = 0; got < len;) {
        ssize_t k = pread(fd, buf + got, len - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0)
            return RT_ERR(err, RT_EIO, "reading '%s' for upload: %s", path,
                          k < 0 ? strerror(errno) : "file shrank while uploading");
        got += (size_t)k;
    }
    return RT_OK;
}

static rt_status put_part(parts *j, uint64_t i, char *buf, rt_error *err)
{
    uint64_t off = i * j->s->part_size;
    size_t n = (size_t)(j->size - off < j->s->part_size ? j->size - off : j->s->part_size);
    const char *p = j->mem ? j->mem + off : buf;
    if (!j->mem) RT_TRY(rtp_store_read_at(j->fd, buf, n, off, j->path, err));
    char q[1200];
    snprintf(q, sizeof q, "partNumber=%" PRIu64 "&uploadId=%s", i + 1, j->qid);
    rtp_store_req r = rtp_store_req_make("PUT", j->key, q);
    r.body = p;
    r.body_len = n;
    rt_status st = rtp_store_do(j->s, &r, j->what, err);
    free(r.resp);
    if (st == RT_OK && !r.etag[0])
        st =
            RT_ERR(err, RT_EFORMAT, "%s: the store sent no ETag for part %" PRIu64, j->what, i + 1);
    if (st == RT_OK) memcpy(j->etags[i], r.etag, sizeof r.etag);
    return st;
}

static void *worker(void *arg)
{
    parts *j = arg;
    char *buf = j->mem ? NULL : malloc(j->s->part_size);
    rt_error err;
    rt_status st = j->mem || buf ? RT_OK : RT_ERR(&err, RT_ENOMEM, "%s: out of memory", j->what);
    for (;;) {
        pthread_mutex_lock(&j->mu);
        if (st != RT_OK && j->st == RT_OK) {
            j->st = st;
            j->err = err;
        }
        uint64_t i = j->st == RT_OK ? j->next++ : j->nparts;
        pthread_mutex_unlock(&j->mu);
        if (i >= j->nparts) break;
        st = put_part(j, i, buf, &err);
    }
    free(buf);
    return NULL;
}

rt_status rtp_store_put_parts(rt_store *s, const char *key, const char *qid, const void *mem,
                              int fd, uint64_t size, const char *path, const char *what,
                              char (*etags)[128], rt_error *err)
{
    parts j = {.s = s,
               .key = key,
               .qid = qid,
               .mem = mem,
               .path = path,
               .what = what,
               .fd = fd,
               .size = size,
               .nparts = (size + s->part_size - 1) / s->part_size,
               .etags = etags,
               .st = RT_OK};
    if (pthread_mutex_init(&j.mu, NULL) != 0)
        return RT_ERR(err, RT_ENOMEM, "%s: cannot create a lock", what);
    pthread_t th[RTP_STORE_PART_JOBS - 1];
    size_t started = 0;
    for (; started < RTP_STORE_PART_JOBS - 1 && started + 1 < j.nparts; started++)
        if (pthread_create(&th[started], NULL, worker, &j) != 0) break; /* fewer then */
    worker(&j);
    for (size_t t = 0; t < started; t++) pthread_join(th[t], NULL);
    pthread_mutex_destroy(&j.mu);
    if (j.st != RT_OK) *err = j.err;
    return j.st;
}
