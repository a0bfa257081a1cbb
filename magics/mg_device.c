/* mg_device.c - %device: what this kernel can train on. The CPU (model name, cores,
 * the threads the CPU backend and OpenBLAS use) and every CUDA device the runtime
 * lists (rt_cuda_list_devices: name, memory, compute capability, bf16), or why there
 * is none (not built / no device), which OpenBLAS the CPU backend loaded (the system's
 * or scipy-openblas32's), and which backend `--device auto` picks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mg_images.h"
#include "rt.h"

/* OpenBLAS (linked through the runtime) reports its own thread count. */
extern int openblas_get_num_threads(void);

static void cpu_name(char *buf, size_t n)
{
    snprintf(buf, n, "unknown CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon || strncmp(line, "model name", 10)) continue;
        colon++;
        while (*colon == ' ' || *colon == '\t') colon++;
        colon[strcspn(colon, "\n")] = 0;
        snprintf(buf, n, "%s", colon);
        break;
    }
    fclose(f);
}

static int run(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    if (args->npos)
        return mg_fail(err, "UsageError", "%%device takes no arguments, got '%s'", args->pos[0]);
    char cpu[256];
    cpu_name(cpu, sizeof cpu);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    rt_backend b;
    rt_error re = {0};
    int threads = 0;
    if (rt_backend_open(&b, "cpu", 0, &re) == RT_OK) {
        threads = b.threads;
        rt_backend_close(&b);
    }
    rt_cuda_device_list *l = calloc(1, sizeof *l);
    if (!l) return mg_fail(err, "MemoryError", "%%device: out of memory");
    if (rt_cuda_list_devices(l, &re) != RT_OK) {
        l->count = 0;
        snprintf(l->why, sizeof l->why, "%.200s", re.msg);
    }
    char *text = NULL, *html = NULL;
    size_t tl = 0, hl = 0;
    FILE *t = open_memstream(&text, &tl), *h = open_memstream(&html, &hl);
    if (t && h) {
        char *ec = mg_html_escape(cpu);
        fprintf(t, "cpu      %s, %ld cores; CPU backend %d threads, OpenBLAS %d threads\n", cpu,
                cores, threads, openblas_get_num_threads());
        fprintf(h,
                "<table><tr><th>device</th><th>name</th><th>details</th></tr><tr><td>cpu</td>"
                "<td>%s</td><td>%ld cores; backend %d threads, OpenBLAS %d threads</td></tr>",
                ec ? ec : "", cores, threads, openblas_get_num_threads());
        free(ec);
        char *eb = mg_html_escape(rt_cpu_blas_library());
        fprintf(t, "blas     OpenBLAS %s\n", rt_cpu_blas_library());
        fprintf(h, "<tr><td>blas</td><td>OpenBLAS</td><td>%s</td></tr>", eb ? eb : "");
        free(eb);
        for (int i = 0; i < l->count; i++) {
            const rt_cuda_device_info *d = &l->dev[i];
            char detail[256];
            snprintf(detail, sizeof detail,
                     "%.1f GiB (%.1f free), compute capability %d.%d, "
                     "%d SMs, bf16 %s",
                     (double)d->mem_total / 1073741824.0, (double)d->mem_free / 1073741824.0,
                     d->cc_major, d->cc_minor, d->multiprocessors, d->bf16 ? "yes" : "no");
            char *en = mg_html_escape(d->name);
            fprintf(t, "cuda:%-3d %s, %s\n", d->index, d->name, detail);
            fprintf(h, "<tr><td>cuda:%d</td><td>%s</td><td>%s</td></tr>", d->index, en ? en : "",
                    detail);
            free(en);
            if (d->problem[0]) { /* present but not usable by this build */
                char *ep = mg_html_escape(d->problem);
                fprintf(t, "         not usable: %s\n", d->problem);
                fprintf(h, "<tr><td></td><td colspan=\"2\">not usable: %s</td></tr>", ep ? ep : "");
                free(ep);
            }
        }
        if (l->count == 0) {
            const char *why = !l->built ? "CUDA: not built into this Kiln (rebuild with "
                                          "-Dcuda=enabled where the toolkit is installed)"
                                        : "CUDA: built, no device present";
            fprintf(t, "%s%s%s\n", why, l->built && l->why[0] ? ": " : "", l->built ? l->why : "");
            char *ew = mg_html_escape(l->built ? l->why : "");
            fprintf(h, "<tr><td colspan=\"3\">%s%s%s</td></tr>", why, ew && ew[0] ? ": " : "",
                    ew ? ew : "");
            free(ew);
        } else if (l->driver_version) {
            fprintf(t, "CUDA driver %d.%d, runtime %d.%d\n", l->driver_version / 1000,
                    l->driver_version % 1000 / 10, l->runtime_version / 1000,
                    l->runtime_version % 1000 / 10);
        }
        const char *pick = l->count > 0 && !l->dev[0].problem[0] ? "cuda:0" : "cpu";
        fprintf(t, "--device auto picks: %s\n", pick);
        fprintf(h, "</table><p><code>--device auto</code> picks <b>%s</b></p>", pick);
    }
    if (t) fclose(t);
    if (h) fclose(h);
    free(l);
    return mg_display_text_html(ctx->out, text, html) == 0
               ? 0
               : mg_fail(err, "MemoryError", "%%device: out of memory");
}

const mg_command mg_cmd_device = {
    .name = "device",
    .summary = "The CPU and GPU(s) this kernel can train on, and what --device auto picks",
    .usage = "Usage: %device\n\nLists the CPU (model, cores, backend and OpenBLAS threads) and "
             "the CUDA devices\n(name, memory, compute capability, bf16 support), or why there "
             "is none, and\nwhich device `%train --device auto` uses.",
    .flags = MG_LINE,
    .options = NULL,
    .run = run,
};
