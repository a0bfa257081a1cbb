/* rt_amp_rule.h - the loss-scaling rules of rt_amp_state (rt_backend.h) as inline
 * functions, shared by the CPU backend (cpu_amp.c) and the CUDA kernels (nvcc compiles
 * them for host and device), so both backends skip, shrink and grow on the same steps.
 * The rules are torch.cuda.amp.GradScaler's; this is their only implementation.
 */
#ifndef RT_AMP_RULE_H
#define RT_AMP_RULE_H

#include <math.h>
#include <string.h>

#include "rt_backend.h"
#include "rt_optim.h"

/* runtime/cuda/cuda_elem.cuh defines RT_AMP_FN as __host__ __device__ static inline
 * before including this header (CUDA #ifdefs stay in runtime/cuda: tests/lint). */
#ifndef RT_AMP_FN
#define RT_AMP_FN static inline
#endif

/* PyTorch's defaults with the given initial scale (<= 0: 2^16). */
static inline void rt_amp_state_init(rt_amp_state *s, double init_scale)
{
    memset(s, 0, sizeof *s);
    s->scale = init_scale > 0 ? init_scale : 65536.0;
    s->growth = 2.0;
    s->backoff = 0.5;
    s->interval = 2000;
}

/* Consumes found_inf. Returns 1 when this step's update applies (s->steps is then its
 * t), 0 when it is skipped; updates scale, tracker and counters either way. */
RT_AMP_FN int rt_amp_rule_step(rt_amp_state *s)
{
    int overflow = s->found_inf;
    s->found_inf = 0;
    s->last_skipped = overflow ? 1 : 0;
    if (overflow) {
        s->skipped++;
        s->tracker = 0;
        /* floor at 2^-24 (fp16's smallest subnormal): below it nothing is left to save */
        if (s->scale * s->backoff >= 1.0 / 16777216.0) s->scale *= s->backoff;
        return 0;
    }
    s->steps++;
    if (++s->tracker >= s->interval) {
        s->tracker = 0;
        /* cap at 2^40: an fp32 gradient scaled further would overflow by itself */
        if (s->scale * s->growth <= 1099511627776.0) s->scale *= s->growth;
    }
    return 1;
}

/* Adam's step-dependent coefficients for step t (rt_optim_adam_coef's formulas). */
RT_AMP_FN void rt_amp_rule_adam_t(rt_adam_coef *c, double lr, double beta1, double beta2,
                                  long long t)
{
    c->step_size = (float)(lr / (1.0 - pow(beta1, (double)t)));
    c->bias_correction2_sqrt = (float)sqrt(1.0 - pow(beta2, (double)t));
}

#endif
