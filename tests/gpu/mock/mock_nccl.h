/* mock_nccl.h - what the NCCL stand-in (mock_nccl.c) counts, for the device group's
 * test: every step must make exactly one all-reduce of the whole gradient. */
#ifndef MOCK_NCCL_H
#define MOCK_NCCL_H

#include <stddef.h>

/* Completed collectives (one per all-reduce of the group, whatever its size). */
long mock_nccl_collectives(void);
/* ncclAllReduce calls (one per rank and collective), and those made inside a
 * ncclGroupStart/End. */
long mock_nccl_calls(void);
long mock_nccl_grouped_calls(void);
/* Bytes reduced by all collectives, and by the last one. */
size_t mock_nccl_bytes(void);
size_t mock_nccl_last_bytes(void);
void mock_nccl_reset(void);

#endif
