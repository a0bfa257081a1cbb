/* rt_dist.h - data-parallel ranks: who this process is in a launch, and the
 * collectives the trainer needs (a sum all-reduce, a broadcast), over MPI.
 *
 * Two kinds of world: the processes of a launch, over MPI (below), and the devices of
 * one process, one thread each (rt_dist_group_create, further down).
 *
 * A launch is described by the launcher's variables (rt_dist_env_read): OpenMPI's
 * OMPI_COMM_WORLD_*, PMI_RANK/PMI_SIZE (MPICH, Intel MPI, Slurm's PMI), SLURM_PROCID/
 * SLURM_NTASKS/SLURM_LOCALID (srun), or torchrun's RANK/WORLD_SIZE/LOCAL_RANK. No
 * variable, or a world of 1, is a single process: nothing below opens MPI then.
 *
 * The world (rt_dist_world) is the process's MPI_COMM_WORLD, opened on first use:
 * libmpi is dlopen'ed (runtime/dist/rt_dist_mpi.c says why) and MPI_Init'ed once per process
 * (MPI allows no second MPI_Init, so the world is a process-wide object, like the
 * dlopen'ed tables of rt_dl.h). torchrun-style variables alone (no MPI launcher) make a
 * world of GPU ranks over NCCL instead, met once over TCP at MASTER_ADDR:MASTER_PORT
 * (runtime/dist/rt_dist_nccl.c). Every collective waits at most the world's timeout
 * (KILN_DIST_TIMEOUT seconds, default 600, as PyTorch's process groups): a rank that
 * died or hangs makes the others fail with RT_EDEVICE_LOST and a message naming the
 * collective, the step and the timeout, instead of waiting forever. After that the
 * world is broken: every later collective fails at once, and the process does not call
 * MPI_Finalize (which would wait for the dead rank); the launcher ends the job when
 * this process exits.
 */
#ifndef RT_DIST_H
#define RT_DIST_H

#include <stddef.h>

#include "rt_backend.h"
#include "rt_error.h"

typedef struct rt_dist_env {
    int rank, world;    /* 0 <= rank < world; world 1 without a launcher */
    int local_rank;     /* rank on this host (its GPU, its share of the cores) */
    int local_world;    /* ranks on this host (1 when the launcher does not say) */
    const char *source; /* "OpenMPI", "PMI", "Slurm", "torchrun" or "none" */
} rt_dist_env;

/* Reads the launcher's variables (first complete set in the order above). RT_EINVAL
 * naming the variables when they are not integers or rank is outside [0, world). */
RT_MUST_USE rt_status rt_dist_env_read(rt_dist_env *out, rt_error *err);
/* 1 when this process writes the run's files (checkpoints, results, the output
 * notebook): rank 0, or no launch. Unreadable variables count as rank 0, so a broken
 * launch still keeps its files (the training that follows reports the error). */
int rt_dist_is_writer(void);

typedef struct rt_dist rt_dist;

/* The world of this launch, opened on first call (MPI_Init, or nothing yet for a launch
 * without MPI: its ranks meet when training starts). *out = NULL when the launch is a
 * single process. RT_ENODEV when the launch has several ranks and libmpi cannot be
 * loaded (naming the file and the package), RT_EINVAL when MPI's world does not match
 * the launcher's variables, or torchrun-style variables lack MASTER_ADDR/MASTER_PORT.
 * The world is never closed by the caller (see the top). */
RT_MUST_USE rt_status rt_dist_world(rt_dist **out, rt_error *err);

int rt_dist_rank(const rt_dist *d);
int rt_dist_size(const rt_dist *d);
int rt_dist_local_rank(const rt_dist *d);
int rt_dist_local_size(const rt_dist *d);
/* Seconds a collective may wait (KILN_DIST_TIMEOUT). */
double rt_dist_timeout(const rt_dist *d);

