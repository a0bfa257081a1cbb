/* cuda_nccl.c - the gradient all-reduce between CUDA devices (runtime/rt_nccl.h): the
 * devices of one process (runtime/dist/rt_dist_group.c) or the GPU ranks of a launch
 * (runtime/dist/rt_dist_mpi.c, runtime/dist/rt_dist_nccl.c), and the few host collectives of a
 * launch without MPI (rt_nccl_host).
 *
 * One communicator per device from ncclCommInitAll (the devices of one process), or one
 * from ncclCommInitRankConfig (a process's device among the ranks of a launch, which
 * share the id rank 0 made: MPI hands it over, or the ranks' TCP meeting, rt_dist_meet.h).
 *
 * A rank of a launch joins without blocking (NCCL 2.14+: config.blocking = 0) and polls
 * ncclCommGetAsyncError until the communicator is ready, at most the world's timeout: a
 * rank that died after the ranks met never joins, and NCCL's blocking init would wait
 * for it forever. On the timeout the join is aborted (ncclCommAbort) and the error names
 * this rank. Such a nonblocking communicator may answer any later call with
 * ncclInProgress (its work is still being launched): ncclGroupEnd is settled the same
 * way before anything else goes on the stream. An older NCCL (no
 * ncclCommInitRankConfig) joins with the blocking ncclCommInitRank, said on stderr.
 * ncclCommInitAll needs no deadline: every device of its clique is this process's, in
 * the one call, so there is no peer to wait for.
 * Per device a stream of its own
 * for the collective with two events: `ready`, recorded on the backend's stream after
 * the backward, which the collective's stream waits for; `summed`, recorded after the
 * collective, which the backend's stream waits for before the optimiser.
 *
 * The host then waits for `summed`, polling it with ncclCommGetAsyncError until the
 * world's timeout (KILN_DIST_TIMEOUT): NCCL itself waits forever for a rank that never
 * joins, so a hung or dead peer would otherwise hang this process at its next
 * synchronisation. On a timeout, an error NCCL reports, or rt_nccl_cancel (another
 * device of the group failed) the communicator is aborted (ncclCommAbort ends its
 * kernels) and the call fails naming the device. This is the step's one host wait on
 * a device: the step's statistics come back with it (rt_nccl_tally). Before `ready`,
 * on the backend's stream, the rank's slot of a small device buffer is filled (its host
 * numbers uploaded from pinned memory, the statistics row's loss copied in on the
 * device) with every other slot zero; the group then sums the gradients, that buffer
 * (f64: a gather, each slot summed with zeros) and the right predictions (f32), and
 * the buffer comes back into the pinned memory on the collective's stream before
 * `summed`. So ranks of a launch exchange loss, accuracy and stop votes with no second
 * collective and no second wait.
 *
 * The weighted sum (each rank's mean gradient times its share of the batch, so uneven
 * shares of a last batch still give the batch's mean) is one collective: a
 * ncclRedOpCreatePreMulSum op with the rank's scale as a host value, made again only
 * when the scale changes (every step has the same shares but the last of an epoch).
 * Every call is one ncclGroupStart/End: a group is what NCCL needs when one thread
 * drives several communicators, and costs nothing with one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../rt_nccl.h"
#include "cuda_internal.h"
#include "nccl_dl.h"
#include "rt_clock.h"

typedef struct nccl_rank {
    rtp_nccl_comm_t comm;
    rt_backend *b; /* the device's backend: scratch is its memory (rt_nccl_bind) */
    cudaStream_t stream;
    cudaEvent_t ready, summed;
    rtp_nccl_redop op; /* the pre-multiplied sum for scale; valid when has_op */
    float scale;
    int has_op;
    int device;
    int aborted;   /* ncclCommAbort'ed: comm is gone */
    void *scratch; /* b's memory for host collectives (rt_nccl_host) */
    size_t scratch_bytes;
    void *tally;  /* b's memory: the tally's slots (nranks x RT_NCCL_TALLY f64), then the
                  * right predictions (f32) */
    void *pinned; /* host memory the tally goes up from and comes back to */
    size_t tally_bytes;
} nccl_rank;

