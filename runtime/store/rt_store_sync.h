/* rt_store_sync.h - uploading a run's checkpoints in the background.
 *
 * Training never waits on the network: a checkpoint is written to a local staging
 * directory first (by the caller), then queued here; one thread uploads the queue in
 * order (rt_store_ckpt_push: object, then manifest), retrying a failed upload with
 * backoff (0.5 s doubling to 30 s, for as long as the run lasts: a store that comes
 * back is caught up with), and after each confirmed upload prunes the store to the
 * newest `keep` complete checkpoints. The queue is bounded: when it is full the oldest
 * waiting checkpoint is dropped from it (its local file stays, and it is reported as
 * local-only), since a newer one supersedes it. Local files are never deleted here.
 */
#ifndef RT_STORE_SYNC_H
#define RT_STORE_SYNC_H

#include <stddef.h>
#include <stdint.h>

#include "rt_store.h"

typedef struct rt_store_sync rt_store_sync;

typedef struct rt_store_sync_status {
    size_t pending;       /* queued or uploading */
    int64_t last_step;    /* newest step confirmed in the store; -1 none yet */
    int retrying;         /* the last attempt failed and will be retried */
    char last_error[512]; /* that failure ("" when none) */
} rt_store_sync_status;

/* Starts the uploader for checkpoints under prefix of store s (taken over: closed by
 * rt_store_sync_stop). keep >= 1 complete checkpoints stay in the store (0: no
 * pruning); cap >= 1 is the queue's length. */
RT_MUST_USE rt_status rt_store_sync_start(rt_store *s, const char *prefix, int keep, size_t cap,
                                          rt_store_sync **out, rt_error *err);
/* Changes how many complete checkpoints pruning keeps (0: no pruning). */
void rt_store_sync_set_keep(rt_store_sync *y, int keep);
/* Queues local checkpoint file path (of step) for upload; returns at once. */
RT_MUST_USE rt_status rt_store_sync_enqueue(rt_store_sync *y, const char *path, int64_t step,
                                            rt_error *err);
void rt_store_sync_get_status(rt_store_sync *y, rt_store_sync_status *st);
/* Waits at most timeout_s for everything queued to be confirmed. RT_OK when it was;
 * otherwise RT_EIO saying how many are local-only, and *local_only (may be NULL) gets
 * their paths, one a line (caller frees). */
RT_MUST_USE rt_status rt_store_sync_drain(rt_store_sync *y, double timeout_s, char **local_only,
                                          rt_error *err);
/* Stops the thread (a transfer in progress is cancelled), closes the store, frees y.
 * NULL ok. */
void rt_store_sync_stop(rt_store_sync *y);

#endif
