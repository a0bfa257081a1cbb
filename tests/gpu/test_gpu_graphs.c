/* test_gpu_graphs.c - the trainer's device step recorded as a CUDA graph and replayed
 * (runtime/cuda/cuda_graph.c) gives the same bits as the step run op by op.
 *
 * Each case trains 3 epochs of 60 images at batch 8 (the 8th step of an epoch is a
 * partial batch of 4: a second shape, so a second graph) twice from one seed, graphs
 * off and on, and compares every step's loss and the final parameters with memcmp.
 * Every step variable moves: augmentation (crop, flip, cutout: the epoch's streams and
 * the batch's start), dropout (the step's stream), the statistics ring row, a cosine
 * schedule's lr and Adam's bias correction (or SGD's first step), and, under fp16, the
 * loss scale on the device. Cases: Adam fp32; SGD with momentum, clipping and
 * accumulation (two parts a step); bf16; fp16 with loss scaling.
 * - a resume: a run stopped after 10 steps and continued by a new trainer (weights,
 *   optimiser state and trainer state restored, graphs recorded again) ends with the
 *   uninterrupted run's parameters;
 * - the fallback: with every capture failing (the mock's capture-fails, as a cuDNN
 *   algorithm that cannot be captured would on a GPU), the run says so on stderr,
 *   replays nothing and still gives the same bits.
 * The mock device counts graph launches and captures (weak symbols); on a GPU the
 * comparisons run and the counts are reported as not measured.
 */
#include <math.h>
#include <stdlib.h>

#include "../quadrants.h"
#include "../t.h"
#include "gpu_util.h"

long mock_stat_graph_launches(void) __attribute__((weak));
long mock_stat_captures(void) __attribute__((weak));
void mock_stat_reset(void) __attribute__((weak));

#define IMGS 60
#define BATCH 8
#define EPOCHS 3
#define MAX_STEPS 64

static const char *SPEC = "conv2d 4 3 pad=1\nbatchnorm\nrelu\nmaxpool 2\ndropout 0.2\n"
                          "flatten\ndense 4\n";

typedef struct variant {
    const char *name;
    rt_precision prec;
    int sgd, accumulate, loss_scaling;
    double clip;
} variant;

typedef struct run {
    rt_model *m;
    rt_trainer *t;
    double loss[MAX_STEPS];
    int64_t steps;
} run;

static rt_backend g_gpu;
static rt_dataset g_data;

static void on_progress(const rt_progress *p, void *user)
{
    run *r = user;
    if (p->step >= 1 && p->step <= MAX_STEPS) r->loss[p->step - 1] = p->loss;
    r->steps = p->step;
}

static rt_status start(run *r, rt_backend *b, const variant *v, int no_graphs, rt_error *err)
{
    memset(r, 0, sizeof *r);
    rt_model_input in = {1, 8, 8, 4};
    RT_TRY(rt_model_create(&r->m, SPEC, &in, err));
    RT_TRY(rt_model_attach(r->m, b, BATCH, 42, err));
    rt_trainer_config c = rt_trainer_config_default();
    c.epochs = EPOCHS;
    c.batch_size = BATCH;
    c.lr = 3e-3;
    if (v->sgd) {
        c.optim = rt_optim_config_default(RT_OPTIM_SGD);
        c.optim.momentum = 0.9;
        c.lr = 0.05;
    }
    c.schedule = rt_schedule_default(RT_SCHED_COSINE);
    c.schedule.per_step = 1; /* a new lr every step */
    c.augment = 1;
    c.cutout = 3;
    c.accumulate = v->accumulate;
    c.clip_norm = v->clip;
    c.loss_scaling = v->loss_scaling;
    c.no_graphs = no_graphs;
    c.report_every_s = 1e9; /* the ring is read at epoch ends: rows move */
    c.progress = on_progress;
    c.user = r;
    RT_TRY(rt_trainer_create(&r->t, r->m, &g_data, &c, err));
    return rt_trainer_begin(r->t, err);
}

static void finish(run *r)
{
    rt_trainer_destroy(r->t);
    rt_model_destroy(r->m);
}

/* Steps until the run is done, or `limit` steps (then flushed). */
static rt_status steps(run *r, int limit, rt_error *err)
{
    rt_step_event ev = RT_STEP_CONTINUE;
    for (int i = 0; (limit < 0 || i < limit) && (ev == RT_STEP_CONTINUE || ev == RT_STEP_EPOCH_END);
         i++)
        RT_TRY(rt_trainer_step(r->t, &ev, err));
    return rt_trainer_flush(r->t, err);
}

static float *params_of(rt_model *m, size_t *n)
{
    *n = rt_tensor_numel(rt_model_params_flat(m));
    float *h = malloc(*n * 4);
    rt_error err = {0};
    if (!h || rt_backend_download(rt_model_backend(m), h, rt_model_params_flat(m), *n * 4, &err) !=
                  RT_OK) {
        fprintf(stderr, "harness: download failed: %s\n", err.msg);
        exit(99);
    }
    return h;
}

