/* test_gpu_trainer.c - rt_trainer's device path on the CUDA backend, against the same
 * run on the CPU backend's host path.
 *
 *  - fp32: 2 epochs of a small CNN (conv, batchnorm, max-pool, dropout, dense; Adam;
 *    augmentation on) from one seed: every step's loss tracks the CPU's (2e-3 + 2e-3 rel:
 *    cuDNN/cuBLAS sum in other orders), the progress callbacks arrive in step order,
 *    the final parameters agree (5e-3 + 5e-3 rel after 16 Adam steps; the 4 conv biases
 *    ahead of the batchnorm excepted: no true gradient, Adam follows rounding noise) and
 *    the two trained models evaluate alike (loss within 5e-3 rel, same accuracy);
 *  - no host round trip inside a step: with the progress read pushed past the run
 *    (report_every_s huge, no epoch end in the window), steps 2..6 make no
 *    device-to-host copy and no synchronisation. Counted by the mock device
 *    (tests/gpu/mock/mock_stats.h, linked as weak symbols); on a real GPU this part is
 *    reported as not measured;
 *  - a set held as raw pixels behind a row index (an image folder) trains exactly as
 *    the same images held as floats, on the device and on the CPU's host path;
 *  - a training set that does not fit in device memory: a clear error (what, how many
 *    MiB, what was free), and the backend trains once memory is back (mock only);
 *  - fp16 with loss scaling: a first scale of 2^24 overflows fp16 (65504) in the first
 *    backward passes, so those steps skip (reported in progress and the summary, scale
 *    halved each time, Adam's t counting applied steps only), then it trains;
 *  - frozen parameters and lr multipliers (--freeze, --lr-mult): frozen bytes unchanged
 *    on both paths, the rest tracks the CPU.
 * Exit 77 without a CUDA device (the real-device build); the mock build always runs.
 */
#include <math.h>
#include <stdlib.h>

#include "../quadrants.h"
#include "../t.h"
#include "gpu_util.h"

long mock_stat_d2h(void) __attribute__((weak));
long mock_stat_syncs(void) __attribute__((weak));
void mock_stat_reset(void) __attribute__((weak));
long mock_stat_h2d_bytes(void) __attribute__((weak));

#define IMGS 64
#define BATCH 8
#define EPOCHS 2
#define STEPS (EPOCHS * IMGS / BATCH)

static const char *SPEC = "conv2d 4 3 pad=1\nbatchnorm\nrelu\nmaxpool 2\ndropout 0.2\n"
                          "flatten\ndense 4\n";

static void make_data(rt_dataset *d) { quadrants_make(d, IMGS, 5, 0.5f, "gen/train"); }

typedef struct run {
    rt_backend *b;
    rt_model *m;
    rt_trainer *t;
    double loss[STEPS];
    int64_t last_step, skipped;
    int bad_order, calls;
} run;

static void on_progress(const rt_progress *p, void *user)
{
    run *r = user;
    if (p->step != r->last_step + 1) r->bad_order++;
    r->last_step = p->step;
    r->calls++;
    r->skipped = p->skipped_steps;
    if (p->step >= 1 && p->step <= STEPS) r->loss[p->step - 1] = p->loss;
}

static const double *g_mult; /* the next start's param_lr_mult (NULL: none) */
static double g_clip;        /* ... and its clip_norm */

static rt_status start(run *r, rt_backend *b, const rt_dataset *d, double scale, double report_s,
                       rt_error *err)
{
    memset(r, 0, sizeof *r);
    r->b = b;
    rt_model_input in = {1, 8, 8, 4};
    RT_TRY(rt_model_create(&r->m, SPEC, &in, err));
    RT_TRY(rt_model_attach(r->m, b, BATCH, 42, err));
    rt_trainer_config c = rt_trainer_config_default();
    c.epochs = EPOCHS;
    c.batch_size = BATCH;
    c.lr = 3e-3;
    c.augment = 1;
    c.progress = on_progress;
    c.user = r;
    c.loss_scaling = scale > 0;
    c.loss_scale_init = scale;
    c.report_every_s = report_s;
    c.param_lr_mult = g_mult;
    c.clip_norm = g_clip;
    RT_TRY(rt_trainer_create(&r->t, r->m, d, &c, err));
    return rt_trainer_begin(r->t, err);
}

