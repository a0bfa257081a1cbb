/* test_optim_resume.c - resume determinism of the OPTIM pieces together,
 * without the model code: softmax regression on a synthetic
 * CIFAR-shaped set, trained with rt_batcher (shuffle + crop/flip), input dropout from
 * the Philox dropout stream, a schedule and each optimiser. A run interrupted after k
 * steps saves only plain data (parameters, named optimiser arrays, step count, batcher
 * {epoch, position}, the schedule's canonical text), everything is destroyed and
 * rebuilt from that, and the remaining steps must give bitwise the same losses, data
 * order and parameters as the uninterrupted run. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rt_batcher.h"
#include "rt_optim.h"
#include "rt_rng.h"
#include "rt_schedule.h"
#include "t.h"

enum { N = 90, C = 3, H = 8, W = 8, F = C * H * W, L = C, B = 16, STEPS = 30 };
static const uint64_t SEED = 20261130;

static float g_images[N * F];
static uint8_t g_labels[N];

static void make_data(void)
{
    rt_rng r = rt_rng_stream(SEED, RT_RNG_USER, 1, 0);
    rt_rng_fill_normal(&r, g_images, N * F, 0.0f, 1.0f);
    for (int i = 0; i < N; i++) {       /* learnable, and robust to crops and flips: */
        g_labels[i] = (uint8_t)(i % L); /* the label's channel is brighter */
        for (int k = 0; k < H * W; k++) g_images[i * F + (i % L) * H * W + k] += 1.0f;
    }
}

/* Everything a checkpoint holds, as plain data. */
typedef struct {
    float w[L * F + L];
    float state[4][L * F]; /* optimiser arrays, in rt_optim_state_get order */
    char state_names[4][RT_OPTIM_NAME_MAX];
    size_t state_n[4], nstate;
    int64_t step;
    rt_batcher_state bs;
    char schedule[512];
} checkpoint;

typedef struct {
    float w[L * F + L], grad[L * F + L]; /* W (L,F) then b (L) */
    rt_optim *opt;
    rt_batcher *bat;
    rt_schedule sched;
    int64_t step;
} trainer;

static rt_status trainer_create(trainer *t, rt_optim_kind kind, const char *sched)
{
    memset(t, 0, sizeof *t);
    rt_rng r = rt_rng_stream(SEED, RT_RNG_INIT, 0, 0);
    rt_rng_fill_uniform(&r, t->w, L * F, -0.07f, 0.07f); /* kaiming-uniform bound 1/sqrt(F) */
    rt_optim_config oc = rt_optim_config_default(kind);
    if (kind == RT_OPTIM_SGD) oc.momentum = 0.9, oc.nesterov = 1, oc.weight_decay = 1e-3;
    rt_optim_param ps[2] = {{t->w, t->grad, L * F, 0, 0, 1},
                            {t->w + L * F, t->grad + L * F, L, 1, 0, 1}};
    RT_TRY(rt_optim_create(&t->opt, &oc, ps, 2, NULL));
    rt_batcher_data d = {g_images, g_labels, N, C, H, W, NULL};
    rt_batcher_config bc = rt_batcher_config_default(B, SEED);
    bc.augment = 1;
    bc.crop_pad = 2;
    RT_TRY(rt_batcher_create(&t->bat, &d, &bc, NULL));
    RT_TRY(rt_schedule_parse(&t->sched, sched, NULL));
    return rt_schedule_resolve(&t->sched, rt_batcher_steps_per_epoch(t->bat), 6, NULL);
}

static void trainer_destroy(trainer *t)
{
    rt_optim_destroy(t->opt);
    rt_batcher_destroy(t->bat);
}

/* One step; returns the mean loss, and the batch's data-set indices in idx. */
static double train_step(trainer *t, uint32_t *idx, rt_status *st)
{
    static float x[B * F], mask[B * F];
    int32_t y[B];
    int n;
    *st = rt_batcher_next(t->bat, x, y, idx, &n, NULL);
    if (*st != RT_OK) return 0;
    rt_rng dr = rt_rng_stream(SEED, RT_RNG_DROPOUT, (uint32_t)t->step, 0);
    rt_rng_fill_bernoulli(&dr, mask, (size_t)n * F, 0.8f, 1.0f / 0.8f);
    memset(t->grad, 0, sizeof t->grad);
    double loss = 0;
    for (int i = 0; i < n; i++) {
        float *xi = x + i * F, z[L], zmax = -1e30f, sum = 0;
        for (int k = 0; k < F; k++) xi[k] *= mask[i * F + k];
        for (int l = 0; l < L; l++) {
            z[l] = t->w[L * F + l];
            for (int k = 0; k < F; k++) z[l] += t->w[l * F + k] * xi[k];
            zmax = z[l] > zmax ? z[l] : zmax;
        }
        for (int l = 0; l < L; l++) sum += (z[l] = expf(z[l] - zmax));
        loss -= log(z[y[i]] / sum);
        for (int l = 0; l < L; l++) {
            float dz = (z[l] / sum - (l == y[i])) / (float)n;
            for (int k = 0; k < F; k++) t->grad[l * F + k] += dz * xi[k];
            t->grad[L * F + l] += dz;
        }
    }
    double lr = rt_schedule_lr(&t->sched, 0.01, t->step);
    *st = rt_optim_step(t->opt, lr, NULL);
    t->step++;
    return loss / n;
}

