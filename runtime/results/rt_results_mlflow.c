/* rt_results_mlflow.c - mirrors runs to an MLflow tracking server (REST API 2.0).
 *
 * The store's thread only appends operations to a queue (a mutex, no I/O); a
 * background thread sends them with libcurl: experiments/get-by-name (or create),
 * runs/create, runs/log-batch (<= 1000 metrics / 100 params a request), runs/update.
 * The first failure (server absent, stopped, answering errors or slower than the
 * timeout) marks the mirror dead: one warning, later operations are discarded, the
 * local SQLite store - always written - keeps the complete record. Destroy waits a
 * bounded time for the queue, then aborts the transfer in flight, so closing a store
 * never hangs on a slow server. The queue is bounded too (MAX_QUEUED rows).
 *
 * Credentials never live in the URL kept here: user-info written in the URL is taken
 * out at create (libcurl's URL parser) and sent as HTTP basic auth, like
 * MLFLOW_TRACKING_USERNAME / MLFLOW_TRACKING_PASSWORD; MLFLOW_TRACKING_TOKEN is sent as
 * a bearer token. So warnings, tags and params can only ever show the bare URL. TLS is
 * verified unless MLFLOW_TRACKING_INSECURE_TLS=true (as MLflow's own client), and
 * credentials bound for a non-loopback host over plain http get a warning.
 *
 * jansson is used here only to build request bodies and read the ids MLflow returns.
 * Status mapping: finished->FINISHED, failed->FAILED, interrupted->KILLED. NaN and
 * infinities are sent as the strings protobuf's JSON mapping accepts ("NaN", ...).
 */
#include "rt_results_internal.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define MAX_QUEUED (1u << 20)
#define MAX_BATCH_METRICS 1000
#define MAX_BATCH_PARAMS 100
#define MAX_PARAM_LEN 6000

typedef enum { OP_BEGIN, OP_PARAM, OP_METRICS, OP_END } op_kind;

typedef struct op {
    struct op *next;
    op_kind kind;
    int64_t run;
    char *key, *value;    /* OP_PARAM */
    json_t *body;         /* OP_BEGIN: runs/create body without experiment_id */
    int status;           /* OP_END */
    double time;          /* OP_END */
    size_t n;             /* OP_METRICS */
    rtp_metric_row *rows; /* keys owned by this op (strdup) */
} op;

typedef struct run_map {
    int64_t local;
    char *id;
} run_map;

struct rtp_mlflow {
    char base[1024];               /* scheme://host:port/path, no user-info */
    char *user, *password, *token; /* owned, wiped on destroy */
    int insecure_tls;
    char experiment[256];
    char local_path[1024];
    char *exp_id;
    long timeout_ms;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    op *head, *tail;
    size_t queued_rows;
    int stop;
    atomic_int abort;
    int dead; /* only the worker writes it */
    int joined;
    char *warning; /* under mu */
    run_map *map;
    size_t nmap;
    CURL *curl;
};

/* ---- queue ---- */

static void op_free(op *o)
{
    if (!o) return;
    free(o->key);
    free(o->value);
    json_decref(o->body);
    for (size_t i = 0; i < o->n; i++) free((char *)o->rows[i].key);
    free(o->rows);
    free(o);
}

static void set_warning(rtp_mlflow *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_warning(rtp_mlflow *m, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&m->mu);
    if (!m->warning) m->warning = strdup(buf);
    pthread_mutex_unlock(&m->mu);
}

static void push(rtp_mlflow *m, op *o)
{
    if (!o) return;
    pthread_mutex_lock(&m->mu);
    if (m->queued_rows + o->n > MAX_QUEUED) {
        pthread_mutex_unlock(&m->mu);
        set_warning(m,
                    "MLflow server %s is too slow: metrics are no longer sent to it; "
                    "the local store %s keeps everything",
                    m->base, m->local_path);
        op_free(o);
        return;
    }
    m->queued_rows += o->n;
    if (m->tail) m->tail->next = o;
    else m->head = o;
    m->tail = o;
    pthread_cond_signal(&m->cv);
    pthread_mutex_unlock(&m->mu);
}

