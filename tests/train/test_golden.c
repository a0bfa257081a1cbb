/* test_golden.c - golden training runs on the CPU (STYLE "Cross-checking", levels 3-4).
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

#include "../t.h"
#include "rt.h"

#define STEPS 24
#define IMGS 64

static const char *spec = "conv2d 4 3 pad=1\nrelu\nmaxpool 2\nbatchnorm\ndropout 0.1\n"
                          "flatten\ndense 4\n";
static const char *expected_path;
static int write_mode;

static void make_data(rt_dataset *d)
{
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "golden/train");
    d->n = IMGS, d->c = 1, d->h = 8, d->w = 8, d->num_classes = 4;
    d->images = malloc(IMGS * 64 * sizeof(float));
    d->labels = malloc(IMGS);
    rt_rng r = rt_rng_stream(99, RT_RNG_USER, 0, 0);
    rt_rng_fill_normal(&r, d->images, IMGS * 64, 0.0f, 0.5f);
    for (int i = 0; i < IMGS; i++) {
        int cls = i % 4;
        d->labels[i] = (uint8_t)cls;
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 4; x++)
                d->images[i * 64 + (y + 4 * (cls / 2)) * 8 + x + 4 * (cls % 2)] += 1.0f;
    }
}

static int use_mirror; /* run the device-backend optimiser path (host mirrors) */

typedef struct run {
    rt_backend b;
    rt_model *m;
    rt_trainer *t;
    int progress_calls, stop_at;
    int64_t last_step;
} run;

static void on_progress(const rt_progress *p, void *user)
{
    run *r = user;
    r->progress_calls++;
    r->last_step = p->step;
}

static int should_stop(void *user)
{
    run *r = user;
    return r->stop_at > 0 && r->last_step >= r->stop_at;
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
    c.host_mirror = use_mirror;
    RT_TRY(rt_trainer_create(&r->t, r->m, d, &c, err));
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
        rt_train_summary s;
        RT_TRY(rt_trainer_end(r->t, &s, err));
        losses[rt_trainer_get_state(r->t).step - 1] = s.last_loss;
        (*n)++;
    }
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
        RT_TRY(rt_model_tensor_read(r->m, i, c->tensors[i], err));
    }
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
    for (int i = 0; i < c->ntensors; i++) RT_TRY(rt_model_tensor_write(r->m, i, c->tensors[i], err));
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

T_TEST(device_path_equals_cpu_path)
{
    /* The optimiser on host mirrors (what a CUDA backend uses) gives the very same
     * losses as the direct CPU path, and resumes bitwise too. */
    rt_dataset d;
    make_data(&d);
    rt_error err = {0};
    double a[STEPS] = {0}, b2[STEPS] = {0};
    int na = 0, nb = 0;
    run r;
    ASSERT_EQ(start(&r, &d, &err), RT_OK);
    ASSERT_EQ(train(&r, a, &na, &err), RT_OK);
    stop(&r);
    use_mirror = 1;
    ASSERT_EQ(start(&r, &d, &err), RT_OK);
    r.stop_at = 7;
    ASSERT_EQ(train(&r, b2, &nb, &err), RT_OK);
    capture cap;
    ASSERT_EQ(save(&r, &cap, &err), RT_OK);
    stop(&r);
    ASSERT_EQ(start(&r, &d, &err), RT_OK);
    ASSERT_EQ(restore(&r, &cap, &err), RT_OK);
    ASSERT_EQ(train(&r, b2, &nb, &err), RT_OK);
    stop(&r);
    use_mirror = 0;
    capture_free(&cap);
    ASSERT_EQ(nb, STEPS);
    ASSERT_EQ(memcmp(a, b2, sizeof a), 0);
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
        for (int j = 0; j < 4; j++) tot += res->confusion[i][j], diag += i == j ? res->confusion[i][j] : 0;
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
    T_RUN(device_path_equals_cpu_path);
    T_RUN(evaluate_and_errors);
    return T_EXIT();
}
