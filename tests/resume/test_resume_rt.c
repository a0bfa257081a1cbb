/* test_resume_rt.c - exact resume through checkpoint FILES, at the runtime level
 * (rt_ckpt_train.h), with the interrupted half in another process.
 *
 * A small CNN with every stateful piece (conv, batchnorm, dropout, dense) trains on a
 * generated data set (64 images 1x8x8, 4 classes), batch 12 (a partial last batch: 6
 * steps an epoch), shuffled, 5 epochs. For each optimiser/schedule and several
 * interruption steps (epoch boundaries and mid-epoch) a child process (this program
 * re-executed with --child) trains k steps, saves a checkpoint and exits; the parent
 * then rebuilds the model from the file's "model_spec" and seed, loads the weights and the training snapshot, trains to the end,
 * and compares every per-step loss and the final weights bit for bit with an
 * uninterrupted run. Then the failures: another model, another seed / batch /
 * optimiser, a weights-only file - each a clear error that changes nothing.
 * `--write-interop DIR` writes a trained checkpoint and each weight as raw float32
 * (DIR/<tensor>.f32) for test_interop_resume.py.
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../quadrants.h"
#include "../t.h"
#include "rt.h"
#include "rt_ckpt_train.h"

#define IMGS 64
#define BATCH 12
#define EPOCHS 5
#define STEPS (EPOCHS * 6)

static const char *SPEC = "conv2d 4 3 pad=1\nrelu\nbatchnorm\nmaxpool 2\ndropout 0.25\n"
                          "flatten\ndense 8\nrelu\ndense 4\n";
static rt_dataset g_data;
static char g_dir[256];
static char g_self[4096]; /* this program, for the child process */

static void make_data(rt_dataset *d) { quadrants_make(d, IMGS, 7, 0.7f, "gen/train"); }

typedef struct cfgcase {
    const char *optim, *schedule;
    double momentum;
} cfgcase;

typedef struct run {
    rt_backend b;
    rt_model *m;
    rt_trainer *t;
    double loss[STEPS];
} run;

static void on_progress(const rt_progress *p, void *user)
{
    run *r = user;
    if (p->step >= 1 && p->step <= STEPS) r->loss[p->step - 1] = p->loss;
}

static rt_status start(run *r, const char *spec, const cfgcase *c, uint64_t seed, int batch,
                       rt_error *err)
{
    memset(r, 0, sizeof *r);
    rt_model_input in = {1, 8, 8, 4};
    RT_TRY(rt_backend_open(&r->b, "cpu", 2, err));
    RT_TRY(rt_model_create(&r->m, spec, &in, err));
    RT_TRY(rt_model_attach(r->m, &r->b, batch, seed, err));
    rt_trainer_config tc = rt_trainer_config_default();
    rt_optim_kind k;
    RT_TRY(rt_optim_kind_parse(c->optim, &k, err));
    tc.optim = rt_optim_config_default(k);
    tc.optim.momentum = k == RT_OPTIM_SGD ? c->momentum : 0;
    RT_TRY(rt_schedule_parse(&tc.schedule, c->schedule, err));
    tc.epochs = EPOCHS;
    tc.batch_size = batch;
    tc.lr = k == RT_OPTIM_SGD ? 0.05 : 5e-3;
    tc.progress = on_progress;
    tc.user = r;
    RT_TRY(rt_trainer_create(&r->t, r->m, &g_data, &tc, err));
    return rt_trainer_begin(r->t, err);
}

static void stop(run *r)
{
    rt_trainer_destroy(r->t);
    rt_model_destroy(r->m);
    rt_backend_close(&r->b);
}

/* Steps until `until` steps are done (or the run ends). */
static rt_status train_to(run *r, int64_t until, rt_error *err)
{
    rt_step_event ev = RT_STEP_CONTINUE;
    while (rt_trainer_get_state(r->t).step < until) {
        RT_TRY(rt_trainer_step(r->t, &ev, err));
        if (ev != RT_STEP_CONTINUE && ev != RT_STEP_EPOCH_END) break;
    }
    return RT_OK;
}

