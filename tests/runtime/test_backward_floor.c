/* test_backward_floor.c - a run with frozen layers (--freeze: lr multiplier 0) stops its
 * backward at the lowest layer that trains (rt_model_set_backward_floor, set by the
 * trainer): the layers below it spend no time in the backward, and every parameter ends
 * with the same bits as when the whole backward runs. Cases put the floor at the head,
 * on the first block's conv, inside a projection block (its shortcut above the floor),
 * and at 0 (nothing frozen). CPU backend, 2 threads. */
#include <stdlib.h>
#include <string.h>

#include "../quadrants.h"
#include "../t.h"

#define IMGS 48
#define BATCH 16

static const char *SPEC = "conv2d 4 3 pad=same\nbatchnorm\nrelu\n"
                          "residual:\n    conv2d 4 3 pad=same\n    batchnorm\n    relu\n"
                          "    conv2d 4 3 pad=same\n    batchnorm\nrelu\n"
                          "residual:\n    conv2d 6 3 stride=2 pad=same\n    batchnorm\n    relu\n"
                          "    conv2d 6 3 pad=same\n    batchnorm\n  shortcut:\n"
                          "    conv2d 6 1 stride=2\n    batchnorm\nrelu\n"
                          "globalavgpool\nflatten\ndense 4";

static rt_backend g_cpu;
static rt_dataset g_data;

typedef struct run {
    rt_model *m;
    rt_trainer *t;
    float *params;
    double bwd_below; /* CPU seconds of the backward in the layers below the floor */
    int floor;
} run;

/* Trains one epoch with the multipliers (NULL: none); force0 runs the whole backward. */
static rt_status train(run *r, const double *mult, int force0, rt_error *err)
{
    memset(r, 0, sizeof *r);
    rt_model_input in = {1, 8, 8, 4};
    RT_TRY(rt_model_create(&r->m, SPEC, &in, err));
    RT_TRY(rt_model_attach(r->m, &g_cpu, BATCH, 7, err));
    rt_trainer_config c = rt_trainer_config_default();
    c.epochs = 1;
    c.batch_size = BATCH;
    c.lr = 3e-3;
    c.param_lr_mult = mult;
    RT_TRY(rt_trainer_create(&r->t, r->m, &g_data, &c, err));
    r->floor = rt_model_backward_floor(r->m);
    if (force0) rt_model_set_backward_floor(r->m, 0);
    rt_model_timing_enable(r->m, 2);
    RT_TRY(rt_trainer_begin(r->t, err));
    rt_step_event ev = RT_STEP_CONTINUE;
    while (ev == RT_STEP_CONTINUE || ev == RT_STEP_EPOCH_END)
        RT_TRY(rt_trainer_step(r->t, &ev, err));
    for (int i = 0; i < r->floor; i++) {
        double f, b;
        rt_model_timing(r->m, i, &f, &b);
        r->bwd_below += b;
    }
    rt_tensor *p = rt_model_params_flat(r->m);
    r->params = malloc(rt_tensor_bytes(p));
    if (!r->params) return RT_ERR(err, RT_ENOMEM, "harness: out of memory");
    memcpy(r->params, p->data, rt_tensor_bytes(p));
    return RT_OK;
}

static void done(run *r)
{
    free(r->params);
    rt_trainer_destroy(r->t);
    rt_model_destroy(r->m);
}

/* The layer of the first trainable tensor whose name contains `part`, -1 if none; with
 * mult: multipliers of 0 for every trainable tensor before it, 1 from it on. */
static int first_layer(const char *part, double *mult)
{
    rt_model *m;
    rt_error err = {0};
    rt_model_input in = {1, 8, 8, 4};
    if (rt_model_create(&m, SPEC, &in, &err) != RT_OK) return -1;
    int layer = -1, np = 0;
    for (int i = 0; i < rt_model_num_tensors(m); i++) {
        rt_named_tensor nt;
        if (rt_model_tensor(m, i, &nt, &err) != RT_OK || !nt.trainable) continue;
        if (layer < 0 && strstr(nt.name, part)) layer = nt.layer;
        if (mult) mult[np] = layer < 0 ? 0.0 : 1.0;
        np++;
    }
    rt_model_destroy(m);
    return layer;
}

static void floor_case(int *t_failed_, const char *part)
{
    double mult[64];
    int expect = first_layer(part, mult);
    ASSERT(expect > 0);
    rt_error err = {0};
    run a, b;
    ASSERT_EQ(train(&a, mult, 0, &err), RT_OK);
    ASSERT_EQ(train(&b, mult, 1, &err), RT_OK);
    ASSERT_EQ(a.floor, expect);
    ASSERT_EQ(a.bwd_below, 0.0); /* the frozen layers below: no backward at all */
    ASSERT(b.bwd_below > 0.0);   /* ... which the whole backward spends */
    size_t bytes = rt_tensor_bytes(rt_model_params_flat(a.m));
    ASSERT_EQ(memcmp(a.params, b.params, bytes), 0); /* every parameter, bit for bit */
    done(&a);
    done(&b);
}

T_TEST(head_only_backward_is_the_head) { floor_case(t_failed_, "dense.weight"); }

T_TEST(stem_frozen_backward_stops_at_the_first_block) { floor_case(t_failed_, "3."); }

T_TEST(floor_inside_a_projection_block)
{
    /* the second block's first batchnorm trains, its stride-2 conv does not: the floor is
     * inside the block, below its shortcut projection */
    int conv = first_layer("conv2d.weight", NULL);
    ASSERT(conv == 0);
    char name[32];
    int target = -1;
    rt_model *m;
    rt_error err = {0};
    rt_model_input in = {1, 8, 8, 4};
    ASSERT_EQ(rt_model_create(&m, SPEC, &in, &err), RT_OK);
    int convs = 0;
    for (int i = 0; i < rt_model_num_tensors(m) && target < 0; i++) {
        rt_named_tensor nt;
        ASSERT_EQ(rt_model_tensor(m, i, &nt, &err), RT_OK);
        if (strstr(nt.name, "conv2d.weight") && ++convs == 4) target = nt.layer + 1;
    }
    rt_model_destroy(m);
    ASSERT(target > 0);
    snprintf(name, sizeof name, "%d.batchnorm.weight", target);
    floor_case(t_failed_, name);
}

T_TEST(nothing_frozen_runs_the_whole_backward)
{
    rt_error err = {0};
    run a;
    ASSERT_EQ(train(&a, NULL, 0, &err), RT_OK);
    ASSERT_EQ(a.floor, 0);
    done(&a);
}

int main(void)
{
    rt_error err = {0};
    if (rt_backend_open(&g_cpu, "cpu", 2, &err) != RT_OK) {
        fprintf(stderr, "cpu backend: %s\n", err.msg);
        return 99;
    }
    quadrants_make(&g_data, IMGS, 5, 0.5f, "gen/train");
    T_RUN(head_only_backward_is_the_head);
    T_RUN(stem_frozen_backward_stops_at_the_first_block);
    T_RUN(floor_inside_a_projection_block);
    T_RUN(nothing_frozen_runs_the_whole_backward);
    quadrants_free(&g_data);
    rt_backend_close(&g_cpu);
    return T_EXIT();
}
