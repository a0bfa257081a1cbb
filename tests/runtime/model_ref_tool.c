/* model_ref_tool.c - one training step's numbers of a Kiln model, for the PyTorch
 * comparison (test_resnet_torch.py).
 *
 *   model_ref_tool SPEC_FILE|resnet20 CxHxW CLASSES N OUT.safetensors [BATCH_SEED [DEVICE]]
 *
 * Builds the model on DEVICE's backend ("cpu", the default, one thread, or "cuda"; seed
 * 42), makes a batch (inputs uniform in
 * [-1, 1] from the user RNG stream of BATCH_SEED, 5 unless given; labels i % CLASSES), runs forward in training mode,
 * the mean cross-entropy and backward, and writes one safetensors file: every model
 * tensor under its checkpoint name (the weights before the step; BN running stats after
 * it), "input", "labels" (as float), "probs", "loss" and "grad/<name>" for every
 * trainable tensor. Exit 0, or 1 with the error on stderr; 77 (meson's skip) when DEVICE
 * cannot be opened.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_ckpt.h"
#include "rt_model.h"
#include "rt_optim.h"
#include "rt_rng.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *s = calloc(1, 1 << 16);
    size_t n = s ? fread(s, 1, (1 << 16) - 1, f) : 0;
    fclose(f);
    if (s) s[n] = 0;
    return s;
}

int main(int argc, char **argv)
{
    if (argc < 6 || argc > 8) {
        fprintf(stderr,
                "usage: model_ref_tool SPEC|resnet20 CxHxW CLASSES N OUT [BATCH_SEED [DEVICE]]\n");
        return 2;
    }
    uint64_t batch_seed = argc >= 7 ? strtoull(argv[6], NULL, 10) : 5;
    const char *device = argc == 8 ? argv[7] : "cpu";
    rt_model_input in = {0};
    if (sscanf(argv[2], "%dx%dx%d", &in.c, &in.h, &in.w) != 3) return 2;
    in.num_classes = atoi(argv[3]);
    int N = atoi(argv[4]);
    rt_error err = {0};
    char *spec = malloc(RT_MODEL_ZOO_SPEC_MAX);
    if (spec && rt_model_zoo_spec(argv[1], &in, spec, RT_MODEL_ZOO_SPEC_MAX, NULL) != RT_OK) {
        free(spec);
        spec = slurp(argv[1]);
    }
    if (!spec) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 1;
    }
    rt_backend b = {0};
    rt_model *m = NULL;
    rt_named_tensor *info = NULL;
    rt_ckpt_writer *w = NULL;
    size_t X = (size_t)N * in.c * in.h * in.w;
    float *x = malloc(X * 4), *labf = malloc((size_t)N * 4), *grads = NULL,
          *probs = malloc((size_t)N * in.num_classes * 4);
    int32_t *lab = malloc((size_t)N * 4);
    float **host = NULL;
    int nt = 0, rc = 1;
    double loss = 0;
    if (!x || !labf || !probs || !lab) goto out;
    for (int i = 0; i < N; i++) lab[i] = i % in.num_classes, labf[i] = (float)lab[i];
    rt_rng r = rt_rng_stream(batch_seed, RT_RNG_USER, 0, 0);
    rt_rng_fill_uniform(&r, x, X, -1.0f, 1.0f);
    if (rt_backend_open(&b, device, strcmp(device, "cpu") ? 0 : 1, &err) != RT_OK) {
        printf("SKIP: no %s backend (%s)\n", device, err.msg);
        rc = 77;
        goto out;
    }
    if (rt_model_create(&m, spec, &in, &err) || rt_model_attach(m, &b, N, 42, &err)) goto out;
    nt = rt_model_num_tensors(m);
    host = calloc((size_t)nt * 2, sizeof *host);
    info = calloc((size_t)nt, sizeof *info);
    if (!host || !info) goto out;
    for (int i = 0; i < nt; i++) { /* weights before the step */
        if (rt_model_tensor(m, i, &info[i], &err)) goto out;
        host[i] = malloc(info[i].numel * 4);
        if (!host[i] || rt_model_tensor_read(m, i, host[i], &err)) goto out;
    }
    if (rt_backend_upload(&b, rt_model_input_tensor(m), x, X * 4, &err) ||
        rt_backend_upload(&b, rt_model_label_tensor(m), lab, (size_t)N * 4, &err) ||
        rt_model_forward(m, N, 1, 0, &err) || rt_model_loss(m, N, &loss, probs, NULL, &err) ||
        rt_model_backward(m, N, &err))
        goto out;
    if (rt_ckpt_writer_create(&w, &err)) goto out;
    const rt_tensor *gflat = rt_model_grads_flat(m); /* host copy: the backend's may be a GPU */
    if (!(grads = malloc(rt_tensor_bytes(gflat))) ||
        rt_backend_download(&b, grads, gflat, rt_tensor_bytes(gflat), &err))
        goto out;
    const float *g = grads;
    char names[512][80];
    int nn = 0;
    for (int i = 0; i < nt; i++) {
        int64_t shape[4];
        for (int d = 0; d < info[i].ndim; d++) shape[d] = info[i].shape[d];
        if (!info[i].trainable && rt_model_tensor_read(m, i, host[i], &err)) goto out; /* after */
        if (rt_ckpt_writer_add_tensor(w, info[i].name, RT_ST_F32, info[i].ndim, shape, host[i],
                                      &err))
            goto out;
        if (!info[i].trainable || nn == 512) continue;
        snprintf(names[nn], sizeof names[nn], "grad/%s", info[i].name);
        if (rt_ckpt_writer_add_tensor(w, names[nn++], RT_ST_F32, info[i].ndim, shape, g, &err))
            goto out;
        g += rt_optim_align(info[i].numel); /* the flat layout (rt_model.h) */
    }
    int64_t xs[4] = {N, in.c, in.h, in.w}, ns[1] = {N}, ps[2] = {N, in.num_classes}, one[1] = {1};
    float lossf = (float)loss;
    if (rt_ckpt_writer_add_tensor(w, "input", RT_ST_F32, 4, xs, x, &err) ||
        rt_ckpt_writer_add_tensor(w, "labels", RT_ST_F32, 1, ns, labf, &err) ||
        rt_ckpt_writer_add_tensor(w, "probs", RT_ST_F32, 2, ps, probs, &err) ||
        rt_ckpt_writer_add_tensor(w, "loss", RT_ST_F32, 1, one, &lossf, &err) ||
        rt_ckpt_writer_set_meta(w, "spec", rt_model_spec_canonical(m), &err) ||
        rt_ckpt_writer_set_meta_i64(w, "step", 0, &err) ||
        rt_ckpt_writer_set_meta_i64(w, "epoch", 0, &err) || rt_ckpt_writer_save(w, argv[5], &err))
        goto out;
    printf("params %ld\nloss %.9g\n", rt_model_num_params(m), loss);
    rc = 0;
out:
    free(info);
    if (rc == 1) fprintf(stderr, "model_ref_tool: %s\n", err.msg);
    rt_ckpt_writer_destroy(w);
    for (int i = 0; host && i < nt; i++) free(host[i]);
    free(host);
    rt_model_destroy(m);
    rt_backend_close(&b);
    free(spec);
    free(grads);
    free(x);
    free(labf);
    free(probs);
    free(lab);
    return rc;
}
