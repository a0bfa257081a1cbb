/* cuda_ops.c - the CUDA backend's pooling, activations, batchnorm, dropout, loss and
 * optimiser ops: one launcher each (cuda_*.cu), on arguments rt_backend_call.c has
 * checked. Scalars that the CPU computes once per op on the host (the dropout
 * stream and keep probability, the optimiser coefficients) are computed here by the
 * same code, so the device kernels receive exactly the CPU's numbers.
 */
#include "../rt_rng.h"
#include "cuda_internal.h"

#define STREAM (rtp_cuda_of(b)->stream)

/* ---- pooling ---- */

static rtp_pool_geom pool_geom(const rt_pool_desc *d)
{
    return (rtp_pool_geom){d->N * d->C, d->H, d->W, d->R,   d->S,
                           d->stride,   d->P, d->Q, d->pad, d->adaptive};
}

rt_status rtp_cuda_maxpool_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in,
                               const rt_pool_desc *d, rt_error *err)
{
    RTP_ENTER(b);
    rtp_pool_geom g = pool_geom(d);
    RT_CUDA_TRY(b, err, rtp_k_maxpool_fwd(STREAM, out->data, in->data, g));
    return RT_OK;
}

rt_status rtp_cuda_maxpool_bwd(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                               const rt_tensor *in, const rt_tensor *out, const rt_pool_desc *d,
                               rt_error *err)
{
    RTP_ENTER(b);
    rtp_pool_geom g = pool_geom(d);
    RT_CUDA_TRY(b, err, rtp_k_maxpool_bwd(STREAM, din->data, dout->data, in->data, out->data, g));
    return RT_OK;
}

rt_status rtp_cuda_avgpool_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in,
                               const rt_pool_desc *d, rt_error *err)
{
    RTP_ENTER(b);
    rtp_pool_geom g = pool_geom(d);
    RT_CUDA_TRY(b, err, rtp_k_avgpool_fwd(STREAM, out->data, in->data, g));
    return RT_OK;
}

rt_status rtp_cuda_avgpool_bwd(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                               const rt_pool_desc *d, rt_error *err)
{
    RTP_ENTER(b);
    rtp_pool_geom g = pool_geom(d);
    RT_CUDA_TRY(b, err, rtp_k_avgpool_bwd(STREAM, din->data, dout->data, g));
    return RT_OK;
}

/* ---- relu ---- */

rt_status rtp_cuda_relu_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in, float slope,
                            rt_error *err)
{
    RTP_ENTER(b);
    size_t n = rt_tensor_numel(in);
    RT_CUDA_TRY(b, err, rtp_k_relu_fwd(STREAM, out->data, in->data, n, slope));
    return RT_OK;
}

rt_status rtp_cuda_relu_bwd(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                            const rt_tensor *out, float slope, rt_error *err)
{
    RTP_ENTER(b);
    size_t n = rt_tensor_numel(out);
    RT_CUDA_TRY(b, err, rtp_k_relu_bwd(STREAM, din->data, dout->data, out->data, n, slope));
    return RT_OK;
}

/* ---- activations (rt_act_kind) ---- */

rt_status rtp_cuda_act_fwd(rt_backend *b, rt_tensor *out, const rt_tensor *in, rt_act_kind kind,
                           rt_error *err)
{
    RTP_ENTER(b);
    size_t n = rt_tensor_numel(in);
    RT_CUDA_TRY(b, err, rtp_k_act_fwd(STREAM, out->data, in->data, n, (int)kind));
    return RT_OK;
}

rt_status rtp_cuda_act_bwd(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                           const rt_tensor *in, const rt_tensor *out, rt_act_kind kind,
                           rt_error *err)
{
    RTP_ENTER(b);
    size_t n = rt_tensor_numel(out);
    RT_CUDA_TRY(b, err,
                rtp_k_act_bwd(STREAM, din->data, dout->data, in->data, out->data, n, (int)kind));
    return RT_OK;
}

/* ---- batchnorm ---- */

