/* rt_imgfolder_internal.h - private to runtime/data/: image-folder data sets.
 *
 *   scan   (rt_imgfolder_scan.c)  a folder, split folders, a CSV or an archive of them
 *                                 -> a list of (file, class, split) and the class names;
 *   decode (rt_imgfolder_load.c)  every file, on every core, to C x H x W bytes;
 *   cache  (rt_imgfolder_cache.c) those bytes in one memory-mapped file keyed by the
 *                                 list (names, sizes, times) and the options, which
 *                                 the data set then reads in place (never copied).
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
/* RT_OK when file's real path lies under root (a real path, the data set's folder), or
 * KILN_DATASET_ALLOW_OUTSIDE=1; else RT_EINVAL naming what, where it leads and the
 * setting (RT_ENOTFOUND when file does not resolve). */
RT_MUST_USE rt_status rtp_img_inside(const char *root, const char *file, const char *what,
                                     rt_error *err);
/* rt_dataset_folder_key of path, whose listing is l (no second listing). */
uint64_t rtp_img_folder_key(const char *path, const rtp_img_list *l);
/* 1 when path names an archive by its extension (.zip, .tar, .tar.gz, .tgz). */
int rtp_img_is_archive(const char *path);
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
/* The cache file for key: $XDG_CACHE_HOME/kiln/datasets/images/<key>.kimg (or KILN_IMAGE_CACHE
 * as the directory). */
RT_MUST_USE rt_status rtp_img_cache_path(uint64_t key, char out[PATH_MAX], rt_error *err);

/* A decoded set in memory: the cache file mapped (or anonymous memory when none could
 * be written), n[s] images of c x h x w per split (train, val from val/ folders, test)
 * at pixels[s], their labels at labels[s]. */
typedef struct rtp_img_map {
    void *map; /* owned: munmap(map, len) */
    size_t len;
    int skipped; /* bad files skipped (--skip-bad) when it was written */
    int c, h, w;
    int n[3];
    const uint8_t *pixels[3], *labels[3];
} rtp_img_map;

/* Maps the cache file read-only; 1 when it is there, whole and of key, else 0 (out
 * empty). */
int rtp_img_cache_map(const char *path, uint64_t key, rtp_img_map *out);
void rtp_img_map_release(rtp_img_map *m);

/* A set being decoded: cap[s] slots per split, in a file beside path (NULL: anonymous
 * memory) mapped shared, so decoded pixels go to disk rather than stay in RAM. */
typedef struct rtp_img_writer {
    int fd;
    char path[PATH_MAX], tmp[PATH_MAX + 32];
    uint8_t *map;
    size_t len;
    uint64_t key;
    int c, h, w, cap[3];
} rtp_img_writer;

/* RT_EIO naming the file, RT_ENOMEM; on error nothing is left (no file, no map). */
RT_MUST_USE rt_status rtp_img_writer_open(rtp_img_writer *w, const char *path, uint64_t key, int c,
                                          int h, int wd, const int cap[3], rt_error *err);
/* Where slot k of split s puts its C x H x W bytes / its label (any thread). */
uint8_t *rtp_img_writer_pixels(const rtp_img_writer *w, int s, int k);
uint8_t *rtp_img_writer_label(const rtp_img_writer *w, int s, int k);
/* Drops the slots with keep[s][k] == 0 (keep[s] NULL: all kept), writes the header and
 * hands the mapping to out, in every case but RT_ENOMEM (then nothing is left). With a
 * file: truncated, fsynced and renamed over path; RT_EIO naming it when that fails, out
 * still holding this load's data (the file is then removed). */
RT_MUST_USE rt_status rtp_img_writer_finish(rtp_img_writer *w, const uint8_t *const keep[3],
                                            int skipped, rtp_img_map *out, rt_error *err);
void rtp_img_writer_abort(rtp_img_writer *w);

#endif
