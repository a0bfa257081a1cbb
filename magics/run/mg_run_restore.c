/* mg_run_restore.c - mg_run_restore: a continued run takes the state of its checkpoint
 * (weights, optimiser state, position, curves) before mg_run_loop, and its checkpoint
 * policy goes on from that file (mg_ckpt_policy_continue). */
#include "mg_run_internal.h"
#include "rt_ckpt_train.h"

int mg_run_restore(mg_run *r, const rt_ckpt_reader *rd, const char *path, const char *caller,
                   int64_t *step, mg_error *err)
{
    rt_error re = {0};
    rt_ckpt_train_snap snap;
    rt_status s = rt_ckpt_train_load_model(rd, r->model, &re);
    if (s == RT_OK) s = rt_ckpt_train_snap_read(&snap, rd, r->model, &re);
    if (s != RT_OK) return mg_fail_status(err, &re, "%s: %s", caller, re.msg);
    s = rt_ckpt_train_snap_apply(&snap, r->trainer, r->model, &re);
    *step = snap.state.step;
    rt_ckpt_train_snap_deinit(&snap);
    mgp_curves_restore(r, rt_ckpt_reader_meta(rd, "curves"), *step);
    if (s != RT_OK)
        return mg_fail_status(err, &re, "%s: checkpoint '%s': %s", caller, path, re.msg);
    /* the periodic policy continues: no duplicate of this step, the best so far */
    mg_ckpt_policy_continue(&r->ckpt, rd, path, *step, r->o.run_dir[0] != 0);
    return 0;
}
