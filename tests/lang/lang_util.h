/* lang_util.h - run a cell in a fresh or shared engine and capture everything (the
 * recording mg_out of tests/support/capture.h). */
#ifndef LANG_UTIL_H
#define LANG_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "kl.h"

typedef struct run {
    int rc;
    capture cap;
    kl_error err;
    char tb[8192]; /* traceback joined with '\n' */
} run;

static inline void run_cell(kl_engine *e, const char *code, run *r)
{
    mg_out o = capture_out(&r->cap);
    r->tb[0] = 0;
    r->rc = kl_engine_execute(e, code, &o, NULL, &r->err);
    size_t i;
    json_t *x;
    json_array_foreach(r->err.traceback, i, x)
    {
        strncat(r->tb, json_string_value(x), sizeof r->tb - strlen(r->tb) - 2);
        strcat(r->tb, "\n");
    }
    kl_error_deinit(&r->err);
}

#endif
