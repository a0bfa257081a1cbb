/* rt_optim.c - optimiser objects: validation, the one state allocation, the step walk,
 * and named state for checkpoints. The arithmetic is in rt_optim_kernels.c.
 *
 * Memory: one 256-byte-aligned block holds the struct, the copied parameter list and
 * every state array (slot s of parameter i at state + s*total + offset[i], offsets
 * multiples of RT_OPTIM_ALIGN floats), so destroy is one free and step never allocates. Slots: SGD with momentum 1 (momentum_buffer),
 * plain SGD 0, Adam/AdamW 2 (exp_avg, exp_avg_sq).
 */
#include "rt_optim.h"
#include "rt_optim_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ALIGN (RT_OPTIM_ALIGN * sizeof(float)) /* bytes */

struct rt_optim {
    rt_optim_config cfg;
    int64_t step;
    size_t nparams, nslots, total; /* total = sum of rt_optim_align(n) */
    rt_optim_param *params;        /* [nparams] */
    size_t *offsets;               /* [nparams] */
    float *state;                  /* [nslots * total] */
};

static const char *const KIND_NAMES[] = {"sgd", "adam", "adamw"};
static const char *const SGD_SLOTS[] = {"momentum_buffer"};
static const char *const ADAM_SLOTS[] = {"exp_avg", "exp_avg_sq"};

rt_optim_config rt_optim_config_default(rt_optim_kind kind)
{
    rt_optim_config c = {0};
    c.kind = kind;
    c.beta1 = 0.9;
    c.beta2 = 0.999;
    c.eps = 1e-8;
    c.weight_decay = kind == RT_OPTIM_ADAMW ? 0.01 : 0.0;
    return c;
}

const char *rt_optim_kind_name(rt_optim_kind kind)
{
    return (unsigned)kind < 3 ? KIND_NAMES[kind] : "unknown";
}

rt_status rt_optim_kind_parse(const char *name, rt_optim_kind *out, rt_error *err)
{
    for (int k = 0; k < 3; k++)
        if (name && strcasecmp(name, KIND_NAMES[k]) == 0) {
            *out = (rt_optim_kind)k;
            return RT_OK;
        }
    return RT_ERR(err, RT_EINVAL, "unknown optimizer '%s'; expected one of sgd, adam, adamw",
                  name ? name : "(null)");
}

static size_t slot_count(const rt_optim_config *c)
{
    if (c->kind == RT_OPTIM_SGD) return c->momentum != 0.0 ? 1 : 0;
    return 2;
}

static const char *slot_name(const rt_optim *o, size_t s)
{
    return o->cfg.kind == RT_OPTIM_SGD ? SGD_SLOTS[s] : ADAM_SLOTS[s];
}

/* torch.optim's ValueErrors, with the same wording where it has one. */
static rt_status validate(const rt_optim_config *c, rt_error *err)
{
    if ((unsigned)c->kind > RT_OPTIM_ADAMW)
        return RT_ERR(err, RT_EINVAL, "unknown optimizer kind %d", (int)c->kind);
    if (!(c->weight_decay >= 0.0) || !isfinite(c->weight_decay))
        return RT_ERR(err, RT_EINVAL, "Invalid weight_decay value: %g (must be >= 0)",
                      c->weight_decay);
    if (c->kind == RT_OPTIM_SGD) {
        if (!(c->momentum >= 0.0) || !isfinite(c->momentum))
            return RT_ERR(err, RT_EINVAL, "Invalid momentum value: %g (must be >= 0)", c->momentum);
        if (!isfinite(c->dampening))
            return RT_ERR(err, RT_EINVAL, "Invalid dampening value: %g", c->dampening);
        if (c->nesterov && (c->momentum <= 0.0 || c->dampening != 0.0))
            return RT_ERR(err, RT_EINVAL,
                          "Nesterov momentum requires a momentum and zero dampening "
                          "(momentum=%g, dampening=%g)",
                          c->momentum, c->dampening);
        return RT_OK;
    }
    if (!(c->eps >= 0.0) || !isfinite(c->eps))
        return RT_ERR(err, RT_EINVAL, "Invalid epsilon value: %g (must be >= 0)", c->eps);
    if (!(c->beta1 >= 0.0 && c->beta1 < 1.0))
        return RT_ERR(err, RT_EINVAL, "Invalid beta parameter at index 0: %g (need 0 <= beta1 < 1)",
                      c->beta1);
    if (!(c->beta2 >= 0.0 && c->beta2 < 1.0))
        return RT_ERR(err, RT_EINVAL, "Invalid beta parameter at index 1: %g (need 0 <= beta2 < 1)",
                      c->beta2);
    return RT_OK;
}

