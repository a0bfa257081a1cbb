/* test_lr_find.c - %lr_find through the engine on the tiny IDX data set of tm_util.h:
 * the session's trained model (weights, batch-norm statistics) and the last run's
 * optimiser state are byte-identical after the test, the rates rise until the loss
 * diverges and the suggestion (printed, plotted on a log axis, set as suggested_lr) lies
 * before that, the device path suggests the same rate as the host path, and bad
 * options are errors naming the option before anything trains.
 * Usage: test_lr_find [cuda] (cuda: on the CUDA backend, tests/gpu's mock device). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mg.h"
#include "rt_ckpt.h"
#include "t.h"
#include "tm_util.h"

static char g_dir[128], g_noisy[128], g_store[256], g_dev[32] = "cpu";
static mg_session *g_s;
static mg_error g_err;
static double g_var = NAN; /* what %lr_find set as suggested_lr */
static int g_var_sets;

static int var_set(void *user, const char *name, json_t *v)
{
    (void)user;
    if (!strcmp(name, "suggested_lr")) g_var = json_real_value(v), g_var_sets++;
    json_decref(v);
    return 0;
}

static int magic(const char *fmt, const char *more)
{
    char line[900];
    snprintf(line, sizeof line, fmt, more);
    tm_reset();
    int rc = tm_magic(g_s, line, NULL, &g_err);
    if (rc) fprintf(stderr, "(%s: %s)\n", g_err.ename, g_err.evalue);
    return rc;
}

static int lr_find(const char *more)
{
    char line[600];
    snprintf(line, sizeof line, "lr_find tiny --batch 30 --device %s %s", g_dev, more);
    return magic("%s", line);
}

static int setup_on(const char *dir)
{
    if (tm_fresh_session(&g_s) < 0) return -1;
    tm_reset();
    return tm_setup_model(
        g_s, dir, 0, "conv2d 4 3 pad=1\nbatchnorm\nrelu\nmaxpool 2\nflatten\ndense 3\n", &g_err);
}

static int setup(void) { return setup_on(g_dir); }

/* The tiny set with random training labels (in g_noisy): no rate fits it, so a high
 * rate makes the loss diverge (on the tiny set itself any high rate reaches loss 0). */
