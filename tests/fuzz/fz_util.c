/* fz_util.c - memory files and a scratch directory for the fuzz targets (fz.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fz.h"

int fz_memfile(const void *data, size_t size, char *path, size_t pathlen)
{
    int fd = memfd_create("fz", 0);
    if (fd < 0) return -1;
    const char *p = data;
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, p + done, size - done);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)w;
    }
    snprintf(path, pathlen, "/proc/self/fd/%d", fd);
    return fd;
}

static char scratch[256];

const char *fz_dir(void)
{
    if (scratch[0]) return scratch;
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    snprintf(scratch, sizeof scratch, "%s/kiln-fuzz-XXXXXX", base ? base : "/tmp");
    if (!mkdtemp(scratch)) {
        scratch[0] = '\0';
        return NULL;
    }
    return scratch;
}

void fz_dir_clear(void)
{
    if (!scratch[0]) return;
    DIR *d = opendir(scratch);
    if (!d) return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", scratch, e->d_name);
        unlink(path);
    }
    closedir(d);
}

int fz_write_file(const char *dir, const char *name, const void *data, size_t size)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int bad = size && fwrite(data, 1, size, f) != size;
    bad |= fclose(f) != 0;
    return bad ? -1 : 0;
}

char *fz_strdup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s) return NULL;
    if (size) memcpy(s, data, size);
    s[size] = '\0';
    return s;
}