struct rt_nccl {
    int n;
    int rank, nranks; /* of the world (n = 1 for a rank of a launch) */
    int nonblocking;  /* joined with ncclCommInitRankConfig, blocking = 0 */
    const rtp_nccl_fns *f;
    nccl_rank *r;  /* (n) */
    int cancelled; /* rt_nccl_cancel: atomic */
};

/* A nonblocking communicator may answer a call with ncclInProgress: NCCL finishes it in
 * the background. Polls NCCL's state until it is no longer in progress, spinning
 * briefly and then sleeping in growing steps up to 1 ms, at most timeout_s: the
 * answer is then still ncclInProgress. Any other rc is returned as it is. */
static rtp_nccl_result settle(const rtp_nccl_fns *f, rtp_nccl_comm_t comm, rtp_nccl_result rc,
                              double timeout_s)
{
    const double t0 = rt_clock_s();
    long sleep_ns = 1000;
    for (int spins = 0; rc == RTP_NCCL_IN_PROGRESS; spins++) {
        rtp_nccl_result state = RTP_NCCL_IN_PROGRESS;
        rc = f->CommGetAsyncError(comm, &state);
        if (rc != RTP_NCCL_SUCCESS) return rc;
        rc = state;
        if (rc != RTP_NCCL_IN_PROGRESS || spins < 100) continue;
        if (rt_clock_s() - t0 > timeout_s) break;
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
        if (sleep_ns < 1000000) sleep_ns *= 2;
    }
    return rc;
}

static rt_status nccl_fail(const rt_nccl *c, rtp_nccl_result rc, const char *call, int r,
                           rt_error *err)
{
    return RT_ERR(err, RT_EDEVICE, "NCCL %s failed on device %d of %d: %s (%d)", call, r, c->n,
                  c->f->GetErrorString ? c->f->GetErrorString(rc) : "?", rc);
}

