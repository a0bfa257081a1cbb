/* mg_ckpt.h - checkpointing glue between a training run and checkpoint files
 * (RESUME helper's file; this first version, written by the TRAIN helper, holds only
 * the hook mg_run_loop calls - the RESUME helper owns and extends it).
 */
#ifndef MG_CKPT_H
#define MG_CKPT_H

#include "mg.h"
#include "mg_run.h"

/* Called by mg_run_loop after every step (ev = RT_STEP_CONTINUE / RT_STEP_EPOCH_END,
 * after that epoch's validation) and once when the loop stops (ev = RT_STEP_DONE /
 * RT_STEP_STOPPED / RT_STEP_TIME_LIMIT). Saves a checkpoint into mg_run_dir(run) when
 * --checkpoint-every says so (and always when stopping with a run directory), rotates
 * per --keep. 0 = go on; -1 with err = end the run as failed. */
int mg_run_checkpoint_hook(mg_run *run, rt_step_event ev, const mg_out *out, mg_error *err);

#endif
