/* rt_store_list.c - listing the objects under a prefix (ListObjectsV2, every page) and
 * reading its replies, which come from the server and are checked as untrusted input:
 * a key outside the prefix asked for, an entry without a size, a token given before
 * (a loop), a page that goes on without listing anything, or more objects than Kiln
 * reads is an error, not a silent wrong answer or a listing without end. */
#include "rt_store_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rt_store_entries_free(rt_store_entry *e, size_t n)
{
    for (size_t i = 0; e && i < n; i++) free(e[i].key);
    free(e);
}

/* A decimal size ("0".."18446744073709551615"); -1 for anything else. */
static int parse_size(const char *s, uint64_t *v)
{
    if (!s || !*s) return -1;
    uint64_t x = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return -1;
        uint64_t d = (uint64_t)(*p - '0');
        if (x > (UINT64_MAX - d) / 10) return -1;
        x = x * 10 + d;
    }
    *v = x;
    return 0;
}

/* One <Contents> block (raw XML) into e[*n]. */
static rt_status add_entry(const char *block, const char *prefix, rt_store_entry **e, size_t *n,
                           size_t *cap, const char *what, rt_error *err)
{
    size_t pos = 0;
    int oom = 0;
    char *key = rtp_store_xml_next(block, "Key", &pos, &oom);
    pos = 0;
    char *sz = key ? rtp_store_xml_next(block, "Size", &pos, &oom) : NULL;
    pos = 0;
    char *tag = key ? rtp_store_xml_next(block, "ETag", &pos, &oom) : NULL;
    uint64_t size = 0;
    rt_status st = RT_OK;
    if (oom) st = RT_ERR(err, RT_ENOMEM, "%s: out of memory", what);
    else if (!key || !*key)
        st = RT_ERR(err, RT_EFORMAT, "%s: the store listed an object without a key", what);
    else if (strncmp(key, prefix, strlen(prefix)) != 0)
        st = RT_ERR(err, RT_EFORMAT, "%s: the store listed '%.200s', which is outside the prefix",
                    what, key);
    else if (parse_size(sz, &size) != 0)
        st = RT_ERR(err, RT_EFORMAT, "%s: the store listed '%.200s' with %s%.40s%s", what, key,
                    sz ? "size '" : "no size", sz ? sz : "", sz ? "'" : "");
    if (st == RT_OK && *n == *cap) {
        size_t nc = *cap ? 2 * *cap : 64;
        rt_store_entry *ne = realloc(*e, nc * sizeof *ne);
        if (!ne) st = RT_ERR(err, RT_ENOMEM, "%s: out of memory", what);
        else {
            *e = ne;
            *cap = nc;
        }
    }
    free(sz);
    if (st != RT_OK) {
        free(key);
        free(tag);
        return st;
    }
    (*e)[*n].key = key;
    (*e)[*n].size = size;
    /* optional (an ETag is an opaque version tag; only its length is bounded here) */
    snprintf((*e)[*n].etag, sizeof(*e)[*n].etag, "%s", tag && strlen(tag) < 128 ? tag : "");
    free(tag);
    (*n)++;
    return RT_OK;
}

rt_status rtp_store_list_page(const char *xml, const char *prefix, const char *prev,
                              rt_store_entry **e, size_t *n, size_t *cap, char **next,
                              const char *what, rt_error *err)
{
    *next = NULL;
    if (!xml || !strstr(xml, "<ListBucketResult"))
        return RT_ERR(err, RT_EFORMAT, "%s: the store's reply is not a listing", what);
    size_t pos = 0;
    int oom = 0;
    char *block;
    while ((block = rtp_store_xml_raw(xml, "Contents", &pos, &oom))) {
        rt_status st = add_entry(block, prefix, e, n, cap, what, err);
        free(block);
        if (st != RT_OK) return st;
    }
    pos = 0;
    char *trunc = oom ? NULL : rtp_store_xml_next(xml, "IsTruncated", &pos, &oom);
    int more = trunc && strcmp(trunc, "true") == 0;
    free(trunc);
    pos = 0;
    char *token = more ? rtp_store_xml_next(xml, "NextContinuationToken", &pos, &oom) : NULL;
    if (oom) {
        free(token);
        return RT_ERR(err, RT_ENOMEM, "%s: out of memory", what);
    }
    if (more && (!token || !*token || (prev && strcmp(token, prev) == 0))) {
        free(token);
        return RT_ERR(err, RT_EFORMAT,
                      "%s: the store says the listing goes on but gives no new continuation "
                      "token",
                      what);
    }
    *next = token;
    return RT_OK;
}

/* FNV-1a of a token: what the listing remembers of the tokens it was given. */
static uint64_t token_hash(const char *t)
{
    uint64_t h = 1469598103934665603ull;
    for (; *t; t++) h = (h ^ (unsigned char)*t) * 1099511628211ull;
    return h ? h : 1; /* 0 marks an empty slot */
}

