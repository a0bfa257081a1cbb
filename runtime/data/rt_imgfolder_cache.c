/* rt_imgfolder_cache.c - decoded image folders kept on disk, so the next load (this
 * kernel's or the next one's) decodes nothing, and the set is never copied into memory.
 *
 * One file per (folder contents, --size, --channels, --skip-bad): the key is FNV-1a 64
 * of every listed file's name, size and modification time (ns), class and split, and
 * of those options (rt_imgfolder_load.c). Editing, adding, removing or renaming an
 * image changes the key; the old file is simply not used again. Layout, host byte
 * order (a local cache, not an exchange format):
 *   "KILNIMG1", key u64, skipped u32, c, h, w u32, n[3] u32 (train, val, test),
 *   then per split: pixels (N, C, H, W) u8, labels (N) u8.
 * The data set reads the pixels where they lie in the mapped file (rt_dataset.h): the
 * kernel pages them in from disk and drops them again under memory pressure, so a set
 * larger than RAM loads and trains. A load maps the file and checks it: magic, key,
 * and a size that equals what the header implies; anything else is ignored and
 * rewritten.
 *
 * Writing: NAME.tmp.PID is sized for every listed image and mapped shared, the decode
 * loop writes each image into its slot (so the decoded set goes to the file, not to
 * anonymous memory), bad images are squeezed out, the header is written, then the file
 * is truncated, fsynced and renamed, so a reader never sees half a file; the load goes
 * on reading the same mapping. Where no cache can be written the same layout lives in
 * anonymous memory for this load only.
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

/* Bytes of the file for n[3] images of c x h x w (overflow-checked: 0 = too big). */
static size_t layout_bytes(uint32_t c, uint32_t h, uint32_t w, const uint32_t n[3])
{
    size_t img = (size_t)c * h * w + 1, total = sizeof(header);
    for (int s = 0; s < 3; s++) {
        if (n[s] && img > (SIZE_MAX - total) / n[s]) return 0;
        total += img * n[s];
    }
    return total;
}

/* The split pointers of a mapped layout holding n[3] images. */
static void place(rtp_img_map *m, const uint32_t n[3])
{
    size_t img = (size_t)m->c * (size_t)m->h * (size_t)m->w;
    const uint8_t *p = (const uint8_t *)m->map + sizeof(header);
    for (int s = 0; s < 3; s++) {
        m->n[s] = (int)n[s];
        m->pixels[s] = p;
        m->labels[s] = p + img * n[s];
        p += (img + 1) * n[s];
    }
}

int rtp_img_cache_map(const char *path, uint64_t key, rtp_img_map *out)
{
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat sb;
    void *map = MAP_FAILED;
    if (fstat(fd, &sb) == 0 && (size_t)sb.st_size >= sizeof(header))
        map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return 0;
    header h;
    memcpy(&h, map, sizeof h);
    int ok = !memcmp(h.magic, MAGIC, 8) && h.key == key && h.c >= 1 && h.c <= 4 && h.h >= 1 &&
             h.w >= 1 && h.h <= 4096 && h.w <= 4096 && h.n[0] <= INT32_MAX && h.n[1] <= INT32_MAX &&
             h.n[2] <= INT32_MAX && layout_bytes(h.c, h.h, h.w, h.n) == (size_t)sb.st_size;
    if (!ok) {
        munmap(map, (size_t)sb.st_size);
        return 0;
    }
    *out = (rtp_img_map){.map = map,
                         .len = (size_t)sb.st_size,
                         .skipped = (int)h.skipped,
                         .c = (int)h.c,
                         .h = (int)h.h,
                         .w = (int)h.w};
    place(out, h.n);
    return 1;
}

void rtp_img_map_release(rtp_img_map *m)
{
    if (m && m->map) munmap(m->map, m->len);
    if (m) memset(m, 0, sizeof *m);
}

