/* fz_replay.c - main() for the replay build of a fuzz target: runs
 * LLVMFuzzerTestOneInput once on each file named on the command line (directories:
 * each file in them, sorted), as libFuzzer does with files, so any build - gcc
 * included - replays the seed corpus and the saved reproducers (suite fuzz-replay).
 * A crash or a failed FZ_CHECK aborts and fails the test. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fz.h"

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return fprintf(stderr, "fuzz-replay: cannot open %s\n", path), -1;
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0, got;
    uint8_t chunk[65536];
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (n + got > cap) {
            cap = 2 * (n + got);
            uint8_t *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return -1;
            }
            buf = nb;
        }
        memcpy(buf + n, chunk, got);
        n += got;
    }
    fclose(f);
    /* an exact-size copy, so ASan/valgrind see reads past the input's end */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) return free(buf), -1;
    if (n) memcpy(exact, buf, n);
    free(buf);
    printf("replay %s (%zu bytes)\n", path, n);
    fflush(stdout);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_path(const char *path, int *count)
{
    struct stat st;
    if (stat(path, &st) != 0) return fprintf(stderr, "fuzz-replay: no such path %s\n", path), -1;
    if (!S_ISDIR(st.st_mode)) return (*count)++, run_file(path);
    DIR *d = opendir(path);
    if (!d) return -1;
    char **names = NULL;
    size_t nn = 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char **grown = realloc(names, (nn + 1) * sizeof *names);
        if (!grown) {
            rc = -1;
            break;
        }
        names = grown;
        size_t len = strlen(path) + strlen(e->d_name) + 2;
        if (!(names[nn] = malloc(len))) {
            rc = -1;
            break;
        }
        snprintf(names[nn++], len, "%s/%s", path, e->d_name);
    }
    closedir(d);
    if (names) qsort(names, nn, sizeof *names, by_name);
    for (size_t i = 0; i < nn; i++) {
        if (rc == 0) rc = run_path(names[i], count);
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) return fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]), 2;
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    int count = 0;
    for (int i = 1; i < argc; i++)
        if (run_path(argv[i], &count) < 0) return 1;
    printf("%d inputs replayed, no crash\n", count);
    if (count == 0) return fprintf(stderr, "fuzz-replay: no inputs\n"), 1;
    return 0;
}