static void save(const trainer *t, checkpoint *c)
{
    memcpy(c->w, t->w, sizeof c->w);
    c->nstate = rt_optim_state_count(t->opt);
    for (size_t j = 0; j < c->nstate; j++) {
        const float *a = rt_optim_state_get(t->opt, j, c->state_names[j], &c->state_n[j]);
        memcpy(c->state[j], a, c->state_n[j] * sizeof *a);
    }
    c->step = rt_optim_step_count(t->opt);
    c->bs = rt_batcher_get_state(t->bat);
    rt_schedule_format(&t->sched, c->schedule, sizeof c->schedule);
}

static rt_status restore(trainer *t, rt_optim_kind kind, const checkpoint *c)
{
    RT_TRY(trainer_create(t, kind, c->schedule));
    memcpy(t->w, c->w, sizeof t->w);
    for (size_t j = 0; j < c->nstate; j++)
        RT_TRY(rt_optim_state_set(t->opt, c->state_names[j], c->state[j], c->state_n[j], NULL));
    RT_TRY(rt_optim_set_step_count(t->opt, c->step, NULL));
    RT_TRY(rt_batcher_set_state(t->bat, c->bs, NULL));
    t->step = c->step;
    return RT_OK;
}

typedef struct {
    double loss[STEPS];
    uint32_t idx[STEPS][B];
    float w[L * F + L];
} record;

/* Steps [from, STEPS) of t into rec. */
static rt_status run(trainer *t, record *rec, int from)
{
    for (int s = from; s < STEPS; s++) {
        rt_status st;
        memset(rec->idx[s], 0xff, sizeof rec->idx[s]);
        rec->loss[s] = train_step(t, rec->idx[s], &st);
        if (st != RT_OK) return st;
    }
    memcpy(rec->w, t->w, sizeof rec->w);
    return RT_OK;
}

static const struct {
    rt_optim_kind kind;
    const char *schedule;
} CASES[] = {
    {RT_OPTIM_SGD, "step:2:0.5 warmup=1"},
    {RT_OPTIM_ADAM, "cosine unit=step"},
    {RT_OPTIM_ADAMW, "onecycle"},
};

T_TEST(test_resume_bitwise)
{
    static record full, resumed;
    for (size_t c = 0; c < sizeof CASES / sizeof *CASES; c++) {
        trainer t;
        ASSERT_EQ(trainer_create(&t, CASES[c].kind, CASES[c].schedule), RT_OK);
        ASSERT_EQ(run(&t, &full, 0), RT_OK);
        trainer_destroy(&t);
        /* it learned something: the last epoch's loss is below the first's */
        ASSERT(full.loss[STEPS - 1] + full.loss[STEPS - 2] < full.loss[0] + full.loss[1]);

        int ks[] = {1, 6, 12, 17}; /* 6 steps an epoch: boundaries and mid-epoch */
        for (int i = 0; i < 4; i++) {
            int k = ks[i];
            static checkpoint ck;
            ASSERT_EQ(trainer_create(&t, CASES[c].kind, CASES[c].schedule), RT_OK);
            for (int s = 0; s < k; s++) {
                rt_status st;
                resumed.loss[s] = train_step(&t, resumed.idx[s], &st);
                ASSERT_EQ(st, RT_OK);
            }
            save(&t, &ck);
            trainer_destroy(&t);
            ASSERT_EQ(restore(&t, CASES[c].kind, &ck), RT_OK);
            ASSERT_EQ(run(&t, &resumed, k), RT_OK);
            trainer_destroy(&t);
            for (int s = k; s < STEPS; s++) {
                if (memcmp(&resumed.loss[s], &full.loss[s], sizeof(double)) != 0)
                    T_FAIL_("%s, resumed at %d: step %d loss %.17g vs %.17g",
                            rt_optim_kind_name(CASES[c].kind), k, s, resumed.loss[s], full.loss[s]);
                ASSERT(memcmp(resumed.idx[s], full.idx[s], sizeof full.idx[s]) == 0);
            }
            ASSERT(memcmp(resumed.w, full.w, sizeof full.w) == 0);
        }
        printf("  %-6s %-22s loss %.4f -> %.4f\n", rt_optim_kind_name(CASES[c].kind),
               CASES[c].schedule, full.loss[0], full.loss[STEPS - 1]);
    }
}

int main(void)
{
    make_data();
    T_RUN(test_resume_bitwise);
    return T_EXIT();
}
