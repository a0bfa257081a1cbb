/* kl_builtins.h - the calling convention shared by kl_builtins.c (conversions,
 * I/O, the table) and kl_builtins_seq.c (numbers and sequences). */
#ifndef KL_BUILTINS_H
#define KL_BUILTINS_H

#include "kl_internal.h"

typedef struct klpb_call {
    klp_ctx *c;
    const klp_node *n;
    const char *name;
    json_t **args; /* borrowed */
    size_t na;
    const char **kwn;
    json_t **kw; /* borrowed */
    size_t nk;
} klpb_call;

json_t *klpb_fail(klp_ctx *c, const klp_node *n, const char *ename, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* TypeError (-1) unless lo <= na <= hi: "f() takes exactly 1 argument (2 given)". */
int klpb_count(klp_ctx *c, const klp_node *n, const char *name, size_t na, size_t lo, size_t hi);
json_t *klpb_str_new(kl_buf *b); /* frees b */

json_t *klpb_abs(klpb_call *k);
json_t *klpb_list(klpb_call *k);
json_t *klpb_max(klpb_call *k);
json_t *klpb_min(klpb_call *k);
json_t *klpb_range(klpb_call *k);
json_t *klpb_round(klpb_call *k);
json_t *klpb_sum(klpb_call *k);

#endif
