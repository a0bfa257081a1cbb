/* test_gpu_memory.c - a long-lived kernel rebuilds models many times: creating,
 * attaching, training one step and destroying a model 100 times must give every byte
 * of device memory back. The first cycle is a
 * warm-up (the backend's workspace, cuBLAS/cuDNN lazy state stay with the backend),
 * then free memory must come back to exactly its value after the warm-up.
 * Also opens and closes the backend 20 times: the CUDA runtime keeps some per-context
 * state, so that drift is only bounded (4 MiB, why: allocator granularity is 2 MiB).
 * usage: test_gpu_memory [CYCLES [BATCH]] (100 and 32; the mock device runs fewer).
 * Skips (77) without a device.
 */
#include "gpu_util.h"
#include "t.h"

static const char *spec = "conv2d 32 3\nrelu\nconv2d 64 3\nrelu\nmaxpool 2\ndropout 0.25\nflatten\n"
                          "dense 128\nrelu\ndropout 0.5\ndense 10\n";

static int cycles = 100, batch = 32;

static rt_status cycle(rt_backend *b, const float *img, rt_error *err)
{
    rt_model *m = NULL;
    rt_model_input in = {1, 28, 28, 10};
    int32_t lab[32];
    for (int i = 0; i < 32; i++) lab[i] = i % 10;
    RT_TRY(rt_model_create(&m, spec, &in, err));
    rt_status s = rt_model_attach(m, b, batch, 1, err);
    if (s == RT_OK)
        s = rt_backend_upload(b, rt_model_input_tensor(m), img, (size_t)batch * 784 * 4, err);
    if (s == RT_OK) s = rt_backend_upload(b, rt_model_label_tensor(m), lab, (size_t)batch * 4, err);
    if (s == RT_OK) s = rt_model_forward(m, batch, 1, 0, err);
    if (s == RT_OK) s = rt_model_loss(m, batch, NULL, NULL, NULL, err);
    if (s == RT_OK) s = rt_model_backward(m, batch, err);
    if (s == RT_OK) s = b->ops->sync(b, err);
    rt_model_destroy(m);
    return s;
}

T_TEST(model_cycles_return_memory)
{
    rt_backend b;
    rt_error err = {0};
    gpu_open_or_skip(&b);
    float *img = gpu_randn(32 * 784, 31, 1.0f);
    size_t start = 0, now = 0, total = 0;
    ASSERT_EQ(cycle(&b, img, &err), RT_OK); /* warm-up */
    ASSERT_EQ(rt_cuda_mem_info(&b, &start, &total, &err), RT_OK);
    for (int i = 0; i < cycles; i++) {
        rt_status s = cycle(&b, img, &err);
        if (s != RT_OK) fprintf(stderr, "cycle %d: %s\n", i, err.msg);
        ASSERT_EQ(s, RT_OK);
    }
    ASSERT_EQ(rt_cuda_mem_info(&b, &now, &total, &err), RT_OK);
    printf("  free after warm-up %zu, after %d cycles %zu (of %zu)\n", start, cycles, now, total);
    ASSERT_EQ(now, start);
    free(img);
    rt_backend_close(&b);
}

T_TEST(backend_cycles_bounded)
{
    rt_backend b;
    rt_error err = {0};
    size_t start = 0, now = 0, total = 0;
    gpu_open_or_skip(&b);
    rt_backend_close(&b); /* warm-up: the primary context now exists */
    gpu_open_or_skip(&b);
    ASSERT_EQ(rt_cuda_mem_info(&b, &start, &total, &err), RT_OK);
    rt_backend_close(&b);
    for (int i = 0; i < 20; i++) {
        ASSERT_EQ(rt_backend_open(&b, "cuda", 0, &err), RT_OK);
        rt_backend_close(&b);
    }
    gpu_open_or_skip(&b);
    ASSERT_EQ(rt_cuda_mem_info(&b, &now, &total, &err), RT_OK);
    rt_backend_close(&b);
    printf("  free before %zu, after 20 open/close %zu\n", start, now);
    ASSERT(now + ((size_t)4 << 20) >= start);
}

int main(int argc, char **argv)
{
    if (argc > 1) cycles = atoi(argv[1]);
    if (argc > 2) batch = atoi(argv[2]);
    if (cycles < 1 || batch < 1 || batch > 32) {
        fprintf(stderr, "usage: test_gpu_memory [CYCLES [BATCH <= 32]]\n");
        return 99;
    }
    T_RUN(model_cycles_return_memory);
    T_RUN(backend_cycles_bounded);
    return T_EXIT();
}
