/* rt_dataset_fs.c - where data set files are on disk: finding IDX and CIFAR-10
 * (CIFAR-100, SVHN) files in a directory, the cache directory, mkdir -p, names for splits.
 * Nothing here reads file contents; the readers do that.
 */
#include "rt_data_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const idx_stems[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                         "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};

void rtp_copy_str(char *dst, size_t size, const char *src)
{
    size_t n = strnlen(src, size - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
}

int rtp_is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int rtp_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int rtp_find_idx(const char *dir, char paths[4][PATH_MAX])
{
    for (int i = 0; i < 4; i++) {
        char dotted[64];
        rtp_copy_str(dotted, sizeof dotted, idx_stems[i]);
        char *dash = strstr(dotted, "-idx");
        if (dash) *dash = '.';
        const char *cand[4] = {idx_stems[i], idx_stems[i], dotted, dotted};
        int found = 0;
        for (int k = 0; k < 4 && !found; k++) {
            if (snprintf(paths[i], PATH_MAX, "%s/%s%s", dir, cand[k], k % 2 == 0 ? ".gz" : "") >=
                PATH_MAX)
                return 0;
            found = rtp_is_file(paths[i]);
        }
        if (!found) return 0;
    }
    return 1;
}

int rtp_find_cifar(const char *dir, char path[PATH_MAX], int *is_tar)
{
    const char *sub[2] = {"/cifar-10-batches-bin", ""};
    for (int i = 0; i < 2; i++) {
        char probe[PATH_MAX];
        if (snprintf(probe, sizeof probe, "%s%s/test_batch.bin", dir, sub[i]) >= PATH_MAX) return 0;
        if (rtp_is_file(probe)) {
            snprintf(path, PATH_MAX, "%s%s", dir, sub[i]);
            *is_tar = 0;
            return 1;
        }
    }
    *is_tar = 1;
    return snprintf(path, PATH_MAX, "%s/cifar-10-binary.tar.gz", dir) < PATH_MAX &&
           rtp_is_file(path);
}

int rtp_find_cifar100(const char *dir, char path[PATH_MAX], int *is_tar)
{
    const char *sub[2] = {"/cifar-100-binary", ""};
    for (int i = 0; i < 2; i++) {
        char probe[PATH_MAX], probe2[PATH_MAX];
        if (snprintf(probe, sizeof probe, "%s%s/test.bin", dir, sub[i]) >= PATH_MAX ||
            snprintf(probe2, sizeof probe2, "%s%s/train.bin", dir, sub[i]) >= PATH_MAX)
            return 0;
        if (rtp_is_file(probe) && rtp_is_file(probe2)) {
            snprintf(path, PATH_MAX, "%s%s", dir, sub[i]);
            *is_tar = 0;
            return 1;
        }
    }
    *is_tar = 1;
    return snprintf(path, PATH_MAX, "%s/cifar-100-binary.tar.gz", dir) < PATH_MAX &&
           rtp_is_file(path);
}

int rtp_find_svhn(const char *dir, char paths[2][PATH_MAX])
{
    return snprintf(paths[0], PATH_MAX, "%s/train_32x32.mat", dir) < PATH_MAX &&
           snprintf(paths[1], PATH_MAX, "%s/test_32x32.mat", dir) < PATH_MAX &&
           rtp_is_file(paths[0]) && rtp_is_file(paths[1]);
}

rt_status rtp_cache_dir(const char *name, char out[PATH_MAX], rt_error *err)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && xdg[0] == '/') /* the XDG spec: relative values are ignored */
        n = snprintf(out, PATH_MAX, "%s/kiln/datasets/%s", xdg, name);
    else if (home && home[0]) n = snprintf(out, PATH_MAX, "%s/.cache/kiln/datasets/%s", home, name);
    else
        return RT_ERR(err, RT_ENOTFOUND,
                      "no cache directory (neither XDG_CACHE_HOME nor HOME "
                      "is set) ---> HINT: give --dir");
    if (n >= PATH_MAX) return RT_ERR(err, RT_EINVAL, "cache directory path too long");
    return RT_OK;
}

rt_status rtp_mkdir_p(const char *path, rt_error *err)
{
    char tmp[PATH_MAX];
    rtp_copy_str(tmp, sizeof tmp, path);
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
    if (!rtp_is_dir(path)) return RT_ERR(err, RT_EIO, "%s exists and is not a directory", path);
    return RT_OK;
}

void rtp_base_name(const char *path, char *out, size_t size)
{
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/') len--;
    size_t b = len;
    while (b > 0 && path[b - 1] != '/') b--;
    const char *sfx[3] = {".tar.gz", ".tgz", ".gz"};
    for (int i = 0; i < 3; i++) {
        size_t l = strlen(sfx[i]);
        if (len - b > l && !strncmp(path + len - l, sfx[i], l)) {
            len -= l;
            break;
        }
    }
    size_t n = len - b < size - 1 ? len - b : size - 1;
    memcpy(out, path + b, n);
    out[n] = '\0';
}