/* In-place sums over all ranks: buf (n) ends the same on every rank. `what` and `step`
 * name the collective in the timeout's message. RT_EDEVICE_LOST on timeout or a
 * broken world. */
RT_MUST_USE rt_status rt_dist_allreduce_f32(rt_dist *d, float *buf, size_t n, const char *what,
                                            long long step, rt_error *err);
RT_MUST_USE rt_status rt_dist_allreduce_f64(rt_dist *d, double *buf, size_t n, const char *what,
                                            long long step, rt_error *err);
/* In place, max over all ranks. */
RT_MUST_USE rt_status rt_dist_allmax_f64(rt_dist *d, double *buf, size_t n, const char *what,
                                         long long step, rt_error *err);
/* buf (n) of rank 0 copied to every rank. */
RT_MUST_USE rt_status rt_dist_bcast_f32(rt_dist *d, float *buf, size_t n, const char *what,
                                        long long step, rt_error *err);

/* At the start of a run, on every rank (a collective): *on = 1 when the ranks will sum
 * the gradients of b in device memory (rt_dist_allreduce_dev_f32) - CUDA devices over
 * NCCL: the devices of a group (rt_dist_group_create), or the GPU ranks of a launch
 * when every rank's backend is CUDA and loads NCCL (rank 0 makes NCCL's id and MPI
 * hands it to the others; the communicator is made here and kept for the process).
 * Otherwise *on = 0 and the gradients go through host memory. A launch without MPI
 * meets here (RT_EINVAL on every rank when one cannot join NCCL: a CPU rank). */
RT_MUST_USE rt_status rt_dist_device_begin(rt_dist *d, rt_backend *b, int *on, rt_error *err);
/* A step's statistics, summed over the ranks with a device all-reduce and under its one
 * host wait (the collectives of one NCCL group). In: this rank's statistics row (b's
 * memory, xent_stats's row: the share's mean loss and right predictions; NULL when the
 * rank has no samples), its sample count n and two votes (0 or 1). Out, combined in
 * rank order (the same bits on every rank): {the sum of n_r x loss_r, right
 * predictions, votes[0], votes[1]}. */
typedef struct rt_dist_stats {
    const rt_tensor *row;
    int n;
    double votes[2];
    double sums[4];
} rt_dist_stats;
/* buf (b's memory) = the sum over the ranks of scale_r x buf_r, and stats (NULL: none)
 * summed, waited for at most the world's timeout. */
RT_MUST_USE rt_status rt_dist_allreduce_dev_f32(rt_dist *d, rt_backend *b, rt_tensor *buf,
                                                float scale, rt_dist_stats *stats, const char *what,
                                                long long step, rt_error *err);

/* ---- the devices of one process (rt_dist_group.c) ----
 * A group is a world of n ranks inside this process, one per backend and one host
 * thread each (%train --device cuda:0,1): rank r trains on b[r]. The host collectives
 * meet in shared memory (a barrier with the world's timeout); when every backend is a
 * CUDA device and NCCL loads, gradients are all-reduced in device memory by NCCL (one
 * communicator a device, ncclCommInitAll), else through host memory, said once on
 * stderr. The backends must outlive the group. */
typedef struct rt_dist_group rt_dist_group;
RT_MUST_USE rt_status rt_dist_group_create(rt_dist_group **out, rt_backend *const *b, int n,
                                           rt_error *err);
/* Rank r's world (0 <= r < n), owned by the group. */
rt_dist *rt_dist_group_rank(rt_dist_group *g, int r);
/* A rank that failed outside a collective: every wait of the others ends at once with
 * an error, and so does every later collective. */
void rt_dist_group_abort(rt_dist_group *g);
void rt_dist_group_destroy(rt_dist_group *g);

/* End of the process (kiln run): ok = 1 finalises MPI (every rank leaves together);
 * ok = 0 leaves without MPI_Finalize so the launcher stops the other ranks at once
 * rather than after their timeout. Nothing when the world was never opened. */
void rt_dist_finish(int ok);

#endif
