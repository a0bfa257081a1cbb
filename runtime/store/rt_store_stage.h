/* rt_store_stage.h - an s3:// run directory on this machine.
 *
 * A run whose directory is an s3:// URL is trained, resumed or exported from a local
 * staging copy: $KILN_STAGING_DIR, else $XDG_CACHE_HOME/kiln/staging, else
 * ~/.cache/kiln/staging (HOME unset: the home the password database gives), then
 * BUCKET/PREFIX, its directories created 0700; one on the way that is a symbolic link,
 * belongs to another user or that others can write (and this user cannot make
 * private) is refused. It survives a kernel restart on the same
 * machine, and URL-v2's staging directory is URL's plus "-v2".
 */
#ifndef RT_STORE_STAGE_H
#define RT_STORE_STAGE_H

#include <stddef.h>

#include "rt_store.h"

/* url's staging directory into dir (created). */
RT_MUST_USE rt_status rt_store_staging_dir(const char *url, char *dir, size_t cap, rt_error *err);
/* Opens url's store (a wrong key, a missing bucket or an unreachable endpoint is an
 * error naming the fix) and fetches its newest complete checkpoint that verifies into
 * the staging directory: *path (caller frees). Newer ones that failed are described in
 * *skipped ("name: reason\n" lines, caller frees, NULL when none; skipped may be NULL).
 * A store with no valid checkpoint is RT_ENOTFOUND. A URL whose last part ends in
 * .safetensors (s3://B/P/NAME.safetensors) names one checkpoint of the run s3://B/P:
 * that one is fetched and verified, or it is an error. For `kiln export`, %resume,
 * %checkpoint load and show: anything that reads a run. */
RT_MUST_USE rt_status rt_store_fetch_run(const char *url, char **path, char **skipped,
                                         rt_error *err);

#endif
