/* rt_store_ckpt.c - checkpoint objects and their manifests (rt_store_ckpt.h). The
 * manifest is JSON (jansson); SHA-256 comes from rt_sha256_file (OpenSSL, in
 * runtime/data), the data checksum from the checkpoint's own metadata. */
#include "rt_store_ckpt.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rt_ckpt.h"
#include "rt_ckpt_dir.h"
#include "rt_download.h"
#include "rt_store_internal.h"

#define MANIFEST_FORMAT "kiln-checkpoint-manifest"

static char *join(const char *prefix, const char *name)
{
    return *prefix ? rtp_store_fmt("%s/%s", prefix, name) : strdup(name);
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

void rt_store_ckpt_free(rt_store_ckpt *c, size_t n)
{
    for (size_t i = 0; c && i < n; i++) free(c[i].name);
    free(c);
}

rt_status rt_store_ckpt_push(rt_store *s, const char *prefix, const char *path, rt_error *err)
{
    rt_ckpt_reader *r = NULL;
    RT_TRY(rt_ckpt_reader_open(path, 0, &r, err));
    int64_t step = -1;
    rt_status st = rt_ckpt_reader_meta_i64(r, RT_CKPT_KEY_STEP, &step, err);
    const char *x = rt_ckpt_reader_meta(r, RT_CKPT_KEY_DATA_XXH3);
    char xxh3[17];
    snprintf(xxh3, sizeof xxh3, "%s", x ? x : "");
    uint64_t size = rt_ckpt_reader_file_size(r);
    rt_ckpt_reader_destroy(r);
    RT_TRY(st);
    char sha[65];
    RT_TRY(rt_sha256_file(path, sha, err));
    const char *name = base_name(path);
    char *key = join(prefix, name);
    char *mkey = key ? rtp_store_fmt("%s%s", key, RT_STORE_MANIFEST_SUFFIX) : NULL;
    json_t *m = json_pack("{s:s, s:i, s:I, s:[{s:s, s:I, s:s, s:s}]}", "format", MANIFEST_FORMAT,
                          "version", 1, "step", (json_int_t)step, "parts", "key", name, "size",
                          (json_int_t)size, "sha256", sha, "xxh3", xxh3);
    char *text = m ? json_dumps(m, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(m);
    if (!key || !mkey || !text) st = RT_ERR(err, RT_ENOMEM, "out of memory uploading '%s'", path);
    if (st == RT_OK) st = rt_store_put_file(s, key, path, err);
    if (st == RT_OK) st = rt_store_put_mem(s, mkey, text, strlen(text), err);
    free(text);
    free(mkey);
    free(key);
    return st;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int cmp_step(const void *a, const void *b)
{
    const rt_store_ckpt *x = a, *y = b;
    return x->step < y->step ? -1 : x->step > y->step ? 1 : strcmp(x->name, y->name);
}

/* Appends "name: reason\n" to *buf. */
__attribute__((format(printf, 3, 4))) static void note(char **buf, const char *name, const char *f,
                                                       ...)
{
    if (!buf) return;
    char why[600];
    va_list ap;
    va_start(ap, f);
    vsnprintf(why, sizeof why, f, ap);
    va_end(ap);
    size_t from = *buf ? strlen(*buf) : 0;
    char *n = rtp_store_fmt("%s%s: %s\n", *buf ? *buf : "", name, why);
    if (n) {
        /* names and reasons come from the bucket: one line each, no terminal escapes */
        for (size_t i = from, len = strlen(n); i + 1 < len; i++)
            if ((unsigned char)n[i] < 0x20 || n[i] == 0x7f) n[i] = '?';
        free(*buf);
        *buf = n;
    }
}

/* n lowercase hex digits and nothing else (how Kiln writes digests) */
static int is_hex(const char *s, size_t n)
{
    if (!s || strlen(s) != n) return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) return 0;
    return 1;
}

/* A part name becomes a local file name (DIR/NAME) and a key: a plain file name only. */
static int is_file_name(const char *s)
{
    if (!s || !*s || !strcmp(s, ".") || !strcmp(s, "..")) return 0;
    for (; *s; s++)
        if (*s == '/' || (unsigned char)*s < 0x20 || *s == 0x7f) return 0;
    return 1;
}

int rtp_store_manifest_parse(const char *text, size_t len, rt_store_ckpt *c, char *why, size_t cap)
{
    json_error_t je;
    json_t *m = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    json_t *part = json_array_get(json_object_get(m, "parts"), 0);
    const char *f = json_string_value(json_object_get(m, "format"));
    const char *key = json_string_value(json_object_get(part, "key"));
    const char *sha = json_string_value(json_object_get(part, "sha256"));
    const char *x = json_string_value(json_object_get(part, "xxh3"));
    json_t *size = json_object_get(part, "size"), *step = json_object_get(m, "step");
    int ok = 0;
    if (!m) snprintf(why, cap, "manifest is not JSON (%s)", je.text);
    else if (!f || strcmp(f, MANIFEST_FORMAT) != 0)
        snprintf(why, cap, "not a Kiln checkpoint manifest");
    else if (json_integer_value(json_object_get(m, "version")) != 1)
        snprintf(why, cap, "manifest version %lld is not 1 ---> HINT: upgrade kiln",
                 (long long)json_integer_value(json_object_get(m, "version")));
    else if (!key || !sha || !json_is_integer(size) || json_integer_value(size) < 0 ||
             !json_is_integer(step) || json_integer_value(step) < 0 ||
             json_array_size(json_object_get(m, "parts")) != 1)
        snprintf(why, cap, "manifest lacks parts[0].key/size/sha256 or step");
    else if (!is_file_name(key) || !is_hex(sha, 64) || (x && *x && !is_hex(x, 16)))
        snprintf(why, cap,
                 "manifest's part is not a plain file name with a lowercase hex "
                 "SHA-256 (and XXH3)");
    else if (!(c->name = strdup(key))) snprintf(why, cap, "out of memory");
    else {
        c->step = json_integer_value(step);
        c->size = (uint64_t)json_integer_value(size);
        snprintf(c->sha256, sizeof c->sha256, "%s", sha);
        snprintf(c->xxh3, sizeof c->xxh3, "%s", x ? x : "");
        ok = 1;
    }
    json_decref(m);
    return ok;
}

rt_status rt_store_ckpt_list(rt_store *s, const char *prefix, rt_store_ckpt **out, size_t *n,
                             char **skipped, rt_error *err)
{
    *out = NULL;
    *n = 0;
    if (skipped) *skipped = NULL;
    char *dir = *prefix ? rtp_store_fmt("%s/", prefix) : strdup("");
    if (!dir) return RT_ERR(err, RT_ENOMEM, "out of memory listing checkpoints");
    rt_store_entry *e = NULL;
    size_t ne = 0;
    rt_status st = rt_store_list(s, dir, &e, &ne, err);
    rt_store_ckpt *c = st == RT_OK ? calloc(ne ? ne : 1, sizeof *c) : NULL;
    size_t nc = 0;
    if (st == RT_OK && !c) st = RT_ERR(err, RT_ENOMEM, "out of memory listing checkpoints");
    for (size_t i = 0; st == RT_OK && i < ne; i++) {
        const char *rel = e[i].key + strlen(dir);
        if (strchr(rel, '/') || !ends_with(rel, RT_STORE_MANIFEST_SUFFIX)) continue;
        char *text = NULL;
        size_t len = 0;
        char why[700];
        rt_error e2;
        if (rt_store_get_mem(s, e[i].key, 65536, &text, &len, &e2) != RT_OK) {
            if (e2.code == RT_EIO && strstr(e2.msg, "cannot reach")) {
                *err = e2;
                st = e2.code;
            } else {
                note(skipped, rel, "%s", e2.msg);
            }
            continue;
        }
        int ok = rtp_store_manifest_parse(text, len, &c[nc], why, sizeof why);
        free(text);
        if (!ok) {
            note(skipped, rel, "%s", why);
            continue;
        }
        /* NAME.manifest.json describes NAME, never another object */
        size_t stem = strlen(rel) - strlen(RT_STORE_MANIFEST_SUFFIX);
        if (strlen(c[nc].name) != stem || strncmp(c[nc].name, rel, stem) != 0) {
            note(skipped, rel, "its manifest names another object (%s)", c[nc].name);
            free(c[nc].name);
            c[nc].name = NULL;
            continue;
        }
        /* the part must be listed with the manifest's size */
        char *pk = join(prefix, c[nc].name);
        size_t j = 0;
        while (pk && j < ne && strcmp(e[j].key, pk) != 0) j++;
        if (!pk || j == ne || e[j].size != c[nc].size) {
            note(skipped, rel, "%s",
                 !pk       ? "out of memory"
                 : j == ne ? "its checkpoint object is missing (partial upload)"
                           : "its checkpoint object has another size than the manifest "
                             "says (partial or replaced)");
            free(c[nc].name);
            c[nc].name = NULL;
        } else {
            nc++;
        }
        free(pk);
    }
    /* a checkpoint object without a manifest: an upload that did not finish (a process
     * killed between the object and its manifest) or one under way; said, never used */
    for (size_t i = 0; st == RT_OK && skipped && i < ne; i++) {
        const char *rel = e[i].key + strlen(dir);
        if (strchr(rel, '/') || !ends_with(rel, RT_CKPT_EXT)) continue;
        size_t j = 0, len = strlen(e[i].key);
        while (j < ne && !(strlen(e[j].key) == len + strlen(RT_STORE_MANIFEST_SUFFIX) &&
                           !strncmp(e[j].key, e[i].key, len) &&
                           !strcmp(e[j].key + len, RT_STORE_MANIFEST_SUFFIX)))
            j++;
        if (j == ne) note(skipped, rel, "no manifest: its upload did not finish (or is under way)");
    }
    rt_store_entries_free(e, ne);
    free(dir);
    if (st != RT_OK) {
        rt_store_ckpt_free(c, nc);
        if (skipped) {
            free(*skipped);
            *skipped = NULL;
        }
        return st;
    }
    qsort(c, nc, sizeof *c, cmp_step);
    *out = c;
    *n = nc;
    return RT_OK;
}

/* A checkpoint file that is what manifest c describes: its size, SHA-256, a readable
 * checkpoint, and the manifest's data checksum. RT_EFORMAT with the reason. */
static rt_status check_ckpt(const char *path, void *ctx, rt_error *err)
{
    const rt_store_ckpt *c = ctx;
    struct stat sb;
    char sha[65];
    rt_ckpt_reader *r = NULL;
    rt_error e2 = {0};
    rt_status st = RT_EFORMAT;
    if (stat(path, &sb) != 0 || (uint64_t)sb.st_size != c->size)
        RT_ERR(err, st, "downloaded %lld bytes, the manifest says %" PRIu64, (long long)sb.st_size,
               c->size);
    else if (rt_sha256_file(path, sha, &e2) != RT_OK) RT_ERR(err, st, "%s", e2.msg);
    else if (strcmp(sha, c->sha256) != 0)
        RT_ERR(err, st,
               "SHA-256 mismatch (manifest %.12s..., object %.12s...): the object is corrupt",
               c->sha256, sha);
    else if (rt_ckpt_reader_open(path, 0, &r, &e2) != RT_OK) RT_ERR(err, st, "%s", e2.msg);
    else if (c->xxh3[0] && rt_ckpt_reader_meta(r, RT_CKPT_KEY_DATA_XXH3) &&
             strcmp(c->xxh3, rt_ckpt_reader_meta(r, RT_CKPT_KEY_DATA_XXH3)) != 0)
        RT_ERR(err, st, "its data checksum differs from the manifest's");
    else st = RT_OK;
    rt_ckpt_reader_destroy(r);
    return st;
}

/* Downloads c to local (dir/name), checked before it is put there (check_ckpt). A file
 * already at local is never replaced or removed: one that is c is used as it is; any
 * other (a local checkpoint not uploaded, a planted link) is kept and c is skipped. */
static rt_status fetch_one(rt_store *s, const char *prefix, const rt_store_ckpt *c,
                           const char *local, char *why, size_t cap, rt_error *err)
{
    struct stat sb;
    rt_error e2 = {0};
    if (lstat(local, &sb) == 0) {
        if (S_ISREG(sb.st_mode) && check_ckpt(local, (void *)c, &e2) == RT_OK) return RT_OK;
        snprintf(why, cap,
                 "another file is already at '%s' (%s); it is kept as it is ---> HINT: move it "
                 "away to fetch this checkpoint",
                 local, S_ISREG(sb.st_mode) ? "not this checkpoint" : "not a plain file");
        return RT_EFORMAT;
    }
    char *key = join(prefix, c->name);
    if (!key) return RT_ERR(err, RT_ENOMEM, "out of memory downloading a checkpoint");
    rt_status st =
        rt_store_get_file_checked(s, key, local, c->size, check_ckpt, (void *)c, 0, NULL, &e2);
    free(key);
    if (st == RT_OK) return RT_OK;
    if (st == RT_EIO && strstr(e2.msg, "cannot reach")) {
        *err = e2;
        return st;
    }
    snprintf(why, cap, "%s", e2.msg);
    return RT_EFORMAT;
}

rt_status rt_store_ckpt_fetch(rt_store *s, const char *prefix, const char *name, const char *dir,
                              char **path, char **skipped, rt_error *err)
{
    *path = NULL;
    *skipped = NULL;
    rt_store_ckpt *c = NULL;
    size_t n = 0, found = 0;
    RT_TRY(rt_store_ckpt_list(s, prefix, &c, &n, skipped, err));
    rt_status st = rt_ckpt_dir_ensure(dir, err);
    for (size_t i = n; st == RT_OK && i-- > 0;) {
        if (name && strcmp(c[i].name, name) != 0) continue;
        found++;
        char *local = rtp_store_fmt("%s/%s", dir, c[i].name);
        char why[700];
        if (!local) {
            st = RT_ERR(err, RT_ENOMEM, "out of memory downloading a checkpoint");
            break;
        }
        rt_status f = fetch_one(s, prefix, &c[i], local, why, sizeof why, err);
        if (f == RT_OK) {
            *path = local;
            break;
        }
        free(local);
        if (f != RT_EFORMAT) {
            st = f;
            break;
        }
        note(skipped, c[i].name, "%s", why);
    }
    if (st == RT_OK && !*path && name && !found)
        st =
            RT_ERR(err, RT_ENOTFOUND,
                   "%s/%s%s%s is not a complete checkpoint (no object with its manifest; "
                   "%zu complete checkpoint%s there)%s%s ---> HINT: %%checkpoint list %s/%s",
                   rt_store_bucket_url(s), prefix, *prefix ? "/" : "", name, n, n == 1 ? "" : "s",
                   *skipped ? ":\n" : "", *skipped ? *skipped : "", rt_store_bucket_url(s), prefix);
    else if (st == RT_OK && !*path)
        st = RT_ERR(err, RT_ENOTFOUND,
                    "no complete, valid checkpoint under %s/%s (%zu complete "
                    "checkpoint%s examined)%s%s",
                    rt_store_bucket_url(s), prefix, n, n == 1 ? "" : "s", *skipped ? ":\n" : "",
                    *skipped ? *skipped : "");
    rt_store_ckpt_free(c, n);
    return st;
}

rt_status rt_store_ckpt_prune(rt_store *s, const char *prefix, int keep, size_t *deleted,
                              rt_error *err)
{
    if (deleted) *deleted = 0;
    if (keep < 1) keep = 1;
    rt_store_ckpt *c = NULL;
    size_t n = 0;
    RT_TRY(rt_store_ckpt_list(s, prefix, &c, &n, NULL, err));
    rt_status st = RT_OK;
    for (size_t i = 0; st == RT_OK && i + (size_t)keep < n; i++) {
        char *key = join(prefix, c[i].name);
        char *mkey = key ? rtp_store_fmt("%s%s", key, RT_STORE_MANIFEST_SUFFIX) : NULL;
        if (!key || !mkey) st = RT_ERR(err, RT_ENOMEM, "out of memory pruning checkpoints");
        if (st == RT_OK) st = rt_store_delete(s, mkey, err); /* no longer complete */
        if (st == RT_OK) st = rt_store_delete(s, key, err);
        if (st == RT_OK && deleted) (*deleted)++;
        free(mkey);
        free(key);
    }
    rt_store_ckpt_free(c, n);
    return st;
}