char *rtp_mlflow_take_warning(rtp_mlflow *m)
{
    pthread_mutex_lock(&m->mu);
    char *w = m->warning;
    if (w) m->warning = strdup(""); /* given once: keep a non-NULL marker */
    pthread_mutex_unlock(&m->mu);
    if (w && !*w) {
        free(w);
        return NULL;
    }
    return w;
}

/* ---- HTTP ---- */

typedef struct buf {
    char *p;
    size_t n;
} buf;

static size_t on_body(char *data, size_t size, size_t nmemb, void *user)
{
    buf *b = user;
    size_t add = size * nmemb;
    if (b->n + add > (1u << 24)) return 0;
    char *p = realloc(b->p, b->n + add + 1);
    if (!p) return 0;
    memcpy(p + b->n, data, add);
    b->p = p;
    b->n += add;
    p[b->n] = '\0';
    return add;
}

static int on_progress(void *user, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a, (void)b, (void)c, (void)d;
    return atomic_load(&((rtp_mlflow *)user)->abort) ? 1 : 0;
}

/* Stars out every copy of secret in s (a server may echo what it was sent). */
static void hide(char *s, const char *secret)
{
    size_t n = secret ? strlen(secret) : 0;
    if (n < 4) return;
    for (char *p = strstr(s, secret); p; p = strstr(p + n, secret)) memset(p, '*', n);
}

/* Sends a request; body NULL = GET. Returns the HTTP code (0 on transport failure,
 * with why in errbuf) and the parsed answer in *resp (new ref, may be NULL). */
