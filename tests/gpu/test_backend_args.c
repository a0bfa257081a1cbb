/* test_backend_args.c - both backends refuse the same bad op arguments with the same
 * words. Each case is called through rt_backend_OP on the CPU and on CUDA (the mock
 * device in the gpu-mock suite) and must give RT_EINVAL with the expected message on
 * both, and leave every tensor as it was (a refused op writes nothing; the CPU's
 * dense_bwd_filter once wrote dw before it looked at dbias).
 * Without a CUDA device the CPU half runs, then the test says SKIP (exit 77).
 */
#include "gpu_util.h"
#include "t.h"

#define BIG 64 /* floats in each bound tensor */
#define NT 4

typedef struct side {
    rt_backend b;
    rt_tensor t[NT];   /* bound, BIG floats each, shape (BIG,1,1,1) */
    rt_tensor small;   /* bound, 3 floats */
    rt_tensor unbound; /* shape (BIG,1,1,1), no memory */
} side;

typedef struct bad_call {
    const char *name;
    rt_status (*call)(side *s, rt_error *err);
    const char *msg; /* the whole message both backends give */
} bad_call;

static rt_tensor vec(void *data, int n) { return (rt_tensor){data, RT_F32, n, 1, 1, 1}; }

static rt_status conv_short_weight(side *s, rt_error *err)
{
    rt_conv_desc d = {1, 1, 4, 4, 1, 3, 3, 1, 0, 2, 2, 0};
    return rt_backend_conv2d_fwd(&s->b, &s->t[0], &s->t[1], &s->small, NULL, &d, err);
}

static rt_status conv_bad_desc(side *s, rt_error *err)
{
    rt_conv_desc d = {1, 1, 4, 4, 1, 3, 3, 1, 0, 3, 2, 0};
    return rt_backend_conv2d_fwd(&s->b, &s->t[0], &s->t[1], &s->t[2], NULL, &d, err);
}

static rt_status conv_short_dbias(side *s, rt_error *err)
{
    rt_conv_desc d = {1, 1, 4, 4, 4, 3, 3, 1, 0, 2, 2, 0};
    return rt_backend_conv2d_bwd_filter(&s->b, &s->t[0], &s->small, &s->t[1], &s->t[2], &d, err);
}

static rt_status dense_short_dbias(side *s, rt_error *err)
{
    rt_dense_desc d = {2, 4, 4};
    return rt_backend_dense_bwd_filter(&s->b, &s->t[0], &s->small, &s->t[1], &s->t[2], &d, err);
}

static rt_status dense_unbound_input(side *s, rt_error *err)
{
    rt_dense_desc d = {2, 4, 4};
    return rt_backend_dense_fwd(&s->b, &s->t[0], &s->unbound, &s->t[1], NULL, &d, err);
}

static rt_status pool_short_output(side *s, rt_error *err)
{
    rt_pool_desc d = {1, 1, 4, 4, 2, 2, 2, 2, 2, 0, 0};
    return rt_backend_maxpool_fwd(&s->b, &s->small, &s->t[0], &d, err);
}

static rt_status pool_bad_pad(side *s, rt_error *err)
{
    rt_pool_desc d = {1, 1, 4, 4, 2, 2, 2, 3, 3, 2, 0}; /* pad 2 > a 2x2 window's half */
    return rt_backend_maxpool_fwd(&s->b, &s->small, &s->t[0], &d, err);
}

static rt_status conv_groups_indivisible(side *s, rt_error *err)
{
    rt_conv_desc d = {1, 4, 2, 2, 6, 3, 3, 1, 1, 2, 2, 4}; /* 4 groups of 6 outputs */
    return rt_backend_conv2d_fwd(&s->b, &s->t[0], &s->t[1], &s->t[2], NULL, &d, err);
}

static rt_status conv_grouped_short_weight(side *s, rt_error *err)
{
    rt_conv_desc d = {1, 4, 2, 2, 4, 2, 2, 1, 0, 1, 1, 2}; /* weight (4, 2, 2, 2) */
    return rt_backend_conv2d_bwd_filter(&s->b, &s->small, NULL, &s->t[0], &s->t[1], &d, err);
}