/* All model tensors, concatenated (caller frees), or NULL when one cannot be read. */
static float *weights(rt_model *m, size_t *n)
{
    size_t total = 0;
    for (int i = 0; i < rt_model_num_tensors(m); i++) {
        rt_named_tensor t;
        if (rt_model_tensor(m, i, &t, NULL) != RT_OK) return NULL;
        total += t.numel;
    }
    float *w = malloc(total * sizeof *w), *p = w;
    for (int i = 0; w && i < rt_model_num_tensors(m); i++) {
        rt_named_tensor t;
        if (rt_model_tensor(m, i, &t, NULL) != RT_OK ||
            rt_model_tensor_read(m, i, p, NULL) != RT_OK) {
            free(w);
            return NULL;
        }
        p += t.numel;
    }
    *n = total;
    return w;
}

static rt_status save_ckpt(run *r, const char *path, rt_error *err)
{
    rt_ckpt_train_snap s;
    RT_TRY(rt_ckpt_train_snap_capture(&s, r->t, r->m, err));
    char hp[64];
    snprintf(hp, sizeof hp, "{\"seed\":%llu}", (unsigned long long)s.seed);
    rt_ckpt_train_info info = {.model_name = "net", .hyperparameters = hp};
    rt_status st = rt_ckpt_train_save(path, r->m, &s, &info, err);
    rt_ckpt_train_snap_deinit(&s);
    return st;
}

/* The child: k steps, then a checkpoint; its exit status says whether that worked. */
static int child_save(const cfgcase *c, int k, const char *path)
{
    run r;
    rt_error err = {0};
    rt_status s = start(&r, SPEC, c, 42, BATCH, &err);
    if (s == RT_OK) s = train_to(&r, k, &err);
    if (s == RT_OK) s = save_ckpt(&r, path, &err);
    if (s != RT_OK) fprintf(stderr, "child: %s\n", err.msg);
    stop(&r);
    return s == RT_OK ? 0 : 1;
}

/* The parent's resume: everything from the file (spec, seed), nothing from memory. */
static rt_status resume_from(run *r, const cfgcase *c, const char *path, rt_error *err)
{
    rt_ckpt_reader *rd = NULL;
    RT_TRY(rt_ckpt_reader_open(path, 0, &rd, err));
    const char *spec = rt_ckpt_reader_meta(rd, RT_CKPT_KEY_MODEL_SPEC);
    rt_ckpt_train_snap s = {0};
    rt_status st = spec ? RT_OK : RT_ERR(err, RT_EFORMAT, "no model_spec");
    if (st == RT_OK) st = start(r, spec, c, 0, BATCH, err); /* seed from the file below */
    if (st == RT_OK) st = rt_ckpt_train_snap_read(&s, rd, r->m, err);
    if (st == RT_OK && s.seed != 0) { /* rebuild with the checkpoint's seed */
        stop(r);
        st = start(r, spec, c, s.seed, BATCH, err);
    }
    if (st == RT_OK) st = rt_ckpt_train_load_model(rd, r->m, err);
    if (st == RT_OK) st = rt_ckpt_train_snap_apply(&s, r->t, r->m, err);
    rt_ckpt_train_snap_deinit(&s);
    rt_ckpt_reader_destroy(rd);
    return st;
}

static const cfgcase CASES[] = {
    {"adam", "cosine unit=step warmup=2", 0},
    {"sgd", "step:2:0.5", 0.9},
    {"adamw", "onecycle", 0},
};