static long request(rtp_mlflow *m, const char *path, json_t *body, json_t **resp, char *errbuf)
{
    char url[2048];
    snprintf(url, sizeof url, "%s/api/2.0/mlflow/%s", m->base, path);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    buf b = {0};
    struct curl_slist *hdr = curl_slist_append(NULL, "Content-Type: application/json");
    CURL *c = m->curl;
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    if (m->token) {
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BEARER);
        curl_easy_setopt(c, CURLOPT_XOAUTH2_BEARER, m->token);
    } else if (m->user || m->password) {
        curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
        curl_easy_setopt(c, CURLOPT_USERNAME, m->user ? m->user : "");
        curl_easy_setopt(c, CURLOPT_PASSWORD, m->password ? m->password : "");
    }
    if (m->insecure_tls) {
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, m->timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, m->timeout_ms < 2000 ? m->timeout_ms : 2000L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, m);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
    errbuf[0] = '\0';
    if (body) curl_easy_setopt(c, CURLOPT_POSTFIELDS, text ? text : "{}");
    CURLcode rc = curl_easy_perform(c);
    long code = 0;
    if (rc == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    else if (!errbuf[0]) snprintf(errbuf, CURL_ERROR_SIZE, "%s", curl_easy_strerror(rc));
    curl_slist_free_all(hdr);
    free(text);
    *resp = b.p ? json_loads(b.p, 0, NULL) : NULL;
    if (code >= 400) {
        const char *msg = json_string_value(json_object_get(*resp, "message"));
        snprintf(errbuf, CURL_ERROR_SIZE, "HTTP %ld: %.200s", code, msg ? msg : b.p ? b.p : "");
        /* the server's words end up in the cell's output: one line, no terminal escapes */
        for (char *p = errbuf; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = ' ';
        hide(errbuf, m->token);
        hide(errbuf, m->password);
    }
    free(b.p);
    return code;
}

static const char *error_code(json_t *resp)
{
    const char *c = json_string_value(json_object_get(resp, "error_code"));
    return c ? c : "";
}

/* Marks the mirror dead with one warning; returns -1. */
static int fail(rtp_mlflow *m, const char *what, const char *why)
{
    if (!m->dead)
        set_warning(m,
                    "MLflow server %s: %s failed (%s); runs are no longer sent there, "
                    "the local store %s keeps everything",
                    m->base, what, why, m->local_path);
    m->dead = 1;
    return -1;
}

/* A request whose failure kills the mirror; *resp may be NULL when not wanted. */
static int call(rtp_mlflow *m, const char *path, json_t *body, json_t **out)
{
    char errbuf[CURL_ERROR_SIZE];
    json_t *resp = NULL;
    long code = request(m, path, body, &resp, errbuf);
    if (code < 200 || code >= 300) {
        json_decref(resp);
        return fail(m, path, errbuf);
    }
    if (out) *out = resp;
    else json_decref(resp);
    return 0;
}

/* ---- operations ---- */

static int ensure_experiment(rtp_mlflow *m)
{
    if (m->exp_id) return 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        char errbuf[CURL_ERROR_SIZE], path[600];
        char *esc = curl_easy_escape(m->curl, m->experiment, 0);
        snprintf(path, sizeof path, "experiments/get-by-name?experiment_name=%s",
                 esc ? esc : "kiln");
        curl_free(esc);
        json_t *resp = NULL;
        long code = request(m, path, NULL, &resp, errbuf);
        const char *id = json_string_value(
            json_object_get(json_object_get(resp, "experiment"), "experiment_id"));
        if (code == 200 && id) m->exp_id = strdup(id);
        int missing = strcmp(error_code(resp), "RESOURCE_DOES_NOT_EXIST") == 0;
        json_decref(resp);
        if (m->exp_id) return 0;
        if (!missing) return fail(m, "experiments/get-by-name", errbuf);
        json_t *body = json_pack("{s:s}", "name", m->experiment);
        resp = NULL;
        code = request(m, "experiments/create", body, &resp, errbuf);
        json_decref(body);
        id = json_string_value(json_object_get(resp, "experiment_id"));
        if (code == 200 && id) m->exp_id = strdup(id);
        int exists = strcmp(error_code(resp), "RESOURCE_ALREADY_EXISTS") == 0;
        json_decref(resp);
        if (m->exp_id) return 0;
        if (!exists) return fail(m, "experiments/create", errbuf);
        /* another client created it between our two calls: look it up again */
    }
    return fail(m, "experiments/create", "experiment keeps disappearing");
}

static const char *remote_id(rtp_mlflow *m, int64_t run)
{
    for (size_t i = 0; i < m->nmap; i++)
        if (m->map[i].local == run) return m->map[i].id;
    return NULL;
}

static void do_begin(rtp_mlflow *m, op *o)
{
    if (ensure_experiment(m)) return;
    json_object_set_new(o->body, "experiment_id", json_string(m->exp_id));
    json_t *resp = NULL;
    if (call(m, "runs/create", o->body, &resp)) return;
    const char *id = json_string_value(
        json_object_get(json_object_get(json_object_get(resp, "run"), "info"), "run_id"));
    run_map *p = id ? realloc(m->map, (m->nmap + 1) * sizeof *p) : NULL;
    if (p) {
        m->map = p;
        m->map[m->nmap].local = o->run;
        m->map[m->nmap].id = strdup(id);
        if (m->map[m->nmap].id) m->nmap++;
    } else {
        fail(m, "runs/create", "no run_id in the answer");
    }
    json_decref(resp);
}

static json_t *number(double v)
{
    if (isnan(v)) return json_string("NaN");
    if (isinf(v)) return json_string(v > 0 ? "Infinity" : "-Infinity");
    return json_real(v);
}

