/* model.c - fuzz target: `%%model` specs (rt_model_create: line parser, options,
 * shape inference, the last-layer check, the summary), the canonical spec round
 * trip, and - for small models - one forward/loss/backward step on the CPU backend,
 * so that shapes the parser accepts are shapes the layers really compute on.
 * Input: 4 bytes of input shape (C 1..4, H 1..40, W 1..40, classes 0..12), then the
 * spec text. Invariants: errors name a line; the canonical spec builds the same
 * layers with the same parameter count; every summary shape is positive. */
#include <string.h>

#include "fz.h"
#include "rt_model.h"

#define MAX_PARAMS 20000L
#define MAX_ACTIVATIONS 60000L
#define BATCH 2

static void run_step(rt_model *m, const rt_model_input *in)
{
    rt_backend b;
    rt_error err = {0};
    if (rt_backend_open(&b, "cpu", 1, &err) != RT_OK) return;
    if (rt_model_attach(m, &b, BATCH, 7, &err) == RT_OK) {
        size_t nx = (size_t)BATCH * (size_t)(in->c * in->h * in->w);
        float *x = calloc(nx, sizeof *x);
        int32_t y[BATCH] = {0, in->num_classes - 1};
        for (size_t i = 0; x && i < nx; i++) x[i] = (float)((i * 37) % 17) / 8.0f - 1.0f;
        rt_backend *be = rt_model_backend(m);
        double loss = 0;
        if (x &&
            rt_backend_upload(be, rt_model_input_tensor(m), x, nx * sizeof *x, &err) == RT_OK &&
            rt_backend_upload(be, rt_model_label_tensor(m), y, sizeof y, &err) == RT_OK &&
            rt_model_forward(m, BATCH, 1, 1, &err) == RT_OK &&
            rt_model_loss(m, BATCH, &loss, NULL, NULL, &err) == RT_OK) {
            FZ_CHECK(loss == loss); /* not NaN on these inputs */
            FZ_CHECK(rt_model_backward(m, BATCH, &err) == RT_OK);
        }
        free(x);
    }
    rt_model_destroy(m);
    rt_backend_close(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4) return 0;
    rt_model_input in = {1 + data[0] % 4, 1 + data[1] % 40, 1 + data[2] % 40, data[3] % 13};
    char *spec = fz_strdup(data + 4, size - 4);
    if (!spec) return 0;
    rt_model *m = NULL;
    rt_error err = {0};
    if (rt_model_create(&m, spec, &in, &err) != RT_OK) {
        FZ_CHECK(m == NULL && err.msg[0]);
        free(spec);
        return 0;
    }
    int n = 0, n2 = 0;
    long total = 0, total2 = 0, acts = 0;
    const rt_summary_row *rows = rt_model_summary(m, &n, &total);
    FZ_CHECK(total >= 0);
    for (int i = 0; i < n; i++) {
        FZ_CHECK(rows[i].out_c > 0 && rows[i].out_h > 0 && rows[i].out_w > 0 &&
                 rows[i].params >= 0);
        acts += (long)rows[i].out_c * rows[i].out_h * rows[i].out_w;
    }
    rt_model *m2 = NULL;
    FZ_CHECK(rt_model_create(&m2, rt_model_spec_canonical(m), &in, &err) == RT_OK);
    const rt_summary_row *rows2 = rt_model_summary(m2, &n2, &total2);
    FZ_CHECK(n2 == n && total2 == total);
    for (int i = 0; i < n; i++) {
        FZ_CHECK(!strcmp(rows[i].spec, rows2[i].spec));
        FZ_CHECK(rows[i].out_c == rows2[i].out_c && rows[i].out_h == rows2[i].out_h &&
                 rows[i].out_w == rows2[i].out_w && rows[i].params == rows2[i].params);
    }
    rt_model_destroy(m2);
    if (in.num_classes > 0 && n > 0 && total <= MAX_PARAMS && acts <= MAX_ACTIVATIONS)
        run_step(m, &in);
    else rt_model_destroy(m);
    free(spec);
    return 0;
}