static void finish(run *r)
{
    rt_trainer_destroy(r->t);
    rt_model_destroy(r->m);
}

static rt_status step_to_end(run *r, rt_error *err)
{
    rt_step_event ev = RT_STEP_CONTINUE;
    while (ev == RT_STEP_CONTINUE || ev == RT_STEP_EPOCH_END)
        RT_TRY(rt_trainer_step(r->t, &ev, err));
    return ev == RT_STEP_DONE ? RT_OK : RT_ERR(err, RT_EINVAL, "stopped early (%d)", (int)ev);
}

static float *params_of(rt_model *m)
{
    long P = (long)rt_tensor_numel(rt_model_params_flat(m)); /* gaps included */
    float *h = malloc((size_t)P * 4);
    rt_backend *b = rt_model_backend(m);
    rt_error err = {0};
    if (!h || rt_backend_download(b, h, rt_model_params_flat(m), (size_t)P * 4, &err) != RT_OK) {
        fprintf(stderr, "harness: download failed: %s\n", err.msg);
        exit(99);
    }
    return h;
}

static rt_backend g_cpu, g_gpu;
static rt_dataset g_data;

T_TEST(fp32_tracks_cpu)
{
    rt_error err = {0};
    run c, g;
    ASSERT_EQ(start(&c, &g_cpu, &g_data, 0, 0.25, &err), RT_OK);
    ASSERT_EQ(step_to_end(&c, &err), RT_OK);
    ASSERT_EQ(start(&g, &g_gpu, &g_data, 0, 0.25, &err), RT_OK);
    ASSERT(rt_trainer_on_device(g.t));
    ASSERT(!rt_trainer_on_device(c.t));
    ASSERT_EQ(step_to_end(&g, &err), RT_OK);
    ASSERT_EQ(g.calls, STEPS);
    ASSERT_EQ(g.bad_order, 0);
    for (int i = 0; i < STEPS; i++) {
        if (!(fabs(g.loss[i] - c.loss[i]) <= 2e-3 + 2e-3 * fabs(c.loss[i])))
            fprintf(stderr, "  step %d: cuda %.9g cpu %.9g\n", i + 1, g.loss[i], c.loss[i]);
        ASSERT_NEAR(g.loss[i], c.loss[i], 2e-3 + 2e-3 * fabs(c.loss[i]));
    }
    ASSERT(g.loss[STEPS - 1] < g.loss[0]);
    /* parameters: all but noise-driven ones agree. The conv bias feeds a batchnorm, so
     * its true gradient is 0 and Adam turns each backend's rounding noise into full
     * lr-sized steps of either sign: those 4 values differ and change no output */
    float *pc = params_of(c.m), *pg = params_of(g.m);
    long P = (long)rt_tensor_numel(rt_model_params_flat(c.m)), bad = 0;
    for (long i = 0; i < P; i++) bad += !(fabsf(pc[i] - pg[i]) <= 5e-3f + 5e-3f * fabsf(pc[i]));
    ASSERT(bad <= 4);
    free(pc);
    free(pg);
    /* ... and the trained models compute the same function */
    rt_eval_result *ec = calloc(1, sizeof *ec), *eg = calloc(1, sizeof *eg);
    ASSERT(ec && eg);
    ASSERT_EQ(rt_trainer_evaluate(c.m, &g_data, 0, ec, &err), RT_OK);
    ASSERT_EQ(rt_trainer_evaluate(g.m, &g_data, 0, eg, &err), RT_OK);
    /* 5e-3: the 4 noise-driven conv biases shift the eval-mode batchnorm (its running
     * mean lags them); 2.1e-3 measured with the CPU's direct convolution */
    ASSERT_NEAR(eg->loss, ec->loss, 5e-3 * fabs(ec->loss));
    ASSERT_NEAR(eg->accuracy, ec->accuracy, 2.0 / IMGS);
    free(ec);
    free(eg);
    finish(&c);
    finish(&g);
}