static void send_batch(rtp_mlflow *m, const char *id, json_t *metrics, json_t *params)
{
    json_t *body = json_pack("{s:s, s:o, s:o, s:[]}", "run_id", id, "metrics", metrics, "params",
                             params, "tags");
    if (!body) {
        fail(m, "runs/log-batch", "out of memory");
        return;
    }
    call(m, "runs/log-batch", body, NULL);
    json_decref(body);
}

static void do_metrics(rtp_mlflow *m, op *o)
{
    size_t i = 0;
    while (i < o->n && !m->dead) {
        int64_t run = o->rows[i].run;
        const char *id = remote_id(m, run);
        json_t *arr = json_array();
        for (; i < o->n && o->rows[i].run == run && json_array_size(arr) < MAX_BATCH_METRICS; i++) {
            const rtp_metric_row *r = &o->rows[i];
            int64_t step = r->kind == RT_RESULTS_EPOCH ? r->epoch : r->step;
            json_array_append_new(arr, json_pack("{s:s, s:o, s:I, s:I}", "key", r->key, "value",
                                                 number(r->value), "timestamp",
                                                 (json_int_t)(r->time * 1000.0), "step",
                                                 (json_int_t)step));
        }
        if (id) send_batch(m, id, arr, json_array());
        else json_decref(arr);
    }
}

static void do_param(rtp_mlflow *m, op *o)
{
    const char *id = remote_id(m, o->run);
    if (!id) return;
    if (strlen(o->value) > MAX_PARAM_LEN) o->value[MAX_PARAM_LEN] = '\0';
    send_batch(m, id, json_array(), json_pack("[{s:s, s:s}]", "key", o->key, "value", o->value));
}

static void do_end(rtp_mlflow *m, op *o)
{
    static const char *const names[] = {"RUNNING", "FINISHED", "KILLED", "FAILED"};
    const char *id = remote_id(m, o->run);
    if (!id || o->status < 0 || o->status > 3) return;
    json_t *body = json_pack("{s:s, s:s, s:I}", "run_id", id, "status", names[o->status],
                             "end_time", (json_int_t)(o->time * 1000.0));
    call(m, "runs/update", body, NULL);
    json_decref(body);
}

static void *worker(void *arg)
{
    rtp_mlflow *m = arg;
    for (;;) {
        pthread_mutex_lock(&m->mu);
        while (!m->head && !m->stop) pthread_cond_wait(&m->cv, &m->mu);
        op *list = m->head;
        m->head = m->tail = NULL;
        int stop = m->stop;
        pthread_mutex_unlock(&m->mu);
        while (list) {
            op *o = list;
            list = o->next;
            if (atomic_load(&m->abort)) m->dead = 1;
            if (!m->dead) {
                switch (o->kind) {
                case OP_BEGIN: do_begin(m, o); break;
                case OP_PARAM: do_param(m, o); break;
                case OP_METRICS: do_metrics(m, o); break;
                case OP_END: do_end(m, o); break;
                }
            }
            pthread_mutex_lock(&m->mu);
            m->queued_rows -= o->n;
            pthread_mutex_unlock(&m->mu);
            op_free(o);
        }
        if (stop) return NULL;
    }
}

/* ---- the store's side ---- */

static void wipe_free(char *s)
{
    if (s) explicit_bzero(s, strlen(s));
    free(s);
}

static char *env_dup(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? strdup(v) : NULL;
}

int rtp_mlflow_is_loopback(const char *host)
{
    return !strcmp(host, "localhost") || !strncmp(host, "127.", 4) || !strcmp(host, "[::1]") ||
           !strcmp(host, "::1");
}

/* url without user-info into m->base, credentials from it and from MLflow's
 * environment variables into m; -1 when libcurl cannot parse the URL. */
