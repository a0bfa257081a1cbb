/* rt_omp_wait.c - Kiln's default for how long an idle OpenMP thread spins before it
 * sleeps: GOMP_SPINCOUNT=10000 (about 0.3 ms of pause instructions) in place of
 * libgomp's 300000 (about 10 ms), unless the user set GOMP_SPINCOUNT or
 * OMP_WAIT_POLICY. A thread that has finished its share of a parallel loop spins at the
 * barrier for the others; on a machine whose cores other processes share, the other
 * thread is often descheduled, and 10 ms of spinning burns the time it needs (at load 8
 * on 2 cores, ResNet-20 with 2 threads took 8.6-9.4 CPU-ms per image against 4.1 with 1
 * thread, and ran at a third to half the speed). 0.3 ms still covers the gaps between
 * Kiln's parallel regions on an idle machine, where sleeping at once
 * (OMP_WAIT_POLICY=passive) costs a futex wake-up at every region (idle, ResNet-20 at 2
 * threads: 8% fewer images/s than 10000, which matches libgomp's default there).
 * docs/runtime-core.md.
 *
 * libgomp reads its environment in its constructor, before main, and the C library sets
 * up the environment (from the one the process started with) only just before that, so
 * setenv cannot reach it: the process starts itself again with the variable added. This
 * runs from the executable's .preinit_array (rt_omp_wait.h), before any library's
 * constructor, so only the dynamic loader's work is done twice (about 4 ms on the
 * shared 2-core machine). It executes the program's real path (read from /proc/self/exe),
 * so the process keeps its name (`kiln` in ps, pgrep and /proc/PID/comm). It does
 * nothing under valgrind (LD_PRELOAD holds its vgpreload library), so the checked
 * process stays the one that runs, nor when the program was started by naming the
 * dynamic loader (`ld-linux-x86-64.so.2 kiln ...`: /proc/self/exe is the loader then).
 * The restart also sets KILN_OMP_SPIN_SET; once libgomp has read its settings, a
 * constructor here removes both variables again, so the commands a notebook runs
 * (`!python train.py`, with its own OpenMP) get the user's environment unchanged.
 */
#include "rt_omp_wait.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#define SPIN_SET "KILN_OMP_SPIN_SET" /* the restart added GOMP_SPINCOUNT */

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
    if (n > 4096) return;                /* the copy below lives on the stack */
    if (getauxval(AT_BASE) == 0) return; /* run by naming the loader, or linked statically */
    char path[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", path, sizeof path - 1);
    if (len <= 0 || (size_t)len >= sizeof path - 1) return;
    path[len] = '\0';
    char *env[n + 3];
    memcpy(env, envp, n * sizeof *env);
    env[n] = "GOMP_SPINCOUNT=10000";
    env[n + 1] = SPIN_SET "=1";
    env[n + 2] = NULL;
    execve(path, argv,
           env); /* returns only if it failed (e.g. the file was replaced): run as we are */
}

/* A library's constructors run before the executable's, so libgomp has read
 * GOMP_SPINCOUNT by now: the variables the restart added leave the environment. */
__attribute__((constructor)) static void rt_omp_wait_forget(void)
{
    if (!getenv(SPIN_SET)) return;
    unsetenv("GOMP_SPINCOUNT");
    unsetenv(SPIN_SET);
}

void rt_omp_wait_preinit(int argc, char **argv, char **envp)
{
    (void)argc;
    rt_omp_wait_default(argv, envp);
}
