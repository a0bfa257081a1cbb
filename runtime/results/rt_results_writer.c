/* rt_results_writer.c - writes metric batches to SQLite on a thread of its own, so
 * the training loop never waits for the disk or for another kernel holding the
 * store's write lock: rt_results_log_metric only appends to a buffer and, every
 * RT_RESULTS_FLUSH_ROWS rows or RT_RESULTS_FLUSH_MS, hands the buffer over here.
 *
 * The thread has its own SQLite connection (WAL lets it write while the caller's
 * connection reads). All batches waiting are written in one BEGIN IMMEDIATE
 * transaction; once committed they are passed to the MLflow mirror (so the mirror
 * never has more than the local store) and freed. A failed transaction (lock held
 * past the busy timeout, disk full) is rolled back and its rows stay queued for the
 * next try - on the next hand-over, on a sync, or after a second. rtp_writer_sync
 * waits until everything handed over is committed, or until an attempt that started
 * after the call has failed, and reports that failure. The queue is bounded
 * (RTP_WRITER_MAX_ROWS); beyond it new rows are dropped with a warning.
 */
#include "rt_results_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RTP_WRITER_MAX_ROWS (4u << 20) /* ~200 MB of rows waiting: give up beyond */

typedef struct batch {
    struct batch *next;
    rtp_metric_row *rows;
    size_t n;
} batch;

struct rtp_writer {
    sqlite3 *db;
    sqlite3_stmt *ins;
    char path[4096];
    rtp_mlflow *mirror;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    batch *head, *tail;
    size_t queued_rows;
    int busy, stop, last_failed;
    unsigned long attempts;
    char last_error[512];
    char *warning;
};

static void batch_free(batch *b)
{
    if (!b) return;
    free(b->rows);
    free(b);
}

