/* rt_dist_mpi.c - the rank world over OpenMPI (rt_dist.h): libmpi loaded on first use,
 * MPI_Init once, non-blocking collectives waited for with a deadline.
 *
 * Why dlopen and not a link: libmpi.so.40 brings ten more libraries (open-pal,
 * open-rte, hwloc, libevent, ...) into every process that maps it, the kernel's start
 * included, for a path only launched jobs take. Kiln keeps such libraries out of its
 * start (rt_dl.h), so libmpi is opened here when a launch by mpirun or srun (OpenMPI,
 * PMI or Slurm variables: rt_dist.c chooses) has more than one rank.
 * It is opened RTLD_GLOBAL: OpenMPI's own plugins (mca_*.so) resolve libmpi's symbols
 * from the global scope. The build needs no MPI headers: the handful of entry points
 * and OpenMPI's predefined handles (MPI_COMM_WORLD is the address of
 * ompi_mpi_comm_world, and so on) are declared below, which is OpenMPI's ABI of
 * libmpi.so.40 (OpenMPI 3 to 5). Another MPI is refused by name ("lacks
 * ompi_mpi_comm_world"); KILN_LIBMPI names the file to load.
 *
 * GPU ranks whose every backend is CUDA and loads NCCL sum their gradients on the
 * devices instead (rt_dist_device_begin): rank 0's NCCL id is broadcast over MPI and
 * each rank joins with ncclCommInitRank (runtime/cuda/cuda_nccl.c).
 *
 * Waiting: a collective is started with MPI_Iallreduce/MPI_Ibcast and completed with
 * MPI_Test, spinning briefly and then sleeping in growing steps up to 1 ms (the ranks
 * of one host share its cores: a spinning rank would take the time its peer computes
 * with), until the world's timeout. A timeout marks the world broken (rt_dist.h).
 */
#include "rt_clock.h"
#include "rt_dist_internal.h"
#include "rt_nccl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MPI_OK 0
#define MPI_THREAD_SERIALIZED 2 /* OpenMPI's enum: SINGLE 0, FUNNELED 1, ... */
#define MPI_IN_PLACE_ ((void *)1)
#define MAX_CHUNK (1 << 28) /* MPI counts are int: large buffers go in pieces */

typedef void *mpi_handle; /* MPI_Comm, MPI_Datatype, MPI_Op, MPI_Request, MPI_Errhandler */

static struct {
    int (*initialized)(int *);
    int (*init_thread)(int *, char ***, int, int *);
    int (*finalize)(void);
    int (*comm_rank)(mpi_handle, int *);
    int (*comm_size)(mpi_handle, int *);
    int (*set_errhandler)(mpi_handle, mpi_handle);
    int (*iallreduce)(const void *, void *, int, mpi_handle, mpi_handle, mpi_handle, mpi_handle *);
    int (*ibcast)(void *, int, mpi_handle, int, mpi_handle, mpi_handle *);
    int (*test)(mpi_handle *, int *, void *);
    int (*error_string)(int, char *, int *);
    mpi_handle comm_world, dt_float, dt_double, op_sum, op_max, errors_return;
} mpi;

static rt_status mpi_host(rt_dist *d, void *buf, size_t n, rtp_dist_op op, const char *what,
                          long long step, rt_error *err);
static rt_status mpi_device_begin(rt_dist *d, rt_backend *b, int *on, rt_error *err);
static rt_status mpi_device(rt_dist *d, rt_backend *b, rt_tensor *buf, float scale,
                            rt_nccl_tally *tally, const char *what, long long step, rt_error *err);
static void mpi_finish(rt_dist *d, int ok);
static const rtp_dist_ops mpi_ops = {
    .host = mpi_host, .device_begin = mpi_device_begin, .device = mpi_device, .finish = mpi_finish};
/* GPU ranks: this process's NCCL communicator (one device), made at the first run
 * whose ranks all can, kept for the process */
static rt_nccl *launch_nccl;
static int launch_nccl_device = -1;
static rt_dist world;
static void finish_at_exit(void) { rt_dist_finish(1); }

static const char *libmpi_names[] = {"libmpi.so.40", "libmpi.so"};

