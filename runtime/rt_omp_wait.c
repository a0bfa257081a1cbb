/* rt_omp_wait.c - Kiln's default for how long an idle OpenMP thread spins before it
 * sleeps: GOMP_SPINCOUNT=10000 (about 0.3 ms of pause instructions) in place of
 * libgomp's 300000 (about 10 ms), unless the user set GOMP_SPINCOUNT or
 * OMP_WAIT_POLICY. A thread that has finished its share of a parallel loop spins at the
 * barrier for the others; on a machine whose cores other processes share, the other
 * thread is often descheduled, and 10 ms of spinning burns the time it needs (at load 8
 * on 2 cores, ResNet-20 with 2 threads took 8.6-9.4 CPU-ms per image against 4.1 with 1
 * thread, and ran at a third to half the speed). 0.3 ms still covers the gaps between
 * Kiln's parallel regions on an idle machine, where sleeping at once
 * (OMP_WAIT_POLICY=passive) costs a futex wake-up at every region (about 0.1 ms under
 * KVM). docs/runtime-core.md.
 *
 * libgomp reads its environment in its constructor, before main, and the C library sets
 * up the environment (from the one the process started with) only just before that, so
 * setenv cannot reach it: the process starts itself again with the variable added. This
 * runs from the executable's .preinit_array (rt_omp_wait.h), before any library's
 * constructor, so only the dynamic loader's work is done twice (about 4 ms on the
 * shared 2-core machine). Under valgrind (LD_PRELOAD holds its vgpreload library) it
 * does nothing, so the checked process stays the one that runs.
 */
#include "rt_omp_wait.h"

#include <string.h>
#include <unistd.h>

static int is(const char *entry, const char *name)
{
    size_t n = strlen(name);
    return !strncmp(entry, name, n) && entry[n] == '=';
}

void rt_omp_wait_default(char **argv, char **envp)
{
    size_t n = 0;
    if (!argv || !envp) return;
    for (; envp[n]; n++) {
        if (is(envp[n], "GOMP_SPINCOUNT") || is(envp[n], "OMP_WAIT_POLICY")) return;
        if (is(envp[n], "LD_PRELOAD") && strstr(envp[n], "vgpreload")) return;
    }
    if (n > 4096) return; /* the copy below lives on the stack */
    char *env[n + 2];
    memcpy(env, envp, n * sizeof *env);
    env[n] = "GOMP_SPINCOUNT=10000";
    env[n + 1] = NULL;
    execve("/proc/self/exe", argv, env); /* returns only if it failed: run as we are */
}

void rt_omp_wait_preinit(int argc, char **argv, char **envp)
{
    (void)argc;
    rt_omp_wait_default(argv, envp);
}
