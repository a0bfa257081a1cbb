/* rt_trainer.h - the steppable training loop and evaluation.
 *
 * The caller (%train) owns the loop:
 *     rt_trainer_create(&t, model, &train, &cfg, err);
 *     rt_trainer_begin(t, err);
 *     do { rt_trainer_step(t, &ev, err); ...write checkpoints, publish... }
 *     while (ev == RT_STEP_CONTINUE || ev == RT_STEP_EPOCH_END);
 *     rt_trainer_end(t, &summary, err);
 * One step = one minibatch: batch -> upload -> forward -> loss -> backward -> optimiser
 * update with the schedule's lr (with cfg.accumulate K, K micro-batches' forward and
 * backward before the one update: steps count updates, as torch's and Lightning's do). should_stop is polled before every step, the time
 * limit too; progress is reported after every step (and at epoch ends).
 * Checkpoint hooks: between any two steps (ev tells when an epoch ended) the caller may
 * read rt_trainer_get_state + the model's tensors + rt_trainer_optim's named state, and
 * a new trainer restored with rt_trainer_set_state (+ the same) continues with per-step
 * losses bitwise equal to the uninterrupted run on the CPU: every random draw (init,
 * shuffle, dropout, augmentation) is a pure function of (seed, step/epoch).
 * Nothing in a step allocates.
 *
 * Two paths, one behaviour. The host path (CPU backend): the batcher copies the batch,
 * the loss is read every step, rt_optim updates the parameters in place. The device
 * path (every other backend; cfg.device_path forces it on the CPU for tests): the data
 * set and each epoch's order are uploaded once, a step gathers its batch, computes the
 * loss statistics into a ring and updates the parameters with the backend's optimiser
 * ops - no host round trip. The ring is read (one synchronisation) when progress is due:
 * every cfg.report_every_s, at an epoch end, when the ring is full, at the last step and
 * on rt_trainer_flush; the progress callbacks of the steps since the last read are then
 * made in step order. The trained parameters are bitwise the host path's on the CPU.
 * On the device path rt_trainer_optim's arrays are a mirror: rt_trainer_flush fills them
 * (checkpoint capture calls it), and after rt_trainer_optim or rt_trainer_set_state the
 * next step uploads them again (a checkpoint load changes them).
 */
#ifndef RT_TRAINER_H
#define RT_TRAINER_H

#include <stdint.h>

#include "rt_batcher.h"
#include "rt_dataset.h"
#include "rt_dist.h"
#include "rt_early_stop.h"
#include "rt_model.h"
#include "rt_optim.h"
#include "rt_schedule.h"

typedef struct rt_progress {
    int64_t step;        /* steps done (1-based after the first step) */
    int64_t total_steps; /* epochs * steps_per_epoch */
    int64_t epoch;       /* 0-based epoch the step belonged to */
    int epochs;
    int64_t step_in_epoch, steps_per_epoch;
    double loss, accuracy;             /* of this step's minibatch */
    double epoch_loss, epoch_accuracy; /* running means over the epoch so far */
    double lr;                         /* lr used by this step */
    double images_per_s;               /* training throughput since begin (this process) */
    double elapsed_s;                  /* since begin */
    int epoch_end;                     /* 1 when this step finished an epoch */
    int64_t skipped_steps; /* loss scaling: updates skipped for inf/NaN gradients, in all */
    double loss_scale;     /* loss scaling: the current scale (0 when off) */
} rt_progress;

typedef void (*rt_progress_fn)(const rt_progress *p, void *user);