static rt_status load_libmpi(rt_error *err)
{
    const char *env = getenv("KILN_LIBMPI");
    const char *first = env && *env ? env : libmpi_names[0];
    void *h = NULL;
    char why[300] = "not found";
    if (env && *env) h = dlopen(env, RTLD_NOW | RTLD_GLOBAL);
    for (size_t i = 0; !h && !(env && *env) && i < 2; i++) {
        h = dlopen(libmpi_names[i], RTLD_NOW | RTLD_GLOBAL);
        if (!h && i == 0) snprintf(why, sizeof why, "%s", dlerror());
    }
    if (!h && env && *env) snprintf(why, sizeof why, "%s", dlerror());
    if (!h)
        return RT_ERR(err, RT_ENODEV,
                      "cannot load MPI (%s%s): %s ---> HINT: install "
                      "OpenMPI (apt install openmpi-bin libopenmpi3); the ranks of a launch "
                      "average their gradients over it",
                      env && *env ? "KILN_LIBMPI=" : "", first, why);
    struct {
        const char *name;
        void **slot;
    } syms[] = {
        {"MPI_Initialized", (void **)&mpi.initialized},
        {"MPI_Init_thread", (void **)&mpi.init_thread},
        {"MPI_Finalize", (void **)&mpi.finalize},
        {"MPI_Comm_rank", (void **)&mpi.comm_rank},
        {"MPI_Comm_size", (void **)&mpi.comm_size},
        {"MPI_Comm_set_errhandler", (void **)&mpi.set_errhandler},
        {"MPI_Iallreduce", (void **)&mpi.iallreduce},
        {"MPI_Ibcast", (void **)&mpi.ibcast},
        {"MPI_Test", (void **)&mpi.test},
        {"MPI_Error_string", (void **)&mpi.error_string},
        {"ompi_mpi_comm_world", &mpi.comm_world},
        {"ompi_mpi_float", &mpi.dt_float},
        {"ompi_mpi_double", &mpi.dt_double},
        {"ompi_mpi_op_sum", &mpi.op_sum},
        {"ompi_mpi_op_max", &mpi.op_max},
        {"ompi_mpi_errors_return", &mpi.errors_return},
    };
    for (size_t i = 0; i < sizeof syms / sizeof *syms; i++)
        if (!(*syms[i].slot = dlsym(h, syms[i].name)))
            return RT_ERR(err, RT_ENODEV,
                          "%s lacks %s: Kiln's ranks need OpenMPI's "
                          "libmpi.so.40 ---> HINT: install OpenMPI (apt install openmpi-bin "
                          "libopenmpi3) or point KILN_LIBMPI at its libmpi.so.40",
                          first, syms[i].name);
    return RT_OK;
}

static const char *mpi_msg(int rc, char *buf, int cap)
{
    int len = 0;
    if (!mpi.error_string || mpi.error_string(rc, buf, &len) != MPI_OK)
        snprintf(buf, (size_t)cap, "MPI error %d", rc);
    return buf;
}

rt_status rtp_dist_mpi_open(const rt_dist_env *env, rt_dist **out, rt_error *err)
{
    RT_TRY(load_libmpi(err));
    int flag = 0, provided = 0, rc, rank = -1, size = -1;
    char buf[256];
    if ((rc = mpi.initialized(&flag)) == MPI_OK && !flag)
        rc = mpi.init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    if (rc == MPI_OK) rc = mpi.set_errhandler(mpi.comm_world, mpi.errors_return);
    if (rc == MPI_OK) rc = mpi.comm_rank(mpi.comm_world, &rank);
    if (rc == MPI_OK) rc = mpi.comm_size(mpi.comm_world, &size);
    if (rc != MPI_OK) return RT_ERR(err, RT_EDEVICE, "MPI_Init failed: %s", mpi_msg(rc, buf, 256));
    if (rank != env->rank || size != env->world)
        return RT_ERR(err, RT_EINVAL,
                      "MPI sees rank %d of %d but the %s variables say rank %d of %d ---> "
                      "HINT: launch the ranks with mpirun or srun",
                      rank, size, env->source, env->rank, env->world);
    world = (rt_dist){.ops = &mpi_ops,
                      .rank = rank,
                      .size = size,
                      .local_rank = env->local_rank,
                      .local_size = env->local_world,
                      .timeout_s = rtp_dist_timeout_env()};
    /* a process that returns from main without rt_dist_finish still leaves cleanly */
    atexit(finish_at_exit);
    *out = &world;
    return RT_OK;
}

/* Completes req by the deadline; a timeout or an MPI error breaks the world. */
static rt_status wait_req(rt_dist *d, mpi_handle *req, const char *what, long long step,
                          rt_error *err)
{
    const double t0 = rt_clock_s();
    long sleep_ns = 1000;
    char buf[256];
    for (int spins = 0;; spins++) {
        int done = 0, rc = mpi.test(req, &done, NULL);
        if (rc != MPI_OK) {
            d->broken = 1;
            return RT_ERR(err, RT_EDEVICE_LOST,
                          "rank %d of %d: %s of step %lld failed: %s "
                          "---> HINT: the run directory's newest checkpoint is intact; run "
                          "the same launch again to resume",
                          d->rank, d->size, what, step, mpi_msg(rc, buf, 256));
        }
        if (done) return RT_OK;
        if (spins < 200) continue;
        if (rt_clock_s() - t0 > d->timeout_s) {
            d->broken = 1;
            return RT_ERR(err, RT_EDEVICE_LOST,
                          "rank %d of %d: the other ranks did not join "
                          "the %s of step %lld within %g s (KILN_DIST_TIMEOUT): a rank died "
                          "or hangs, so this one stops ---> HINT: the run directory's newest "
                          "checkpoint is intact; run the same launch again to resume",
                          d->rank, d->size, what, step, d->timeout_s);
        }
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
        if (sleep_ns < 1000000) sleep_ns *= 2;
    }
}

