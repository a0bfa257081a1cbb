/* rt_file.h - writing a file so that no one else chooses what it overwrites.
 *
 * rt_file_begin creates a temporary file beside PATH with a random name (mkostemp:
 * O_CREAT|O_EXCL, so a planted file or symlink is never opened or followed), mode 0600
 * while it is written; rt_file_commit sets the final mode, flushes, fsyncs, renames it
 * over PATH and fsyncs the directory, as the checkpoint writer does. Any failure
 * removes the temporary file; PATH is then untouched.
 */
#ifndef RT_FILE_H
#define RT_FILE_H

#include <stdio.h>
#include <sys/types.h>

#include "rt_error.h"

typedef struct rt_file {
    FILE *f;   /* write here */
    char *tmp; /* PATH.tmp-XXXXXX */
    char *path;
} rt_file;

/* Mode for rt_file_commit: what umask gives a new file (0666 & ~umask). */
#define RT_FILE_MODE_UMASK (-1)

RT_MUST_USE rt_status rt_file_begin(rt_file *w, const char *path, rt_error *err);
/* mode: e.g. 0600 for files that may hold secrets, or RT_FILE_MODE_UMASK. */
RT_MUST_USE rt_status rt_file_commit(rt_file *w, int mode, rt_error *err);
void rt_file_abort(rt_file *w); /* accepts a zeroed or committed w */

/* The process's umask, read without changing it. */
mode_t rt_file_umask(void);

/* mkdir -p of path's directory; directories it creates get mode (e.g. 0700). 0 or -1
 * with errno. */
int rt_file_make_parent(const char *path, int mode);
/* mkdir -p of path itself, the same way. */
int rt_file_make_dirs(const char *path, int mode);

#endif
