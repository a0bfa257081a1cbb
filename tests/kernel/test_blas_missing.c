/* test_blas_missing.c - OpenBLAS is loaded when the first CPU backend opens
 * (runtime/cpu/cpu_blas_dl.c), not linked. When it cannot be loaded, opening the CPU
 * backend fails with RT_ENODEV naming the file and the package to install, and the
 * process goes on; when it can, the backend tells it the thread count as before.
 *
 * usage: test_blas_missing [EXPECTED-TEXT | --loads FROM]
 * With EXPECTED-TEXT (meson sets KILN_LIBOPENBLAS to a missing file, or to a library
 * that is not OpenBLAS), the open must fail with a message containing it. Without it
 * (KILN_LIBOPENBLAS unset), or with --loads FROM (KILN_LIBOPENBLAS names the
 * scipy-openblas32 wheel's library, whose symbols are prefixed scipy_), the open must
 * succeed, OpenBLAS must report the backend's thread count, and rt_cpu_blas_library()
 * (what %device prints) must name where it came from: "system" or "scipy-openblas32",
 * and the kernels OpenBLAS runs: on a CPU with AVX2 never its SSE ones (OpenBLAS 0.3.21
 * took an Emerald Rapids Xeon for a Prescott), and a user's OPENBLAS_CORETYPE stands.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_backend.h"
#include "t.h"

/* cblas.h's, defined by the runtime's forwarders (cpu_blas_dl.c) */
extern int openblas_get_num_threads(void);

static const char *expected;

T_TEST(cpu_open_without_openblas)
{
    rt_backend b;
    rt_error err = {0};
    ASSERT_EQ(rt_backend_open(&b, "cpu", 2, &err), RT_ENODEV);
    ASSERT_STR_CONTAINS(err.msg, "cannot load OpenBLAS");
    ASSERT_STR_CONTAINS(err.msg, "apt install libopenblas0-openmp");
    ASSERT_STR_CONTAINS(err.msg, "KILN_LIBOPENBLAS=");
    ASSERT_STR_CONTAINS(err.msg, expected);
    /* the first answer sticks: a second open says the same, without a retry */
    rt_error again = {0};
    ASSERT_EQ(rt_backend_open(&b, "cpu", 1, &again), RT_ENODEV);
    ASSERT_STR_CONTAINS(again.msg, expected);
    ASSERT_EQ(openblas_get_num_threads(), 0);
}

T_TEST(cpu_open_sets_openblas_threads)
{
    for (int threads = 1; threads <= 2; threads++) {
        rt_backend b;
        rt_error err = {0};
        ASSERT_EQ(rt_backend_open(&b, "cpu", threads, &err), RT_OK);
        ASSERT_EQ(b.threads, threads);
        ASSERT_EQ(openblas_get_num_threads(), threads);
        rt_backend_close(&b);
    }
    const char *lib = rt_cpu_blas_library();
    ASSERT_STR_CONTAINS(lib, expected ? expected : "(system)");
    ASSERT_STR_CONTAINS(lib, ", kernels ");
    const char *user = getenv("KILN_TEST_USER_CORETYPE"); /* what meson set OPENBLAS_CORETYPE to */
    if (user && *user) {
        ASSERT_STR_CONTAINS(lib, user);
        ASSERT(strstr(lib, "chosen by Kiln") == NULL);
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        ASSERT(strstr(lib, "kernels Prescott") == NULL && strstr(lib, "kernels Core2") == NULL &&
               strstr(lib, "kernels Nehalem") == NULL &&
               strstr(lib, "kernels Sandybridge") == NULL);
    }
    printf("%s\n", lib);
}

int main(int argc, char **argv)
{
    const char *env = getenv("KILN_LIBOPENBLAS");
    /* meson cannot unset a variable; an empty OPENBLAS_CORETYPE means unset here (OpenBLAS
     * itself treats the empty name differently from no name) */
    const char *ct = getenv("OPENBLAS_CORETYPE");
    if (ct && !*ct) unsetenv("OPENBLAS_CORETYPE");
    int loads = argc > 2 && !strcmp(argv[1], "--loads");
    expected = argc > 1 ? argv[loads ? 2 : 1] : NULL;
    if (loads && !(env && *env)) {
        printf("SKIP: KILN_LIBOPENBLAS is not set (scipy-openblas32 not installed?)\n");
        return 77;
    }
    if (!loads && !expected != !(env && *env)) {
        fprintf(stderr, "pass EXPECTED-TEXT exactly when KILN_LIBOPENBLAS is set\n");
        return 99;
    }
    if (expected && !loads) T_RUN(cpu_open_without_openblas);
    else T_RUN(cpu_open_sets_openblas_threads);
    return T_EXIT();
}
