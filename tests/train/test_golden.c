/* test_golden.c - golden training runs on the CPU.
 *
 * A tiny CNN (conv, relu, max-pool, batchnorm, dropout, dense: every stateful piece)
 * trains on a tiny generated data set (64 images 1x8x8, 4 classes: a bright quadrant per
 * class plus Philox noise) with Adam, seed 1234, batch 16, 24 steps (6 epochs).
 *  - the per-step losses equal expected_losses.txt (args[1]) within 1e-4 relative: the
 *    file was written by this test (--write) on the development machine; other BLAS
 *    kernels (another OPENBLAS_CORETYPE) round differently, hence not bitwise here;
 *  - two runs in one process are bitwise identical;
 *  - the loss decreases (last 4 steps' mean < half the first 4 steps' mean);
 *  - resume: train 10 steps, capture model tensors + optimiser state + trainer state,
 *    continue to 24; a fresh model/trainer restored from the capture gives the same
 *    losses for steps 11..24 bit for bit (what %resume relies on);
 *  - should_stop and the progress callback.
 */
#include <stdlib.h>

#include "../quadrants.h"
#include "../t.h"
#include "rt.h"

#define STEPS 24
#define IMGS 64

static const char *spec = "conv2d 4 3 pad=1\nrelu\nmaxpool 2\nbatchnorm\ndropout 0.1\n"
                          "flatten\ndense 4\n";
static const char *expected_path;
static int write_mode;

static void make_data(rt_dataset *d) { quadrants_make(d, IMGS, 99, 0.5f, "golden/train"); }

/* the trainer's device path on the CPU backend (what a CUDA backend runs), with loss
 * scaling from this initial scale when > 0 */
static int use_device;
static double use_scale;
/* every step-level control on (the same images an update: 8 x 2 = 16) */
static int use_controls;

typedef struct run {
    rt_backend b;
    rt_model *m;
    rt_trainer *t;
    int progress_calls, stop_at;
    int64_t last_step, last_skipped;
    int bad_order;
    int64_t first_step;   /* first step this run reported */
    double losses[STEPS]; /* per step, from the progress callbacks */
} run;

static void on_progress(const rt_progress *p, void *user)
{
    run *r = user;
    r->progress_calls++;
    if (p->step != r->last_step + 1) r->bad_order++; /* progress must come in step order */
    if (!r->first_step) r->first_step = p->step;
    r->last_step = p->step;
    r->last_skipped = p->skipped_steps;
    if (p->step >= 1 && p->step <= STEPS) r->losses[p->step - 1] = p->loss;
}

static int should_stop(void *user)
{
    run *r = user;
    return r->stop_at > 0 && rt_trainer_get_state(r->t).step >= r->stop_at;
}

static rt_status start(run *r, const rt_dataset *d, rt_error *err)
{
    memset(r, 0, sizeof *r);
    rt_model_input in = {1, 8, 8, 4};
    RT_TRY(rt_backend_open(&r->b, "cpu", 2, err));
    RT_TRY(rt_model_create(&r->m, spec, &in, err));
    RT_TRY(rt_model_attach(r->m, &r->b, 16, 1234, err));
    rt_trainer_config c = rt_trainer_config_default();
    c.epochs = STEPS * 16 / IMGS;
    c.batch_size = 16;
    c.lr = 1e-2;
    c.progress = on_progress;
    c.should_stop = should_stop;
    c.user = r;
    c.device_path = use_device;
    c.loss_scaling = use_scale > 0;
    c.loss_scale_init = use_scale;
    if (use_controls) {
        c.batch_size = 8, c.accumulate = 2;
        c.clip_norm = 0.5, c.clip_value = 0.5, c.label_smoothing = 0.1;
        c.augment = 1, c.crop_pad = 1, c.flip_p = 0.5f, c.cutout = 3;
    }
    RT_TRY(rt_trainer_create(&r->t, r->m, d, &c, err));
    if (rt_trainer_on_device(r->t) != (use_device != 0))
        return RT_ERR(err, RT_EINVAL, "the trainer took the wrong path");
    return rt_trainer_begin(r->t, err);
}

static void stop(run *r)
{
    rt_trainer_destroy(r->t);
    rt_model_destroy(r->m);
    rt_backend_close(&r->b);
}

/* Steps until done/stopped; losses[k] = loss of step k (0-based), from *first on. */
static rt_status train(run *r, double *losses, int *n, rt_error *err)
{
    rt_step_event ev;
    for (;;) {
        RT_TRY(rt_trainer_step(r->t, &ev, err));
        if (ev != RT_STEP_CONTINUE && ev != RT_STEP_EPOCH_END) break;
        (*n)++;
    }
    RT_TRY(rt_trainer_flush(r->t, err));
    for (int64_t k = r->first_step - 1; k >= 0 && k < r->last_step && k < STEPS; k++)
        losses[k] = r->losses[k];
    return RT_OK;
}

