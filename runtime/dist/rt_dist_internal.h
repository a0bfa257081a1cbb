/* rt_dist_internal.h - what a world of ranks is made of (rt_dist.h), shared by the
 * generic part (rt_dist.c) and the three kinds of world: the processes of a launch over
 * MPI (rt_dist_mpi.c), the GPU processes of a launch without MPI, over NCCL
 * (rt_dist_nccl.c), and the devices of one process, one thread each (rt_dist_group.c).
 */
#ifndef RT_DIST_INTERNAL_H
#define RT_DIST_INTERNAL_H

#include "rt_dist.h"
#include "rt_nccl.h"

typedef enum { RTP_SUM_F32, RTP_SUM_F64, RTP_MAX_F64, RTP_BCAST_F32 } rtp_dist_op;

typedef struct rtp_dist_ops {
    /* The collective op on buf (n elements) in host memory, in place, on every rank;
     * waits at most d->timeout_s. */
    rt_status (*host)(rt_dist *d, void *buf, size_t n, rtp_dist_op op, const char *what,
                      long long step, rt_error *err);
    /* rt_dist_device_begin: whether the ranks will sum b's gradients in device memory
     * (agreed by all; the communicator made); NULL: never. */
    rt_status (*device_begin)(rt_dist *d, rt_backend *b, int *on, rt_error *err);
    /* buf (backend memory of b) = the sum over the ranks of scale_r x buf_r, with the
     * tally (NULL: none) gathered under the same wait; NULL when the world exchanges
     * through host memory only. */
    rt_status (*device)(rt_dist *d, rt_backend *b, rt_tensor *buf, float scale,
                        rt_nccl_tally *tally, const char *what, long long step, rt_error *err);
    /* rt_dist_finish of a launch's world (ok: every rank leaves together); NULL: nothing */
    void (*finish)(rt_dist *d, int ok);
} rtp_dist_ops;

struct rt_dist {
    const rtp_dist_ops *ops;
    int rank, size, local_rank, local_size;
    double timeout_s;
    int broken; /* a collective timed out or failed: no more (no finalize) */
    int finished;
    double *tally; /* (size x RT_NCCL_TALLY) every rank's statistics slot of a device
                      collective: made at the first, kept for the next steps */
};

/* A launch's world (env->world > 1), opened once per process by rt_dist_world: over MPI
 * (OpenMPI, PMI, Slurm variables) or, torchrun-style variables alone, over NCCL. */
RT_MUST_USE rt_status rtp_dist_mpi_open(const rt_dist_env *env, rt_dist **out, rt_error *err);
RT_MUST_USE rt_status rtp_dist_nccl_open(const rt_dist_env *env, rt_dist **out, rt_error *err);

/* KILN_DIST_TIMEOUT, or 600 s (PyTorch's process-group default). */
double rtp_dist_timeout_env(void);

#endif