static rt_status act_unknown_kind(side *s, rt_error *err)
{
    return rt_backend_act_fwd(&s->b, &s->t[0], &s->t[1], RT_ACT_COUNT, err);
}

static rt_status act_short_input(side *s, rt_error *err)
{
    return rt_backend_act_bwd(&s->b, &s->t[0], &s->t[1], &s->small, &s->t[2], RT_ACT_GELU, err);
}

static rt_status relu_unbound_din(side *s, rt_error *err)
{
    return rt_backend_relu_bwd(&s->b, &s->unbound, &s->t[0], &s->t[1], 0.0f, err);
}

static rt_status bn_short_gamma(side *s, rt_error *err)
{
    rt_bn_desc d = {1, 4, 2, 2, 1e-5f, 0.1f, 0};
    rt_tensor *t = s->t;
    return rt_backend_bn_fwd_train(&s->b, &t[0], &t[1], &t[2], &t[3], &t[3], &t[1], &s->small,
                                   &t[2], &d, err);
}

static rt_status bn_relu_short_beta(side *s, rt_error *err)
{
    rt_bn_desc d = {1, 4, 2, 2, 1e-5f, 0.1f, 1};
    rt_tensor *t = s->t;
    return rt_backend_bn_relu_bwd(&s->b, &t[0], &t[1], &t[2], &t[3], &t[0], &t[1], &s->small, &t[2],
                                  &t[3], &d, err);
}

static rt_status add_relu_short_input(side *s, rt_error *err)
{
    return rt_backend_add_relu(&s->b, &s->t[0], &s->t[1], &s->small, err);
}

static rt_status dropout_p_one(side *s, rt_error *err)
{
    rt_dropout_desc d = {.N = 1, .C = 1, .H = 4, .W = 4, .p = 1.0f, .seed = 1};
    return rt_backend_dropout_fwd(&s->b, &s->t[0], &s->t[1], &s->t[2], &d, err);
}

static rt_status xent_no_classes(side *s, rt_error *err)
{
    rt_xent_desc d = {2, 0, 0.0f};
    return rt_backend_xent_fwd(&s->b, &s->t[0], &s->t[1], &s->t[2], &s->t[3], &d, err);
}

static rt_status xent_short_labels(side *s, rt_error *err)
{
    rt_xent_desc d = {4, 2, 0.0f};
    return rt_backend_xent_bwd(&s->b, &s->t[0], &s->t[1], &s->small, 0.25f, &d, err);
}

static rt_status adam_step_zero(side *s, rt_error *err)
{
    rt_adam_desc d = {.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .step = 0};
    return rt_backend_adam_update(&s->b, &s->t[0], &s->t[1], &s->t[2], &s->t[3], &d, err);
}

static rt_status sgd_unbound_momentum(side *s, rt_error *err)
{
    rt_sgd_desc d = {.lr = 0.1, .momentum = 0.9, .step = 1};
    return rt_backend_sgd_update(&s->b, &s->t[0], &s->unbound, &s->t[1], &d, err);
}

static rt_status copy_into_short(side *s, rt_error *err)
{
    return rt_backend_copy(&s->b, &s->small, &s->t[0], err);
}

static rt_status add_short_input(side *s, rt_error *err)
{
    return rt_backend_add(&s->b, &s->t[0], &s->t[1], &s->small, err);
}

static rt_status upload_too_much(side *s, rt_error *err)
{
    static const float host[BIG * 2];
    return rt_backend_upload(&s->b, &s->t[0], host, sizeof host, err);
}

static rt_status gather_past_end(side *s, rt_error *err)
{
    rt_gather_desc d = {.n = 4, .C = 1, .H = 2, .W = 2, .start = 2, .count = 3};
    return rt_backend_gather_batch(&s->b, &s->t[0], &s->t[1], &s->t[2], &s->t[3], &s->t[3], &d,
                                   err);
}

