/* rt_imgfolder_internal.h - private to runtime/data/: image-folder data sets.
 *
 *   scan   (rt_imgfolder_scan.c)  a folder, split folders, a CSV or an archive of them
 *                                 -> a list of (file, class, split) and the class names;
 *   decode (rt_imgfolder_load.c)  every file, on every core, to C x H x W bytes;
 *   cache  (rt_imgfolder_cache.c) those bytes in one memory-mapped file keyed by the
 *                                 list (names, sizes, times) and the options.
 */
#ifndef RT_IMGFOLDER_INTERNAL_H
#define RT_IMGFOLDER_INTERNAL_H

#include "rt_data_internal.h"

enum { RTP_SPLIT_TRAIN = 0, RTP_SPLIT_VAL = 1, RTP_SPLIT_TEST = 2 };

typedef struct rtp_img_entry {
    char *path;   /* the file (or "ARCHIVE:member"), owned; named in errors */
    uint8_t *mem; /* the file's bytes when it came from an archive, owned */
    size_t mem_len;
    int label; /* index into the list's class names */
    int split; /* RTP_SPLIT_* */
} rtp_img_entry;

typedef struct rtp_img_list {
    rtp_img_entry *v;
    int n, cap;
    int num_classes;
    char names[RT_MAX_CLASSES][32];
    const char *layout; /* "folder", "split folders", "csv" (static) */
    uint64_t key;       /* FNV-1a 64 of every entry's name, size, mtime, class, split */
} rtp_img_list;

/* Finds the layout of path (a directory, a .csv file, or a .zip/.tar/.tar.gz/.tgz of a
 * directory) and lists its images in a fixed order (classes by name, files by name).
 * RT_ENOTFOUND / RT_EFORMAT name the path, the empty class folder, the single class or
 * the bad CSV line. On error the list is empty. */
RT_MUST_USE rt_status rtp_img_scan(const char *path, rtp_img_list *out, rt_error *err);
void rtp_img_list_deinit(rtp_img_list *l);
/* Appends one entry (path copied, mem taken); RT_ENOMEM. */
RT_MUST_USE rt_status rtp_img_list_add(rtp_img_list *l, const char *path, uint8_t *mem,
                                       size_t mem_len, int label, int split, rt_error *err);
/* Archive members ("a/b/c.png" with their bytes) -> the list, as rtp_img_scan does for
 * a directory with the same files (rt_imgfolder_archive.c). RT_ENOTFOUND only when the
 * archive holds no image files at all (it may be CIFAR-10 batches). */
RT_MUST_USE rt_status rtp_img_scan_archive(const char *path, rtp_img_list *out, rt_error *err);

/* Loads the image folder o->name (scan, cache or decode, --val, normalisation) into
 * out; split names are base/train ... On error nothing is left allocated. */
RT_MUST_USE rt_status rtp_imgfolder_load(rt_dataset_splits *out, const rt_dataset_opts *o,
                                         const char *base, rt_error *err);

/* ---- cache (rt_imgfolder_cache.c) ---- */
typedef struct rtp_img_cached {
    rtp_raw_split split[3]; /* train, val (from val/ folders), test: bytes + labels */
    int skipped;            /* bad files skipped (--skip-bad) when it was written */
} rtp_img_cached;

/* The cache file for key: $XDG_CACHE_HOME/kiln/images/<key>.kimg (or KILN_IMAGE_CACHE
 * as the directory). */
RT_MUST_USE rt_status rtp_img_cache_path(uint64_t key, char out[PATH_MAX], rt_error *err);
/* Reads the cache file into out (memory-mapped, copied into owned splits). Returns 1
 * when it was there and whole, 0 when absent or unusable (then out is empty). */
int rtp_img_cache_read(const char *path, uint64_t key, rtp_img_cached *out);
/* Writes out atomically (tmp, fsync, rename). Errors are RT_EIO naming the file. */
RT_MUST_USE rt_status rtp_img_cache_write(const char *path, uint64_t key, const rtp_img_cached *c,
                                          rt_error *err);

#endif