static int make_noisy(void)
{
    snprintf(g_noisy, sizeof g_noisy, "/tmp/kiln-tm-noisy-XXXXXX");
    if (!mkdtemp(g_noisy) ||
        tm_write_split(g_noisy, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz", 90, 2) ||
        tm_write_split(g_noisy, "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", 300, 1))
        return -1;
    uint8_t h[8] = {0, 0, 8, 1}, lab[300];
    unsigned seed = 7;
    tm_be32(h + 4, 300);
    for (int i = 0; i < 300; i++) seed = seed * 1103515245u + 12345u, lab[i] = (seed >> 16) % 3;
    return tm_write_gz(g_noisy, "train-labels-idx1-ubyte.gz", h, 8, lab, 300);
}

/* Every tensor of two checkpoint files (model, batch-norm buffers, optimiser state)
 * byte for byte: 1 when all are equal, 0 when one differs, -1 when unreadable. */
static int same_tensors(const char *a, const char *b)
{
    rt_ckpt_reader *ra = NULL, *rb = NULL;
    rt_error re;
    int same = -1;
    if (rt_ckpt_reader_open(a, 0, &ra, &re) != RT_OK ||
        rt_ckpt_reader_open(b, 0, &rb, &re) != RT_OK)
        goto out;
    size_t n = rt_ckpt_reader_tensor_count(ra);
    if (n == 0 || n != rt_ckpt_reader_tensor_count(rb)) goto out;
    same = 1;
    for (size_t i = 0; i < n && same == 1; i++) {
        const rt_st_tensor_info *ta = rt_ckpt_reader_tensor_at(ra, i);
        const rt_st_tensor_info *tb = rt_ckpt_reader_find(rb, ta->name);
        size_t bytes = (size_t)(ta->end - ta->begin);
        if (!tb || (size_t)(tb->end - tb->begin) != bytes) {
            same = 0;
            break;
        }
        char *x = malloc(bytes ? bytes : 1), *y = malloc(bytes ? bytes : 1);
        if (!x || !y ||
            rt_ckpt_reader_get(ra, ta->name, ta->dtype, ta->ndim, ta->shape, x, bytes, &re) !=
                RT_OK ||
            rt_ckpt_reader_get(rb, ta->name, ta->dtype, ta->ndim, ta->shape, y, bytes, &re) !=
                RT_OK)
            same = -1;
        else if (memcmp(x, y, bytes)) same = 0;
        free(x);
        free(y);
    }
out:
    rt_ckpt_reader_destroy(ra);
    rt_ckpt_reader_destroy(rb);
    return same;
}

static double suggested(void)
{
    const char *at = strstr(tm_c.out, "suggested learning rate: ");
    return at ? atof(at + strlen("suggested learning rate: ")) : NAN;
}

/* A trained model with batch norm: %lr_find leaves its weights, BN statistics and the
 * run's optimiser state (what %checkpoint save writes) byte-identical; a second %train
 * does change them (the comparison sees a change). */
T_TEST(test_model_untouched)
{
    ASSERT_EQ(setup(), 0);
    char where[400], a[300], b[300], c[300];
    snprintf(where, sizeof where, "--results %s --device %s", g_store, g_dev);
    ASSERT_EQ(magic("train tiny --batch 30 --epochs 1 --lr 0.01 %s", where), 0);
    ASSERT_STR_CONTAINS(tm_c.out, strcmp(g_dev, "cpu") ? "device cuda" : "device cpu");
    snprintf(a, sizeof a, "%s/before.safetensors", g_dir);
    snprintf(b, sizeof b, "%s/after.safetensors", g_dir);
    snprintf(c, sizeof c, "%s/retrained.safetensors", g_dir);
    ASSERT_EQ(magic("checkpoint save %s", a), 0);
    ASSERT_EQ(lr_find("--steps 40 --end 100"), 0);
    ASSERT_STR_CONTAINS(tm_c.out, "suggested learning rate: ");
    ASSERT_EQ(magic("checkpoint save %s", b), 0);
    ASSERT_EQ(same_tensors(a, b), 1);
    /* %evaluate still sees the trained model */
    ASSERT_EQ(magic("evaluate tiny --split test%s", ""), 0);
    ASSERT_EQ(magic("train tiny --batch 30 --epochs 1 --lr 0.05 %s", where), 0);
    ASSERT_EQ(magic("checkpoint save %s", c), 0);
    ASSERT_EQ(same_tensors(a, c), 0);
}

/* Rates up to 1000 on random labels: the loss diverges, the test stops there, the
 * suggestion lies before the stop, is set as suggested_lr and is marked on the log-x
 * plot. */
T_TEST(test_diverges_and_suggests)
{
    ASSERT_EQ(setup_on(g_noisy), 0);
    g_var_sets = 0;
    ASSERT_EQ(lr_find("--start 1e-3 --end 1000 --steps 40 --optimizer sgd"), 0);
    const char *stop = strstr(tm_c.out, "stopped at step ");
    ASSERT(stop != NULL);
    int at = stop ? atoi(stop + strlen("stopped at step ")) : 0;
    ASSERT(at > 10 && at < 40);
    double lr = suggested();
    ASSERT(lr > 1e-3 && lr < 1000);
    /* the rate of step `at` (1-based): 1e-3 * 1e6^((at - 1) / 39) */
    ASSERT(lr < 1e-3 * pow(1e6, (double)(at - 1) / 39.0) * 1.0001);
    ASSERT_EQ(g_var_sets, 1);
    ASSERT_NEAR(g_var, lr, lr * 1e-2); /* printed with 3 digits */
    char *svg = capture_shown(&tm_c, "image/svg+xml");
    ASSERT(svg != NULL);
    ASSERT_STR_CONTAINS(svg ? svg : "", "learning rate (log scale)");
    ASSERT_STR_CONTAINS(svg ? svg : "", ">0.001<"); /* a decade tick of the log axis */
    ASSERT_STR_CONTAINS(svg ? svg : "", "suggested ");
    free(svg);
    /* the same test again: the same suggestion (a fresh copy from the seed each time) */
    char first[64];
    snprintf(first, sizeof first, "suggested learning rate: %.3g ", lr);
    ASSERT_EQ(lr_find("--start 1e-3 --end 1000 --steps 40 --optimizer sgd"), 0);
    ASSERT_STR_CONTAINS(tm_c.out, first);
}

/* The device path (what a GPU runs; on the CPU for this check) reads every step's loss
 * at once, so it suggests what the host path does. */
T_TEST(test_device_path_suggests_the_same)
{
    if (strcmp(g_dev, "cpu")) return; /* the CUDA backend always takes the device path */
    ASSERT_EQ(setup_on(g_noisy), 0);
    ASSERT_EQ(lr_find("--start 1e-3 --end 100 --steps 30 --optimizer sgd"), 0);
    double host = suggested();
    const char *stop = strstr(tm_c.out, "stopped at step ");
    int host_stop = stop ? atoi(stop + 16) : 0;
    tm_settings.device_path = 1;
    int rc = lr_find("--start 1e-3 --end 100 --steps 30 --optimizer sgd");
    tm_settings.device_path = 0;
    ASSERT_EQ(rc, 0);
    ASSERT(isfinite(host));
    ASSERT(host_stop > 0); /* it diverged */
    ASSERT(suggested() == host);
    stop = strstr(tm_c.out, "stopped at step ");
    ASSERT_EQ(stop ? atoi(stop + 16) : 0, host_stop);
}

/* Bad values name the option; nothing is trained or recorded. */
T_TEST(test_bad_options)
{
    ASSERT_EQ(setup(), 0);
    struct {
        const char *more, *ename, *words;
    } cases[] = {
        {"--start 0", "ValueError", "%lr_find: --start must be > 0, got 0"},
        {"--start -1e-3", "ValueError", "%lr_find: --start must be > 0"},
        {"--start 1e-2 --end 1e-3", "ValueError", "%lr_find: --end must be above --start"},
        {"--end 1e9", "ValueError", "--end must be above --start (1e-07) and at most 1e4"},
        {"--steps 1", "ValueError", "%lr_find: --steps must be in 2..10000, got 1"},
        {"--steps 20000", "ValueError", "--steps must be in 2..10000"},
        {"--end abc", "ValueError", "--end"},
        {"--steps many", "ValueError", "--steps"},
        {"--batch 0", "ValueError", "%lr_find: --batch must be in 1..65536, got 0"},
        {"--optimizer rmsprop", "ValueError", "--optimizer"},
        {"--epochs 3", "UsageError", "--epochs"},
        {"--momentum -1", "ValueError", "%lr_find: --momentum"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        if (lr_find(cases[i].more) == 0) T_FAIL_("'%s' was accepted", cases[i].more);
        if (cases[i].ename[0]) ASSERT_STR_EQ(g_err.ename, cases[i].ename);
        ASSERT_STR_CONTAINS(g_err.evalue, cases[i].words);
        ASSERT(strstr(tm_c.out, "Learning-rate range test") == NULL); /* nothing ran */
    }
    ASSERT(magic("lr_find nosuchmodel --steps 5%s", "") != 0);
    ASSERT_STR_CONTAINS(g_err.evalue, "nosuchmodel");
    rt_results_run r;
    ASSERT(tm_last_run(g_store, &r) != 0); /* no run was recorded by any of them */
}

/* A test that diverges within its first 12 steps has too few points for a suggestion
 * (the first 10 and the last are left out): a warning, no suggested_lr. */
T_TEST(test_too_few_points)
{
    ASSERT_EQ(setup_on(g_noisy), 0);
    g_var_sets = 0;
    ASSERT_EQ(lr_find("--start 5 --end 1000 --steps 12 --optimizer sgd"), 0);
    ASSERT(strstr(tm_c.out, "suggested learning rate") == NULL);
    ASSERT_STR_CONTAINS(tm_c.err, "too few steps before the loss diverged to suggest a rate");
    ASSERT_EQ(g_var_sets, 0);
}

/* An interrupt stops the test with KeyboardInterrupt. */
T_TEST(test_interrupt)
{
    ASSERT_EQ(setup(), 0);
    tm_reset();
    tm_interrupt_after = 5;
    char line[200];
    snprintf(line, sizeof line, "lr_find tiny --batch 30 --device %s --steps 100", g_dev);
    ASSERT(tm_magic(g_s, line, NULL, &g_err) != 0);
    ASSERT_STR_EQ(g_err.ename, "KeyboardInterrupt");
    ASSERT_STR_CONTAINS(g_err.evalue, "%lr_find: interrupted after step ");
}

int main(int argc, char **argv)
{
    if (argc > 1) snprintf(g_dev, sizeof g_dev, "%s", argv[1]);
    if (tm_start(g_dir, sizeof g_dir, g_store, sizeof g_store) < 0) return 1;
    tm_host.var_set = var_set;
    if (make_noisy() < 0) return 1;
    T_RUN(test_bad_options); /* first: the results store has no run yet */
    T_RUN(test_model_untouched);
    T_RUN(test_diverges_and_suggests);
    T_RUN(test_device_path_suggests_the_same);
    T_RUN(test_too_few_points);
    T_RUN(test_interrupt);
    tm_teardown(g_s, g_dir);
    char rm[200];
    snprintf(rm, sizeof rm, "rm -rf '%s'", g_noisy);
    if (system(rm) != 0) fprintf(stderr, "could not remove %s\n", g_noisy);
    return T_EXIT();
}
