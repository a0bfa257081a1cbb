/* cuda_bench.c - Kiln's side of bench/cuda_bench.py: trains the PyTorch MNIST example
 * net (conv 32x3 - relu - conv 64x3 - relu - maxpool 2 - dropout .25 - flatten -
 * dense 128 - relu - dropout .5 - dense 10, Adam 1e-3) on a CUDA device for a fixed
 * number of steps and prints throughput. Not installed; not a test.
 *
 * usage: cuda_bench [--device cuda:0] [--precision fp32|bf16] [--steps N] [--warmup W]
 *                   [--batch B] [--seed S] [--synthetic] | --list
 * The data set is uploaded to the device ONCE (shuffled once on the host); a step
 * copies its minibatch device-to-device, then forward, loss, backward and the Adam
 * update run on the device. The only host round trip per step is the loss read
 * (rt_model_loss downloads the per-sample losses). rt_trainer trains on the CPU only so
 * far, so this driver steps rt_model and the backend's adam_update itself.
 * Output: "key value" lines. --list prints the devices, or "no_gpu <why>" and exits 3.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt.h"
#include "rt_cuda.h"

static const char *mnist_net =
    "conv2d 32 3\nrelu\nconv2d 64 3\nrelu\nmaxpool 2\ndropout 0.25\nflatten\n"
    "dense 128\nrelu\ndropout 0.5\ndense 10\n";

static int fail(const rt_error *e)
{
    fprintf(stderr, "cuda_bench: %s\n", e->msg);
    return 1;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int list_devices(void)
{
    rt_cuda_device_list l;
    rt_error err = {0};
    if (rt_cuda_list_devices(&l, &err) != RT_OK) return fail(&err);
    if (l.count == 0) {
        printf("no_gpu %s\n", l.why);
        return 3;
    }
    printf("driver %d\nruntime %d\n", l.driver_version, l.runtime_version);
    for (int i = 0; i < l.count; i++)
        printf("device cuda:%d %s | cc %d.%d | %.0f MiB total, %s%.0f MiB free\n", i,
               l.dev[i].name, l.dev[i].cc_major, l.dev[i].cc_minor,
               (double)l.dev[i].mem_total / 1048576.0, l.dev[i].mem_free_known ? "" : "? ",
               (double)l.dev[i].mem_free / 1048576.0);
    return 0;
}

/* Synthetic stand-in for Fashion-MNIST (same shapes), for machines without the data. */
static void synth(rt_dataset *d, int n)
{
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "synthetic");
    d->n = n, d->c = 1, d->h = 28, d->w = 28, d->num_classes = 10;
    d->images = malloc((size_t)n * 784 * 4);
    d->labels = malloc((size_t)n);
    rt_rng r = rt_rng_stream(1, RT_RNG_USER, 0, 0);
    rt_rng_fill_normal(&r, d->images, (size_t)n * 784, 0.0f, 1.0f);
    for (int i = 0; i < n; i++) d->labels[i] = (uint8_t)(i % 10);
}

/* The training set shuffled once, as device tensors (images (n,C,H,W), labels (n)). */
static rt_status upload_set(rt_backend *b, const rt_dataset *d, uint64_t seed, rt_tensor *img,
                            rt_tensor *lab, rt_error *err)
{
    const size_t per = (size_t)d->c * d->h * d->w;
    float *hi = malloc((size_t)d->n * per * 4);
    int32_t *hl = malloc((size_t)d->n * 4);
    uint32_t *perm = malloc((size_t)d->n * 4);
    rt_status s = RT_OK;
    if (!hi || !hl || !perm) s = RT_ERR(err, RT_ENOMEM, "out of host memory");
    if (s == RT_OK) {
        rt_rng r = rt_rng_stream(seed, RT_RNG_SHUFFLE, 0, 0);
        rt_rng_permutation(&r, perm, (size_t)d->n);
        for (int i = 0; i < d->n; i++) {
            memcpy(hi + (size_t)i * per, d->images + (size_t)perm[i] * per, per * 4);
            hl[i] = d->labels[perm[i]];
        }
        *img = (rt_tensor){NULL, RT_F32, d->n, d->c, d->h, d->w};
        *lab = (rt_tensor){NULL, RT_I32, d->n, 1, 1, 1};
        s = b->ops->alloc(b, &img->data, (size_t)d->n * per * 4, err);
    }
    if (s == RT_OK) s = b->ops->alloc(b, &lab->data, (size_t)d->n * 4, err);
    if (s == RT_OK) s = b->ops->upload(b, img, hi, (size_t)d->n * per * 4, err);
    if (s == RT_OK) s = b->ops->upload(b, lab, hl, (size_t)d->n * 4, err);
    free(hi), free(hl), free(perm);
    return s;
}

