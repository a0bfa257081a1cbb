/* rt_store_internal.h - private pieces shared by the rt_store_* files (and tests). */
#ifndef RT_STORE_INTERNAL_H
#define RT_STORE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "rt_store.h"
#include "rt_store_ckpt.h"

/* ---- configuration (rt_store_config.c) ---- */
typedef struct rtp_store_config {
    char *access_key;    /* not secret on its own, still only shown masked */
    char *secret_key;    /* secret: never printed */
    char *session_token; /* secret: never printed; NULL when none */
    char *region;        /* "us-east-1" when nothing says otherwise */
    char *endpoint;      /* "http://127.0.0.1:9000" (no trailing slash); NULL = AWS */
    char *source;        /* where the keys came from, e.g. "environment", "profile 'x' of
                            /root/.aws/credentials" (no secret) */
} rtp_store_config;

/* Reads the environment and the shared credentials file. No keys at all is an error
 * naming the variables to set. */
RT_MUST_USE rt_status rtp_store_config_load(rtp_store_config *c, rt_error *err);
/* Frees c, wiping the secrets first. */
void rtp_store_config_free(rtp_store_config *c);
/* The access key as "****WXYZ" (its last 4 characters) into out. */
void rtp_store_key_mask(const char *key, char out[16]);
/* Splits "s3://bucket/pre/fix/" into bucket and "pre/fix" (both malloc'd). A bucket
 * name S3 would refuse or an '@' anywhere in the URL (user:key@bucket; keys may hold
 * '/'): RT_EINVAL, and the message about an '@' repeats nothing of the URL. */
RT_MUST_USE rt_status rtp_store_url_parse(const char *url, char **bucket, char **prefix,
                                          rt_error *err);

/* ---- one signed request (rt_store_http.c) ---- */
typedef struct rtp_store_req {
    const char *method; /* "GET", "PUT", "POST", "DELETE", "HEAD" */
    const char *key;    /* object key, or NULL for the bucket itself */
    const char *query;  /* canonical query string (sorted, encoded) or NULL */
    /* request body, from memory (NULL/0: none) */
    const void *body;
    uint64_t body_len;
    const char *content_type; /* full header line; NULL: application/octet-stream */
    const char *condition;    /* full header line ("If-Match: \"...\""), or NULL */
    /* response body: into memory (resp, resp_len; at most resp_max), or to resp_fd
     * when it is >= 0 (an error reply's XML still goes to resp) */
    int resp_fd;
    size_t resp_max;
    uint64_t file_max; /* with resp_fd: the most bytes a download may bring
                        * (RT_STORE_ANY_SIZE: no limit) */
    char *resp;
    size_t resp_len;
    /* results */
    long status;
    char etag[128]; /* the ETag response header, quotes kept */
} rtp_store_req;

/* Performs r (retrying connection failures and 5xx/503 SlowDown with backoff up to
 * 3 times). An HTTP status >= 300 is an error built from the XML <Code>/<Message> of
 * the reply, mapped to what to fix (credentials, bucket, endpoint); r->status is set
 * either way. `what` names the operation for messages ("uploading 'k'"). */
RT_MUST_USE rt_status rtp_store_do(rt_store *s, rtp_store_req *r, const char *what, rt_error *err);
/* The URL-encoded form of key for a path (RFC 3986 unreserved kept, '/' kept). */
char *rtp_store_key_escape(const char *key);
/* The query-string form of v: as rtp_store_key_escape, and '/' too. */
char *rtp_store_query_escape(const char *v);
/* A request with no body, its reply into memory (at most 1 MiB). */
rtp_store_req rtp_store_req_make(const char *method, const char *key, const char *query);
/* A formatted string (object names, queries), malloc'd; NULL when out of memory.
 * rt_store_object.c. */
char *rtp_store_fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));

/* ---- the parts of a multipart upload (rt_store_parts.c) ---- */
#define RTP_STORE_PART_JOBS 4 /* parts in flight at once */
/* Uploads the parts of upload qid (query-escaped UploadId) of key: the object's size
 * bytes from mem, or when mem is NULL from file fd (path, for messages), in parts of
 * s->part_size, RTP_STORE_PART_JOBS at a time. etags[i] gets part i + 1's ETag. */
