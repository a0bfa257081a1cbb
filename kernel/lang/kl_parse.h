/* kl_parse.h - the parser's private state, shared by kl_parse.c (operators),
 * kl_parse_atom.c (atoms, calls, subscripts, f-strings) and kl_parse_stmt.c. */
#ifndef KL_PARSE_H
#define KL_PARSE_H

#include "kl_internal.h"

typedef struct klpp {
    klp_arena *a;
    const klp_toks *t;
    size_t i;
    int rdepth;
    int prev_line, prev_end;
    klp_err *err;
} klpp;

klp_tok *klpp_cur(klpp *P);
klp_tok *klpp_next(klpp *P);
int klpp_is_op(klpp *P, const char *op);
int klpp_is_kw(klpp *P, const char *kw);
klp_node *klpp_error(klpp *P, klp_tok *t, const char *msg);
klp_node *klpp_mk(klpp *P, klp_node_kind k, const klp_tok *t);
klp_node *klpp_finish(klpp *P, klp_node *n);
int klpp_push(klpp *P, klp_node *n, klp_node *kid, const char *op);
int klpp_check_unsupported_kw(klpp *P);

klp_node *klpp_test(klpp *P);    /* one expression */
klp_node *klpp_exprs(klpp *P);   /* expressions separated by commas (a tuple) */
klp_node *klpp_primary(klpp *P); /* atom with trailers */
/* Splits an f-string template into literal and expression parts. */
klp_node *klpp_fstring(klpp *P, const klp_tok *t, const char *tmpl, size_t len);

#endif
