/* mg_time.c - %time STATEMENT and %%time (cell): run code through the host (the
 * same engine, same variables) and report CPU (user, sys; this process and its
 * children, so !commands count) and wall time, in IPython's format. The code is
 * passed raw: no interpolation and no option parsing. On error no times are shown
 * and the error is the cell's. */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "mg.h"
#include "rt_clock.h"

static void cpu_s(double *user, double *sys)
{
    struct rusage a, b;
    getrusage(RUSAGE_SELF, &a);
    getrusage(RUSAGE_CHILDREN, &b);
    *user = (double)(a.ru_utime.tv_sec + b.ru_utime.tv_sec) +
            (double)(a.ru_utime.tv_usec + b.ru_utime.tv_usec) * 1e-6;
    *sys = (double)(a.ru_stime.tv_sec + b.ru_stime.tv_sec) +
           (double)(a.ru_stime.tv_usec + b.ru_stime.tv_usec) * 1e-6;
}

/* IPython's _format_time: 3 significant digits, s / ms / µs / ns (and h min s). */
static void fmt_time(char *buf, size_t n, double t)
{
    if (t >= 60) {
        int h = (int)(t / 3600), m = (int)((t - h * 3600) / 60);
        double s = t - h * 3600 - m * 60;
        if (h) snprintf(buf, n, "%dh %dmin %.0fs", h, m, s);
        else snprintf(buf, n, "%dmin %.0fs", m, s);
        return;
    }
    static const char *const units[] = {"s", "ms", "\xc2\xb5s", "ns"};
    int u = 0;
    double v = t;
    if (t > 0) {
        while (v < 1 && u < 3) {
            v *= 1000;
            u++;
        }
    } else {
        u = 3;
        v = 0;
    }
    snprintf(buf, n, "%.3g %s", v, units[u]);
}

static int run(mg_ctx *ctx, const mg_args *args, mg_error *err)
{
    const char *code = args->body ? args->body : args->raw;
    if (args->body && args->raw && args->raw[strspn(args->raw, " \t\r")])
        return mg_fail(err, "UsageError", "%%%%time takes no arguments on its line");
    if (!code || !code[strspn(code, " \t\r\n")])
        return mg_fail(err, "UsageError",
                       "%%time needs a statement to time, as in "
                       "%%time x = sum(range(1000))");
    double u0, s0, u1, s1, w0 = rt_clock_s();
    cpu_s(&u0, &s0);
    if (ctx->host->run_cell(ctx->host->user, code, ctx->out, err) < 0) return -1;
    cpu_s(&u1, &s1);
    double wall = rt_clock_s() - w0;
    char a[32], b[32], c[32], d[32];
    fmt_time(a, sizeof a, u1 - u0);
    fmt_time(b, sizeof b, s1 - s0);
    fmt_time(c, sizeof c, (u1 - u0) + (s1 - s0));
    fmt_time(d, sizeof d, wall);
    mg_printf(ctx->out, "CPU times: user %s, sys: %s, total: %s\nWall time: %s\n", a, b, c, d);
    return 0;
}

const mg_command mg_cmd_time = {
    .name = "time",
    .summary = "Time a statement (%time) or a cell (%%time)",
    .usage = "Usage: %time STATEMENT\n       %%time   (first line of a cell: times the rest)\n\n"
             "Runs the code and prints the CPU time (user, sys, total; shell commands\n"
             "included) and the wall-clock time.\nExample: %time total = sum(range(1000000))",
    .flags = MG_LINE | MG_CELL | MG_NO_VAR_EXPAND | MG_RAW_ARGS,
    .options = NULL,
    .run = run,
};
