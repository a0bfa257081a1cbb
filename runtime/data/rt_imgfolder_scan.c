/* rt_imgfolder_scan.c - the layouts an image folder may have, as a list of files.
 *
 *   PATH/<class>/[sub/]NAME.{png,jpg,jpeg}               torchvision's ImageFolder
 *   PATH/train/<class>/..., PATH/{val,valid,validation,test}/<class>/...   split folders
 *   PATH.csv with "path,label" lines (paths relative to the CSV; an optional header)
 *   a .zip / .tar / .tar.gz / .tgz of any of those (rt_imgfolder_archive.c)
 * Classes are the folder (or label) names in byte order, as ImageFolder sorts them;
 * files in a class folder are found at any depth, in name order; names starting with
 * '.' (.ipynb_checkpoints, .DS_Store) and files of other extensions are ignored. The
 * split layout takes its classes from train/; another split naming a class train does
 * not have is an error, as is an empty class folder or a single class.
 * Every file read lies under the data set's own folder (the CSV's folder for a CSV):
 * a symbolic link in the folder, or a CSV line ("../x.png", "/etc/passwd"), that leads
 * outside it is an error naming it, unless KILN_DATASET_ALLOW_OUTSIDE=1 says such
 * files may be read (rtp_img_inside).
 */
#include "rt_imgfolder_internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

void rtp_img_list_deinit(rtp_img_list *l)
{
    if (!l) return;
    for (int i = 0; i < l->n; i++) {
        free(l->v[i].path);
        free(l->v[i].mem);
    }
    free(l->v);
    memset(l, 0, sizeof *l);
}

rt_status rtp_img_list_add(rtp_img_list *l, const char *path, uint8_t *mem, size_t mem_len,
                           int label, int split, rt_error *err)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 256;
        rtp_img_entry *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v) {
            free(mem);
            return RT_ERR(err, RT_ENOMEM, "out of memory listing images");
        }
        l->v = v;
        l->cap = cap;
    }
    char *p = strdup(path);
    if (!p) {
        free(mem);
        return RT_ERR(err, RT_ENOMEM, "out of memory listing images");
    }
    l->v[l->n++] = (rtp_img_entry){p, mem, mem_len, label, split};
    return RT_OK;
}

/* 1 when KILN_DATASET_ALLOW_OUTSIDE=1 lets a data set read files outside its folder. */
static int outside_allowed(void)
{
    const char *v = getenv("KILN_DATASET_ALLOW_OUTSIDE");
    return v && !strcmp(v, "1");
}

rt_status rtp_img_inside(const char *root, const char *file, const char *what, rt_error *err)
{
    char real[PATH_MAX];
    if (!realpath(file, real)) return RT_ERR(err, RT_ENOTFOUND, "%s: no such file", what);
    size_t n = strlen(root);
    int inside = !strncmp(real, root, n) && (real[n] == '/' || (n == 1 && root[0] == '/'));
    if (inside || outside_allowed()) return RT_OK;
    return RT_ERR(err, RT_EINVAL,
                  "%s leads to '%s', outside the data set's folder %s: not read ---> HINT: "
                  "put the file in the folder, or set KILN_DATASET_ALLOW_OUTSIDE=1 to let a "
                  "data set read files outside its folder",
                  what, real, root);
}

