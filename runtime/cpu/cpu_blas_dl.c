/* cpu_blas_dl.c - OpenBLAS loaded when the first CPU backend opens, not at process start.
 *
 * Linking OpenBLAS made every process that links the runtime, the kernel above all,
 * map it (+ libgfortran, libquadmath) and run its constructors (CPU probe, buffer
 * setup) before main: 1.6-2.9 ms of the kernel's ~10 ms start, for a library only
 * CPU training uses. So the build takes OpenBLAS's headers only (blas_headers_dep in
 * meson.build) and this file defines the three OpenBLAS functions Kiln calls as
 * forwarders to the real ones, looked up with dlopen/dlsym once (pthread_once).
 * Callers (cpu_conv.c, cpu_dense.c, magics/mg_device.c) keep plain cblas.h code; a
 * BLAS function not defined here fails to link: add it to the table and a forwarder.
 *
 * cpu_open() calls rtp_cpu_blas_load() first, so a missing library is an RT_ENODEV
 * from rt_backend_open, never a crash. Which file: KILN_LIBOPENBLAS if set (tests use
 * it), else the library meson linked before (KILN_OPENBLAS_PATH: the openmp build's
 * own directory, as kiln's RUNPATH used to pin it), else Debian's openmp alternative,
 * else whatever libopenblas.so.0 the loader finds. OpenBLAS's OpenMP build binds to the
 * libgomp the process already has; its constructor now reads OPENBLAS_* and OMP_* when
 * the backend first opens (so `%env` before the first CPU use takes effect), and
 * cpu_open sets its thread count as before. The forwarders are hidden
 * (-fvisibility=hidden), so the loaded library never binds to them. Never dlclose'd.
 */
#include <cblas.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../rt_dl.h"
#include "cpu_internal.h"

#ifndef KILN_OPENBLAS_PATH
#define KILN_OPENBLAS_PATH "libopenblas.so.0"
#endif
#if defined(__x86_64__)
#define DEBIAN_OPENMP "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0"
#elif defined(__aarch64__)
#define DEBIAN_OPENMP "/usr/lib/aarch64-linux-gnu/openblas-openmp/libopenblas.so.0"
#else
#define DEBIAN_OPENMP "libopenblas.so.0"
#endif

static struct {
    __typeof__(cblas_sgemm) *sgemm;
    __typeof__(openblas_set_num_threads) *set_num_threads;
    __typeof__(openblas_get_num_threads) *get_num_threads;
} fn;
static int loaded;          /* every entry of fn is set */
static char why[400];       /* set when not loaded */
static char tried[300];     /* the first file tried, as the error names it */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load_once(void)
{
    const char *names[] = {KILN_OPENBLAS_PATH, DEBIAN_OPENMP, "libopenblas.so.0"};
    const rt_dl_sym syms[] = {
        {"cblas_sgemm", (void **)&fn.sgemm},
        {"openblas_set_num_threads", (void **)&fn.set_num_threads},
        {"openblas_get_num_threads", (void **)&fn.get_num_threads},
    };
    rt_dl_result r;
    loaded = rt_dl_load("KILN_LIBOPENBLAS", names, 3, syms, sizeof syms / sizeof syms[0], &r);
    int foreign = !loaded && strstr(r.why, " lacks ") != NULL;
    snprintf(why, sizeof why, "%.370s%s", r.why, foreign ? " (not OpenBLAS?)" : "");
    snprintf(tried, sizeof tried, "%s", r.file);
}

static int ready(void)
{
    pthread_once(&once, load_once);
    return loaded;
}

rt_status rtp_cpu_blas_load(rt_error *err)
{
    if (ready()) return RT_OK;
    return RT_ERR(err, RT_ENODEV, "cannot load OpenBLAS (%s): %s ---> HINT: install "
                  "the libopenblas0-openmp package (apt install libopenblas0-openmp); "
                  "the CPU backend needs it", tried, why);
}

/* ---- forwarders: the OpenBLAS API Kiln uses ---- */

/* Reached only through an open CPU backend (cpu_open loaded the library), so an
 * unloaded library here is a broken invariant. */
void cblas_sgemm(OPENBLAS_CONST enum CBLAS_ORDER Order,
                 OPENBLAS_CONST enum CBLAS_TRANSPOSE TransA,
                 OPENBLAS_CONST enum CBLAS_TRANSPOSE TransB, OPENBLAS_CONST blasint M,
                 OPENBLAS_CONST blasint N, OPENBLAS_CONST blasint K,
                 OPENBLAS_CONST float alpha, OPENBLAS_CONST float *A,
                 OPENBLAS_CONST blasint lda, OPENBLAS_CONST float *B,
                 OPENBLAS_CONST blasint ldb, OPENBLAS_CONST float beta, float *C,
                 OPENBLAS_CONST blasint ldc)
{
    int ok = ready();
    RT_ASSERT(ok);
    fn.sgemm(Order, TransA, TransB, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void openblas_set_num_threads(int num_threads)
{
    if (ready()) fn.set_num_threads(num_threads);
}

/* 0 when OpenBLAS could not be loaded (%device prints it). */
int openblas_get_num_threads(void)
{
    return ready() ? fn.get_num_threads() : 0;
}
