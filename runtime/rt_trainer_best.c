/* rt_trainer_best.c - the trainer's epoch-level controls: rt_trainer_epoch_metrics
 * hands an epoch's metrics to the watch (rt_early_stop.h: best epoch, early stopping,
 * plateau), keeps the best epoch's weights for --restore-best and shares the watch
 * with the replicas of a multi-device run; rt_trainer_restore_best puts them back. */
#include <stdlib.h>
#include <string.h>

#include "rt_trainer_internal.h"

/* Every tensor of the model (parameters and buffers) into t->best_weights. */
static rt_status keep_weights(rt_trainer *t, rt_error *err)
{
    size_t total = 0;
    const int n = rt_model_num_tensors(t->m);
    for (int i = 0; i < n; i++) {
        rt_named_tensor nt;
        RT_TRY(rt_model_tensor(t->m, i, &nt, err));
        total += nt.numel;
    }
    if (!t->best_weights) {
        t->best_weights = malloc((total ? total : 1) * sizeof *t->best_weights);
        if (!t->best_weights)
            return RT_ERR(err, RT_ENOMEM, "out of memory keeping the best epoch's weights");
        t->best_numel = total;
    }
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        rt_named_tensor nt;
        RT_TRY(rt_model_tensor(t->m, i, &nt, err));
        RT_TRY(rt_model_tensor_read(t->m, i, t->best_weights + at, err));
        at += nt.numel;
    }
    return RT_OK;
}

rt_status rt_trainer_epoch_metrics(rt_trainer *t, const rt_epoch_metrics *em, int *improved,
                                   rt_error *err)
{
    const rt_trainer_config *c = &t->cfg;
    const rt_schedule *s = &c->schedule;
    int64_t spe = t->steps_per_epoch > 0 ? t->steps_per_epoch : 1;
    int64_t units = s->per_step ? t->st.step : t->st.step / spe;
    int better = 0;
    RT_TRY(rt_watch_epoch(&t->st.watch, c->monitor, &c->early_stop, s, c->lr,
                          (t->st.step + spe - 1) / spe, units, em, &better, err));
    if (improved) *improved = better;
    if (better && c->restore_best) RT_TRY(keep_weights(t, err));
    if (t->rep) rtp_rep_set_watch(t);
    return RT_OK;
}

rt_status rt_trainer_restore_best(rt_trainer *t, int *restored, rt_error *err)
{
    *restored = 0;
    if (!t->best_weights) return RT_OK;
    size_t at = 0;
    const int n = rt_model_num_tensors(t->m);
    for (int i = 0; i < n; i++) {
        rt_named_tensor nt;
        RT_TRY(rt_model_tensor(t->m, i, &nt, err));
        RT_TRY(rt_model_tensor_write(t->m, i, t->best_weights + at, err));
        at += nt.numel;
    }
    *restored = 1;
    return RT_OK;
}
