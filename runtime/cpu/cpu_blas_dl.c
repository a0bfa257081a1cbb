/* cpu_blas_dl.c - OpenBLAS loaded when the first CPU backend opens, not at process start.
 *
 * Linking OpenBLAS made every process that links the runtime, the kernel above all,
 * map it (+ libgfortran, libquadmath) and run its constructors (CPU probe, buffer
 * setup) before main (bench/README.md has the cost), for a library only CPU training
 * uses. So the build takes OpenBLAS's headers only (blas_headers_dep in
 * meson.build) and this file defines the three OpenBLAS functions Kiln calls as
 * forwarders to the real ones, looked up with dlopen/dlsym once (pthread_once).
 * Callers (cpu_conv.c, cpu_dense.c, magics/mg_device.c) keep plain cblas.h code; a
 * BLAS function not defined here fails to link: add it to the table and a forwarder.
 *
 * cpu_open() calls rtp_cpu_blas_load() first, so a missing library is an RT_ENODEV
 * from rt_backend_open, never a crash. Which file: KILN_LIBOPENBLAS if set (tests use
 * it), else the library meson linked before (KILN_OPENBLAS_PATH: the openmp build's
 * own directory, as kiln's RUNPATH used to pin it), else Debian's openmp alternative,
 * else whatever libopenblas.so.0 the loader finds. The kiln-kernel wheel depends on
 * scipy-openblas32 (PyPI): the same OpenBLAS with every symbol prefixed scipy_ , found
 * next to the packaged binary (<site-packages>/kiln_kernel/bin/kiln ->
 * <site-packages>/scipy_openblas32/lib/libscipy_openblas.so). A source build tries it
 * after the system's; a wheel build (KILN_BLAS_WHEEL_FIRST) before, since its pthreads
 * build needs no libgomp and the system's OpenMP build would bring a second libgomp
 * beside the wheel's own copy. OpenBLAS's OpenMP build binds to the
 * libgomp the process already has; its constructor now reads OPENBLAS_* and OMP_* when
 * the backend first opens (so `%env` before the first CPU use takes effect), and
 * cpu_open sets its thread count as before. The forwarders are hidden
 * (-fvisibility=hidden), so the loaded library never binds to them. Never dlclose'd.
 *
 * OpenBLAS picks its kernels by CPU family and model, and a CPU newer than the library
 * is taken for a generic one: Debian 12's OpenBLAS 0.3.21 runs its SSE3 (Prescott)
 * kernels on an Emerald Rapids Xeon (model 207), 3-4x slower than its AVX-512 ones.
 * So when OPENBLAS_CORETYPE is unset, Kiln names the kernels from the instructions the
 * CPU has (pick_kernels) before the library's constructor reads it; a user's own
 * OPENBLAS_CORETYPE is left as it is.
 */
#include <cblas.h>
#include <limits.h>
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
    __typeof__(openblas_get_corename) *get_corename;
} fn;
static int loaded;        /* every entry of fn is set */
static char why[720];     /* set when not loaded */
static char tried[300];   /* the first file tried, as the error names it */
static char library[400]; /* rt_cpu_blas_library() */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int load_system(rt_dl_result *r)
{
    const char *names[] = {KILN_OPENBLAS_PATH, DEBIAN_OPENMP, "libopenblas.so.0"};
    const rt_dl_sym syms[] = {
        {"cblas_sgemm", (void **)&fn.sgemm},
        {"openblas_set_num_threads", (void **)&fn.set_num_threads},
        {"openblas_get_num_threads", (void **)&fn.get_num_threads},
        {"openblas_get_corename", (void **)&fn.get_corename},
    };
    return rt_dl_load("KILN_LIBOPENBLAS", names, 3, syms, sizeof syms / sizeof syms[0], r);
}

