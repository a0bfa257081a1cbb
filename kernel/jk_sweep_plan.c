/* jk_sweep_plan.c - where a sweep's variants run: its slots, one variant at a time
 * each. --devices cpu: --parallel N slots (default 1) share the cores this process may
 * use (its affinity mask), cores/N each, every slot pinned to its own cores, so N
 * variants never ask for more threads than there are cores (N is capped at the number
 * of cores). --devices cuda:0,1: one slot per GPU (--parallel at most the number of
 * GPUs, by default all of them), each with its share of the cores; the variants left
 * wait for a free slot. --devices all (the default): every GPU, or the CPU without one. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jk_sweep.h"
#include "rt_device.h"

static int parse_cuda(const char *spec, int *idx, int *n)
{
    const char *p = spec + 5; /* after "cuda:" */
    *n = 0;
    while (*p) {
        char *end;
        long k = strtol(p, &end, 10);
        if (end == p || k < 0 || k >= RT_CUDA_MAX_DEVICES || (*end && *end != ',')) return -1;
        for (int i = 0; i < *n; i++)
            if (idx[i] == k) return -1;
        idx[(*n)++] = (int)k;
        p = *end ? end + 1 : end;
    }
    return *n ? 0 : -1;
}

int jk_sweep_plan(jk_sweep *sw)
{
    cpu_set_t set;
    int cpus[JK_SWEEP_MAX_SLOTS], ncpu = 0;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        for (int c = 0; c < CPU_SETSIZE && ncpu < JK_SWEEP_MAX_SLOTS; c++)
            if (CPU_ISSET(c, &set)) cpus[ncpu++] = c;
    }
    const char *dev = sw->devices ? sw->devices : "all";
    int gpus[RT_CUDA_MAX_DEVICES], ngpu = 0;
    if (!strcmp(dev, "all") || !strcmp(dev, "cuda:all")) {
        rt_cuda_device_list list;
        rt_error err = {0};
        if (rt_cuda_list_devices(&list, &err) == RT_OK)
            for (int i = 0; i < list.count; i++)
                if (!list.dev[i].problem[0]) gpus[ngpu++] = i;
        if (!ngpu && !strcmp(dev, "cuda:all"))
            return fprintf(stderr, "kiln sweep: --devices cuda:all: no usable GPU (%s)\n",
                           list.count ? "none this build can use" : list.why),
                   -1;
    } else if (!strncmp(dev, "cuda:", 5)) {
        if (parse_cuda(dev, gpus, &ngpu) < 0)
            return fprintf(stderr,
                           "kiln sweep: --devices %s: expected cpu, all or cuda:0,1 (distinct "
                           "device numbers)\n",
                           dev),
                   -1;
    } else if (strcmp(dev, "cpu")) {
        return fprintf(stderr, "kiln sweep: --devices %s: expected cpu, all or cuda:0,1\n", dev),
               -1;
    }
    if (ncpu < 1) ncpu = 1, cpus[0] = -1; /* unknown mask: one core, unpinned */
    int n = ngpu ? ngpu : sw->parallel ? sw->parallel : 1;
    if (ngpu && sw->parallel && sw->parallel < ngpu) n = sw->parallel;
    if (ngpu && sw->parallel > ngpu)
        fprintf(stderr, "kiln sweep: --parallel %d: one variant per GPU, so %d at once\n",
                sw->parallel, ngpu);
    if (!ngpu && n > ncpu) {
        fprintf(stderr,
                "kiln sweep: --parallel %d: %d core%s, so %d at once (one thread each, "
                "never more threads than cores)\n",
                n, ncpu, ncpu == 1 ? "" : "s", ncpu);
        n = ncpu;
    }
    if (n > sw->nv && sw->nv > 0) n = sw->nv; /* no idle slot takes cores from the others */
    sw->nslots = n;
    int per = ncpu / n > 0 ? ncpu / n : 1;
    for (int s = 0; s < n; s++) {
        jk_slot *sl = &sw->slots[s];
        memset(sl, 0, sizeof *sl);
        if (ngpu) snprintf(sl->device, sizeof sl->device, "cuda:%d", gpus[s]);
        else snprintf(sl->device, sizeof sl->device, "cpu");
        sl->threads = per;
        for (int c = 0; c < per && cpus[0] >= 0 && s * per + c < ncpu; c++)
            sl->cores[sl->ncores++] = cpus[s * per + c];
    }
    return 0;
}