/* Adds h to the set: 1 when it was new, 0 when it was there, -1 out of memory. */
static int seen_add(rtp_store_listing *L, uint64_t h)
{
    if (2 * (L->nseen + 1) > L->cap) {
        size_t nc = L->cap ? 2 * L->cap : 64;
        uint64_t *t = calloc(nc, sizeof *t);
        if (!t) return -1;
        for (size_t i = 0; i < L->cap; i++) {
            if (!L->seen[i]) continue;
            size_t j = (size_t)(L->seen[i] % nc);
            while (t[j]) j = (j + 1) % nc;
            t[j] = L->seen[i];
        }
        free(L->seen);
        L->seen = t;
        L->cap = nc;
    }
    size_t j = (size_t)(h % L->cap);
    while (L->seen[j] && L->seen[j] != h) j = (j + 1) % L->cap;
    if (L->seen[j]) return 0;
    L->seen[j] = h;
    L->nseen++;
    return 1;
}

void rtp_store_listing_free(rtp_store_listing *L)
{
    free(L->seen);
    memset(L, 0, sizeof *L);
}

rt_status rtp_store_list_turn(rtp_store_listing *L, const char *xml, const char *prefix,
                              const char *prev, rt_store_entry **e, size_t *n, size_t *cap,
                              char **next, const char *what, rt_error *err)
{
    const size_t before = *n;
    RT_TRY(rtp_store_list_page(xml, prefix, prev, e, n, cap, next, what, err));
    L->pages++;
    rt_status st = RT_OK;
    int fresh = 1;
    if (*n > RTP_STORE_LIST_MAX)
        st = RT_ERR(err, RT_EFORMAT,
                    "%s: the store lists more than %d objects under the prefix, the most Kiln "
                    "reads (after %zu pages) ---> HINT: name a smaller folder",
                    what, RTP_STORE_LIST_MAX, L->pages);
    else if (*next && strlen(*next) > RTP_STORE_TOKEN_MAX)
        st = RT_ERR(err, RT_EFORMAT,
                    "%s: the store's continuation token has %zu characters (at most %d): not a "
                    "listing to follow",
                    what, strlen(*next), RTP_STORE_TOKEN_MAX);
    else if (*next && *n == before)
        st = RT_ERR(err, RT_EFORMAT,
                    "%s: page %zu of the store's listing says it goes on but lists nothing: a "
                    "listing that never ends",
                    what, L->pages);
    else if (*next && (fresh = seen_add(L, token_hash(*next))) != 1)
        st = fresh < 0 ? RT_ERR(err, RT_ENOMEM, "%s: out of memory", what)
                       : RT_ERR(err, RT_EFORMAT,
                                "%s: page %zu of the store's listing gives a continuation "
                                "token it gave before: a listing that goes round in a loop "
                                "would never end",
                                what, L->pages);
    if (st != RT_OK) {
        free(*next);
        *next = NULL;
    }
    return st;
}

rt_status rt_store_list(rt_store *s, const char *prefix, rt_store_entry **out, size_t *n,
                        rt_error *err)
{
    *out = NULL;
    *n = 0;
    char what[300];
    snprintf(what, sizeof what, "listing %s/%.200s", s->bucket_url, prefix);
    char *qp = rtp_store_query_escape(prefix), *token = NULL;
    rt_store_entry *e = NULL;
    size_t cnt = 0, cap = 0;
    rtp_store_listing L = {0};
    rt_status st = qp ? RT_OK : RT_ERR(err, RT_ENOMEM, "%s: out of memory", what);
    for (int first = 1; st == RT_OK && (first || token); first = 0) {
        char *qt = token ? rtp_store_query_escape(token) : NULL;
        char *q = token && !qt ? NULL
                               : rtp_store_fmt("%s%s%slist-type=2&prefix=%s",
                                               qt ? "continuation-token=" : "", qt ? qt : "",
                                               qt ? "&" : "", qp);
        free(qt);
        if (!q) {
            st = RT_ERR(err, RT_ENOMEM, "%s: out of memory", what);
            break;
        }
        rtp_store_req r = rtp_store_req_make("GET", NULL, q);
        r.resp_max = 16 << 20;
        st = rtp_store_do(s, &r, what, err);
        free(q);
        char *next = NULL;
        if (st == RT_OK)
            st = rtp_store_list_turn(&L, r.resp, prefix, token, &e, &cnt, &cap, &next, what, err);
        free(r.resp);
        free(token);
        token = next;
    }
    free(token);
    free(qp);
    rtp_store_listing_free(&L);
    if (st != RT_OK) {
        rt_store_entries_free(e, cnt);
        return st;
    }
    *out = e;
    *n = cnt;
    return RT_OK;
}
