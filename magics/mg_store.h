/* mg_store.h - s3:// run directories for %train and %resume (runtime/store/).
 *
 * A run directory that is an s3:// URL is trained into a local staging directory
 * (rt_store_stage.h), which survives a kernel restart on the same machine; each
 * checkpoint written there is queued for a background upload (rt_store_sync.h) and the
 * run's end waits, bounded, for the queue to drain. The store is opened before
 * training, so wrong credentials, a missing bucket or a bad endpoint stop the cell
 * before any step. The uploader lives in the session (slot "store.sync") for the run.
 */
#ifndef MG_STORE_H
#define MG_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "mg.h"
#include "rt_store_ckpt.h"

/* Opens url's store and fetches its newest complete, valid checkpoint into the staging
 * directory: *path (free()), or NULL when the store holds none yet (not an error when
 * allow_empty). Damaged ones skipped are named in warnings on out. -1 with err. */
RT_MUST_USE int mg_store_fetch(const char *url, int allow_empty, const mg_out *out, char **path,
                               mg_error *err);
/* Starts the uploader for url (keep complete checkpoints in the store, 0 = all) and
 * puts staging dir into dir. -1 with err (the store could not be opened). */
RT_MUST_USE int mg_store_begin(mg_ctx *ctx, const char *url, int keep, char *dir, size_t cap,
                               mg_error *err);
/* The complete checkpoints of the store at url, oldest first (*c, *n: free with
 * rt_store_ckpt_free); unreadable or partial ones described in *skipped ("name:
 * reason\n" lines, free(); skipped may be NULL). -1 with err. */
RT_MUST_USE int mg_store_list(const char *url, rt_store_ckpt **c, size_t *n, char **skipped,
                              mg_error *err);
/* Uploads the local checkpoint file at path into the run at url (object, then its
 * manifest; the file is validated first). -1 with err. */
RT_MUST_USE int mg_store_push(const char *url, const char *path, mg_error *err);
/* %train --resume auto choosing a versioned sibling (DIR-v2) of an s3:// run's staging
 * directory: fetch_sibling fetches the newest checkpoint of URL-v2 into dir (its
 * staging directory) so the choice sees the store's run; rehome moves the uploader to
 * URL-v2 once dir is chosen. Both no-ops without an uploader or for a plain dir. -1
 * with err. */
RT_MUST_USE int mg_store_fetch_sibling(mg_ctx *ctx, const char *dir, mg_error *err);
RT_MUST_USE int mg_store_rehome(mg_ctx *ctx, const char *dir, mg_error *err);
/* How to name run directory dir to the user: the s3:// URL when dir is the staging
 * directory of the uploader's URL or of a versioned sibling (written into buf), else
 * dir itself. */
const char *mg_store_display(mg_ctx *ctx, const char *dir, char *buf, size_t cap);
/* After a checkpoint was saved at path: queued for upload when an uploader runs (the
 * store then keeps the run's newest `keep`); returns how many checkpoints are pending
 * (so local rotation keeps them). */
size_t mg_store_after_save(mg_ctx *ctx, const char *path, int64_t step, int keep,
                           const mg_out *out);
/* The upload state for the progress display ("upload: 2 pending", "uploaded: step
 * 120"), "" without an uploader. */
void mg_store_status(mg_ctx *ctx, char *buf, size_t cap);
/* How long the end of a run waits for uploads: 60 s, or with a --time-limit 2% of it
 * (at least 10 s, at most 60 s), so a platform's deadline is not overrun;
 * KILN_UPLOAD_WAIT_S overrides. */
double mg_store_drain_budget(double time_limit_s);
/* The s3:// URL of the run directory being uploaded to (borrowed), NULL when none. */
const char *mg_store_url(mg_ctx *ctx);
/* The run ended: waits at most budget_s for the queue, names checkpoints that exist
 * only locally, stops the uploader. No-op without one. */
void mg_store_end(mg_ctx *ctx, double budget_s, const mg_out *out);

#endif
