/* rt_dist_nccl.c - the GPU ranks of a launch without MPI (rt_dist.h): torchrun-style
 * variables (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) and no MPI
 * launcher. Kiln builds no transport of its own: the ranks meet over TCP once
 * (rt_dist_meet.h) for rank 0 to hand out NCCL's unique id, then every exchange goes
 * through NCCL - the gradients in device memory with each step's loss, accuracy and stop
 * votes in the same group (rt_dist_stats: one wait a step), and the few host
 * collectives (the start-of-run check, rank 0's parameters) through a small device
 * buffer (rt_nccl_host). Every wait ends within the world's timeout.
 *
 * So such a launch trains GPU ranks only: NCCL needs a CUDA device on every rank. A CPU
 * rank, a rank without NCCL, or a host collective before the ranks met (the CPU
 * trainer starts with one) is refused with the same hint on every rank: launch with
 * mpirun, whose MPI averages CPU ranks' gradients.
 *
 * The communicator is made at the first run that trains (rt_dist_device_begin) and kept
 * for the process, like MPI's world: a later %train in the same notebook uses it again
 * and must train on the same device.
 *
 * The meeting's port (meet_port): KILN_DIST_PORT when set; else, under torchrun (its
 * agent sets TORCHELASTIC_RUN_ID), MASTER_PORT + 1, because the agent on the first node
 * already listens on MASTER_PORT with its own store (c10d's TCPStore, whose protocol is
 * PyTorch's internal one, not Kiln's to speak); else MASTER_PORT. MASTER_ADDR is the
 * agent's host there, and global rank 0 runs beside it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_dist_internal.h"
#include "rt_dist_meet.h"
#include "rt_nccl.h"

/* The ranks reach their first %train at different times (each runs the notebook's
 * cells before it, loads its data): the meeting waits at least this long, whatever a
 * short KILN_DIST_TIMEOUT says for the collectives. */
#define MEET_MIN_S 60.0

static rt_dist world;
static rt_nccl *comm; /* made by the first rt_dist_device_begin */

static rt_status broken(rt_dist *d, rt_status s)
{
    if (s != RT_OK) d->broken = 1;
    return s;
}

static rt_status nc_host(rt_dist *d, void *buf, size_t n, rtp_dist_op op, const char *what,
                         long long step, rt_error *err)
{
    if (!comm)
        return RT_ERR(err, RT_EINVAL,
                      "rank %d of %d: %s: this launch has no MPI (torchrun-style RANK, "
                      "WORLD_SIZE, MASTER_ADDR), so its ranks exchange through NCCL, which "
                      "only GPU ranks have ---> HINT: train with --device cuda on every rank, "
                      "or launch CPU ranks with mpirun -np %d kiln run ... (OpenMPI averages "
                      "their gradients)",
                      d->rank, d->size, what, d->size);
    const rt_nccl_host_op k = op == RTP_SUM_F32   ? RT_NCCL_HOST_SUM_F32
                              : op == RTP_SUM_F64 ? RT_NCCL_HOST_SUM_F64
                              : op == RTP_MAX_F64 ? RT_NCCL_HOST_MAX_F64
                                                  : RT_NCCL_HOST_BCAST_F32;
    rt_error e = {0};
    if (rt_nccl_host(comm, buf, n, k, d->timeout_s, &e) == RT_OK) return RT_OK;
    return broken(d, RT_ERR(err, e.code, "rank %d of %d: %s of step %lld: %s", d->rank, d->size,
                            what, step, e.msg));
}

/* Where the ranks meet (the top): the port as text into buf, *var names where it came
 * from for messages. A MASTER_PORT that is not a port is passed on as it is, for the
 * meeting to refuse naming it. */
static const char *meet_port(char *buf, size_t cap, const char **var)
{
    const char *own = getenv("KILN_DIST_PORT"), *master = getenv("MASTER_PORT");
    const char *agent = getenv("TORCHELASTIC_RUN_ID");
    if (own && *own) {
        *var = "KILN_DIST_PORT";
        return own;
    }
    *var = "MASTER_PORT";
    char *end;
    long p = master && *master ? strtol(master, &end, 10) : 0;
    if (!agent || !*agent || !master || !*master || *end || p < 1 || p > 65535) return master;
    *var = "MASTER_PORT + 1: torchrun's agent holds MASTER_PORT";
    snprintf(buf, cap, "%ld", p + 1);
    return buf;
}

