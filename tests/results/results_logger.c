/* results_logger.c - a stand-in for %train that logs one run through the results
 * store, used by the two-process test and the MLflow interop test.
 *
 *   results_logger SPEC NAME STEPS [--tag T] [--pause-at K] [--epoch-every E]
 *                  [--sleep-us U]
 *
 * Logs params lr=0.001, batch=64, optimizer=adam, tag=T; per step "loss" and "acc";
 * every E steps (default 100) an epoch with "val_loss" and "val_acc"; one checkpoint
 * per epoch. Values are a deterministic function of (step, T) - see value_of - so a
 * reader can check every one. With --pause-at K it flushes after step K, prints
 * "PAUSE" and waits for a line on stdin. Prints "RUN ID" after begin and "DONE ID"
 * at the end; warnings go to stderr. Exit status 0 when every call succeeded.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_results.h"

/* The value logged for metric m (0 loss, 1 acc, 2 val_loss, 3 val_acc) at step. */
static double value_of(int m, long step, long tag)
{
    return 1.0 / (1.0 + (double)step) + (double)m * 10.0 + (double)tag * 1000.0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: results_logger SPEC NAME STEPS [--tag T] [--pause-at K] "
                        "[--epoch-every E] [--sleep-us U] [--timeout-ms MS]\n");
        return 2;
    }
    long steps = atol(argv[3]), tag = 0, pause_at = -1, every = 100, sleep_us = 0, timeout_ms = 0;
    for (int i = 4; i + 1 < argc; i += 2) {
        long v = atol(argv[i + 1]);
        if (strcmp(argv[i], "--tag") == 0) tag = v;
        else if (strcmp(argv[i], "--pause-at") == 0) pause_at = v;
        else if (strcmp(argv[i], "--epoch-every") == 0) every = v;
        else if (strcmp(argv[i], "--sleep-us") == 0) sleep_us = v;
        else if (strcmp(argv[i], "--timeout-ms") == 0) timeout_ms = v;
    }
    rt_error err = {0};
    rt_results *rs = NULL;
    /* --timeout-ms: the MLflow per-request timeout (rt_results_open's default is 5 s) */
    rt_results_config cfg = {.mlflow_timeout_ms = (int)timeout_ms};
    if (strncmp(argv[1], "mlflow+", 7) == 0) cfg.mlflow_url = argv[1] + 7;
    else cfg.path = argv[1];
    rt_status opened = timeout_ms > 0 ? rt_results_open_config(&cfg, &rs, &err)
                                      : rt_results_open(argv[1], &rs, &err);
    if (opened != RT_OK) {
        fprintf(stderr, "open: %s\n", err.msg);
        return 1;
    }
    rt_results_run_info info = {.name = argv[2],
                                .notebook = "logger.ipynb",
                                .device = "cpu",
                                .precision = "fp32",
                                .dataset = "fashion-mnist",
                                .model_spec = "dense 10"};
    int64_t run = 0;
    int bad = rt_results_run_begin(rs, &info, &run, &err) != RT_OK;
    printf("RUN %lld\n", (long long)run);
    fflush(stdout);
    char tagbuf[32];
    snprintf(tagbuf, sizeof tagbuf, "%ld", tag);
    bad |= rt_results_log_param(rs, run, "lr", "0.001", &err) != RT_OK;
    bad |= rt_results_log_param(rs, run, "batch", "64", &err) != RT_OK;
    bad |= rt_results_log_param(rs, run, "optimizer", "adam", &err) != RT_OK;
    bad |= rt_results_log_param(rs, run, "tag", tagbuf, &err) != RT_OK;
    for (long s = 1; s <= steps && !bad; s++) {
        int epoch = (int)((s - 1) / every);
        bad |= rt_results_log_metric(rs, run, "loss", value_of(0, s, tag), s, epoch,
                                     RT_RESULTS_STEP, &err) != RT_OK;
        bad |= rt_results_log_metric(rs, run, "acc", value_of(1, s, tag), s, epoch, RT_RESULTS_STEP,
                                     &err) != RT_OK;
        if (s % every == 0) {
            bad |= rt_results_log_metric(rs, run, "val_loss", value_of(2, s, tag), s, epoch + 1,
                                         RT_RESULTS_EPOCH, &err) != RT_OK;
            bad |= rt_results_log_metric(rs, run, "val_acc", value_of(3, s, tag), s, epoch + 1,
                                         RT_RESULTS_EPOCH, &err) != RT_OK;
            char path[64];
            snprintf(path, sizeof path, "ckpt/step%ld.safetensors", s);
            bad |= rt_results_log_checkpoint(rs, run, path, s, epoch + 1, "val_acc",
                                             value_of(3, s, tag), &err) != RT_OK;
        }
        if (s == pause_at) {
            bad |= rt_results_flush(rs, &err) != RT_OK;
            printf("PAUSE\n");
            fflush(stdout);
            char line[64];
            if (!fgets(line, sizeof line, stdin)) break;
        }
        if (sleep_us > 0) usleep((useconds_t)sleep_us);
    }
    if (bad) fprintf(stderr, "logging failed: %s\n", err.msg);
    bad |=
        rt_results_run_end(rs, run, bad ? RT_RESULTS_FAILED : RT_RESULTS_FINISHED, &err) != RT_OK;
    rt_results_close(rs);
    printf("DONE %lld\n", (long long)run);
    return bad ? 1 : 0;
}
