/* rt_ckpt_train.h - a training run <-> a Kiln checkpoint file (rt_ckpt.h), no Jupyter.
 *
 * What makes %resume exact lives here, testable in C without any magic:
 *   save:   model tensors ("model.<i>.<type>.<name>", host F32, read through the
 *           backend's download), optimiser state ("optim.<array>.<param tensor name>",
 *           the parameter's shape), and in __metadata__ the trainer position (step,
 *           completed epochs, data order {epoch, position} + running epoch statistics,
 *           optimiser step count, RNG seed, schedule) plus the caller's descriptive keys
 *           (model name, hyperparameters, data set identity, metrics).
 *   resume: rebuild the model from "model_spec" and the same seed, attach it, create the
 *           trainer with the same configuration, then rt_ckpt_train_load_model +
 *           rt_ckpt_train_snap_read + rt_ckpt_train_snap_apply. Every random draw of the
 *           trainer is a pure function of (seed, step, epoch), so the continued run's
 *           per-step losses equal the uninterrupted run's bit for bit on the CPU.
 * A snapshot (rt_ckpt_train_snap) is the training state besides the model tensors as
 * plain host data: captured from a live trainer, read from a file, applied to a trainer.
 * Loading validates everything first: on any error the model/trainer is unchanged.
 * Weights cross devices: tensors only ever move through rt_model_tensor_read/write
 * (the backend's download/upload), files always hold host float32.
 */
#ifndef RT_CKPT_TRAIN_H
#define RT_CKPT_TRAIN_H

#include <stdint.h>

#include "rt_ckpt.h"
#include "rt_model.h"
#include "rt_optim.h"
#include "rt_trainer.h"

/* Extra __metadata__ keys written here (docs/checkpoint-format.md, section 3). */
#define RT_CKPT_KEY_NUM_CLASSES "num_classes"             /* decimal */
#define RT_CKPT_KEY_SPEC_CANONICAL "model_spec_canonical" /* rt_model_spec_canonical */
#define RT_CKPT_KEY_OPTIM_CONFIG "optimizer_config"       /* JSON, rt_optim_config */
#define RT_CKPT_KEY_TRAINING_STATE "training_state"       /* "1": optimiser + position present */

/* The training state besides the model tensors, as plain host data (owned). */
typedef struct rt_ckpt_train_snap {
    rt_trainer_state state; /* step, data order, running epoch statistics */
    int64_t steps_per_epoch;
    uint64_t seed;                    /* the model's seed: init, shuffle, dropout, augment */
    rt_optim_config optim;            /* kind and hyperparameters */
    int64_t optim_step;               /* the optimiser's step count (bias correction) */
    size_t nstate;                    /* optimiser arrays, in rt_optim_state_get order */
    char (*names)[RT_OPTIM_NAME_MAX]; /* "exp_avg.3" (rt_optim's names) */
    size_t *lens;                     /* floats in each array */
    float **arrays;                   /* views into one block */
    float *block;
} rt_ckpt_train_snap;

/* Copies t's state (and its optimiser's arrays) into s; t's model gives the seed.
 * Caller releases s with rt_ckpt_train_snap_deinit. */
RT_MUST_USE rt_status rt_ckpt_train_snap_capture(rt_ckpt_train_snap *s, rt_trainer *t, rt_model *m,
                                                 rt_error *err);
/* Reads the training state of checkpoint r for model m (whose trainable tensors name
 * the optimiser arrays). RT_EINVAL (naming the file) for a weights-only checkpoint,
 * RT_EFORMAT for malformed state. */
RT_MUST_USE rt_status rt_ckpt_train_snap_read(rt_ckpt_train_snap *s, const rt_ckpt_reader *r,
                                              rt_model *m, rt_error *err);
/* Restores s into t (built over m): checks optimiser kind, array names and sizes, seed
 * and steps per epoch first (RT_EINVAL saying what differs; t unchanged), then sets
 * the optimiser arrays, its step count and the trainer state. */
RT_MUST_USE rt_status rt_ckpt_train_snap_apply(const rt_ckpt_train_snap *s, rt_trainer *t,
                                               rt_model *m, rt_error *err);
void rt_ckpt_train_snap_deinit(rt_ckpt_train_snap *s); /* NULL ok; zeroes s */
/* Completed epochs of a snapshot (step / steps_per_epoch). */
int64_t rt_ckpt_train_snap_epoch(const rt_ckpt_train_snap *s);

/* Descriptive metadata from the caller; every field may be NULL / 0. */
typedef struct rt_ckpt_train_info {
    const char *run_id, *model_name;
    const char *hyperparameters; /* JSON object */
    const char *dataset;         /* JSON object {"name", "checksum", ...} */
    const char *schedule;        /* canonical schedule text (rt_schedule_format) */
    double base_lr;              /* with schedule: the "lr" in the schedule key */
    const rt_ckpt_metric *metric, *best_metric;
    const char *const *extra; /* NULL-terminated key, value, key, value ... */
    int64_t step, epoch;      /* used only when saving without a snapshot */
} rt_ckpt_train_info;

/* Writes m's tensors, s's state (NULL: a weights-only checkpoint) and the metadata
 * to path atomically (rt_ckpt_writer_save). Read-only for m. */
RT_MUST_USE rt_status rt_ckpt_train_save(const char *path, rt_model *m, const rt_ckpt_train_snap *s,
                                         const rt_ckpt_train_info *info, rt_error *err);

/* Copies r's "model.*" tensors into m after checking that the checkpoint holds exactly
 * m's tensors with m's shapes (RT_EINVAL naming the file and the first difference, and
 * the checkpoint's model spec when it has one; m unchanged). */
RT_MUST_USE rt_status rt_ckpt_train_load_model(const rt_ckpt_reader *r, rt_model *m, rt_error *err);

#endif
