/* rt_dist_group.c - a world of ranks inside one process, one per device and one host
 * thread each (rt_dist.h, "the devices of one process").
 *
 * Host collectives (the start-of-run checks, the parameter broadcast, and the step's
 * gradients and statistics when NCCL is not used) meet in shared memory: every
 * rank posts its buffer, a barrier, rank 0 combines the buffers in rank order into a
 * scratch area (so every rank gets the same bits, whatever the thread timing), a
 * barrier, every rank copies the result, a last barrier before the buffers may change.
 * Each wait ends after the world's timeout (KILN_DIST_TIMEOUT), and at once when another
 * rank aborted (rt_dist_group_abort: its step failed outside a collective), so a failing
 * device stops the others with an error instead of a hang.
 *
 * Gradients: over NCCL in device memory when every backend is CUDA (rt_nccl_*, which
 * orders the sum after the backward and the update after the sum with events, gathers
 * the step's statistics in the same group, and waits for the sum at most the world's
 * timeout; an abort of the group cancels that wait on every device). When
 * NCCL cannot be loaded the group still trains, through host memory (one download and
 * upload of the gradients a step, as ranks of a launch do), and says so on stderr.
 */
#include "rt_dist_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_nccl.h"

typedef struct group_rank {
    rt_dist d; /* first: a rank's rt_dist * is its group_rank * */
    rt_dist_group *g;
} group_rank;

struct rt_dist_group {
    int n;
    group_rank *ranks; /* (n) */
    rt_backend **b;    /* (n) borrowed */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int arrived;       /* ranks waiting at the barrier */
    unsigned long gen; /* barriers passed */
    int aborted;       /* a rank failed or a wait timed out: no more collectives */
    const void **bufs; /* (n) the buffers posted for the current collective */
    void *scratch;     /* rank 0's result of the current collective */
    size_t scratch_bytes;
    int scratch_failed; /* rank 0 could not grow scratch */
    rt_nccl *nccl;      /* NULL: gradients through host memory */
};

static rt_status aborted_err(const rt_dist *d, const char *what, long long step, rt_error *err)
{
    return RT_ERR(err, RT_EDEVICE_LOST,
                  "device %d of %d: %s of step %lld: another device "
                  "of the group failed (its error is reported above) ---> HINT: the newest "
                  "checkpoint is intact; run %%train again to resume",
                  d->rank, d->size, what, step);
}

/* Every rank of the group reaches this point, or the wait fails. */
static rt_status barrier(group_rank *me, const char *what, long long step, rt_error *err)
{
    rt_dist_group *g = me->g;
    rt_status s = RT_OK;
    pthread_mutex_lock(&g->mu);
    if (g->aborted) {
        pthread_mutex_unlock(&g->mu);
        return aborted_err(&me->d, what, step, err);
    }
    const unsigned long gen = g->gen;
    if (++g->arrived == g->n) {
        g->arrived = 0;
        g->gen++;
        pthread_cond_broadcast(&g->cv);
        pthread_mutex_unlock(&g->mu);
        return RT_OK;
    }
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    double t = (double)dl.tv_sec + 1e-9 * (double)dl.tv_nsec + me->d.timeout_s;
    dl.tv_sec = (time_t)t;
    dl.tv_nsec = (long)((t - (double)dl.tv_sec) * 1e9);
    while (g->gen == gen && !g->aborted) {
        if (pthread_cond_timedwait(&g->cv, &g->mu, &dl) == ETIMEDOUT && g->gen == gen) {
            g->aborted = 1;
            pthread_cond_broadcast(&g->cv);
            s = RT_ERR(err, RT_EDEVICE_LOST,
                       "device %d of %d: the other devices did not "
                       "join the %s of step %lld within %g s (KILN_DIST_TIMEOUT): one of "
                       "them hangs ---> HINT: the newest checkpoint is intact; restart the "
                       "kernel and run %%train again to resume",
                       me->d.rank, me->d.size, what, step, me->d.timeout_s);
            break;
        }
    }
    if (s == RT_OK && g->gen == gen) s = aborted_err(&me->d, what, step, err);
    pthread_mutex_unlock(&g->mu);
    return s;
}

/* Rank 0: scratch = the ranks' buffers combined in rank order. */
static void combine(rt_dist_group *g, size_t n, rtp_dist_op op)
{
    if (op == RTP_SUM_F32) {
        float *o = g->scratch;
        memcpy(o, g->bufs[0], n * sizeof *o);
        for (int r = 1; r < g->n; r++) {
            const float *x = g->bufs[r];
            for (size_t i = 0; i < n; i++) o[i] += x[i];
        }
        return;
    }
    double *o = g->scratch;
    memcpy(o, g->bufs[0], n * sizeof *o);
    for (int r = 1; r < g->n; r++) {
        const double *x = g->bufs[r];
        for (size_t i = 0; i < n; i++)
            o[i] = op == RTP_MAX_F64 ? (x[i] > o[i] ? x[i] : o[i]) : o[i] + x[i];
    }
}

