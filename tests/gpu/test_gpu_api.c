/* test_gpu_api.c - the CUDA backend's contract that holds on EVERY machine: device
 * listing (zero devices is an empty list, not an error), --device parsing and the
 * RT_ENODEV message when CUDA is asked for and absent, precision refusal on the CPU,
 * the loss scaler's rule; and, where a device exists, the out-of-memory error (says
 * what was asked and what was free, and the backend survives it).
 * Built in every configuration (the stub rt_device.h without CUDA), so it never skips.
 */
#include "gpu_util.h"
#include "rt_amp_rule.h"
#include "t.h"

static int have_device(void)
{
    rt_cuda_device_list l;
    return rt_cuda_list_devices(&l, NULL) == RT_OK && l.count > 0;
}

T_TEST(list_devices)
{
    rt_cuda_device_list l;
    rt_error err = {0};
    ASSERT_EQ(rt_cuda_list_devices(&l, &err), RT_OK);
    ASSERT(l.count >= 0 && l.count <= RT_CUDA_MAX_DEVICES);
    if (l.count == 0) ASSERT(strlen(l.why) > 0); /* says why there is none */
    for (int i = 0; i < l.count; i++) {
        ASSERT(l.dev[i].name[0]);
        ASSERT(l.dev[i].mem_total > 0 && l.dev[i].mem_free <= l.dev[i].mem_total);
        ASSERT_EQ(l.dev[i].mem_free_known, l.count == 1);
        if (l.dev[i].mem_free_known) ASSERT(l.dev[i].mem_free > 0);
        ASSERT(l.dev[i].cc_major >= 7);
    }
    printf("  %d device(s)%s%s, driver %d, runtime %d\n", l.count, l.count ? "" : ": ",
           l.count ? "" : l.why, l.driver_version, l.runtime_version);
}

T_TEST(open_cuda_errors)
{
    rt_backend b;
    rt_error err = {0};
    memset(&b, 0x5a, sizeof b);
    ASSERT_EQ(rt_backend_open(&b, "cuda:99", 0, &err), RT_ENODEV);
    ASSERT(b.ops == NULL && b.impl == NULL); /* zeroed on error */
    if (!have_device()) {
        ASSERT_STR_CONTAINS(err.msg, "HINT");
        ASSERT_EQ(rt_backend_open(&b, "cuda", 0, &err), RT_ENODEV);
        ASSERT(strstr(err.msg, "no CUDA device: cudaGetDeviceCount says") ||
               strstr(err.msg, "no NVIDIA driver found") || strstr(err.msg, "built without CUDA"));
    } else {
        ASSERT_STR_CONTAINS(err.msg, "cuda:99 does not exist");
    }
    ASSERT_EQ(rt_backend_open(&b, "cuda:x", 0, &err), RT_EINVAL);
    ASSERT_EQ(rt_backend_open(&b, "cuda:", 0, &err), RT_EINVAL);
    ASSERT_EQ(rt_backend_open(&b, "gpu", 0, &err), RT_EINVAL);
}

T_TEST(auto_picks)
{
    rt_backend b;
    rt_error err = {0};
    ASSERT_EQ(rt_backend_open(&b, "auto", 1, &err), RT_OK);
    ASSERT_STR_EQ(b.ops->name, have_device() ? "cuda" : "cpu");
    rt_backend_close(&b);
    ASSERT(b.ops == NULL);
}

