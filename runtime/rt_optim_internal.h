/* rt_optim_internal.h - private to rt_optim*.c: serial element ranges of the kernels,
 * so rt_optim_step can run every parameter inside ONE OpenMP region (one fork/join a
 * step instead of one per parameter, which matters on busy 2-core machines). */
#ifndef RT_OPTIM_INTERNAL_H
#define RT_OPTIM_INTERNAL_H

#include "rt_optim.h"

/* Serial: elements [0, n) of the arrays given (callers offset the pointers). */
void rtp_optim_sgd_range(float *p, float *buf, const float *g, size_t n, const rt_sgd_coef *c);
void rtp_optim_adam_range(float *p, float *m, float *v, const float *g, size_t n,
                          const rt_adam_coef *c);
/* This thread's share [*lo, *hi) of n elements in the current OpenMP team (all of
 * them outside a parallel region). */
void rtp_optim_thread_share(size_t n, size_t *lo, size_t *hi);

/* An AVX2 clone of the element loops is picked at load time (ifunc). Same operations
 * in the same order, no FMA (ISO C mode keeps -ffp-contract=off), IEEE sqrt and
 * division: every clone gives the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define RTP_OPTIM_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define RTP_OPTIM_CLONES
#endif

/* Elements below which threads cost more than they save. */
#define RTP_OPTIM_PAR_MIN 16384

#endif
