/* mg_run_probe.c - mg_run_probe_step: a run stepped one learning rate at a time by its
 * caller (%lr_find), without the progress display, results or checkpoints. */
#include "mg_run_internal.h"

int mg_run_probe_step(mg_run *r, double lr, double *loss, rt_step_event *ev, mg_error *err)
{
    rt_error re = {0};
    if (!r->probing) {
        r->probing = 1;
        if (rt_trainer_begin(r->trainer, &re) != RT_OK)
            return mg_fail_status(err, &re, "%s", re.msg);
    }
    rt_trainer_set_lr(r->trainer, lr);
    int64_t before = r->has_progress ? r->last.step : -1;
    if (rt_trainer_step(r->trainer, ev, &re) != RT_OK)
        return mg_fail_status(err, &re, "step %lld failed: %s", (long long)before + 2, re.msg);
    if (*ev != RT_STEP_CONTINUE && *ev != RT_STEP_EPOCH_END) return 0;
    /* the device path reports steps in batches: read this one now */
    if (rt_trainer_flush(r->trainer, &re) != RT_OK)
        return mg_fail_status(err, &re, "reading the loss failed: %s", re.msg);
    if (!r->has_progress || r->last.step == before)
        return mg_fail(err, "RuntimeError", "the step's loss was not reported");
    *loss = r->last.loss;
    return 0;
}