T_TEST(precision_on_cpu)
{
    rt_backend b;
    rt_error err = {0};
    rt_precision p;
    ASSERT_EQ(rt_precision_parse("BF16", &p, &err), RT_OK);
    ASSERT_EQ(p, RT_PREC_BF16);
    ASSERT_EQ(rt_precision_parse("fp8", &p, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "fp32, bf16 or fp16");
    ASSERT_STR_EQ(rt_precision_name(RT_PREC_FP16), "fp16");
    ASSERT_EQ(rt_backend_open(&b, "cpu", 1, &err), RT_OK);
    ASSERT_EQ(rt_cuda_set_precision(&b, RT_PREC_FP32, &err), RT_OK);
    ASSERT_EQ(rt_cuda_set_precision(&b, RT_PREC_BF16, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "--precision bf16");
    ASSERT_EQ(rt_cuda_get_precision(&b), RT_PREC_FP32);
    ASSERT(rt_backend_amp_unscale(&b, NULL, NULL, &err) != RT_OK); /* no state: refused */
    rt_backend_close(&b);
}

T_TEST(loss_scaler)
{
    /* the one implementation of the rules (rt_amp_rule.h: the CPU op and the CUDA
     * kernels both call it) */
    rt_amp_state s;
    rt_amp_state_init(&s, 0);
    ASSERT_EQ((long long)s.scale, 65536);
    s.found_inf = 1;
    ASSERT_EQ(rt_amp_rule_step(&s), 0); /* overflow: skip and halve */
    ASSERT_EQ((long long)s.scale, 32768);
    ASSERT_EQ(s.skipped, 1);
    ASSERT_EQ(s.last_skipped, 1);
    ASSERT_EQ(s.found_inf, 0); /* consumed */
    for (int i = 0; i < 1999; i++) ASSERT_EQ(rt_amp_rule_step(&s), 1);
    ASSERT_EQ((long long)s.scale, 32768); /* not yet */
    ASSERT_EQ(rt_amp_rule_step(&s), 1);
    ASSERT_EQ((long long)s.scale, 65536); /* 2000 clean steps: doubled */
    ASSERT_EQ(s.steps, 2000);             /* Adam's t: applied updates only */
    s.found_inf = 1;
    ASSERT_EQ(rt_amp_rule_step(&s), 0);
    ASSERT_EQ(s.tracker, 0);
    ASSERT_EQ(s.skipped, 2);
    for (int i = 0; i < 200; i++) { /* never reaches 0 */
        s.found_inf = 1;
        rt_amp_rule_step(&s);
    }
    ASSERT(s.scale > 0.0);
    /* without loss scaling (fp32, bf16) the trainer keeps no rt_amp_state and never
     * skips: tests/train/test_golden.c checks skipped 0 and scale 0 there */
}

T_TEST(out_of_memory_survives)
{
    if (!have_device()) {
        printf("  (no device: out-of-memory check not run)\n");
        return;
    }
    rt_backend b;
    rt_error err = {0};
    ASSERT_EQ(rt_backend_open(&b, "cuda", 0, &err), RT_OK);
    void *p = NULL;
    ASSERT_EQ(b.ops->alloc(&b, &p, (size_t)1 << 50, &err), RT_EDEVICE); /* 1 PiB */
    ASSERT(p == NULL);
    ASSERT_STR_CONTAINS(err.msg, "out of device memory");
    ASSERT_STR_CONTAINS(err.msg, "asked for");
    ASSERT_STR_CONTAINS(err.msg, "MiB free of");
    ASSERT_STR_CONTAINS(err.msg, "HINT");
    ASSERT_EQ(b.lost, 0);
    ASSERT_EQ(b.ops->reserve_workspace(&b, (size_t)1 << 50, &err), RT_EDEVICE);
    /* still usable */
    rt_tensor t = {.n = 1000, .c = 1, .h = 1, .w = 1};
    float host[1000];
    ASSERT_EQ(b.ops->alloc(&b, &t.data, 4000, &err), RT_OK);
    ASSERT_EQ(rt_backend_fill(&b, &t, 2.5f, &err), RT_OK);
    ASSERT_EQ(rt_backend_download(&b, host, &t, sizeof host, &err), RT_OK);
    ASSERT(host[0] == 2.5f && host[999] == 2.5f);
    ASSERT_EQ(rt_backend_download(&b, host, &t, 8000, &err), RT_EINVAL); /* past the end */
    b.ops->free(&b, t.data);
    rt_backend_close(&b);
}

T_TEST(unscale_grads)
{
    if (!have_device()) {
        printf("  (no device: unscale check not run)\n");
        return;
    }
    rt_backend b;
    rt_error err = {0};
    ASSERT_EQ(rt_backend_open(&b, "cuda", 0, &err), RT_OK);
    rt_tensor g = {.n = 1001, .c = 1, .h = 1, .w = 1};
    rt_tensor amp = {.dtype = RT_I32, .n = RT_AMP_WORDS, .c = 1, .h = 1, .w = 1};
    union {
        rt_amp_state s;
        int32_t w[RT_AMP_WORDS];
    } u;
    float host[1001];
    for (int i = 0; i < 1001; i++) host[i] = (float)(i - 500) * 1024.0f;
    ASSERT_EQ(b.ops->alloc(&b, &g.data, sizeof host, &err), RT_OK);
    ASSERT_EQ(b.ops->alloc(&b, &amp.data, sizeof u.w, &err), RT_OK);
    ASSERT_EQ(rt_backend_upload(&b, &g, host, sizeof host, &err), RT_OK);
    memset(&u, 0, sizeof u);
    rt_amp_state_init(&u.s, 1024.0);
    ASSERT_EQ(rt_backend_upload(&b, &amp, u.w, sizeof u.w, &err), RT_OK);
    ASSERT_EQ(rt_backend_amp_unscale(&b, &g, &amp, &err), RT_OK);
    ASSERT_EQ(rt_backend_download(&b, u.w, &amp, sizeof u.w, &err), RT_OK);
    ASSERT_EQ(u.s.found_inf, 0);
    ASSERT_EQ(rt_backend_download(&b, host, &g, sizeof host, &err), RT_OK);
    ASSERT(host[0] == -500.0f && host[1000] == 500.0f); /* power-of-two scale: exact */
    host[777] = INFINITY;
    ASSERT_EQ(rt_backend_upload(&b, &g, host, sizeof host, &err), RT_OK);
    ASSERT_EQ(rt_backend_amp_unscale(&b, &g, &amp, &err), RT_OK);
    ASSERT_EQ(rt_backend_download(&b, u.w, &amp, sizeof u.w, &err), RT_OK);
    ASSERT_EQ(u.s.found_inf, 1);
    host[777] = NAN;
    u.s.found_inf = 0; /* a fresh step (the update op clears it) */
    ASSERT_EQ(rt_backend_upload(&b, &amp, u.w, sizeof u.w, &err), RT_OK);
    ASSERT_EQ(rt_backend_upload(&b, &g, host, sizeof host, &err), RT_OK);
    ASSERT_EQ(rt_backend_amp_unscale(&b, &g, &amp, &err), RT_OK);
    ASSERT_EQ(rt_backend_download(&b, u.w, &amp, sizeof u.w, &err), RT_OK);
    ASSERT_EQ(u.s.found_inf, 1);
    host[777] = 1.0f;
    u.s.found_inf = 0;
    ASSERT_EQ(rt_backend_upload(&b, &amp, u.w, sizeof u.w, &err), RT_OK);
    ASSERT_EQ(rt_backend_upload(&b, &g, host, sizeof host, &err), RT_OK);
    ASSERT_EQ(rt_backend_amp_unscale(&b, &g, &amp, &err), RT_OK);
    ASSERT_EQ(rt_backend_download(&b, u.w, &amp, sizeof u.w, &err), RT_OK);
    ASSERT_EQ(u.s.found_inf, 0);
    ASSERT_EQ(rt_cuda_set_precision(&b, RT_PREC_FP16, &err), RT_OK);
    ASSERT_EQ(rt_cuda_get_precision(&b), RT_PREC_FP16);
    b.ops->free(&b, g.data);
    b.ops->free(&b, amp.data);
    rt_backend_close(&b);
}

int main(void)
{
    T_RUN(list_devices);
    T_RUN(open_cuda_errors);
    T_RUN(auto_picks);
    T_RUN(precision_on_cpu);
    T_RUN(loss_scaler);
    T_RUN(out_of_memory_survives);
    T_RUN(unscale_grads);
    return T_EXIT();
}
