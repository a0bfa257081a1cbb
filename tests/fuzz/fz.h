/* fz.h - shared by the fuzz targets in tests/fuzz/.
 *
 * Each target is one file defining LLVMFuzzerTestOneInput (and optionally
 * LLVMFuzzerInitialize). It is linked twice: with libFuzzer (-Dfuzz=true, clang,
 * fuzz_<name>) and with fz_replay.c (every build, fuzz_replay_<name>), which feeds it
 * the files of tests/fuzz/corpus/<name>/ once, so every CI run replays the corpus and
 * every reproducer ever added to it.
 *
 * FZ_CHECK states an invariant of the code under test; a violation aborts, which
 * both libFuzzer and the replay test report as a failure.
 * Inputs live in memory files (memfd) where the code under test wants a path, so a
 * target never touches the disk; directories go under /dev/shm.
 */
#ifndef FZ_H
#define FZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FZ_CHECK(cond)                                                                   \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                     \
        }                                                                                \
    } while (0)

/* A memory file holding data; *path gets "/proc/self/fd/N" (>= 32 bytes).
 * Returns the fd (close it when done) or -1. */
int fz_memfile(const void *data, size_t size, char *path, size_t pathlen);
/* A fresh empty directory under /dev/shm (or $TMPDIR) for this process, created on
 * first use and emptied (not removed) by fz_dir_clear. NULL on failure. */
const char *fz_dir(void);
void fz_dir_clear(void);
/* Writes data to dir/name; 0 or -1. */
int fz_write_file(const char *dir, const char *name, const void *data, size_t size);
/* A NUL-terminated copy of data (free()); NULL when out of memory. */
char *fz_strdup(const uint8_t *data, size_t size);

#endif
