/* mg_run.h - one training run: creating it (model on a backend, data set, trainer,
 * results store) and the step loop with its live display. Its options are mg_run_opts.h.
 * Used by %train (mg_train.c), %resume (mg_resume.h), %lr_find and %fine_tune.
 *
 * Life of a run:
 *   mg_run_opts o; mg_run_opts_default(&o); mg_run_opts_from_args(&o, args, err);
 *   mg_run_create(&run, ctx, &o, err);   model (fresh from the seed), data, trainer;
 *                                        nothing is recorded or shown yet
 *   mg_run_restore(run, rd, ...);        a continued run: tensors, optimiser state,
 *                                        position and curves from its checkpoint
 *   mg_run_loop(run, err);               results run begin (or resume), steps with the
 *                                        progress display, per-epoch validation, the
 *                                        checkpoint hook, results run end; the trained
 *                                        model goes to the workspace (mg_workspace.h)
 *   mg_run_destroy(run);
 * The run uses checkpointing, never the other way round: the loop hands the checkpoint
 * code (mg_ckpt.h) an mg_ckpt_run describing itself after every step (ev =
 * RT_STEP_CONTINUE / RT_STEP_EPOCH_END, after that epoch's validation) and once when it
 * stops (ev = RT_STEP_DONE / RT_STEP_STOPPED / RT_STEP_TIME_LIMIT). A hook failure (-1)
 * ends the run as failed with the hook's error. An interrupt stops the loop before the
 * next step (KeyboardInterrupt after the stop report); the time limit stops it the same
 * way but is not an error (a stage notebook goes on to its next cell).
 */
#ifndef MG_RUN_H
#define MG_RUN_H

#include <stdint.h>

#include "mg.h"
#include "mg_run_opts.h"
#include "rt.h"
#include "rt_ckpt.h"
#include "rt_results.h"

/* ---- the run ---- */
typedef struct mg_run mg_run;

/* Builds the run: finds the model spec and data set in the session's workspace (loading
 * --data if needed), opens the device, creates the model from its spec and the seed and
 * the trainer. ctx must outlive the run. Errors are user errors (ValueError/UsageError)
 * naming the option or model. On error *out is NULL. */
RT_MUST_USE int mg_run_create(mg_run **out, mg_ctx *ctx, const mg_run_opts *o, mg_error *err);
/* Trains until done, interrupted, out of time or failed (see top). 0 when finished or
 * stopped by the time limit; -1 with err (KeyboardInterrupt for an interrupt). */
RT_MUST_USE int mg_run_loop(mg_run *run, mg_error *err);
void mg_run_destroy(mg_run *run); /* accepts NULL */

/* A continued run: the weights, optimiser state and position of checkpoint rd (read
 * from path) into the freshly built run, its curves up to that step, and the periodic
 * checkpoint policy's memory (no second copy of that step, the best so far). *step:
 * the step it continues after. Errors name caller and the file; the run is unchanged
 * unless the weights loaded. */
RT_MUST_USE int mg_run_restore(mg_run *run, const rt_ckpt_reader *rd, const char *path,
                               const char *caller, int64_t *step, mg_error *err);

/* ---- accessors (borrowed; valid until mg_run_destroy) ---- */
rt_trainer *mg_run_trainer(mg_run *run);
const char *mg_run_dataset_name(const mg_run *run); /* "fashion-mnist" */
const char *mg_run_model_name(const mg_run *run);

/* ---- a run stepped by its caller instead of mg_run_loop (%lr_find) ----
 * One step at base learning rate lr (replacing --lr; the schedule starts from it), with
 * no display and no record: the first call begins the trainer, *loss is the step's
 * minibatch loss (read at once, on a device too). *ev as rt_trainer_step: RT_STEP_STOPPED
 * when an interrupt stopped the run before this step (no step taken). The model stays
 * the run's own (mg_run_destroy frees it): nothing reaches the workspace. */
RT_MUST_USE int mg_run_probe_step(mg_run *run, double lr, double *loss, rt_step_event *ev,
                                  mg_error *err);

#endif