static size_t differ(const float *a, const float *b, size_t n)
{
    size_t d = 0;
    for (size_t i = 0; i < n; i++) d += memcmp(&a[i], &b[i], 4) != 0;
    return d;
}

static rt_backend *backend_for(const variant *v, rt_backend *own)
{
    rt_error err = {0};
    if (v->prec == RT_PREC_FP32) return &g_gpu;
    gpu_open_or_skip(own);
    if (rt_cuda_set_precision(own, v->prec, &err) != RT_OK) {
        printf("  (%s not available: %s)\n", v->name, err.msg);
        rt_backend_close(own);
        return NULL;
    }
    return own;
}

static const variant VARIANTS[] = {
    {"adam fp32", RT_PREC_FP32, 0, 1, 0, 0.0},
    {"sgd momentum, clip-grad 0.5, accumulate 2", RT_PREC_FP32, 1, 2, 0, 0.5},
    {"adam bf16", RT_PREC_BF16, 0, 1, 0, 0.0},
    {"adam fp16, loss scaling", RT_PREC_FP16, 0, 1, 1, 0.0},
};

T_TEST(replay_equals_op_by_op)
{
    for (size_t k = 0; k < sizeof VARIANTS / sizeof VARIANTS[0]; k++) {
        const variant *v = &VARIANTS[k];
        rt_backend own;
        rt_backend *b = backend_for(v, &own);
        if (!b) continue;
        rt_error err = {0};
        run off, on;
        long launches[2] = {0, 0}, captures[2] = {0, 0};
        float *init = NULL;
        size_t ni;
        for (int graphs = 0; graphs < 2; graphs++) {
            run *r = graphs ? &on : &off;
            if (mock_stat_reset) mock_stat_reset();
            ASSERT_EQ(start(r, b, v, !graphs, &err), RT_OK);
            if (!graphs) init = params_of(r->m, &ni);
            ASSERT_EQ(steps(r, -1, &err), RT_OK);
            if (mock_stat_reset)
                launches[graphs] = mock_stat_graph_launches(),
                captures[graphs] = mock_stat_captures();
        }
        size_t n, n2;
        float *pa = params_of(off.m, &n), *pb = params_of(on.m, &n2);
        int64_t S = off.steps;
        printf("  %s: %lld steps; with graphs %ld launched, %ld recorded; %zu of %zu parameters "
               "differ\n",
               v->name, (long long)S, launches[1], captures[1], differ(pa, pb, n), n);
        ASSERT(S > 8 && S <= MAX_STEPS);
        ASSERT_EQ(on.steps, S);
        ASSERT_EQ(n, n2);
        ASSERT_EQ(differ(pa, pb, n), 0);
        ASSERT(memcmp(off.loss, on.loss, (size_t)S * sizeof(double)) == 0);
        for (int64_t i = 0; i < S; i++) ASSERT(isfinite(off.loss[i]));
        ASSERT(differ(pa, init, n) > n / 2); /* it trained */
        if (mock_stat_reset) {
            /* two shapes (the full batch, the partial one): one eager step and one
             * recording each, every other step a replay */
            ASSERT_EQ(launches[0], 0);
            ASSERT_EQ(captures[1], 2);
            ASSERT_EQ(launches[1], S - 2);
        } else {
            printf("  (graph launches are counted on the mock device only)\n");
        }
        free(pa), free(pb), free(init);
        finish(&off), finish(&on);
        if (b == &own) rt_backend_close(&own);
    }
}

typedef struct capture {
    float *tensors[64];
    int ntensors;
    float *optim[64];
    char optim_name[64][RT_OPTIM_NAME_MAX];
    size_t optim_n[64], noptim;
    int64_t optim_step;
    rt_trainer_state st;
} capture;

static rt_status save(run *r, capture *c, rt_error *err)
{
    memset(c, 0, sizeof *c);
    c->ntensors = rt_model_num_tensors(r->m);
    for (int i = 0; i < c->ntensors && i < 64; i++) {
        rt_named_tensor t;
        RT_TRY(rt_model_tensor(r->m, i, &t, err));
        c->tensors[i] = malloc(t.numel * 4);
        RT_TRY(rt_model_tensor_read(r->m, i, c->tensors[i], err));
    }
    RT_TRY(rt_trainer_flush(r->t, err));
    rt_optim *o = rt_trainer_optim(r->t);
    c->noptim = rt_optim_state_count(o);
    for (size_t i = 0; i < c->noptim && i < 64; i++) {
        const float *p = rt_optim_state_get(o, i, c->optim_name[i], &c->optim_n[i]);
        c->optim[i] = malloc(c->optim_n[i] * 4);
        memcpy(c->optim[i], p, c->optim_n[i] * 4);
    }
    c->optim_step = rt_optim_step_count(o);
    c->st = rt_trainer_get_state(r->t);
    return RT_OK;
}