rt_status rtp_cuda_bn_fwd_train(rt_backend *b, rt_tensor *out, rt_tensor *save_mean,
                                rt_tensor *save_invstd, rt_tensor *running_mean,
                                rt_tensor *running_var, const rt_tensor *in, const rt_tensor *gamma,
                                const rt_tensor *beta, const rt_bn_desc *d, rt_error *err)
{
    RTP_ENTER(b);
    double *part = rtp_cuda_of(b)->red;
    const int HW = d->H * d->W, P = rtp_red_parts((size_t)d->N * HW);
    for (int c0 = 0, cw; c0 < d->C; c0 += cw) { /* waves of what the buffer holds */
        cw = rtp_red_wave(d->C, P, c0);
        RT_CUDA_TRY(b, err, rtp_k_bn_stats_part(STREAM, part, in->data, d->N, d->C, HW, c0, cw, P));
        RT_CUDA_TRY(b, err,
                    rtp_k_bn_stats_finish(STREAM, part, save_mean->data, save_invstd->data,
                                          running_mean->data, running_var->data, d->N, HW, c0, cw,
                                          P, d->eps, d->momentum));
    }
    RT_CUDA_TRY(b, err,
                rtp_k_bn_apply(STREAM, out->data, in->data, gamma->data, beta->data,
                               save_mean->data, save_invstd->data, d->N, d->C, HW, d->relu));
    return RT_OK;
}

rt_status rtp_cuda_bn_fwd_eval(rt_backend *b, rt_tensor *out, const rt_tensor *in,
                               const rt_tensor *gamma, const rt_tensor *beta,
                               const rt_tensor *running_mean, const rt_tensor *running_var,
                               const rt_bn_desc *d, rt_error *err)
{
    RTP_ENTER(b);
    RT_CUDA_TRY(b, err,
                rtp_k_bn_fwd_eval(STREAM, out->data, in->data, gamma->data, beta->data,
                                  running_mean->data, running_var->data, d->N, d->C, d->H * d->W,
                                  d->eps, d->relu));
    return RT_OK;
}

/* bn_bwd; beta given: through the fused relu (bn_relu_bwd) */
static rt_status bn_bwd(rt_backend *b, rt_tensor *din, rt_tensor *dgamma, rt_tensor *dbeta,
                        const rt_tensor *dout, const rt_tensor *in, const rt_tensor *gamma,
                        const float *beta, const rt_tensor *save_mean, const rt_tensor *save_invstd,
                        const rt_bn_desc *d, rt_error *err)
{
    RTP_ENTER(b);
    double *part = rtp_cuda_of(b)->red;
    const int HW = d->H * d->W, P = rtp_red_parts((size_t)d->N * HW);
    for (int c0 = 0, cw; c0 < d->C; c0 += cw) {
        cw = rtp_red_wave(d->C, P, c0);
        RT_CUDA_TRY(b, err,
                    rtp_k_bn_bwd_part(STREAM, part, dout->data, in->data, gamma->data, beta,
                                      save_mean->data, save_invstd->data, d->N, d->C, HW, c0, cw,
                                      P));
        RT_CUDA_TRY(b, err, rtp_k_red_finish(STREAM, part, dbeta->data, dgamma->data, c0, cw, P));
    }
    RT_CUDA_TRY(b, err,
                rtp_k_bn_bwd_apply(STREAM, din->data, dout->data, in->data, gamma->data, beta,
                                   save_mean->data, save_invstd->data, dgamma->data, dbeta->data,
                                   d->N, d->C, HW));
    return RT_OK;
}

rt_status rtp_cuda_bn_bwd(rt_backend *b, rt_tensor *din, rt_tensor *dgamma, rt_tensor *dbeta,
                          const rt_tensor *dout, const rt_tensor *in, const rt_tensor *gamma,
                          const rt_tensor *save_mean, const rt_tensor *save_invstd,
                          const rt_bn_desc *d, rt_error *err)
{
    return bn_bwd(b, din, dgamma, dbeta, dout, in, gamma, NULL, save_mean, save_invstd, d, err);
}

rt_status rtp_cuda_bn_relu_bwd(rt_backend *b, rt_tensor *din, rt_tensor *dgamma, rt_tensor *dbeta,
                               const rt_tensor *dout, const rt_tensor *in, const rt_tensor *gamma,
                               const rt_tensor *beta, const rt_tensor *save_mean,
                               const rt_tensor *save_invstd, const rt_bn_desc *d, rt_error *err)
{
    return bn_bwd(b, din, dgamma, dbeta, dout, in, gamma, beta->data, save_mean, save_invstd, d,
                  err);
}

/* ---- dropout ---- */