T_TEST(golden_losses)
{
    rt_dataset d;
    make_data(&d);
    rt_error err = {0};
    double a[STEPS] = {0}, b2[STEPS] = {0};
    int na = 0, nb = 0;
    run r;
    ASSERT_EQ(start(&r, &d, &err), RT_OK);
    ASSERT_EQ(train(&r, a, &na, &err), RT_OK);
    ASSERT_EQ(r.progress_calls, STEPS);
    stop(&r);
    ASSERT_EQ(start(&r, &d, &err), RT_OK);
    ASSERT_EQ(train(&r, b2, &nb, &err), RT_OK);
    stop(&r);
    ASSERT_EQ(na, STEPS);
    ASSERT_EQ(nb, STEPS);
    ASSERT_EQ(memcmp(a, b2, sizeof a), 0); /* bit for bit in one process */
    double first = (a[0] + a[1] + a[2] + a[3]) / 4, last = 0;
    for (int i = STEPS - 4; i < STEPS; i++) last += a[i] / 4;
    ASSERT(last < 0.5 * first);
    if (write_mode) {
        FILE *f = fopen(expected_path, "w");
        ASSERT(f != NULL);
        fprintf(f, "# tests/train/test_golden.c --write: per-step losses, seed 1234\n");
        for (int i = 0; i < STEPS; i++) fprintf(f, "%d %.9g\n", i + 1, a[i]);
        fclose(f);
    } else {
        FILE *f = fopen(expected_path, "r");
        ASSERT(f != NULL);
        char line[128];
        int k = 0;
        while (fgets(line, sizeof line, f)) {
            int step;
            double v;
            if (line[0] == '#' || sscanf(line, "%d %lf", &step, &v) != 2) continue;
            ASSERT(step >= 1 && step <= STEPS);
            if (!(fabs(a[step - 1] - v) <= 1e-4 * fabs(v)))
                fprintf(stderr, "  step %d: loss %.9g, expected %.9g\n", step, a[step - 1], v);
            ASSERT_NEAR(a[step - 1], v, 1e-4 * fabs(v));
            k++;
        }
        fclose(f);
        ASSERT_EQ(k, STEPS);
    }
    free(d.images);
    free(d.labels);
}

