/* cpu_gather.c - gather_batch on the CPU: a minibatch from a data set in backend memory
 * by the epoch's order, with the batcher's crop/flip (rt_batcher.h), so the trainer's
 * device path can be run - and checked against the host batcher bit for bit - on every
 * machine. On the CPU the host path (rt_batcher_next) does the same work. Also
 * bytes_to_f32, the reference for the device's normalisation of a set's raw bytes.
 */
#include <stdint.h>
#include <string.h>

#include "../rt_batcher.h"
#include "cpu_internal.h"

rt_status rtp_cpu_gather_batch(rt_backend *b, rt_tensor *images, rt_tensor *labels,
                               const rt_tensor *data, const rt_tensor *data_labels,
                               const rt_tensor *order, const rt_gather_desc *d, rt_error *err)
{
    size_t img = (size_t)d->C * d->H * d->W;
    const int32_t *ord = (const int32_t *)order->data + d->start;
    for (int i = 0; i < d->count; i++)
        if (ord[i] < 0 || ord[i] >= d->n)
            return RT_ERR(err, RT_EINVAL, "gather_batch: order holds %d, outside [0, %d)", ord[i],
                          d->n);
    const float *src = data->data;
    const int32_t *lab = data_labels->data;
    float *dst = images->data;
    int32_t *out_lab = labels->data;
#pragma omp parallel for schedule(static) \
    num_threads(b->threads) if ((size_t)d->count * img >= 65536)
    for (int i = 0; i < d->count; i++) {
        const float *s = src + (size_t)ord[i] * img;
        float *o = dst + (size_t)i * img;
        if (!d->augment) {
            memcpy(o, s, img * sizeof *o);
            continue;
        }
        int top, left, flip;
        rt_batcher_augment_draw(d->seed, d->epoch, (uint32_t)ord[i], d->pad, d->flip_p, &top, &left,
                                &flip);
        rt_batcher_crop_flip(o, s, d->C, d->H, d->W, d->pad, top, left, flip, d->pad_value);
        if (d->cutout > 0) {
            int cy, cx;
            rt_batcher_cutout_draw(d->seed, d->epoch, (uint32_t)ord[i], d->H, d->W, &cy, &cx);
            rt_batcher_cutout(o, d->C, d->H, d->W, d->cutout, cy, cx);
        }
    }
    for (int i = 0; i < d->count; i++) out_lab[i] = lab[ord[i]];
    return RT_OK;
}

rt_status rtp_cpu_bytes_to_f32(rt_backend *b, rt_tensor *dst, const rt_tensor *src,
                               const rt_tensor *lut, int C, size_t plane, rt_error *err)
{
    (void)b, (void)err;
    const uint8_t *s = src->data;
    const float *t = lut->data;
    float *o = dst->data;
    size_t n = rt_tensor_numel(dst);
    for (size_t i = 0; i < n; i++) o[i] = t[(i / plane) % (size_t)C * 256 + s[i]];
    return RT_OK;
}
