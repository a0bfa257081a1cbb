/* rt_dist.c - the collectives of rt_dist.h, whatever the world is made of: checks that
 * the world is still usable, then the world's own op (rt_dist_internal.h); and the
 * launch's world, opened once per process (MPI allows no second MPI_Init; the NCCL
 * communicator of a launch without MPI is kept for the process too).
 *
 * Which world a launch gets: the launcher's variables say (rt_dist_env_read). OpenMPI,
 * PMI or Slurm variables: MPI. torchrun-style variables alone (RANK, WORLD_SIZE,
 * MASTER_ADDR, MASTER_PORT, as torchrun or a cluster's own scripts set them): the GPU
 * ranks meet over TCP once and exchange everything through NCCL (rt_dist_nccl.c).
 */
#include "rt_clock.h"
#include "rt_dist_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_TIMEOUT_S 600.0

double rtp_dist_timeout_env(void)
{
    const char *s = getenv("KILN_DIST_TIMEOUT");
    char *end;
    double v = s && *s ? strtod(s, &end) : 0;
    return s && *s && *end == '\0' && v > 0 ? v : DEFAULT_TIMEOUT_S;
}

static struct {
    pthread_once_t once;
    rt_status status;
    rt_error err;
    rt_dist *world; /* NULL: a single process */
} launch = {PTHREAD_ONCE_INIT, RT_OK, {0}, NULL};

static void open_once(void)
{
    rt_dist_env env;
    rt_error *err = &launch.err;
    if ((launch.status = rt_dist_env_read(&env, err)) != RT_OK || env.world == 1) return;
    launch.status = !strcmp(env.source, "torchrun") ? rtp_dist_nccl_open(&env, &launch.world, err)
                                                    : rtp_dist_mpi_open(&env, &launch.world, err);
    if (launch.status != RT_OK) launch.world = NULL;
}

rt_status rt_dist_world(rt_dist **out, rt_error *err)
{
    *out = NULL;
    pthread_once(&launch.once, open_once);
    if (launch.status != RT_OK) {
        if (err) *err = launch.err;
        return launch.status;
    }
    *out = launch.world;
    return RT_OK;
}

void rt_dist_finish(int ok)
{
    rt_dist *d = launch.world;
    if (!d || d->finished) return;
    d->finished = 1;
    if (d->ops->finish) d->ops->finish(d, ok && !d->broken);
    free(d->tally);
    d->tally = NULL;
}

int rt_dist_rank(const rt_dist *d) { return d ? d->rank : 0; }
int rt_dist_size(const rt_dist *d) { return d ? d->size : 1; }
int rt_dist_local_rank(const rt_dist *d) { return d ? d->local_rank : 0; }
int rt_dist_local_size(const rt_dist *d) { return d ? d->local_size : 1; }
double rt_dist_timeout(const rt_dist *d) { return d ? d->timeout_s : rtp_dist_timeout_env(); }

static rt_status check_open(rt_dist *d, const char *what, long long step, rt_error *err)
{
    if (!d->broken && !d->finished) return RT_OK;
    return RT_ERR(err, RT_EDEVICE_LOST,
                  "rank %d of %d: %s of step %lld: the ranks' "
                  "connection was lost earlier ---> HINT: run the same launch again to "
                  "resume from the newest checkpoint",
                  d->rank, d->size, what, step);
}

static rt_status host(rt_dist *d, void *buf, size_t n, rtp_dist_op op, const char *what,
                      long long step, rt_error *err)
{
    RT_TRY(check_open(d, what, step, err));
    return d->ops->host(d, buf, n, op, what, step, err);
}

rt_status rt_dist_allreduce_f32(rt_dist *d, float *buf, size_t n, const char *what, long long step,
                                rt_error *err)
{
    return host(d, buf, n, RTP_SUM_F32, what, step, err);
}

rt_status rt_dist_allreduce_f64(rt_dist *d, double *buf, size_t n, const char *what, long long step,
                                rt_error *err)
{
    return host(d, buf, n, RTP_SUM_F64, what, step, err);
}

rt_status rt_dist_allmax_f64(rt_dist *d, double *buf, size_t n, const char *what, long long step,
                             rt_error *err)
{
    return host(d, buf, n, RTP_MAX_F64, what, step, err);
}

rt_status rt_dist_bcast_f32(rt_dist *d, float *buf, size_t n, const char *what, long long step,
                            rt_error *err)
{
    return host(d, buf, n, RTP_BCAST_F32, what, step, err);
}

rt_status rt_dist_device_begin(rt_dist *d, rt_backend *b, int *on, rt_error *err)
{
    *on = 0;
    if (!d->ops->device_begin) return RT_OK;
    RT_TRY(check_open(d, "device check", 0, err));
    return d->ops->device_begin(d, b, on, err);
}

/* The statistics out of every rank's tally slot {loss, n, votes[0], votes[1]}, in rank
 * order: the sums a host collective of {n x loss, right, votes} gives (the device group's
 * shared-memory one adds in the same order), so every world reports the same bits. */
static void stats_fold(rt_dist_stats *st, const rt_nccl_tally *t, int nranks)
{
    for (int r = 0; r < nranks; r++) {
        const double *s = t->ranks + (size_t)r * RT_NCCL_TALLY;
        const double v[3] = {s[1] * s[0], s[2], s[3]};
        st->sums[0] = r ? st->sums[0] + v[0] : v[0];
        st->sums[2] = r ? st->sums[2] + v[1] : v[1];
        st->sums[3] = r ? st->sums[3] + v[2] : v[2];
    }
    st->sums[1] = t->right;
}

rt_status rt_dist_allreduce_dev_f32(rt_dist *d, rt_backend *b, rt_tensor *buf, float scale,
                                    rt_dist_stats *stats, const char *what, long long step,
                                    rt_error *err)
{
    if (!d->ops->device)
        return RT_ERR(err, RT_EINVAL, "%s: this world exchanges through host memory", what);
    RT_TRY(check_open(d, what, step, err));
    rt_nccl_tally t = {0};
    if (stats) {
        if (!d->tally && !(d->tally = malloc((size_t)d->size * RT_NCCL_TALLY * sizeof(double))))
            return RT_ERR(err, RT_ENOMEM, "%s of step %lld: out of memory", what, step);
        t = (rt_nccl_tally){.row = stats->row ? stats->row->data : NULL,
                            .mine = {stats->n, stats->votes[0], stats->votes[1]},
                            .ranks = d->tally};
    }
    rt_status s = d->ops->device(d, b, buf, scale, stats ? &t : NULL, what, step, err);
    if (s == RT_OK && stats) stats_fold(stats, &t, d->size);
    if (s != RT_OK) d->broken = 1;
    return s;
}
