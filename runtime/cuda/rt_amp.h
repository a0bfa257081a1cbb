/* rt_amp.h - dynamic loss scaling for fp16 training (PyTorch GradScaler semantics).
 *
 * fp16 has 5 exponent bits: small gradients underflow to zero. The loss gradient is
 * multiplied by `scale` (pass scale/N as xent_bwd's scale), the parameter gradients are
 * divided by it again before the optimiser (rt_cuda_unscale_grads), and a step whose
 * gradients hold inf/NaN is SKIPPED (no optimiser update) and halves the scale; after
 * `interval` clean steps in a row the scale doubles. bf16 has fp32's exponent range and
 * needs none of this: a disabled scaler has scale 1 and never skips.
 * Pure host arithmetic (no device), so it is tested on every machine; its three
 * numbers (scale, tracker, skipped) belong in checkpoints for an exact resume.
 */
#ifndef RT_AMP_H
#define RT_AMP_H

#include <stdint.h>

typedef struct rt_amp_scaler {
    int enabled;        /* 0: scale stays 1, nothing is skipped (fp32, bf16) */
    double scale;       /* current loss scale (init 65536 = 2^16) */
    double growth;      /* 2.0 */
    double backoff;     /* 0.5 */
    int interval;       /* 2000 clean steps before growing */
    int tracker;        /* clean steps since the last change */
    int64_t skipped;    /* steps skipped because of inf/NaN gradients, in all */
} rt_amp_scaler;

/* PyTorch's defaults (2^16, x2, x0.5, 2000), enabled or not. */
void rt_amp_init(rt_amp_scaler *s, int enabled);
/* The factor to multiply the loss (gradient) by this step. */
float rt_amp_scale(const rt_amp_scaler *s);
/* 1 / rt_amp_scale: what the gradients are multiplied by before the update. */
float rt_amp_inv_scale(const rt_amp_scaler *s);
/* After the gradients of a step were checked: returns 1 when the optimiser step should
 * be applied, 0 when it must be skipped (overflow); updates scale and counters. */
int rt_amp_update(rt_amp_scaler *s, int overflow);

#endif
