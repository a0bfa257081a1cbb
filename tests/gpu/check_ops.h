/* check_ops.h - the driver of check_ops.c shared with its second file, check_ops_train.c
 * (the trainer's device-path ops): the two backends, the failure count, the per-side
 * case runner and the pair macros.
 */
#ifndef CHECK_OPS_H
#define CHECK_OPS_H

#include "gpu_util.h"

extern rt_backend ck_be[2]; /* [0] CPU, [1] CUDA */
extern size_t ck_failures;  /* mismatching tensors and failed ops so far */

#define T(p) (side ? &(p).g : &(p).c)
#define MAKE(p, n, c, h, w, v) gpu_pair_make(&(p), &ck_be[0], &ck_be[1], (n), (c), (h), (w), (v))
#define FREE(p) gpu_pair_free(&(p), &ck_be[0], &ck_be[1])
#define CMP(name, p, atol, rtol) \
    (ck_failures += gpu_compare((name), &ck_be[0], &ck_be[1], &(p), (p).n, (atol), (rtol)))
/* bit for bit; nan_equal: any NaN matches any NaN */
#define CMP_BITS(name, p, nan_equal) \
    (ck_failures += gpu_compare_bits((name), &ck_be[0], &ck_be[1], &(p), (p).n, (nan_equal)))

/* Runs fn on both backends (side 0 = CPU first); a failing op is a failure (message
 * printed) and returns 0. */
typedef rt_status (*case_fn)(rt_backend *b, int side, void *ctx, rt_error *err);
int ck_both(const char *what, case_fn fn, void *ctx);

/* check_ops_train.c: gather_batch, xent_stats and the loss-scaling ops. */
void check_train_ops(void);

#endif