#define NCCL_TRY(c, r, call, err)                                                   \
    do {                                                                            \
        rtp_nccl_result rc_ = (call);                                               \
        if (rc_ != RTP_NCCL_SUCCESS) return nccl_fail((c), rc_, #call, (r), (err)); \
    } while (0)

/* This process's device (cuda:device, current) joins the launch's communicator as rank
 * c->rank: without blocking when NCCL can, waited for at most timeout_s (the top). */
static rt_status join(rt_nccl *c, rtp_nccl_comm_t *comm, const rtp_nccl_id *id, int device,
                      double timeout_s, rt_error *err)
{
    const rtp_nccl_fns *f = c->f;
    *comm = NULL;
    if (!f->CommInitRankConfig) {
        int v = 0;
        if (f->GetVersion(&v) != RTP_NCCL_SUCCESS) v = 0;
        fprintf(stderr,
                "kiln: rank %d of %d: NCCL %d.%d.%d has no ncclCommInitRankConfig (NCCL 2.14 "
                "and newer), so this rank joins with the blocking ncclCommInitRank, which "
                "waits without a time limit if another rank dies now ---> HINT: a newer NCCL "
                "(pip install -U nvidia-nccl-cu12, or libnccl2) bounds the wait by "
                "KILN_DIST_TIMEOUT\n",
                c->rank, c->nranks, v / 10000, v / 100 % 100, v % 100);
        rtp_nccl_result rc = f->CommInitRank(comm, c->nranks, *id, c->rank);
        return rc == RTP_NCCL_SUCCESS ? RT_OK : nccl_fail(c, rc, "ncclCommInitRank", 0, err);
    }
    rtp_nccl_config cfg = rtp_nccl_config_make(0);
    rtp_nccl_result rc = f->CommInitRankConfig(comm, c->nranks, *id, c->rank, &cfg);
    c->nonblocking = 1;
    if (rc == RTP_NCCL_SUCCESS || rc == RTP_NCCL_IN_PROGRESS)
        rc = settle(f, *comm, RTP_NCCL_IN_PROGRESS, timeout_s);
    if (rc == RTP_NCCL_SUCCESS) return RT_OK;
    if (*comm) (void)f->CommAbort(*comm); /* ends the join: nothing waits for the peers */
    *comm = NULL;
    (void)cudaGetLastError();
    if (rc != RTP_NCCL_IN_PROGRESS) return nccl_fail(c, rc, "ncclCommInitRankConfig", 0, err);
    return RT_ERR(err, RT_EDEVICE_LOST,
                  "rank %d of %d (cuda:%d): the other ranks did not join NCCL's communicator "
                  "within %g s (KILN_DIST_TIMEOUT): a rank died or hangs after the ranks met; "
                  "the join was aborted ---> HINT: the newest checkpoint is intact: run the "
                  "same launch again to resume",
                  c->rank, c->nranks, device, timeout_s);
}

/* n local devices b[0..n): all of one clique (id NULL, ncclCommInitAll), or this
 * process's one device as rank `rank` of nranks (n = 1, id: join). */
static rt_status make(rt_nccl **out, rt_backend *const *b, int n, const unsigned char *id, int rank,
                      int nranks, double timeout_s, rt_error *err)
{
    *out = NULL;
    int *dev = calloc((size_t)n, sizeof *dev);
    if (!dev) return RT_ERR(err, RT_ENOMEM, "out of memory creating the NCCL communicators");
    for (int i = 0; i < n; i++) {
        if (strcmp(b[i]->ops->name, "cuda") || !b[i]->impl) {
            free(dev);
            return RT_ERR(err, RT_EINVAL,
                          "NCCL sums between CUDA devices; device %d of the "
                          "group is %s",
                          i, b[i]->ops->name);
        }
        const int d = dev[i] = rtp_cuda_of(b[i])->device;
        for (int j = 0; j < i; j++)
            if (dev[j] == d) {
                free(dev);
                return RT_ERR(err, RT_EINVAL, "cuda:%d is named twice in the device list", d);
            }
    }
    const rtp_nccl_fns *f;
    rt_status s = rtp_nccl_load(&f, err);
    rt_nccl *c = s == RT_OK ? calloc(1, sizeof *c) : NULL;
    if (s == RT_OK && (!c || !(c->r = calloc((size_t)n, sizeof *c->r)))) {
        free(c);
        c = NULL;
        s = RT_ERR(err, RT_ENOMEM, "out of memory creating the NCCL communicators");
    }
    if (s != RT_OK) {
        free(dev);
        return s;
    }
    c->n = n;
    c->rank = id ? rank : 0;
    c->nranks = nranks;
    c->f = f;
    rtp_nccl_comm_t *comms = calloc((size_t)n, sizeof *comms);
    rtp_nccl_result rc = RTP_NCCL_SUCCESS;
    if (comms && id) {
        rtp_nccl_id nid;
        memcpy(nid.internal, id, sizeof nid.internal);
        cudaError_t e = cudaSetDevice(dev[0]); /* the communicator's device */
        s = e == cudaSuccess
                ? join(c, &comms[0], &nid, dev[0], timeout_s, err)
                : RT_ERR(err, RT_EDEVICE, "cuda:%d: %s", dev[0], cudaGetErrorString(e));
    } else if (comms) {
        rc = f->CommInitAll(comms, n, dev);
    }
    if (!comms) s = RT_ERR(err, RT_ENOMEM, "out of memory creating the NCCL communicators");
    else if (s == RT_OK && rc != RTP_NCCL_SUCCESS) s = nccl_fail(c, rc, "ncclCommInitAll", 0, err);
    for (int i = 0; s == RT_OK && i < n; i++) {
        nccl_rank *r = &c->r[i];
        r->comm = comms[i];
        r->b = b[i];
        r->device = dev[i];
        cudaError_t e = cudaSetDevice(dev[i]);
        if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking);
        if (e == cudaSuccess) e = cudaEventCreateWithFlags(&r->ready, cudaEventDisableTiming);
        if (e == cudaSuccess) e = cudaEventCreateWithFlags(&r->summed, cudaEventDisableTiming);
        if (e != cudaSuccess)
            s = RT_ERR(err, RT_EDEVICE, "preparing NCCL's stream on cuda:%d: %s", dev[i],
                       cudaGetErrorString(e));
    }
    free(comms);
    free(dev);
    if (s != RT_OK) {
        rt_nccl_destroy(c);
        return s;
    }
    *out = c;
    return RT_OK;
}

