/* rt_dist_meet.h - the meeting of a launch without MPI (torchrun-style variables
 * RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT): the ranks find each other once over TCP
 * and rank 0 hands every rank a 128-byte blob (NCCL's unique id), nothing more. Kiln
 * carries no traffic of its own over it: the GPU ranks' collectives then go through
 * NCCL (runtime/dist/rt_dist_nccl.c).
 *
 * Rank 0 listens on MASTER_PORT or the port the launch gives instead (rt_dist_nccl.c
 * says when: KILN_DIST_PORT, torchrun's agent), on MASTER_ADDR's own address (every
 * interface only when that address is not this host's, said on stderr); every other rank
 * connects to MASTER_ADDR at that port, retrying while rank 0 is not listening yet, and
 * answers rank 0's challenge with one frame: a magic, the meeting's version, its rank,
 * the world size it was given and whether it can join (with a short reason when not),
 * signed with the launch's secret (KILN_DIST_TOKEN, rt_dist_meet_frame.h). A frame
 * that is not a signed hello (a stranger, another Kiln, a rank with another secret)
 * is dropped and logged on stderr, and so is a connection silent past its own
 * deadline: neither stops the launch. Rank 0 waits for all,
 * checks them (the same world size, every rank once), makes the blob when every rank
 * can join, and answers every rank with the outcome: the blob, or the one error every
 * rank then reports. Everything ends within the timeout: a rank that never comes is
 * named in rank 0's error; rank 0 missing is a timeout on the others.
 */
#ifndef RT_DIST_MEET_H
#define RT_DIST_MEET_H

#include "rt_error.h"

#define RT_DIST_MEET_BLOB 128
#define RT_DIST_MEET_TOKEN_MIN 16

typedef struct rt_dist_meet {
    const char *addr;     /* MASTER_ADDR: a host name or an address */
    const char *port;     /* the meeting's port, as the variable says it (checked here) */
    const char *port_var; /* where port came from, for messages (NULL: "MASTER_PORT") */
    int rank, world;      /* RANK, WORLD_SIZE */
    double timeout_s;     /* the whole meeting ends within this */
    int can;              /* this rank can join */
    const char *why_not;  /* when it cannot: a few words ("its device is cpu") */
    const char *token;    /* the launch's secret (KILN_DIST_TOKEN), the same on every
                           * rank; NULL or "": none, which only a loopback meeting takes */
} rt_dist_meet;

/* Rank 0's blob, made only when every rank can join. */
typedef rt_status (*rt_dist_meet_make)(unsigned char blob[RT_DIST_MEET_BLOB], rt_error *err);

/* The meeting, on every rank: RT_OK with rank 0's blob in blob. RT_EINVAL for a bad
 * MASTER_ADDR/MASTER_PORT, a MASTER_ADDR that is not a loopback address without a
 * token (of at least RT_DIST_MEET_TOKEN_MIN characters), ranks that disagree on the world size, a rank named twice,
 * or a rank that cannot join (the message names the ranks and their reasons, the same
 * on every rank); RT_EDEVICE_LOST when ranks did not come within the timeout (rank 0
 * names them) or rank 0 did not answer; RT_EIO when rank 0 cannot listen (the port is
 * taken). */
RT_MUST_USE rt_status rt_dist_meet_run(const rt_dist_meet *m, rt_dist_meet_make make,
                                       unsigned char blob[RT_DIST_MEET_BLOB], rt_error *err);

#endif
