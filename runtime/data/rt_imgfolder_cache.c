/* rt_imgfolder_cache.c - decoded image folders kept on disk, so the next load (this
 * kernel's or the next one's) decodes nothing.
 *
 * One file per (folder contents, --size, --channels, --skip-bad): the key is FNV-1a 64
 * of every listed file's name, size and modification time (ns), class and split, and
 * of those options (rt_imgfolder_load.c). Editing, adding, removing or renaming an
 * image changes the key; the old file is simply not used again. Layout, host byte
 * order (a local cache, not an exchange format):
 *   "KILNIMG1", key u64, skipped u32, c, h, w u32, n[3] u32 (train, val, test),
 *   then per split: pixels (N, C, H, W) u8, labels (N) u8.
 * It is read through mmap and checked: magic, key, and a size that equals what the
 * header implies; anything else is ignored and rewritten. Written to NAME.tmp.PID,
 * fsynced and renamed, so a reader never sees half a file.
 */
#include "rt_imgfolder_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "KILNIMG1"

typedef struct header {
    char magic[8];
    uint64_t key;
    uint32_t skipped, c, h, w, n[3];
} header;

rt_status rtp_img_cache_path(uint64_t key, char out[PATH_MAX], rt_error *err)
{
    char dir[PATH_MAX];
    const char *env = getenv("KILN_IMAGE_CACHE");
    if (env && env[0]) rtp_copy_str(dir, sizeof dir, env);
    else RT_TRY(rtp_cache_dir("images", dir, err));
    RT_TRY(rtp_mkdir_p(dir, err));
    if (snprintf(out, PATH_MAX, "%s/%016llx.kimg", dir, (unsigned long long)key) >= PATH_MAX)
        return RT_ERR(err, RT_EINVAL, "%s: path too long", dir);
    return RT_OK;
}

static size_t split_bytes(const header *h, int s)
{
    return (size_t)h->n[s] * ((size_t)h->c * h->h * h->w + 1);
}

int rtp_img_cache_read(const char *path, uint64_t key, rtp_img_cached *out)
{
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat sb;
    void *map = MAP_FAILED;
    if (fstat(fd, &sb) == 0 && (size_t)sb.st_size >= sizeof(header))
        map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return 0;
    header h;
    memcpy(&h, map, sizeof h);
    size_t want = sizeof h;
    int ok = !memcmp(h.magic, MAGIC, 8) && h.key == key && h.c >= 1 && h.c <= 4 && h.h >= 1 &&
             h.w >= 1 && h.h <= 4096 && h.w <= 4096;
    for (int s = 0; ok && s < 3; s++) want += split_bytes(&h, s);
    ok = ok && want == (size_t)sb.st_size;
    const uint8_t *p = (const uint8_t *)map + sizeof h;
    for (int s = 0; ok && s < 3; s++) {
        rtp_raw_split *r = &out->split[s];
        size_t img = (size_t)h.c * h.h * h.w, n = h.n[s];
        *r = (rtp_raw_split){.n = (int)n, .c = (int)h.c, .h = (int)h.h, .w = (int)h.w};
        r->pixels = malloc(n * img + 1);
        r->labels = malloc(n + 1);
        if (!r->pixels || !r->labels) {
            ok = 0;
            break;
        }
        memcpy(r->pixels, p, n * img);
        memcpy(r->labels, p + n * img, n);
        p += n * (img + 1);
    }
    munmap(map, (size_t)sb.st_size);
    if (!ok) {
        for (int s = 0; s < 3; s++) rtp_raw_split_deinit(&out->split[s]);
        return 0;
    }
    out->skipped = (int)h.skipped;
    return 1;
}

static int write_all(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t k = write(fd, b, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

rt_status rtp_img_cache_write(const char *path, uint64_t key, const rtp_img_cached *c,
                              rt_error *err)
{
    char tmp[PATH_MAX + 32];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return RT_ERR(err, RT_EIO, "%s: cannot write the image cache: %s", tmp, strerror(errno));
    const rtp_raw_split *t = &c->split[0];
    header h = {.key = key,
                .skipped = (uint32_t)c->skipped,
                .c = (uint32_t)t->c,
                .h = (uint32_t)t->h,
                .w = (uint32_t)t->w};
    memcpy(h.magic, MAGIC, 8);
    for (int s = 0; s < 3; s++) h.n[s] = (uint32_t)c->split[s].n;
    int bad = write_all(fd, &h, sizeof h);
    for (int s = 0; s < 3 && !bad; s++) {
        const rtp_raw_split *r = &c->split[s];
        size_t img = (size_t)r->c * (size_t)r->h * (size_t)r->w;
        if (r->n == 0) continue;
        bad =
            write_all(fd, r->pixels, img * (size_t)r->n) || write_all(fd, r->labels, (size_t)r->n);
    }
    if (!bad) bad = fsync(fd);
    int saved = errno;
    if (close(fd) != 0 && !bad) bad = 1, saved = errno;
    if (!bad && rename(tmp, path) == 0) return RT_OK;
    if (!bad) saved = errno;
    unlink(tmp);
    return RT_ERR(err, RT_EIO, "%s: cannot write the image cache: %s", path, strerror(saved));
}
