/* rt_store_sync.c - the background uploader (rt_store_sync.h): one thread, a bounded
 * queue under a mutex, a condition variable for new work, drains and stops. */
#include "rt_store_sync.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_store_ckpt.h"

typedef struct item {
    char *path;
    int64_t step;
} item;

struct rt_store_sync {
    rt_store *store;
    char *prefix;
    _Atomic int keep;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;   /* work queued, or stopping */
    pthread_cond_t idle; /* the queue became empty */
    item *q;             /* ring of cap entries */
    size_t cap, head, count;
    int uploading;  /* q[head] is being uploaded (stays queued until confirmed) */
    char **dropped; /* pushed out of a full queue: local-only */
    size_t ndropped;
    int64_t last_step;
    int retrying;
    char last_error[512];
    _Atomic int stop;
};

static void timespec_after(struct timespec *ts, double s)
{
    clock_gettime(CLOCK_REALTIME, ts);
    double t = (double)ts->tv_nsec * 1e-9 + s;
    ts->tv_sec += (time_t)t;
    ts->tv_nsec = (long)((t - (double)(time_t)t) * 1e9);
}

static void *run(void *arg)
{
    rt_store_sync *y = arg;
    double backoff = 0.5;
    pthread_mutex_lock(&y->mu);
    for (;;) {
        while (!y->stop && y->count == 0) pthread_cond_wait(&y->cv, &y->mu);
        if (y->stop) break;
        item it = y->q[y->head];
        char *path = strdup(it.path);
        y->uploading = 1;
        pthread_mutex_unlock(&y->mu);
        rt_error err = {0};
        rt_status st = path ? rt_store_ckpt_push(y->store, y->prefix, path, &err)
                            : RT_ERR(&err, RT_ENOMEM, "out of memory");
        int keep = atomic_load(&y->keep);
        if (st == RT_OK && keep > 0) {
            rt_error pe = {0};
            if (rt_store_ckpt_prune(y->store, y->prefix, keep, NULL, &pe) != RT_OK)
                fprintf(stderr, "kiln: pruning %s/%s: %s\n", rt_store_bucket_url(y->store),
                        y->prefix, pe.msg);
        }
        pthread_mutex_lock(&y->mu);
        y->uploading = 0;
        /* a local file that is gone (rotated away, newer ones exist) or damaged can
         * never be uploaded: not retried; a damaged one is reported as local-only */
        int local =
            path && (st == RT_ENOTFOUND || st == RT_EFORMAT) && strstr(err.msg, path) != NULL;
        if (st == RT_OK || local) {
            if (st == RT_OK && it.step > y->last_step) y->last_step = it.step;
            if (local) {
                fprintf(stderr, "kiln: not uploaded: %s\n", err.msg);
                char **d =
                    st == RT_EFORMAT ? realloc(y->dropped, (y->ndropped + 1) * sizeof *d) : NULL;
                if (d) {
                    y->dropped = d;
                    y->dropped[y->ndropped++] = y->q[y->head].path;
                    y->q[y->head].path = NULL;
                }
            }
            free(y->q[y->head].path);
            y->head = (y->head + 1) % y->cap;
            y->count--;
            y->retrying = 0;
            y->last_error[0] = '\0';
            backoff = 0.5;
            if (y->count == 0) pthread_cond_broadcast(&y->idle);
        } else if (!y->stop) {
            y->retrying = 1;
            snprintf(y->last_error, sizeof y->last_error, "%s", err.msg);
            struct timespec ts;
            timespec_after(&ts, backoff);
            backoff = backoff * 2 > 30 ? 30 : backoff * 2;
            while (!y->stop && pthread_cond_timedwait(&y->cv, &y->mu, &ts) != ETIMEDOUT) {}
        }
        free(path);
    }
    pthread_mutex_unlock(&y->mu);
    return NULL;
}

rt_status rt_store_sync_start(rt_store *s, const char *prefix, int keep, size_t cap,
                              rt_store_sync **out, rt_error *err)
{
    *out = NULL;
    rt_store_sync *y = calloc(1, sizeof *y);
    if (y) {
        y->q = calloc(cap ? cap : 1, sizeof *y->q);
        y->prefix = strdup(prefix);
    }
    if (!y || !y->q || !y->prefix) {
        if (y) free(y->q), free(y->prefix);
        free(y);
        rt_store_close(s);
        return RT_ERR(err, RT_ENOMEM, "out of memory starting the uploader");
    }
    y->store = s;
    atomic_init(&y->keep, keep);
    y->cap = cap ? cap : 1;
    y->last_step = -1;
    atomic_init(&y->stop, 0);
    rt_store_set_cancel(s, &y->stop);
    pthread_mutex_init(&y->mu, NULL);
    pthread_cond_init(&y->cv, NULL);
    pthread_cond_init(&y->idle, NULL);
    if (pthread_create(&y->thread, NULL, run, y) != 0) {
        pthread_mutex_destroy(&y->mu);
        pthread_cond_destroy(&y->cv);
        pthread_cond_destroy(&y->idle);
        free(y->q);
        free(y->prefix);
        free(y);
        rt_store_close(s);
        return RT_ERR(err, RT_ENOMEM, "cannot start the upload thread");
    }
    *out = y;
    return RT_OK;
}

