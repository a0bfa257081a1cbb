/* test_resume_alloc.c - allocation-failure sweep over rt_ckpt_train (after jansson's
 * test_chaos.c and tests/checkpoint/test_ckpt_alloc.c): fail the n-th host allocation,
 * for every n, while (a) capturing a trainer's state and saving it over a good
 * checkpoint and (b) opening a checkpoint and restoring weights, optimiser state and
 * position into a fresh model and trainer. Every outcome must be RT_OK or RT_ENOMEM
 * (never a misreported "corrupt" or "does not fit"), a failed save leaves the previous
 * file intact, a failed restore leaves the trainer at step 0, and nothing leaks.
 * Linked with -Wl,--wrap=malloc,...; jansson's allocations via json_set_alloc_funcs. */
#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>

#include "../t.h"
#include "rt.h"
#include "rt_ckpt_train.h"
#include "alloc_fail.h"

static const char *SPEC = "conv2d 2 3 pad=1\nrelu\nbatchnorm\nflatten\ndense 4\n";
static rt_dataset g_data;

typedef struct run {
    rt_backend b;
    rt_model *m;
    rt_trainer *t;
} run;

static rt_status start(run *r, rt_error *err)
{
    memset(r, 0, sizeof *r);
    rt_model_input in = {1, 4, 4, 4};
    RT_TRY(rt_backend_open(&r->b, "cpu", 1, err));
    RT_TRY(rt_model_create(&r->m, SPEC, &in, err));
    RT_TRY(rt_model_attach(r->m, &r->b, 8, 3, err));
    rt_trainer_config c = rt_trainer_config_default();
    c.batch_size = 8;
    c.epochs = 2;
    RT_TRY(rt_trainer_create(&r->t, r->m, &g_data, &c, err));
    return rt_trainer_begin(r->t, err);
}

static void stop(run *r)
{
    rt_trainer_destroy(r->t);
    rt_model_destroy(r->m);
    rt_backend_close(&r->b);
}

static rt_status save(run *r, const char *path, rt_error *err)
{
    rt_ckpt_train_snap s;
    RT_TRY(rt_ckpt_train_snap_capture(&s, r->t, r->m, err));
    rt_ckpt_train_info in = {.model_name = "m",
                             .hyperparameters = "{\"seed\":3}",
                             .schedule = "constant",
                             .base_lr = 1e-3};
    rt_status st = rt_ckpt_train_save(path, r->m, &s, &in, err);
    rt_ckpt_train_snap_deinit(&s);
    return st;
}

static rt_status restore(run *r, const char *path, rt_error *err)
{
    rt_ckpt_reader *rd = NULL;
    rt_ckpt_train_snap s = {0};
    RT_TRY(rt_ckpt_reader_open(path, 0, &rd, err));
    rt_status st = rt_ckpt_train_load_model(rd, r->m, err);
    if (st == RT_OK) st = rt_ckpt_train_snap_read(&s, rd, r->m, err);
    if (st == RT_OK) st = rt_ckpt_train_snap_apply(&s, r->t, r->m, err);
    rt_ckpt_train_snap_deinit(&s);
    rt_ckpt_reader_destroy(rd);
    return st;
}

static char *slurp(const char *path, long *n)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    if (f && fseek(f, 0, SEEK_END) == 0 && (*n = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = __real_malloc((size_t)*n)) && fread(buf, 1, (size_t)*n, f) != (size_t)*n) {
        __real_free(buf);
        buf = NULL;
    }
    if (f) fclose(f);
    return buf;
}

T_TEST(sweep)
{
    char dir[] = "/tmp/kiln-resume-alloc-XXXXXX", path[128];
    ASSERT(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/ckpt.safetensors", dir);
    rt_error err = {0};
    run a, b;
    ASSERT_EQ(start(&a, &err), RT_OK);
    for (int i = 0; i < 3; i++) {
        rt_step_event ev;
        ASSERT_EQ(rt_trainer_step(a.t, &ev, &err), RT_OK);
    }
    ASSERT_EQ(save(&a, path, &err), RT_OK);
    long n0 = 0, n1 = 0;
    char *good = slurp(path, &n0); /* its size: every save of this state has it */
    ASSERT(good != NULL);
    ASSERT_EQ(start(&b, &err), RT_OK);
    int oks = 0, fails = 0;
    for (long k = 0; k < 100000; k++) {
        long live0 = alloc_live;
        alloc_fail_arm(k);
        rt_status s1 = save(&a, path, &err), s2 = RT_OK;
        alloc_fail_at = -1; /* check without injection: a valid file of the same size */
        char *now = slurp(path, &n1);
        rt_ckpt_reader *chk = NULL;
        int intact = now && n1 == n0 && rt_ckpt_reader_open(path, 0, &chk, NULL) == RT_OK;
        rt_ckpt_reader_destroy(chk);
        __real_free(now);
        alloc_fail_at = k;
        if (s1 != RT_OK && s1 != RT_ENOMEM) T_FAIL_("n=%ld save: %d %s", k, s1, err.msg);
        if (!intact) T_FAIL_("n=%ld: the checkpoint is not the valid one any more", k);
        s2 = restore(&b, path, &err);
        if (s2 != RT_OK && s2 != RT_ENOMEM) T_FAIL_("n=%ld restore: %d %s", k, s2, err.msg);
        if (s2 != RT_OK && rt_trainer_get_state(b.t).step != 0)
            T_FAIL_("n=%ld: a failed restore moved the trainer", k);
        long used = alloc_count;
        alloc_fail_at = -1;
        if (alloc_live != live0) T_FAIL_("n=%ld: %ld allocations leaked", k, alloc_live - live0);
        if (s1 == RT_OK && s2 == RT_OK) oks++;
        else fails++;
        if (k >= used) break; /* no allocation was failed: the sweep is complete */
        if (s2 == RT_OK) {    /* back to a fresh trainer for the next round */
            stop(&b);
            ASSERT_EQ(start(&b, &err), RT_OK);
        }
    }
    /* oks: the failed allocation was tolerated (e.g. inside jansson) and all went well */
    printf("  %d allocation failures reported as RT_ENOMEM, %d tolerated\n", fails, oks);
    ASSERT(fails > 20 && oks >= 1);
    ASSERT_EQ(rt_trainer_get_state(b.t).step, 3);
    __real_free(good);
    stop(&a);
    stop(&b);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    json_set_alloc_funcs(alloc_fail_json_malloc, __wrap_free);
    memset(&g_data, 0, sizeof g_data);
    g_data.n = 16, g_data.c = 1, g_data.h = 4, g_data.w = 4, g_data.num_classes = 4;
    g_data.images = __real_calloc(16 * 16, sizeof(float));
    g_data.labels = __real_calloc(16, 1);
    for (int i = 0; i < 16; i++)
        g_data.labels[i] = (uint8_t)(i % 4), g_data.images[i * 17 % 256] = 1;
    T_RUN(sweep);
    __real_free(g_data.images);
    __real_free(g_data.labels);
    return T_EXIT();
}
