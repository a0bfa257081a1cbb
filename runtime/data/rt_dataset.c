/* rt_dataset.c - rt_dataset_load(): find a data set, download it if needed, read it.
 *
 * A named set (rt_dataset_table.c) is looked for, in this order, in
 *   1. --dir,
 *   2. the system locations (e.g. Debian's /usr/share/datasets/fashion-mnist);
 *      skipped when --url is given, since the user then asked for that source,
 *   3. the cache, $XDG_CACHE_HOME/kiln/datasets/NAME (default ~/.cache/...),
 * and otherwise downloaded from --url or the canonical mirror into --dir or the
 * cache, each file checked against its SHA-256 (the built-in table, or the
 * --sha256sums manifest). Only the missing files are fetched; a file present
 * under its final name was either put there by the user or verified when
 * downloaded (downloads are atomic), and the readers validate every byte anyway.
 * Anything else is a path: a directory of IDX files (train-images-idx3-ubyte[.gz]
 * ...), a directory of CIFAR-10 batches, or a CIFAR-10 .tar.gz.
 */
#include "rt_data_internal.h"
#include "rt_download.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const idx_stems[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                         "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

/* Copies src into dst[size], truncating; never warns, never overflows. */
static void copy_str(char *dst, size_t size, const char *src)
{
    size_t n = strnlen(src, size - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Finds the four IDX files in dir (gzipped or not; "name.idx3-ubyte" spelling too). */
static int find_idx(const char *dir, char paths[4][PATH_MAX])
{
    for (int i = 0; i < 4; i++) {
        char dotted[64];
        snprintf(dotted, sizeof dotted, "%s", idx_stems[i]);
        char *dash = strstr(dotted, "-idx");
        if (dash) *dash = '.';
        const char *cand[4] = {idx_stems[i], idx_stems[i], dotted, dotted};
        int found = 0;
        for (int k = 0; k < 4 && !found; k++) {
            snprintf(paths[i], PATH_MAX, "%s/%s%s", dir, cand[k], k % 2 == 0 ? ".gz" : "");
            found = is_file(paths[i]);
        }
        if (!found) return 0;
    }
    return 1;
}

/* A CIFAR-10 source in dir: the batches (in dir or dir/cifar-10-batches-bin), or
 * the archive. *is_tar says which. */
static int find_cifar(const char *dir, char path[PATH_MAX], int *is_tar)
{
    const char *sub[2] = {"cifar-10-batches-bin/", ""};
    for (int i = 0; i < 2; i++) {
        char probe[PATH_MAX];
        snprintf(probe, sizeof probe, "%s/%stest_batch.bin", dir, sub[i]);
        if (is_file(probe)) {
            snprintf(path, PATH_MAX, "%s/%s", dir, sub[i]);
            path[strlen(path) - 1] = '\0';   /* drop the trailing '/' */
            *is_tar = 0;
            return 1;
        }
    }
    snprintf(path, PATH_MAX, "%s/cifar-10-binary.tar.gz", dir);
    *is_tar = 1;
    return is_file(path);
}

static rt_status read_idx(rt_dataset_splits *out, char paths[4][PATH_MAX], int num_classes,
                          const char *const *class_names, const char *base, int val,
                          rt_error *err)
{
    rtp_raw_split train = {0}, test = {0};
    rt_status st = rtp_idx_read_images(paths[0], &train, err);
    if (st == RT_OK) st = rtp_idx_read_labels(paths[1], &train, num_classes, paths[0], err);
    if (st == RT_OK) st = rtp_idx_read_images(paths[2], &test, err);
    if (st == RT_OK) st = rtp_idx_read_labels(paths[3], &test, num_classes, paths[2], err);
    char digits[RT_MAX_CLASSES][12];
    const char *generic[RT_MAX_CLASSES];
    if (st == RT_OK && num_classes == 0) {   /* a path: classes = largest label + 1 */
        for (int i = 0; i < train.n; i++)
            if (train.labels[i] >= num_classes) num_classes = train.labels[i] + 1;
        for (int i = 0; i < test.n; i++)
            if (test.labels[i] >= num_classes) num_classes = test.labels[i] + 1;
        if (num_classes > RT_MAX_CLASSES)
            st = RT_ERR(err, RT_EFORMAT, "%s: labels go up to %d; at most %d classes are "
                        "supported", paths[1], num_classes - 1, RT_MAX_CLASSES);
        for (int c = 0; st == RT_OK && c < num_classes; c++) {
            snprintf(digits[c], sizeof digits[c], "%d", c);
            generic[c] = digits[c];
        }
        class_names = generic;
    }
    if (st != RT_OK) {
        rtp_raw_split_deinit(&train);
        rtp_raw_split_deinit(&test);
        return st;
    }
    rtp_prep p = {.base = base, .val = val, .num_classes = num_classes,
                  .class_names = class_names};
    return rtp_dataset_prepare(out, &train, &test, &p, err);
}

static rt_status read_cifar(rt_dataset_splits *out, const char *path, int is_tar,
                            const char *const *builtin, const char *base, int val, rt_error *err)
{
    rtp_raw_split train = {0}, test = {0};
    rtp_class_names names;
    rt_status st = is_tar ? rtp_cifar_read_tar(path, &train, &test, &names, err)
                          : rtp_cifar_read_dir(path, &train, &test, &names, err);
    if (st != RT_OK) return st;
    const char *list[RT_MAX_CLASSES];
    int n = names.count;
    for (int c = 0; c < n; c++) list[c] = names.names[c];
    if (n == 0) {
        n = 10;
        for (int c = 0; c < n; c++) list[c] = builtin[c];
    }
    rtp_prep p = {.base = base, .val = val, .num_classes = n, .class_names = list};
    return rtp_dataset_prepare(out, &train, &test, &p, err);
}

static const char *const cifar_names[10] = {"airplane", "automobile", "bird", "cat", "deer",
                                            "dog", "frog", "horse", "ship", "truck"};

/* ---- named sets ---- */

static rt_status cache_dir(const char *name, char out[PATH_MAX], rt_error *err)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (xdg && xdg[0] == '/')
        snprintf(out, PATH_MAX, "%s/kiln/datasets/%s", xdg, name);
    else if (home && home[0])
        snprintf(out, PATH_MAX, "%s/.cache/kiln/datasets/%s", home, name);
    else
        return RT_ERR(err, RT_ENOTFOUND, "no cache directory (neither XDG_CACHE_HOME nor HOME "
                      "is set) ---> HINT: give --dir");
    return RT_OK;
}

static rt_status mkdir_p(const char *path, rt_error *err)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return RT_ERR(err, RT_EIO, "cannot create %s: %s", tmp, strerror(errno));
            *p = c;
            if (!c) break;
        }
    }
    return RT_OK;
}

