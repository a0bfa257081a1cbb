/* rt_mem.h - how much memory this process can still take, for checking a size a file
 * claims before allocating it (rather than discovering the limit half way, or being
 * killed by the OOM killer). */
#ifndef RT_MEM_H
#define RT_MEM_H

#include <stdint.h>

#include "rt_error.h"

/* The least of: MemAvailable (/proc/meminfo), the limit minus the usage of each memory
 * cgroup holding the process and of their ancestors (cgroup v2 memory.max /
 * memory.current, or v1; found through /proc/self/cgroup), and RLIMIT_AS minus the
 * process's VmSize (`ulimit -v`). UINT64_MAX when none is known. */
uint64_t rt_mem_available(void);

/* RT_OK when bytes fit in rt_mem_available(); else RT_ENOMEM naming what (a file) and
 * both sizes, before anything is allocated. */
RT_MUST_USE rt_status rt_mem_check(uint64_t bytes, const char *what, rt_error *err);

#endif