/* ---- resume: capture and restore everything a checkpoint holds ---- */
typedef struct capture {
    float *tensors[32];
    size_t tensor_n[32];
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
    for (int i = 0; i < c->ntensors; i++) {
        rt_named_tensor t;
        RT_TRY(rt_model_tensor(r->m, i, &t, err));
        c->tensors[i] = malloc(t.numel * 4);
        c->tensor_n[i] = t.numel;
        RT_TRY(rt_model_tensor_read(r->m, i, c->tensors[i], err));
    }
    RT_TRY(rt_trainer_flush(r->t, err)); /* device path: optimiser state to the host */
    rt_optim *o = rt_trainer_optim(r->t);
    c->noptim = rt_optim_state_count(o);
    for (size_t i = 0; i < c->noptim; i++) {
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

static void capture_free(capture *c)
{
    for (int i = 0; i < c->ntensors; i++) free(c->tensors[i]);
    for (size_t i = 0; i < c->noptim; i++) free(c->optim[i]);
}

T_TEST(resume_is_bitwise)
{
    rt_dataset d;
    make_data(&d);
    rt_error err = {0};
    double full[STEPS] = {0}, resumed[STEPS] = {0};
    int n = 0;
    run r;
    capture cap;
    ASSERT_EQ(start(&r, &d, &err), RT_OK);
    r.stop_at = 10; /* should_stop after step 10 (mid-epoch: 10 = 2 epochs + 2 steps) */
    ASSERT_EQ(train(&r, full, &n, &err), RT_OK);
    ASSERT_EQ(n, 10);
    rt_step_event ev;
    ASSERT_EQ(rt_trainer_step(r.t, &ev, &err), RT_OK);
    ASSERT_EQ(ev, RT_STEP_STOPPED); /* still stopped: no step taken */
    ASSERT_EQ(rt_trainer_get_state(r.t).step, 10);
    ASSERT_EQ(save(&r, &cap, &err), RT_OK);
    r.stop_at = 0;
    ASSERT_EQ(train(&r, full, &n, &err), RT_OK);
    ASSERT_EQ(n, STEPS);
    ASSERT_EQ(rt_trainer_step(r.t, &ev, &err), RT_OK);
    ASSERT_EQ(ev, RT_STEP_DONE);
    stop(&r);
    /* a fresh process-like start: new backend, model (other init), trainer; restore */
    ASSERT_EQ(start(&r, &d, &err), RT_OK);
    ASSERT_EQ(restore(&r, &cap, &err), RT_OK);
    n = 10;
    ASSERT_EQ(train(&r, resumed, &n, &err), RT_OK);
    ASSERT_EQ(n, STEPS);
    ASSERT_EQ(memcmp(full + 10, resumed + 10, sizeof(double) * (STEPS - 10)), 0);
    stop(&r);
    capture_free(&cap);
    free(d.images);
    free(d.labels);
}

/* Accumulation, clipping, label smoothing and crop/flip/cutout together resume bit for
 * bit mid-epoch, on the host path and on the device path (a step is never cut between
 * its micro-batches, so the position captured is an update's). */
T_TEST(resume_with_controls_is_bitwise)
{
    use_controls = 1;
    for (use_device = 0; use_device < 2 && !*t_failed_; use_device++) resume_is_bitwise(t_failed_);
    use_device = 0;
    use_controls = 0;
}

/* Trains to the end (stopping at stop_at > 0, capturing and continuing in a fresh
 * model/trainer from the capture, as %resume does); final model tensors into *fin. */
static void run_to_end(int *t_failed_, const rt_dataset *d, int stop_at, double *losses,
                       capture *fin, int64_t *skipped, double *scale)
{
    rt_error err = {0};
    run r;
    int n = 0;
    ASSERT_EQ(start(&r, d, &err), RT_OK);
    if (stop_at > 0) {
        capture cap;
        r.stop_at = stop_at;
        ASSERT_EQ(train(&r, losses, &n, &err), RT_OK);
        ASSERT_EQ(n, stop_at);
        ASSERT_EQ(save(&r, &cap, &err), RT_OK);
        stop(&r);
        ASSERT_EQ(start(&r, d, &err), RT_OK);
        ASSERT_EQ(restore(&r, &cap, &err), RT_OK);
        r.last_step = stop_at;
        capture_free(&cap);
    }
    ASSERT_EQ(train(&r, losses, &n, &err), RT_OK);
    ASSERT_EQ(n, STEPS);
    ASSERT_EQ(r.bad_order, 0);
    ASSERT_EQ(r.last_step, STEPS);
    rt_train_summary sum;
    ASSERT_EQ(rt_trainer_end(r.t, &sum, &err), RT_OK);
    *skipped = sum.skipped_steps;
    *scale = sum.loss_scale;
    ASSERT_EQ(save(&r, fin, &err), RT_OK);
    stop(&r);
}

static void assert_same_tensors(int *t_failed_, const capture *a, const capture *b)
{
    ASSERT_EQ(a->ntensors, b->ntensors);
    for (int i = 0; i < a->ntensors; i++) {
        ASSERT_EQ(a->tensor_n[i], b->tensor_n[i]);
        ASSERT_EQ(memcmp(a->tensors[i], b->tensors[i], a->tensor_n[i] * 4), 0);
    }
    ASSERT_EQ(a->noptim, b->noptim);
    ASSERT_EQ(a->optim_step, b->optim_step);
    for (size_t i = 0; i < a->noptim; i++) {
        ASSERT_EQ(a->optim_n[i], b->optim_n[i]);
        ASSERT_EQ(memcmp(a->optim[i], b->optim[i], a->optim_n[i] * 4), 0);
    }
}

T_TEST(device_path_equals_host_path)
{
    /* The device path (data set, statistics ring, optimiser state in backend memory;
     * what a CUDA backend runs) on the CPU backend trains to the very same parameters and
     * optimiser state as the host path, through a capture/restore mid-epoch too; its
     * per-step losses (read back in batches, the double's bytes) are the same doubles. */
    rt_dataset d;
    make_data(&d);
    double a[STEPS] = {0}, b2[STEPS] = {0};
    capture ca, cb;
    int64_t sk;
    double sc;
    run_to_end(t_failed_, &d, 0, a, &ca, &sk, &sc);
    use_device = 1;
    run_to_end(t_failed_, &d, 7, b2, &cb, &sk, &sc);
    use_device = 0;
    ASSERT_EQ(sk, 0);
    ASSERT(sc == 0.0);
    assert_same_tensors(t_failed_, &ca, &cb);
    ASSERT_EQ(memcmp(a, b2, sizeof a), 0);
    capture_free(&ca);
    capture_free(&cb);
    free(d.images);
    free(d.labels);
}

T_TEST(loss_scaling_is_exact_and_skips_overflow)
{
    /* fp16's dynamic loss scaling on the CPU (fp32 math): a power-of-two scale changes
     * no bit of the training; a scale so large the gradients overflow makes the first
     * steps skip (parameters untouched, scale halved each time, reported), then training
     * proceeds - and a capture/restore in the middle resumes it bitwise. */
    rt_dataset d;
    make_data(&d);
    double a[STEPS] = {0}, b2[STEPS] = {0}, c2[STEPS] = {0};
    capture ca, cb, cc, cd;
    int64_t sk;
    double sc;
    run_to_end(t_failed_, &d, 0, a, &ca, &sk, &sc);
    use_device = 1;
    use_scale = 65536.0;
    run_to_end(t_failed_, &d, 0, b2, &cb, &sk, &sc);
    ASSERT_EQ(sk, 0);
    ASSERT(sc == 65536.0);
    assert_same_tensors(t_failed_, &ca, &cb);
    ASSERT_EQ(memcmp(a, b2, sizeof a), 0);
    use_scale = 3e38; /* dlogits * 3e38 overflows in the backward pass */
    run_to_end(t_failed_, &d, 0, c2, &cc, &sk, &sc);
    ASSERT(sk >= 1);
    ASSERT(sk < STEPS / 2);
    ASSERT(sc < 3e38 && sc == 3e38 / (double)(1LL << sk));
    ASSERT_EQ(cc.optim_step, STEPS - sk); /* Adam's t counts applied updates only */
    for (int i = 0; i < STEPS; i++) ASSERT(isfinite(c2[i]));
    double first = (c2[0] + c2[1] + c2[2] + c2[3]) / 4, last = 0;
    for (int i = STEPS - 4; i < STEPS; i++) last += c2[i] / 4;
    ASSERT(last < first);
    run_to_end(t_failed_, &d, 3, b2, &cd, &sk, &sc); /* stopped while still skipping? resume too */
    assert_same_tensors(t_failed_, &cc, &cd);
    use_scale = 0;
    use_device = 0;
    capture_free(&ca);
    capture_free(&cb);
    capture_free(&cc);
    capture_free(&cd);
    free(d.images);
    free(d.labels);
}

T_TEST(evaluate_and_errors)
{
    rt_dataset d;
    make_data(&d);
    rt_error err = {0};
    double l[STEPS];
    int n = 0;
    run r;
    d.n = IMGS - 4; /* a partial last batch (12 of 16), then evaluate in full batches */
    ASSERT_EQ(start(&r, &d, &err), RT_OK);
    ASSERT_EQ(train(&r, l, &n, &err), RT_OK);
    d.n = IMGS;
    rt_eval_result *res = calloc(1, sizeof *res);
    ASSERT_EQ(rt_trainer_evaluate(r.m, &d, 5, res, &err), RT_OK);
    ASSERT_EQ(res->n, IMGS);
    ASSERT_EQ(res->npreds, 5);
    ASSERT(res->accuracy > 0.9); /* the quadrant task is easy */
    int64_t tot = 0, diag = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            tot += res->confusion[i][j], diag += i == j ? res->confusion[i][j] : 0;
    ASSERT_EQ(tot, IMGS);
    ASSERT_NEAR((double)diag / IMGS, res->accuracy, 1e-12);
    ASSERT_EQ(res->preds[3].index, 3);
    ASSERT_EQ(res->preds[3].label, 3);
    /* bad configurations are errors naming the option */
    rt_trainer *t2 = NULL;
    rt_trainer_config c = rt_trainer_config_default();
    c.batch_size = 64;
    ASSERT_EQ(rt_trainer_create(&t2, r.m, &d, &c, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "--batch 64");
    c = rt_trainer_config_default();
    c.batch_size = 8;
    c.epochs = 0;
    ASSERT_EQ(rt_trainer_create(&t2, r.m, &d, &c, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "--epochs");
    d.num_classes = 5;
    c.epochs = 1;
    ASSERT_EQ(rt_trainer_create(&t2, r.m, &d, &c, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "5 classes");
    d.num_classes = 4;
    d.labels[7] = 9; /* a corrupt label is an error, not a crash */
    ASSERT_EQ(rt_trainer_evaluate(r.m, &d, 0, res, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "label 9");
    ASSERT(t2 == NULL);
    free(res);
    stop(&r);
    free(d.images);
    free(d.labels);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_golden EXPECTED_LOSSES [--write]\n");
        return 99;
    }
    expected_path = argv[1];
    write_mode = argc > 2 && !strcmp(argv[2], "--write");
    T_RUN(golden_losses);
    T_RUN(resume_is_bitwise);
    T_RUN(resume_with_controls_is_bitwise);
    T_RUN(device_path_equals_host_path);
    T_RUN(loss_scaling_is_exact_and_skips_overflow);
    T_RUN(evaluate_and_errors);
    return T_EXIT();
}
