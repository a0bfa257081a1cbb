/* zoo_onnx_tool.c - a shipped network (%%model NAME NETWORK) as an ONNX file and what
 * Kiln computes with it, for the onnxruntime comparison of every zoo model
 * (test_onnx_export.py).
 *
 *   zoo_onnx_tool NETWORK CxHxW CLASSES N OUT_PREFIX
 *   zoo_onnx_tool --list          (the shipped networks' names, one a line)
 *
 * Builds the network on the CPU with its initial weights (seed 42), gives every batch
 * norm running statistics of its own (means uniform in [-0.2, 0.2], variances in
 * [0.5, 1.5], so the exported normalisation is not the identity), writes
 * OUT_PREFIX.onnx (no normalisation nodes: the input is what the model is fed), and
 * for N inputs uniform in [-1, 1] (user stream 9) writes, raw little-endian:
 *   OUT_PREFIX.pixels  float32 (N, C, H, W)
 *   OUT_PREFIX.logits  float32 (N, CLASSES): the forward in evaluation mode
 * and prints "N C H W K". Exit 0, or 1 with the error on stderr.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_model.h"
#include "rt_onnx.h"
#include "rt_rng.h"

static int put(const char *prefix, const char *ext, const void *data, size_t bytes)
{
    char path[1024];
    snprintf(path, sizeof path, "%s.%s", prefix, ext);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(data, 1, bytes, f) == bytes;
    if (f && fclose(f) != 0) ok = 0;
    return ok ? 0 : -1;
}

/* running statistics of the buffers of m: their own values, not PyTorch's 0 and 1 */
static rt_status set_stats(rt_model *m, rt_error *err)
{
    rt_rng r = rt_rng_stream(8, RT_RNG_USER, 0, 0);
    for (int i = 0; i < rt_model_num_tensors(m); i++) {
        rt_named_tensor t;
        RT_TRY(rt_model_tensor(m, i, &t, err));
        if (t.trainable) continue;
        float *v = malloc(t.numel * sizeof *v);
        if (!v) return RT_ERR(err, RT_ENOMEM, "out of memory");
        int var = strstr(t.name, "running_var") != NULL;
        rt_rng_fill_uniform(&r, v, t.numel, var ? 0.5f : -0.2f, var ? 1.5f : 0.2f);
        rt_status s = rt_model_tensor_write(m, i, v, err);
        free(v);
        RT_TRY(s);
    }
    return RT_OK;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (const char *const *n = rt_model_zoo_names(); *n; n++) printf("%s\n", *n);
        return 0;
    }
    if (argc != 6) {
        fprintf(stderr, "usage: zoo_onnx_tool NETWORK CxHxW CLASSES N OUT_PREFIX\n");
        return 2;
    }
    rt_model_input in = {0};
    if (sscanf(argv[2], "%dx%dx%d", &in.c, &in.h, &in.w) != 3) return 2;
    in.num_classes = atoi(argv[3]);
    int N = atoi(argv[4]);
    if (N < 1 || in.num_classes < 1) return 2;
    rt_error err = {0};
    rt_backend b = {0};
    rt_model *m = NULL;
    char *spec = malloc(RT_MODEL_ZOO_SPEC_MAX), path[1024];
    size_t img = (size_t)in.c * in.h * in.w;
    float *pixels = malloc((size_t)N * img * 4), *logits = malloc((size_t)N * in.num_classes * 4);
    int rc = 1;
    snprintf(path, sizeof path, "%s.onnx", argv[5]);
    if (!spec || !pixels || !logits) goto out;
    rt_rng r = rt_rng_stream(9, RT_RNG_USER, 0, 0);
    rt_rng_fill_uniform(&r, pixels, (size_t)N * img, -1.0f, 1.0f);
    rt_onnx_info info = {.model_name = argv[1]};
    if (rt_model_zoo_spec(argv[1], &in, spec, RT_MODEL_ZOO_SPEC_MAX, &err) ||
        rt_backend_open(&b, "cpu", 0, &err) || rt_model_create(&m, spec, &in, &err) ||
        rt_model_attach(m, &b, N, 42, &err) || set_stats(m, &err) ||
        rt_onnx_write(m, &info, path, &err) ||
        rt_backend_upload(&b, rt_model_input_tensor(m), pixels, (size_t)N * img * 4, &err) ||
        rt_model_forward(m, N, 0, 0, &err) || rt_model_logits_read(m, N, logits, &err))
        goto out;
    if (put(argv[5], "pixels", pixels, (size_t)N * img * 4) ||
        put(argv[5], "logits", logits, (size_t)N * in.num_classes * 4)) {
        fprintf(stderr, "cannot write %s.*\n", argv[5]);
        goto out;
    }
    printf("%d %d %d %d %d\n", N, in.c, in.h, in.w, in.num_classes);
    rc = 0;
out:
    if (rc && err.msg[0]) fprintf(stderr, "%s\n", err.msg);
    rt_model_destroy(m);
    if (b.ops) rt_backend_close(&b);
    free(spec), free(pixels), free(logits);
    return rc;
}