static rt_status stats_bad_row(side *s, rt_error *err)
{
    rt_xent_desc d = {2, 2, 0.0f};
    return rt_backend_xent_stats(&s->b, &s->t[0], -1, &s->t[1], &s->t[2], &s->t[3], &d, err);
}

static rt_status amp_short_state(side *s, rt_error *err)
{
    return rt_backend_amp_scale(&s->b, &s->t[0], &s->small, err);
}

static rt_status amp_adam_unbound_m(side *s, rt_error *err)
{
    rt_adam_desc d = {.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .step = 1};
    return rt_backend_amp_adam_update(&s->b, &s->t[0], &s->unbound, &s->t[1], &s->t[2], &s->t[3],
                                      &d, err);
}

static rt_status xent_smoothing_one(side *s, rt_error *err)
{
    rt_xent_desc d = {2, 2, 1.0f};
    return rt_backend_xent_fwd(&s->b, &s->t[0], &s->t[1], &s->t[2], &s->t[3], &d, err);
}

static rt_status clip_short_norm(side *s, rt_error *err)
{
    rt_clip_desc d = {.max_norm = 1.0};
    return rt_backend_clip_grad(&s->b, &s->t[0], &s->small, &d, err);
}

static rt_status clip_negative(side *s, rt_error *err)
{
    rt_clip_desc d = {.max_norm = 1.0, .clip_value = -2.0};
    return rt_backend_clip_grad(&s->b, &s->t[0], &s->t[1], &d, err);
}

static const bad_call calls[] = {
    {"conv2d short weight", conv_short_weight, "conv2d weight: tensor has 3 elements, op needs 9"},
    {"conv2d descriptor", conv_bad_desc, "conv2d: inconsistent descriptor (P=3, Q=2)"},
    {"conv2d short dbias", conv_short_dbias,
     "conv2d bias gradient: tensor has 3 elements, op needs 4"},
    {"dense short dbias", dense_short_dbias,
     "dense bias gradient: tensor has 3 elements, op needs 4"},
    {"dense unbound input", dense_unbound_input, "dense input: unbound tensor"},
    {"pool short output", pool_short_output, "pool output: tensor has 3 elements, op needs 4"},
    {"pool padding", pool_bad_pad, "pool: window 2x2 stride 2 pad 2 on 4x4 gives no 3x3"},
    {"relu unbound din", relu_unbound_din, "relu input gradient: unbound tensor"},
    {"conv2d groups", conv_groups_indivisible, "conv2d: 4 groups do not divide C=4 and K=6"},
    {"conv2d grouped short weight", conv_grouped_short_weight,
     "conv2d weight: tensor has 3 elements, op needs 32"},
    {"activation kind", act_unknown_kind, "activation: unknown kind 5"},
    {"activation short input", act_short_input,
     "activation input: tensor has 3 elements, op needs 64"},
    {"batchnorm short gamma", bn_short_gamma,
     "batchnorm weight: tensor has 3 elements, op needs 4"},
    {"batchnorm + relu short beta", bn_relu_short_beta,
     "batchnorm bias: tensor has 3 elements, op needs 4"},
    {"add_relu short input", add_relu_short_input,
     "add_relu input: tensor has 3 elements, op needs 64"},
    {"dropout p=1", dropout_p_one, "dropout p=1 must be in [0, 1)"},
    {"xent no classes", xent_no_classes, "xent: 2 samples, 0 classes"},
    {"xent short labels", xent_short_labels, "xent labels: tensor has 3 elements, op needs 4"},
    {"xent smoothing 1", xent_smoothing_one, "xent: label smoothing 1 outside [0, 1)"},
    {"clip short norm", clip_short_norm, "clip_grad norm: tensor has 3 elements, op needs 516"},
    {"clip negative value", clip_negative, "clip_grad: max norm 1 and clip value -2 must be >= 0"},
    {"adam step 0", adam_step_zero, "adam step must be >= 1"},
    {"sgd unbound momentum", sgd_unbound_momentum, "sgd momentum buffer: unbound tensor"},
    {"copy into short", copy_into_short, "copy: tensor has 3 elements, op needs 64"},
    {"add short input", add_short_input, "add input: tensor has 3 elements, op needs 64"},
    {"upload too much", upload_too_much, "upload of 512 bytes into a 256-byte tensor"},
    {"gather past end", gather_past_end,
     "gather_batch: positions [2, 5) outside a data set of 4 images of 1x2x2"},
    {"xent_stats row -1", stats_bad_row, "xent_stats: row -1, 2 samples, 2 classes"},
    {"amp short state", amp_short_state, "loss-scaling state: tensor has 3 elements, op needs 16"},
    {"amp adam unbound m", amp_adam_unbound_m, "adam m: unbound tensor"},
};
#define NCALLS ((int)(sizeof calls / sizeof calls[0]))

