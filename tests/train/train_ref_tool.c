/* train_ref_tool.c - a few training steps of rt_trainer with the step-level controls,
 * for the PyTorch comparison (test_controls_torch.py).
 *
 *   train_ref_tool OUT.safetensors BATCH ACCUMULATE CLIP_NORM CLIP_VALUE SMOOTHING STEPS
 *                  [DEVICE_PATH [DEVICE]]
 *
 * The model is conv2d 4 3 pad=1, relu, maxpool 2, flatten, dense 4 (no batch norm or
 * dropout, whose per-micro-batch statistics and masks accumulation does not reproduce)
 * on 40 quadrant images (tests/quadrants.h), trained in data-set order (no shuffle)
 * with SGD lr 0.1, momentum 0.9, seed 7, for STEPS updates. DEVICE_PATH 1 takes the
 * trainer's device path on the CPU backend; DEVICE "cuda" the CUDA backend (the mock
 * device in tests/gpu). Written: "init/I" and "final/I", tensor I of the model (its
 * enumeration order) before and after; "losses" (STEPS) from the progress reports;
 * "data" and "labels". Exit 0, 1 with the error on stderr, 77 when DEVICE cannot open.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quadrants.h"
#include "rt_ckpt.h"
#include "rt_model.h"
#include "rt_trainer.h"

#define NIMG 40
#define MAXSTEPS 64

static double losses[MAXSTEPS];

static void on_progress(const rt_progress *p, void *user)
{
    (void)user;
    if (p->step >= 1 && p->step <= MAXSTEPS) losses[p->step - 1] = p->loss;
}

static rt_status add(rt_ckpt_writer *w, const char *name, int ndim, const int64_t *shape,
                     const float *v, rt_error *err)
{
    return rt_ckpt_writer_add_tensor(w, name, RT_ST_F32, ndim, shape, v, err);
}

/* The writer keeps pointers until it saves: the copies live until the end. */
static float *keep[64];
static char names[64][32];
static int nkeep;

/* Every model tensor as PREFIX/I. */
static rt_status add_model(rt_ckpt_writer *w, rt_model *m, const char *prefix, rt_error *err)
{
    for (int i = 0; i < rt_model_num_tensors(m); i++) {
        rt_named_tensor nt;
        RT_TRY(rt_model_tensor(m, i, &nt, err));
        float *h = nkeep < 64 ? malloc(nt.numel * sizeof *h) : NULL;
        if (!h) return RT_ERR(err, RT_ENOMEM, "out of memory");
        keep[nkeep++] = h;
        int64_t shape[4];
        for (int d = 0; d < nt.ndim; d++) shape[d] = nt.shape[d];
        char *name = names[nkeep - 1];
        snprintf(name, sizeof names[0], "%s/%d", prefix, i);
        rt_status s = rt_model_tensor_read(m, i, h, err);
        if (s == RT_OK) s = add(w, name, nt.ndim, shape, h, err);
        RT_TRY(s);
    }
    return RT_OK;
}

int main(int argc, char **argv)
{
    if (argc < 8 || argc > 10) {
        fprintf(stderr, "usage: train_ref_tool OUT BATCH ACCUMULATE CLIP_NORM CLIP_VALUE "
                        "SMOOTHING STEPS [DEVICE_PATH [DEVICE]]\n");
        return 2;
    }
    const char *device = argc == 10 ? argv[9] : "cpu";
    int steps = atoi(argv[7]);
    if (steps < 1 || steps > MAXSTEPS) return 2;
    rt_dataset d;
    quadrants_make(&d, NIMG, 99, 0.5f, "controls/train");
    rt_model_input in = {1, 8, 8, 4};
    rt_backend b = {0};
    rt_model *m = NULL;
    rt_trainer *t = NULL;
    rt_ckpt_writer *w = NULL;
    rt_error err = {0};
    int rc = 1;
    rt_trainer_config c = rt_trainer_config_default();
    c.batch_size = atoi(argv[2]);
    c.accumulate = atoi(argv[3]);
    c.clip_norm = atof(argv[4]);
    c.clip_value = atof(argv[5]);
    c.label_smoothing = atof(argv[6]);
    c.device_path = argc >= 9 && atoi(argv[8]) != 0;
    c.shuffle = 0;
    c.lr = 0.1;
    c.optim = rt_optim_config_default(RT_OPTIM_SGD);
    c.optim.momentum = 0.9;
    c.progress = on_progress;
    if (rt_backend_open(&b, device, strcmp(device, "cpu") ? 0 : 1, &err) != RT_OK) {
        printf("SKIP: no %s backend (%s)\n", device, err.msg);
        quadrants_free(&d);
        return 77;
    }
    int64_t per =
        (NIMG + (int64_t)c.batch_size * c.accumulate - 1) / ((int64_t)c.batch_size * c.accumulate);
    c.epochs = (int)((steps + per - 1) / per);
    if (rt_model_create(&m, "conv2d 4 3 pad=1\nrelu\nmaxpool 2\nflatten\ndense 4\n", &in, &err) ||
        rt_model_attach(m, &b, c.batch_size, 7, &err) || rt_ckpt_writer_create(&w, &err) ||
        add_model(w, m, "init", &err) || rt_trainer_create(&t, m, &d, &c, &err) ||
        rt_trainer_begin(t, &err))
        goto out;
    for (int k = 0; k < steps; k++) {
        rt_step_event ev;
        if (rt_trainer_step(t, &ev, &err)) goto out;
    }
    float lf[MAXSTEPS], labf[NIMG];
    if (rt_trainer_end(t, NULL, &err)) goto out; /* the device path reports the last steps */
    for (int k = 0; k < steps; k++) lf[k] = (float)losses[k];
    for (int i = 0; i < NIMG; i++) labf[i] = d.labels[i];
    int64_t ls[1] = {steps}, ds[4] = {NIMG, 1, 8, 8}, ns[1] = {NIMG};
    if (add_model(w, m, "final", &err) || add(w, "losses", 1, ls, lf, &err) ||
        add(w, "data", 4, ds, d.images, &err) || add(w, "labels", 1, ns, labf, &err) ||
        rt_ckpt_writer_set_meta_i64(w, "step", steps, &err) ||
        rt_ckpt_writer_set_meta_i64(w, "epoch", 0, &err) || rt_ckpt_writer_save(w, argv[1], &err))
        goto out;
    rc = 0;
out:
    if (rc) fprintf(stderr, "train_ref_tool: %s\n", err.msg);
    rt_ckpt_writer_destroy(w);
    for (int i = 0; i < nkeep; i++) free(keep[i]);
    rt_trainer_destroy(t);
    rt_model_destroy(m);
    rt_backend_close(&b);
    quadrants_free(&d);
    return rc;
}
