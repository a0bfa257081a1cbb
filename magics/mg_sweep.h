/* mg_sweep.h - %train --background's way into %sweep's background machinery
 * (mg_sweep.c): one kiln run in a process of its own, controlled by %sweep
 * status / wait / stop like a sweep. */
#ifndef MG_SWEEP_H
#define MG_SWEEP_H

#include "mg.h"

/* Runs `kiln run notebook` in the background (its result notebook and log in run_dir:
 * background.out.ipynb, background.log), its results-store row (in results, or the
 * default store when NULL or "") read back for a table the cell shows and a helper
 * thread updates in place. 0, or -1 with err (another job still running, no kiln). */
RT_MUST_USE int mg_sweep_background(mg_ctx *ctx, const char *notebook, const char *run_dir,
                                    const char *results, mg_error *err);

/* %train ... --background (mg_train_bg.c): o and args as %train read them. */
struct mg_run_opts;
RT_MUST_USE int mg_train_background(mg_ctx *ctx, const mg_args *args, const struct mg_run_opts *o,
                                    mg_error *err);

#endif