static void warn_locked(rtp_writer *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn_locked(rtp_writer *w, const char *fmt, ...)
{
    if (w->warning) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    w->warning = strdup(buf);
}

/* Writes the batches in one transaction: 0, -1 (worth retrying: busy, I/O) or -2 (never
 * going to work: a row's run was deleted meanwhile), with the reason in why. The
 * caller copies why to w->last_error under the lock (sync reads it). */
static int write_batches(rtp_writer *w, batch *list, char *why, size_t why_len)
{
    if (sqlite3_exec(w->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) goto fail;
    for (batch *b = list; b; b = b->next)
        for (size_t i = 0; i < b->n; i++) {
            const rtp_metric_row *r = &b->rows[i];
            sqlite3_stmt *st = w->ins;
            sqlite3_bind_int64(st, 1, r->run);
            sqlite3_bind_text(st, 2, r->key, -1, SQLITE_STATIC);
            sqlite3_bind_int(st, 3, r->kind);
            sqlite3_bind_int64(st, 4, r->step);
            sqlite3_bind_int(st, 5, r->epoch);
            sqlite3_bind_double(st, 6, r->value);
            sqlite3_bind_double(st, 7, r->time);
            int rc = sqlite3_step(st);
            sqlite3_reset(st);
            if (rc != SQLITE_DONE) goto fail;
        }
    if (sqlite3_exec(w->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) goto fail;
    return 0;
fail:
    snprintf(why, why_len, "%s", sqlite3_errmsg(w->db));
    int permanent = sqlite3_errcode(w->db) == SQLITE_CONSTRAINT;
    sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
    return permanent ? -2 : -1;
}

static void *writer_main(void *arg)
{
    rtp_writer *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->head && !w->stop) pthread_cond_wait(&w->work, &w->mu);
        if (!w->head) break; /* stop with nothing left */
        batch *list = w->head;
        size_t rows = w->queued_rows;
        w->head = w->tail = NULL;
        w->busy = 1;
        pthread_mutex_unlock(&w->mu);

        char why[512] = "";
        int failed = write_batches(w, list, why, sizeof why), dropped = failed == -2;
        if (dropped) { /* drop rather than block every later metric */
            pthread_mutex_lock(&w->mu);
            warn_locked(w,
                        "dropped %zu metric rows that %s refused (%s): was a running run "
                        "deleted?",
                        rows, w->path, why);
            pthread_mutex_unlock(&w->mu);
            failed = 0;
        }
        if (!failed && !dropped && w->mirror)
            for (batch *b = list; b; b = b->next) rtp_mlflow_metrics(w->mirror, b->rows, b->n);

        pthread_mutex_lock(&w->mu);
        w->busy = 0;
        w->attempts++;
        w->last_failed = failed;
        if (failed) snprintf(w->last_error, sizeof w->last_error, "%s", why);
        if (failed) {
            warn_locked(w,
                        "could not write metrics to %s (%s); they are kept in memory and "
                        "written when the store is writable again",
                        w->path, w->last_error);
            batch *last = list; /* put the batches back in front, in order */
            while (last->next) last = last->next;
            last->next = w->head;
            if (!w->head) w->tail = last;
            w->head = list;
        } else {
            w->queued_rows -= rows;
            while (list) {
                batch *next = list->next;
                batch_free(list);
                list = next;
            }
        }
        pthread_cond_broadcast(&w->done);
        if (failed && w->stop) break; /* closing: one last try was made */
        if (failed) {                 /* retry in a second, or sooner when asked */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += 1;
            pthread_cond_timedwait(&w->work, &w->mu, &ts);
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

rt_status rtp_writer_create(const char *path, rtp_mlflow *mirror, rtp_writer **out, rt_error *err)
{
    *out = NULL;
    rtp_writer *w = calloc(1, sizeof *w);
    if (!w) return RT_ERR(err, RT_ENOMEM, "results: out of memory");
    snprintf(w->path, sizeof w->path, "%s", path);
    w->mirror = mirror;
    rt_status s = rtp_schema_open(path, 0, &w->db, err);
    if (s == RT_OK)
        s = rtp_prepare(w->db,
                        "INSERT INTO metrics(run_id, key, kind, step, epoch, value, "
                        "time) VALUES(?, ?, ?, ?, ?, ?, ?)",
                        &w->ins, err);
    if (s != RT_OK) {
        sqlite3_close(w->db);
        free(w);
        return s;
    }
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->work, NULL);
    pthread_cond_init(&w->done, NULL);
    if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
        sqlite3_finalize(w->ins);
        sqlite3_close(w->db);
        pthread_mutex_destroy(&w->mu);
        pthread_cond_destroy(&w->work);
        pthread_cond_destroy(&w->done);
        free(w);
        return RT_ERR(err, RT_EIO, "results: cannot start the writer thread");
    }
    *out = w;
    return RT_OK;
}

int rtp_writer_submit(rtp_writer *w, rtp_metric_row *rows, size_t n)
{
    batch *b = malloc(sizeof *b);
    pthread_mutex_lock(&w->mu);
    if (!b || w->queued_rows + n > RTP_WRITER_MAX_ROWS) {
        warn_locked(w,
                    "%s has not been writable for a long time; %zu metric rows are "
                    "waiting and newer ones are dropped",
                    w->path, w->queued_rows);
        pthread_mutex_unlock(&w->mu);
        free(b);
        free(rows);
        return -1;
    }
    *b = (batch){NULL, rows, n};
    if (w->tail) w->tail->next = b;
    else w->head = b;
    w->tail = b;
    w->queued_rows += n;
    pthread_cond_signal(&w->work);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

rt_status rtp_writer_sync(rtp_writer *w, rt_error *err)
{
    pthread_mutex_lock(&w->mu);
    unsigned long start = w->attempts + (w->busy ? 1 : 0); /* an attempt begun later */
    pthread_cond_signal(&w->work);
    while ((w->head || w->busy) && !(w->last_failed && w->attempts > start))
        pthread_cond_wait(&w->done, &w->mu);
    rt_status s = RT_OK;
    if (w->head)
        s = RT_ERR(err, RT_EIO,
                   "results store %s: cannot write metrics: %s (%zu rows kept "
                   "for a later try)",
                   w->path, w->last_error, w->queued_rows);
    pthread_mutex_unlock(&w->mu);
    return s;
}

char *rtp_writer_take_warning(rtp_writer *w)
{
    pthread_mutex_lock(&w->mu);
    char *s = w->warning;
    w->warning = NULL;
    pthread_mutex_unlock(&w->mu);
    return s;
}

size_t rtp_writer_destroy(rtp_writer *w)
{
    if (!w) return 0;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_signal(&w->work);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    size_t lost = w->queued_rows;
    while (w->head) {
        batch *next = w->head->next;
        batch_free(w->head);
        w->head = next;
    }
    sqlite3_finalize(w->ins);
    sqlite3_close(w->db);
    free(w->warning);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->work);
    pthread_cond_destroy(&w->done);
    free(w);
    return lost;
}
