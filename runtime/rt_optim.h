/* rt_optim.h - SGD, Adam and AdamW over plain float arrays, with PyTorch's semantics.
 *
 * An optimiser is created over a list of parameters {param, grad, n} (host float arrays
 * it borrows; typically views into the model's parameter and gradient arenas). It owns
 * its state (momentum buffers, exp_avg, exp_avg_sq) in ONE allocation made at create;
 * rt_optim_step() never allocates. The learning rate is an argument of every step so a
 * schedule (rt_schedule.h) stays a pure function of the step count.
 *
 * Formulas (torch.optim, single-tensor path, torch 1.13-2.x; t = step count, 1-based):
 *   SGD:   g = grad + wd*p;  buf = (t == 1) ? g : momentum*buf + (1-dampening)*g;
 *          g = nesterov ? g + momentum*buf : buf   (only when momentum != 0);  p -= lr*g
 *   Adam:  g = grad + wd*p;  m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g*g;
 *          p -= lr/(1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps)
 *   AdamW: p *= 1 - lr*wd, then Adam with wd = 0 (decoupled weight decay).
 * Scalars are computed in double once per step (rt_optim_*_coef) and the elementwise
 * kernels (rt_optim_*_kernel) take them as floats: a CUDA kernel that mirrors the
 * kernels from the same coefficients agrees up to FMA contraction.
 *
 * Checkpoint state: named float arrays "momentum_buffer.<i>" (SGD with momentum),
 * "exp_avg.<i>" and "exp_avg_sq.<i>" (Adam/AdamW), i = parameter index, plus the step
 * count. Per parameter: no_decay, frozen (not updated) and an lr multiplier (lr_mult).
 * Not done: amsgrad, maximize, other per-group hyperparameters,
 * cycle_momentum of OneCycle (betas/momentum stay fixed).
 */
#ifndef RT_OPTIM_H
#define RT_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#include "rt_error.h"

typedef enum { RT_OPTIM_SGD = 0, RT_OPTIM_ADAM = 1, RT_OPTIM_ADAMW = 2 } rt_optim_kind;

typedef struct rt_optim_config {
    rt_optim_kind kind;
    double momentum, dampening; /* SGD (torch defaults 0, 0) */
    int nesterov;               /* SGD: needs momentum > 0 and dampening == 0 */
    double beta1, beta2, eps;   /* Adam/AdamW (0.9, 0.999, 1e-8) */
    double weight_decay;        /* SGD/Adam: L2 added to the gradient (0);
                                   AdamW: decoupled (0.01) */
} rt_optim_config;

/* One parameter: n floats at param, updated in place from grad (read only). Both are
 * borrowed and must stay valid (and at the same addresses) for the optimiser's life. */
typedef struct rt_optim_param {
    float *param;
    const float *grad;
    size_t n;
    int no_decay;   /* 1: weight_decay does not apply (e.g. biases, batch-norm) */
    int frozen;     /* 1: never updated: its state stays zero, no weight decay (--freeze) */
    double lr_mult; /* its lr is the step's lr times this (--lr-mult); 0 or 1: the lr */
} rt_optim_param;

typedef struct rt_optim rt_optim;

/* Every parameter's state begins at a multiple of RT_OPTIM_ALIGN floats (256 bytes)
 * within its slot, and rt_model packs its flat parameter and gradient vectors the same
 * way (rt_model.h): the pointers go straight to cuDNN and cuBLAS, which want aligned
 * tensors. The gaps hold zeros, which every update keeps at zero. */
#define RT_OPTIM_ALIGN 64
static inline size_t rt_optim_align(size_t n)
{
    return (n + RT_OPTIM_ALIGN - 1) / RT_OPTIM_ALIGN * RT_OPTIM_ALIGN;
}

/* torch.optim defaults for kind. */
rt_optim_config rt_optim_config_default(rt_optim_kind kind);
/* "sgd" | "adam" | "adamw" (case-insensitive). RT_EINVAL naming the choices. */
RT_MUST_USE rt_status rt_optim_kind_parse(const char *name, rt_optim_kind *out, rt_error *err);
const char *rt_optim_kind_name(rt_optim_kind kind);