static size_t round_up(size_t x) { return (x + ALIGN - 1) / ALIGN * ALIGN; }

rt_status rt_optim_create(rt_optim **out, const rt_optim_config *cfg, const rt_optim_param *params,
                          size_t nparams, rt_error *err)
{
    *out = NULL;
    RT_TRY(validate(cfg, err));
    size_t total = 0;
    for (size_t i = 0; i < nparams; i++) {
        if (params[i].n > 0 && (!params[i].param || !params[i].grad))
            return RT_ERR(err, RT_EINVAL, "optimizer parameter %zu has no data or gradient", i);
        if (!(params[i].lr_mult >= 0.0) || !isfinite(params[i].lr_mult))
            return RT_ERR(err, RT_EINVAL, "optimizer parameter %zu has lr multiplier %g", i,
                          params[i].lr_mult);
        if (params[i].n > SIZE_MAX / 8 - total - RT_OPTIM_ALIGN)
            return RT_ERR(err, RT_EINVAL, "optimizer parameters are too large");
        total += rt_optim_align(params[i].n);
    }
    size_t nslots = slot_count(cfg);
    size_t off_params = round_up(sizeof(rt_optim));
    size_t off_offsets = off_params + round_up(nparams * sizeof(rt_optim_param));
    size_t off_state = off_offsets + round_up(nparams * sizeof(size_t));
    if (total > (SIZE_MAX - off_state - ALIGN) / sizeof(float) / (nslots ? nslots : 1))
        return RT_ERR(err, RT_EINVAL, "optimizer state is too large");
    size_t bytes = round_up(off_state + nslots * total * sizeof(float));
    char *block = aligned_alloc(ALIGN, bytes);
    if (!block)
        return RT_ERR(err, RT_ENOMEM, "out of memory allocating %zu bytes of optimizer state",
                      bytes);
    memset(block, 0, bytes);
    rt_optim *o = (rt_optim *)block;
    o->cfg = *cfg;
    o->nparams = nparams;
    o->nslots = nslots;
    o->total = total;
    o->params = (rt_optim_param *)(block + off_params);
    o->offsets = (size_t *)(block + off_offsets);
    o->state = (float *)(block + off_state);
    size_t off = 0;
    for (size_t i = 0; i < nparams; i++) {
        o->params[i] = params[i];
        o->offsets[i] = off;
        off += rt_optim_align(params[i].n);
    }
    *out = o;
    return RT_OK;
}

void rt_optim_destroy(rt_optim *o) { free(o); }

static float *slot_ptr(const rt_optim *o, size_t slot, size_t i)
{
    return o->state + slot * o->total + o->offsets[i];
}

/* Thread share [lo, hi) of the flattened parameters: update the overlapping slices. */
static void step_share(const rt_optim *o, size_t lo, size_t hi, double lr, const rt_sgd_coef sgd[2],
                       const rt_adam_coef adam[2])
{
    for (size_t i = 0; i < o->nparams; i++) {
        const rt_optim_param *p = &o->params[i];
        size_t a = o->offsets[i], b = a + p->n;
        if (b <= lo || a >= hi) continue;
        size_t s = (lo > a ? lo : a) - a, e = (hi < b ? hi : b) - a; /* within param */
        int nd = p->no_decay != 0;
        if (p->frozen) continue;
        rt_sgd_coef sc = sgd[nd];
        rt_adam_coef ac = adam[nd];
        if (p->lr_mult != 0.0 && p->lr_mult != 1.0) { /* its own rate (a few parameters) */
            sc = rt_optim_sgd_coef(&o->cfg, lr * p->lr_mult, o->step, nd);
            ac = rt_optim_adam_coef(&o->cfg, lr * p->lr_mult, o->step, nd);
        }
        if (o->cfg.kind == RT_OPTIM_SGD) {
            float *buf = o->nslots ? slot_ptr(o, 0, i) + s : NULL;
            rtp_optim_sgd_range(p->param + s, buf, p->grad + s, e - s, &sc);
        } else {
            rtp_optim_adam_range(p->param + s, slot_ptr(o, 0, i) + s, slot_ptr(o, 1, i) + s,
                                 p->grad + s, e - s, &ac);
        }
    }
}

