/* rt_store_mirror.c - a data set at an s3:// URL mirrored into the staging directory,
 * downloading only what changed (rt_store_mirror.h). The record of what was fetched
 * is JSON (jansson), written atomically (rt_file). */
#include "rt_store_mirror.h"

#include <ctype.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_download.h"
#include "rt_file.h"
#include "rt_store_stage.h"

#define GIB ((double)(1ull << 30))

/* A relative key that may become a local path: no empty, ".", ".." or hidden part, no
 * control character. */
static int safe_rel(const char *rel)
{
    if (!*rel || rel[strlen(rel) - 1] == '/') return 0; /* a "folder" marker object */
    for (const char *p = rel; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) return 0;
    for (const char *part = rel; part; part = strchr(part, '/') ? strchr(part, '/') + 1 : NULL)
        if (*part == '/' || *part == '.' || !*part) return 0;
    return 1;
}

/* Size and, for an MD5 ETag ("32 hex digits", a single-request upload), MD5 of path. */
static rt_status verify(const char *path, void *ctx, rt_error *err)
{
    const rt_store_entry *e = ctx;
    struct stat sb;
    if (stat(path, &sb) != 0 || (uint64_t)sb.st_size != e->size)
        return RT_ERR(err, RT_EFORMAT,
                      "downloaded '%s': %lld bytes, the store lists %" PRIu64 " (the transfer "
                      "or the object is incomplete) ---> HINT: run it again",
                      e->key, (long long)sb.st_size, e->size);
    const char *t = e->etag[0] == '"' ? e->etag + 1 : e->etag;
    size_t n = 0;
    while (n < 33 && isxdigit((unsigned char)t[n])) n++;
    if (n != 32 || (t[32] != '"' && t[32])) return RT_OK; /* multipart: not an MD5 */
    char md5[33];
    RT_TRY(rt_md5_file(path, md5, err));
    if (strncasecmp(md5, t, 32) != 0)
        return RT_ERR(err, RT_EFORMAT,
                      "downloaded '%s': MD5 %s, the store's ETag says %.32s: the transfer or "
                      "the object is corrupt ---> HINT: run it again",
                      e->key, md5, t);
    return RT_OK;
}

static rt_status save_record(const char *path, json_t *rec, rt_error *err)
{
    rt_file w = {0};
    RT_TRY(rt_file_begin(&w, path, err));
    if (json_dumpf(rec, w.f, JSON_COMPACT | JSON_SORT_KEYS) != 0) {
        rt_file_abort(&w);
        return RT_ERR(err, RT_EIO, "writing %s failed", path);
    }
    return rt_file_commit(&w, RT_FILE_MODE_UMASK, err);
}

/* Fetches the listed objects e[0..n) (rel names rels) into dir, keeping record up to
 * date: those with the same ETag and size as recorded (and present) are kept. */
static rt_status fetch_all(rt_store *s, const rt_store_entry *e, char **rels, size_t n,
                           const char *dir, json_t *old, json_t *rec, rt_store_mirror_stats *st,
                           rt_error *err)
{
    for (size_t i = 0; i < n; i++) {
        char *path = NULL;
        if (asprintf(&path, "%s/%s", dir, rels[i]) < 0)
            return RT_ERR(err, RT_ENOMEM, "out of memory mirroring a data set");
        json_t *was = json_object_get(old, rels[i]);
        struct stat sb;
        const char *etag = json_string_value(json_object_get(was, "etag"));
        int same = etag && !strcmp(etag, e[i].etag) &&
                   (uint64_t)json_integer_value(json_object_get(was, "size")) == e[i].size &&
                   stat(path, &sb) == 0 && (uint64_t)sb.st_size == e[i].size;
        rt_status r = RT_OK;
        if (!same) {
            if (rt_file_make_parent(path, 0700) != 0)
                r = RT_ERR(err, RT_EIO, "cannot create the folder of '%s'", path);
            /* at most the listed size, verified before it replaces the copy there */
            if (r == RT_OK)
                r = rt_store_get_file_checked(s, e[i].key, path, e[i].size, verify, (void *)&e[i],
                                              1, NULL, err);
            st->fetched++;
            st->fetched_bytes += e[i].size;
        }
        free(path);
        if (r != RT_OK) return r;
        json_object_set_new(
            rec, rels[i],
            json_pack("{s:s, s:I}", "etag", e[i].etag, "size", (json_int_t)e[i].size));
    }
    return RT_OK;
}