/* Validates cfg (RT_EINVAL naming the bad hyperparameter, as torch's ValueErrors do),
 * copies the parameter list and allocates zeroed state. Caller frees with
 * rt_optim_destroy. On error *out is NULL. */
RT_MUST_USE rt_status rt_optim_create(rt_optim **out, const rt_optim_config *cfg,
                                      const rt_optim_param *params, size_t nparams, rt_error *err);
void rt_optim_destroy(rt_optim *o);

/* One update of every parameter with learning rate lr (>= 0, finite); increments the
 * step count first, as torch does. OpenMP-parallel; deterministic. */
RT_MUST_USE rt_status rt_optim_step(rt_optim *o, double lr, rt_error *err);
int64_t rt_optim_step_count(const rt_optim *o);
const rt_optim_config *rt_optim_get_config(const rt_optim *o);

/* ---- checkpoint state ---- */
#define RT_OPTIM_NAME_MAX 40
/* Number of named state arrays (0 for plain SGD). */
size_t rt_optim_state_count(const rt_optim *o);
/* The i-th state array: its name into name[RT_OPTIM_NAME_MAX], its length in *n.
 * Returns a pointer into the optimiser's state (borrowed; valid until destroy). */
const float *rt_optim_state_get(const rt_optim *o, size_t i, char *name, size_t *n);
/* Copies data into the state array called name. RT_EINVAL if there is no such array
 * or n differs (the message names both), and then the state is unchanged. */
RT_MUST_USE rt_status rt_optim_state_set(rt_optim *o, const char *name, const float *data, size_t n,
                                         rt_error *err);
/* Slot s (0: exp_avg or momentum_buffer, 1: exp_avg_sq) of every parameter as ONE
 * contiguous array in parameter order (*n floats: the sum of the parameter sizes, each
 * rounded up to RT_OPTIM_ALIGN), i.e. the layout of rt_model's flat parameter vector; NULL if s >= rt_optim_num_slots. For a trainer
 * that keeps the state in device memory and mirrors it here for checkpoints. */
size_t rt_optim_num_slots(const rt_optim *o);
float *rt_optim_state_slot(rt_optim *o, size_t s, size_t *n);
/* Restores the step count (>= 0). */
RT_MUST_USE rt_status rt_optim_set_step_count(rt_optim *o, int64_t step, rt_error *err);

/* ---- elementwise kernels (the backend-neutral core; CUDA mirrors these) ---- */
typedef struct rt_sgd_coef {
    float lr, weight_decay, momentum, one_minus_dampening;
    int nesterov, first; /* first: step 1 initialises the buffer with g */
} rt_sgd_coef;

typedef struct rt_adam_coef {
    float weight_decay; /* L2 (Adam); 0 for AdamW */
    float decay_factor; /* 1 - lr*wd for AdamW; 1 for Adam */
    float beta1, one_minus_beta1, beta2, one_minus_beta2;
    float step_size;             /* lr / (1 - beta1^t) */
    float bias_correction2_sqrt; /* sqrt(1 - beta2^t) */
    float eps;
} rt_adam_coef;

/* Coefficients for step t (1-based) with learning rate lr; no_decay drops the decay. */
rt_sgd_coef rt_optim_sgd_coef(const rt_optim_config *cfg, double lr, int64_t t, int no_decay);
rt_adam_coef rt_optim_adam_coef(const rt_optim_config *cfg, double lr, int64_t t, int no_decay);
/* p, buf (momentum buffer; unused when momentum == 0), g: n floats each. */
void rt_optim_sgd_kernel(float *p, float *buf, const float *g, size_t n, const rt_sgd_coef *c);
/* p, m (exp_avg), v (exp_avg_sq), g: n floats each. */
void rt_optim_adam_kernel(float *p, float *m, float *v, const float *g, size_t n,
                          const rt_adam_coef *c);

#endif
