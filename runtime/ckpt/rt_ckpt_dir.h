/* rt_ckpt_dir.h - a run directory of checkpoints: naming, listing with validity,
 * choosing the newest valid one to resume from, and rotation (keep newest N + best).
 *
 * A run directory holds one run's checkpoints, named ckpt-step%08lld.safetensors.
 * Listing opens every *.safetensors file (full validation unless header-only is
 * asked for) and never fails because one file is bad: the entry says why. Rotation
 * deletes only valid, Kiln-named checkpoints; damaged files are left for a human.
 */
#ifndef RT_CKPT_DIR_H
#define RT_CKPT_DIR_H

#include <stddef.h>
#include <stdint.h>

#include "rt_ckpt.h"
#include "rt_error.h"

#define RT_CKPT_DIR_PREFIX "ckpt-step"

typedef struct rt_ckpt_entry {
    char *path;          /* dir + "/" + name */
    char *name;          /* file name */
    uint64_t size;       /* bytes */
    int64_t mtime;       /* seconds since the epoch */
    int valid;           /* 1: opened and validated */
    char error[512];     /* why not valid ("" when valid) */
    int64_t step, epoch; /* from the metadata; -1 when unknown */
    char created[40];    /* metadata "created", "" when unknown */
    int has_metric;      /* metric holds this checkpoint's "metric" */
    rt_ckpt_metric metric;
    int has_best; /* best holds its "best_metric" (the run's best so far), with
                            the step it was measured at */
    rt_ckpt_metric best;
} rt_ckpt_entry;

typedef struct rt_ckpt_list {
    rt_ckpt_entry *items; /* oldest first: by step (from the name when the
                             file is damaged), then mtime, then name */
    size_t count;
} rt_ckpt_list;

/* The canonical file name for a step ("ckpt-step00001234.safetensors"). */
void rt_ckpt_dir_name(int64_t step, char *buf, size_t cap);
/* dir/name for a step; caller frees *path. */
RT_MUST_USE rt_status rt_ckpt_dir_path(const char *dir, int64_t step, char **path, rt_error *err);
/* mkdir -p dir (mode 0777 & ~umask). */
RT_MUST_USE rt_status rt_ckpt_dir_ensure(const char *dir, rt_error *err);

/* Lists dir's *.safetensors files (flags as rt_ckpt_reader_open). Fails only when dir
 * cannot be read or memory runs out. Free with rt_ckpt_list_deinit. */
RT_MUST_USE rt_status rt_ckpt_dir_scan(const char *dir, unsigned flags, rt_ckpt_list *out,
                                       rt_error *err);
void rt_ckpt_list_deinit(rt_ckpt_list *l); /* NULL ok */
/* Index of the newest valid entry, or -1. */
long rt_ckpt_list_newest_valid(const rt_ckpt_list *l);

/* The newest valid checkpoint of dir in *path (caller frees). Invalid files newer than
 * it are described in *skipped ("name: reason\n" lines, caller frees; NULL if none).
 * No valid checkpoint: RT_ENOTFOUND naming dir and every skipped file. */
RT_MUST_USE rt_status rt_ckpt_dir_latest(const char *dir, char **path, char **skipped,
                                         rt_error *err);

/* Deletes valid Kiln-named checkpoints of dir except the newest keep_last (at least 1)
 * and, with keep_best, the best: the checkpoint of the step the newest's "best_metric"
 * names (the run's best epoch), else (no such file or key) the best by each file's
 * "metric" (same metric name as the newest's; ties go to the newer). *removed (may be
 * NULL) = files deleted. */
RT_MUST_USE rt_status rt_ckpt_dir_rotate(const char *dir, int keep_last, int keep_best,
                                         size_t *removed, rt_error *err);

#endif
