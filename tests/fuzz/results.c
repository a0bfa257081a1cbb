/* results.c - fuzz target: the `%results --where/--sort` query (rt_results_list_runs:
 * the where-clause parser, matching by field, parameter or metric, numbers or text,
 * sorting and limits) over a small store made once per process.
 * Input: byte 0 = flags (bit 0 --desc; bits 1-3 status: 0 any, else status + 1;
 * bits 4-7 --limit), then lines: the first is the --sort key (empty: none), each
 * further line a --where clause (at most 8).
 * Invariants: a refused query says which option (--where/--sort) is wrong; an
 * answer has at most the store's runs and the limit, only runs of the asked status,
 * and runs whose sort key is numeric in order (runs lacking it last). */
#include <math.h>
#include <string.h>

#include "fz.h"
#include "rt_results_query.h"

#define NRUNS 4
#define MAX_WHERE 8

static rt_results *store;

static void seed_run(int i)
{
    static const char *names[] = {"mnist", "cifar", "mnist", "odd name=1"};
    static const char *lrs[] = {"0.001", "0.01", "1e-4", "fast"};
    rt_results_run_info info = {.name = names[i],
                                .device = i ? "cpu" : "cuda:0",
                                .dataset = "fashion-mnist",
                                .precision = "fp32"};
    int64_t id = 0;
    rt_error err = {0};
    FZ_CHECK(rt_results_run_begin(store, &info, &id, &err) == RT_OK);
    FZ_CHECK(rt_results_log_param(store, id, "lr", lrs[i], &err) == RT_OK);
    FZ_CHECK(rt_results_log_param(store, id, "batch", i % 2 ? "64" : "128", &err) == RT_OK);
    for (int s = 0; s < 3; s++)
        FZ_CHECK(rt_results_log_metric(store, id, "loss", 1.0 / (s + 1 + i), s * 10, s,
                                       RT_RESULTS_STEP, &err) == RT_OK);
    FZ_CHECK(rt_results_log_metric(store, id, "val_acc", i == 3 ? NAN : 0.5 + 0.1 * i, 20, 2,
                                   RT_RESULTS_EPOCH, &err) == RT_OK);
    if (i < 3) FZ_CHECK(rt_results_run_end(store, id, (rt_results_status)(1 + i), &err) == RT_OK);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    const char *dir = fz_dir();
    FZ_CHECK(dir != NULL);
    char path[600];
    snprintf(path, sizeof path, "%s/results.sqlite", dir);
    rt_error err = {0};
    FZ_CHECK(rt_results_open(path, &store, &err) == RT_OK);
    for (int i = 0; i < NRUNS; i++) seed_run(i);
    FZ_CHECK(rt_results_flush(store, &err) == RT_OK);
    return 0;
}

static void check_order(const rt_results_list *l, const char *key, int desc)
{
    int seen_missing = 0, have_prev = 0;
    double prev = 0;
    for (size_t i = 0; i < l->n; i++) {
        char buf[512];
        double v = 0;
        int num = 0;
        if (!rt_results_run_value(&l->runs[i], key, buf, sizeof buf, &v, &num)) {
            seen_missing = 1;
            continue;
        }
        FZ_CHECK(!seen_missing);      /* runs lacking the key come last */
        if (!num || isnan(v)) return; /* text or NaN: order is by text, not checked */
        if (have_prev) FZ_CHECK(desc ? v <= prev : v >= prev);
        prev = v, have_prev = 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    unsigned flags = data[0];
    char *text = fz_strdup(data + 1, size - 1);
    if (!text) return 0;
    const char *where[MAX_WHERE];
    size_t nwhere = 0;
    char *sort = text, *nl = strchr(text, '\n');
    if (nl) *nl = 0;
    for (char *p = nl ? nl + 1 : NULL; p && nwhere < MAX_WHERE;) {
        where[nwhere++] = p;
        if ((p = strchr(p, '\n'))) *p++ = 0;
    }
    int status = (int)(flags >> 1 & 7);
    rt_results_query q = {.status = status >= 1 && status <= 4 ? status - 1 : -1,
                          .nwhere = nwhere,
                          .where = where,
                          .sort = sort,
                          .descending = (int)(flags & 1),
                          .limit = flags >> 4};
    rt_results_list l = {0};
    rt_error err = {0};
    rt_status st = rt_results_list_runs(store, &q, &l, &err);
    if (st == RT_OK) {
        FZ_CHECK(l.n <= NRUNS && (!q.limit || l.n <= q.limit));
        for (size_t i = 0; i < l.n; i++)
            FZ_CHECK(q.status < 0 || (int)l.runs[i].status == q.status);
        if (*sort) check_order(&l, sort, q.descending);
        rt_results_list_free(&l);
    } else {
        FZ_CHECK(strstr(err.msg, "--where") || strstr(err.msg, "--sort"));
    }
    free(text);
    return 0;
}