static rt_status restore(run *r, const capture *c, rt_error *err)
{
    for (int i = 0; i < c->ntensors; i++)
        RT_TRY(rt_model_tensor_write(r->m, i, c->tensors[i], err));
    rt_optim *o = rt_trainer_optim(r->t);
    for (size_t i = 0; i < c->noptim; i++)
        RT_TRY(rt_optim_state_set(o, c->optim_name[i], c->optim[i], c->optim_n[i], err));
    RT_TRY(rt_optim_set_step_count(o, c->optim_step, err));
    return rt_trainer_set_state(r->t, &c->st, err);
}

T_TEST(resume_with_graphs_is_exact)
{
    const variant *v = &VARIANTS[0];
    rt_error err = {0};
    run whole, part;
    ASSERT_EQ(start(&whole, &g_gpu, v, 0, &err), RT_OK);
    ASSERT_EQ(steps(&whole, -1, &err), RT_OK);
    ASSERT_EQ(start(&part, &g_gpu, v, 0, &err), RT_OK);
    ASSERT_EQ(steps(&part, 10, &err), RT_OK); /* mid-epoch 2, graphs recorded and replayed */
    capture c;
    ASSERT_EQ(save(&part, &c, &err), RT_OK);
    finish(&part);
    ASSERT_EQ(start(&part, &g_gpu, v, 0, &err), RT_OK);
    if (restore(&part, &c, &err) != RT_OK) printf("  restore: %s\n", err.msg);
    ASSERT_EQ(err.code, RT_OK);
    if (mock_stat_reset) mock_stat_reset();
    ASSERT_EQ(steps(&part, -1, &err), RT_OK);
    if (mock_stat_reset) ASSERT(mock_stat_graph_launches() > 0); /* recorded anew */
    size_t n, n2;
    float *pa = params_of(whole.m, &n), *pb = params_of(part.m, &n2);
    printf("  resumed after 10 steps: %zu of %zu parameters differ\n", differ(pa, pb, n), n);
    ASSERT_EQ(n, n2);
    ASSERT_EQ(differ(pa, pb, n), 0);
    ASSERT_EQ(part.steps, whole.steps);
    ASSERT(memcmp(part.loss + 10, whole.loss + 10, (size_t)(whole.steps - 10) * sizeof(double)) ==
           0);
    for (int i = 0; i < c.ntensors; i++) free(c.tensors[i]);
    for (size_t i = 0; i < c.noptim; i++) free(c.optim[i]);
    free(pa), free(pb);
    finish(&whole), finish(&part);
}

T_TEST(failed_capture_falls_back)
{
    if (!mock_stat_reset) {
        printf("  (a failing capture is modelled by the mock device only)\n");
        return;
    }
    const variant *v = &VARIANTS[0];
    rt_error err = {0};
    run off, on;
    ASSERT_EQ(start(&off, &g_gpu, v, 1, &err), RT_OK);
    ASSERT_EQ(steps(&off, -1, &err), RT_OK);
    setenv("KILN_MOCK_DEVICE", "capture-fails", 1);
    mock_stat_reset();
    ASSERT_EQ(start(&on, &g_gpu, v, 0, &err), RT_OK);
    ASSERT_EQ(steps(&on, -1, &err), RT_OK);
    unsetenv("KILN_MOCK_DEVICE");
    ASSERT_EQ(mock_stat_graph_launches(), 0);
    ASSERT_EQ(mock_stat_captures(), 0);
    size_t n, n2;
    float *pa = params_of(off.m, &n), *pb = params_of(on.m, &n2);
    ASSERT_EQ(differ(pa, pb, n), 0);
    ASSERT(memcmp(off.loss, on.loss, (size_t)off.steps * sizeof(double)) == 0);
    free(pa), free(pb);
    finish(&off), finish(&on);
}

/* KILN_CUDA_GRAPHS=0 turns graphs off as no_graphs does. */
T_TEST(env_turns_graphs_off)
{
    if (!mock_stat_reset) return;
    rt_error err = {0};
    run r;
    setenv("KILN_CUDA_GRAPHS", "0", 1);
    mock_stat_reset();
    ASSERT_EQ(start(&r, &g_gpu, &VARIANTS[0], 0, &err), RT_OK);
    ASSERT_EQ(steps(&r, 12, &err), RT_OK);
    unsetenv("KILN_CUDA_GRAPHS");
    ASSERT_EQ(mock_stat_captures(), 0);
    ASSERT_EQ(mock_stat_graph_launches(), 0);
    finish(&r);
}

int main(void)
{
    gpu_open_or_skip(&g_gpu);
    quadrants_make(&g_data, IMGS, 5, 0.5f, "gen/train");
    T_RUN(replay_equals_op_by_op);
    T_RUN(resume_with_graphs_is_exact);
    T_RUN(failed_capture_falls_back);
    T_RUN(env_turns_graphs_off);
    rt_backend_close(&g_gpu);
    free(g_data.images);
    free(g_data.labels);
    return T_EXIT();
}