static int take_credentials(rtp_mlflow *m, const char *url)
{
    CURLU *u = curl_url();
    char *user = NULL, *password = NULL, *clean = NULL, *scheme = NULL, *host = NULL;
    int rc = -1;
    if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK) {
        curl_url_get(u, CURLUPART_USER, &user, CURLU_URLDECODE);
        curl_url_get(u, CURLUPART_PASSWORD, &password, CURLU_URLDECODE);
        curl_url_set(u, CURLUPART_USER, NULL, 0);
        curl_url_set(u, CURLUPART_PASSWORD, NULL, 0);
        if (curl_url_get(u, CURLUPART_URL, &clean, 0) == CURLUE_OK &&
            curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
            curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK)
            rc = 0;
    }
    if (rc == 0) {
        snprintf(m->base, sizeof m->base, "%s", clean);
        m->user = user && *user ? strdup(user) : env_dup("MLFLOW_TRACKING_USERNAME");
        m->password =
            password && *password ? strdup(password) : env_dup("MLFLOW_TRACKING_PASSWORD");
        m->token = env_dup("MLFLOW_TRACKING_TOKEN");
        const char *insecure = getenv("MLFLOW_TRACKING_INSECURE_TLS");
        m->insecure_tls = insecure && !strcasecmp(insecure, "true");
        if ((m->user || m->password || m->token) && !strcmp(scheme, "http") &&
            !rtp_mlflow_is_loopback(host))
            set_warning(m,
                        "credentials for MLflow server %s are sent over plain http, "
                        "readable by anyone on the network path: use https",
                        m->base);
        else if (m->insecure_tls && !strcmp(scheme, "https"))
            set_warning(m,
                        "MLFLOW_TRACKING_INSECURE_TLS=true: the certificate of MLflow "
                        "server %s is not checked",
                        m->base);
    }
    if (user) explicit_bzero(user, strlen(user));
    if (password) explicit_bzero(password, strlen(password));
    curl_free(user);
    curl_free(password);
    curl_free(clean);
    curl_free(scheme);
    curl_free(host);
    curl_url_cleanup(u);
    return rc;
}

rt_status rtp_mlflow_create(const char *url, const char *experiment, int timeout_ms,
                            const char *local_path, rtp_mlflow **out, rt_error *err)
{
    *out = NULL;
    rtp_mlflow *m = calloc(1, sizeof *m);
    if (!m) return RT_ERR(err, RT_ENOMEM, "results: out of memory");
    pthread_mutex_init(&m->mu, NULL);
    if (take_credentials(m, url) != 0) {
        char shown[1024];
        rt_results_redact(url, shown, sizeof shown);
        pthread_mutex_destroy(&m->mu);
        wipe_free(m->user), wipe_free(m->password), wipe_free(m->token);
        free(m);
        return RT_ERR(err, RT_EINVAL, "results: '%s' is not a URL libcurl can parse", shown);
    }
    size_t n = strlen(m->base);
    while (n > 0 && m->base[n - 1] == '/') m->base[--n] = '\0';
    snprintf(m->experiment, sizeof m->experiment, "%s", experiment);
    snprintf(m->local_path, sizeof m->local_path, "%s", local_path);
    m->timeout_ms = timeout_ms;
    atomic_init(&m->abort, 0);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || !(m->curl = curl_easy_init())) {
        pthread_mutex_destroy(&m->mu);
        wipe_free(m->user), wipe_free(m->password), wipe_free(m->token);
        free(m->warning);
        free(m);
        return RT_ERR(err, RT_EIO, "results: cannot initialise libcurl for MLflow");
    }
    pthread_cond_init(&m->cv, NULL);
    if (pthread_create(&m->thread, NULL, worker, m) != 0) {
        curl_easy_cleanup(m->curl);
        curl_global_cleanup();
        pthread_mutex_destroy(&m->mu);
        pthread_cond_destroy(&m->cv);
        wipe_free(m->user), wipe_free(m->password), wipe_free(m->token);
        free(m->warning);
        free(m);
        return RT_ERR(err, RT_EIO, "results: cannot start the MLflow thread");
    }
    *out = m;
    return RT_OK;
}

