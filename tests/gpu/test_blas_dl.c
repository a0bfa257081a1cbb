/* test_blas_dl.c - cuBLAS is dlopen'ed by the backend (cuda_blas_dl.c), not linked: the
 * library of the CUDA version Kiln was built against must load and provide every entry
 * point the backend calls. Needs the toolkit's libraries, not a GPU.
 * The kiln-kernel wheel's binary (<site-packages>/kiln_kernel/bin/kiln) takes cuBLAS
 * from the nvidia-cublas wheel beside it (the kiln-kernel[cuda] extra) before the
 * system's: this test copies itself into such a layout in a temporary folder, with the
 * system's library linked in as the wheel's, and the copy (--in-wheel LIB) must load
 * that file, and finds cuDNN's and NCCL's files in their own wheels' folders (from CUDA 13
 * on cuBLAS shares nvidia/cu13/lib, cuDNN and NCCL do not).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../runtime/cuda/cuda_internal.h"
#include "t.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define CUBLAS_SONAME "libcublas.so." STR(CUBLAS_VER_MAJOR)

/* a T_TEST helper: fails the calling test */
static void load_all(int *t_failed_, rtp_blas_fns *f)
{
    rt_error err = {0};
    memset(f, 0, sizeof *f);
    rt_status s = rtp_blas_load(f, &err);
    if (s != RT_OK) fprintf(stderr, "  %s\n", err.msg);
    ASSERT_EQ(s, RT_OK);
    ASSERT(f->create && f->destroy && f->set_stream && f->set_math_mode && f->sgemm && f->gemm_ex &&
           f->sgemm_sb && f->gemm_sb_ex && f->status_string);
    ASSERT(f->status_string(CUBLAS_STATUS_NOT_INITIALIZED)[0]); /* really cuBLAS: callable */
}

/* the file the loader took the entry point from, as it was opened */
static const char *origin(void *fn)
{
    Dl_info info;
    return dladdr(fn, &info) && info.dli_fname ? info.dli_fname : "";
}

T_TEST(cublas_entry_points_resolve)
{
    rtp_blas_fns f;
    load_all(t_failed_, &f);
    if (*t_failed_) return;
    rt_error err = {0};
    ASSERT_EQ(rtp_blas_load(&f, &err), RT_OK); /* a second backend: same library */
    char wheel[PATH_MAX];
    const char *names[3];
    /* not the wheel's binary: the system's name, then any */
    ASSERT_EQ(rtp_cuda_lib_names("cublas", CUBLAS_SONAME, "libcublas.so", wheel, names), 2);
    ASSERT_STR_EQ(names[0], CUBLAS_SONAME);
}

/* Where each nvidia-* wheel puts its library, per CUDA major: PyTorch's cu13 wheels
 * split cuBLAS (nvidia/cu13/lib) from cuDNN (nvidia/cudnn/lib) and NCCL (nvidia/nccl/lib). */
T_TEST(wheel_folders_per_library)
{
    const struct {
        const char *pkg;
        int major;
        const char *dir;
    } c[] = {{"cublas", 12, "nvidia/cublas/lib"}, {"cudnn", 12, "nvidia/cudnn/lib"},
             {"nccl", 12, "nvidia/nccl/lib"},     {"cublas", 13, "nvidia/cu13/lib"},
             {"cudnn", 13, "nvidia/cudnn/lib"},   {"nccl", 13, "nvidia/nccl/lib"},
             {"cublas", 14, "nvidia/cu14/lib"},   {"cublas", 11, "nvidia/cublas/lib"}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char dir[64];
        rtp_cuda_wheel_dir(c[i].pkg, c[i].major, dir, sizeof dir);
        ASSERT_STR_EQ(dir, c[i].dir);
    }
}

static int sh(const char *cmd)
{
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* in the parent: lay out <tmp>/kiln_kernel/bin/kiln (a copy of this test) and run it */
T_TEST(cublas_from_the_wheel_beside_it)
{
    rtp_blas_fns f;
    load_all(t_failed_, &f);
    if (*t_failed_) return;
    char lib[PATH_MAX], self[PATH_MAX], dir[] = "/tmp/kiln-blas-wheel-XXXXXX";
    ASSERT(realpath(origin((void *)f.create), lib) != NULL); /* the system's file */
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    ASSERT(k > 0);
    self[k] = '\0';
    ASSERT(mkdtemp(dir) != NULL);
    char cmd[3 * PATH_MAX + 200];
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s/kiln_kernel/bin' && cp '%s' '%s/kiln_kernel/bin/kiln'"
             " && '%s/kiln_kernel/bin/kiln' --in-wheel '%s'",
             dir, self, dir, dir, lib);
    int rc = sh(cmd);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    sh(cmd);
    ASSERT_EQ(rc, 0);
}

/* in the copy: the wheel's file is lib, linked where nvidia-cublas installs it */
static int in_wheel(const char *lib)
{
    char wheel[PATH_MAX], cmd[2 * PATH_MAX + 64];
    const char *names[3];
    rtp_cuda_lib_names("cublas", CUBLAS_SONAME, "libcublas.so", wheel, names);
    if (!wheel[0] || !strstr(wheel, "/nvidia/")) {
        fprintf(stderr, "no wheel path: '%s'\n", wheel);
        return 1;
    }
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\" && ln -s '%s' '%s'", wheel, lib, wheel);
    if (sh(cmd) != 0) return 1;
    char again[PATH_MAX];
    if (rtp_cuda_lib_names("cublas", CUBLAS_SONAME, "libcublas.so", again, names) != 3 ||
        strcmp(names[0], wheel) != 0)
        return 1;
    rtp_blas_fns f;
    rt_error err = {0};
    if (rtp_blas_load(&f, &err) != RT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    if (strcmp(origin((void *)f.sgemm), wheel) != 0) {
        fprintf(stderr, "cuBLAS came from '%s', not the wheel's '%s'\n", origin((void *)f.sgemm),
                wheel);
        return 1;
    }
    /* cuDNN's and NCCL's wheels, each in its own folder beside cuBLAS's */
    const char *other[][3] = {{"cudnn", "libcudnn.so.9", "/nvidia/cudnn/lib/libcudnn.so.9"},
                              {"nccl", "libnccl.so.2", "/nvidia/nccl/lib/libnccl.so.2"}};
    for (int i = 0; i < 2; i++) {
        char path[PATH_MAX];
        rtp_cuda_lib_names(other[i][0], other[i][1], "x", path, names);
        if (!strstr(path, other[i][2])) {
            fprintf(stderr, "%s: wheel path '%s', not in %s\n", other[i][0], path, other[i][2]);
            return 1;
        }
        snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\" && touch '%s'", path, path);
        if (sh(cmd) != 0 || rtp_cuda_lib_names(other[i][0], other[i][1], "x", path, names) != 3 ||
            strcmp(names[0], path) != 0) {
            fprintf(stderr, "%s: the wheel's file '%s' is not tried first\n", other[i][0], path);
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--in-wheel") == 0) return in_wheel(argv[2]);
    T_RUN(cublas_entry_points_resolve);
    T_RUN(wheel_folders_per_library);
    T_RUN(cublas_from_the_wheel_beside_it);
    return T_EXIT();
}