static int has_set(const rtp_known_set *ks, const char *dir, char idx[4][PATH_MAX],
                   char cifar[PATH_MAX], int *is_tar)
{
    return ks->format == RTP_FMT_IDX ? find_idx(dir, idx) : find_cifar(dir, cifar, is_tar);
}

/* Downloads the files of ks that dir lacks. */
static rt_status fetch_set(const rtp_known_set *ks, const char *dir,
                           const rt_dataset_opts *opts, char *source, size_t source_len,
                           rt_error *err)
{
    RT_TRY(mkdir_p(dir, err));
    const char *base = opts->url && opts->url[0] ? opts->url : ks->base_url;
    copy_str(source, source_len, base);
    for (int i = 0; i < ks->num_files; i++) {
        const rtp_known_file *kf = &ks->files[i];
        char dest[PATH_MAX], url[2048], hex[65];
        if (snprintf(dest, sizeof dest, "%s/%s", dir, kf->name) >= (int)sizeof dest)
            return RT_ERR(err, RT_EINVAL, "%s: path too long", dir);
        if (is_file(dest)) continue;
        size_t bl = strlen(base);
        if (bl > 7 && !strcmp(base + bl - 7, ".tar.gz") && ks->num_files == 1)
            snprintf(url, sizeof url, "%s", base);
        else
            snprintf(url, sizeof url, "%s%s%s", base, bl && base[bl - 1] == '/' ? "" : "/",
                     kf->name);
        if (opts->sha256sums) RT_TRY(rtp_manifest_lookup(opts->sha256sums, kf->name, hex, err));
        else snprintf(hex, sizeof hex, "%s", kf->sha256);
        rt_download_opts d = {.url = url, .dest = dest, .sha256_hex = hex,
                              .progress = opts->progress, .user = opts->user,
                              .should_stop = opts->should_stop, .retries = 3};
        RT_TRY(rt_download_file(&d, NULL, err));
    }
    return RT_OK;
}

