/* rt_store.h - S3-compatible object stores (AWS S3, GCS interoperability, Cloudflare
 * R2, MinIO, Backblaze B2): the objects under an s3://bucket/prefix URL.
 *
 * HTTP goes through libcurl (loaded on first use) and its own AWS Signature V4
 * (CURLOPT_AWS_SIGV4): Kiln signs nothing itself. Credentials and the endpoint come
 * from the standard environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 * AWS_SESSION_TOKEN, AWS_REGION / AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_S3 /
 * AWS_ENDPOINT_URL) or a profile of the shared credentials file (AWS_PROFILE,
 * AWS_SHARED_CREDENTIALS_FILE, default ~/.aws/credentials). The secret key and the
 * session token stay in this process's memory: no message, log line or file ever
 * holds them, and they are wiped when the store is closed. Every error says what to
 * fix ("---> HINT: ...").
 *
 * Objects larger than the part size are uploaded with a multipart upload (parts of
 * 8 MiB, KILN_S3_PART_MB to change; an upload that fails is aborted). A download
 * goes to DEST.part and is renamed over DEST only when complete.
 */
#ifndef RT_STORE_H
#define RT_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "rt_error.h"

#define RT_STORE_SCHEME "s3://"
/* The most objects one listing takes in (more is an error), and so a mirror copies. */
#define RT_STORE_MAX_OBJECTS 1000000

typedef struct rt_store rt_store;

/* 1 when s starts with "s3://". */
int rt_store_is_url(const char *s);

/* Opens the store of url ("s3://bucket" or "s3://bucket/prefix"): resolves the
 * credentials, region and endpoint, then checks the bucket with one request, so a
 * wrong key, a missing bucket or an unreachable endpoint is an error here, before any
 * work starts. *prefix_out (may be NULL) gets the URL's prefix without slashes at
 * either end ("" for none; caller frees). */
RT_MUST_USE rt_status rt_store_open(const char *url, rt_store **out, char **prefix_out,
                                    rt_error *err);
void rt_store_close(rt_store *s); /* NULL ok; wipes the credentials */
/* "s3://bucket" (borrowed), and where it is ("https://s3.us-east-1.amazonaws.com" or
 * the AWS_ENDPOINT_URL given) for messages. */
const char *rt_store_bucket_url(const rt_store *s);
const char *rt_store_endpoint(const rt_store *s);

/* While *flag is non-zero, transfers of s stop at once and are not retried
 * (RT_EINTERRUPTED). For a thread that must be stoppable; NULL to unset. */
void rt_store_set_cancel(rt_store *s, const _Atomic int *flag);

/* Uploads the file at path as object key (multipart above the part size). */
RT_MUST_USE rt_status rt_store_put_file(rt_store *s, const char *key, const char *path,
                                        rt_error *err);
RT_MUST_USE rt_status rt_store_put_mem(rt_store *s, const char *key, const void *buf, size_t len,
                                       rt_error *err);
/* Uploads buf as object key in one request only while the object is the version last
 * seen: if_etag "" = it must not exist yet (If-None-Match: *), else its ETag must
 * still be if_etag (If-Match); NULL = unconditionally. Another version there (or, for
 * If-Match, none): *conflict = 1 and RT_EINVAL. The new ETag into etag (may be NULL).
 */
RT_MUST_USE rt_status rt_store_put_mem_if(rt_store *s, const char *key, const void *buf, size_t len,
                                          const char *if_etag, int *conflict, char etag[128],
                                          rt_error *err);
/* Downloads object key to path (through a file of a fresh name beside it, created
 * O_EXCL, renamed over path when complete). A missing object is RT_ENOTFOUND. _etag
 * also gives the version downloaded (its ETag, quotes kept) in etag. */
RT_MUST_USE rt_status rt_store_get_file(rt_store *s, const char *key, const char *path,
                                        rt_error *err);
RT_MUST_USE rt_status rt_store_get_file_etag(rt_store *s, const char *key, const char *path,
                                             char etag[128], rt_error *err);
/* A download's check before it is put in place: tmp is the downloaded file. */
typedef rt_status (*rt_store_check)(const char *tmp, void *ctx, rt_error *err);
#define RT_STORE_ANY_SIZE UINT64_MAX
/* rt_store_get_file_etag, and more: at most max bytes (RT_STORE_ANY_SIZE: no limit; beyond it the
 * download stops, RT_EFORMAT), check(tmp, ctx) passes (may be NULL) before the file is
 * put at path, and with replace 0 a file already at path is never replaced
 * (RT_EINVAL). On any failure path is as it was: only the download's own file is
 * removed. etag may be NULL. */
RT_MUST_USE rt_status rt_store_get_file_checked(rt_store *s, const char *key, const char *path,
                                                uint64_t max, rt_store_check check, void *ctx,
                                                int replace, char etag[128], rt_error *err);
/* Downloads object key into *buf (malloc'd, NUL-terminated for text; *len bytes);
 * at most max bytes, else RT_EFORMAT. */
RT_MUST_USE rt_status rt_store_get_mem(rt_store *s, const char *key, size_t max, char **buf,
                                       size_t *len, rt_error *err);
/* Deletes object key (a missing object is not an error: S3 answers 204 either way). */
RT_MUST_USE rt_status rt_store_delete(rt_store *s, const char *key, rt_error *err);

typedef struct rt_store_entry {
    char *key; /* the full key */
    uint64_t size;
    char etag[128]; /* as listed, quotes kept ("" when the store gave none) */
} rt_store_entry;
/* Every object whose key starts with prefix, in key order (all pages). */
RT_MUST_USE rt_status rt_store_list(rt_store *s, const char *prefix, rt_store_entry **out,
                                    size_t *n, rt_error *err);
void rt_store_entries_free(rt_store_entry *e, size_t n);

#endif