typedef struct rt_trainer_config {
    int epochs;               /* planned length (>= 1) */
    int batch_size;           /* <= the model's max batch */
    double lr;                /* base learning rate */
    rt_optim_config optim;    /* rt_optim_config_default(RT_OPTIM_ADAM) etc. */
    rt_schedule schedule;     /* rt_schedule_default(...) or parsed; resolved at begin */
    int shuffle, augment;     /* batcher options (shuffle 1, augment 0 by default) */
    int crop_pad;             /* with augment: random-crop padding (4; 0 none) */
    float flip_p;             /* with augment: horizontal-flip probability (0.5; 0 none) */
    int cutout;               /* with augment: side of the square cut out (0 none) */
    int accumulate;           /* micro-batches per optimiser step (1): a step takes
                                batch_size * accumulate samples, batch_size at a time, and
                                adds their gradients (each part's loss gradient is that of
                                the whole step's mean, rt_model_backward_part), so it is
                                the step of the large batch to rounding; batch norm
                                normalises each micro-batch by its own statistics */
    double clip_norm;         /* > 0: the gradient scaled to this global L2 norm when above
                                it (torch's clip_grad_norm_), after accumulation */
    double clip_value;        /* > 0: every gradient clamped to [-v, v] (clip_grad_value_) */
    double label_smoothing;   /* in [0, 1): the loss of CrossEntropyLoss(label_smoothing=) */
    double time_limit_s;      /* 0 = none; else a step is not started past it */
    rt_monitor monitor;       /* the metric of the epoch-level controls (val_loss) */
    rt_early_stop early_stop; /* patience 0: off (rt_early_stop.h) */
    int restore_best;         /* keep a copy of the best epoch's weights for
                                 rt_trainer_restore_best */
    int device_path;          /* 1: the device path on the CPU backend too (tests); device
                                backends always take it */
    int no_graphs;            /* device path: 1 runs every step op by op; 0 (default) records
                                the step as a CUDA graph once per batch size and replays
                                it (backends with graph ops, one process, one device;
                                KILN_CUDA_GRAPHS=0 in the environment also turns it off) */
    int loss_scaling;         /* 1: dynamic loss scaling (fp16); needs the device path */
    double loss_scale_init;   /* its first scale (0: 2^16) */
    double report_every_s;    /* device path: read the loss for progress at most this often
                                (besides epoch ends); 0 = every step. Default 0.25 */
    rt_dist *dist;            /* NULL: one process. Else this rank's world (rt_dist_world):
                                each step's global batch is split between the ranks by
                                rank, the gradients are averaged over them before the
                                update, and loss, accuracy and images/s are the whole
                                batch's (rt_trainer_dist.c). On the device path the
                                gradients go through host memory (one sync a step) */
    rt_model **replicas;      /* several devices in this process: nreplicas more models of
                                the same spec and seed, each attached to a backend of its
                                own (another device). The trainer runs one thread a device
                                in a world of 1 + nreplicas ranks (rt_dist_group; dist must
                                be NULL): each step's batch is split between them, the
                                gradients averaged (NCCL on CUDA), every replica updated.
                                m is rank 0: progress, checkpoints and evaluation read it.
                                The models must outlive the trainer */
    int nreplicas;
    const double *param_lr_mult;    /* NULL: every parameter at the lr. Else one value a
                                    trainable tensor, in rt_model_tensor order (borrowed;
                                    must outlive the trainer): its lr is the lr times it
                                    (--lr-mult); 0 freezes it (--freeze): never updated, no
                                    optimiser state, no weight decay, its gradient zeroed
                                    before clipping. Not with loss scaling */
    rt_progress_fn progress;        /* may be NULL */
    int (*should_stop)(void *user); /* may be NULL; non-zero stops before the next step */
    void *user;
} rt_trainer_config;

/* Defaults: 1 epoch, batch 64, Adam lr 1e-3, constant schedule, shuffle on. */
rt_trainer_config rt_trainer_config_default(void);

typedef enum {
    RT_STEP_CONTINUE = 0, /* a step was done */
    RT_STEP_EPOCH_END,    /* a step was done and it finished an epoch */
    RT_STEP_DONE,         /* all planned steps are done; no step was taken */
    RT_STEP_STOPPED,      /* should_stop said so; no step was taken */
    RT_STEP_TIME_LIMIT,   /* the time limit passed; no step was taken */
    RT_STEP_EARLY_STOP    /* early stopping said so (rt_trainer_epoch_metrics); no step
                             was taken */
} rt_step_event;

/* Everything that positions a run, besides the model tensors and optimiser state. */
typedef struct rt_trainer_state {
    int64_t step;                      /* optimiser updates done */
    rt_batcher_state batcher;          /* data order position (epoch, position) */
    double epoch_loss_sum;             /* running epoch statistics, so a mid-epoch resume */
    int64_t epoch_correct, epoch_seen; /* reports the same epoch means */
    double loss_scale;                 /* loss scaling: current scale (0: off / not started) */
    int64_t scale_tracker;             /* clean steps since the scale last changed */
    int64_t skipped_steps;             /* updates skipped for inf/NaN gradients */
    rt_watch_state watch;              /* best epoch, early stopping, plateau reductions */
} rt_trainer_state;

typedef struct rt_trainer rt_trainer;

/* The model must be attached (its seed is the run's seed: init, dropout) and outlive
 * the trainer, as must the data set. Validates the config (errors name the option). */
RT_MUST_USE rt_status rt_trainer_create(rt_trainer **out, rt_model *m, const rt_dataset *train,
                                        const rt_trainer_config *cfg, rt_error *err);
void rt_trainer_destroy(rt_trainer *t);

