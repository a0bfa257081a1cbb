/* mg_results_sync.c - `%results --push s3://BUCKET/KEY` and `--pull s3://BUCKET/KEY`:
 * the results store as one object in an S3-compatible store, shared by machines that
 * take turns (a notebook VM today, another tomorrow).
 *
 * Last writer check: beside the store, PATH.sync.json remembers for each URL the ETag
 * of the object this store last pushed or pulled and the SHA-256 of the store's
 * contents then (a VACUUM INTO snapshot). A push is a conditional PUT: If-Match that
 * ETag, or If-None-Match: * when this store never synced with the URL, so a copy that
 * another machine pushed meanwhile is never overwritten (--force does). A pull replaces
 * the local store only when it holds nothing the URL's copy lacks (its contents are
 * as they were at the last sync, or there is no local store); --force pulls anyway and
 * keeps the local store as PATH.before-pull. Nothing is merged: a conflict is an error
 * naming both ways out.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mg_results_internal.h"
#include "rt_download.h"
#include "rt_file.h"
#include "rt_store.h"

typedef struct sync_state {
    char etag[128];
    char sha256[65];
} sync_state;

/* The state remembered for url (zeroed when none). */
static void state_get(const char *path, const char *url, sync_state *st)
{
    char side[4200];
    memset(st, 0, sizeof *st);
    snprintf(side, sizeof side, "%s.sync.json", path);
    json_t *all = json_load_file(side, 0, NULL), *e = json_object_get(all, url);
    const char *etag = json_string_value(json_object_get(e, "etag"));
    const char *sha = json_string_value(json_object_get(e, "sha256"));
    if (etag && sha) {
        snprintf(st->etag, sizeof st->etag, "%s", etag);
        snprintf(st->sha256, sizeof st->sha256, "%s", sha);
    }
    json_decref(all);
}

static int state_put(const char *path, const char *url, const sync_state *st, mg_error *err)
{
    char side[4200];
    snprintf(side, sizeof side, "%s.sync.json", path);
    json_t *all = json_load_file(side, 0, NULL);
    if (!json_is_object(all)) {
        json_decref(all);
        all = json_object();
    }
    json_object_set_new(all, url, json_pack("{s:s, s:s}", "etag", st->etag, "sha256", st->sha256));
    rt_file w = {0};
    rt_error re = {0};
    rt_status s = rt_file_begin(&w, side, &re);
    if (s == RT_OK && json_dumpf(all, w.f, JSON_INDENT(1) | JSON_SORT_KEYS) != 0)
        s = RT_ERR(&re, RT_EIO, "writing %s failed", side);
    if (s == RT_OK) s = rt_file_commit(&w, 0600, &re);
    else rt_file_abort(&w);
    json_decref(all);
    return s == RT_OK ? 0 : mg_fail_status(err, &re, "%%results: %s", re.msg);
}

/* A snapshot of the store at path into snap, and its SHA-256. */
static int snapshot(const char *path, const char *snap, char sha[65], mg_error *err)
{
    rt_error re = {0};
    if (rt_results_snapshot(path, snap, &re) != RT_OK || rt_sha256_file(snap, sha, &re) != RT_OK) {
        unlink(snap);
        return mgp_fail_rt(err, &re);
    }
    return 0;
}

/* Opens url's store; the URL must name an object (s3://BUCKET/KEY). */
static int open_url(const char *url, rt_store **s, char **key, mg_error *err)
{
    rt_error re = {0};
    if (rt_store_open(url, s, key, &re) != RT_OK) return mgp_fail_rt(err, &re);
    if (!**key) {
        rt_store_close(*s);
        free(*key);
        return mg_fail(err, "ValueError",
                       "%%results: %s names a bucket, not an object ---> HINT: "
                       "s3://BUCKET/results.sqlite",
                       url);
    }
    return 0;
}

static int push(mg_ctx *ctx, const char *url, const char *path, int force, mg_error *err)
{
    char snap[4200], sha[65];
    snprintf(snap, sizeof snap, "%s.push.tmp", path);
    rt_store *s = NULL;
    char *key = NULL, *buf = NULL;
    if (open_url(url, &s, &key, err) < 0) return -1;
    int rc = snapshot(path, snap, sha, err);
    FILE *f = rc == 0 ? fopen(snap, "rb") : NULL;
    struct stat sb;
    if (rc == 0 && (!f || fstat(fileno(f), &sb) != 0 || !(buf = malloc((size_t)sb.st_size + 1)) ||
                    fread(buf, 1, (size_t)sb.st_size, f) != (size_t)sb.st_size))
        rc = mg_fail(err, "OSError", "%%results --push: cannot read the snapshot %s", snap);
    if (f) fclose(f);
    unlink(snap);
    sync_state st;
    state_get(path, url, &st);
    int conflict = 0;
    rt_error re = {0};
    char etag[128] = "";
    if (rc == 0 && rt_store_put_mem_if(s, key, buf, (size_t)sb.st_size, force ? NULL : st.etag,
                                       &conflict, etag, &re) != RT_OK) {
        if (conflict)
            rc = mg_fail(err, "FileExistsError",
                         "%%results --push: %s %s, so pushing would lose what is there "
                         "---> HINT: %%results --pull %s takes that copy (add --force to keep "
                         "this store as %s.before-pull), or --push --force overwrites it",
                         url,
                         st.etag[0] ? "changed since this store last pushed or pulled it "
                                      "(another machine pushed)"
                                    : "exists and this store never pushed or pulled it",
                         url, path);
        else rc = mgp_fail_rt(err, &re);
    }
    if (rc == 0) {
        snprintf(st.etag, sizeof st.etag, "%s", etag);
        snprintf(st.sha256, sizeof st.sha256, "%s", sha);
        rc = state_put(path, url, &st, err);
    }
    if (rc == 0) {
        char size[32];
        snprintf(size, sizeof size, "%.1f KiB", (double)sb.st_size / 1024);
        mg_printf(ctx->out, "Pushed %s (%s) to %s.\n", path, size, url);
    }
    free(buf);
    free(key);
    rt_store_close(s);
    return rc;
}