static op *op_new(op_kind kind, int64_t run)
{
    op *o = calloc(1, sizeof *o);
    if (o) {
        o->kind = kind;
        o->run = run;
    }
    return o;
}

static void add_tag(json_t *tags, const char *key, const char *value)
{
    if (value && *value)
        json_array_append_new(tags, json_pack("{s:s, s:s%}", "key", key, "value", value,
                                              strlen(value) > 5000 ? (size_t)5000 : strlen(value)));
}

void rtp_mlflow_run_begin(rtp_mlflow *m, int64_t run, const rt_results_run_info *info,
                          double start_time, const char *host)
{
    op *o = op_new(OP_BEGIN, run);
    if (!o) return;
    char id[32];
    snprintf(id, sizeof id, "%lld", (long long)run);
    json_t *tags = json_array();
    add_tag(tags, "kiln.run_id", id);
    add_tag(tags, "kiln.store", m->local_path);
    add_tag(tags, "kiln.host", host);
    add_tag(tags, "kiln.device", info->device);
    add_tag(tags, "kiln.precision", info->precision);
    add_tag(tags, "kiln.dataset", info->dataset);
    add_tag(tags, "kiln.model_spec", info->model_spec);
    add_tag(tags, "mlflow.source.name", info->notebook);
    o->body = json_pack("{s:s, s:I, s:o}", "run_name", info->name ? info->name : "", "start_time",
                        (json_int_t)(start_time * 1000.0), "tags", tags);
    if (!o->body) {
        op_free(o);
        return;
    }
    push(m, o);
}

void rtp_mlflow_param(rtp_mlflow *m, int64_t run, const char *key, const char *value)
{
    op *o = op_new(OP_PARAM, run);
    if (!o) return;
    o->key = strdup(key);
    o->value = strdup(value);
    if (!o->key || !o->value) {
        op_free(o);
        return;
    }
    push(m, o);
}

void rtp_mlflow_metrics(rtp_mlflow *m, const rtp_metric_row *rows, size_t n)
{
    op *o = op_new(OP_METRICS, 0);
    if (!o || !(o->rows = malloc(n * sizeof *o->rows))) {
        op_free(o);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        o->rows[i] = rows[i];
        o->rows[i].key = strdup(rows[i].key);
        if (!o->rows[i].key) {
            o->n = i;
            op_free(o);
            return;
        }
        o->n = i + 1;
    }
    push(m, o);
}

void rtp_mlflow_run_end(rtp_mlflow *m, int64_t run, rt_results_status status, double end_time)
{
    op *o = op_new(OP_END, run);
    if (!o) return;
    o->status = (int)status;
    o->time = end_time;
    push(m, o);
}

void rtp_mlflow_stop(rtp_mlflow *m, int wait_ms)
{
    if (!m || m->joined) return;
    m->joined = 1;
    pthread_mutex_lock(&m->mu);
    m->stop = 1;
    pthread_cond_signal(&m->cv);
    pthread_mutex_unlock(&m->mu);
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += wait_ms / 1000;
    deadline.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    if (pthread_timedjoin_np(m->thread, NULL, &deadline) != 0) {
        atomic_store(&m->abort, 1); /* the transfer in flight stops at its next tick */
        pthread_join(m->thread, NULL);
    }
}

void rtp_mlflow_destroy(rtp_mlflow *m, int wait_ms)
{
    if (!m) return;
    rtp_mlflow_stop(m, wait_ms);
    for (op *o = m->head; o;) {
        op *next = o->next;
        op_free(o);
        o = next;
    }
    for (size_t i = 0; i < m->nmap; i++) free(m->map[i].id);
    free(m->map);
    free(m->exp_id);
    free(m->warning);
    wipe_free(m->user), wipe_free(m->password), wipe_free(m->token);
    curl_easy_cleanup(m->curl);
    curl_global_cleanup();
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->cv);
    free(m);
}