RT_MUST_USE rt_status rt_trainer_begin(rt_trainer *t, rt_error *err);
RT_MUST_USE rt_status rt_trainer_step(rt_trainer *t, rt_step_event *ev, rt_error *err);
/* Summary of the steps done since begin. */
typedef struct rt_train_summary {
    int64_t steps, images;
    double seconds, images_per_s, last_loss;
    int64_t skipped_steps; /* loss scaling: skipped updates in all (state, not this call) */
    double loss_scale;     /* loss scaling: the final scale (0 when off) */
} rt_train_summary;
/* After an epoch's end (and its validation): the epoch-level controls (rt_early_stop.h)
 * with the monitored metric of em. They decide the best epoch (*improved = 1 for a new
 * best; improved may be NULL), early stopping (the next rt_trainer_step then returns
 * RT_STEP_EARLY_STOP) and the plateau schedule's reductions of the lr. RT_EINVAL when
 * the monitored metric is missing from em (NAN). */
RT_MUST_USE rt_status rt_trainer_epoch_metrics(rt_trainer *t, const rt_epoch_metrics *em,
                                               int *improved, rt_error *err);
/* With cfg.restore_best: the best epoch's weights (and buffers) back into the model.
 * *restored = 0 when this trainer saw no best epoch (a continued run whose best epoch
 * came before it continued): the model keeps its weights. */
RT_MUST_USE rt_status rt_trainer_restore_best(rt_trainer *t, int *restored, rt_error *err);
/* Replaces the base learning rate (cfg.lr) from the next step on, for every device of
 * the run: what the schedule starts from. Not part of the state (checkpoints keep the
 * configured rate); the range test of %lr_find sets one rate a step. lr > 0. */
void rt_trainer_set_lr(rt_trainer *t, double lr);
/* Flushes (device path), then fills out (may be NULL). */
RT_MUST_USE rt_status rt_trainer_end(rt_trainer *t, rt_train_summary *out, rt_error *err);

/* Device path: reads the statistics ring (progress callbacks of the pending steps) and
 * the optimiser and loss-scaling state into their host mirrors. Host path: nothing. */
RT_MUST_USE rt_status rt_trainer_flush(rt_trainer *t, rt_error *err);
/* 1 when the trainer takes the device path. */
int rt_trainer_on_device(const rt_trainer *t);
/* Device path: steps replayed as a CUDA graph so far, and graphs recorded (cfg.no_graphs);
 * 0 on the host path. */
int64_t rt_trainer_graph_launches(const rt_trainer *t, int64_t *recorded);

/* step and data position are always current; the epoch statistics and loss-scaling
 * fields only after rt_trainer_flush on the device path. */
rt_trainer_state rt_trainer_get_state(const rt_trainer *t);
RT_MUST_USE rt_status rt_trainer_set_state(rt_trainer *t, const rt_trainer_state *s, rt_error *err);
/* The optimiser (borrowed): its named state and step count go into checkpoints. On the
 * device path, flush first to read them; changes are uploaded before the next step. */
rt_optim *rt_trainer_optim(rt_trainer *t);
int64_t rt_trainer_steps_per_epoch(const rt_trainer *t);

/* ---- evaluation (no trainer needed) ---- */
#define RT_EVAL_MAX_PREDS 64
typedef struct rt_prediction {
    int index; /* data-set index */
    int label, predicted;
    float confidence; /* softmax probability of the prediction */
} rt_prediction;

typedef struct rt_eval_result {
    int64_t n;             /* images evaluated */
    double loss, accuracy; /* mean loss, fraction correct */
    int num_classes;
    int64_t confusion[RT_MAX_CLASSES][RT_MAX_CLASSES]; /* [true][predicted] */
    int npreds;                                        /* predictions of the first npreds samples */
    rt_prediction preds[RT_EVAL_MAX_PREDS];
    /* rank[r]: samples whose label's probability is the r-th highest (0 = the prediction):
     * above it are the classes of higher probability and those of equal probability with
     * a lower index (the first maximum wins, as the prediction). Top-k accuracy is
     * rt_eval_topk. */
    int64_t rank[RT_MAX_CLASSES];
} rt_eval_result;

/* The fraction of samples whose label is among the k most probable classes (k >= 1;
 * k = 1 is the accuracy; k >= the classes is 1). */
double rt_eval_topk(const rt_eval_result *e, int k);

/* Evaluates the model (eval mode: running BN stats, no dropout) on all of d in batches of
 * the model's max batch. max_preds (<= RT_EVAL_MAX_PREDS) predictions are kept. The
 * result is large (~80 KB): allocate it, do not put it on a small stack. */
RT_MUST_USE rt_status rt_trainer_evaluate(rt_model *m, const rt_dataset *d, int max_preds,
                                          rt_eval_result *out, rt_error *err);

#endif