static float pattern(int t, int i) { return (float)(t * 1000 + i) + 0.5f; }

static void side_open(side *s, const char *device)
{
    rt_error err = {0};
    if (rt_backend_open(&s->b, device, 1, &err) != RT_OK) {
        fprintf(stderr, "harness: cannot open %s: %s\n", device, err.msg);
        exit(99);
    }
    for (int k = 0; k <= NT; k++) {
        int n = k < NT ? BIG : 3;
        rt_tensor *t = k < NT ? &s->t[k] : &s->small;
        void *p = NULL;
        float host[BIG];
        for (int i = 0; i < n; i++) host[i] = pattern(k, i);
        if (s->b.ops->alloc(&s->b, &p, (size_t)n * 4, &err) != RT_OK ||
            (*t = vec(p, n), rt_backend_upload(&s->b, t, host, (size_t)n * 4, &err)) != RT_OK) {
            fprintf(stderr, "harness: %s: %s\n", device, err.msg);
            exit(99);
        }
    }
    s->unbound = vec(NULL, BIG);
}

static void side_close(side *s)
{
    for (int k = 0; k < NT; k++) s->b.ops->free(&s->b, s->t[k].data);
    s->b.ops->free(&s->b, s->small.data);
    rt_backend_close(&s->b);
}

/* 1 when every bound tensor still holds its pattern. */
static int untouched(side *s)
{
    rt_error err = {0};
    for (int k = 0; k <= NT; k++) {
        int n = k < NT ? BIG : 3;
        float host[BIG];
        if (rt_backend_download(&s->b, host, k < NT ? &s->t[k] : &s->small, (size_t)n * 4, &err) !=
            RT_OK)
            return 0;
        for (int i = 0; i < n; i++)
            if (host[i] != pattern(k, i)) return 0;
    }
    return 1;
}

static void check_side(int *t_failed_, side *s)
{
    for (int c = 0; c < NCALLS; c++) {
        rt_error err = {0};
        rt_status st = calls[c].call(s, &err);
        if (st != RT_EINVAL || strcmp(err.msg, calls[c].msg))
            fprintf(stderr, "  %s on %s: status %d, \"%s\"\n", calls[c].name, s->b.ops->name,
                    (int)st, err.msg);
        ASSERT_EQ(st, RT_EINVAL);
        ASSERT_STR_EQ(err.msg, calls[c].msg);
        ASSERT(untouched(s));
    }
    /* the same tensors are good enough for a call that is not refused */
    rt_error err = {0};
    ASSERT_EQ(rt_backend_copy(&s->b, &s->t[3], &s->t[3], &err), RT_OK);
}

static side cpu, gpu;

T_TEST(cpu_refuses) { check_side(t_failed_, &cpu); }

T_TEST(cuda_refuses_the_same) { check_side(t_failed_, &gpu); }

int main(void)
{
    side_open(&cpu, "cpu");
    T_RUN(cpu_refuses);
    side_close(&cpu);
    rt_cuda_device_list list;
    if (rt_cuda_list_devices(&list, NULL) != RT_OK || list.count == 0) {
        if (T_EXIT()) return 1;
        printf("SKIP: no CUDA device (%s); the CPU refused all %d calls\n", list.why, NCALLS);
        return 77;
    }
    side_open(&gpu, "cuda");
    T_RUN(cuda_refuses_the_same);
    side_close(&gpu);
    return T_EXIT();
}
