/* rt_download.h - one file over HTTP(S), verified, resumable and atomic.
 *
 * rt_download_file() writes DEST.part, resumes it with an HTTP Range request when
 * it already exists (a server that answers 200 instead of 206 restarts the file
 * cleanly), checks the SHA-256 of the whole file, and only then renames it to
 * DEST. So DEST either does not exist or holds verified bytes.
 * What is left behind on failure:
 *   - cut-off transfer, timeout, interrupt: DEST.part is kept (the next call resumes);
 *   - checksum mismatch: DEST.part is deleted (its bytes are wrong; resuming
 *     from them would only repeat the failure);
 *   - HTTP error status (404, 500...): DEST.part is left as it was.
 * The data set table (rt_dataset.c) sits on top of this; tests call it directly.
 */
#ifndef RT_DOWNLOAD_H
#define RT_DOWNLOAD_H

#include <stdint.h>

#include "rt_error.h"

/* Progress of a download: bytes so far, total (0 if unknown). Return non-zero to stop. */
typedef int (*rt_download_progress_fn)(const char *file, uint64_t done, uint64_t total, void *user);

typedef struct rt_download_opts {
    const char *url;                  /* full URL of the file (http, https, file) */
    const char *dest;                 /* final path; the transfer goes to DEST.part */
    const char *sha256_hex;           /* expected SHA-256, 64 hex digits; NULL = do not verify */
    rt_download_progress_fn progress; /* may be NULL; non-zero return stops */
    void *user;
    int (*should_stop)(void *user); /* may be NULL; polled during the transfer */
    long connect_timeout_s;         /* 0 = 30 s */
    long stall_timeout_s;           /* abort when under 1 byte/s for this long; 0 = 60 s */
    int retries;                    /* extra attempts after a cut-off or timeout (resuming) */
} rt_download_opts;

/* What happened, for the user and for tests. */
typedef struct rt_download_info {
    long http_status;      /* of the last request; 0 if none completed */
    uint64_t resumed_from; /* bytes reused from DEST.part (0 = fresh start) */
    uint64_t bytes;        /* size of the finished file */
    int attempts;          /* requests made */
} rt_download_info;

/* Downloads o->url to o->dest as described above. info may be NULL.
 * Errors: RT_EIO (network, HTTP status, disk), RT_EFORMAT (checksum mismatch: the
 * message names the file and both hashes), RT_EINTERRUPTED (should_stop/progress),
 * RT_EINVAL (bad arguments). */
RT_MUST_USE rt_status rt_download_file(const rt_download_opts *o, rt_download_info *info,
                                       rt_error *err);

/* SHA-256 of a file as 64 lowercase hex digits + NUL into hex[65]. */
RT_MUST_USE rt_status rt_sha256_file(const char *path, char hex[65], rt_error *err);
/* MD5 of a file, the same way (32 digits): to check an object store's ETag, nothing
 * else. */
RT_MUST_USE rt_status rt_md5_file(const char *path, char hex[33], rt_error *err);
/* SHA-256 of len bytes at buf, the same way. */
RT_MUST_USE rt_status rt_sha256_mem(const void *buf, size_t len, char hex[65], rt_error *err);

#endif