static rt_status group_host(rt_dist *d, void *buf, size_t n, rtp_dist_op op, const char *what,
                            long long step, rt_error *err)
{
    group_rank *me = (group_rank *)d;
    rt_dist_group *g = me->g;
    const size_t bytes = n * (op == RTP_SUM_F32 || op == RTP_BCAST_F32 ? 4 : 8);
    g->bufs[d->rank] = buf;
    rt_status s = barrier(me, what, step, err);
    if (s == RT_OK && d->rank == 0 && op != RTP_BCAST_F32) {
        g->scratch_failed = 0;
        if (bytes > g->scratch_bytes) { /* the first collective of a size grows it */
            void *p = realloc(g->scratch, bytes);
            if (p) g->scratch = p, g->scratch_bytes = bytes;
            else g->scratch_failed = 1;
        }
        if (!g->scratch_failed) combine(g, n, op);
    }
    if (s == RT_OK) s = barrier(me, what, step, err);
    if (s == RT_OK && g->scratch_failed && op != RTP_BCAST_F32)
        s = RT_ERR(err, RT_ENOMEM, "device %d of %d: %s of step %lld: out of memory", d->rank,
                   d->size, what, step);
    if (s == RT_OK && op != RTP_BCAST_F32) memcpy(buf, g->scratch, bytes);
    else if (s == RT_OK && d->rank != 0) memcpy(buf, g->bufs[0], bytes);
    if (s == RT_OK) s = barrier(me, what, step, err); /* nobody reads buf any more */
    if (s != RT_OK) {
        d->broken = 1;
        rt_dist_group_abort(g);
    }
    return s;
}

static rt_status group_device(rt_dist *d, rt_backend *b, rt_tensor *buf, float scale,
                              rt_nccl_tally *tally, const char *what, long long step, rt_error *err)
{
    rt_dist_group *g = ((group_rank *)d)->g;
    rt_error e = {0};
    rt_status s = rt_nccl_allreduce(g->nccl, d->rank, b, buf, scale, d->timeout_s, tally, &e);
    if (s == RT_OK) return RT_OK;
    rt_dist_group_abort(g);
    return RT_ERR(err, s, "%s of step %lld: %s", what, step, e.msg);
}

static rt_status group_device_begin(rt_dist *d, rt_backend *b, int *on, rt_error *err)
{
    *on = 1; /* the group has its communicators (nccl_ops): every rank agrees */
    return RT_OK;
}

static const rtp_dist_ops host_ops = {.host = group_host};
static const rtp_dist_ops nccl_ops = {
    .host = group_host, .device_begin = group_device_begin, .device = group_device};

rt_status rt_dist_group_create(rt_dist_group **out, rt_backend *const *b, int n, rt_error *err)
{
    *out = NULL;
    if (n < 1) return RT_ERR(err, RT_EINVAL, "a device group needs at least one device");
    rt_dist_group *g = calloc(1, sizeof *g);
    if (!g) return RT_ERR(err, RT_ENOMEM, "out of memory creating the device group");
    g->n = n;
    g->ranks = calloc((size_t)n, sizeof *g->ranks);
    g->b = calloc((size_t)n, sizeof *g->b);
    g->bufs = calloc((size_t)n, sizeof *g->bufs);
    if (!g->ranks || !g->b || !g->bufs) {
        free(g->ranks);
        free(g->b);
        free(g->bufs);
        free(g);
        return RT_ERR(err, RT_ENOMEM, "out of memory creating the device group");
    }
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    int all_cuda = n > 1;
    for (int r = 0; r < n; r++) {
        g->b[r] = b[r];
        all_cuda &= !strcmp(b[r]->ops->name, "cuda");
    }
    if (all_cuda) {
        rt_error ne = {0};
        if (rt_nccl_create(&g->nccl, b, n, &ne) != RT_OK) {
            if (ne.code != RT_ENODEV) { /* a wrong device list: the caller's error */
                if (err) *err = ne;
                rt_dist_group_destroy(g);
                return ne.code;
            }
            fprintf(stderr,
                    "kiln: %s; the %d devices average their gradients through host "
                    "memory instead (slower)\n",
                    ne.msg, n);
        }
    }
    const double timeout = rtp_dist_timeout_env();
    for (int r = 0; r < n; r++)
        g->ranks[r] = (group_rank){.d = {.ops = g->nccl ? &nccl_ops : &host_ops,
                                         .rank = r,
                                         .size = n,
                                         .local_rank = r,
                                         .local_size = n,
                                         .timeout_s = timeout},
                                   .g = g};
    *out = g;
    return RT_OK;
}

rt_dist *rt_dist_group_rank(rt_dist_group *g, int r)
{
    return g && r >= 0 && r < g->n ? &g->ranks[r].d : NULL;
}

void rt_dist_group_abort(rt_dist_group *g)
{
    if (!g) return;
    pthread_mutex_lock(&g->mu);
    g->aborted = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    rt_nccl_cancel(g->nccl); /* a device waiting for NCCL's sum stops too */
}

void rt_dist_group_destroy(rt_dist_group *g)
{
    if (!g) return;
    rt_nccl_destroy(g->nccl);
    for (int r = 0; r < g->n; r++) free(g->ranks[r].d.tally);
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    free(g->scratch);
    free(g->ranks);
    free(g->b);
    free(g->bufs);
    free(g);
}