static rt_status make_id(unsigned char blob[RT_DIST_MEET_BLOB], rt_error *err)
{
    return rt_nccl_unique_id(blob, err);
}

/* The first run: the ranks meet (each saying whether it can join NCCL), rank 0's id
 * reaches all, each joins. Later runs: the same device on every rank, checked over
 * NCCL. */
static rt_status nc_device_begin(rt_dist *d, rt_backend *b, int *on, rt_error *err)
{
    const int cuda = !strcmp(b->ops->name, "cuda");
    if (comm) {
        rt_nccl_bind(comm, b); /* this run's backend, when on the communicator's device */
        double same = cuda && b->device == rt_nccl_device(comm);
        RT_TRY(nc_host(d, &same, 1, RTP_SUM_F64, "device check", 0, err));
        if (same != (double)d->size)
            return broken(d, RT_ERR(err, RT_EINVAL,
                                    "rank %d of %d: every run of this launch must train on "
                                    "the GPU its first run used (cuda:%d here): NCCL's "
                                    "communicator is made once ---> HINT: keep --device the "
                                    "same for every %%train of the notebook",
                                    d->rank, d->size, rt_nccl_device(comm)));
        *on = 1;
        return RT_OK;
    }
    rt_error ne = {0};
    char why[64] = "";
    const int can = cuda && rt_nccl_available(&ne);
    if (!cuda) snprintf(why, sizeof why, "it trains on %s", b->ops->name);
    else if (!can) snprintf(why, sizeof why, "NCCL does not load");
    if (!can && cuda) fprintf(stderr, "kiln: rank %d: %s\n", d->rank, ne.msg);
    char buf[16];
    const char *var, *port = meet_port(buf, sizeof buf, &var);
    const rt_dist_meet m = {.addr = getenv("MASTER_ADDR"),
                            .port = port,
                            .port_var = var,
                            .rank = d->rank,
                            .world = d->size,
                            .timeout_s = d->timeout_s > MEET_MIN_S ? d->timeout_s : MEET_MIN_S,
                            .can = can,
                            .why_not = why,
                            .token = getenv("KILN_DIST_TOKEN")};
    unsigned char id[RT_DIST_MEET_BLOB];
    RT_TRY(broken(d, rt_dist_meet_run(&m, make_id, id, err)));
    RT_TRY(broken(d, rt_nccl_create_rank(&comm, b, id, d->rank, d->size, d->timeout_s, err)));
    *on = 1;
    return RT_OK;
}

static rt_status nc_device(rt_dist *d, rt_backend *b, rt_tensor *buf, float scale,
                           rt_nccl_tally *tally, const char *what, long long step, rt_error *err)
{
    rt_error e = {0};
    if (rt_nccl_allreduce(comm, 0, b, buf, scale, d->timeout_s, tally, &e) == RT_OK) return RT_OK;
    return RT_ERR(err, e.code, "rank %d of %d: %s of step %lld: %s", d->rank, d->size, what, step,
                  e.msg);
}

static const rtp_dist_ops nccl_ops = {
    .host = nc_host, .device_begin = nc_device_begin, .device = nc_device};

rt_status rtp_dist_nccl_open(const rt_dist_env *env, rt_dist **out, rt_error *err)
{
    const char *addr = getenv("MASTER_ADDR"), *port = getenv("MASTER_PORT");
    const char *own = getenv("KILN_DIST_PORT");
    if (!addr || !*addr || ((!port || !*port) && (!own || !*own)))
        return RT_ERR(err, RT_EINVAL,
                      "RANK=%d and WORLD_SIZE=%d say this process is one rank of a launch, "
                      "but MASTER_ADDR or MASTER_PORT is not set (nor KILN_DIST_PORT): the "
                      "ranks cannot meet ---> HINT: set MASTER_ADDR (rank 0's host) and "
                      "MASTER_PORT (a free port) for every rank as torchrun does, or "
                      "KILN_DIST_PORT for the ranks' own meeting port, or launch with mpirun",
                      env->rank, env->world);
    world = (rt_dist){.ops = &nccl_ops,
                      .rank = env->rank,
                      .size = env->world,
                      .local_rank = env->local_rank,
                      .local_size = env->local_world,
                      .timeout_s = rtp_dist_timeout_env()};
    *out = &world;
    return RT_OK;
}