static int has_image_ext(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot &&
           (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg"));
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The visible entries of dir as paths "dir/name", sorted: *n of them in *out (caller
 * frees with free_names). RT_EIO when dir cannot be read, RT_EINVAL when a path does not
 * fit PATH_MAX. */
static rt_status list_dir(const char *dir, char ***out, int *n, rt_error *err)
{
    DIR *d = opendir(dir);
    *out = NULL;
    *n = 0;
    if (!d) return RT_ERR(err, RT_EIO, "%s: cannot read the folder", dir);
    char **v = NULL, *path;
    int k = 0, cap = 0, too_long = 0;
    for (struct dirent *e; !too_long && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        if (k == cap) {
            cap = cap ? 2 * cap : 64;
            char **nv = realloc(v, (size_t)cap * sizeof *nv);
            if (!nv) break;
            v = nv;
        }
        if (asprintf(&path, "%s/%s", dir, e->d_name) < 0) break;
        too_long = strlen(path) >= PATH_MAX;
        v[k++] = path;
    }
    closedir(d);
    if (k) qsort(v, (size_t)k, sizeof *v, cmp_str);
    *out = v;
    *n = k;
    if (too_long) return RT_ERR(err, RT_EINVAL, "%s: a path in it is too long", dir);
    return RT_OK;
}

static void free_names(char **v, int n)
{
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

/* Adds every image under dir (any depth, name order) with label/split; *added counts.
 * root: the data set's folder (real path), which a link must not lead out of. */
static rt_status walk(rtp_img_list *l, const char *root, const char *dir, int label, int split,
                      int depth, int *added, rt_error *err)
{
    char **paths;
    int n;
    rt_status st = list_dir(dir, &paths, &n, err);
    for (int i = 0; i < n && st == RT_OK; i++) {
        const char *path = paths[i], *name = path + strlen(dir) + 1;
        struct stat sb;
        if (lstat(path, &sb) != 0) continue;
        if (S_ISLNK(sb.st_mode)) {
            if (stat(path, &sb) != 0) continue; /* a dangling link: not an image */
            if ((S_ISDIR(sb.st_mode) || (S_ISREG(sb.st_mode) && has_image_ext(name))) &&
                (st = rtp_img_inside(root, path, path, err)) != RT_OK)
                break;
        }
        if (S_ISDIR(sb.st_mode)) {
            if (depth < 16) st = walk(l, root, path, label, split, depth + 1, added, err);
        } else if (S_ISREG(sb.st_mode) && has_image_ext(name)) {
            st = rtp_img_list_add(l, path, NULL, 0, label, split, err);
            if (st == RT_OK) {
                uint64_t meta[3] = {(uint64_t)sb.st_size, (uint64_t)sb.st_mtim.tv_sec,
                                    (uint64_t)sb.st_mtim.tv_nsec};
                l->key = rtp_fnv1a64(l->key, (const uint8_t *)path, strlen(path) + 1);
                l->key = rtp_fnv1a64(l->key, (const uint8_t *)meta, sizeof meta);
                (*added)++;
            }
        }
    }
    free_names(paths, n);
    return st;
}

static int find_class(const rtp_img_list *l, const char *name)
{
    for (int c = 0; c < l->num_classes; c++)
        if (!strncmp(l->names[c], name, sizeof l->names[c] - 1) &&
            strlen(name) < sizeof l->names[c])
            return c;
    return -1;
}

/* The class folders of dir (split `split`). When define, they become the classes;
 * otherwise each must be one of them. */
static rt_status scan_classes(rtp_img_list *l, const char *root, const char *dir, int split,
                              int define, rt_error *err)
{
    char **paths;
    int n;
    rt_status st = list_dir(dir, &paths, &n, err);
    for (int i = 0; i < n && st == RT_OK; i++) {
        const char *path = paths[i], *name = path + strlen(dir) + 1;
        if (!rtp_is_dir(path)) continue;
        int label = find_class(l, name);
        if (define) {
            if (l->num_classes == RT_MAX_CLASSES)
                st = RT_ERR(err, RT_EFORMAT, "%s: more than %d class folders", dir, RT_MAX_CLASSES);
            else if (strlen(name) >= sizeof l->names[0])
                st = RT_ERR(err, RT_EFORMAT, "%s: class name longer than %zu bytes", path,
                            sizeof l->names[0] - 1);
            else label = l->num_classes++, rtp_copy_str(l->names[label], sizeof l->names[0], name);
        } else if (label < 0) {
            st = RT_ERR(err, RT_EFORMAT,
                        "%s: class '%s' is not among the training classes "
                        "(folders of %s/train)",
                        path, name, dir);
        }
        int added = 0;
        struct stat sb;
        if (st == RT_OK && lstat(path, &sb) == 0 && S_ISLNK(sb.st_mode))
            st = rtp_img_inside(root, path, path, err); /* a class folder that is a link */
        if (st == RT_OK) st = walk(l, root, path, label, split, 0, &added, err);
        if (st == RT_OK && added == 0)
            st = RT_ERR(err, RT_EFORMAT,
                        "%s: an empty class folder (no .png, .jpg or .jpeg "
                        "files) ---> HINT: remove it or add images",
                        path);
    }
    free_names(paths, n);
    return st;
}

static rt_status check_classes(const rtp_img_list *l, const char *path, rt_error *err)
{
    if (l->num_classes == 0) /* RT_ENOTFOUND: no data set of any kind is here */
        return RT_ERR(err, RT_ENOTFOUND,
                      "%s: no data set here: expected class folders "
                      "(%s/<class>/*.png|jpg, or train/<class>/... and val/, test/), IDX files "
                      "(train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], "
                      "t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz]) or CIFAR-10 "
                      "batches (data_batch_1..5.bin, test_batch.bin)",
                      path, path);
    if (l->num_classes == 1)
        return RT_ERR(err, RT_EFORMAT,
                      "%s: only one class ('%s'); a classifier needs at "
                      "least two class folders",
                      path, l->names[0]);
    return RT_OK;
}

static rt_status scan_dir(const char *path, rtp_img_list *l, rt_error *err)
{
    char sub[PATH_MAX], root[PATH_MAX];
    if (!realpath(path, root)) return RT_ERR(err, RT_ENOTFOUND, "%s: cannot read the folder", path);
    if (snprintf(sub, sizeof sub, "%s/train", path) < (int)sizeof sub && rtp_is_dir(sub)) {
        l->layout = "split folders";
        RT_TRY(scan_classes(l, root, sub, RTP_SPLIT_TRAIN, 1, err));
        RT_TRY(check_classes(l, sub, err));
        static const char *const other[] = {"val", "valid", "validation", "test"};
        for (int i = 0; i < 4; i++)
            if (snprintf(sub, sizeof sub, "%s/%s", path, other[i]) < (int)sizeof sub &&
                rtp_is_dir(sub))
                RT_TRY(scan_classes(l, root, sub, i < 3 ? RTP_SPLIT_VAL : RTP_SPLIT_TEST, 0, err));
        return RT_OK;
    }
    l->layout = "folder";
    RT_TRY(scan_classes(l, root, path, RTP_SPLIT_TRAIN, 1, err));
    return check_classes(l, path, err);
}

/* ---- CSV ---- */

static int cmp_label(const void *a, const void *b, void *names)
{
    char(*nm)[32] = names;
    return strcmp(nm[*(const int *)a], nm[*(const int *)b]);
}

static rt_status scan_csv(const char *path, rtp_img_list *l, rt_error *err)
{
    FILE *f = fopen(path, "r");
    if (!f) return RT_ERR(err, RT_ENOTFOUND, "%s: cannot open the CSV", path);
    l->layout = "csv";
    char dir[PATH_MAX], line[PATH_MAX + 64], file[PATH_MAX], root[PATH_MAX];
    char what[2 * PATH_MAX + 128];
    rtp_copy_str(dir, sizeof dir, path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else rtp_copy_str(dir, sizeof dir, ".");
    rt_status st = RT_OK;
    if (!realpath(dir, root)) {
        fclose(f);
        return RT_ERR(err, RT_ENOTFOUND, "%s: cannot read its folder", path);
    }
    for (int ln = 1; st == RT_OK && fgets(line, sizeof line, f); ln++) {
        line[strcspn(line, "\r\n")] = '\0';
        char *comma = strrchr(line, ',');
        if (!line[0]) continue;
        if (!comma || comma == line || !comma[1]) {
            st = RT_ERR(err, RT_EFORMAT, "%s line %d: expected path,label, got '%.80s'", path, ln,
                        line);
            break;
        }
        *comma = '\0';
        const char *label = comma + 1;
        if (ln == 1 && (!strcasecmp(line, "path") || !strcasecmp(line, "file") ||
                        !strcasecmp(line, "filename") || !strcasecmp(line, "image")))
            continue; /* a header */
        int c = find_class(l, label);
        if (c < 0) {
            if (l->num_classes == RT_MAX_CLASSES || strlen(label) >= sizeof l->names[0]) {
                st = RT_ERR(err, RT_EFORMAT,
                            "%s line %d: label '%.40s': more than %d "
                            "classes or a name over 31 bytes",
                            path, ln, label, RT_MAX_CLASSES);
                break;
            }
            c = l->num_classes++;
            rtp_copy_str(l->names[c], sizeof l->names[0], label);
        }
        if (snprintf(file, sizeof file, "%s/%s", line[0] == '/' ? "" : dir,
                     line[0] == '/' ? line + 1 : line) >= (int)sizeof file) {
            st = RT_ERR(err, RT_EINVAL, "%s line %d: path too long", path, ln);
            break;
        }
        struct stat sb;
        if (stat(file, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            st = RT_ERR(err, RT_ENOTFOUND, "%s line %d: %s: no such file", path, ln, file);
            break;
        }
        snprintf(what, sizeof what, "%s line %d: %s", path, ln, line);
        if ((st = rtp_img_inside(root, file, what, err)) != RT_OK) break; /* ../, /etc/... */
        uint64_t meta[4] = {(uint64_t)sb.st_size, (uint64_t)sb.st_mtim.tv_sec,
                            (uint64_t)sb.st_mtim.tv_nsec, (uint64_t)c};
        l->key = rtp_fnv1a64(l->key, (const uint8_t *)file, strlen(file) + 1);
        l->key = rtp_fnv1a64(l->key, (const uint8_t *)meta, sizeof meta);
        l->key = rtp_fnv1a64(l->key, (const uint8_t *)label, strlen(label) + 1);
        st = rtp_img_list_add(l, file, NULL, 0, c, RTP_SPLIT_TRAIN, err);
    }
    fclose(f);
    if (st != RT_OK) return st;
    /* classes in name order, as for folders: relabel */
    int order[RT_MAX_CLASSES], rank[RT_MAX_CLASSES];
    char names[RT_MAX_CLASSES][32];
    for (int c = 0; c < l->num_classes; c++) order[c] = c;
    qsort_r(order, (size_t)l->num_classes, sizeof order[0], cmp_label, l->names);
    memcpy(names, l->names, sizeof names);
    for (int c = 0; c < l->num_classes; c++) {
        rank[order[c]] = c;
        memcpy(l->names[c], names[order[c]], sizeof names[0]);
    }
    for (int i = 0; i < l->n; i++) l->v[i].label = rank[l->v[i].label];
    if (l->n == 0) return RT_ERR(err, RT_EFORMAT, "%s: no path,label lines", path);
    return check_classes(l, path, err);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcasecmp(s + a - b, suffix);
}

int rtp_img_is_archive(const char *path)
{
    return ends_with(path, ".zip") || ends_with(path, ".tar") || ends_with(path, ".tar.gz") ||
           ends_with(path, ".tgz");
}

rt_status rtp_img_scan(const char *path, rtp_img_list *out, rt_error *err)
{
    memset(out, 0, sizeof *out);
    out->key = RTP_FNV1A64_INIT;
    rt_status st;
    if (rtp_is_dir(path)) st = scan_dir(path, out, err);
    else if (rtp_is_file(path) && ends_with(path, ".csv")) st = scan_csv(path, out, err);
    else if (rtp_is_file(path) && rtp_img_is_archive(path))
        st = rtp_img_scan_archive(path, out, err);
    else st = RT_ERR(err, RT_ENOTFOUND, "%s: not an image folder, a .csv or an archive", path);
    if (st != RT_OK) rtp_img_list_deinit(out);
    return st;
}

/* An archive is keyed by its own name, size and time: listing it means reading it. */
static uint64_t archive_key(const char *path, const struct stat *sb)
{
    uint64_t meta[3] = {(uint64_t)sb->st_size, (uint64_t)sb->st_mtim.tv_sec,
                        (uint64_t)sb->st_mtim.tv_nsec};
    uint64_t k = rtp_fnv1a64(RTP_FNV1A64_INIT, (const uint8_t *)path, strlen(path) + 1);
    return rtp_fnv1a64(k, (const uint8_t *)meta, sizeof meta);
}

uint64_t rtp_img_folder_key(const char *path, const rtp_img_list *l)
{
    struct stat sb;
    if (rtp_img_is_archive(path) && stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
        return archive_key(path, &sb);
    return l->key;
}

rt_status rt_dataset_folder_key(const char *path, uint64_t *key, rt_error *err)
{
    *key = 0;
    struct stat sb;
    if (rtp_img_is_archive(path) && stat(path, &sb) == 0 && S_ISREG(sb.st_mode)) {
        *key = archive_key(path, &sb);
        return RT_OK;
    }
    rtp_img_list l;
    RT_TRY(rtp_img_scan(path, &l, err));
    *key = l.key;
    rtp_img_list_deinit(&l);
    return RT_OK;
}