void rt_store_sync_set_keep(rt_store_sync *y, int keep) { atomic_store(&y->keep, keep); }

rt_status rt_store_sync_enqueue(rt_store_sync *y, const char *path, int64_t step, rt_error *err)
{
    char *p = strdup(path);
    if (!p) return RT_ERR(err, RT_ENOMEM, "out of memory queueing '%s'", path);
    pthread_mutex_lock(&y->mu);
    if (y->count == y->cap) {
        /* drop the oldest waiting entry (not the one being uploaded) */
        size_t victim = y->uploading && y->cap > 1 ? (y->head + 1) % y->cap : y->head;
        if (!(y->uploading && y->cap == 1)) {
            char **d = realloc(y->dropped, (y->ndropped + 1) * sizeof *d);
            if (d) {
                y->dropped = d;
                y->dropped[y->ndropped++] = y->q[victim].path;
            } else {
                free(y->q[victim].path);
            }
            for (size_t i = victim; i != (y->head + y->count - 1) % y->cap; i = (i + 1) % y->cap)
                y->q[i] = y->q[(i + 1) % y->cap];
            y->count--;
        } else { /* a queue of one, busy: the new file waits its turn as local-only */
            char **d = realloc(y->dropped, (y->ndropped + 1) * sizeof *d);
            if (d) {
                y->dropped = d;
                y->dropped[y->ndropped++] = p;
            } else {
                free(p);
            }
            pthread_mutex_unlock(&y->mu);
            return RT_OK;
        }
    }
    y->q[(y->head + y->count) % y->cap] = (item){p, step};
    y->count++;
    pthread_cond_signal(&y->cv);
    pthread_mutex_unlock(&y->mu);
    return RT_OK;
}

void rt_store_sync_get_status(rt_store_sync *y, rt_store_sync_status *st)
{
    pthread_mutex_lock(&y->mu);
    st->pending = y->count;
    st->last_step = y->last_step;
    st->retrying = y->retrying;
    snprintf(st->last_error, sizeof st->last_error, "%s", y->last_error);
    pthread_mutex_unlock(&y->mu);
}

rt_status rt_store_sync_drain(rt_store_sync *y, double timeout_s, char **local_only, rt_error *err)
{
    if (local_only) *local_only = NULL;
    struct timespec ts;
    timespec_after(&ts, timeout_s > 0 ? timeout_s : 0);
    pthread_mutex_lock(&y->mu);
    while (y->count > 0 && pthread_cond_timedwait(&y->idle, &y->mu, &ts) != ETIMEDOUT) {}
    size_t n = y->count + y->ndropped, len = 1;
    for (size_t i = 0; i < y->ndropped; i++) len += strlen(y->dropped[i]) + 1;
    for (size_t i = 0; i < y->count; i++) len += strlen(y->q[(y->head + i) % y->cap].path) + 1;
    char *list = n ? malloc(len) : NULL;
    if (list) {
        size_t w = 0;
        for (size_t i = 0; i < y->ndropped; i++)
            w += (size_t)snprintf(list + w, len - w, "%s\n", y->dropped[i]);
        for (size_t i = 0; i < y->count; i++)
            w += (size_t)snprintf(list + w, len - w, "%s\n", y->q[(y->head + i) % y->cap].path);
    }
    char last[512];
    snprintf(last, sizeof last, "%s", y->last_error);
    pthread_mutex_unlock(&y->mu);
    if (n == 0) return RT_OK;
    rt_status st = RT_ERR(err, RT_EIO,
                          "%zu checkpoint%s not in %s yet (kept locally)%s%s ---> HINT: "
                          "they are still in the staging directory; the next run with this "
                          "run directory uploads what is missing, or copy them by hand",
                          n, n == 1 ? " is" : "s are", rt_store_bucket_url(y->store),
                          last[0] ? "; last error: " : "", last);
    if (local_only) *local_only = list;
    else free(list);
    return st;
}

void rt_store_sync_stop(rt_store_sync *y)
{
    if (!y) return;
    pthread_mutex_lock(&y->mu);
    atomic_store(&y->stop, 1);
    pthread_cond_broadcast(&y->cv);
    pthread_mutex_unlock(&y->mu);
    pthread_join(y->thread, NULL);
    for (size_t i = 0; i < y->count; i++) free(y->q[(y->head + i) % y->cap].path);
    for (size_t i = 0; i < y->ndropped; i++) free(y->dropped[i]);
    free(y->dropped);
    free(y->q);
    free(y->prefix);
    pthread_mutex_destroy(&y->mu);
    pthread_cond_destroy(&y->cv);
    pthread_cond_destroy(&y->idle);
    rt_store_close(y->store);
    free(y);
}