rt_status rt_store_mirror(const char *url, uint64_t max_bytes, char *local, size_t cap,
                          rt_store_mirror_stats *stats, rt_error *err)
{
    rt_store_mirror_stats st = {0};
    rt_store *s = NULL;
    char *key = NULL, dir[1024], folder[1200], recpath[1400];
    rt_store_entry *e = NULL;
    size_t n = 0, nsel = 0;
    char **rels = NULL;
    json_t *old = NULL, *rec = json_object();
    rt_status r = rt_store_open(url, &s, &key, err);
    if (r == RT_OK && !*key)
        r = RT_ERR(err, RT_EINVAL,
                   "%s names a bucket: name the data set's folder or archive in it ---> HINT: "
                   "s3://BUCKET/PATH",
                   url);
    if (r == RT_OK) r = rt_store_list(s, key, &e, &n, err);
    /* a folder (objects under KEY/) or one object KEY */
    size_t klen = key ? strlen(key) : 0;
    if (r == RT_OK && !(rels = calloc(n ? n : 1, sizeof *rels)))
        r = RT_ERR(err, RT_ENOMEM, "out of memory mirroring %s", url);
    int one = 0;
    for (size_t i = 0; r == RT_OK && i < n; i++) {
        const char *k = e[i].key;
        if (!strncmp(k, key, klen) && k[klen] == '/' && safe_rel(k + klen + 1)) {
            rt_store_entry t = e[nsel]; /* the selected ones first */
            e[nsel] = e[i], e[i] = t;
            if (!(rels[nsel] = strdup(e[nsel].key + klen + 1)))
                r = RT_ERR(err, RT_ENOMEM, "out of memory mirroring %s", url);
            nsel++;
        } else if (!strcmp(k, key)) one = 1;
    }
    int archive = r == RT_OK && !nsel && one;
    if (archive) { /* the object itself */
        const char *slash = strrchr(key, '/');
        for (size_t i = 0; i < n; i++)
            if (e[i].key && !strcmp(e[i].key, key)) {
                rt_store_entry t = e[0];
                e[0] = e[i], e[i] = t;
            }
        nsel = 1;
        if (!(rels[0] = strdup(slash ? slash + 1 : key)))
            r = RT_ERR(err, RT_ENOMEM, "out of memory mirroring %s", url);
    }
    if (r == RT_OK && !nsel)
        r = RT_ERR(err, RT_ENOTFOUND,
                   "nothing at %s: no object of that name, and no objects under %s/ ---> "
                   "HINT: check the URL (aws s3 ls %s/)",
                   url, url, url);
    for (size_t i = 0; r == RT_OK && i < nsel; i++) st.bytes += e[i].size;
    st.objects = nsel;
    if (r == RT_OK && (st.bytes > max_bytes || nsel > RT_STORE_MIRROR_MAX_OBJECTS))
        r = RT_ERR(err, RT_EINVAL,
                   "%s holds %zu objects, %.2f GiB: more than this machine mirrors (%.2f GiB, "
                   "%d objects) ---> HINT: raise KILN_S3_DATA_MAX_GB if the disk has room, or "
                   "point at a smaller folder",
                   url, nsel, (double)st.bytes / GIB, (double)max_bytes / GIB,
                   RT_STORE_MIRROR_MAX_OBJECTS);
    /* where: the folder's staging directory, or the archive's beside its parent's */
    if (r == RT_OK) {
        const char *slash = strrchr(url, '/');
        int sub = !archive;
        snprintf(folder, sizeof folder, "%.*s", sub ? (int)strlen(url) : (int)(slash - url), url);
        r = rt_store_staging_dir(folder, dir, sizeof dir, err);
        if (r == RT_OK &&
            ((size_t)snprintf(local, cap, sub ? "%s" : "%s/%s", dir, rels[0]) >= cap ||
             (size_t)snprintf(recpath, sizeof recpath,
                              sub ? "%s/.kiln-mirror.json" : "%s/.%s.kiln-mirror.json", dir,
                              rels[0]) >= sizeof recpath))
            r = RT_ERR(err, RT_EINVAL, "%s: the local path is too long", url);
    }
    if (r == RT_OK) {
        old = json_load_file(recpath, 0, NULL);
        r = fetch_all(s, e, rels, nsel, dir, old, rec, &st, err);
        /* after a failure, what was not reached keeps its entry (a later call does not
         * fetch it again); after success, files fetched before that the store no longer
         * lists are removed */
        const char *name;
        json_t *v;
        json_object_foreach(old, name, v)
        {
            char *path = NULL;
            if (json_object_get(rec, name)) continue;
            if (r != RT_OK) json_object_set(rec, name, v);
            else if (safe_rel(name)) {
                if (asprintf(&path, "%s/%s", dir, name) < 0) path = NULL;
                else st.removed += unlink(path) == 0;
            }
            free(path);
        }
        rt_error e2;
        if (save_record(recpath, rec, &e2) != RT_OK && r == RT_OK) *err = e2, r = e2.code;
    }
    for (size_t i = 0; rels && i < n; i++) free(rels[i]);
    free(rels);
    rt_store_entries_free(e, n);
    json_decref(old);
    json_decref(rec);
    free(key);
    rt_store_close(s);
    if (stats) *stats = st;
    return r;
}
