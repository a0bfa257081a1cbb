/* dataset_tool.c - a small driver of rt_download_file and rt_dataset_load for the
 * pytest HTTP tests (test_download.py) and for timing loads by hand.
 *
 *   dataset_tool download URL DEST [--sha256 HEX] [--retries N] [--stall S]
 *                                  [--stop-after BYTES]
 *   dataset_tool load NAME [--dir D] [--url U] [--val N] [--sha256sums F]
 *                          [--stop-after BYTES] [--repeat K] [--floats 1]
 *
 * --floats 1: the timed load also reads every image of every split as normalised
 * floats (rt_dataset_image_f32), the work a load that made float arrays did up front.
 * Prints "key value" lines (status: OK or the Python exception the status raises, msg,
 * counters, checksums) for the test to parse; exit 0 when the call returned RT_OK, 1
 * when it returned an error, 2 on bad usage.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_dataset.h"
#include "rt_download.h"

typedef struct tool_state {
    uint64_t stop_after; /* 0 = never */
    uint64_t last_done;
    long calls;
} tool_state;

static int on_progress(const char *file, uint64_t done, uint64_t total, void *user)
{
    tool_state *t = user;
    t->last_done = done;
    t->calls++;
    printf("progress %s %llu %llu\n", file, (unsigned long long)done, (unsigned long long)total);
    return 0;
}

static int should_stop(void *user)
{
    tool_state *t = user;
    return t->stop_after && t->last_done >= t->stop_after;
}

static const char *opt(int argc, char **argv, const char *name)
{
    for (int i = 0; i + 1 < argc; i++)
        if (!strcmp(argv[i], name)) return argv[i + 1];
    return NULL;
}

static long opt_long(int argc, char **argv, const char *name, long dflt)
{
    const char *v = opt(argc, argv, name);
    return v ? strtol(v, NULL, 10) : dflt;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int report(rt_status st, const rt_error *err)
{
    /* the exception a user would see (rt_status_exception), OK on success */
    printf("status %s\n", st == RT_OK ? "OK" : rt_status_exception(st));
    printf("msg %s\n", st == RT_OK ? "" : err->msg);
    return st == RT_OK ? 0 : 1;
}

static int cmd_download(int argc, char **argv)
{
    tool_state t = {.stop_after = (uint64_t)opt_long(argc, argv, "--stop-after", 0)};
    rt_download_opts o = {.url = argv[2],
                          .dest = argv[3],
                          .sha256_hex = opt(argc, argv, "--sha256"),
                          .progress = on_progress,
                          .should_stop = should_stop,
                          .user = &t,
                          .retries = (int)opt_long(argc, argv, "--retries", 0),
                          .stall_timeout_s = opt_long(argc, argv, "--stall", 0),
                          .connect_timeout_s = 5};
    rt_download_info info;
    rt_error err = {0};
    rt_status st = rt_download_file(&o, &info, &err);
    printf("http %ld\nresumed_from %llu\nbytes %llu\nattempts %d\nprogress_calls %ld\n",
           info.http_status, (unsigned long long)info.resumed_from, (unsigned long long)info.bytes,
           info.attempts, t.calls);
    return report(st, &err);
}

static void print_split(const char *what, const rt_dataset *d)
{
    printf("%s_n %d\n%s_shape %dx%dx%d\n%s_checksum 0x%016llx\n%s_name %s\n", what, d->n, what,
           d->c, d->h, d->w, what, (unsigned long long)d->checksum, what, d->name);
}

static int cmd_load(int argc, char **argv)
{
    tool_state t = {.stop_after = (uint64_t)opt_long(argc, argv, "--stop-after", 0)};
    rt_dataset_opts o = {.name = argv[2],
                         .dir = opt(argc, argv, "--dir"),
                         .url = opt(argc, argv, "--url"),
                         .val = (int)opt_long(argc, argv, "--val", 0),
                         .sha256sums = opt(argc, argv, "--sha256sums"),
                         .progress = on_progress,
                         .should_stop = should_stop,
                         .user = &t};
    long repeat = opt_long(argc, argv, "--repeat", 1), floats = opt_long(argc, argv, "--floats", 0);
    rt_dataset_splits s;
    rt_error err = {0};
    rt_status st = RT_OK;
    double best = 1e30, sum = 0;
    for (long r = 0; r < repeat && st == RT_OK; r++) {
        double t0 = now_ms();
        st = rt_dataset_load(&s, &o, &err);
        const rt_dataset *sp[3] = {&s.train, &s.val, &s.test};
        for (int k = 0; st == RT_OK && floats && k < 3; k++) {
            size_t img = (size_t)sp[k]->c * (size_t)sp[k]->h * (size_t)sp[k]->w;
            float *x = malloc(img * sizeof *x);
            for (int i = 0; x && i < sp[k]->n; i++) {
                rt_dataset_image_f32(sp[k], i, x);
                sum += x[img / 2];
            }
            free(x);
        }
        double dt = now_ms() - t0;
        if (dt < best) best = dt;
        if (st == RT_OK && r + 1 < repeat) rt_dataset_splits_deinit(&s);
    }
    if (st == RT_OK) {
        print_split("train", &s.train);
        print_split("val", &s.val);
        print_split("test", &s.test);
        printf("classes %d\nclass0 %s\nsource %s\nmean0 %.7f\nstd0 %.7f\nbest_ms %.1f\n",
               s.train.num_classes, s.train.class_names[0], s.source, s.train.mean[0],
               s.train.std[0], best);
        if (floats) printf("float_checksum %.3f\n", sum);
        rt_dataset_splits_deinit(&s);
    }
    return report(st, &err);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 4 && !strcmp(argv[1], "download")) return cmd_download(argc, argv);
    if (argc >= 3 && !strcmp(argv[1], "load")) return cmd_load(argc, argv);
    fprintf(stderr, "usage: dataset_tool download URL DEST [--sha256 HEX] [--retries N] "
                    "[--stall S] [--stop-after BYTES]\n"
                    "       dataset_tool load NAME [--dir D] [--url U] [--val N] "
                    "[--sha256sums F] [--stop-after BYTES] [--repeat K]\n");
    return 2;
}
