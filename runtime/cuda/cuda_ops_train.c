/* cuda_ops_train.c - the CUDA backend's ops for the trainer's device path: gather_batch,
 * xent_stats and the loss-scaling ops (rt_backend.h): one launcher each (cuda_train.cu),
 * and bytes_to_f32 (cuda_bytes.cu), on arguments rt_backend_call.c has checked.
 *
 * Deliberately NOT done here: reading anything back. These ops run once or more per
 * training step, and a download would synchronise the step. So what the CPU checks in
 * the data itself is left to the kernels' defensive rules instead:
 *  - order values: the CPU refuses one outside [0, n); the kernel never reads through
 *    it and gives that sample the label -1 (a NaN loss), see rtp_k_gather;
 *  - the loss-scaling state: the CPU refuses a scale that is not a positive number;
 *    the device state is only ever written by these ops and by upload of a state the
 *    trainer built with rt_amp_state_init.
 */
#include <string.h>

#include "../rt_rng.h"
#include "cuda_internal.h"

#define STREAM (rtp_cuda_of(b)->stream)

rt_status rtp_cuda_gather_batch(rt_backend *b, rt_tensor *images, rt_tensor *labels,
                                const rt_tensor *data, const rt_tensor *data_labels,
                                const rt_tensor *order, const rt_gather_desc *d, rt_error *err)
{
    RTP_ENTER(b);
    /* the stream and conversions rt_batcher_augment_draw uses (rt_rng.h) */
    rt_rng r = rt_rng_stream(d->seed, RT_RNG_AUGMENT, d->epoch, 0);
    rt_rng r2 = rt_rng_stream(d->seed, RT_RNG_AUGMENT, d->epoch, 1); /* cutout */
    rtp_gather_geom g = {.n = d->n,
                         .C = d->C,
                         .H = d->H,
                         .W = d->W,
                         .count = d->count,
                         .augment = d->augment != 0,
                         .pad = d->pad,
                         .flip_p = d->flip_p,
                         .st = {r.key[0], r.key[1], r.stream[0], r.stream[1]},
                         .cutout = d->augment ? d->cutout : 0,
                         .st2 = {r2.key[0], r2.key[1], r2.stream[0], r2.stream[1]}};
    for (int c = 0; c < 4; c++) g.pad_value[c] = d->pad_value[c];
    const int32_t *ord = (const int32_t *)order->data + d->start;
    rtp_gather_vars v = {d->start, g.st, g.st2};
    const rtp_gather_vars *dv = rtp_graph_slot(b,
                                               &(rtp_slot){.kind = RTP_SLOT_GATHER,
                                                           .delta = d->start,
                                                           .seed = d->seed,
                                                           .limit = (int64_t)d->n - d->count},
                                               &v, sizeof v);
    if (dv) ord = order->data; /* the kernel adds the replay's start */
    RT_CUDA_TRY(b, err,
                rtp_k_gather(STREAM, images->data, labels->data, data->data, data_labels->data, ord,
                             g, dv));
    return RT_OK;
}

rt_status rtp_cuda_clip_grad(rt_backend *b, rt_tensor *grad, rt_tensor *norm, const rt_clip_desc *d,
                             rt_error *err)
{
    RTP_ENTER(b);
    RT_CUDA_TRY(b, err,
                rtp_k_clip(STREAM, grad->data, rt_tensor_numel(grad), norm->data, d->max_norm,
                           d->clip_value));
    return RT_OK;
}

rt_status rtp_cuda_bytes_to_f32(rt_backend *b, rt_tensor *dst, const rt_tensor *src,
                                const rt_tensor *lut, int C, size_t plane, rt_error *err)
{
    RTP_ENTER(b);
    RT_CUDA_TRY(
        b, err,
        rtp_k_bytes_f32(STREAM, dst->data, src->data, lut->data, C, plane, rt_tensor_numel(dst)));
    return RT_OK;
}

