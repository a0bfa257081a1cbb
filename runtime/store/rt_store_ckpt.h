/* rt_store_ckpt.h - checkpoints in an object store: atomic without rename.
 *
 * Under a prefix P, checkpoint NAME (ckpt-stepNNNNNNNN.safetensors) is the object
 * P/NAME (a multipart upload when large) and then, written last, its manifest
 * P/NAME.manifest.json:
 *   {"format":"kiln-checkpoint-manifest","version":1,"step":N,
 *    "parts":[{"key":"NAME","size":S,"sha256":"<64 hex>","xxh3":"<16 hex>"}]}
 * (keys relative to P; "xxh3" is the file's own data_xxh3, shared with the local
 * file, "sha256" of the whole object so any tool can check it). A checkpoint counts
 * only once its manifest exists, like a DONE marker: a crash mid-upload leaves an
 * object without a manifest, which is never picked. Fetching checks each part's size
 * and SHA-256 and then the checkpoint's own validation, and falls back past a
 * corrupt or partial checkpoint to the next older complete one. Pruning deletes a
 * checkpoint's manifest first, then its parts, and only while a newer complete one
 * remains.
 */
#ifndef RT_STORE_CKPT_H
#define RT_STORE_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "rt_store.h"

#define RT_STORE_MANIFEST_SUFFIX ".manifest.json"

typedef struct rt_store_ckpt {
    int64_t step;
    char *name;    /* "ckpt-step00000100.safetensors" */
    uint64_t size; /* of the checkpoint object */
    char sha256[65];
    char xxh3[17];
} rt_store_ckpt;

/* Uploads the local checkpoint file at path under prefix (its file name kept), then
 * its manifest. The file is validated first (a damaged local file is never uploaded).
 */
RT_MUST_USE rt_status rt_store_ckpt_push(rt_store *s, const char *prefix, const char *path,
                                         rt_error *err);
/* The complete checkpoints under prefix (those with a readable manifest), oldest
 * first by step. Unreadable manifests are described in *skipped ("name: reason\n",
 * caller frees; may be NULL when skipped is NULL). */
RT_MUST_USE rt_status rt_store_ckpt_list(rt_store *s, const char *prefix, rt_store_ckpt **out,
                                         size_t *n, char **skipped, rt_error *err);
void rt_store_ckpt_free(rt_store_ckpt *c, size_t n);
/* Downloads the newest complete checkpoint that verifies (name NULL), or the complete
 * checkpoint name, into dir (dir/NAME) and sets *path (caller frees). Those that
 * failed are described in *skipped ("name: reason\n" lines, caller frees, NULL when
 * none); their downloads are removed. None verifies, or name is not a complete
 * checkpoint: RT_ENOTFOUND naming the prefix and what was examined. */
RT_MUST_USE rt_status rt_store_ckpt_fetch(rt_store *s, const char *prefix, const char *name,
                                          const char *dir, char **path, char **skipped,
                                          rt_error *err);
/* Deletes complete checkpoints under prefix except the newest keep (>= 1): manifest
 * first, then the object. *deleted (may be NULL) counts them. */
RT_MUST_USE rt_status rt_store_ckpt_prune(rt_store *s, const char *prefix, int keep,
                                          size_t *deleted, rt_error *err);

#endif
