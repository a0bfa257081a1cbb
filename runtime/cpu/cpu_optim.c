/* cpu_optim.c - flat optimiser updates (Adam/AdamW, SGD with momentum) as backend ops.
 *
 * The arithmetic is the OPTIM module's (rt_optim.h): its per-step coefficients and
 * elementwise kernels, so the backend op and rt_optim_step agree bit for bit on the
 * CPU, and a CUDA mirror of the same kernels can be cross-checked against this op.
 */
#include "../rt_optim.h"
#include "cpu_internal.h"

rt_status rtp_cpu_adam_update(rt_backend *b, rt_tensor *param, rt_tensor *m, rt_tensor *v,
                              const rt_tensor *grad, const rt_adam_desc *d, rt_error *err)
{
    size_t n = rt_tensor_numel(param);
    rt_optim_config cfg = rt_optim_config_default(d->decoupled ? RT_OPTIM_ADAMW : RT_OPTIM_ADAM);
    cfg.beta1 = d->beta1, cfg.beta2 = d->beta2, cfg.eps = d->eps;
    cfg.weight_decay = d->weight_decay;
    rt_adam_coef c = rt_optim_adam_coef(&cfg, d->lr, d->step, 0);
    rt_optim_adam_kernel(param->data, m->data, v->data, grad->data, n, &c);
    return RT_OK;
}

rt_status rtp_cpu_sgd_update(rt_backend *b, rt_tensor *param, rt_tensor *momentum_buf,
                             const rt_tensor *grad, const rt_sgd_desc *d, rt_error *err)
{
    size_t n = rt_tensor_numel(param);
    rt_optim_config cfg = rt_optim_config_default(RT_OPTIM_SGD);
    cfg.momentum = d->momentum, cfg.dampening = d->dampening, cfg.nesterov = d->nesterov;
    cfg.weight_decay = d->weight_decay;
    rt_sgd_coef c = rt_optim_sgd_coef(&cfg, d->lr, d->step, 0);
    rt_optim_sgd_kernel(param->data, momentum_buf ? momentum_buf->data : NULL, grad->data, n, &c);
    return RT_OK;
}
