/* rt_dist.c - the collectives of rt_dist.h, whatever the world is made of: checks that
 * the world is still usable, then the world's own op (rt_dist_internal.h). */
#include "rt_dist_internal.h"

#include <stdlib.h>
#include <time.h>

#define DEFAULT_TIMEOUT_S 600.0

double rtp_dist_timeout_env(void)
{
    const char *s = getenv("KILN_DIST_TIMEOUT");
    char *end;
    double v = s && *s ? strtod(s, &end) : 0;
    return s && *s && *end == '\0' && v > 0 ? v : DEFAULT_TIMEOUT_S;
}

double rtp_dist_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
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

rt_status rt_dist_allreduce_dev_f32(rt_dist *d, rt_backend *b, rt_tensor *buf, float scale,
                                    const char *what, long long step, rt_error *err)
{
    if (!d->ops->device)
        return RT_ERR(err, RT_EINVAL, "%s: this world exchanges through host memory", what);
    RT_TRY(check_open(d, what, step, err));
    rt_status s = d->ops->device(d, b, buf, scale, what, step, err);
    if (s != RT_OK) d->broken = 1;
    return s;
}
