/* rt_trainer_internal.h - the trainer's state, shared by rt_trainer.c (the loop, the
 * host path, bookkeeping) and rt_trainer_device.c (the device path). */
#ifndef RT_TRAINER_INTERNAL_H
#define RT_TRAINER_INTERNAL_H

#include "rt_trainer.h"

typedef struct rtp_replicas rtp_replicas; /* rt_trainer_replicas.c */

/* One step whose statistics are still in the device ring. */
typedef struct rtp_pending {
    int64_t step;            /* 1-based step number */
    int64_t epoch, position; /* epoch of the step, batcher position after it */
    int count;               /* samples */
    int reset;               /* 1: the step began a new epoch (epoch sums restart) */
    int epoch_end;
    double lr;
} rtp_pending;

/* The device path's backend memory and host mirrors (rt_trainer_device.c). */
typedef struct rtp_trainer_dev {
    void *mem[7];           /* backend allocations, freed with the trainer */
    rt_tensor data, labels; /* the training set (n,C,H,W) f32, (n) i32 */
    rt_tensor order;        /* (n) i32: the permutation of order_epoch */
    rt_tensor stats;        /* (ring, RT_STEP_STATS) */
    rt_tensor amp;          /* RT_AMP_WORDS i32: rt_amp_state (loss scaling only) */
    rt_tensor s0, s1;       /* optimiser state: exp_avg/exp_avg_sq or momentum */
    int64_t order_epoch;    /* epoch whose order is on the device, -1 none */
    int ring, pending;      /* ring rows; rows written since the last read */
    rtp_pending *rows;      /* (ring) */
    float *hstats;          /* (ring, RT_STEP_STATS) host copy */
    int upload_optim;       /* 1: the host mirror of the optimiser is newer */
    double last_read;       /* when the ring was last read */
    struct {                /* CUDA graphs, one per batch size seen (rt_trainer_device.c) */
        int count;          /* the step's samples, 0: unused */
        int seen;           /* ran once uncaptured (cuDNN's choices made, workspace grown) */
        rt_graph *g;        /* recorded, NULL: not yet */
    } graphs[4];
    int graphs_on; /* 0: every step op by op (no graph ops, turned off, or a failed capture) */
    int64_t graph_launches, graph_records; /* counts, for tests and the run's log */
} rtp_trainer_dev;

/* A run of parameters in the flat vectors with one lr multiplier (param_lr_mult). */
typedef struct rtp_group {
    size_t off, n; /* floats of the flat layout, gaps included */
    double lr_mult;
    int frozen;
} rtp_group;

struct rt_trainer {
    rt_model *m;            /* borrowed */
    const rt_dataset *data; /* borrowed */
    rt_trainer_config cfg;
    rt_batcher *batcher;
    rt_batcher_config bcfg; /* the batcher's configuration (augmentation, seed) */
    rt_optim *optim;
    rt_trainer_state st;
    int64_t steps_per_epoch, total_steps;
    float *best_weights; /* cfg.restore_best: the best epoch's tensors, in order */
    size_t best_numel;
    float *images, *probs; /* host path: (B,C,H,W), (B,L) staging */
    int32_t *labels;       /* host path: (B) */
    rtp_trainer_dev *dev;  /* device path, else NULL */
    double t_begin, last_loss;
    int64_t images_done, steps_done;
    rt_step_event dist_stop; /* ranks: the stop all ranks agreed on at the last step */
    int dist_dev;            /* ranks: gradients summed in device memory (NCCL) */
    rtp_replicas *rep;       /* several devices: the other devices' trainers, else NULL */
    float *dist_host;        /* ranks on the device path: (P) host staging of the
                                    gradients (and of the parameters at begin) */
    void *ctl_mem[2];        /* rt_trainer_controls.c: backend memory of acc and clip */
    rt_tensor acc;           /* accumulate > 1: (P) the gradients of the step's parts */
    rt_tensor clip;          /* clipping: RT_CLIP_WORDS, the clip_grad op's norm words */
    int micro;               /* the micro-batch of the step being computed (0-based) */
    rtp_group *groups;       /* cfg.param_lr_mult: runs of equal multipliers, else NULL */
    int ngroups;
};

/* rt_trainer_controls.c: accumulation, clipping, label smoothing */
/* The config's accumulation, clipping, smoothing and augmentation values (errors name
 * the option). */
RT_MUST_USE rt_status rtp_controls_check(const rt_trainer_config *c, const rt_dataset *d,
                                         rt_error *err);
/* Backend memory for the accumulator and the clip words (as the config needs them). */
RT_MUST_USE rt_status rtp_controls_create(rt_trainer *t, rt_error *err);
void rtp_controls_destroy(rt_trainer *t);
/* After micro-batch k's backward (last: the step's last part): the model's gradients
 * added to the accumulator; the last leaves the step's sum in the model's gradients. */
