/* test_blas_dl.c - cuBLAS is dlopen'ed by the backend (cuda_blas_dl.c), not linked: the
 * library of the CUDA version Kiln was built against must load and provide every entry
 * point the backend calls. Needs the toolkit's libraries, not a GPU. */
#include "../../runtime/cuda/cuda_internal.h"
#include "t.h"

T_TEST(cublas_entry_points_resolve)
{
    rtp_blas_fns f;
    rt_error err = {0};
    memset(&f, 0, sizeof f);
    rt_status s = rtp_blas_load(&f, &err);
    if (s != RT_OK) fprintf(stderr, "  %s\n", err.msg);
    ASSERT_EQ(s, RT_OK);
    ASSERT(f.create && f.destroy && f.set_stream && f.set_math_mode && f.sgemm && f.gemm_ex &&
           f.status_string);
    ASSERT(f.status_string(CUBLAS_STATUS_NOT_INITIALIZED)[0]); /* really cuBLAS: callable */
    ASSERT_EQ(rtp_blas_load(&f, &err), RT_OK); /* a second backend: same library */
}

int main(void)
{
    T_RUN(cublas_entry_points_resolve);
    return T_EXIT();
}