rt_status rt_nccl_create(rt_nccl **out, rt_backend *const *b, int n, rt_error *err)
{
    return make(out, b, n, NULL, 0, n, 0.0, err);
}

rt_status rt_nccl_create_rank(rt_nccl **out, rt_backend *b,
                              const unsigned char id[RT_NCCL_ID_BYTES], int rank, int nranks,
                              double timeout_s, rt_error *err)
{
    return make(out, &b, 1, id, rank, nranks, timeout_s, err);
}

void rt_nccl_bind(rt_nccl *c, rt_backend *b)
{
    if (c && c->n == 1 && b && !strcmp(b->ops->name, "cuda") && b->impl &&
        rtp_cuda_of(b)->device == c->r[0].device)
        c->r[0].b = b;
}

int rt_nccl_available(rt_error *err)
{
    const rtp_nccl_fns *f;
    return rtp_nccl_load(&f, err) == RT_OK;
}

rt_status rt_nccl_unique_id(unsigned char id[RT_NCCL_ID_BYTES], rt_error *err)
{
    const rtp_nccl_fns *f;
    RT_TRY(rtp_nccl_load(&f, err));
    rtp_nccl_id nid;
    rtp_nccl_result rc = f->GetUniqueId(&nid);
    if (rc != RTP_NCCL_SUCCESS)
        return RT_ERR(err, RT_EDEVICE, "ncclGetUniqueId failed: %s (%d)", f->GetErrorString(rc),
                      rc);
    memcpy(id, nid.internal, RT_NCCL_ID_BYTES);
    return RT_OK;
}

/* rank r of c: "cuda:1 (device 1 of 2)" or "cuda:0 (rank 3 of 4)" */
static const char *who(const rt_nccl *c, int r, char *buf, size_t cap)
{
    snprintf(buf, cap, "cuda:%d (%s %d of %d)", c->r[r].device, c->n > 1 ? "device" : "rank",
             c->n > 1 ? r : c->rank, c->nranks);
    return buf;
}

static rt_status abort_with(rt_nccl *c, int r, rt_error *err, const char *why)
{
    nccl_rank *k = &c->r[r];
    char w[64];
    if (!k->aborted) {
        (void)c->f->CommAbort(k->comm);
        k->aborted = 1;
        k->has_op = 0; /* the ops went with the communicator */
    }
    (void)cudaGetLastError();
    return RT_ERR(err, RT_EDEVICE_LOST,
                  "%s: NCCL's sum did not finish: %s; NCCL was aborted ---> HINT: the newest "
                  "checkpoint is intact: start the training again to resume",
                  who(c, r, w, sizeof w), why);
}

/* The host waits for k->summed: polls it, NCCL's own error report and the cancel flag,
 * spinning briefly, then sleeping in growing steps up to 100 us. */
static rt_status wait_summed(rt_nccl *c, int r, double timeout_s, rt_error *err)
{
    nccl_rank *k = &c->r[r];
    const double t0 = rt_clock_s();
    long sleep_ns = 1000;
    char why[160];
    for (int spins = 0;; spins++) {
        cudaError_t e = cudaEventQuery(k->summed);
        if (e == cudaSuccess) return RT_OK;
        if (e != cudaErrorNotReady) {
            snprintf(why, sizeof why, "%s after %.3g s", cudaGetErrorString(e), rt_clock_s() - t0);
            return abort_with(c, r, err, why);
        }
        rtp_nccl_result async = RTP_NCCL_SUCCESS;
        rtp_nccl_result rc = c->f->CommGetAsyncError(k->comm, &async);
        if (rc == RTP_NCCL_SUCCESS && async != RTP_NCCL_SUCCESS && async != RTP_NCCL_IN_PROGRESS)
            rc = async;
        if (rc != RTP_NCCL_SUCCESS) {
            snprintf(why, sizeof why, "NCCL reports %s (%d) after %.3g s",
                     c->f->GetErrorString ? c->f->GetErrorString(rc) : "?", rc, rt_clock_s() - t0);
            return abort_with(c, r, err, why);
        }
        if (__atomic_load_n(&c->cancelled, __ATOMIC_ACQUIRE))
            return abort_with(c, r, err, "another device of the group failed");
        if (spins < 100) continue;
        const double waited = rt_clock_s() - t0;
        if (waited > timeout_s) {
            snprintf(why, sizeof why,
                     "the other ranks did not join within %g s (KILN_DIST_TIMEOUT): a rank "
                     "or device hangs or died",
                     timeout_s);
            return abort_with(c, r, err, why);
        }
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
        if (sleep_ns < 100000) sleep_ns *= 2;
    }
}