rt_status rtp_img_writer_open(rtp_img_writer *w, const char *path, uint64_t key, int c, int h,
                              int wd, const int cap[3], rt_error *err)
{
    memset(w, 0, sizeof *w);
    w->fd = -1;
    w->key = key;
    w->c = c, w->h = h, w->w = wd;
    uint32_t n[3] = {(uint32_t)cap[0], (uint32_t)cap[1], (uint32_t)cap[2]};
    for (int s = 0; s < 3; s++) w->cap[s] = cap[s];
    w->len = layout_bytes((uint32_t)c, (uint32_t)h, (uint32_t)wd, n);
    if (!w->len)
        return RT_ERR(err, RT_ENOMEM, "%d images of %dx%dx%d: too many bytes", cap[0], c, h, wd);
    if (path) {
        rtp_copy_str(w->path, sizeof w->path, path);
        snprintf(w->tmp, sizeof w->tmp, "%s.tmp.%ld", path, (long)getpid());
        w->fd = open(w->tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (w->fd < 0)
            return RT_ERR(err, RT_EIO, "%s: cannot write the image cache: %s", w->tmp,
                          strerror(errno));
        int e = ftruncate(w->fd, (off_t)w->len) == 0 ? 0 : errno;
        void *map =
            e ? MAP_FAILED : mmap(NULL, w->len, PROT_READ | PROT_WRITE, MAP_SHARED, w->fd, 0);
        if (map == MAP_FAILED) {
            if (!e) e = errno;
            rtp_img_writer_abort(w);
            return RT_ERR(err, RT_EIO, "%s: cannot write the image cache: %s", path, strerror(e));
        }
        w->map = map;
    } else {
        void *map = mmap(NULL, w->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (map == MAP_FAILED)
            return RT_ERR(err, RT_ENOMEM, "out of memory for %d images of %dx%dx%d",
                          cap[0] + cap[1] + cap[2], c, h, wd);
        w->map = map;
    }
    return RT_OK;
}

uint8_t *rtp_img_writer_pixels(const rtp_img_writer *w, int s, int k)
{
    size_t img = (size_t)w->c * (size_t)w->h * (size_t)w->w, off = sizeof(header);
    for (int t = 0; t < s; t++) off += (img + 1) * (size_t)w->cap[t];
    return w->map + off + img * (size_t)k;
}

uint8_t *rtp_img_writer_label(const rtp_img_writer *w, int s, int k)
{
    size_t img = (size_t)w->c * (size_t)w->h * (size_t)w->w;
    return rtp_img_writer_pixels(w, s, 0) + img * (size_t)w->cap[s] + (size_t)k;
}

void rtp_img_writer_abort(rtp_img_writer *w)
{
    if (w->map) munmap(w->map, w->len);
    if (w->fd >= 0) {
        close(w->fd);
        unlink(w->tmp);
    }
    w->map = NULL;
    w->fd = -1;
}

/* Moves the kept images of every split down over the dropped ones (forward: each
 * destination lies at or before its source); n gets the counts kept. */
static rt_status squeeze(rtp_img_writer *w, const uint8_t *const keep[3], uint32_t n[3],
                         rt_error *err)
{
    size_t img = (size_t)w->c * (size_t)w->h * (size_t)w->w;
    uint8_t *dst = w->map + sizeof(header);
    for (int s = 0; s < 3; s++) {
        int cap = w->cap[s], k = 0;
        uint8_t *labels = malloc((size_t)cap + 1);
        if (!labels) return RT_ERR(err, RT_ENOMEM, "out of memory");
        memcpy(labels, rtp_img_writer_label(w, s, 0), (size_t)cap);
        const uint8_t *src = rtp_img_writer_pixels(w, s, 0);
        for (int i = 0; i < cap; i++) {
            if (keep[s] && !keep[s][i]) continue;
            if (dst + img * (size_t)k != src + img * (size_t)i)
                memmove(dst + img * (size_t)k, src + img * (size_t)i, img);
            labels[k++] = labels[i];
        }
        memcpy(dst + img * (size_t)k, labels, (size_t)k);
        free(labels);
        n[s] = (uint32_t)k;
        dst += (img + 1) * (size_t)k;
    }
    return RT_OK;
}

rt_status rtp_img_writer_finish(rtp_img_writer *w, const uint8_t *const keep[3], int skipped,
                                rtp_img_map *out, rt_error *err)
{
    memset(out, 0, sizeof *out);
    header h = {.key = w->key,
                .skipped = (uint32_t)skipped,
                .c = (uint32_t)w->c,
                .h = (uint32_t)w->h,
                .w = (uint32_t)w->w};
    memcpy(h.magic, MAGIC, 8);
    rt_status st = squeeze(w, keep, h.n, err);
    if (st != RT_OK) {
        rtp_img_writer_abort(w);
        return st;
    }
    memcpy(w->map, &h, sizeof h);
    /* the mapping stays this load's data whatever happens to the file below */
    *out = (rtp_img_map){
        .map = w->map, .len = w->len, .skipped = skipped, .c = w->c, .h = w->h, .w = w->w};
    place(out, h.n);
    w->map = NULL;
    if (w->fd < 0) return RT_OK; /* anonymous: nothing to keep */
    int bad = ftruncate(w->fd, (off_t)layout_bytes(h.c, h.h, h.w, h.n));
    if (!bad) bad = fsync(w->fd);
    int saved = errno;
    if (close(w->fd) != 0 && !bad) bad = 1, saved = errno;
    w->fd = -1;
    if (!bad && rename(w->tmp, w->path) != 0) bad = 1, saved = errno;
    if (!bad) return RT_OK;
    unlink(w->tmp);
    return RT_ERR(err, RT_EIO, "%s: cannot write the image cache: %s", w->path, strerror(saved));
}
