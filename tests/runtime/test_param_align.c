/* test_param_align.c - every parameter, gradient and optimiser-state tensor starts at a
 * multiple of RT_OPTIM_ALIGN floats (256 bytes), since the CUDA backend hands these
 * pointers straight to cuDNN and cuBLAS; the gaps between tensors are zeros and stay
 * zeros through training (AdamW with weight decay, SGD with momentum), on the trainer's
 * host path and on its device path (run on the CPU backend here).
 */
#include <stdint.h>
#include <stdlib.h>

#include "../quadrants.h"
#include "../t.h"
#include "rt.h"

/* sizes 45, 5, 5, 5, 320, 4: none but one a multiple of 64 */
static const char *SPEC = "conv2d 5 3 pad=1\nbatchnorm\nrelu\nmaxpool 2\nflatten\ndense 4\n";

static int aligned(const void *p) { return (uintptr_t)p % (RT_OPTIM_ALIGN * 4) == 0; }

/* 1 where flat index k belongs to no parameter */
static char *gap_map(rt_model *m, size_t F)
{
    char *gap = malloc(F);
    memset(gap, 1, F);
    size_t off = 0;
    rt_error err = {0};
    for (int i = 0; i < rt_model_num_tensors(m); i++) {
        rt_named_tensor t;
        if (rt_model_tensor(m, i, &t, &err) != RT_OK || !t.trainable) continue;
        memset(gap + off, 0, t.numel);
        off += rt_optim_align(t.numel);
    }
    return gap;
}

static void check(int device_path, rt_optim_kind kind, int *t_failed_)
{
    rt_error err = {0};
    rt_backend b;
    rt_dataset d;
    quadrants_make(&d, 64, 3, 0.5f, "gen/train");
    rt_model_input in = {1, 8, 8, 4};
    rt_model *m = NULL;
    ASSERT_EQ(rt_backend_open(&b, "cpu", 1, &err), RT_OK);
    ASSERT_EQ(rt_model_create(&m, SPEC, &in, &err), RT_OK);
    ASSERT_EQ(rt_model_attach(m, &b, 16, 11, &err), RT_OK);
    rt_tensor *pf = rt_model_params_flat(m), *gf = rt_model_grads_flat(m);
    size_t F = rt_tensor_numel(pf);
    ASSERT_EQ(rt_model_num_params(m), 45 + 5 + 5 + 5 + 320 + 4);
    ASSERT_EQ(F, 64 + 64 + 64 + 64 + 320 + 64);
    ASSERT_EQ(rt_tensor_numel(gf), F);
    ASSERT(aligned(pf->data) && aligned(gf->data));
    int trainable = 0;
    for (int i = 0; i < rt_model_num_tensors(m); i++) {
        rt_named_tensor t;
        ASSERT_EQ(rt_model_tensor(m, i, &t, &err), RT_OK);
        if (!t.trainable) continue;
        trainable++;
        if (!aligned(t.host)) fprintf(stderr, "  %s is not 256-byte aligned\n", t.name);
        ASSERT(aligned(t.host));
        /* its gradient sits at the same offset of the gradient vector */
        ASSERT(aligned((char *)gf->data + ((char *)t.host - (char *)pf->data)));
    }
    ASSERT_EQ(trainable, 6);

    rt_trainer_config cfg = rt_trainer_config_default();
    cfg.epochs = 2;
    cfg.batch_size = 16;
    cfg.device_path = device_path;
    cfg.optim = rt_optim_config_default(kind);
    cfg.optim.weight_decay = 0.1;
    cfg.optim.momentum = kind == RT_OPTIM_SGD ? 0.9 : 0.0;
    cfg.lr = 0.05;
    rt_trainer *t = NULL;
    ASSERT_EQ(rt_trainer_create(&t, m, &d, &cfg, &err), RT_OK);
    ASSERT_EQ(rt_trainer_begin(t, &err), RT_OK);
    rt_step_event ev = RT_STEP_CONTINUE;
    while (ev == RT_STEP_CONTINUE || ev == RT_STEP_EPOCH_END)
        ASSERT_EQ(rt_trainer_step(t, &ev, &err), RT_OK);
    ASSERT_EQ(rt_trainer_end(t, NULL, &err), RT_OK);

    rt_optim *o = rt_trainer_optim(t);
    for (size_t k = 0; k < rt_optim_state_count(o); k++) {
        char name[RT_OPTIM_NAME_MAX];
        size_t n;
        ASSERT(aligned(rt_optim_state_get(o, k, name, &n)));
    }
    char *gap = gap_map(m, F);
    const float *p = pf->data, *g = gf->data;
    long nz_gap = 0, moved = 0;
    for (size_t s = 0; s < rt_optim_num_slots(o); s++) {
        size_t n = 0;
        const float *st = rt_optim_state_slot(o, s, &n);
        ASSERT_EQ(n, F);
        for (size_t k = 0; k < F; k++) nz_gap += gap[k] && st[k] != 0.0f;
    }
    for (size_t k = 0; k < F; k++) {
        nz_gap += gap[k] && (p[k] != 0.0f || g[k] != 0.0f);
        moved += !gap[k] && g[k] != 0.0f;
    }
    free(gap);
    ASSERT_EQ(nz_gap, 0);
    ASSERT(moved > 100); /* it did train */
    rt_trainer_destroy(t);
    rt_model_destroy(m);
    rt_backend_close(&b);
    quadrants_free(&d);
}

T_TEST(host_path_adamw) { check(0, RT_OPTIM_ADAMW, t_failed_); }
T_TEST(device_path_adamw) { check(1, RT_OPTIM_ADAMW, t_failed_); }
T_TEST(device_path_sgd_momentum) { check(1, RT_OPTIM_SGD, t_failed_); }

int main(void)
{
    T_RUN(host_path_adamw);
    T_RUN(device_path_adamw);
    T_RUN(device_path_sgd_momentum);
    return T_EXIT();
}
