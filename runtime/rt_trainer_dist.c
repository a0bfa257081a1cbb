/* rt_trainer_dist.c - the host path's step over several ranks (cfg.dist): synchronous
 * data parallelism with the gradients averaged between backward and the update.
 *
 * Sharding: every rank runs the same batcher (same seed, same global batch B), so all
 * stage the same global batch of count samples; rank r trains on samples
 * [count*r/W, count*(r+1)/W) of it. The data order, and what a checkpoint records of
 * it, are the single-process run's, so a run resumes at any world size.
 *
 * Averaging: a rank's gradient is the mean over its n_r samples; scaled by n_r/count
 * and summed over the ranks (one MPI all-reduce of the flat gradient vector) it is the
 * mean over the whole batch - the gradient one process computes for the batch, up to
 * the order of the floating-point sums. Loss, right predictions and the ranks' wishes
 * to stop (interrupt, time limit) travel in a second, 4-double all-reduce (on the host
 * path), so every rank reports the whole batch's loss and stops after the same step.
 *
 * The device path (rt_trainer_device.c) gathers its share in backend memory and brings
 * the gradients and its share's statistics to the host for the same exchange
 * (rtp_dist_average), then uploads the average; or, in a world that sums in device
 * memory (NCCL), sums the gradients where they are and the statistics with them, in
 * the same group of collectives (rt_dist_stats: one host wait a step).
 *
 * What is not the single-process run: batchnorm normalises each rank's share with its
 * own statistics (as PyTorch DDP without SyncBatchNorm) and keeps its own running
 * statistics (rank 0's are the ones checkpointed), and dropout draws rank r's masks
 * from streams of its own (rt_model_set_shard; rank 0's are the single process's), so with batchnorm or dropout N ranks train a different (equally
 * valid) model than one process; without them they agree to rounding (docs/distributed.md).
 */
#include <stdlib.h>
#include <string.h>

#include "rt_trainer_internal.h"

rt_status rtp_dist_begin(rt_trainer *t, rt_error *err)
{
    rt_dist *d = t->cfg.dist;
    rt_model_set_shard(t->m, (uint32_t)rt_dist_rank(d));
    /* the device path first agrees how the ranks exchange (NCCL when all can): a launch
     * without MPI has no host collective before that */
    if (t->dev) RT_TRY(rt_dist_device_begin(d, rt_model_backend(t->m), &t->dist_dev, err));
    /* every rank must start at the same step: a rank that resumed from another
     * checkpoint than rank 0 (a run directory not shared between hosts) would train a
     * different model in silence */
    double st[2] = {(double)t->st.step, -(double)t->st.step};
    RT_TRY(rt_dist_allmax_f64(d, st, 2, "start-of-run check", (long long)t->st.step, err));
    if (st[0] != -st[1])
        return RT_ERR(err, RT_EINVAL,
                      "rank %d of %d starts at step %lld but another rank "
                      "starts at step %.0f ---> HINT: every rank must see the same run "
                      "directory (a shared file system) to resume the same checkpoint",
                      rt_dist_rank(d), rt_dist_size(d), (long long)t->st.step,
                      st[0] != (double)t->st.step ? st[0] : -st[1]);
    /* rank 0's parameters for all (the same seed gives the same init; this makes it so
     * whatever each rank loaded) */
    rt_tensor *p = rt_model_params_flat(t->m);
    const size_t np = rt_tensor_numel(p);
    if (!t->dev)
        return rt_dist_bcast_f32(d, rt_tensor_f32(p), np, "parameter broadcast",
                                 (long long)t->st.step, err);
    rt_backend *b = rt_model_backend(t->m);
    RT_TRY(rt_backend_download(b, t->dist_host, p, np * sizeof(float), err));
    RT_TRY(
        rt_dist_bcast_f32(d, t->dist_host, np, "parameter broadcast", (long long)t->st.step, err));
    return rt_backend_upload(b, p, t->dist_host, np * sizeof(float), err);
}

void rtp_dist_share(const rt_trainer *t, int count, int *lo, int *n)
{
    const int r = rt_dist_rank(t->cfg.dist), w = rt_dist_size(t->cfg.dist);
    *lo = (int)((int64_t)count * r / w);
    *n = (int)((int64_t)count * (r + 1) / w) - *lo;
}

void rtp_dist_votes(rt_trainer *t, double votes[2])
{
    rt_step_event vote = rtp_trainer_local_stop(t);
    votes[0] = vote == RT_STEP_STOPPED;
    votes[1] = vote == RT_STEP_TIME_LIMIT;
}

void rtp_dist_agree(rt_trainer *t, const double sums[4], int count, double *loss, int *correct)
{
    *loss = sums[0] / count;
    *correct = (int)sums[1];
    t->dist_stop = sums[2] > 0   ? RT_STEP_STOPPED
                   : sums[3] > 0 ? RT_STEP_TIME_LIMIT
                                 : RT_STEP_CONTINUE;
}

/* sums: loss * samples, right predictions, ranks stopped, ranks past the time limit */
static rt_status dist_stats(rt_trainer *t, int n, int count, double *loss, int *correct,
                            rt_error *err)
{
    double stats[4] = {n ? *loss * n : 0.0, n ? (double)*correct : 0.0, 0.0, 0.0};
    rtp_dist_votes(t, stats + 2);
    RT_TRY(rt_dist_allreduce_f64(t->cfg.dist, stats, 4, "loss all-reduce",
                                 (long long)t->st.step + 1, err));
    rtp_dist_agree(t, stats, count, loss, correct);
    return RT_OK;
}

rt_status rtp_dist_average(rt_trainer *t, float *g, int n, int count, double *loss, int *correct,
                           rt_error *err)
{
    rt_dist *d = t->cfg.dist;
    const long long step = (long long)t->st.step + 1;
    const size_t np = rt_tensor_numel(rt_model_grads_flat(t->m));
    const float scale = (float)n / (float)count;
    if (n == 0) /* a last batch smaller than the world: this rank adds nothing */
        memset(g, 0, np * sizeof *g);
    else if (scale != 1.0f)
        for (size_t i = 0; i < np; i++) g[i] *= scale;
    RT_TRY(rt_dist_allreduce_f32(d, g, np, "gradient all-reduce", step, err));
    return dist_stats(t, n, count, loss, correct, err);
}

rt_status rtp_dist_grads(rt_trainer *t, int count, double *loss, int *correct, rt_error *err)
{
    int lo, n;
    rtp_dist_share(t, count, &lo, &n);
    *loss = 0.0;
    *correct = 0;
    if (n > 0) RT_TRY(rtp_host_grads(t, lo, n, n, loss, correct, err));
    return rtp_dist_average(t, rt_tensor_f32(rt_model_grads_flat(t->m)), n, count, loss, correct,
                            err);
}