RT_MUST_USE rt_status rtp_store_put_parts(rt_store *s, const char *key, const char *qid,
                                          const void *mem, int fd, uint64_t size, const char *path,
                                          const char *what, char (*etags)[128], rt_error *err);
/* Reads len bytes at off of fd (path, for messages) into buf: a short file is an error. */
RT_MUST_USE rt_status rtp_store_read_at(int fd, char *buf, size_t len, uint64_t off,
                                        const char *path, rt_error *err);

/* ---- XML replies (rt_store_xml.c) ---- */
/* The text of the first <tag>...</tag> at or after *pos in xml (entities decoded,
 * malloc'd), advancing *pos past it; NULL when there is none (or out of memory:
 * *oom set). */
char *rtp_store_xml_next(const char *xml, const char *tag, size_t *pos, int *oom);
/* The same without decoding entities: for an element holding elements
 * (<Contents><Key>...</Key></Contents>), read again with rtp_store_xml_next. */
char *rtp_store_xml_raw(const char *xml, const char *tag, size_t *pos, int *oom);

/* ---- listing (rt_store_list.c) ---- */
/* Parses one ListObjectsV2 reply (untrusted: it comes from the server) for a listing
 * of prefix: appends each <Contents>' Key and Size to *e (*n entries, room for *cap,
 * grown as needed) and sets *next to the continuation token (malloc'd) when the
 * listing goes on, else NULL; prev is the token this page was asked with (NULL for
 * the first). RT_EFORMAT, saying what is wrong, when an entry has no key or no size,
 * a size is not a decimal number, a key lies outside prefix, or a page claims more
 * without a new token (a server repeating a token would never end). `what` names the
 * listing for messages. The entries added stay in *e either way. */
RT_MUST_USE rt_status rtp_store_list_page(const char *xml, const char *prefix, const char *prev,
                                          rt_store_entry **e, size_t *n, size_t *cap, char **next,
                                          const char *what, rt_error *err);

/* Following a listing page after page (untrusted: the server chooses the pages). */
#define RTP_STORE_LIST_MAX (RT_STORE_MAX_OBJECTS + 1) /* entries, in all */
#define RTP_STORE_TOKEN_MAX 1024                      /* a continuation token's length */
typedef struct rtp_store_listing {
    uint64_t *seen; /* the tokens given so far (hashes; an open-addressing set) */
    size_t nseen, cap;
    size_t pages;
} rtp_store_listing;
/* rtp_store_list_page for the next page of listing L, and what makes a listing end:
 * RT_EFORMAT when the token it gives was given before (by any earlier page), is longer
 * than RTP_STORE_TOKEN_MAX, comes with a page that adds no entry, or when the entries
 * pass RTP_STORE_LIST_MAX; *next is then NULL. Since every page but the last adds an
 * entry, the pages are bounded too. */
RT_MUST_USE rt_status rtp_store_list_turn(rtp_store_listing *L, const char *xml, const char *prefix,
                                          const char *prev, rt_store_entry **e, size_t *n,
                                          size_t *cap, char **next, const char *what,
                                          rt_error *err);
void rtp_store_listing_free(rtp_store_listing *L);

struct rt_store {
    rtp_store_config cfg;
    char *bucket;
    char *bucket_url; /* "s3://bucket" */
    char *base;       /* "http://127.0.0.1:9000/bucket" or "https://bucket.s3.R.amazonaws.com" */
    char *endpoint;   /* for messages */
    char *sigv4;      /* "aws:amz:REGION:s3" */
    uint64_t part_size;
    const _Atomic int *cancel; /* rt_store_set_cancel */
};

/* Parses a checkpoint manifest (rt_store_ckpt.h; fetched, so untrusted) into c, its
 * name malloc'd: 1, or 0 with the reason in why. */
int rtp_store_manifest_parse(const char *text, size_t len, rt_store_ckpt *c, char *why, size_t cap);

#endif
