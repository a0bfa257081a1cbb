/* rt_dataset.c - rt_dataset_load(): find a data set, download it if needed, read it.
 *
 * A named set (rt_dataset_table.c) is looked for, in this order, in
 *   1. --dir,
 *   2. the system locations (e.g. Debian's /usr/share/datasets/fashion-mnist);
 *      skipped when --url is given, since the user then asked for that source,
 *   3. the cache, $XDG_CACHE_HOME/kiln/datasets/NAME (default ~/.cache/...),
 * and otherwise downloaded from --url or the canonical mirror into --dir or the
 * cache, each file checked against its SHA-256 (the built-in table, or the
 * --sha256sums manifest). A file present under its final name was either put
 * there by the user or verified when downloaded (downloads are atomic), and the
 * readers validate every byte anyway.
 * An http(s)/file URL names files on a server: IDX (URL/train-images-idx3-ubyte.gz
 * ...) or a CIFAR-10 .tar.gz; they are fetched into --dir or the cache, verified
 * when a manifest is given, else validated by their format (and gzip's CRC) only.
 * Anything else is a path: a directory of IDX files, a directory of CIFAR-10 batches
 * or CIFAR-100 files (fine labels), SVHN's two .mat files, a CIFAR-10/100 .tar.gz (a
 * name with "cifar" / "cifar-100" in it), a pixel CSV (label,pixel0,...: rt_pixcsv.c),
 * or else an image folder (rt_imgfolder_load.c): class folders, split folders, a CSV
 * of path,label, or an archive of them.
 */
#include "rt_data_internal.h"
#include "rt_imgfolder_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>

static const char *const idx_files[4] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                                         "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
static const char *const digit_names[10] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
static const char *const cifar_names[10] = {"airplane", "automobile", "bird",  "cat",  "deer",
                                            "dog",      "frog",       "horse", "ship", "truck"};

/* ---- reading (num_classes 0: a path, classes = largest label + 1) ---- */

