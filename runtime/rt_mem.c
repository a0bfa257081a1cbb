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

uint64_t rt_mem_available(void)
{
    uint64_t best = UINT64_MAX;
    uint64_t avail = proc_kb("/proc/meminfo", "MemAvailable:");
    if (avail) best = avail;
    uint64_t max = file_u64("/sys/fs/cgroup/memory.max"); /* v2, as seen from inside */
    uint64_t cur = file_u64("/sys/fs/cgroup/memory.current");
    if (!max) {
        max = file_u64("/sys/fs/cgroup/memory/memory.limit_in_bytes"); /* v1 */
        cur = file_u64("/sys/fs/cgroup/memory/memory.usage_in_bytes");
    }
    if (max && max < ((uint64_t)1 << 60)) best = least(best, max > cur ? max - cur : 0);
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
