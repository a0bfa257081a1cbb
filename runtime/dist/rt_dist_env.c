/* rt_dist_env.c - the launcher's variables: rank, world size, local rank (rt_dist.h).
 *
 * Pure environment reading, no MPI: kiln run asks it whether this process writes the
 * output notebook before anything trains. Sets are tried in a fixed order and the first
 * one whose rank and size are both present wins, so a torchrun-style RANK left in the
 * environment of an mpirun job does not override OpenMPI's own numbers.
 */
#include "rt_dist.h"

#include <errno.h>
#include <stdlib.h>

typedef struct env_set {
    const char *source, *rank, *size, *local_rank, *local_size;
} env_set;

static const env_set sets[] = {
    {"OpenMPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
     "OMPI_COMM_WORLD_LOCAL_SIZE"},
    {"PMI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"},
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"},
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
};

/* -1: absent; -2: present but not a non-negative int; else the value. */
static int env_int(const char *name)
{
    const char *s = name ? getenv(name) : NULL;
    if (!s || !*s) return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    /* Slurm writes SLURM_NTASKS_PER_NODE as "2(x3)" on uneven nodes: the leading count
     * is this node's when the job is even, a fair guess otherwise */
    if (end == s || errno || v < 0 || v > 1 << 24 || (*end && *end != '(')) return -2;
    return (int)v;
}

rt_status rt_dist_env_read(rt_dist_env *out, rt_error *err)
{
    *out =
        (rt_dist_env){.rank = 0, .world = 1, .local_rank = 0, .local_world = 1, .source = "none"};
    for (size_t i = 0; i < sizeof sets / sizeof *sets; i++) {
        const env_set *e = &sets[i];
        int rank = env_int(e->rank), size = env_int(e->size);
        if (rank == -1 || size == -1) continue;
        if (rank < 0 || size < 1 || rank >= size)
            return RT_ERR(err, RT_EINVAL,
                          "the launcher's variables %s=%s and %s=%s do not "
                          "give a rank in [0, world size)",
                          e->rank, getenv(e->rank), e->size, getenv(e->size));
        int lr = env_int(e->local_rank), ls = env_int(e->local_size);
        out->rank = rank;
        out->world = size;
        out->local_rank = lr >= 0 ? lr : 0;
        out->local_world = ls >= 1 ? ls : 1;
        if (out->local_rank >= out->local_world) out->local_world = out->local_rank + 1;
        out->source = e->source;
        return RT_OK;
    }
    return RT_OK;
}

int rt_dist_is_writer(void)
{
    rt_dist_env e;
    rt_error err;
    return rt_dist_env_read(&e, &err) != RT_OK || e.rank == 0;
}
