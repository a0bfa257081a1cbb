/* test_cudnn_dl.c - cuDNN is dlopen'ed by the first CUDA backend (runtime/cuda/cudnn_dl.c),
 * not linked. usage: test_cudnn_dl [EXPECT]
 * Without EXPECT: the library of the cuDNN major Kiln was built against loads and gives
 * every entry point cudnn_conv.c calls. With EXPECT (KILN_LIBCUDNN pointing at a missing
 * or wrong file): loading fails with RT_ENODEV, a message containing EXPECT and a hint,
 * the same answer again, and rtp_cudnn_create falls back to no cuDNN state (conv2d by
 * im2col + cuBLAS) instead of failing the backend. Needs no GPU.
 */
#include "../../runtime/cuda/cuda_internal.h"
#include "../../runtime/cuda/cudnn_dl.h"
#include "t.h"

static const char *expect;

T_TEST(cudnn_entry_points_resolve)
{
    const rtp_dnn_fns *f = NULL;
    rt_error err = {0};
    rt_status s = rtp_dnn_load(&f, &err);
    if (s != RT_OK) fprintf(stderr, "  %s\n", err.msg);
    ASSERT_EQ(s, RT_OK);
    ASSERT(f != NULL);
    const void *const *slot = (const void *const *)f; /* every field is a function pointer */
    for (size_t i = 0; i < sizeof *f / sizeof(void *); i++) ASSERT(slot[i] != NULL);
    ASSERT_EQ((int)(f->GetVersion() / 10000), CUDNN_MAJOR); /* really cuDNN: callable */
    ASSERT(f->GetErrorString(CUDNN_STATUS_BAD_PARAM)[0]);
    ASSERT_EQ(rtp_cudnn_version(), f->GetVersion());
    const rtp_dnn_fns *again = NULL;
    ASSERT_EQ(rtp_dnn_load(&again, &err), RT_OK); /* a second backend: the same table */
    ASSERT(again == f);
}

T_TEST(cudnn_missing_falls_back)
{
    const rtp_dnn_fns *f = (const rtp_dnn_fns *)&f;
    rt_error err = {0};
    ASSERT_EQ(rtp_dnn_load(&f, &err), RT_ENODEV);
    ASSERT(f == NULL);
    ASSERT_STR_CONTAINS(err.msg, expect);
    ASSERT_STR_CONTAINS(err.msg, "HINT");
    rt_error again = {0};
    ASSERT_EQ(rtp_dnn_load(&f, &again), RT_ENODEV);
    ASSERT_STR_EQ(again.msg, err.msg);
    ASSERT_EQ(rtp_cudnn_version(), (size_t)0);
    /* the load fails before the backend is touched: no device needed */
    rtp_cudnn *dnn = (rtp_cudnn *)&dnn;
    ASSERT_EQ(rtp_cudnn_create(NULL, &dnn, &err), RT_OK);
    ASSERT(dnn == NULL);
    ASSERT_EQ(rtp_cudnn_create(NULL, &dnn, &err), RT_OK); /* logged once, still no state */
    ASSERT(dnn == NULL);
    rtp_cudnn_destroy(dnn);
}

int main(int argc, char **argv)
{
    expect = argc > 1 ? argv[1] : NULL;
    if (expect) T_RUN(cudnn_missing_falls_back);
    else T_RUN(cudnn_entry_points_resolve);
    return T_EXIT();
}
