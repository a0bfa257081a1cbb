/* rt_trainer_controls.c - the step-level controls of the trainer (rt_trainer.h): gradient
 * accumulation, gradient clipping, label smoothing, and the checks of their values and of
 * the augmentation's.
 *
 * Accumulation: the batcher hands out batches of batch_size * accumulate samples; the
 * step computes them batch_size at a time, each part's loss gradient scaled by 1/count
 * of the whole batch (rt_model_backward_part), and adds the parts' gradients with the
 * backend's copy and add ops into an accumulator (backend memory, one float a parameter):
 * part 0 is copied there, the middle ones added, and the last part's add writes the sum
 * back into the model's gradients, where the optimiser (host or device) reads them. So
 * the update is the large batch's to rounding, and nothing in a step allocates. A step
 * is never cut between its parts: every checkpoint lies on an update, and the data
 * position it records (the batcher's, in whole large batches) is exact.
 * Clipping runs the backend's clip_grad op on the complete gradient (after the parts
 * are added, after the ranks' average and after loss scaling's unscale), so it reads no
 * value back to the host on a device.
 */
#include <math.h>
#include <string.h>

#include "rt_trainer_internal.h"

rt_status rtp_controls_check(const rt_trainer_config *c, const rt_dataset *d, rt_error *err)
{
    if (c->accumulate < 1)
        return RT_ERR(err, RT_EINVAL, "--accumulate must be an integer >= 1 (got %d)",
                      c->accumulate);
    if (c->accumulate > 1 && (c->dist || c->nreplicas > 0))
        return RT_ERR(err, RT_EINVAL,
                      "--accumulate %d cannot be combined with several ranks or devices "
                      "(their shares already make a larger batch: raise --batch)",
                      c->accumulate);
    if ((int64_t)c->batch_size * c->accumulate > 1 << 30)
        return RT_ERR(err, RT_EINVAL, "--batch %d x --accumulate %d is too large", c->batch_size,
                      c->accumulate);
    if (!(c->clip_norm >= 0.0) || !isfinite(c->clip_norm))
        return RT_ERR(err, RT_EINVAL, "--clip-grad must be a finite number > 0 (got %g)",
                      c->clip_norm);
    if (!(c->clip_value >= 0.0) || !isfinite(c->clip_value))
        return RT_ERR(err, RT_EINVAL, "--clip-value must be a finite number > 0 (got %g)",
                      c->clip_value);
    if (!(c->label_smoothing >= 0.0 && c->label_smoothing < 1.0))
        return RT_ERR(err, RT_EINVAL, "--label-smoothing must be in [0, 1) (got %g)",
                      c->label_smoothing);
    if (c->param_lr_mult && c->loss_scaling)
        return RT_ERR(err, RT_EINVAL,
                      "--freeze and --lr-mult do not work with --precision fp16 (loss "
                      "scaling updates every parameter at one rate) ---> HINT: --precision "
                      "bf16 or fp32");
    if (!c->augment) return RT_OK;
    int side = d->h > d->w ? d->h : d->w;
    if (c->crop_pad < 0 || c->crop_pad > d->h || c->crop_pad > d->w || c->crop_pad > 64)
        return RT_ERR(err, RT_EINVAL, "--augment crop:%d: the padding must be in [0, %d]",
                      c->crop_pad, d->h < d->w ? (d->h < 64 ? d->h : 64) : (d->w < 64 ? d->w : 64));
    if (c->cutout < 0 || c->cutout > side)
        return RT_ERR(err, RT_EINVAL, "--augment cutout:%d: the size must be in [1, %d]", c->cutout,
                      side);
    if (!(c->flip_p >= 0.0f && c->flip_p <= 1.0f))
        return RT_ERR(err, RT_EINVAL, "--augment: flip probability %g outside [0, 1]",
                      (double)c->flip_p);
    return RT_OK;
}

/* Backend memory for a flat f32 tensor of n floats in slot i. */
static rt_status ctl_alloc(rt_trainer *t, int i, rt_tensor *out, size_t n, const char *what,
                           rt_error *err)
{
    rt_backend *b = rt_model_backend(t->m);
    rt_status s = b->ops->alloc(b, &t->ctl_mem[i], n * sizeof(float), err);
    if (s != RT_OK) return s == RT_ENOMEM ? RT_ERR(err, s, "out of memory for %s", what) : s;
    *out = (rt_tensor){.data = t->ctl_mem[i], .dtype = RT_F32, .n = (int)n, .c = 1, .h = 1, .w = 1};
    return RT_OK;
}

rt_status rtp_controls_create(rt_trainer *t, rt_error *err)
{
    const rt_trainer_config *c = &t->cfg;
    size_t P = rt_tensor_numel(rt_model_grads_flat(t->m));
    if (c->accumulate > 1)
        RT_TRY(ctl_alloc(t, 0, &t->acc, P, "the accumulated gradients (--accumulate)", err));
    if (c->clip_norm > 0 || c->clip_value > 0) {
        if (!rt_model_backend(t->m)->ops->clip_grad)
            return RT_ERR(err, RT_EINVAL, "the %s backend cannot clip gradients (--clip-grad)",
                          rt_model_backend(t->m)->ops->name);
        RT_TRY(ctl_alloc(t, 1, &t->clip, RT_CLIP_WORDS, "gradient clipping", err));
    }
    return RT_OK;
}

void rtp_controls_destroy(rt_trainer *t)
{
    rt_backend *b = rt_model_backend(t->m);
    for (int i = 0; i < 2; i++)
        if (t->ctl_mem[i]) b->ops->free(b, t->ctl_mem[i]);
    memset(t->ctl_mem, 0, sizeof t->ctl_mem);
}

rt_status rtp_controls_accumulate(rt_trainer *t, int k, int last, rt_error *err)
{
    if (k == 0 && last) return RT_OK; /* one part: its gradients are the step's */
    rt_backend *b = rt_model_backend(t->m);
    rt_tensor *g = rt_model_grads_flat(t->m);
    if (k == 0) return rt_backend_copy(b, &t->acc, g, err);
    if (!last) return rt_backend_add(b, &t->acc, &t->acc, g, err);
    return rt_backend_add(b, g, &t->acc, g, err);
}

rt_status rtp_controls_clip(rt_trainer *t, rt_error *err)
{
    const rt_trainer_config *c = &t->cfg;
    for (int i = 0; i < t->ngroups; i++) /* a frozen parameter has no gradient */
        if (t->groups[i].frozen) {
            rt_tensor v =
                rtp_flat_view(rt_model_grads_flat(t->m), t->groups[i].off, t->groups[i].n);
            RT_TRY(rt_backend_fill(rt_model_backend(t->m), &v, 0.0f, err));
        }
    if (!(c->clip_norm > 0 || c->clip_value > 0)) return RT_OK;
    rt_clip_desc d = {.max_norm = c->clip_norm, .clip_value = c->clip_value};
    return rt_backend_clip_grad(rt_model_backend(t->m), rt_model_grads_flat(t->m), &t->clip, &d,
                                err);
}

uint32_t rtp_controls_key(const rt_trainer *t)
{
    return (uint32_t)(t->st.step * t->cfg.accumulate + t->micro);
}