/* A set held as raw pixels behind a row index (an image folder's mapped cache) trains
 * exactly as the same images held as floats, on the device path (its bytes uploaded and
 * normalised by the device at create: on the mock, exactly a quarter of the floats'
 * bytes plus the 256-float table go up) and on the CPU's host path (normalised per
 * batch). */
T_TEST(pixel_sets_train_as_their_floats)
{
    rt_error err = {0};
    int n = g_data.n;
    uint8_t *px = malloc((size_t)n * 64);
    rt_dataset raw = g_data, flt = g_data;
    raw.images = flt.images = NULL;
    raw.index = malloc((size_t)n * sizeof *raw.index);
    flt.images = malloc((size_t)n * 64 * sizeof(float));
    ASSERT(px && raw.index && flt.images);
    for (size_t k = 0; k < (size_t)n * 64; k++) {
        long v = lroundf((g_data.images[k] + 1.0f) * 80.0f);
        px[k] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
    for (int i = 0; i < n; i++) raw.index[i] = (uint32_t)(n - 1 - i); /* rows reversed */
    uint8_t *lab = malloc((size_t)n);
    ASSERT(lab);
    for (int i = 0; i < n; i++) lab[i] = g_data.labels[n - 1 - i];
    raw.pixels = px, raw.labels = flt.labels = lab;
    raw.mean[0] = flt.mean[0] = 0.31f, raw.std[0] = flt.std[0] = 0.27f;
    for (int i = 0; i < n; i++) rt_dataset_image_f32(&raw, i, flt.images + (size_t)i * 64);
    rt_backend *bs[2] = {&g_gpu, &g_cpu};
    for (int k = 0; k < 2; k++) {
        run a, b;
        long up[2] = {0, 0}; /* bytes to the device while each run starts */
        if (mock_stat_h2d_bytes) mock_stat_reset();
        ASSERT_EQ(start(&a, bs[k], &raw, 0, 0.25, &err), RT_OK);
        if (mock_stat_h2d_bytes) up[0] = mock_stat_h2d_bytes(), mock_stat_reset();
        ASSERT_EQ(step_to_end(&a, &err), RT_OK);
        if (mock_stat_h2d_bytes) mock_stat_reset();
        ASSERT_EQ(start(&b, bs[k], &flt, 0, 0.25, &err), RT_OK);
        if (mock_stat_h2d_bytes) up[1] = mock_stat_h2d_bytes();
        ASSERT_EQ(step_to_end(&b, &err), RT_OK);
        if (k == 0 && mock_stat_h2d_bytes)
            ASSERT_EQ(up[1] - up[0], (long)n * 64 * 4 - ((long)n * 64 + 256 * 4));
        ASSERT(rt_trainer_on_device(a.t) == (k == 0));
        ASSERT(memcmp(a.loss, b.loss, sizeof a.loss) == 0);
        ASSERT(a.loss[STEPS - 1] < a.loss[0]);
        finish(&a);
        finish(&b);
    }
    free(px), free(raw.index), free(flt.images), free(lab);
}

T_TEST(no_round_trip_inside_a_step)
{
    if (!mock_stat_d2h) {
        printf("  (round trips are counted on the mock device only; not measured here)\n");
        return;
    }
    rt_error err = {0};
    run g;
    ASSERT_EQ(start(&g, &g_gpu, &g_data, 0, 1e9, &err), RT_OK);
    rt_step_event ev;
    ASSERT_EQ(rt_trainer_step(g.t, &ev, &err), RT_OK); /* step 1: uploads the state */
    mock_stat_reset();
    for (int i = 0; i < 5; i++) {
        ASSERT_EQ(rt_trainer_step(g.t, &ev, &err), RT_OK);
        ASSERT_EQ(ev, RT_STEP_CONTINUE);
    }
    ASSERT_EQ(mock_stat_d2h(), 0);
    ASSERT_EQ(mock_stat_syncs(), 0);
    ASSERT_EQ(g.calls, 0);                         /* nothing read yet */
    ASSERT_EQ(rt_trainer_flush(g.t, &err), RT_OK); /* the progress read: now it happens */
    ASSERT(mock_stat_d2h() >= 1);
    ASSERT_EQ(g.calls, 6);
    ASSERT_EQ(g.bad_order, 0);
    finish(&g);
}

T_TEST(out_of_memory_for_the_data_set)
{
    /* the training set does not fit: a clear error naming what and how much, and the
     * backend stays usable (a smaller ask then works). Mock device only: filling a real
     * GPU's memory would disturb whatever else runs there. */
    if (!mock_stat_d2h) {
        printf("  (device memory is filled on the mock device only; not run here)\n");
        return;
    }
    rt_error err = {0};
    run g;
    memset(&g, 0, sizeof g);
    rt_model_input in = {1, 8, 8, 4};
    ASSERT_EQ(rt_model_create(&g.m, SPEC, &in, &err), RT_OK);
    ASSERT_EQ(rt_model_attach(g.m, &g_gpu, BATCH, 42, &err), RT_OK);
    size_t fr = 0, total = 0;
    ASSERT_EQ(rt_cuda_mem_info(&g_gpu, &fr, &total, &err), RT_OK);
    void *filler = NULL;
    ASSERT_EQ(g_gpu.ops->alloc(&g_gpu, &filler, fr - 8192, &err), RT_OK); /* < 16 KiB left */
    rt_trainer_config c = rt_trainer_config_default();
    c.batch_size = BATCH;
    rt_status s = rt_trainer_create(&g.t, g.m, &g_data, &c, &err);
    ASSERT_EQ(s, RT_EDEVICE);
    ASSERT(g.t == NULL);
    ASSERT_STR_CONTAINS(err.msg, "keeping the training set in cuda memory");
    ASSERT_STR_CONTAINS(err.msg, "free");
    printf("  error: %s\n", err.msg);
    g_gpu.ops->free(&g_gpu, filler);
    ASSERT_EQ(rt_trainer_create(&g.t, g.m, &g_data, &c, &err), RT_OK);
    ASSERT_EQ(rt_trainer_begin(g.t, &err), RT_OK);
    rt_step_event ev;
    ASSERT_EQ(rt_trainer_step(g.t, &ev, &err), RT_OK);
    finish(&g);
}

T_TEST(fp16_loss_scaling_skips_overflow)
{
    rt_error err = {0};
    rt_backend h;
    gpu_open_or_skip(&h);
    if (rt_cuda_set_precision(&h, RT_PREC_FP16, &err) != RT_OK) {
        printf("  (fp16 not available: %s)\n", err.msg);
        rt_backend_close(&h);
        return;
    }
    run g;
    const double init = 16777216.0;
    ASSERT_EQ(start(&g, &h, &g_data, init, 0.25, &err), RT_OK);
    ASSERT_EQ(step_to_end(&g, &err), RT_OK);
    rt_train_summary s;
    ASSERT_EQ(rt_trainer_end(g.t, &s, &err), RT_OK);
    printf("  fp16: %lld of %d steps skipped, loss scale %g\n", (long long)s.skipped_steps, STEPS,
           s.loss_scale);
    ASSERT(s.skipped_steps >= 1 && s.skipped_steps <= STEPS - 6);
    ASSERT_EQ(g.skipped, s.skipped_steps);
    ASSERT(s.loss_scale == init / (double)(1LL << s.skipped_steps));
    ASSERT_EQ(rt_optim_step_count(rt_trainer_optim(g.t)), STEPS - s.skipped_steps);
    for (int i = 0; i < STEPS; i++) ASSERT(isfinite(g.loss[i]));
    ASSERT(g.loss[STEPS - 1] < g.loss[0]);
    finish(&g);
    rt_backend_close(&h);
}

/* --freeze / --lr-mult on the device path: the frozen conv (weight and bias) keeps its
 * initial bytes on CUDA as on the CPU, its optimiser state stays zero, and the rest (the
 * batchnorm at half the rate, the dense layer at twice it) tracks the CPU's host path;
 * the global-norm clipping leaves the frozen gradients out on both. fp16 loss scaling
 * refuses the multipliers. */
T_TEST(frozen_and_lr_mult_track_cpu)
{
    static const double mult[6] = {0, 0, 0.5, 0.5, 2, 2}; /* conv w b, bn w b, dense w b */
    rt_error err = {0};
    run c, g;
    g_mult = mult;
    g_clip = 0.5;
    rt_status sc = start(&c, &g_cpu, &g_data, 0, 0.25, &err);
    float *before = sc == RT_OK ? params_of(c.m) : NULL;
    if (sc == RT_OK) sc = step_to_end(&c, &err);
    rt_status sg = sc == RT_OK ? start(&g, &g_gpu, &g_data, 0, 0.25, &err) : sc;
    if (sg == RT_OK) sg = step_to_end(&g, &err);
    g_mult = NULL;
    g_clip = 0;
    if (sg != RT_OK) fprintf(stderr, "  %s\n", err.msg);
    ASSERT_EQ(sc, RT_OK);
    ASSERT_EQ(sg, RT_OK);
    ASSERT(rt_trainer_on_device(g.t));
    rt_named_tensor w, bias;
    ASSERT_EQ(rt_model_tensor(c.m, 0, &w, &err), RT_OK);
    ASSERT_EQ(rt_model_tensor(c.m, 1, &bias, &err), RT_OK);
    size_t frozen = rt_optim_align(w.numel) + rt_optim_align(bias.numel);
    float *pc = params_of(c.m), *pg = params_of(g.m);
    ASSERT_EQ(memcmp(before, pc, frozen * 4), 0); /* frozen: bit for bit, both paths */
    ASSERT_EQ(memcmp(before, pg, frozen * 4), 0);
    long P = (long)rt_tensor_numel(rt_model_params_flat(c.m)), moved = 0, bad = 0;
    for (long i = (long)frozen; i < P; i++) {
        moved += pc[i] != before[i];
        bad += !(fabsf(pc[i] - pg[i]) <= 5e-3f + 5e-3f * fabsf(pc[i]));
    }
    ASSERT(moved > 20); /* the others trained */
    ASSERT_EQ(bad, 0);
    ASSERT_EQ(rt_trainer_flush(g.t, &err), RT_OK);
    char name[RT_OPTIM_NAME_MAX];
    size_t n;
    const float *m0 = rt_optim_state_get(rt_trainer_optim(g.t), 0, name, &n); /* exp_avg.0 */
    ASSERT_STR_EQ(name, "exp_avg.0");
    for (size_t i = 0; i < n; i++) ASSERT_EQ(m0[i], 0.0f);
    free(before);
    free(pc);
    free(pg);
    finish(&c);
    finish(&g);
    /* fp16 loss scaling updates every parameter at one rate: refused, naming the options */
    g_mult = mult;
    ASSERT_EQ(start(&g, &g_gpu, &g_data, 65536, 0.25, &err), RT_EINVAL);
    g_mult = NULL;
    ASSERT_STR_CONTAINS(err.msg, "--freeze and --lr-mult");
    finish(&g);
}

int main(void)
{
    rt_error err = {0};
    gpu_open_or_skip(&g_gpu);
    if (rt_backend_open(&g_cpu, "cpu", 2, &err) != RT_OK) {
        fprintf(stderr, "cpu backend: %s\n", err.msg);
        return 99;
    }
    make_data(&g_data);
    T_RUN(fp32_tracks_cpu);
    T_RUN(pixel_sets_train_as_their_floats);
    T_RUN(no_round_trip_inside_a_step);
    T_RUN(out_of_memory_for_the_data_set);
    T_RUN(fp16_loss_scaling_skips_overflow);
    T_RUN(frozen_and_lr_mult_track_cpu);
    rt_backend_close(&g_cpu);
    rt_backend_close(&g_gpu);
    free(g_data.images);
    free(g_data.labels);
    return T_EXIT();
}