rt_status rtp_cuda_dropout_fwd(rt_backend *b, rt_tensor *out, rt_tensor *mask, const rt_tensor *in,
                               const rt_dropout_desc *d, rt_error *err)
{
    RTP_ENTER(b);
    size_t n = (size_t)d->N * d->C * d->H * d->W;
    /* the same stream, keep probability and scale as cpu_act.c */
    float keep = 1.0f - d->p;
    rt_rng r = rt_rng_stream(d->seed, RT_RNG_DROPOUT, d->step, d->layer);
    rtp_philox_stream st = {r.key[0], r.key[1], r.stream[0], r.stream[1]};
    const rtp_philox_stream *dv = rtp_graph_slot(
        b,
        &(rtp_slot){.kind = RTP_SLOT_DROPOUT, .delta = d->step, .seed = d->seed, .layer = d->layer},
        &st, sizeof st);
    RT_CUDA_TRY(b, err,
                rtp_k_dropout_fwd(STREAM, out->data, mask->data, in->data, n, st, keep, dv));
    return RT_OK;
}

rt_status rtp_cuda_dropout_bwd(rt_backend *b, rt_tensor *din, const rt_tensor *dout,
                               const rt_tensor *mask, rt_error *err)
{
    RTP_ENTER(b);
    size_t n = rt_tensor_numel(mask);
    RT_CUDA_TRY(b, err, rtp_k_mul(STREAM, din->data, dout->data, mask->data, n));
    return RT_OK;
}

/* ---- softmax cross-entropy ---- */

rt_status rtp_cuda_xent_fwd(rt_backend *b, rt_tensor *loss, rt_tensor *probs,
                            const rt_tensor *logits, const rt_tensor *labels, const rt_xent_desc *d,
                            rt_error *err)
{
    RTP_ENTER(b);
    RT_CUDA_TRY(b, err,
                rtp_k_xent_fwd(STREAM, loss->data, probs->data, logits->data, labels->data, d->N,
                               d->L, d->smoothing));
    return RT_OK;
}

rt_status rtp_cuda_xent_bwd(rt_backend *b, rt_tensor *dlogits, const rt_tensor *probs,
                            const rt_tensor *labels, float scale, const rt_xent_desc *d,
                            rt_error *err)
{
    RTP_ENTER(b);
    RT_CUDA_TRY(b, err,
                rtp_k_xent_bwd(STREAM, dlogits->data, probs->data, labels->data, scale, d->N, d->L,
                               d->smoothing));
    return RT_OK;
}

/* ---- optimisers: coefficients exactly as cpu_optim.c builds them ---- */

rt_status rtp_cuda_adam_update(rt_backend *b, rt_tensor *param, rt_tensor *m, rt_tensor *v,
                               const rt_tensor *grad, const rt_adam_desc *d, rt_error *err)
{
    RTP_ENTER(b);
    size_t n = rt_tensor_numel(param);
    rt_optim_config cfg = rt_optim_config_default(d->decoupled ? RT_OPTIM_ADAMW : RT_OPTIM_ADAM);
    cfg.beta1 = d->beta1, cfg.beta2 = d->beta2, cfg.eps = d->eps;
    cfg.weight_decay = d->weight_decay;
    rt_adam_coef c = rt_optim_adam_coef(&cfg, d->lr, d->step, 0);
    const rt_adam_coef *dv =
        rtp_graph_slot(b, &(rtp_slot){.kind = RTP_SLOT_ADAM, .cfg = cfg}, &c, sizeof c);
    RT_CUDA_TRY(b, err, rtp_k_adam(STREAM, param->data, m->data, v->data, grad->data, n, c, dv));
    return RT_OK;
}

rt_status rtp_cuda_sgd_update(rt_backend *b, rt_tensor *param, rt_tensor *momentum_buf,
                              const rt_tensor *grad, const rt_sgd_desc *d, rt_error *err)
{
    RTP_ENTER(b);
    size_t n = rt_tensor_numel(param);
    rt_optim_config cfg = rt_optim_config_default(RT_OPTIM_SGD);
    cfg.momentum = d->momentum, cfg.dampening = d->dampening, cfg.nesterov = d->nesterov;
    cfg.weight_decay = d->weight_decay;
    rt_sgd_coef c = rt_optim_sgd_coef(&cfg, d->lr, d->step, 0);
    const rt_sgd_coef *dv =
        rtp_graph_slot(b, &(rtp_slot){.kind = RTP_SLOT_SGD, .cfg = cfg}, &c, sizeof c);
    RT_CUDA_TRY(b, err,
                rtp_k_sgd(STREAM, param->data, momentum_buf ? momentum_buf->data : NULL, grad->data,
                          n, c, dv));
    return RT_OK;
}