rt_status rt_optim_step(rt_optim *o, double lr, rt_error *err)
{
    if (!(lr >= 0.0) || !isfinite(lr))
        return RT_ERR(err, RT_EINVAL, "Invalid learning rate: %g (must be finite and >= 0)", lr);
    int64_t t = ++o->step;
    rt_sgd_coef sgd[2] = {rt_optim_sgd_coef(&o->cfg, lr, t, 0),
                          rt_optim_sgd_coef(&o->cfg, lr, t, 1)};
    rt_adam_coef adam[2] = {rt_optim_adam_coef(&o->cfg, lr, t, 0),
                            rt_optim_adam_coef(&o->cfg, lr, t, 1)};
    /* one parallel region for all parameters; each thread takes an equal share of
     * the flattened elements (elementwise updates: any split gives the same bits) */
#pragma omp parallel if (o->total >= RTP_OPTIM_PAR_MIN)
    {
        size_t lo, hi;
        rtp_optim_thread_share(o->total, &lo, &hi);
        step_share(o, lo, hi, lr, sgd, adam);
    }
    return RT_OK;
}

int64_t rt_optim_step_count(const rt_optim *o) { return o->step; }

const rt_optim_config *rt_optim_get_config(const rt_optim *o) { return &o->cfg; }

/* ---- checkpoint state ---- */

size_t rt_optim_state_count(const rt_optim *o) { return o->nslots * o->nparams; }

const float *rt_optim_state_get(const rt_optim *o, size_t k, char *name, size_t *n)
{
    RT_ASSERT(k < rt_optim_state_count(o));
    size_t i = k / o->nslots, s = k % o->nslots;
    snprintf(name, RT_OPTIM_NAME_MAX, "%s.%zu", slot_name(o, s), i);
    *n = o->params[i].n;
    return slot_ptr(o, s, i);
}

/* "<slot>.<index>" -> slot and parameter index; 0 if the name is not one of ours. */
static int parse_state_name(const rt_optim *o, const char *name, size_t *slot, size_t *idx)
{
    for (size_t s = 0; s < o->nslots; s++) {
        const char *sn = slot_name(o, s);
        size_t len = strlen(sn);
        if (strncmp(name, sn, len) != 0 || name[len] != '.') continue;
        const char *d = name + len + 1;
        if (*d < '0' || *d > '9' || (d[0] == '0' && d[1] != '\0')) return 0;
        size_t v = 0;
        for (; *d >= '0' && *d <= '9'; d++) {
            if (v > (SIZE_MAX - 9) / 10) return 0;
            v = v * 10 + (size_t)(*d - '0');
        }
        if (*d != '\0' || v >= o->nparams) return 0;
        *slot = s;
        *idx = v;
        return 1;
    }
    return 0;
}

rt_status rt_optim_state_set(rt_optim *o, const char *name, const float *data, size_t n,
                             rt_error *err)
{
    size_t s, i;
    if (!name || !parse_state_name(o, name, &s, &i)) {
        if (o->nslots == 0)
            return RT_ERR(err, RT_EINVAL, "optimizer %s has no state array '%s'",
                          rt_optim_kind_name(o->cfg.kind), name ? name : "(null)");
        return RT_ERR(
            err, RT_EINVAL, "optimizer %s has no state array '%s'; expected %s%s%s.<0..%zu>",
            rt_optim_kind_name(o->cfg.kind), name ? name : "(null)", slot_name(o, 0),
            o->nslots > 1 ? ".<i> or " : "", o->nslots > 1 ? slot_name(o, 1) : "", o->nparams - 1);
    }
    if (n != o->params[i].n)
        return RT_ERR(err, RT_EINVAL,
                      "optimizer state '%s' has %zu values but parameter %zu has %zu", name, n, i,
                      o->params[i].n);
    memcpy(slot_ptr(o, s, i), data, n * sizeof *data);
    return RT_OK;
}

rt_status rt_optim_set_step_count(rt_optim *o, int64_t step, rt_error *err)
{
    if (step < 0)
        return RT_ERR(err, RT_EINVAL, "optimizer step count %lld is negative", (long long)step);
    o->step = step;
    return RT_OK;
}

size_t rt_optim_num_slots(const rt_optim *o) { return o->nslots; }

float *rt_optim_state_slot(rt_optim *o, size_t s, size_t *n)
{
    *n = s < o->nslots ? o->total : 0;
    return s < o->nslots ? o->state + s * o->total : NULL;
}
