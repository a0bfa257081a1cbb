/* rt_mem.c - see rt_mem.h. Reads /proc and /sys/fs/cgroup; nothing is cached, since
 * both change while the process runs. */
#include "rt_mem.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

/* A "Key: N kB" line of a /proc file, in bytes; 0 when absent. */
static uint64_t proc_kb(const char *file, const char *key)
{
    FILE *f = fopen(file, "r");
    char line[256];
    unsigned long long v = 0;
    size_t klen = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, klen) && sscanf(line + klen, " %llu", &v) == 1) break;
    if (f) fclose(f);
    return (uint64_t)v * 1024;
}

/* One number from a file; 0 when it cannot be read or says "max". */
static uint64_t file_u64(const char *path)
{
    FILE *f = fopen(path, "r");
    unsigned long long v = 0;
    if (f && fscanf(f, "%llu", &v) != 1) v = 0;
    if (f) fclose(f);
    return (uint64_t)v;
}

static uint64_t least(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* The least limit-minus-usage of cgroup directory root+path and its ancestors up to
 * root (a parent's limit binds its children too); UINT64_MAX when none has a limit. */
static uint64_t cgroup_room(const char *root, const char *path, const char *max_file,
                            const char *cur_file)
{
    char dir[1024], file[1100];
    if (snprintf(dir, sizeof dir, "%s%s", root, path) >= (int)sizeof dir) return UINT64_MAX;
    size_t rlen = strlen(root);
    uint64_t best = UINT64_MAX;
    for (;;) {
        snprintf(file, sizeof file, "%s/%s", dir, max_file);
        uint64_t max = file_u64(file);
        snprintf(file, sizeof file, "%s/%s", dir, cur_file);
        uint64_t cur = file_u64(file);
        if (max && max < ((uint64_t)1 << 60)) best = least(best, max > cur ? max - cur : 0);
        char *slash = strrchr(dir, '/');
        if (!slash || (size_t)(slash - dir) < rlen) break;
        *slash = '\0';
    }
    return best;
}

/* The memory cgroups this process is in (/proc/self/cgroup: "0::PATH" for v2,
 * "N:...memory...:PATH" for v1), each walked up to its mount's root. Without a cgroup
 * namespace PATH is below the mount's root, whose own limit is not the process's. */
static uint64_t cgroups_room(void)
{
    FILE *f = fopen("/proc/self/cgroup", "r");
    char line[1024];
    uint64_t best = UINT64_MAX;
    while (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2 || c2[1] != '/') continue;
        *c2 = '\0';
        const char *ctrls = c1 + 1, *path = c2 + 1;
        if (!strcmp(path, "/")) path = "";
        if (!*ctrls) {
            best = least(best, cgroup_room("/sys/fs/cgroup", path, "memory.max", "memory.current"));
            best = least(
                best, cgroup_room("/sys/fs/cgroup/unified", path, "memory.max", "memory.current"));
        } else {
            for (char *save = NULL, *c = strtok_r((char *)ctrls, ",", &save); c;
                 c = strtok_r(NULL, ",", &save))
                if (!strcmp(c, "memory"))
                    best =
                        least(best, cgroup_room("/sys/fs/cgroup/memory", path,
                                                "memory.limit_in_bytes", "memory.usage_in_bytes"));
        }
    }
    if (f) fclose(f);
    return best;
}

uint64_t rt_mem_available(void)
{
    uint64_t best = UINT64_MAX;
    uint64_t avail = proc_kb("/proc/meminfo", "MemAvailable:");
    if (avail) best = avail;
    /* the mount roots, as seen from inside a cgroup namespace (v2, then v1) */
    best = least(best, cgroup_room("/sys/fs/cgroup", "", "memory.max", "memory.current"));
    best = least(best, cgroup_room("/sys/fs/cgroup/memory", "", "memory.limit_in_bytes",
                                   "memory.usage_in_bytes"));
    best = least(best, cgroups_room());
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        uint64_t vm = proc_kb("/proc/self/status", "VmSize:");
        best = least(best, rl.rlim_cur > vm ? rl.rlim_cur - vm : 0);
    }
    return best;
}

rt_status rt_mem_check(uint64_t bytes, const char *what, rt_error *err)
{
    uint64_t avail = rt_mem_available();
    if (bytes <= avail) return RT_OK;
    return RT_ERR(err, RT_ENOMEM,
                  "%s needs %.1f MiB of memory but only %.1f MiB is available (the least of "
                  "MemAvailable, the cgroup's limit and ulimit -v); refused before "
                  "allocating it ---> HINT: use --subset, or free memory",
                  what, (double)bytes / (1 << 20), (double)avail / (1 << 20));
}
