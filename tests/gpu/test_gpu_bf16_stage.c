/* test_gpu_bf16_stage.c - bf16 convolutions over cuDNN round a layer's dy to 16 bits
 * once for both backward passes (runtime/cuda/cudnn_conv.c: the data pass takes the
 * filter pass's 16-bit dy when nothing ran in between), with the same bits as rounding
 * it again. Mock device with the cuDNN stand-in only: it counts the rounded floats.
 *  - bwd_filter then bwd_data on one dy: x, dy and w rounded once each;
 *  - the same with an op in between (dy rewritten by a fill, then put back): dy is
 *    rounded again, and dx is bitwise the dx of the back-to-back pair;
 *  - another dy of the same shape right after: rounded (a pointer, not a shape, match).
 */
#include "../t.h"
#include "gpu_util.h"

long mock_stat_to16(void);
void mock_stat_reset(void);

static rt_backend g;
static const rt_conv_desc D = {
    .N = 2, .C = 3, .H = 6, .W = 6, .K = 4, .R = 3, .S = 3, .stride = 1, .pad = 1, .P = 6, .Q = 6};

static void fill(rt_tensor *t, size_t n, float scale, rt_error *err)
{
    float *h = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        h[i] = scale * (float)((i * 2654435761u) % 1000) / 1000.0f - 0.3f;
    if (rt_backend_upload(&g, t, h, n * 4, err) != RT_OK) exit(99);
    free(h);
}

static rt_tensor make(rt_backend *b, int n, int c, int h, int w)
{
    rt_tensor t = {.dtype = RT_F32, .n = n, .c = c, .h = h, .w = w};
    rt_error err = {0};
    if (b->ops->alloc(b, &t.data, rt_tensor_bytes(&t), &err) != RT_OK) exit(99);
    return t;
}

T_TEST(dy_rounded_once)
{
    rt_error err = {0};
    rt_tensor x = make(&g, 2, 3, 6, 6), w = make(&g, 4, 3, 3, 3), dy = make(&g, 2, 4, 6, 6),
              dy2 = make(&g, 2, 4, 6, 6), dx = make(&g, 2, 3, 6, 6), dw = make(&g, 4, 3, 3, 3);
    const size_t nx = 2 * 3 * 36, nw = 4 * 27, ny = 2 * 4 * 36;
    fill(&x, nx, 1.0f, &err), fill(&w, nw, 0.5f, &err), fill(&dy, ny, 2.0f, &err);
    fill(&dy2, ny, 3.0f, &err);
    ASSERT_EQ(g.ops->reserve_workspace(&g, g.ops->conv2d_workspace(&g, &D), &err), RT_OK);
    float a[2 * 3 * 36], b[2 * 3 * 36];
    /* back to back: x, dy (filter pass), w (data pass) */
    mock_stat_reset();
    ASSERT_EQ(rt_backend_conv2d_bwd_filter(&g, &dw, NULL, &dy, &x, &D, &err), RT_OK);
    ASSERT_EQ(rt_backend_conv2d_bwd_data(&g, &dx, &dy, &w, &D, &err), RT_OK);
    ASSERT_EQ(mock_stat_to16(), (long)(nx + ny + nw));
    ASSERT_EQ(rt_backend_download(&g, a, &dx, sizeof a, &err), RT_OK);
    /* an op in between: dy rounded again, the same dx */
    ASSERT_EQ(rt_backend_conv2d_bwd_filter(&g, &dw, NULL, &dy, &x, &D, &err), RT_OK);
    ASSERT_EQ(rt_backend_fill(&g, &dx, 7.0f, &err), RT_OK);
    mock_stat_reset();
    ASSERT_EQ(rt_backend_conv2d_bwd_data(&g, &dx, &dy, &w, &D, &err), RT_OK);
    ASSERT_EQ(mock_stat_to16(), (long)(ny + nw));
    ASSERT_EQ(rt_backend_download(&g, b, &dx, sizeof b, &err), RT_OK);
    ASSERT(memcmp(a, b, sizeof a) == 0);
    /* another dy right after: rounded, and its dx is not the first dy's */
    ASSERT_EQ(rt_backend_conv2d_bwd_filter(&g, &dw, NULL, &dy, &x, &D, &err), RT_OK);
    mock_stat_reset();
    ASSERT_EQ(rt_backend_conv2d_bwd_data(&g, &dx, &dy2, &w, &D, &err), RT_OK);
    ASSERT_EQ(mock_stat_to16(), (long)(ny + nw));
    ASSERT_EQ(rt_backend_download(&g, b, &dx, sizeof b, &err), RT_OK);
    ASSERT(memcmp(a, b, sizeof a) != 0);
    rt_tensor *all[] = {&x, &w, &dy, &dy2, &dx, &dw};
    for (int i = 0; i < 6; i++) g.ops->free(&g, all[i]->data);
}

int main(void)
{
    rt_error err = {0};
    gpu_open_or_skip(&g);
    if (rt_cuda_set_precision(&g, RT_PREC_BF16, &err) != RT_OK) {
        fprintf(stderr, "bf16: %s\n", err.msg);
        return 99;
    }
    T_RUN(dy_rounded_once);
    rt_backend_close(&g);
    return T_EXIT();
}