void rt_nccl_cancel(rt_nccl *c)
{
    if (c) __atomic_store_n(&c->cancelled, 1, __ATOMIC_RELEASE);
}

int rt_nccl_device(const rt_nccl *c) { return c ? c->r[0].device : -1; }

static rt_status check_usable(rt_nccl *c, int r, rt_error *err)
{
    char w[64];
    if (!c || r < 0 || r >= c->n) return RT_ERR(err, RT_EINVAL, "no NCCL rank %d", r);
    if (c->r[r].aborted)
        return RT_ERR(err, RT_EDEVICE_LOST,
                      "%s: NCCL was aborted after an earlier failure ---> HINT: start the "
                      "training again to resume from the newest checkpoint",
                      who(c, r, w, sizeof w));
    return RT_OK;
}

/* A collective call's answer: queued (a nonblocking communicator may say ncclInProgress) */
static int queued(rtp_nccl_result rc)
{
    return rc == RTP_NCCL_SUCCESS || rc == RTP_NCCL_IN_PROGRESS;
}

/* Closes the group rank r opened around its collectives (rc: what they answered).
 * On a nonblocking communicator ncclGroupEnd may answer ncclInProgress while NCCL still
 * launches the work (connecting to the peers on first use): nothing may go on the
 * stream before that ends, so it is settled first, at most timeout_s. */
static rt_status group_end(rt_nccl *c, int r, rtp_nccl_result rc, const char *call,
                           double timeout_s, rt_error *err)
{
    rtp_nccl_result end = settle(c->f, c->r[r].comm, c->f->GroupEnd(), timeout_s);
    if (!queued(rc)) return nccl_fail(c, rc, call, r, err);
    if (end == RTP_NCCL_IN_PROGRESS) {
        char why[160];
        snprintf(why, sizeof why,
                 "NCCL was still launching it after %g s (KILN_DIST_TIMEOUT): a rank hangs "
                 "or died",
                 timeout_s);
        return abort_with(c, r, err, why);
    }
    return end == RTP_NCCL_SUCCESS ? RT_OK : nccl_fail(c, end, "ncclGroupEnd", r, err);
}

