/* rt_dl.h - loading a shared library on first use: the one dlopen/dlsym routine behind
 * the libraries Kiln keeps out of its start-up (libcurl, libarchive, OpenBLAS, cuBLAS,
 * cuDNN;
 * see each *_dl.c for why and what it costs linked). Callers run it once
 * (pthread_once) and keep the table it fills; the library is never dlclose'd.
 */
#ifndef RT_DL_H
#define RT_DL_H

#include <stddef.h>

typedef struct rt_dl_sym {
    const char *name; /* symbol */
    void **slot;      /* where its address goes */
} rt_dl_sym;

typedef struct rt_dl_result {
    void *handle;   /* the loaded library, NULL on failure */
    char file[256]; /* the file that loaded, or the first one tried ("ENV=file"
                                when it came from the environment variable) */
    char why[400];  /* on failure: the first file's dlerror, or "FILE lacks SYM" */
} rt_dl_result;

/* Opens the first of names[0..n) that dlopen accepts (RTLD_NOW | RTLD_LOCAL) - or only
 * the file in environment variable env when it is set and not empty (a test hook) - and
 * resolves every symbol into its slot. Returns 1 when all are resolved, else 0 with
 * r->why; slots may then be partly filled and must not be used. */
int rt_dl_load(const char *env, const char *const *names, int n, const rt_dl_sym *syms,
               size_t nsyms, rt_dl_result *r);

/* The kiln-kernel wheel installs the binary as <site-packages>/kiln_kernel/bin/kiln, and
 * the libraries it loads on first use may come from other wheels installed beside it
 * (scipy-openblas32, nvidia-cublas-cu11, nvidia-cudnn-cu11). Writes
 * <dir of /proc/self/exe>/../../../REL into out (that is <site-packages>/REL for the
 * wheel's binary) and returns out; "" when the path does not fit. The file need not
 * exist: for any other binary it names nothing, and dlopen says so. */
char *rt_dl_site_file(const char *rel, char *out, size_t n);

#endif
