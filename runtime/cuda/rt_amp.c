/* rt_amp.c - the dynamic loss scaler (see rt_amp.h). Same update rule as
 * torch.cuda.amp.GradScaler.update: on overflow scale *= backoff and the growth tracker
 * resets; otherwise the tracker counts up and at `interval` the scale grows. The scale
 * is kept a power of two (2^16 * 2^k), so scaling and unscaling are exact in float. */
#include "rt_amp.h"

#include <strings.h>

#include "rt_cuda.h"

void rt_amp_init(rt_amp_scaler *s, int enabled)
{
    s->enabled = enabled;
    s->scale = enabled ? 65536.0 : 1.0;
    s->growth = 2.0;
    s->backoff = 0.5;
    s->interval = 2000;
    s->tracker = 0;
    s->skipped = 0;
}

float rt_amp_scale(const rt_amp_scaler *s) { return s->enabled ? (float)s->scale : 1.0f; }

float rt_amp_inv_scale(const rt_amp_scaler *s)
{
    return s->enabled ? (float)(1.0 / s->scale) : 1.0f;
}

int rt_amp_update(rt_amp_scaler *s, int overflow)
{
    if (!s->enabled) return 1;
    if (overflow) {
        s->skipped++;
        s->tracker = 0;
        /* floor at 2^-24 (fp16's smallest subnormal): below it nothing is left to save */
        if (s->scale * s->backoff >= 1.0 / 16777216.0) s->scale *= s->backoff;
        return 0;
    }
    if (++s->tracker >= s->interval) {
        s->tracker = 0;
        /* cap at 2^24 x 2^16: an fp32 gradient scaled further would overflow itself */
        if (s->scale * s->growth <= 1099511627776.0) s->scale *= s->growth;
    }
    return 1;
}

/* ---- precision names (rt_cuda.h; here because this file is built with and without
 * CUDA) ---- */

static const char *const prec_names[] = {"fp32", "bf16", "fp16"};

rt_status rt_precision_parse(const char *name, rt_precision *out, rt_error *err)
{
    for (int i = 0; i < 3; i++)
        if (name && !strcasecmp(name, prec_names[i])) {
            *out = (rt_precision)i;
            return RT_OK;
        }
    return RT_ERR(err, RT_EINVAL, "--precision: unknown precision '%s' (expected fp32, bf16 "
                  "or fp16)", name ? name : "(null)");
}

const char *rt_precision_name(rt_precision p)
{
    return (unsigned)p < 3 ? prec_names[p] : "?";
}