static rt_status load_named(rt_dataset_splits *out, const rtp_known_set *ks,
                            const rt_dataset_opts *opts, rt_error *err)
{
    char idx[4][PATH_MAX], cifar[PATH_MAX], cache[PATH_MAX], where[PATH_MAX] = "";
    int is_tar = 0, use_url = opts->url && opts->url[0];
    RT_TRY(cache_dir(ks->name, cache, err));
    const char *cands[6];
    int nc = 0;
    if (opts->dir && opts->dir[0]) cands[nc++] = opts->dir;
    for (int i = 0; !use_url && ks->system_dirs[i]; i++) cands[nc++] = ks->system_dirs[i];
    cands[nc++] = cache;
    for (int i = 0; i < nc && !where[0]; i++)
        if (has_set(ks, cands[i], idx, cifar, &is_tar)) copy_str(where, sizeof where, cands[i]);
    if (where[0]) {
        copy_str(out->source, sizeof out->source, where);
    } else {
        const char *target = opts->dir && opts->dir[0] ? opts->dir : cache;
        RT_TRY(fetch_set(ks, target, opts, out->source, sizeof out->source, err));
        if (!has_set(ks, target, idx, cifar, &is_tar))
            return RT_ERR(err, RT_ENOTFOUND, "%s: files missing in %s after download",
                          ks->name, target);
    }
    rt_dataset_splits tmp = {0};
    rt_status st = ks->format == RTP_FMT_IDX
                       ? read_idx(&tmp, idx, 10, ks->class_names, ks->name, opts->val, err)
                       : read_cifar(&tmp, cifar, is_tar, ks->class_names, ks->name, opts->val, err);
    if (st != RT_OK) { rt_dataset_splits_deinit(&tmp); return st; }
    memcpy(tmp.source, out->source, sizeof tmp.source);
    *out = tmp;
    return RT_OK;
}

/* ---- paths ---- */

static rt_status load_path(rt_dataset_splits *out, const rt_dataset_opts *opts, rt_error *err)
{
    const char *path = opts->name;
    char idx[4][PATH_MAX], cifar[PATH_MAX], base[48];
    int is_tar = 0;
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/') len--;
    size_t b = len;
    while (b > 0 && path[b - 1] != '/') b--;
    snprintf(base, sizeof base, "%.*s", (int)(len - b), path + b);
    rt_status st;
    rt_dataset_splits tmp = {0};
    if (is_dir(path) && find_idx(path, idx))
        st = read_idx(&tmp, idx, 0, NULL, base, opts->val, err);
    else if (is_dir(path) && find_cifar(path, cifar, &is_tar))
        st = read_cifar(&tmp, cifar, is_tar, cifar_names, base, opts->val, err);
    else if (is_file(path) && len > 3 && (strstr(path, ".tar") || strstr(path, ".tgz")))
        st = read_cifar(&tmp, path, 1, cifar_names, base, opts->val, err);
    else if (is_dir(path))
        return RT_ERR(err, RT_ENOTFOUND, "%s: no data set here: expected IDX files "
                      "(train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], "
                      "t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz]) or CIFAR-10 "
                      "batches (data_batch_1..5.bin, test_batch.bin)", path);
    else
        return RT_ERR(err, RT_ENOTFOUND, "unknown data set \"%s\": not one of mnist, "
                      "fashion-mnist, cifar10, nor a directory of IDX or CIFAR-10 files", path);
    if (st != RT_OK) { rt_dataset_splits_deinit(&tmp); return st; }
    copy_str(tmp.source, sizeof tmp.source, path);
    *out = tmp;
    return RT_OK;
}

rt_status rt_dataset_load(rt_dataset_splits *out, const rt_dataset_opts *opts, rt_error *err)
{
    if (!out) return RT_ERR(err, RT_EINVAL, "rt_dataset_load: out is NULL");
    memset(out, 0, sizeof *out);
    if (!opts || !opts->name || !opts->name[0])
        return RT_ERR(err, RT_EINVAL, "no data set named ---> HINT: %%dataset fashion-mnist");
    if (opts->val < 0) return RT_ERR(err, RT_EINVAL, "--val %d: must be 0 or more", opts->val);
    const rtp_known_set *ks = rtp_known_set_find(opts->name);
    return ks ? load_named(out, ks, opts, err) : load_path(out, opts, err);
}

void rt_dataset_splits_deinit(rt_dataset_splits *s)
{
    if (!s) return;
    rt_dataset *d[3] = {&s->train, &s->val, &s->test};
    for (int i = 0; i < 3; i++) {
        free(d[i]->images);
        free(d[i]->labels);
        d[i]->images = NULL;
        d[i]->labels = NULL;
        d[i]->n = 0;
    }
}
