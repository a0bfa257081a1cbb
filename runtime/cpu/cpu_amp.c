/* cpu_amp.c - dynamic loss scaling (rt_amp_state, rt_backend.h) on the CPU backend.
 *
 * The CPU computes in fp32 and never needs a loss scale; these ops exist so the
 * trainer's device path (loss scaling included) runs and is tested on every machine,
 * with the rules of rt_amp_rule.h that the CUDA kernels share.
 */
#include <math.h>
#include <stdint.h>

#include "../rt_amp_rule.h"
#include "cpu_internal.h"

static rt_status amp_of(const rt_tensor *amp, rt_amp_state **out, rt_error *err)
{
    *out = (rt_amp_state *)amp->data;
    if (!((*out)->scale > 0) || !isfinite((*out)->scale))
        return RT_ERR(err, RT_EINVAL, "loss-scaling state: scale %g is not a positive number",
                      (*out)->scale);
    return RT_OK;
}

rt_status rtp_cpu_amp_scale(rt_backend *b, rt_tensor *t, const rt_tensor *amp, rt_error *err)
{
    rt_amp_state *s;
    RT_TRY(amp_of(amp, &s, err));
    size_t n = t ? rt_tensor_numel(t) : 0;
    float *x = t->data, f = (float)s->scale;
    for (size_t i = 0; i < n; i++) x[i] *= f;
    return RT_OK;
}

rt_status rtp_cpu_amp_unscale(rt_backend *b, rt_tensor *grad, rt_tensor *amp, rt_error *err)
{
    rt_amp_state *s;
    RT_TRY(amp_of(amp, &s, err));
    size_t n = grad ? rt_tensor_numel(grad) : 0;
    float *g = grad->data, inv = (float)(1.0 / s->scale);
    int bad = 0;
#pragma omp parallel for schedule(static) reduction(| : bad) num_threads(b->threads) if (n >= 65536)
    for (size_t i = 0; i < n; i++) {
        bad |= !isfinite(g[i]);
        g[i] *= inv;
    }
    if (bad) s->found_inf = 1;
    return RT_OK;
}

rt_status rtp_cpu_amp_adam_update(rt_backend *b, rt_tensor *param, rt_tensor *m, rt_tensor *v,
                                  const rt_tensor *grad, rt_tensor *amp, const rt_adam_desc *d,
                                  rt_error *err)
{
    rt_amp_state *s;
    RT_TRY(amp_of(amp, &s, err));
    if (!rt_amp_rule_step(s)) return RT_OK;
    rt_adam_desc dd = *d;
    dd.step = s->steps;
    return rtp_cpu_adam_update(b, param, m, v, grad, &dd, err);
}

rt_status rtp_cpu_amp_sgd_update(rt_backend *b, rt_tensor *param, rt_tensor *momentum_buf,
                                 const rt_tensor *grad, rt_tensor *amp, const rt_sgd_desc *d,
                                 rt_error *err)
{
    rt_amp_state *s;
    RT_TRY(amp_of(amp, &s, err));
    if (!rt_amp_rule_step(s)) return RT_OK; /* everything checked before the state moves */
    rt_sgd_desc dd = *d;
    dd.step = s->steps;
    return rtp_cpu_sgd_update(b, param, momentum_buf, grad, &dd, err);
}