T_TEST(resume_in_another_process_is_bitwise)
{
    for (size_t ci = 0; ci < sizeof CASES / sizeof *CASES; ci++) {
        const cfgcase *c = &CASES[ci];
        rt_error err = {0};
        run full;
        ASSERT_EQ(start(&full, SPEC, c, 42, BATCH, &err), RT_OK);
        ASSERT_EQ(train_to(&full, STEPS, &err), RT_OK);
        size_t nw;
        float *wfull = weights(full.m, &nw);
        ASSERT(wfull);
        ASSERT(full.loss[STEPS - 1] < full.loss[0]);
        int ks[] = {1, 9, 23}; /* 6 steps an epoch: early, mid-epoch, late */
        for (size_t i = 0; i < sizeof ks / sizeof *ks; i++) {
            char path[400];
            snprintf(path, sizeof path, "%s/ckpt-%zu-%d.safetensors", g_dir, ci, ks[i]);
            /* a new process image (fork + exec): OpenMP's pool does not survive fork */
            char cs[16], ks_[16];
            snprintf(cs, sizeof cs, "%zu", ci);
            snprintf(ks_, sizeof ks_, "%d", ks[i]);
            fflush(NULL);
            pid_t pid = fork();
            if (pid == 0) {
                execl(g_self, g_self, "--child", cs, ks_, path, (char *)NULL);
                _exit(127);
            }
            int status = 0;
            ASSERT_EQ(waitpid(pid, &status, 0), pid);
            ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
            run r;
            rt_status st = resume_from(&r, c, path, &err);
            if (st != RT_OK) T_FAIL_("resume %s: %s", path, err.msg);
            ASSERT_EQ(rt_trainer_get_state(r.t).step, ks[i]);
            ASSERT_EQ(train_to(&r, STEPS, &err), RT_OK);
            ASSERT_EQ(rt_trainer_get_state(r.t).step, STEPS);
            for (int s = ks[i]; s < STEPS; s++)
                if (memcmp(&r.loss[s], &full.loss[s], sizeof(double)))
                    T_FAIL_("%s resumed at %d: step %d loss %.17g, uninterrupted %.17g", c->optim,
                            ks[i], s + 1, r.loss[s], full.loss[s]);
            size_t n2;
            float *w = weights(r.m, &n2);
            ASSERT(w);
            ASSERT_EQ(n2, nw);
            ASSERT(memcmp(w, wfull, nw * sizeof *w) == 0);
            free(w);
            stop(&r);
        }
        printf("  %-5s %-28s loss %.4f -> %.4f, resumed at 1/9/23: bitwise equal\n", c->optim,
               c->schedule, full.loss[0], full.loss[STEPS - 1]);
        free(wfull);
        stop(&full);
    }
}

