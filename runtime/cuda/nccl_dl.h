/* nccl_dl.h - the NCCL entry points Kiln calls, as a table filled on first use
 * (nccl_dl.c dlopens libnccl.so.2; the mock build fills it from
 * tests/gpu/mock/mock_nccl.c).
 *
 * The build needs no NCCL headers: the few types and constants below are NCCL's
 * stable C ABI (nccl.h of NCCL 2.x: ncclResult_t and the enums are ints, a
 * communicator and a reduction are opaque, the unique id is 128 bytes).
 */
#ifndef NCCL_DL_H
#define NCCL_DL_H

#include <cuda_runtime_api.h>
#include <limits.h>
#include <stddef.h>

#include "rt_error.h"

typedef int rtp_nccl_result; /* ncclResult_t: 0 ncclSuccess */
typedef struct rtp_nccl_comm *rtp_nccl_comm_t;
typedef int rtp_nccl_redop; /* ncclRedOp_t */
typedef struct {
    char internal[128];
} rtp_nccl_id;
enum {
    RTP_NCCL_SUCCESS = 0,
    RTP_NCCL_IN_PROGRESS = 7, /* ncclInProgress: not an error */
    RTP_NCCL_FLOAT32 = 7,
    RTP_NCCL_FLOAT64 = 8,
    RTP_NCCL_SUM = 0,
    RTP_NCCL_MAX = 2,
    RTP_NCCL_SCALAR_HOST = 1 /* ncclScalarHostImmediate */
};
/* ncclRedOpCreatePreMulSum (a weighted sum in one collective) came with NCCL 2.11 */
#define RTP_NCCL_MIN_VERSION 21100

/* ncclConfig_t: NCCL 2.14's fields (size, magic, version, blocking), then the ones NCCL
 * 2.17 appended (cgaClusterSize, minCTAs, maxCTAs, netName), every one set. NCCL copies
 * the first `size` bytes of a config, checks the magic, and gives the fields a config's
 * version lacks their defaults, so this is valid for every NCCL from 2.14 on. The four
 * bytes after `blocking`, padding in a 24-byte 2.14 struct and never set by an
 * initializer, are cgaClusterSize to an NCCL that reads them; here they and the rest
 * hold NCCL's "undefined" values (NCCL_CONFIG_UNDEF_INT = INT_MIN, NULL: those of
 * NCCL_CONFIG_INITIALIZER), so NCCL takes its own default or its environment.
 * blocking = 0: ncclCommInitRankConfig returns at once and the communicator joins its
 * peers in the background (ncclInProgress until ncclCommGetAsyncError says otherwise),
 * so a missing peer can be waited for with a deadline and the join abandoned
 * (ncclCommAbort). */
typedef struct rtp_nccl_config {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int blocking;
    int cgaClusterSize;
    int minCTAs;
    int maxCTAs;
    const char *netName;
} rtp_nccl_config;
#define RTP_NCCL_CONFIG_MAGIC 0xcafebeefu
#define RTP_NCCL_CONFIG_VERSION 21400     /* NCCL_VERSION(2, 14, 0) */
#define RTP_NCCL_CONFIG_UNDEF_INT INT_MIN /* NCCL_CONFIG_UNDEF_INT */

/* A config of NCCL's undefined values but for blocking. */
static inline rtp_nccl_config rtp_nccl_config_make(int blocking)
{
    rtp_nccl_config c = {.size = sizeof c,
                         .magic = RTP_NCCL_CONFIG_MAGIC,
                         .version = RTP_NCCL_CONFIG_VERSION,
                         .blocking = blocking,
                         .cgaClusterSize = RTP_NCCL_CONFIG_UNDEF_INT,
                         .minCTAs = RTP_NCCL_CONFIG_UNDEF_INT,
                         .maxCTAs = RTP_NCCL_CONFIG_UNDEF_INT,
                         .netName = NULL};
    return c;
}
_Static_assert(offsetof(rtp_nccl_config, cgaClusterSize) == 20 &&
                   offsetof(rtp_nccl_config, netName) == 32 && sizeof(rtp_nccl_config) == 40,
               "ncclConfig_t of NCCL 2.14 (LP64)");

typedef struct rtp_nccl_fns {
    rtp_nccl_result (*GetVersion)(int *version);
    const char *(*GetErrorString)(rtp_nccl_result r);
    rtp_nccl_result (*GetUniqueId)(rtp_nccl_id *id);
    rtp_nccl_result (*CommInitAll)(rtp_nccl_comm_t *comms, int n, const int *devices);
    rtp_nccl_result (*CommInitRank)(rtp_nccl_comm_t *comm, int nranks, rtp_nccl_id id, int rank);
    rtp_nccl_result (*CommDestroy)(rtp_nccl_comm_t comm);
    rtp_nccl_result (*GroupStart)(void);
    rtp_nccl_result (*GroupEnd)(void);
    rtp_nccl_result (*AllReduce)(const void *send, void *recv, size_t count, int dtype,
                                 rtp_nccl_redop op, rtp_nccl_comm_t comm, cudaStream_t s);
    rtp_nccl_result (*RedOpCreatePreMulSum)(rtp_nccl_redop *op, void *scalar, int dtype,
                                            int residence, rtp_nccl_comm_t comm);
    rtp_nccl_result (*RedOpDestroy)(rtp_nccl_redop op, rtp_nccl_comm_t comm);
    rtp_nccl_result (*Broadcast)(const void *send, void *recv, size_t count, int dtype, int root,
                                 rtp_nccl_comm_t comm, cudaStream_t s);
    /* a failure NCCL saw in the background (a peer gone, a network error) */
    rtp_nccl_result (*CommGetAsyncError)(rtp_nccl_comm_t comm, rtp_nccl_result *async);
    /* ends the communicator's pending work and frees it (a hung collective) */
    rtp_nccl_result (*CommAbort)(rtp_nccl_comm_t comm);
    /* NCCL 2.14 and newer; NULL in an older NCCL (the blocking CommInitRank is used) */
    rtp_nccl_result (*CommInitRankConfig)(rtp_nccl_comm_t *comm, int nranks, rtp_nccl_id id,
                                          int rank, rtp_nccl_config *config);
} rtp_nccl_fns;

/* The table, loading NCCL on the first call (later calls return the same answer).
 * RT_ENODEV naming the file tried and the package to install when it cannot. */
RT_MUST_USE rt_status rtp_nccl_load(const rtp_nccl_fns **out, rt_error *err);

#endif