rt_status rt_nccl_host(rt_nccl *c, void *buf, size_t n, rt_nccl_host_op op, double timeout_s,
                       rt_error *err)
{
    RT_TRY(check_usable(c, 0, err));
    nccl_rank *k = &c->r[0];
    const rtp_nccl_fns *f = c->f;
    const int f64 = op == RT_NCCL_HOST_SUM_F64 || op == RT_NCCL_HOST_MAX_F64;
    const size_t bytes = n * (f64 ? sizeof(double) : sizeof(float));
    char w[64];
    if (n == 0) return RT_OK;
    if (bytes > k->scratch_bytes) { /* the backend's memory, as its tensors */
        rtp_cuda_free(k->b, k->scratch);
        k->scratch = NULL;
        k->scratch_bytes = 0;
        RT_TRY(rtp_cuda_alloc(k->b, &k->scratch, bytes, err));
        k->scratch_bytes = bytes;
    }
    cudaError_t e = cudaSetDevice(k->device);
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(k->scratch, buf, bytes, cudaMemcpyHostToDevice, k->stream);
    if (e != cudaSuccess)
        return RT_ERR(err, RT_EDEVICE, "%s: %s", who(c, 0, w, sizeof w), cudaGetErrorString(e));
    const int dtype = f64 ? RTP_NCCL_FLOAT64 : RTP_NCCL_FLOAT32;
    NCCL_TRY(c, 0, f->GroupStart(), err);
    rtp_nccl_result rc =
        op == RT_NCCL_HOST_BCAST_F32
            ? f->Broadcast(k->scratch, k->scratch, n, dtype, 0, k->comm, k->stream)
            : f->AllReduce(k->scratch, k->scratch, n, dtype,
                           op == RT_NCCL_HOST_MAX_F64 ? RTP_NCCL_MAX : RTP_NCCL_SUM, k->comm,
                           k->stream);
    RT_TRY(group_end(c, 0, rc, "a host collective", timeout_s, err));
    e = cudaEventRecord(k->summed, k->stream);
    if (e != cudaSuccess)
        return RT_ERR(err, RT_EDEVICE, "%s: %s", who(c, 0, w, sizeof w), cudaGetErrorString(e));
    RT_TRY(wait_summed(c, 0, timeout_s, err));
    /* the stream is idle: this copy does not wait for anything */
    e = cudaMemcpyAsync(buf, k->scratch, bytes, cudaMemcpyDeviceToHost, k->stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(k->stream);
    if (e != cudaSuccess)
        return RT_ERR(err, RT_EDEVICE, "%s: %s", who(c, 0, w, sizeof w), cudaGetErrorString(e));
    return RT_OK;
}

/* The tally's bytes: the slots, then the f32 sum padded to 8 bytes */
static size_t tally_bytes(const rt_nccl *c)
{
    return (size_t)c->nranks * RT_NCCL_TALLY * sizeof(double) + sizeof(double);
}

/* Before `ready`, on b's stream: k's tally buffer = zeros but this rank's slot (its host
 * numbers, and the row's loss and right predictions when it has a row). */
static rt_status tally_fill(rt_nccl *c, int r, rt_backend *b, const rt_nccl_tally *t, rt_error *err)
{
    nccl_rank *k = &c->r[r];
    const size_t bytes = tally_bytes(c);
    const int me = c->n > 1 ? r : c->rank; /* its rank in the world */
    if (!k->tally) {
        RT_TRY(rtp_cuda_alloc(b, &k->tally, bytes, err));
        RT_CUDA_TRY(b, err, cudaMallocHost(&k->pinned, bytes));
        k->tally_bytes = bytes;
    }
    double *slot = (double *)k->pinned + (size_t)me * RT_NCCL_TALLY;
    float right = 0.0f;
    memset(k->pinned, 0, bytes);
    memcpy(slot + 1, t->mine, sizeof t->mine);
    memcpy((double *)k->pinned + (size_t)c->nranks * RT_NCCL_TALLY, &right, sizeof right);
    cudaStream_t s = rtp_cuda_of(b)->stream;
    char *dev = k->tally;
    RT_CUDA_TRY(b, err, cudaMemcpyAsync(dev, k->pinned, bytes, cudaMemcpyHostToDevice, s));
    if (!t->row) return RT_OK;
    const char *row = t->row;
    RT_CUDA_TRY(b, err,
                cudaMemcpyAsync(dev + (size_t)me * RT_NCCL_TALLY * sizeof(double), row,
                                sizeof(double), cudaMemcpyDeviceToDevice, s));
    RT_CUDA_TRY(b, err,
                cudaMemcpyAsync(dev + (size_t)c->nranks * RT_NCCL_TALLY * sizeof(double),
                                row + 2 * sizeof(float), sizeof(float), cudaMemcpyDeviceToDevice,
                                s));
    return RT_OK;
}

/* After the wait: the tally out of the pinned copy. */
static void tally_read(const rt_nccl *c, int r, rt_nccl_tally *t)
{
    const nccl_rank *k = &c->r[r];
    const size_t slots = (size_t)c->nranks * RT_NCCL_TALLY;
    float right;
    memcpy(t->ranks, k->pinned, slots * sizeof(double));
    memcpy(&right, (const double *)k->pinned + slots, sizeof right);
    t->right = right;
}

rt_status rt_nccl_allreduce(rt_nccl *c, int r, rt_backend *b, rt_tensor *buf, float scale,
                            double timeout_s, rt_nccl_tally *tally, rt_error *err)
{
    RT_TRY(check_usable(c, r, err));
    RT_TRY(rtp_cuda_enter(b, err));
    c->r[r].b = b;
    if (!buf || !buf->data || rt_tensor_numel(buf) == 0)
        return RT_ERR(err, RT_EINVAL, "all-reduce: an unbound or empty tensor");
    nccl_rank *k = &c->r[r];
    const rtp_nccl_fns *f = c->f;
    cudaStream_t main = rtp_cuda_of(b)->stream;
    if (!k->has_op || k->scale != scale) {
        if (k->has_op)
            NCCL_TRY(c, r, settle(f, k->comm, f->RedOpDestroy(k->op, k->comm), timeout_s), err);
        k->has_op = 0;
        float v = scale;
        NCCL_TRY(c, r,
                 settle(f, k->comm,
                        f->RedOpCreatePreMulSum(&k->op, &v, RTP_NCCL_FLOAT32, RTP_NCCL_SCALAR_HOST,
                                                k->comm),
                        timeout_s),
                 err);
        k->has_op = 1;
        k->scale = scale;
    }
    if (tally) RT_TRY(tally_fill(c, r, b, tally, err));
    RT_CUDA_TRY(b, err, cudaEventRecord(k->ready, main));
    RT_CUDA_TRY(b, err, cudaStreamWaitEvent(k->stream, k->ready, 0));
    NCCL_TRY(c, r, f->GroupStart(), err);
    rtp_nccl_result rc = f->AllReduce(buf->data, buf->data, rt_tensor_numel(buf), RTP_NCCL_FLOAT32,
                                      k->op, k->comm, k->stream);
    const size_t slots = (size_t)c->nranks * RT_NCCL_TALLY;
    void *right = tally ? (double *)k->tally + slots : NULL;
    if (tally && queued(rc))
        rc = f->AllReduce(k->tally, k->tally, slots, RTP_NCCL_FLOAT64, RTP_NCCL_SUM, k->comm,
                          k->stream);
    if (tally && queued(rc))
        rc = f->AllReduce(right, right, 1, RTP_NCCL_FLOAT32, RTP_NCCL_SUM, k->comm, k->stream);
    RT_TRY(group_end(c, r, rc, "ncclAllReduce", timeout_s, err));
    if (tally) /* comes back with the sums: `summed` is recorded after it */
        RT_CUDA_TRY(b, err,
                    cudaMemcpyAsync(k->pinned, k->tally, k->tally_bytes, cudaMemcpyDeviceToHost,
                                    k->stream));
    RT_CUDA_TRY(b, err, cudaEventRecord(k->summed, k->stream));
    RT_CUDA_TRY(b, err, cudaStreamWaitEvent(main, k->summed, 0));
    RT_TRY(wait_summed(c, r, timeout_s, err));
    if (tally) tally_read(c, r, tally);
    return RT_OK;
}

void rt_nccl_destroy(rt_nccl *c)
{
    if (!c) return;
    for (int i = 0; i < c->n; i++) {
        nccl_rank *k = &c->r[i];
        (void)cudaSetDevice(k->device);
        if (k->stream && !k->aborted) (void)cudaStreamSynchronize(k->stream);
        if (k->has_op) (void)c->f->RedOpDestroy(k->op, k->comm);
        /* after a cancel a peer may have aborted: destroying would wait for it; a
         * nonblocking communicator's destroy may answer ncclInProgress, and then there
         * is nothing left to poll: both are aborted */
        if (k->comm && !k->aborted)
            (void)(c->cancelled || c->nonblocking ? c->f->CommAbort(k->comm)
                                                  : c->f->CommDestroy(k->comm));
        rtp_cuda_free(k->b, k->scratch);
        rtp_cuda_free(k->b, k->tally);
        if (k->pinned) (void)cudaFreeHost(k->pinned);
        if (k->ready) (void)cudaEventDestroy(k->ready);
        if (k->summed) (void)cudaEventDestroy(k->summed);
        if (k->stream) (void)cudaStreamDestroy(k->stream);
    }
    (void)cudaGetLastError();
    free(c->r);
    free(c);
}