T_TEST(mismatches_are_clear_errors_and_change_nothing)
{
    rt_error err = {0};
    char path[400], wpath[400];
    snprintf(path, sizeof path, "%s/mis.safetensors", g_dir);
    snprintf(wpath, sizeof wpath, "%s/weights.safetensors", g_dir);
    run a;
    ASSERT_EQ(start(&a, SPEC, &CASES[0], 42, BATCH, &err), RT_OK);
    ASSERT_EQ(train_to(&a, 8, &err), RT_OK);
    ASSERT_EQ(save_ckpt(&a, path, &err), RT_OK);
    rt_ckpt_train_info wi = {.step = 8, .epoch = 1};
    ASSERT_EQ(rt_ckpt_train_save(wpath, a.m, NULL, &wi, &err), RT_OK);
    stop(&a);
    rt_ckpt_reader *rd = NULL;
    ASSERT_EQ(rt_ckpt_reader_open(path, 0, &rd, &err), RT_OK);
    /* another model: wider first conv */
    run b;
    ASSERT_EQ(start(&b,
                    "conv2d 6 3 pad=1\nrelu\nbatchnorm\nmaxpool 2\ndropout 0.25\nflatten\n"
                    "dense 8\nrelu\ndense 4\n",
                    &CASES[0], 42, BATCH, &err),
              RT_OK);
    size_t n0, n1;
    float *before = weights(b.m, &n0);
    ASSERT(before);
    ASSERT_EQ(rt_ckpt_train_load_model(rd, b.m, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, path);
    ASSERT_STR_CONTAINS(err.msg, "another model");
    ASSERT_STR_CONTAINS(err.msg, "[4,1,3,3], the model expects F32 [6,1,3,3]");
    float *after = weights(b.m, &n1);
    ASSERT(after && n0 == n1 && memcmp(before, after, n0 * sizeof *before) == 0);
    free(before), free(after);
    stop(&b);
    /* same model, but another seed / batch / optimiser: the state does not fit */
    struct {
        uint64_t seed;
        int batch;
        const cfgcase *c;
        const char *says;
    } bad[] = {
        {43, BATCH, &CASES[0], "--seed 42"},
        {42, 16, &CASES[0], "steps an epoch"},
        {42, BATCH, &CASES[1], "holds adam state"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        run r;
        rt_ckpt_train_snap s;
        ASSERT_EQ(start(&r, SPEC, bad[i].c, bad[i].seed, bad[i].batch, &err), RT_OK);
        ASSERT_EQ(rt_ckpt_train_snap_read(&s, rd, r.m, &err), RT_OK);
        ASSERT_EQ(rt_ckpt_train_snap_apply(&s, r.t, r.m, &err), RT_EINVAL);
        ASSERT_STR_CONTAINS(err.msg, bad[i].says);
        ASSERT_EQ(rt_trainer_get_state(r.t).step, 0);
        ASSERT_EQ(rt_optim_step_count(rt_trainer_optim(r.t)), 0);
        rt_ckpt_train_snap_deinit(&s);
        stop(&r);
    }
    rt_ckpt_reader_destroy(rd);
    /* a weights-only file loads as weights but cannot continue a run */
    ASSERT_EQ(rt_ckpt_reader_open(wpath, 0, &rd, &err), RT_OK);
    run w;
    rt_ckpt_train_snap s;
    ASSERT_EQ(start(&w, SPEC, &CASES[0], 42, BATCH, &err), RT_OK);
    ASSERT_EQ(rt_ckpt_train_load_model(rd, w.m, &err), RT_OK);
    ASSERT_EQ(rt_ckpt_train_snap_read(&s, rd, w.m, &err), RT_EINVAL);
    ASSERT_STR_CONTAINS(err.msg, "weights only");
    ASSERT_STR_CONTAINS(err.msg, wpath);
    stop(&w);
    rt_ckpt_reader_destroy(rd);
}

/* The epoch-level controls' state (best epoch, early-stopping wait, plateau best, bad
 * epochs, reductions, lr scale and the cooldown left) comes back from the file exactly. */
T_TEST(watch_state_round_trips)
{
    rt_error err = {0};
    char path[400];
    snprintf(path, sizeof path, "%s/watch.safetensors", g_dir);
    run r;
    ASSERT_EQ(start(&r, SPEC, &CASES[0], 42, BATCH, &err), RT_OK);
    ASSERT_EQ(train_to(&r, 3, &err), RT_OK);
    rt_trainer_state st = rt_trainer_get_state(r.t);
    st.watch = (rt_watch_state){.has_best = 1,
                                .best = 0.3141592653589793,
                                .best_epoch = 2,
                                .wait = 1,
                                .has_plateau_best = 1,
                                .plateau_best = 0.2718281828459045,
                                .plateau_bad = 1,
                                .lr_scale = 0.05 / 0.1,
                                .reductions = 1,
                                .cooldown_left = 2};
    ASSERT_EQ(rt_trainer_set_state(r.t, &st, &err), RT_OK);
    ASSERT_EQ(save_ckpt(&r, path, &err), RT_OK);
    rt_ckpt_reader *rd = NULL;
    rt_ckpt_train_snap s = {0};
    ASSERT_EQ(rt_ckpt_reader_open(path, 0, &rd, &err), RT_OK);
    ASSERT_EQ(rt_ckpt_train_snap_read(&s, rd, r.m, &err), RT_OK);
    const rt_watch_state *w = &s.state.watch;
    ASSERT(w->has_best && w->best == st.watch.best && w->best_epoch == 2 && w->wait == 1);
    ASSERT(w->has_plateau_best && w->plateau_best == st.watch.plateau_best);
    ASSERT(w->plateau_bad == 1 && w->lr_scale == st.watch.lr_scale && w->reductions == 1);
    ASSERT_EQ(w->cooldown_left, 2);
    rt_ckpt_train_snap_deinit(&s);
    rt_ckpt_reader_destroy(rd);
    stop(&r);
}

T_TEST(metadata_describes_the_run)
{
    rt_error err = {0};
    char path[400];
    snprintf(path, sizeof path, "%s/meta.safetensors", g_dir);
    run a;
    ASSERT_EQ(start(&a, SPEC, &CASES[0], 42, BATCH, &err), RT_OK);
    ASSERT_EQ(train_to(&a, 14, &err), RT_OK);
    ASSERT_EQ(save_ckpt(&a, path, &err), RT_OK);
    stop(&a);
    rt_ckpt_reader *rd = NULL;
    ASSERT_EQ(rt_ckpt_reader_open(path, 0, &rd, &err), RT_OK);
    ASSERT_STR_EQ(rt_ckpt_reader_meta(rd, "step"), "14");
    ASSERT_STR_EQ(rt_ckpt_reader_meta(rd, "epoch"), "2");
    ASSERT_STR_EQ(rt_ckpt_reader_meta(rd, "optimizer"), "adam");
    ASSERT_STR_EQ(rt_ckpt_reader_meta(rd, "optimizer_step"), "14");
    ASSERT_STR_EQ(rt_ckpt_reader_meta(rd, "model_spec"), SPEC);
    ASSERT_STR_EQ(rt_ckpt_reader_meta(rd, "input_shape"), "[1,8,8]");
    ASSERT_STR_CONTAINS(rt_ckpt_reader_meta(rd, "data_order"), "\"epoch\":2,\"position\":24");
    ASSERT_STR_CONTAINS(rt_ckpt_reader_meta(rd, "rng"), "\"seed\":\"42\"");
    ASSERT(rt_ckpt_reader_find(rd, "model.0.conv2d.weight") != NULL);
    ASSERT(rt_ckpt_reader_find(rd, "optim.exp_avg.0.conv2d.weight") != NULL);
    ASSERT(rt_ckpt_reader_find(rd, "optim.exp_avg_sq.8.dense.bias") != NULL);
    ASSERT(rt_ckpt_reader_find(rd, "model.2.batchnorm.running_var") != NULL);
    rt_ckpt_reader_destroy(rd);
}

/* For test_interop_resume.py: a trained checkpoint and each weight as raw float32. */
static int write_interop(const char *dir)
{
    run r;
    rt_error err = {0};
    char path[600];
    if (start(&r, SPEC, &CASES[0], 42, BATCH, &err) != RT_OK || train_to(&r, 10, &err) != RT_OK)
        goto fail;
    snprintf(path, sizeof path, "%s/trained.safetensors", dir);
    if (save_ckpt(&r, path, &err) != RT_OK) goto fail;
    for (int i = 0; i < rt_model_num_tensors(r.m); i++) {
        rt_named_tensor t;
        if (rt_model_tensor(r.m, i, &t, &err) != RT_OK) goto fail;
        float *h = malloc(t.numel * sizeof *h);
        snprintf(path, sizeof path, "%s/%s.f32", dir, t.name);
        FILE *f = fopen(path, "wb");
        int ok = h && f && rt_model_tensor_read(r.m, i, h, &err) == RT_OK &&
                 fwrite(h, sizeof *h, t.numel, f) == t.numel;
        if (f && fclose(f)) ok = 0;
        free(h);
        if (!ok) goto fail;
    }
    stop(&r);
    return 0;
fail:
    fprintf(stderr, "write-interop: %s\n", err.msg);
    return 1;
}

int main(int argc, char **argv)
{
    make_data(&g_data);
    /* argv[0], not /proc/self/exe: under valgrind that is valgrind itself */
    if (!realpath(argv[0], g_self)) return 99;
    if (argc == 3 && !strcmp(argv[1], "--write-interop")) return write_interop(argv[2]);
    if (argc == 5 && !strcmp(argv[1], "--child")) /* case, steps, path */
        return child_save(&CASES[atoi(argv[2]) % 3], atoi(argv[3]), argv[4]);
    snprintf(g_dir, sizeof g_dir, "/tmp/kiln-resume-rt-XXXXXX");
    if (!mkdtemp(g_dir)) return 99;
    T_RUN(resume_in_another_process_is_bitwise);
    T_RUN(mismatches_are_clear_errors_and_change_nothing);
    T_RUN(watch_state_round_trips);
    T_RUN(metadata_describes_the_run);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
    free(g_data.images);
    free(g_data.labels);
    return T_EXIT();
}
