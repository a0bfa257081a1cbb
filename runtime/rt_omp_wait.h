/* rt_omp_wait.h - Kiln's default for how long an idle OpenMP thread spins before it
 * sleeps (rt_omp_wait.c): GOMP_SPINCOUNT=10000 unless the user set GOMP_SPINCOUNT or
 * OMP_WAIT_POLICY. libgomp reads its environment before main, so an executable that
 * trains registers the default in its .preinit_array:
 *
 *     RT_OMP_WAIT_PREINIT(rt_omp_wait_preinit);
 *
 * or its own function there that calls rt_omp_wait_default for some commands only.
 */
#ifndef RT_OMP_WAIT_H
#define RT_OMP_WAIT_H

/* Restarts the process (same argv, same environment plus GOMP_SPINCOUNT=10000) unless
 * either variable is set or the process runs under valgrind; returns when it does not
 * (or the restart failed). For a .preinit_array function only: it reads envp, not the
 * C library's environment, which is not set up yet there. */
void rt_omp_wait_default(char **argv, char **envp);

/* A .preinit_array function that calls rt_omp_wait_default. */
void rt_omp_wait_preinit(int argc, char **argv, char **envp);

#define RT_OMP_WAIT_PREINIT(fn)                                                               \
    __attribute__((section(".preinit_array"), used)) static void (*const rt_omp_wait_entry_)( \
        int, char **, char **) = (fn)

#endif
