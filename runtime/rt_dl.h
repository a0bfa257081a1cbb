/* rt_dl.h - loading a shared library on first use: the one dlopen/dlsym routine behind
 * the libraries Kiln keeps out of its start-up (libcurl, libarchive, OpenBLAS, cuDNN;
 * see each *_dl.c for why and what it costs linked). Callers run it once
 * (pthread_once) and keep the table it fills; the library is never dlclose'd.
 */
#ifndef RT_DL_H
#define RT_DL_H

#include <stddef.h>

typedef struct rt_dl_sym {
    const char *name;        /* symbol */
    void **slot;             /* where its address goes */
} rt_dl_sym;

typedef struct rt_dl_result {
    void *handle;            /* the loaded library, NULL on failure */
    char file[256];          /* the file that loaded, or the first one tried ("ENV=file"
                                when it came from the environment variable) */
    char why[400];           /* on failure: the first file's dlerror, or "FILE lacks SYM" */
} rt_dl_result;

/* Opens the first of names[0..n) that dlopen accepts (RTLD_NOW | RTLD_LOCAL) - or only
 * the file in environment variable env when it is set and not empty (a test hook) - and
 * resolves every symbol into its slot. Returns 1 when all are resolved, else 0 with
 * r->why; slots may then be partly filled and must not be used. */
int rt_dl_load(const char *env, const char *const *names, int n, const rt_dl_sym *syms,
               size_t nsyms, rt_dl_result *r);

/* "<site-packages>/rel" for a Kiln installed as a wheel: the binary is
 * <site-packages>/kiln_kernel/bin/kiln (/proc/self/exe), and libraries that come as
 * wheels of their own (scipy-openblas32, nvidia-nccl-cu12) lie beside it. out = "" when
 * it cannot be told. A source build gets a path that does not exist: harmless. */
void rt_dl_site_packages_path(const char *rel, char *out, size_t n);

#endif
