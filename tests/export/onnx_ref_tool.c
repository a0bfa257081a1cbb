/* onnx_ref_tool.c - what Kiln computes on a test split, for the onnxruntime comparison
 * (test_onnx_export.py).
 *
 *   onnx_ref_tool RUN_DIR DATA_DIR SIZE CHANNELS OUT_PREFIX
 *
 * Loads the image folder DATA_DIR as %dataset DATA_DIR --size SIZE --channels CHANNELS
 * does (the decode cache is KILN_IMAGE_CACHE), and the newest checkpoint of RUN_DIR as
 * the model its export describes (rt_onnx_model_load) on the CPU. Over the whole test
 * split (at most 64 images) it writes, raw little-endian:
 *   OUT_PREFIX.pixels  float32 (N, C, H, W): the loaded pixels / 255, the ONNX input
 *   OUT_PREFIX.logits  float32 (N, K): the model's logits (forward in evaluation mode)
 *   OUT_PREFIX.pred    int32 (N): the class %predict shows (rt_trainer_evaluate)
 *   OUT_PREFIX.labels  uint8 (N)
 * and prints "N C H W K". Exit 0, or 1 with the error on stderr.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_ckpt_dir.h"
#include "rt_dataset.h"
#include "rt_onnx.h"
#include "rt_trainer.h"

static int put(const char *prefix, const char *ext, const void *data, size_t bytes)
{
    char path[1024];
    snprintf(path, sizeof path, "%s.%s", prefix, ext);
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(data, 1, bytes, f) == bytes;
    if (f && fclose(f) != 0) ok = 0;
    return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: onnx_ref_tool RUN_DIR DATA_DIR SIZE CHANNELS OUT_PREFIX\n");
        return 2;
    }
    rt_error err = {0};
    rt_dataset_splits s = {0};
    rt_dataset_opts o = {.name = argv[2],
                         .image_h = atoi(argv[3]),
                         .image_w = atoi(argv[3]),
                         .channels = atoi(argv[4])};
    rt_backend b = {0};
    rt_model *m = NULL;
    rt_ckpt_reader *r = NULL;
    char *ckpt = NULL, *skipped = NULL;
    float *pixels = NULL, *normed = NULL, *logits = NULL;
    int32_t *pred = NULL;
    uint8_t *px = NULL;
    rt_eval_result *e = malloc(sizeof *e);
    int rc = 1;
    if (!e || rt_dataset_load(&s, &o, &err) || rt_ckpt_dir_latest(argv[1], &ckpt, &skipped, &err) ||
        rt_ckpt_reader_open(ckpt, 0, &r, &err) || rt_backend_open(&b, "cpu", 1, &err))
        goto out;
    rt_dataset *t = &s.test;
    if (t->n > 64) t->n = 64;
    if (t->n < 1) {
        fprintf(stderr, "%s has no test split\n", argv[2]);
        goto out;
    }
    size_t img = (size_t)t->c * t->h * t->w;
    if (rt_onnx_model_load(r, &b, t->n, &m, &err)) goto out;
    int K = rt_model_input_shape(m)->num_classes;
    pixels = malloc((size_t)t->n * img * 4);
    normed = malloc((size_t)t->n * img * 4);
    logits = malloc((size_t)t->n * K * 4);
    pred = malloc((size_t)t->n * 4);
    px = malloc(img);
    if (!pixels || !normed || !logits || !pred || !px) goto out;
    for (int i = 0; i < t->n; i++) {
        rt_dataset_image_u8(t, i, px);
        for (size_t k = 0; k < img; k++) pixels[(size_t)i * img + k] = px[k] / 255.0f;
        rt_dataset_image_f32(t, i, normed + (size_t)i * img); /* what the model is fed */
    }
    if (rt_backend_upload(&b, rt_model_input_tensor(m), normed, (size_t)t->n * img * 4, &err) ||
        rt_model_forward(m, t->n, 0, 0, &err) || rt_model_logits_read(m, t->n, logits, &err) ||
        rt_trainer_evaluate(m, t, t->n, e, &err))
        goto out;
    for (int i = 0; i < e->npreds; i++) pred[e->preds[i].index] = e->preds[i].predicted;
    if (put(argv[5], "pixels", pixels, (size_t)t->n * img * 4) ||
        put(argv[5], "logits", logits, (size_t)t->n * K * 4) ||
        put(argv[5], "pred", pred, (size_t)t->n * 4) ||
        put(argv[5], "labels", t->labels, (size_t)t->n)) {
        fprintf(stderr, "cannot write %s.*\n", argv[5]);
        goto out;
    }
    printf("%d %d %d %d %d\n", t->n, t->c, t->h, t->w, K);
    rc = 0;
out:
    if (rc && err.msg[0]) fprintf(stderr, "%s\n", err.msg);
    rt_model_destroy(m);
    if (b.ops) rt_backend_close(&b);
    rt_ckpt_reader_destroy(r);
    rt_dataset_splits_deinit(&s);
    free(ckpt), free(skipped), free(pixels), free(normed), free(logits), free(pred), free(px),
        free(e);
    return rc;
}
