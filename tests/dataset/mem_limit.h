/* mem_limit.h - runs a check in a child process under a memory limit, for the tests
 * that a size a file claims is weighed against the memory really available:
 *   ML_ULIMIT: `ulimit -v` (RLIMIT_AS) at the child's current size plus bytes;
 *   ML_CGROUP: a new memory cgroup of bytes under this process's own (cgroup v2
 *              memory.max or v1 memory.limit_in_bytes), which the child joins. Where
 *              cgroups cannot be written (no delegation, not root) the check is
 *              skipped, and the reason printed.
 * ml_run returns 0 when fn returned 0 in the child, 1 when it failed or the child died
 * (an OOM kill included), 77 when the limit could not be set up. */
#ifndef MEM_LIMIT_H
#define MEM_LIMIT_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef enum { ML_ULIMIT, ML_CGROUP } ml_kind;

static inline int ml_write(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    int ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* Makes a child memory cgroup limited to bytes; its directory and the file a pid is
 * written to go to dir / procs. 0, or -1 with why. */
static inline int ml_cgroup_make(uint64_t bytes, char *dir, size_t n, char *procs, size_t pn,
                                 char *why, size_t wn)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    char line[1024], v2[512] = "", v1[512] = "";
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = 0;
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2) continue;
        *c2 = 0;
        if (c1[1] == 0) snprintf(v2, sizeof v2, "%s", c2 + 1);
        else if (strstr(c1 + 1, "memory")) snprintf(v1, sizeof v1, "%s", c2 + 1);
    }
    if (f) fclose(f);
    char limit[32], file[1200];
    snprintf(limit, sizeof limit, "%llu", (unsigned long long)bytes);
    struct stat st;
    if (v1[0] && stat("/sys/fs/cgroup/memory", &st) == 0) {
        snprintf(dir, n, "/sys/fs/cgroup/memory%s/kiln-test-%d", strcmp(v1, "/") ? v1 : "",
                 (int)getpid());
        snprintf(file, sizeof file, "%s/memory.limit_in_bytes", dir);
        snprintf(procs, pn, "%s/cgroup.procs", dir);
    } else if (v2[0] && stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0) {
        char parent[600];
        snprintf(parent, sizeof parent, "/sys/fs/cgroup%s", strcmp(v2, "/") ? v2 : "");
        snprintf(file, sizeof file, "%s/cgroup.subtree_control", parent);
        FILE *sc = fopen(file, "r");
        char ctl[256] = "";
        if (sc) {
            if (!fgets(ctl, sizeof ctl, sc)) ctl[0] = 0;
            fclose(sc);
        }
        if (!strstr(ctl, "memory") && ml_write(file, "+memory") < 0) {
            snprintf(why, wn, "cannot enable the memory controller in %s (%s)", parent,
                     strerror(errno));
            return -1;
        }
        snprintf(dir, n, "%s/kiln-test-%d", parent, (int)getpid());
        snprintf(file, sizeof file, "%s/memory.max", dir);
        snprintf(procs, pn, "%s/cgroup.procs", dir);
    } else {
        snprintf(why, wn, "no memory cgroup in /proc/self/cgroup");
        return -1;
    }
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
        snprintf(why, wn, "cannot create %s (%s)", dir, strerror(errno));
        return -1;
    }
    if (ml_write(file, limit) < 0) {
        snprintf(why, wn, "cannot set %s (%s)", file, strerror(errno));
        rmdir(dir);
        return -1;
    }
    return 0;
}

static inline int ml_run(ml_kind kind, uint64_t bytes, int (*fn)(void *), void *arg)
{
    char dir[1100] = "", procs[1200] = "", why[1400] = "";
    if (kind == ML_CGROUP &&
        ml_cgroup_make(bytes, dir, sizeof dir, procs, sizeof procs, why, sizeof why) < 0) {
        printf("  skipped (visibly): no small memory cgroup here: %s\n", why);
        return 77;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        if (kind == ML_CGROUP) {
            char me[32];
            snprintf(me, sizeof me, "%d", (int)getpid());
            if (ml_write(procs, me) < 0) _exit(77);
        } else {
            FILE *f = fopen("/proc/self/status", "r");
            char line[128];
            unsigned long long vm = 0;
            while (f && fgets(line, sizeof line, f))
                if (sscanf(line, "VmSize: %llu", &vm) == 1) break;
            if (f) fclose(f);
            struct rlimit rl = {(rlim_t)(vm * 1024 + bytes), RLIM_INFINITY};
            if (setrlimit(RLIMIT_AS, &rl) < 0) _exit(77);
        }
        _exit(fn(arg) == 0 ? 0 : 1);
    }
    int status = 0, rc = 1;
    if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status))
        rc = WEXITSTATUS(status) == 0 ? 0 : WEXITSTATUS(status) == 77 ? 77 : 1;
    else if (pid > 0 && WIFSIGNALED(status))
        fprintf(stderr, "  the child was killed by signal %d (the OOM killer?)\n",
                WTERMSIG(status));
    if (rc == 77) printf("  skipped (visibly): could not join %s or set ulimit -v\n", procs);
    for (int i = 0; dir[0] && i < 50 && rmdir(dir) < 0 && errno == EBUSY; i++) usleep(20000);
    return rc;
}

#endif