/* One training step on minibatch `first` .. first+B-1 of the device-resident set. */
static rt_status step(rt_model *m, rt_backend *b, const rt_tensor *img, const rt_tensor *lab,
                      int first, int B, int64_t t, rt_tensor *adam_m, rt_tensor *adam_v,
                      double *loss, rt_error *err)
{
    const size_t per = (size_t)img->c * img->h * img->w;
    rt_tensor xi = {(char *)img->data + (size_t)first * per * 4, RT_F32, B, img->c, img->h,
                    img->w};
    rt_tensor li = {(char *)lab->data + (size_t)first * 4, RT_I32, B, 1, 1, 1};
    rt_tensor *xin = rt_model_input_tensor(m), *lin = rt_model_label_tensor(m);
    rt_tensor xd = *xin, ld = *lin;
    xd.n = ld.n = B;
    RT_TRY(b->ops->copy(b, &xd, &xi, err));
    RT_TRY(b->ops->copy(b, &ld, &li, err));
    RT_TRY(rt_model_forward(m, B, 1, (uint32_t)t, err));
    RT_TRY(rt_model_loss(m, B, loss, NULL, NULL, err));
    RT_TRY(rt_model_backward(m, B, err));
    rt_adam_desc ad = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 0, t + 1};
    return b->ops->adam_update(b, rt_model_params_flat(m), adam_m, adam_v,
                               rt_model_grads_flat(m), &ad, err);
}

int main(int argc, char **argv)
{
    int steps = 200, warmup = 20, batch = 128, syn = 0;
    unsigned long long seed = 1;
    const char *device = "cuda", *prec_name = "fp32";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "0";
        if (!strcmp(a, "--list")) return list_devices();
        else if (!strcmp(a, "--steps")) steps = atoi(v), i++;
        else if (!strcmp(a, "--warmup")) warmup = atoi(v), i++;
        else if (!strcmp(a, "--batch")) batch = atoi(v), i++;
        else if (!strcmp(a, "--seed")) seed = strtoull(v, NULL, 10), i++;
        else if (!strcmp(a, "--device")) device = v, i++;
        else if (!strcmp(a, "--precision")) prec_name = v, i++;
        else if (!strcmp(a, "--synthetic")) syn = 1;
        else {
            fprintf(stderr, "cuda_bench: unknown option %s\n", a);
            return 2;
        }
    }
    rt_error err = {0};
    rt_precision prec;
    if (rt_precision_parse(prec_name, &prec, &err)) return fail(&err);
    rt_backend b;
    if (rt_backend_open(&b, device, 0, &err)) {
        if (err.code == RT_ENODEV) {
            printf("no_gpu %s\n", err.msg);
            return 3;
        }
        return fail(&err);
    }
    if (rt_cuda_set_precision(&b, prec, &err)) return fail(&err);
    rt_dataset_splits splits;
    memset(&splits, 0, sizeof splits);
    if (syn) {
        synth(&splits.train, 60000);
    } else {
        rt_dataset_opts o = {.name = "fashion-mnist"};
        if (rt_dataset_load(&splits, &o, &err)) return fail(&err);
    }
    const rt_dataset *d = &splits.train;
    rt_model *m = NULL;
    rt_model_input in = {d->c, d->h, d->w, d->num_classes};
    if (rt_model_create(&m, mnist_net, &in, &err) || rt_model_attach(m, &b, batch, seed, &err))
        return fail(&err);
    rt_tensor img, lab, am = {0}, av = {0};
    long P = rt_model_num_params(m);
    am = av = (rt_tensor){NULL, RT_F32, (int)P, 1, 1, 1};
    if (upload_set(&b, d, seed, &img, &lab, &err) ||
        b.ops->alloc(&b, &am.data, (size_t)P * 4, &err) ||
        b.ops->alloc(&b, &av.data, (size_t)P * 4, &err))
        return fail(&err);
    const int per_epoch = d->n / batch;
    double loss = 0.0, first_loss = 0.0, t0 = 0.0;
    for (int64_t t = 0; t < warmup + steps; t++) {
        if (t == warmup) {
            if (b.ops->sync(&b, &err)) return fail(&err);
            t0 = now();
        }
        if (step(m, &b, &img, &lab, (int)(t % per_epoch) * batch, batch, t, &am, &av, &loss,
                 &err))
            return fail(&err);
        if (t == 0) first_loss = loss;
    }
    if (b.ops->sync(&b, &err)) return fail(&err);
    double dt = now() - t0;
    printf("device %s\nprecision %s\ndata %s\nbatch %d\nsteps %d\nseconds %.3f\n",
           device, prec_name, d->name, batch, steps, dt);
    printf("images_per_s %.1f\nfirst_loss %.5f\nlast_loss %.5f\n",
           (double)steps * batch / dt, first_loss, loss);
    b.ops->free(&b, img.data), b.ops->free(&b, lab.data);
    b.ops->free(&b, am.data), b.ops->free(&b, av.data);
    rt_model_destroy(m);
    rt_dataset_splits_deinit(&splits);
    rt_backend_close(&b);
    return 0;
}
