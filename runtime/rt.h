/* rt.h - the runtime's public header: what magics/ includes.
 *
 * The CNN training library, no Jupyter inside. Typical use (%train):
 *   rt_backend_open(&b, "auto", 0, err);                        device (rt_backend.h)
 *   rt_dataset_load(&splits, &opts, err);                       data (rt_dataset.h)
 *   rt_model_create(&m, spec, &(rt_model_input){c,h,w,classes}, err);  %%model: summary
 *   rt_model_attach(m, &b, batch, seed, err);                   arenas + init
 *   rt_trainer_create / begin / step... / end                   (rt_trainer.h)
 *   rt_trainer_evaluate(m, &splits.test, 16, res, err);         %evaluate / %predict
 *   rt_model_destroy(m); rt_backend_close(&b);
 * Optimisers and schedules: rt_optim.h, rt_schedule.h; RNG: rt_rng.h; checkpoints:
 * rt_model_tensor()/rt_trainer_get_state() + rt_optim state, written by rt_ckpt.
 */
#ifndef RT_H
#define RT_H

#include "rt_augment.h"
#include "rt_backend.h"
#include "rt_dataset.h"
#include "rt_device.h"
#include "rt_error.h"
#include "rt_model.h"
#include "rt_optim.h"
#include "rt_rng.h"
#include "rt_schedule.h"
#include "rt_tensor.h"
#include "rt_trainer.h"

#endif
