/* mg_run_devices.c - %train --device with several GPUs: "cuda:0,1" (a list of
 * indices) or "cuda:all" (every usable CUDA device). The first device holds the run's
 * model (what the workspace keeps, checkpoints, evaluation); each other gets a replica
 * of the same spec and seed on a backend of its own, which the trainer drives from a
 * thread of its own (rt_trainer_config.replicas, runtime/rt_trainer_replicas.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg_run_internal.h"
#include "rt_device.h"

int mgp_devices_parse(const char *dev, int *idx, int *n, mg_error *err)
{
    *n = 0;
    if (!strcmp(dev, "cuda:all")) {
        rt_cuda_device_list *l = calloc(1, sizeof *l);
        rt_error re = {0};
        if (!l) return mg_fail(err, "MemoryError", "out of memory");
        int rc = 0; /* a failed listing is a runtime status; none listed, a value */
        if (rt_cuda_list_devices(l, &re) != RT_OK)
            rc = mg_fail_status(err, &re,
                                "%%train: --device cuda:all: no usable CUDA device (%s) "
                                "---> HINT: %%device lists what this machine has",
                                re.msg);
        else if (l->count == 0)
            rc = mg_fail(err, "ValueError",
                         "%%train: --device cuda:all: no usable CUDA device (%s) "
                         "---> HINT: %%device lists what this machine has",
                         l->why);
        if (rc < 0) {
            free(l);
            return rc;
        }
        for (int i = 0; i < l->count && *n < MG_RUN_MAX_DEVICES; i++)
            if (!l->dev[i].problem[0]) idx[(*n)++] = l->dev[i].index;
        free(l);
        if (*n == 0)
            return mg_fail(err, "ValueError",
                           "%%train: --device cuda:all: no CUDA device "
                           "this Kiln can use ---> HINT: %%device says why");
        return 0;
    }
    if (strncmp(dev, "cuda:", 5) || !strchr(dev, ',')) return 0; /* one device */
    const char *p = dev + 5;
    while (*p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v >= RT_CUDA_MAX_DEVICES || (*end && *end != ','))
            return mg_fail(err, "ValueError",
                           "%%train: --device %s: expected cuda:N,M,... "
                           "(device indices from 0) or cuda:all",
                           dev);
        for (int i = 0; i < *n; i++)
            if (idx[i] == v)
                return mg_fail(err, "ValueError",
                               "%%train: --device %s: cuda:%ld is named "
                               "twice",
                               dev, v);
        if (*n == MG_RUN_MAX_DEVICES)
            return mg_fail(err, "ValueError", "%%train: --device %s: at most %d devices", dev,
                           MG_RUN_MAX_DEVICES);
        idx[(*n)++] = (int)v;
        p = *end ? end + 1 : end;
    }
    return 0;
}

int mgp_devices_open_replicas(mg_run *r, const int *idx, int n, mg_error *err)
{
    const rt_dataset *tr = &r->data->splits.train;
    rt_model_input in = {tr->c, tr->h, tr->w, tr->num_classes};
    const int held = (r->o.batch + n - 1) / n; /* each device's share of the batch */
    for (int i = 1; i < n; i++) {
        char name[32];
        rt_error re = {0};
        snprintf(name, sizeof name, "cuda:%d", idx[i]);
        rt_backend *b = calloc(1, sizeof *b);
        if (!b) return mg_fail(err, "MemoryError", "out of memory");
        if (rt_backend_open(b, name, 0, &re) != RT_OK) {
            free(b);
            return mg_fail_status(err, &re, "%%train: --device %s: %s", r->o.device, re.msg);
        }
        r->rep_b[r->nrep] = b;
        if (mgp_set_precision(r, b, err) < 0) return -1;
        if (rt_model_create(&r->rep_m[r->nrep], r->spec, &in, &re) != RT_OK ||
            rt_model_attach(r->rep_m[r->nrep], b, held, r->o.seed, &re) != RT_OK)
            return mg_fail_status(err, &re, "%%train: model '%s' on %s: %s", r->model_name, name,
                                  re.msg);
        r->nrep++;
    }
    return 0;
}

void mgp_devices_free(mg_run *r)
{
    for (int i = 0; i < MG_RUN_MAX_DEVICES; i++) {
        rt_model_destroy(r->rep_m[i]);
        if (r->rep_b[i]) {
            rt_backend_close(r->rep_b[i]);
            free(r->rep_b[i]);
        }
        r->rep_m[i] = NULL;
        r->rep_b[i] = NULL;
    }
    r->nrep = 0;
}
