/* zoo_names_tool.c - prints a model's tensors for the zoo's PyTorch comparison
 * (test_zoo_torch.py): no backend, no data, only what rt_model_create infers.
 *
 *   zoo_names_tool NETWORK|SPEC_FILE CxHxW CLASSES
 *
 * Output: "params N" (trainable parameters), then one line a tensor in checkpoint order:
 * "NAME D0xD1x... param|buffer". Exit 1 with the error on stderr. */
#include <stdio.h>
#include <stdlib.h>

#include "rt_model.h"

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *s = malloc(RT_MODEL_ZOO_SPEC_MAX);
    size_t n = s ? fread(s, 1, RT_MODEL_ZOO_SPEC_MAX - 1, f) : 0;
    fclose(f);
    if (s) s[n] = 0;
    return s;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: zoo_names_tool NETWORK|SPEC_FILE CxHxW CLASSES\n");
        return 2;
    }
    rt_model_input in = {0};
    if (sscanf(argv[2], "%dx%dx%d", &in.c, &in.h, &in.w) != 3) return 2;
    in.num_classes = atoi(argv[3]);
    rt_error err = {0};
    char *spec = malloc(RT_MODEL_ZOO_SPEC_MAX);
    if (spec && rt_model_zoo_spec(argv[1], &in, spec, RT_MODEL_ZOO_SPEC_MAX, &err) != RT_OK) {
        free(spec);
        spec = slurp(argv[1]);
    }
    if (!spec) {
        fprintf(stderr, "%s: %s\n", argv[1], err.msg);
        return 1;
    }
    rt_model *m = NULL;
    if (rt_model_create(&m, spec, &in, &err) != RT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        free(spec);
        return 1;
    }
    printf("params %ld\n", rt_model_num_params(m));
    int n = rt_model_num_tensors(m), rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        rt_named_tensor t;
        if (rt_model_tensor(m, i, &t, &err) != RT_OK) {
            fprintf(stderr, "%s\n", err.msg);
            rc = 1;
            break;
        }
        printf("%s ", t.name);
        for (int d = 0; d < t.ndim; d++) printf("%s%d", d ? "x" : "", t.shape[d]);
        printf(" %s\n", t.trainable ? "param" : "buffer");
    }
    rt_model_destroy(m);
    free(spec);
    return rc;
}