rt_status rtp_cuda_xent_stats(rt_backend *b, rt_tensor *stats, int row, const rt_tensor *loss,
                              const rt_tensor *probs, const rt_tensor *labels,
                              const rt_xent_desc *d, rt_error *err)
{
    RTP_ENTER(b);
    float *r = (float *)stats->data + (size_t)row * RT_STEP_STATS;
    int32_t v = row;
    const int32_t *dv =
        rtp_graph_slot(b,
                       &(rtp_slot){.kind = RTP_SLOT_ROW,
                                   .delta = row,
                                   .limit = (int64_t)(rt_tensor_numel(stats) / RT_STEP_STATS) - 1},
                       &v, sizeof v);
    if (dv) r = stats->data; /* the kernel adds the replay's row */
    RT_CUDA_TRY(b, err,
                rtp_k_xent_stats(STREAM, r, loss->data, probs->data, labels->data, d->N, d->L, dv));
    return RT_OK;
}

/* ---- dynamic loss scaling ---- */

rt_status rtp_cuda_amp_scale(rt_backend *b, rt_tensor *t, const rt_tensor *amp, rt_error *err)
{
    RTP_ENTER(b);
    size_t n = t ? rt_tensor_numel(t) : 0;
    RT_CUDA_TRY(b, err, rtp_k_amp_scale(STREAM, t->data, n, amp->data));
    return RT_OK;
}

rt_status rtp_cuda_amp_unscale(rt_backend *b, rt_tensor *grad, rt_tensor *amp, rt_error *err)
{
    RTP_ENTER(b);
    size_t n = grad ? rt_tensor_numel(grad) : 0;
    RT_CUDA_TRY(b, err, rtp_k_amp_unscale(STREAM, grad->data, n, amp->data));
    return RT_OK;
}

/* Every check before the rule kernel: a refused op leaves the state as it was. */
rt_status rtp_cuda_amp_adam_update(rt_backend *b, rt_tensor *param, rt_tensor *m, rt_tensor *v,
                                   const rt_tensor *grad, rt_tensor *amp, const rt_adam_desc *d,
                                   rt_error *err)
{
    RTP_ENTER(b);
    size_t n = param ? rt_tensor_numel(param) : 0;
    /* cuda_ops.c's (= cpu_optim.c's) coefficients; t = 1 is a placeholder for the two
     * step-dependent ones, which the device derives from its step count */
    rt_optim_config cfg = rt_optim_config_default(d->decoupled ? RT_OPTIM_ADAMW : RT_OPTIM_ADAM);
    cfg.beta1 = d->beta1, cfg.beta2 = d->beta2, cfg.eps = d->eps;
    cfg.weight_decay = d->weight_decay;
    rtp_amp_adam a;
    memset(&a, 0, sizeof a); /* padding too: a graph's slot compares the bytes */
    a.c = rt_optim_adam_coef(&cfg, d->lr, 1, 0);
    a.lr = d->lr, a.beta1 = cfg.beta1, a.beta2 = cfg.beta2;
    const rtp_amp_adam *dv =
        rtp_graph_slot(b, &(rtp_slot){.kind = RTP_SLOT_AMP_ADAM, .cfg = cfg}, &a, sizeof a);
    RT_CUDA_TRY(b, err,
                rtp_k_amp_adam(STREAM, param->data, m->data, v->data, grad->data, n, amp->data, a,
                               rtp_cuda_of(b)->coef, dv));
    return RT_OK;
}

rt_status rtp_cuda_amp_sgd_update(rt_backend *b, rt_tensor *param, rt_tensor *momentum_buf,
                                  const rt_tensor *grad, rt_tensor *amp, const rt_sgd_desc *d,
                                  rt_error *err)
{
    RTP_ENTER(b);
    size_t n = param ? rt_tensor_numel(param) : 0;
    rt_optim_config cfg = rt_optim_config_default(RT_OPTIM_SGD);
    cfg.momentum = d->momentum, cfg.dampening = d->dampening, cfg.nesterov = d->nesterov;
    cfg.weight_decay = d->weight_decay;
    rt_sgd_coef c = rt_optim_sgd_coef(&cfg, d->lr, 1, 0); /* first: from the device */
    const rt_sgd_coef *dv =
        rtp_graph_slot(b, &(rtp_slot){.kind = RTP_SLOT_AMP_SGD, .cfg = cfg}, &c, sizeof c);
    RT_CUDA_TRY(b, err,
                rtp_k_amp_sgd(STREAM, param->data, momentum_buf ? momentum_buf->data : NULL,
                              grad->data, n, amp->data, c, dv));
    return RT_OK;
}