static rt_status read_idx(rt_dataset_splits *out, char paths[4][PATH_MAX], int num_classes,
                          const char *const *class_names, const char *base,
                          const rt_dataset_opts *opts, rt_error *err)
{
    rtp_raw_split train = {0}, test = {0};
    rtp_stop stop = {opts->should_stop, opts->user};
    int val = opts->val;
    rt_status st = rtp_idx_read_images(paths[0], &train, &stop, err);
    if (st == RT_OK) st = rtp_idx_read_labels(paths[1], &train, num_classes, paths[0], err);
    if (st == RT_OK) st = rtp_idx_read_images(paths[2], &test, &stop, err);
    if (st == RT_OK) st = rtp_idx_read_labels(paths[3], &test, num_classes, paths[2], err);
    char digits[RT_MAX_CLASSES][12];
    const char *generic[RT_MAX_CLASSES];
    if (st == RT_OK && num_classes == 0) {
        for (int i = 0; i < train.n; i++)
            if (train.labels[i] >= num_classes) num_classes = train.labels[i] + 1;
        for (int i = 0; i < test.n; i++)
            if (test.labels[i] >= num_classes) num_classes = test.labels[i] + 1;
        if (num_classes > RT_MAX_CLASSES)
            st = RT_ERR(err, RT_EFORMAT,
                        "%s: labels go up to %d; at most %d classes are "
                        "supported",
                        paths[1], num_classes - 1, RT_MAX_CLASSES);
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
    rtp_prep p = {.base = base, .val = val, .num_classes = num_classes, .class_names = class_names};
    return rtp_dataset_prepare(out, &train, &test, &p, err);
}

static rt_status read_cifar(rt_dataset_splits *out, const char *path, int is_tar,
                            const char *const *builtin, const char *base,
                            const rt_dataset_opts *opts, rt_error *err)
{
    rtp_raw_split train = {0}, test = {0};
    rtp_class_names names;
    rtp_stop stop = {opts->should_stop, opts->user};
    int val = opts->val;
    rt_status st = is_tar ? rtp_cifar_read_tar(path, &train, &test, &names, &stop, err)
                          : rtp_cifar_read_dir(path, &train, &test, &names, &stop, err);
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

static rt_status read_cifar100(rt_dataset_splits *out, const char *path, int is_tar, int coarse,
                               const char *const *builtin, const char *base,
                               const rt_dataset_opts *opts, rt_error *err)
{
    rtp_raw_split train = {0}, test = {0};
    rtp_class_names names;
    rtp_stop stop = {opts->should_stop, opts->user};
    rt_status st = is_tar ? rtp_cifar100_read_tar(path, coarse, &train, &test, &names, &stop, err)
                          : rtp_cifar100_read_dir(path, coarse, &train, &test, &names, &stop, err);
    if (st != RT_OK) return st;
    const char *list[RT_MAX_CLASSES];
    int n = coarse ? 20 : 100;
    for (int c = 0; c < n; c++) list[c] = names.count ? names.names[c] : builtin[c];
    rtp_prep p = {.base = base, .val = opts->val, .num_classes = n, .class_names = list};
    return rtp_dataset_prepare(out, &train, &test, &p, err);
}

static rt_status read_svhn(rt_dataset_splits *out, char paths[2][PATH_MAX], const char *base,
                           const rt_dataset_opts *opts, rt_error *err)
{
    rtp_raw_split train = {0}, test = {0};
    rtp_stop stop = {opts->should_stop, opts->user};
    rt_status st = rtp_svhn_read_mat(paths[0], &train, &stop, err);
    if (st == RT_OK) st = rtp_svhn_read_mat(paths[1], &test, &stop, err);
    if (st != RT_OK) {
        rtp_raw_split_deinit(&train);
        return st;
    }
    rtp_prep p = {.base = base, .val = opts->val, .num_classes = 10, .class_names = digit_names};
    return rtp_dataset_prepare(out, &train, &test, &p, err);
}

/* A pixel CSV with labels: the training split (carve val with --val), no test split. */
static rt_status read_pixcsv(rt_dataset_splits *out, const char *path, const char *base,
                             const rt_dataset_opts *opts, rt_error *err)
{
    rtp_raw_split train = {0};
    rtp_stop stop = {opts->should_stop, opts->user};
    int labelled = 0;
    RT_TRY(rtp_pixcsv_read(path, opts->shape, &train, &labelled, &stop, err));
    int n = 0, same = 1;
    for (int i = 0; i < train.n; i++) {
        if (train.labels[i] >= n) n = train.labels[i] + 1;
        same &= train.labels[i] == train.labels[0];
    }
    rt_status st = RT_OK;
    if (!labelled)
        st = RT_ERR(err, RT_EINVAL,
                    "%s: the file has no label column (its header starts with pixel0): a file "
                    "to predict on, not to train on ---> HINT: %%predict MODEL %s",
                    path, path);
    else if (same)
        st = RT_ERR(err, RT_EFORMAT, "%s: every row has label %d: one class is nothing to learn",
                    path, train.labels[0]);
    if (st != RT_OK) {
        rtp_raw_split_deinit(&train);
        return st;
    }
    char digits[RT_MAX_CLASSES][12];
    const char *names[RT_MAX_CLASSES];
    for (int c = 0; c < n; c++) {
        snprintf(digits[c], sizeof digits[c], "%d", c);
        names[c] = digits[c];
    }
    rtp_raw_split test = {.c = train.c, .h = train.h, .w = train.w};
    rtp_prep p = {.base = base, .val = opts->val, .num_classes = n, .class_names = names};
    return rtp_dataset_prepare(out, &train, &test, &p, err);
}

/* Prefixes err->msg with where we looked, when that still fits. */
static rt_status not_found_locally(rt_status st, const char *name, const char *const *cands, int nc,
                                   rt_error *err)
{
    if (!err) return st;
    char pre[sizeof err->msg];
    int k = snprintf(pre, sizeof pre, "%s is not in", name);
    for (int i = 0; i < nc && k > 0 && (size_t)k < sizeof pre; i++)
        k += snprintf(pre + k, sizeof pre - (size_t)k, "%s %s", i ? "," : "", cands[i]);
    if (k > 0 && (size_t)k + 20 + strlen(err->msg) < sizeof err->msg) {
        char msg[sizeof err->msg];
        if (snprintf(msg, sizeof msg, "%s; download failed: %s", pre, err->msg) > 0)
            memcpy(err->msg, msg, sizeof msg);
    }
    return st;
}

/* The named set's files in dir: IDX paths and SVHN's two files go to idx, a CIFAR source
 * to cifar. */
static int find_named(const rtp_known_set *ks, const char *dir, char idx[4][PATH_MAX],
                      char cifar[PATH_MAX], int *is_tar)
{
    switch (ks->format) {
    case RTP_FMT_IDX: return rtp_find_idx(dir, idx);
    case RTP_FMT_CIFAR: return rtp_find_cifar(dir, cifar, is_tar);
    case RTP_FMT_CIFAR100: return rtp_find_cifar100(dir, cifar, is_tar);
    default: return rtp_find_svhn(dir, idx);
    }
}

static rt_status load_named(rt_dataset_splits *out, const rtp_known_set *ks,
                            const rt_dataset_opts *opts, rt_error *err)
{
    char idx[4][PATH_MAX], cifar[PATH_MAX], cache[PATH_MAX];
    const char *where = NULL;
    int is_tar = 0, use_url = opts->url && opts->url[0];
    rt_error cache_err = {0};
    int have_cache =
        rtp_cache_dir(ks->files_of ? ks->files_of : ks->name, cache, &cache_err) == RT_OK;
    const char *cands[6];
    int nc = 0;
    if (opts->dir && opts->dir[0]) cands[nc++] = opts->dir;
    for (int i = 0; !use_url && ks->system_dirs[i]; i++) cands[nc++] = ks->system_dirs[i];
    if (have_cache) cands[nc++] = cache;
    for (int i = 0; i < nc && !where; i++)
        if (find_named(ks, cands[i], idx, cifar, &is_tar)) where = cands[i];
    if (where) {
        rtp_copy_str(out->source, sizeof out->source, where);
    } else {
        if (!(opts->dir && opts->dir[0]) && !have_cache) { /* nowhere to download to */
            if (err) *err = cache_err;
            return cache_err.code;
        }
        const char *target = opts->dir && opts->dir[0] ? opts->dir : cache;
        const char *base = use_url ? opts->url : ks->base_url;
        size_t bl = strlen(base);
        char urls[4][2048];
        rtp_fetch_file files[4];
        for (int i = 0; i < ks->num_files; i++) {
            if (ks->num_files == 1 && bl > 7 && !strcmp(base + bl - 7, ".tar.gz"))
                rtp_copy_str(urls[i], sizeof urls[i], base); /* --url is the archive */
            else
                snprintf(urls[i], sizeof urls[i], "%s%s%s", base,
                         bl && base[bl - 1] == '/' ? "" : "/", ks->files[i].name);
            files[i] = (rtp_fetch_file){ks->files[i].name, urls[i], ks->files[i].sha256};
        }
        rt_status st = rtp_fetch(target, files, ks->num_files, opts, err);
        if (st != RT_OK) return not_found_locally(st, ks->name, cands, nc, err);
        if (!find_named(ks, target, idx, cifar, &is_tar))
            return RT_ERR(err, RT_ENOTFOUND, "%s: files missing in %s after download", ks->name,
                          target);
        rtp_copy_str(out->source, sizeof out->source, base);
    }
    rt_dataset_splits tmp = {0};
    rt_status st;
    if (ks->format == RTP_FMT_IDX)
        st = read_idx(&tmp, idx, ks->num_classes, ks->class_names, ks->name, opts, err);
    else if (ks->format == RTP_FMT_CIFAR)
        st = read_cifar(&tmp, cifar, is_tar, ks->class_names, ks->name, opts, err);
    else if (ks->format == RTP_FMT_CIFAR100)
        st = read_cifar100(&tmp, cifar, is_tar, ks->coarse, ks->class_names, ks->name, opts, err);
    else st = read_svhn(&tmp, idx, ks->name, opts, err);
    if (st != RT_OK) {
        rt_dataset_splits_deinit(&tmp);
        return st;
    }
    memcpy(tmp.source, out->source, sizeof tmp.source);
    *out = tmp;
    return RT_OK;
}

/* ---- URLs and paths ---- */

static int is_url(const char *s)
{
    return !strncmp(s, "http://", 7) || !strncmp(s, "https://", 8) || !strncmp(s, "file://", 7);
}

static int is_archive_name(const char *s)
{
    size_t l = strlen(s);
    return (l > 7 && !strcmp(s + l - 7, ".tar.gz")) || (l > 4 && !strcmp(s + l - 4, ".tgz"));
}

/* A CSV of path,label or an archive an image folder can be packed in. */
static int is_image_set_file(const char *s)
{
    size_t l = strlen(s);
    return is_archive_name(s) ||
           (l > 4 && (!strcasecmp(s + l - 4, ".csv") || !strcasecmp(s + l - 4, ".zip") ||
                      !strcasecmp(s + l - 4, ".tar")));
}

/* CIFAR-100's fine class names, for files read by path or URL. */
static const char *const *cifar100_names(void)
{
    return rtp_known_set_find("cifar100")->class_names;
}

/* "cifar-100-binary", "cifar100": a CIFAR-100 archive by its name. */
static int is_cifar100_name(const char *base)
{
    return strcasestr(base, "cifar-100") || strcasestr(base, "cifar100") ||
           strcasestr(base, "cifar_100");
}

/* A .csv whose header is label,pixel0,... (or pixel0,...): images as pixel rows. */
static int is_pixel_csv(const char *path)
{
    size_t l = strlen(path);
    return l > 4 && !strcasecmp(path + l - 4, ".csv") && rtp_is_file(path) &&
           rtp_pixcsv_sniff(path);
}

static rt_status load_url(rt_dataset_splits *out, const rt_dataset_opts *opts, rt_error *err)
{
    const char *url = opts->name;
    char base[48], dir[PATH_MAX], key[32], urls[4][2048], fname[256];
    rtp_base_name(url, base, sizeof base);
    if (opts->dir && opts->dir[0]) {
        rtp_copy_str(dir, sizeof dir, opts->dir);
    } else { /* one cache folder per URL */
        uint64_t h = rtp_fnv1a64(RTP_FNV1A64_INIT, (const uint8_t *)url, strlen(url));
        snprintf(key, sizeof key, "url-%016llx", (unsigned long long)h);
        RT_TRY(rtp_cache_dir(key, dir, err));
    }
    rtp_fetch_file files[4];
    int n = 0, archive = is_archive_name(url);
    if (archive) {
        const char *slash = strrchr(url, '/');
        rtp_copy_str(fname, sizeof fname, slash ? slash + 1 : url);
        files[n++] = (rtp_fetch_file){fname, url, NULL};
    } else {
        size_t ul = strlen(url);
        for (int i = 0; i < 4; i++) {
            snprintf(urls[i], sizeof urls[i], "%s%s%s", url, ul && url[ul - 1] == '/' ? "" : "/",
                     idx_files[i]);
            files[n++] = (rtp_fetch_file){idx_files[i], urls[i], NULL};
        }
    }
    RT_TRY(rtp_fetch(dir, files, n, opts, err));
    rt_dataset_splits tmp = {0};
    char paths[4][PATH_MAX];
    rt_status st = RT_OK;
    for (int i = 0; i < n; i++) /* rtp_fetch already refused paths that do not fit */
        if (snprintf(paths[i], PATH_MAX, "%s/%s", dir, files[i].name) >= PATH_MAX)
            st = RT_ERR(err, RT_EINVAL, "%s: path too long", dir);
    if (st == RT_OK)
        st = archive && is_cifar100_name(base)
                 ? read_cifar100(&tmp, paths[0], 1, 0, cifar100_names(), base, opts, err)
             : archive ? read_cifar(&tmp, paths[0], 1, cifar_names, base, opts, err)
                       : read_idx(&tmp, paths, 0, NULL, base, opts, err);
    if (st != RT_OK) {
        rt_dataset_splits_deinit(&tmp);
        return st;
    }
    rtp_copy_str(tmp.source, sizeof tmp.source, url);
    *out = tmp;
    return RT_OK;
}

static rt_status load_path(rt_dataset_splits *out, const rt_dataset_opts *opts, rt_error *err)
{
    const char *path = opts->name;
    char idx[4][PATH_MAX], cifar[PATH_MAX], base[48];
    int is_tar = 0;
    rtp_base_name(path, base, sizeof base);
    rt_status st = RT_OK;
    rt_dataset_splits tmp = {0};
    if (rtp_is_dir(path) && rtp_find_idx(path, idx))
        st = read_idx(&tmp, idx, 0, NULL, base, opts, err);
    else if (rtp_is_dir(path) && rtp_find_cifar(path, cifar, &is_tar))
        st = read_cifar(&tmp, cifar, is_tar, cifar_names, base, opts, err);
    else if (rtp_is_dir(path) && rtp_find_cifar100(path, cifar, &is_tar))
        st = read_cifar100(&tmp, cifar, is_tar, 0, cifar100_names(), base, opts, err);
    else if (rtp_is_dir(path) && rtp_find_svhn(path, idx))
        st = read_svhn(&tmp, idx, base, opts, err);
    else if (is_pixel_csv(path)) st = read_pixcsv(&tmp, path, base, opts, err);
    else if (rtp_is_file(path) && is_archive_name(path) && is_cifar100_name(base))
        st = read_cifar100(&tmp, path, 1, 0, cifar100_names(), base, opts, err);
    else if (rtp_is_file(path) && is_archive_name(path) && strcasestr(base, "cifar"))
        st = read_cifar(&tmp, path, 1, cifar_names, base, opts, err);
    else if (rtp_is_file(path) && is_archive_name(path)) {
        st = rtp_imgfolder_load(&tmp, opts, base, err); /* images, else CIFAR batches */
        if (st == RT_ENOTFOUND) st = read_cifar(&tmp, path, 1, cifar_names, base, opts, err);
    } else if (rtp_is_dir(path) || (rtp_is_file(path) && is_image_set_file(path)))
        st = rtp_imgfolder_load(&tmp, opts, base, err); /* an image folder (its error,
                                                             when none: what may be here) */
    else if (rtp_is_file(path))
        return RT_ERR(err, RT_EINVAL,
                      "%s: give the directory that holds the IDX files or "
                      "the class folders, a CSV of path,label or of label,pixel0,..., an archive "
                      "(.zip, .tar.gz) of class folders, or a CIFAR-10/100 .tar.gz",
                      path);
    else if (strchr(path, '/') || path[0] == '.' || path[0] == '~')
        return RT_ERR(err, RT_ENOTFOUND, "%s: no such file or directory", path);
    else
        return RT_ERR(err, RT_ENOTFOUND,
                      "unknown data set \"%s\": not one of mnist, fashion-mnist, cifar10, "
                      "cifar100, cifar100-coarse, svhn, nor a directory of IDX or CIFAR files",
                      path);
    if (st != RT_OK) {
        rt_dataset_splits_deinit(&tmp);
        return st;
    }
    rtp_copy_str(tmp.source, sizeof tmp.source, path);
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
    if (ks) return load_named(out, ks, opts, err);
    return is_url(opts->name) ? load_url(out, opts, err) : load_path(out, opts, err);
}

void rt_dataset_splits_deinit(rt_dataset_splits *s)
{
    if (!s) return;
    rt_dataset *d[3] = {&s->train, &s->val, &s->test};
    for (int i = 0; i < 3; i++) {
        free(d[i]->images);
        free(d[i]->labels);
        free(d[i]->index);
        d[i]->images = NULL;
        d[i]->labels = NULL;
        d[i]->index = NULL;
        d[i]->pixels = NULL;
        d[i]->n = 0;
    }
    free(s->heap[0]);
    free(s->heap[1]);
    s->heap[0] = s->heap[1] = NULL;
    if (s->map) munmap(s->map, s->map_len);
    s->map = NULL;
    s->map_len = 0;
}