static int pull(mg_ctx *ctx, const char *url, const char *path, int force, mg_error *err)
{
    char snap[4200], got[4200], keep[4200], sha[65];
    snprintf(snap, sizeof snap, "%s.pull-check.tmp", path);
    snprintf(got, sizeof got, "%s.pull.tmp", path);
    snprintf(keep, sizeof keep, "%s.before-pull", path);
    rt_store *s = NULL;
    char *key = NULL, etag[128] = "";
    if (open_url(url, &s, &key, err) < 0) return -1;
    sync_state st;
    state_get(path, url, &st);
    int rc = 0, local = access(path, F_OK) == 0, kept = 0;
    rt_error re = {0};
    /* at most the size the store lists for it: a server that streams more is cut off */
    uint64_t max = RT_STORE_ANY_SIZE;
    rt_store_entry *ls = NULL;
    size_t nls = 0;
    if (rt_store_list(s, key, &ls, &nls, &re) == RT_OK)
        for (size_t i = 0; i < nls; i++)
            if (!strcmp(ls[i].key, key)) max = ls[i].size;
    rt_store_entries_free(ls, nls);
    if (rt_store_get_file_checked(s, key, got, max, NULL, NULL, 1, etag, &re) != RT_OK)
        rc = mgp_fail_rt(err, &re);
    /* a local store with runs the URL's copy may lack is never replaced silently */
    if (rc == 0 && local) rc = snapshot(path, snap, sha, err);
    if (rc == 0 && local && strcmp(sha, st.sha256) != 0) {
        if (!force)
            rc = mg_fail(err, "FileExistsError",
                         "%%results --pull: %s %s, so pulling %s would lose it ---> HINT: "
                         "%%results --push %s first, or --pull --force (keeps this store "
                         "as %s)",
                         path,
                         st.sha256[0] ? "changed since it last pushed to or pulled from it"
                                      : "holds runs and never pushed to or pulled from it",
                         url, url, keep);
        else if (rename(snap, keep) != 0)
            rc = mg_fail(err, "OSError", "%%results --pull: cannot keep %s as %s", path, keep);
        else kept = 1;
    }
    unlink(snap);
    if (rc == 0 && rt_results_replace(path, got, &re) != RT_OK)
        rc = mg_fail_status(err, &re, "%%results --pull: %s: %s", url, re.msg);
    unlink(got);
    if (rc == 0) rc = snapshot(path, snap, sha, err);
    unlink(snap);
    if (rc == 0) {
        snprintf(st.etag, sizeof st.etag, "%s", etag);
        snprintf(st.sha256, sizeof st.sha256, "%s", sha);
        rc = state_put(path, url, &st, err);
    }
    if (rc == 0)
        mg_printf(ctx->out, "Pulled %s into %s%s%s%s.\n", url, path,
                  kept ? " (the previous one kept as " : "", kept ? keep : "", kept ? ")" : "");
    free(key);
    rt_store_close(s);
    return rc;
}

int mgp_results_sync(mg_ctx *ctx, const mg_args *a, const char *path, mg_error *err)
{
    const char *up = mg_args_get(a, "--push"), *down = mg_args_get(a, "--pull");
    if (up && down) return mg_fail(err, "UsageError", "%%results: --push or --pull, not both");
    if (a->npos)
        return mg_fail(err, "UsageError", "%%results --push/--pull URL: no subcommand with it");
    const char *url = up ? up : down;
    if (!rt_store_is_url(url))
        return mg_fail(err, "UsageError",
                       "%%results --%s %s: an s3://BUCKET/KEY URL ---> HINT: "
                       "s3://BUCKET/results.sqlite",
                       up ? "push" : "pull", url);
    return up ? push(ctx, url, path, mg_args_has(a, "--force"), err)
              : pull(ctx, url, path, mg_args_has(a, "--force"), err);
}
