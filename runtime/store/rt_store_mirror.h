/* rt_store_mirror.h - a data set at an s3:// URL, read as local files.
 *
 * s3://BUCKET/KEY is one object (an archive: .zip, .tar.gz, ...) or a folder (the
 * objects under KEY/, e.g. an image folder). It is mirrored into the staging directory
 * (rt_store_stage.h: ROOT/BUCKET/KEY, a file or a folder) and read from there. Every
 * object is downloaded once: the ETag and size of each file fetched are recorded
 * (.kiln-mirror.json in the folder, .NAME.kiln-mirror.json beside an archive: names
 * the image-folder reader skips), and a later call downloads only objects whose ETag
 * or size changed and removes the files it mirrored that the store no longer holds
 * (never other files). Each download is verified: its size against the listing and,
 * when the ETag is an MD5 (a single-request upload), its MD5. Keys with "." or ".."
 * parts, or a part starting with "." (hidden), are not mirrored. The whole is bounded:
 * more than max_bytes, or more than RT_STORE_MIRROR_MAX_OBJECTS objects, is an error
 * before anything is downloaded.
 */
#ifndef RT_STORE_MIRROR_H
#define RT_STORE_MIRROR_H

#include <stddef.h>
#include <stdint.h>

#include "rt_store.h"

#define RT_STORE_MIRROR_MAX_OBJECTS RT_STORE_MAX_OBJECTS

typedef struct rt_store_mirror_stats {
    size_t objects; /* mirrored in all */
    size_t fetched; /* downloaded by this call */
    uint64_t bytes; /* size of all */
    uint64_t fetched_bytes;
    size_t removed; /* local files dropped (gone from the store) */
} rt_store_mirror_stats;

/* Mirrors url as above; the local file or folder into local. A URL with nothing at
 * it is RT_ENOTFOUND. stats may be NULL. */
RT_MUST_USE rt_status rt_store_mirror(const char *url, uint64_t max_bytes, char *local, size_t cap,
                                      rt_store_mirror_stats *stats, rt_error *err);

#endif