static int load_wheel(rt_dl_result *r)
{
    char path[PATH_MAX + 64];
    rt_dl_site_file("scipy_openblas32/lib/libscipy_openblas.so", path, sizeof path);
    const char *names[] = {path};
    const rt_dl_sym syms[] = {
        {"scipy_cblas_sgemm", (void **)&fn.sgemm},
        {"scipy_openblas_set_num_threads", (void **)&fn.set_num_threads},
        {"scipy_openblas_get_num_threads", (void **)&fn.get_num_threads},
        {"scipy_openblas_get_corename", (void **)&fn.get_corename},
    };
    return rt_dl_load("KILN_LIBOPENBLAS", names, path[0] ? 1 : 0, syms,
                      sizeof syms / sizeof syms[0], r);
}

/* The OpenBLAS kernel set for this CPU's instructions, or NULL to leave the choice to
 * OpenBLAS (not x86-64, or nothing newer than SSE). SkylakeX's sgemm is also what its
 * Cooperlake and Sapphire Rapids sets use (Kiln calls sgemm only); Zen 1-3 get the
 * Haswell kernels under OpenBLAS's own pick too. */
static const char *pick_kernels(void)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    if (avx512) return "SKYLAKEX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "HASWELL";
#endif
    return NULL;
}

static void load_once(void)
{
    const char *user = getenv("OPENBLAS_CORETYPE");
    const char *kernels = user && *user ? NULL : pick_kernels();
    /* before any OpenBLAS constructor runs; pthread_once keeps it to one thread */
    if (kernels) setenv("OPENBLAS_CORETYPE", kernels, 1);
    rt_dl_result sys, whl;
    memset(&sys, 0, sizeof sys);
    memset(&whl, 0, sizeof whl);
#ifdef KILN_BLAS_WHEEL_FIRST
    int from_wheel = load_wheel(&whl);
    loaded = from_wheel || load_system(&sys);
#else
    int from_wheel = 0;
    loaded = load_system(&sys) || (from_wheel = load_wheel(&whl));
#endif
    if (loaded) {
        const char *core = fn.get_corename();
        snprintf(library, sizeof library, "%s (%s), kernels %.40s%s",
                 from_wheel ? whl.file : sys.file, from_wheel ? "scipy-openblas32" : "system",
                 core ? core : "?", kernels ? " (chosen by Kiln for this CPU)" : "");
        return;
    }
    int foreign = strstr(sys.why, " lacks ") != NULL;
    snprintf(why, sizeof why, "%.370s%s; scipy-openblas32 (%.150s): %.150s", sys.why,
             foreign ? " (not OpenBLAS?)" : "", whl.file, whl.why);
    snprintf(tried, sizeof tried, "%s", sys.file);
    snprintf(library, sizeof library, "not loaded: %.380s", why);
}

static int ready(void)
{
    pthread_once(&once, load_once);
    return loaded;
}

rt_status rtp_cpu_blas_load(rt_error *err)
{
    if (ready()) return RT_OK;
    return RT_ERR(err, RT_ENODEV,
                  "cannot load OpenBLAS (%s): %s ---> HINT: install "
                  "the libopenblas0-openmp package (apt install libopenblas0-openmp) or "
                  "pip install scipy-openblas32; the CPU backend needs one",
                  tried, why);
}

const char *rt_cpu_blas_library(void)
{
    ready(); /* sets library either way */
    return library;
}

/* ---- forwarders: the OpenBLAS API Kiln uses ---- */

/* Reached only through an open CPU backend (cpu_open loaded the library), so an
 * unloaded library here is a broken invariant. */
void cblas_sgemm(OPENBLAS_CONST enum CBLAS_ORDER Order, OPENBLAS_CONST enum CBLAS_TRANSPOSE TransA,
                 OPENBLAS_CONST enum CBLAS_TRANSPOSE TransB, OPENBLAS_CONST blasint M,
                 OPENBLAS_CONST blasint N, OPENBLAS_CONST blasint K, OPENBLAS_CONST float alpha,
                 OPENBLAS_CONST float *A, OPENBLAS_CONST blasint lda, OPENBLAS_CONST float *B,
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
int openblas_get_num_threads(void) { return ready() ? fn.get_num_threads() : 0; }
