/* rt_nccl.h - NCCL for the runtime's worlds of ranks (runtime/dist/rt_dist_group.c,
 * runtime/dist/rt_dist_mpi.c, runtime/dist/rt_dist_nccl.c): not part of the public header rt.h. Implemented in
 * runtime/cuda/cuda_nccl.c, or rt_cuda_stub.c without CUDA (RT_ENODEV everywhere).
 */
#ifndef RT_NCCL_H
#define RT_NCCL_H

#include "rt_backend.h"

/* Gradients summed between CUDA devices.
 * libnccl.so.2 is dlopen'ed on the first rt_nccl_create (runtime/cuda/nccl_dl.c says
 * from where). One communicator per backend (ncclCommInitAll), each with a stream of its
 * own for the collective. */
typedef struct rt_nccl rt_nccl;
/* b[0..n): opened CUDA backends on n distinct devices. RT_ENODEV when NCCL cannot be
 * loaded (naming the file and the package) or this Kiln has no CUDA; RT_EINVAL when a
 * backend is not CUDA or two share a device. */
RT_MUST_USE rt_status rt_nccl_create(rt_nccl **out, rt_backend *const *b, int n, rt_error *err);
/* What a step's all-reduce brings back besides the sum: every rank's few numbers,
 * gathered by collectives in the same NCCL group as the sum, so that the host's one wait
 * covers them (rank r's slot is zero on every other rank, and a sum of one number and
 * zeros is that number, bit for bit). */
#define RT_NCCL_TALLY 4
typedef struct rt_nccl_tally {
    /* in: b's memory, a statistics row (RT_STEP_STATS floats: the mean loss as a double
     * in words 0-1, the right predictions in word 2); NULL: this rank has none (0, 0) */
    const void *row;
    double mine[RT_NCCL_TALLY - 1]; /* in: this rank's host numbers */
    double *ranks; /* out (nranks x RT_NCCL_TALLY): rank r's {row's loss, its mine} */
    double right;  /* out: the rows' right predictions summed over the ranks */
} rt_nccl_tally;
/* Rank r's share of one all-reduce, called by every rank (each from its own thread):
 * buf (b's memory) = sum over the ranks of scale_r x buf_r. Waits for the work queued on
 * b's stream, sums on the communicator's stream, and b's later work waits for the sum
 * (an event). The host then waits for the sum, at most timeout_s seconds: a rank or
 * device that never joins, an error NCCL reports, or rt_nccl_cancel aborts the
 * communicator (ncclCommAbort) and fails with RT_EDEVICE_LOST naming the device; the
 * communicator is unusable after that. tally (NULL: none) is gathered in the same
 * group and comes back with the same wait. */
RT_MUST_USE rt_status rt_nccl_allreduce(rt_nccl *c, int r, rt_backend *b, rt_tensor *buf,
                                        float scale, double timeout_s, rt_nccl_tally *tally,
                                        rt_error *err);
/* From any thread: every wait of c ends (aborting its communicator) with an error
 * saying another device failed. */
void rt_nccl_cancel(rt_nccl *c);
void rt_nccl_destroy(rt_nccl *c);

/* Processes with one device each (GPU ranks of a launch): rank 0 makes the id, the
 * launch hands it to every rank (over MPI, or the TCP meeting of rt_dist_meet.h), each
 * joins with its device. */
#define RT_NCCL_ID_BYTES 128
/* 1 when NCCL can be loaded (loads it); err (may be NULL) says why not. */
int rt_nccl_available(rt_error *err);
RT_MUST_USE rt_status rt_nccl_unique_id(unsigned char id[RT_NCCL_ID_BYTES], rt_error *err);
/* A communicator of one device (b) as rank `rank` of `nranks` (every rank must call it
 * with the same id): rt_nccl_allreduce with r = 0 sums over them. The join waits at most
 * timeout_s for the other ranks (NCCL 2.14+; an older NCCL joins with the blocking
 * ncclCommInitRank, said on stderr): RT_EDEVICE_LOST naming this rank when one never
 * joins (it died after the ranks met). */
RT_MUST_USE rt_status rt_nccl_create_rank(rt_nccl **out, rt_backend *b,
                                          const unsigned char id[RT_NCCL_ID_BYTES], int rank,
                                          int nranks, double timeout_s, rt_error *err);
/* The device b of c (a communicator of one device, rt_nccl_create_rank). */
int rt_nccl_device(const rt_nccl *c);
/* A later run's backend b on c's device (the communicator outlives the run that made it):
 * c's scratch memory for rt_nccl_host is b's from now on. Nothing when b is on another
 * device. */
void rt_nccl_bind(rt_nccl *c, rt_backend *b);
/* A collective on host memory over such a communicator, for ranks that have no other
 * way to meet (a launch without MPI): buf (n elements) goes to the device, NCCL
 * combines it, and the result comes back, waited for as rt_nccl_allreduce's sum. */
typedef enum {
    RT_NCCL_HOST_SUM_F32,
    RT_NCCL_HOST_SUM_F64,
    RT_NCCL_HOST_MAX_F64,
    RT_NCCL_HOST_BCAST_F32 /* rank 0's buf to every rank */
} rt_nccl_host_op;
RT_MUST_USE rt_status rt_nccl_host(rt_nccl *c, void *buf, size_t n, rt_nccl_host_op op,
                                   double timeout_s, rt_error *err);

#endif
