/* test_resume_device.c - a checkpoint moves between the CPU and CUDA backends.
 *
 * A CPU run (conv, batchnorm, dropout, dense; Adam) trains 9 steps and saves a
 * checkpoint. A model attached to the CUDA backend loads it (rt_ckpt_train_load_model:
 * only the backend's upload), is saved again from there (only download) and the two
 * files' weights must be bitwise equal; evaluating on CUDA must agree with the CPU
 * within fp32 tolerance (the weights landed in the right layout), and a CPU model
 * loading the CUDA-written file evaluates bit for bit like the original. Exit 77 without
 * a CUDA device. Built twice: against the real backend and over tests/gpu's mock
 * device (host stand-in for the CUDA runtime: runs everywhere CUDA is compiled in).
 */
#include <stdlib.h>

#include "../t.h"
#include "rt.h"
#include "rt_ckpt_train.h"

static const char *SPEC = "conv2d 4 3 pad=1\nrelu\nbatchnorm\nmaxpool 2\ndropout 0.25\n"
                          "flatten\ndense 8\nrelu\ndense 4\n";
static rt_dataset g_data;
static char g_dir[128];

static void make_data(rt_dataset *d)
{
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "gen/train");
    d->n = 64, d->c = 1, d->h = 8, d->w = 8, d->num_classes = 4;
    d->images = malloc(64 * 64 * sizeof(float));
    d->labels = malloc(64);
    rt_rng r = rt_rng_stream(7, RT_RNG_USER, 0, 0);
    rt_rng_fill_normal(&r, d->images, 64 * 64, 0.0f, 0.7f);
    for (int i = 0; i < 64; i++) {
        d->labels[i] = (uint8_t)(i % 4);
        for (int k = 0; k < 16; k++) d->images[i * 64 + (i % 4) * 16 + k] += 1.0f;
    }
}

static rt_status model_on(rt_backend *b, rt_model **m, rt_error *err)
{
    rt_model_input in = {1, 8, 8, 4};
    RT_TRY(rt_model_create(m, SPEC, &in, err));
    return rt_model_attach(*m, b, 16, 5, err);
}

static rt_status load(const char *path, rt_model *m, rt_error *err)
{
    rt_ckpt_reader *rd = NULL;
    RT_TRY(rt_ckpt_reader_open(path, 0, &rd, err));
    rt_status s = rt_ckpt_train_load_model(rd, m, err);
    rt_ckpt_reader_destroy(rd);
    return s;
}

/* 1 when every model.* tensor of a and b is bitwise equal. */
static int same_weights(const char *a, const char *b)
{
    rt_ckpt_reader *ra = NULL, *rb = NULL;
    int same = rt_ckpt_reader_open(a, 0, &ra, NULL) == RT_OK &&
               rt_ckpt_reader_open(b, 0, &rb, NULL) == RT_OK;
    for (size_t i = 0; same && i < rt_ckpt_reader_tensor_count(ra); i++) {
        const rt_st_tensor_info *t = rt_ckpt_reader_tensor_at(ra, i);
        if (strncmp(t->name, "model.", 6)) continue;
        size_t bytes = t->end - t->begin;
        float *x = malloc(bytes + 1), *y = malloc(bytes + 1);
        same =
            x && y &&
            rt_ckpt_reader_get(ra, t->name, t->dtype, t->ndim, t->shape, x, bytes, NULL) == RT_OK &&
            rt_ckpt_reader_get(rb, t->name, t->dtype, t->ndim, t->shape, y, bytes, NULL) == RT_OK &&
            memcmp(x, y, bytes) == 0;
        free(x), free(y);
    }
    rt_ckpt_reader_destroy(ra);
    rt_ckpt_reader_destroy(rb);
    return same;
}

T_TEST(cpu_to_cuda_and_back)
{
    rt_error err = {0};
    rt_backend cpu = {0}, gpu = {0};
    rt_model *m = NULL, *mg = NULL, *mc = NULL;
    rt_trainer *t = NULL;
    char a[256], b[256];
    snprintf(a, sizeof a, "%s/cpu.safetensors", g_dir);
    snprintf(b, sizeof b, "%s/cuda.safetensors", g_dir);
    ASSERT_EQ(rt_backend_open(&cpu, "cpu", 2, &err), RT_OK);
    ASSERT_EQ(rt_backend_open(&gpu, "cuda", 0, &err), RT_OK);
    ASSERT_EQ(model_on(&cpu, &m, &err), RT_OK);
    rt_trainer_config c = rt_trainer_config_default();
    c.batch_size = 16;
    c.epochs = 3;
    ASSERT_EQ(rt_trainer_create(&t, m, &g_data, &c, &err), RT_OK);
    ASSERT_EQ(rt_trainer_begin(t, &err), RT_OK);
    for (int i = 0; i < 9; i++) {
        rt_step_event ev;
        ASSERT_EQ(rt_trainer_step(t, &ev, &err), RT_OK);
    }
    rt_ckpt_train_snap s;
    ASSERT_EQ(rt_ckpt_train_snap_capture(&s, t, m, &err), RT_OK);
    ASSERT_EQ(rt_ckpt_train_save(a, m, &s, NULL, &err), RT_OK);
    rt_ckpt_train_snap_deinit(&s);
    /* to CUDA: upload only; saved from CUDA: download only */
    ASSERT_EQ(model_on(&gpu, &mg, &err), RT_OK);
    rt_status st = load(a, mg, &err);
    if (st != RT_OK) T_FAIL_("load on cuda: %s", err.msg);
    rt_ckpt_train_info wi = {.step = 9, .epoch = 2};
    ASSERT_EQ(rt_ckpt_train_save(b, mg, NULL, &wi, &err), RT_OK);
    ASSERT(same_weights(a, b));
    static rt_eval_result ec, eg, eb;
    ASSERT_EQ(rt_trainer_evaluate(m, &g_data, 0, &ec, &err), RT_OK);
    ASSERT_EQ(rt_trainer_evaluate(mg, &g_data, 0, &eg, &err), RT_OK);
    ASSERT_NEAR(eg.loss, ec.loss, 1e-4 * (1 + ec.loss)); /* fp32, other summation order */
    /* and back to the CPU: bit for bit */
    ASSERT_EQ(model_on(&cpu, &mc, &err), RT_OK);
    ASSERT_EQ(load(b, mc, &err), RT_OK);
    ASSERT_EQ(rt_trainer_evaluate(mc, &g_data, 0, &eb, &err), RT_OK);
    ASSERT(memcmp(&eb.loss, &ec.loss, sizeof ec.loss) == 0);
    printf("  loss on cpu %.9g, on cuda %.9g, back on cpu %.9g\n", ec.loss, eg.loss, eb.loss);
    rt_trainer_destroy(t);
    rt_model_destroy(m);
    rt_model_destroy(mg);
    rt_model_destroy(mc);
    rt_backend_close(&gpu);
    rt_backend_close(&cpu);
}

int main(void)
{
    rt_backend probe = {0};
    rt_error err = {0};
    if (rt_backend_open(&probe, "cuda", 0, &err) != RT_OK) {
        printf("SKIP: no CUDA device (%s)\n", err.msg);
        return 77;
    }
    rt_backend_close(&probe);
    make_data(&g_data);
    snprintf(g_dir, sizeof g_dir, "/tmp/kiln-resume-dev-XXXXXX");
    if (!mkdtemp(g_dir)) return 99;
    T_RUN(cpu_to_cuda_and_back);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    free(g_data.images);
    free(g_data.labels);
    return T_EXIT();
}
