/* test_gpu_lost.c - a sticky CUDA error (an illegal address) marks the backend lost:
 * the failing call returns RT_EDEVICE_LOST with a restart hint, every later op returns
 * RT_EDEVICE_LOST at once, and close still returns. Its own executable because the
 * CUDA context of this process is unusable afterwards. Skips (77) without a device.
 */
#include <stdint.h>

#include "gpu_util.h"
#include "t.h"

T_TEST(illegal_address_loses_the_device)
{
    rt_backend b;
    rt_error err = {0};
    gpu_open_or_skip(&b);
    rt_tensor ok = {.n = 64, .c = 1, .h = 1, .w = 1};
    ASSERT_EQ(b.ops->alloc(&b, &ok.data, 256, &err), RT_OK);
    /* a bogus device address: the kernel faults; the error surfaces at the sync */
    rt_tensor bad = {.data = (void *)(uintptr_t)0x100, .n = 1 << 20, .c = 1, .h = 1, .w = 1};
    rt_status s = rt_backend_relu_fwd(&b, &bad, &bad, 0.0f, &err);
    if (s == RT_OK) s = b.ops->sync(&b, &err);
    ASSERT_EQ(s, RT_EDEVICE_LOST);
    ASSERT_STR_CONTAINS(err.msg, "restart the kernel");
    ASSERT_EQ(b.lost, 1);
    ASSERT_EQ(rt_backend_fill(&b, &ok, 1.0f, &err), RT_EDEVICE_LOST);
    ASSERT_EQ(b.ops->sync(&b, &err), RT_EDEVICE_LOST);
    void *p = NULL;
    ASSERT_EQ(b.ops->alloc(&b, &p, 64, &err), RT_EDEVICE_LOST);
    b.ops->free(&b, ok.data);
    rt_backend_close(&b); /* returns, does not hang or abort */
}

int main(void)
{
    T_RUN(illegal_address_loses_the_device);
    return T_EXIT();
}