RT_MUST_USE rt_status rtp_controls_accumulate(rt_trainer *t, int k, int last, rt_error *err);
/* The frozen parameters' gradients zeroed, then the clipping of the step's complete
 * gradient (nothing when off). */
RT_MUST_USE rt_status rtp_controls_clip(rt_trainer *t, rt_error *err);
/* The dropout key of micro-batch k of the current step: step * K + k (the step itself
 * without accumulation). */
uint32_t rtp_controls_key(const rt_trainer *t);

double rtp_trainer_now(void);
/* Accounts one finished step (statistics known) and calls progress. */
void rtp_trainer_account(rt_trainer *t, const rtp_pending *p, double loss, int correct);

/* Forward, loss and backward of samples [off, off + n) of the staged batch (host path),
 * part of total samples (rt_model_backward_part); *loss is their mean loss, *correct
 * counts their right predictions. */
RT_MUST_USE rt_status rtp_host_grads(rt_trainer *t, int off, int n, int total, double *loss,
                                     int *correct, rt_error *err);

/* Should this process stop before the next step (time limit, should_stop)? */
rt_step_event rtp_trainer_local_stop(const rt_trainer *t);

/* rt_trainer_dist.c: the host path's step over the ranks of cfg.dist */
RT_MUST_USE rt_status rtp_dist_begin(rt_trainer *t, rt_error *err);
/* Computes this rank's share of the staged batch of count samples, averages the
 * gradients over the ranks and returns the whole batch's mean loss and right
 * predictions. Each rank's wish to stop before the next step (rtp_trainer_local_stop)
 * goes with the statistics; the strongest goes to t->dist_stop on every rank. */
RT_MUST_USE rt_status rtp_dist_grads(rt_trainer *t, int count, double *loss, int *correct,
                                     rt_error *err);
/* This rank's share [lo, lo + n) of a staged batch of count samples. */
void rtp_dist_share(const rt_trainer *t, int count, int *lo, int *n);
/* The exchange after this rank's backward: g (P, host) = its share's mean gradient
 * (n samples of count; ignored and zeroed when n is 0), *loss / *correct its share's
 * mean loss and right predictions. On return g is the batch's mean gradient and
 * *loss / *correct the whole batch's; t->dist_stop the ranks' agreed stop. */
RT_MUST_USE rt_status rtp_dist_average(rt_trainer *t, float *g, int n, int count, double *loss,
                                       int *correct, rt_error *err);

/* The statistics exchange's two ends (rtp_dist_average's second half is a host sum of
 * {n x loss, right predictions, votes}; a device world sums them with the gradients,
 * rt_dist_stats): this rank's votes to stop (interrupted, past the time limit; 0 or 1
 * each), and the ranks' sums applied: the whole batch's loss and right predictions out
 * of count samples, and t->dist_stop agreed. */
void rtp_dist_votes(rt_trainer *t, double votes[2]);
void rtp_dist_agree(rt_trainer *t, const double sums[4], int count, double *loss, int *correct);

/* rt_trainer.c: begin and step of this trainer alone (without its replicas) */
RT_MUST_USE rt_status rtp_trainer_begin_own(rt_trainer *t, rt_error *err);
RT_MUST_USE rt_status rtp_trainer_step_own(rt_trainer *t, rt_step_event *ev, rt_error *err);

/* rt_trainer_replicas.c: several devices in this process (cfg.nreplicas > 0) */
RT_MUST_USE rt_status rtp_rep_create(rt_trainer **out, rt_model *m, const rt_dataset *train,
                                     const rt_trainer_config *cfg, rt_error *err);
void rtp_rep_destroy(rt_trainer *t);
/* Rank 0's epoch-level state (rt_watch_state) to every replica: they stop and scale
 * the lr with it. */
void rtp_rep_set_watch(rt_trainer *t);
/* rt_trainer_set_lr's base rate to every replica. */
void rtp_rep_set_lr(rt_trainer *t, double lr);
/* begin (ev NULL) or step on every device at once, each in its own thread */
RT_MUST_USE rt_status rtp_rep_run(rt_trainer *t, rt_step_event *ev, rt_error *err);

/* A view of floats [off, off + n) of a flat (P,1,1,1) tensor. */
rt_tensor rtp_flat_view(const rt_tensor *flat, size_t off, size_t n);

/* rt_trainer_device.c */
RT_MUST_USE rt_status rtp_dev_create(rt_trainer *t, rt_error *err);
void rtp_dev_destroy(rt_trainer *t);
RT_MUST_USE rt_status rtp_dev_step(rt_trainer *t, double lr, int *epoch_end, rt_error *err);
RT_MUST_USE rt_status rtp_dev_flush(rt_trainer *t, rt_error *err);

#endif