/* One collective over the world, in pieces of at most MAX_CHUNK elements (MPI counts
 * are int), each started non-blocking and waited for by the deadline. */
static rt_status mpi_host(rt_dist *d, void *buf, size_t n, rtp_dist_op op, const char *what,
                          long long step, rt_error *err)
{
    const int f32 = op == RTP_SUM_F32 || op == RTP_BCAST_F32;
    const size_t elem = f32 ? sizeof(float) : sizeof(double);
    mpi_handle dt = f32 ? mpi.dt_float : mpi.dt_double;
    char msg[256];
    for (size_t off = 0; off < n; off += MAX_CHUNK) {
        int count = (int)(n - off < MAX_CHUNK ? n - off : MAX_CHUNK);
        void *at = (char *)buf + off * elem;
        mpi_handle req = NULL;
        int rc = op == RTP_BCAST_F32 ? mpi.ibcast(at, count, dt, 0, mpi.comm_world, &req)
                                     : mpi.iallreduce(MPI_IN_PLACE_, at, count, dt,
                                                      op == RTP_MAX_F64 ? mpi.op_max : mpi.op_sum,
                                                      mpi.comm_world, &req);
        if (rc != MPI_OK) {
            d->broken = 1;
            return RT_ERR(err, RT_EDEVICE_LOST, "rank %d of %d: %s of step %lld: %s", d->rank,
                          d->size, what, step, mpi_msg(rc, msg, 256));
        }
        RT_TRY(wait_req(d, &req, what, step, err));
    }
    return RT_OK;
}

/* Every rank: can it sum on its device (a CUDA backend, NCCL loads, the communicator
 * absent or on this device)? All must. Then rank 0's NCCL id goes to every rank over
 * MPI (as 32 floats of bits, plus a flag: rank 0 could not make one) and each joins. */
static rt_status mpi_device_begin(rt_dist *d, rt_backend *b, int *on, rt_error *err)
{
    int can = !strcmp(b->ops->name, "cuda") &&
              (launch_nccl ? launch_nccl_device == b->device : rt_nccl_available(NULL));
    double all = can;
    RT_TRY(rt_dist_allreduce_f64(d, &all, 1, "NCCL check", 0, err));
    *on = all == (double)d->size;
    if (*on && launch_nccl) rt_nccl_bind(launch_nccl, b); /* this run's backend */
    if (!*on || launch_nccl) return RT_OK;
    float idf[RT_NCCL_ID_BYTES / sizeof(float) + 1];
    memset(idf, 0, sizeof idf);
    rt_error e0 = {0};
    if (d->rank == 0 && rt_nccl_unique_id((unsigned char *)idf, &e0) != RT_OK)
        idf[RT_NCCL_ID_BYTES / sizeof(float)] = 1.0f;
    RT_TRY(rt_dist_bcast_f32(d, idf, sizeof idf / sizeof *idf, "NCCL id", 0, err));
    if (idf[RT_NCCL_ID_BYTES / sizeof(float)] != 0.0f)
        return RT_ERR(err, RT_EDEVICE, "rank %d of %d: rank 0 could not make NCCL's id%s%s",
                      d->rank, d->size, d->rank == 0 ? ": " : "", d->rank == 0 ? e0.msg : "");
    rt_status s = rt_nccl_create_rank(&launch_nccl, b, (const unsigned char *)idf, d->rank, d->size,
                                      d->timeout_s, err);
    if (s != RT_OK) { /* a rank never joined: MPI_Finalize would wait for it too */
        d->broken = 1;
        return s;
    }
    launch_nccl_device = b->device;
    return RT_OK;
}

static rt_status mpi_device(rt_dist *d, rt_backend *b, rt_tensor *buf, float scale,
                            rt_nccl_tally *tally, const char *what, long long step, rt_error *err)
{
    rt_error e = {0};
    rt_status s = rt_nccl_allreduce(launch_nccl, 0, b, buf, scale, d->timeout_s, tally, &e);
    return s == RT_OK ? RT_OK
                      : RT_ERR(err, s, "rank %d of %d: %s of step %lld: %s", d->rank, d->size, what,
                               step, e.msg);
}

static void mpi_finish(rt_dist *d, int ok)
{
    if (ok) mpi.finalize();
}
