/* mlflow.c - fuzz target: what the results store's MLflow mirror does with the
 * server's answers (experiments/get-by-name and create, runs/create, log-batch,
 * update): status codes, JSON bodies with or without the ids, error_code and message.
 * A server thread on 127.0.0.1 (fz_server.c) answers the mirror's requests in turn.
 * Input: answers separated by "\n--\n"; each is a 3-digit status code and the body
 * (the harness adds the status line and headers). Requests past the last answer get
 * a 404 with an empty body.
 * Run: begin a run, a parameter, a metric, end it, close the store (which waits for
 * the mirror). The mirror's warnings are collected.
 * Invariants: the local store records the run whatever the server says; a warning is
 * one line of text (no control characters: it is printed into the notebook), of
 * bounded length, and never holds the tracking token. */
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#include "fz.h"
#include "fz_server.h"
#include "rt_results_query.h"

#define MAX_ANSWERS 8
#define TOKEN "fz-secret-token-5e2d"

typedef struct answers {
    uint8_t *text[MAX_ANSWERS];
    size_t len[MAX_ANSWERS], n;
} answers;

static const uint8_t not_found[] = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
                                   "Connection: close\r\n\r\n";

static const uint8_t *next_answer(void *user, size_t n, size_t *len)
{
    answers *a = user;
    if (n >= a->n) {
        *len = sizeof not_found - 1;
        return not_found;
    }
    *len = a->len[n];
    return a->text[n];
}

/* "CODE BODY" -> a whole HTTP response (malloc'd) */
static uint8_t *response(const uint8_t *p, size_t n, size_t *len)
{
    int code = 200;
    if (n >= 3 && p[0] >= '1' && p[0] <= '5' && p[1] >= '0' && p[1] <= '9' && p[2] >= '0' &&
        p[2] <= '9') {
        code = (p[0] - '0') * 100 + (p[1] - '0') * 10 + (p[2] - '0');
        p += 3, n -= 3;
    }
    char head[160];
    int h = snprintf(head, sizeof head,
                     "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                     code, n);
    uint8_t *r = malloc((size_t)h + n + 1);
    if (!r) return NULL;
    memcpy(r, head, (size_t)h);
    if (n) memcpy(r + h, p, n);
    *len = (size_t)h + n;
    return r;
}

static void split(const uint8_t *data, size_t size, answers *a)
{
    const uint8_t *p = data, *end = data + size;
    while (p <= end && a->n < MAX_ANSWERS) {
        const uint8_t *sep = NULL;
        for (const uint8_t *q = p; q + 4 <= end && !sep; q++)
            if (!memcmp(q, "\n--\n", 4)) sep = q;
        const uint8_t *stop = sep ? sep : end;
        a->text[a->n] = response(p, (size_t)(stop - p), &a->len[a->n]);
        if (a->text[a->n]) a->n++;
        if (!sep) break;
        p = sep + 4;
    }
}

typedef struct warnings {
    char text[4096];
    size_t n;
} warnings;

static void on_warn(void *user, const char *msg)
{
    warnings *w = user;
    size_t len = strlen(msg);
    FZ_CHECK(len < 2048);
    FZ_CHECK(!strstr(msg, TOKEN));
    for (size_t i = 0; i < len; i++) FZ_CHECK((unsigned char)msg[i] >= 0x20 && msg[i] != 0x7f);
    if (w->n + len + 1 < sizeof w->text) {
        memcpy(w->text + w->n, msg, len + 1);
        w->n += len + 1;
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    setenv("MLFLOW_TRACKING_TOKEN", TOKEN, 1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    answers a = {{0}, {0}, 0};
    split(data, size, &a);
    int port = 0;
    fz_server *srv = fz_server_start(next_answer, &a, &port);
    FZ_CHECK(srv != NULL);
    const char *dir = fz_dir();
    FZ_CHECK(dir != NULL);
    fz_dir_clear();
    char path[600], url[64];
    snprintf(path, sizeof path, "%s/results.sqlite", dir);
    snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
    rt_results_config cfg = {
        .path = path, .mlflow_url = url, .experiment = "fz", .mlflow_timeout_ms = 1000};
    rt_results *rs = NULL;
    rt_error err = {0};
    warnings w = {{0}, 0};
    FZ_CHECK(rt_results_open_config(&cfg, &rs, &err) == RT_OK);
    rt_results_set_warn(rs, on_warn, &w);
    int64_t id = 0;
    FZ_CHECK(rt_results_run_begin(rs, &(rt_results_run_info){.name = "fz"}, &id, &err) == RT_OK);
    FZ_CHECK(rt_results_log_param(rs, id, "lr", "0.1", &err) == RT_OK);
    FZ_CHECK(rt_results_log_metric(rs, id, "loss", 0.5, 1, 0, RT_RESULTS_STEP, &err) == RT_OK);
    FZ_CHECK(rt_results_run_end(rs, id, RT_RESULTS_FINISHED, &err) == RT_OK);
    rt_results_close(rs);
    fz_server_stop(srv);

    /* the local store has the run, whatever the server said */
    cfg = (rt_results_config){.path = path, .readonly = 1};
    FZ_CHECK(rt_results_open_config(&cfg, &rs, &err) == RT_OK);
    rt_results_run run;
    FZ_CHECK(rt_results_get_run(rs, id, &run, &err) == RT_OK);
    FZ_CHECK(run.status == RT_RESULTS_FINISHED && run.nparams == 1 && run.nmetrics == 1);
    rt_results_run_free(&run);
    rt_results_close(rs);
    for (size_t i = 0; i < a.n; i++) free(a.text[i]);
    return 0;
}
