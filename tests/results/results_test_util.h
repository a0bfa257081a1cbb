/* results_test_util.h - temporary directories and small helpers shared by the
 * results tests (static functions: each test file is its own executable). */
#ifndef RESULTS_TEST_UTIL_H
#define RESULTS_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A fresh directory under $TMPDIR (or /tmp); path written to buf. */
static inline int tu_tmpdir(char *buf, size_t n)
{
    const char *base = getenv("TMPDIR");
    snprintf(buf, n, "%s/kiln-results-XXXXXX", base && *base ? base : "/tmp");
    return mkdtemp(buf) ? 0 : -1;
}

/* rm -rf of a directory made by tu_tmpdir (best effort). */
static inline void tu_rmtree(const char *dir)
{
    char cmd[4200];
    if (!strstr(dir, "kiln-results-")) return;
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s' 2>/dev/null; rm -rf '%s'", dir, dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static inline int tu_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

/* Whole file as a new string (free()), or NULL. */
static inline char *tu_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    int c;
    while ((c = fgetc(f)) != EOF) {
        if (n + 2 > cap) {
            cap = cap ? cap * 2 : 4096;
            char *p = realloc(buf, cap);
            if (!p) break;
            buf = p;
        }
        buf[n++] = (char)c;
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    return buf;
}

#endif
