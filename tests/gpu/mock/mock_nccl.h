/* mock_nccl.h - what the NCCL stand-in (mock_nccl.c) counts, for the device group's
 * test: every step must make exactly one all-reduce of the whole gradient. */
#ifndef MOCK_NCCL_H
#define MOCK_NCCL_H

#include <stddef.h>

/* Completed collectives (one per all-reduce of the group, whatever its size; a group
 * of several on a communicator counts each). */
long mock_nccl_collectives(void);
/* Of those, the weighted sums (a pre-multiplied sum op: the gradients'), their bytes
 * and the last one's bytes. */
long mock_nccl_weighted(void);
size_t mock_nccl_weighted_bytes(void);
size_t mock_nccl_weighted_last_bytes(void);
/* ncclAllReduce calls (one per rank and collective), and those made inside a
 * ncclGroupStart/End. */
long mock_nccl_calls(void);
long mock_nccl_grouped_calls(void);
/* Bytes reduced by all collectives, and by the last one. */
size_t mock_nccl_bytes(void);
size_t mock_nccl_last_bytes(void);
/* ncclCommAbort calls. */
long mock_nccl_aborts(void);
void mock_nccl_reset(void);
/* For mock_cuda.c: 1 while this thread's last collective is in flight (cudaEventQuery
 * says not ready); drain waits for it (a synchronisation), at most 60 s. */
int mock_nccl_busy(void);
void mock_nccl_drain(void);
/* For mock_cuda.c: a device-to-host copy queued on a stream behind this thread's call
 * in flight runs when the call completes (1: queued), as on a real stream; 0: nothing
 * is in flight, copy now. */
int mock_nccl_defer(void *dst, const void *src, size_t n);
/* 1 while this thread's nonblocking communicator is still launching its last group's work
 * (ncclGroupEnd said ncclInProgress and nobody polled NCCL's state since): NCCL allows no
 * CUDA call on the stream then. */
int mock_nccl_settling(void);

#endif
