/* rt_results_query.h - reading the results store: runs with their parameters,
 * metric summaries and checkpoints; filters and sorting; metric series; delete;
 * export. Used by %results. Everything returned is owned by the caller and freed
 * with the matching _free function. A store opened with readonly=1 is enough.
 */
#ifndef RT_RESULTS_QUERY_H
#define RT_RESULTS_QUERY_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "rt_results.h"

typedef struct rt_results_kv {
    char *key;
    char *value;
} rt_results_kv;

/* One metric series of a run, summarised. */
typedef struct rt_results_summary {
    char *key;
    rt_results_kind kind;
    long count;
    double last;     /* value at the highest step (epoch for epoch metrics) */
    double min, max; /* over non-NaN values (NaN when all are NaN) */
    int64_t last_step;
    int last_epoch;
} rt_results_summary;

typedef struct rt_results_ckpt {
    char *path;
    int64_t step;
    int epoch;
    char *metric; /* may be NULL */
    double metric_value;
    double time; /* unix seconds */
} rt_results_ckpt;

typedef struct rt_results_run {
    int64_t id;
    char *name, *notebook, *device, *precision, *kiln_version, *dataset, *model_spec;
    char *host;
    long pid;
    rt_results_status status;
    double start_time, end_time; /* unix seconds; end_time 0 while running */
    size_t nparams;
    rt_results_kv *params; /* sorted by key */
    size_t nmetrics;
    rt_results_summary *metrics; /* sorted by key, then kind */
    size_t nckpts;
    rt_results_ckpt *ckpts; /* in logging order */
} rt_results_run;

typedef struct rt_results_list {
    size_t n;
    rt_results_run *runs;
} rt_results_list;

/* A filter "KEY OP VALUE" with OP one of = != < <= > >=. KEY is a run field (id,
 * name, status, device, precision, dataset, notebook, kiln_version), a parameter, or
 * a metric (its last value; the epoch series when both exist). Numbers compare as
 * numbers when both sides parse, else as text. A run lacking KEY never matches. */
typedef struct rt_results_query {
    int status; /* -1 = any, else an rt_results_status */
    size_t nwhere;
    const char *const *where; /* "lr=0.001", "val_acc>=0.9" */
    const char *sort;         /* a KEY as above; NULL = by id */
    int descending;
    size_t limit; /* 0 = all */
} rt_results_query;

/* Runs matching q (NULL = all, by id). RT_EINVAL names a malformed where clause. */
RT_MUST_USE rt_status rt_results_list_runs(rt_results *rs, const rt_results_query *q,
                                           rt_results_list *out, rt_error *err);
void rt_results_list_free(rt_results_list *l);

/* Resolves a user's reference to a run: an id ("12"), "last", or a run name (the
 * newest run of that name). RT_ENOTFOUND with a hint when there is none. */
RT_MUST_USE rt_status rt_results_find(rt_results *rs, const char *ref, int64_t *run_id,
                                      rt_error *err);
/* One run, complete. RT_ENOTFOUND for an unknown id. */
RT_MUST_USE rt_status rt_results_get_run(rt_results *rs, int64_t run_id, rt_results_run *out,
                                         rt_error *err);
void rt_results_run_free(rt_results_run *r);

/* A metric series ordered by step (epoch kind: by epoch). x = step, or epoch for
 * epoch metrics. *x and *y are new arrays (free()); *n may be 0. */
RT_MUST_USE rt_status rt_results_series(rt_results *rs, int64_t run_id, const char *key,
                                        rt_results_kind kind, double **x, double **y, size_t *n,
                                        rt_error *err);

/* Deletes a run and everything logged for it. A run that is still running in a live
 * process is refused (RT_EINVAL) unless force. RT_ENOTFOUND for an unknown id. */
RT_MUST_USE rt_status rt_results_delete(rt_results *rs, int64_t run_id, int force, rt_error *err);

/* Writes s to f as one CSV field (RFC 4180: quoted, quotes doubled, when it holds a
 * comma, a quote or a line end): the export's and kiln sweep's tables. */
void rt_results_csv_field(FILE *f, const char *s);
/* Writes the runs matching q to path. "csv": one row a run (fields, param:KEY and
 * metric:KEY columns with last values). "json": {"runs": [...]} with fields, params,
 * every metric series (steps, epochs, values) and checkpoints. Written to a temporary
 * file and renamed, so a failed export leaves no half file. */
RT_MUST_USE rt_status rt_results_export(rt_results *rs, const char *format, const char *path,
                                        const rt_results_query *q, rt_error *err);

/* Looks up KEY in a run as the where/sort clauses do: writes text to buf and returns
 * 1, or returns 0 when the run lacks KEY. *num is set when the value is numeric. */
int rt_results_run_value(const rt_results_run *r, const char *key, char *buf, size_t n, double *num,
                         int *is_num);

#endif
