/* resume_bench.c - what checkpoints cost a run: save and load time of the Keras MNIST
 * example model (conv 32, conv 64, dense 128, dense 10: 1.2M parameters) with Adam
 * state, and training throughput with a checkpoint every epoch against none.
 *
 *   resume_bench [DIR] [EPOCH_STEPS] [REPS]   (DIR $TMPDIR or /tmp; 100 steps; 3 reps)
 *
 * Data: Fashion-MNIST (Debian's dataset-fashion-mnist) cut to EPOCH_STEPS batches of 64
 * so an "epoch" is short (a conservative stand-in: a real epoch is 938 steps, so a
 * checkpoint per real epoch costs ~9x less than measured here). save = rt_ckpt_train_save
 * (snapshot + atomic write with fsync); load = full validation (CRC-32 of everything),
 * weights + optimiser state + position restored into a fresh model and trainer.
 * Throughput: 2 epochs per run, runs interleaved none/every-epoch REPS times (the
 * machine is shared), medians compared, in wall and in process-CPU seconds; the robust
 * overhead is the wall time inside the saves over the training time of the same run.
 * Prints one "name value" line per figure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rt.h"
#include "rt_ckpt_train.h"

static const char *SPEC = "conv2d 32 3\nrelu\nconv2d 64 3\nrelu\nmaxpool 2\ndropout 0.25\n"
                          "flatten\ndense 128\nrelu\ndropout 0.5\ndense 10\n";
enum { B = 64 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct run {
    rt_backend b;
    rt_model *m;
    rt_trainer *t;
} run;

static rt_status start(run *r, const rt_dataset *d, rt_error *err)
{
    memset(r, 0, sizeof *r);
    rt_model_input in = {d->c, d->h, d->w, d->num_classes};
    RT_TRY(rt_backend_open(&r->b, "cpu", 0, err));
    RT_TRY(rt_model_create(&r->m, SPEC, &in, err));
    RT_TRY(rt_model_attach(r->m, &r->b, B, 1, err));
    rt_trainer_config c = rt_trainer_config_default();
    c.epochs = 1000;
    c.batch_size = B;
    RT_TRY(rt_trainer_create(&r->t, r->m, d, &c, err));
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
    rt_ckpt_train_info info = {.model_name = "mnist", .hyperparameters = "{\"batch\":64}"};
    rt_status st = rt_ckpt_train_save(path, r->m, &s, &info, err);
    rt_ckpt_train_snap_deinit(&s);
    return st;
}

static rt_status load(run *r, const char *path, rt_error *err)
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

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* `epochs` epochs, saving at every epoch end when path != NULL: wall and process-CPU
 * seconds of the whole, and wall seconds spent inside the saves. */
static rt_status timed_epochs(run *r, int epochs, const char *path, double *wall, double *cpu,
                              double *in_save, rt_error *err)
{
    int64_t spe = rt_trainer_steps_per_epoch(r->t), end = (int64_t)epochs * spe;
    double t0 = now(), c0 = cpu_now();
    *in_save = 0;
    for (int64_t i = 0; i < end; i++) {
        rt_step_event ev;
        RT_TRY(rt_trainer_step(r->t, &ev, err));
        if (ev == RT_STEP_EPOCH_END && path) {
            double s0 = now();
            RT_TRY(save(r, path, err));
            *in_save += now() - s0;
        }
    }
    *wall = now() - t0;
    *cpu = cpu_now() - c0;
    return RT_OK;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    int steps = argc > 2 ? atoi(argv[2]) : 100, reps = argc > 3 ? atoi(argv[3]) : 3;
    rt_error err = {0};
    rt_dataset_splits sp;
    rt_dataset_opts o = {.name = "fashion-mnist"};
    if (rt_dataset_load(&sp, &o, &err) != RT_OK) {
        fprintf(stderr, "resume_bench: %s\n", err.msg);
        return 77;
    }
    int n_all = sp.train.n;
    sp.train.n = steps * B < n_all ? steps * B : n_all;
    char path[1024];
    snprintf(path, sizeof path, "%s/resume_bench-%d.safetensors", dir, (int)getpid());
    run r, r2;
    memset(&r, 0, sizeof r);
    memset(&r2, 0, sizeof r2);
    double s_save[9], s_load[9], t_none[16], t_ckpt[16];
    int rc = 1;
    if (start(&r, &sp.train, &err) != RT_OK || start(&r2, &sp.train, &err) != RT_OK) goto out;
    for (int i = 0; i < 10; i++) { /* some Adam state worth saving */
        rt_step_event ev;
        if (rt_trainer_step(r.t, &ev, &err) != RT_OK) goto out;
    }
    for (int i = 0; i < 9; i++) {
        double t0 = now();
        if (save(&r, path, &err) != RT_OK) goto out;
        s_save[i] = now() - t0;
        t0 = now();
        if (load(&r2, path, &err) != RT_OK) goto out;
        s_load[i] = now() - t0;
    }
    FILE *f = fopen(path, "rb");
    long size = 0;
    if (f && fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (f) fclose(f);
    printf("params %ld\ncheckpoint_bytes %ld\n", rt_model_num_params(r.m), size);
    printf("save_s %.4f\nload_s %.4f\n", median(s_save, 9), median(s_load, 9));
    fflush(stdout);
    double c_none[16], c_ckpt[16], frac[16], ignored;
    for (int i = 0; i < reps && i < 16; i++) {
        double in_save;
        if (timed_epochs(&r, 2, NULL, &t_none[i], &c_none[i], &ignored, &err) != RT_OK ||
            timed_epochs(&r, 2, path, &t_ckpt[i], &c_ckpt[i], &in_save, &err) != RT_OK)
            goto out;
        frac[i] = in_save / (t_ckpt[i] - in_save);
    }
    /* a step's uncontended wall time ~ its CPU time over the cores it runs on */
    long cores = sysconf(_SC_NPROCESSORS_ONLN) > 0 ? sysconf(_SC_NPROCESSORS_ONLN) : 1;
    double img = 2.0 * (double)sp.train.n;
    double step_s = median(c_none, reps) / (2.0 * steps) / (double)cores;
    printf("epoch_steps %d\nimages_per_s_none %.1f\nimages_per_s_every_epoch %.1f\n", steps,
           img / median(t_none, reps), img / median(t_ckpt, reps));
    printf("images_per_cpu_s_none %.1f\nimages_per_cpu_s_every_epoch %.1f\n",
           img / median(c_none, reps), img / median(c_ckpt, reps));
    /* the robust figure on a shared machine: time inside saves / time training, measured
     * in the same run */
    printf("overhead_every_%d_steps_pct %.2f\n", steps, 100.0 * median(frac, reps));
    printf("overhead_every_real_epoch_938_steps_pct %.3f\n",
           100.0 * median(s_save, 9) / (938.0 * step_s));
    printf("overhead_one_per_minute_pct %.3f\n", 100.0 * median(s_save, 9) / 60.0);
    rc = 0;
out:
    if (rc) fprintf(stderr, "resume_bench: %s\n", err.msg);
    stop(&r);
    stop(&r2);
    unlink(path);
    sp.train.n = n_all;
    rt_dataset_splits_deinit(&sp);
    return rc;
}
