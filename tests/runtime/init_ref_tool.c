/* init_ref_tool.c - a shipped network started from a safetensors state_dict (--init),
 * run forward in eval mode, for test_init_torch.py.
 *
 *   init_ref_tool NETWORK CxHxW CLASSES WEIGHTS INPUT N OUT [strict]
 *
 * INPUT: N x C x H x W little-endian float32, raw. OUT gets the N x CLASSES logits, raw.
 * Prints the --init report line. Exit 1 with the error on stderr (a strict mismatch
 * too). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_model.h"
#include "rt_model_init.h"

static int rw(const char *path, void *buf, size_t n, int write)
{
    FILE *f = fopen(path, write ? "wb" : "rb");
    if (!f) return -1;
    size_t got = write ? fwrite(buf, 1, n, f) : fread(buf, 1, n, f);
    return (fclose(f) == 0 && got == n) ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc != 8 && argc != 9) {
        fprintf(stderr,
                "usage: init_ref_tool NETWORK CxHxW CLASSES WEIGHTS INPUT N OUT [strict]\n");
        return 2;
    }
    rt_model_input in = {0};
    if (sscanf(argv[2], "%dx%dx%d", &in.c, &in.h, &in.w) != 3) return 2;
    in.num_classes = atoi(argv[3]);
    int N = atoi(argv[6]), strict = argc == 9, rc = 1;
    rt_error err = {0};
    rt_backend b;
    rt_model *m = NULL;
    rt_init_report rep;
    size_t X = (size_t)N * in.c * in.h * in.w;
    char *spec = malloc(RT_MODEL_ZOO_SPEC_MAX);
    float *x = malloc(X * 4), *logits = malloc((size_t)N * in.num_classes * 4);
    int opened = 0;
    if (!spec || !x || !logits || N < 1) goto out;
    if (rw(argv[5], x, X * 4, 0)) {
        snprintf(err.msg, sizeof err.msg, "cannot read %s", argv[5]);
        goto out;
    }
    if (rt_model_zoo_spec(argv[1], &in, spec, RT_MODEL_ZOO_SPEC_MAX, &err) ||
        rt_backend_open(&b, "cpu", 1, &err))
        goto out;
    opened = 1;
    if (rt_model_create(&m, spec, &in, &err) || rt_model_attach(m, &b, N, 1, &err) ||
        rt_model_init_file(m, argv[4], strict, &rep, &err))
        goto out;
    char line[800];
    rt_init_report_text(&rep, line, sizeof line);
    printf("%s\n", line);
    if (rt_backend_upload(&b, rt_model_input_tensor(m), x, X * 4, &err) ||
        rt_model_forward(m, N, 0, 0, &err) || rt_model_logits_read(m, N, logits, &err))
        goto out;
    if (rw(argv[7], logits, (size_t)N * in.num_classes * 4, 1)) {
        snprintf(err.msg, sizeof err.msg, "cannot write %s", argv[7]);
        goto out;
    }
    rc = 0;
out:
    if (rc) fprintf(stderr, "init_ref_tool: %s\n", err.msg);
    rt_model_destroy(m);
    if (opened) rt_backend_close(&b);
    free(spec);
    free(x);
    free(logits);
    return rc;
}
