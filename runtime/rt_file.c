/* rt_file.c - see rt_file.h: temporary file (random name, O_EXCL, 0600), fsync,
 * rename, fsync of the directory. */
#include "rt_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The process's umask without changing it (umask(2) can only be read by setting it,
 * which would race with other threads creating files). */
mode_t rt_file_umask(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[128];
    unsigned int m = 022;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "Umask: %o", &m) == 1) break;
    if (f) fclose(f);
    return (mode_t)m;
}

rt_status rt_file_begin(rt_file *w, const char *path, rt_error *err)
{
    memset(w, 0, sizeof *w);
    size_t n = strlen(path);
    w->path = strdup(path);
    w->tmp = malloc(n + 12);
    if (!w->path || !w->tmp) {
        rt_file_abort(w);
        return RT_ERR(err, RT_ENOMEM, "out of memory writing %s", path);
    }
    memcpy(w->tmp, path, n);
    memcpy(w->tmp + n, ".tmp-XXXXXX", 12);
    int fd = mkostemp(w->tmp, O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        int e = errno;
        free(w->tmp);
        w->tmp = NULL;
        rt_file_abort(w);
        return RT_ERR(err, RT_EIO, "cannot write %s: %s", path, strerror(e));
    }
    if (!(w->f = fdopen(fd, "w"))) {
        int e = errno;
        close(fd);
        rt_file_abort(w);
        return RT_ERR(err, RT_EIO, "cannot write %s: %s", path, strerror(e));
    }
    return RT_OK;
}

static void fsync_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    free(dir);
}

rt_status rt_file_commit(rt_file *w, int mode, rt_error *err)
{
    mode_t m = mode == RT_FILE_MODE_UMASK ? (0666 & ~rt_file_umask()) : (mode_t)mode;
    int bad = ferror(w->f) || fflush(w->f) != 0 || fchmod(fileno(w->f), m) != 0 ||
              fsync(fileno(w->f)) != 0;
    int e = errno;
    if (fclose(w->f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    w->f = NULL;
    if (!bad && rename(w->tmp, w->path) != 0) {
        bad = 1;
        e = errno;
    }
    if (bad) {
        rt_status s = RT_ERR(err, RT_EIO, "cannot write %s: %s", w->path, strerror(e ? e : EIO));
        rt_file_abort(w);
        return s;
    }
    fsync_dir(w->path);
    free(w->tmp);
    free(w->path);
    w->tmp = w->path = NULL;
    return RT_OK;
}

void rt_file_abort(rt_file *w)
{
    if (w->f) fclose(w->f);
    if (w->tmp) unlink(w->tmp);
    free(w->tmp);
    free(w->path);
    memset(w, 0, sizeof *w);
}

/* mkdir -p of dir (a writable copy), in place. */
static int make_dirs(char *dir, int mode)
{
    if (!dir[0]) return 0;
    for (char *p = dir + 1;; p++) {
        if (*p && *p != '/') continue;
        char c = *p;
        *p = '\0';
        if (mkdir(dir, (mode_t)mode) != 0 && errno != EEXIST) return -1;
        if (!c) break;
        *p = '/';
    }
    return 0;
}

static int copy_path(char *dir, size_t n, const char *path)
{
    if (snprintf(dir, n, "%s", path) >= (int)n) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

int rt_file_make_parent(const char *path, int mode)
{
    char dir[4096];
    if (copy_path(dir, sizeof dir, path) < 0) return -1;
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return 0;
    *slash = '\0';
    return make_dirs(dir, mode);
}

int rt_file_make_dirs(const char *path, int mode)
{
    char dir[4096];
    return copy_path(dir, sizeof dir, path) < 0 ? -1 : make_dirs(dir, mode);
}
