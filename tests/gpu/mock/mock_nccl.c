/* mock_nccl.c - a stand-in for NCCL over the mock device (mock_cuda.c), so the device
 * group's code (runtime/cuda/cuda_nccl.c, runtime/dist/rt_dist_group.c) runs without GPUs:
 * rtp_nccl_load hands cuda_nccl.c this table instead of a dlopen'ed libnccl.so.2.
 *
 * As in NCCL, a collective call only starts the collective: it is in flight until
 * every rank of the communicator has called, and the host sees it finish through
 * cudaEventQuery (mock_cuda.c asks mock_nccl_busy) or a synchronisation (which waits
 * for it, at most 60 s: mock_nccl_drain). Whoever completes it computes the result in
 * rank order from every rank's buffer and writes it to all. It checks what NCCL
 * requires (every buffer inside one device allocation, the same count, type and kind
 * of op on every rank, a pre-multiplied sum op of this communicator) and counts what a
 * test asserts: collectives, the bytes each reduced, calls made inside a
 * ncclGroupStart/End, aborts.
 *
 * ncclCommInitAll makes a clique of n communicators in this process. ncclCommInitRank
 * (GPU ranks of a launch, one process each) joins a clique that spans processes: each
 * rank writes its buffer as $TMPDIR/kiln-mock-nccl-<id>/<call>.<rank>, and the
 * collective completes when every rank's file is there (the same arithmetic as in one
 * process). Supported: sum (f32 with a pre-multiplied scale, f64), max (f64) and
 * broadcast from rank 0, as Kiln calls them.
 *
 * KILN_MOCK_NCCL_REPORT=FILE: a process whose rank joined a clique across processes
 * writes, at exit, one JSON line to FILE.<rank>: the id it joined with, its weighted
 * sums (the gradients': count and the last one's bytes) and its other collectives.
 * KILN_MOCK_NCCL=missing: rtp_nccl_load fails as a machine without NCCL does.
 * KILN_MOCK_NCCL=hang:R:K: rank R's K-th collective (from 1) never joins, as a hung
 * device or a rank stuck elsewhere: the others' collectives never finish, and only
 * ncclCommAbort ends them.
 *
 * Joining across processes: ncclCommInitRankConfig with blocking = 0 (NCCL 2.14+) returns
 * ncclInProgress and the communicator is ready (ncclCommGetAsyncError says ncclSuccess)
 * once every rank has joined: each writes join.<rank> beside the collectives' files.
 * Such a nonblocking communicator's ncclGroupEnd answers ncclInProgress, settled by the
 * next ncclCommGetAsyncError; a CUDA call on a stream before that fails
 * (mock_nccl_settling), as NCCL forbids it. KILN_MOCK_NCCL=inithang:R: rank R never
 * joins (as a rank that died after the ranks met), so nobody's join completes.
 * KILN_MOCK_NCCL=old: NCCL 2.13, without ncclCommInitRankConfig (the blocking join,
 * ncclCommInitRank, returns at once).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../../runtime/cuda/nccl_dl.h"
#include "mock_nccl.h"

#define MOCK_NCCL_VERSION 21903 /* 2.19.3 */
#define MAX_OPS 8
#define MAX_RANKS 16
#define MAX_PARTS 4 /* collectives of one ncclGroupStart/End on a communicator */
#define MAX_LATER 4 /* copies queued behind a call in flight */
enum { SYSTEM_ERROR = 2, INVALID_ARGUMENT = 4, INVALID_USAGE = 5 };

typedef struct clique clique;

/* one rank's part of a collective */
typedef struct part {
    void *buf;
    size_t count;
    int dtype, op; /* RTP_NCCL_SUM/MAX, or -1: broadcast from rank 0 */
    float scale;
    int premul; /* a pre-multiplied sum op (the gradients') */
} part;

/* what a communicator launches at once: one collective, or a group's (in call order) */
typedef struct mcall {
    part p[MAX_PARTS];
    int n;
} mcall;

struct rtp_nccl_comm {
    clique *q; /* NULL: a rank of a clique across processes (files) */
    int rank, nranks;
    char dir[300]; /* across processes: where the ranks meet */
    unsigned long calls;
    float scale[MAX_OPS]; /* pre-multiplied sum ops: op 100 + i */
    int used[MAX_OPS];
    char id[48]; /* across processes: the unique id it joined with */
    long premul_sums, other;
    size_t premul_bytes; /* of the last weighted sum */
    int nonblocking;     /* joined with blocking = 0 */
    int joining;         /* nonblocking: not every rank's join file is there yet */
    int settling;        /* nonblocking: its last ncclGroupEnd answered ncclInProgress */
    mcall pend;          /* the open group's collectives, launched at ncclGroupEnd */
    /* the call in flight */
    int busy, stuck;
    rtp_nccl_result error; /* of the last call */
    unsigned long gen;     /* clique: the generation it joined */
    mcall cur;
    struct {
        void *dst;
        const void *src;
        size_t n;
    } later[MAX_LATER]; /* device-to-host copies queued behind it */
    int nlater;
};

struct clique {
    int n;
    struct rtp_nccl_comm *comms; /* (n) */
    pthread_mutex_t mu;
    int arrived;
    unsigned long gen;
    int failed;  /* of generation gen - 1: the ranks' arguments disagreed */
    int gone;    /* communicators destroyed or aborted: the last frees the clique */
    int aborted; /* a rank aborted: the clique's collectives never finish */
    mcall posted[MAX_RANKS];
};

static struct {
    pthread_mutex_t mu;
    long collectives, calls, grouped_calls, aborts, weighted;
    size_t bytes, last_bytes, weighted_bytes, weighted_last;
} st = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0, 0, 0, 0, 0};
static _Thread_local int group_depth;
static _Thread_local struct rtp_nccl_comm *current; /* this thread's last call */
/* the communicators with collectives in the open group */
static _Thread_local struct rtp_nccl_comm *grouped[MAX_RANKS];
static _Thread_local int ngrouped;

long mock_nccl_weighted(void) { return st.weighted; }
size_t mock_nccl_weighted_bytes(void) { return st.weighted_bytes; }
size_t mock_nccl_weighted_last_bytes(void) { return st.weighted_last; }
long mock_nccl_collectives(void) { return st.collectives; }
long mock_nccl_calls(void) { return st.calls; }
long mock_nccl_grouped_calls(void) { return st.grouped_calls; }
long mock_nccl_aborts(void) { return st.aborts; }
size_t mock_nccl_bytes(void) { return st.bytes; }
size_t mock_nccl_last_bytes(void) { return st.last_bytes; }
void mock_nccl_reset(void)
{
    pthread_mutex_lock(&st.mu);
    st.collectives = st.calls = st.grouped_calls = st.aborts = st.weighted = 0;
    st.bytes = st.last_bytes = st.weighted_bytes = st.weighted_last = 0;
    pthread_mutex_unlock(&st.mu);
}

int mock_in_device(const void *p, size_t n);

static size_t elem(int dtype) { return dtype == RTP_NCCL_FLOAT64 ? 8 : 4; }

static void count_done(size_t bytes, int premul)
{
    pthread_mutex_lock(&st.mu);
    st.collectives++;
    st.bytes += bytes;
    st.last_bytes = bytes;
    if (premul) st.weighted++, st.weighted_bytes += bytes, st.weighted_last = bytes;
    pthread_mutex_unlock(&st.mu);
}

/* c's call finished (rc): the copies queued behind it run now */
static void finish(struct rtp_nccl_comm *c, rtp_nccl_result rc)
{
    c->error = rc;
    c->busy = 0;
    for (int i = 0; i < c->nlater; i++) memmove(c->later[i].dst, c->later[i].src, c->later[i].n);
    c->nlater = 0;
}

/* out (count) = the parts combined in rank order: as NCCL, one arithmetic for all */
static void combine(void *out, const part *const *parts, int n, const part *me)
{
    const size_t count = me->count;
    if (me->op < 0) {
        memcpy(out, parts[0]->buf, count * elem(me->dtype));
        return;
    }
    for (size_t i = 0; i < count; i++) {
        if (me->dtype == RTP_NCCL_FLOAT64) {
            double v = me->op == RTP_NCCL_MAX ? ((const double *)parts[0]->buf)[i] : 0.0;
            for (int r = 0; r < n; r++) {
                double x = ((const double *)parts[r]->buf)[i];
                v = me->op == RTP_NCCL_MAX ? (x > v ? x : v) : v + x;
            }
            ((double *)out)[i] = v;
        } else {
            float v = 0.0f;
            for (int r = 0; r < n; r++) v += parts[r]->scale * ((const float *)parts[r]->buf)[i];
            ((float *)out)[i] = v;
        }
    }
}

static rtp_nccl_result get_version(int *v)
{
    *v = MOCK_NCCL_VERSION;
    return RTP_NCCL_SUCCESS;
}

static const char *error_string(rtp_nccl_result r)
{
    return r == INVALID_ARGUMENT ? "invalid argument (mock NCCL)"
           : r == INVALID_USAGE  ? "invalid usage (mock NCCL)"
           : r == SYSTEM_ERROR   ? "system error: a peer aborted (mock NCCL)"
                                 : "mock NCCL error";
}

static rtp_nccl_result get_unique_id(rtp_nccl_id *id)
{
    memset(id, 0, sizeof *id);
    snprintf(id->internal, sizeof id->internal, "mock-nccl-%ld-%ld", (long)getpid(),
             (long)time(NULL));
    return RTP_NCCL_SUCCESS;
}

static rtp_nccl_result comm_init_all(rtp_nccl_comm_t *comms, int n, const int *devices)
{
    if (n < 1 || n > MAX_RANKS) return INVALID_ARGUMENT;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) return INVALID_USAGE;
    for (int i = 0; i < n; i++) {
        if (devices[i] < 0 || devices[i] >= count) return INVALID_ARGUMENT;
        for (int j = 0; j < i; j++)
            if (devices[j] == devices[i]) return INVALID_USAGE; /* NCCL refuses duplicates */
    }
    clique *q = calloc(1, sizeof *q);
    struct rtp_nccl_comm *c = calloc((size_t)n, sizeof *c);
    if (!q || !c) {
        free(q);
        free(c);
        return SYSTEM_ERROR;
    }
    q->n = n;
    q->comms = c;
    pthread_mutex_init(&q->mu, NULL);
    for (int i = 0; i < n; i++) {
        c[i].q = q;
        c[i].rank = i;
        c[i].nranks = n;
        comms[i] = &c[i];
    }
    return RTP_NCCL_SUCCESS;
}

/* KILN_MOCK_NCCL_REPORT: this process's rank of a clique across processes, at exit */
static struct rtp_nccl_comm *reported;
static void report(void)
{
    const char *path = getenv("KILN_MOCK_NCCL_REPORT");
    const struct rtp_nccl_comm *c = reported;
    if (!path || !*path || !c) return;
    char name[512];
    snprintf(name, sizeof name, "%s.%d", path, c->rank);
    FILE *f = fopen(name, "w");
    if (!f) return;
    fprintf(f,
            "{\"id\": \"%s\", \"rank\": %d, \"nranks\": %d, \"weighted_sums\": %ld, "
            "\"weighted_sum_bytes\": %zu, \"other\": %ld, \"calls\": %lu}\n",
            c->id, c->rank, c->nranks, c->premul_sums, c->premul_bytes, c->other, c->calls);
    fclose(f);
}

static void join_name(char *out, size_t cap, const struct rtp_nccl_comm *c, int rank)
{
    snprintf(out, cap, "%s/join.%d", c->dir, rank);
}

/* KILN_MOCK_NCCL=inithang:R: does rank R never join? */
static int never_joins(int rank)
{
    const char *e = getenv("KILN_MOCK_NCCL");
    int r = -1;
    return e && sscanf(e, "inithang:%d", &r) == 1 && r == rank;
}

/* 1 while c's nonblocking join waits for a rank's join file */
static int still_joining(struct rtp_nccl_comm *c)
{
    char path[400];
    for (int r = 0; c->joining && r < c->nranks; r++) {
        join_name(path, sizeof path, c, r);
        if (access(path, F_OK) != 0) return 1;
    }
    return c->joining = 0;
}

static rtp_nccl_result comm_init_rank(rtp_nccl_comm_t *comm, int nranks, rtp_nccl_id id, int rank)
{
    if (nranks < 1 || rank < 0 || rank >= nranks || strncmp(id.internal, "mock-nccl-", 10))
        return INVALID_ARGUMENT;
    struct rtp_nccl_comm *c = calloc(1, sizeof *c);
    if (!c) return SYSTEM_ERROR;
    const char *tmp = getenv("TMPDIR");
    snprintf(c->dir, sizeof c->dir, "%s/kiln-%.40s", tmp && *tmp ? tmp : "/tmp", id.internal);
    if (mkdir(c->dir, 0700) != 0 && errno != EEXIST) {
        free(c);
        return SYSTEM_ERROR;
    }
    c->rank = rank;
    c->nranks = nranks;
    snprintf(c->id, sizeof c->id, "%.40s", id.internal);
    char path[400];
    join_name(path, sizeof path, c, rank);
    FILE *j = never_joins(rank) ? NULL : fopen(path, "w");
    if (j) fclose(j);
    *comm = c;
    if (!reported) {
        reported = c;
        atexit(report);
    }
    return RTP_NCCL_SUCCESS;
}

/* Whether a config int is NCCL's undefined value or in [lo, hi] (NCCL checks these). */
static int cfg_int_ok(int v, int lo, int hi)
{
    return v == RTP_NCCL_CONFIG_UNDEF_INT || (v >= lo && v <= hi);
}

/* ncclConfig_t: what NCCL checks of it. Its size must cover the fields through netName
 * (cgaClusterSize follows blocking: a 24-byte config of four fields leaves those bytes
 * padding, unset), and each field must be undefined or valid. */
static rtp_nccl_result comm_init_rank_config(rtp_nccl_comm_t *comm, int nranks, rtp_nccl_id id,
                                             int rank, rtp_nccl_config *config)
{
    *comm = NULL;
    if (!config || config->size < sizeof *config || config->magic != RTP_NCCL_CONFIG_MAGIC ||
        config->version < 21400 || config->version > MOCK_NCCL_VERSION ||
        !cfg_int_ok(config->blocking, 0, 1) || !cfg_int_ok(config->cgaClusterSize, 0, 8) ||
        !cfg_int_ok(config->minCTAs, 1, 32) || !cfg_int_ok(config->maxCTAs, 1, 32))
        return INVALID_ARGUMENT;
    /* Kiln chooses none of these: NCCL's defaults (or its NCCL_* environment) hold */
    if (config->cgaClusterSize != RTP_NCCL_CONFIG_UNDEF_INT ||
        config->minCTAs != RTP_NCCL_CONFIG_UNDEF_INT ||
        config->maxCTAs != RTP_NCCL_CONFIG_UNDEF_INT || config->netName)
        return INVALID_ARGUMENT;
    rtp_nccl_result rc = comm_init_rank(comm, nranks, id, rank);
    if (rc != RTP_NCCL_SUCCESS || config->blocking) return rc;
    (*comm)->nonblocking = 1;
    (*comm)->joining = 1;
    return RTP_NCCL_IN_PROGRESS;
}

/* ---- across processes: files ---- */

typedef struct file_head {
    int dtype, op;
    float scale;
    size_t count;
} file_head;

static void file_name(char *out, size_t cap, const struct rtp_nccl_comm *c, unsigned long call,
                      int rank)
{
    snprintf(out, cap, "%s/%lu.%d", c->dir, call, rank);
}

/* c's call as <call>.<rank>: the number of collectives, then each one's head and data */
static rtp_nccl_result post_file(struct rtp_nccl_comm *c)
{
    char path[400], tmp[420];
    file_name(path, sizeof path, c, c->calls - 1, c->rank);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    int ok = f && fwrite(&c->cur.n, sizeof c->cur.n, 1, f) == 1;
    for (int i = 0; ok && i < c->cur.n; i++) {
        const part *p = &c->cur.p[i];
        const file_head h = {p->dtype, p->op, p->scale, p->count};
        const size_t bytes = p->count * elem(p->dtype);
        ok = fwrite(&h, sizeof h, 1, f) == 1 && fwrite(p->buf, 1, bytes, f) == bytes;
    }
    if (f && fclose(f) != 0) ok = 0;
    return ok && rename(tmp, path) == 0 ? RTP_NCCL_SUCCESS : SYSTEM_ERROR;
}

/* Collective i of the call: every rank's part read from its file (at its position), the
 * result computed in rank order and written to c's buffer. */
static rtp_nccl_result combine_files(struct rtp_nccl_comm *c, FILE **in, int i)
{
    const part *me = &c->cur.p[i];
    const size_t bytes = me->count * elem(me->dtype);
    part parts[MAX_RANKS];
    const part *pp[MAX_RANKS];
    void *out = malloc(bytes);
    rtp_nccl_result rc = out ? RTP_NCCL_SUCCESS : SYSTEM_ERROR;
    for (int r = 0; r < MAX_RANKS; r++) {
        parts[r] = (part){0};
        pp[r] = &parts[r];
    }
    for (int r = 0; r < c->nranks && rc == RTP_NCCL_SUCCESS; r++) {
        file_head h;
        parts[r].buf = malloc(bytes);
        if (!parts[r].buf || fread(&h, sizeof h, 1, in[r]) != 1 || h.count != me->count ||
            h.dtype != me->dtype || h.op != me->op || fread(parts[r].buf, 1, bytes, in[r]) != bytes)
            rc = INVALID_USAGE; /* a rank sent another collective */
        parts[r].scale = h.scale;
    }
    if (rc == RTP_NCCL_SUCCESS) {
        combine(out, pp, c->nranks, me);
        memcpy(me->buf, out, bytes);
        if (me->premul) c->premul_sums++, c->premul_bytes = bytes;
        else c->other++;
        if (c->rank == 0) count_done(bytes, me->premul);
    }
    for (int r = 0; r < c->nranks; r++) free(parts[r].buf);
    free(out);
    return rc;
}

/* Completes c's call when every rank's file is there; 1 while still waiting. */
static int progress_files(struct rtp_nccl_comm *c)
{
    char path[400];
    const unsigned long call = c->calls - 1;
    for (int r = 0; r < c->nranks; r++) {
        file_name(path, sizeof path, c, call, r);
        if (access(path, F_OK) != 0) return 1;
    }
    FILE *in[MAX_RANKS] = {0};
    rtp_nccl_result rc = c->nranks <= MAX_RANKS ? RTP_NCCL_SUCCESS : SYSTEM_ERROR;
    for (int r = 0; r < c->nranks && rc == RTP_NCCL_SUCCESS; r++) {
        int n = 0;
        file_name(path, sizeof path, c, call, r);
        in[r] = fopen(path, "rb");
        if (!in[r] || fread(&n, sizeof n, 1, in[r]) != 1 || n != c->cur.n) rc = INVALID_USAGE;
    }
    for (int i = 0; i < c->cur.n && rc == RTP_NCCL_SUCCESS; i++) rc = combine_files(c, in, i);
    for (int r = 0; r < c->nranks && r < MAX_RANKS; r++)
        if (in[r]) fclose(in[r]);
    if (call >= 2) { /* every rank has read call - 2: it posted call - 1 after that */
        file_name(path, sizeof path, c, call - 2, c->rank);
        unlink(path);
    }
    finish(c, rc);
    return 0;
}

/* ---- in one process: a clique ---- */

/* Under q->mu: the last rank to post completes the call's collectives for all. */
static void complete_clique(clique *q)
{
    const mcall *me = &q->posted[0];
    int ok = 1;
    for (int r = 1; r < q->n; r++) {
        ok &= q->posted[r].n == me->n;
        for (int i = 0; ok && i < me->n; i++) {
            const part *a = &q->posted[r].p[i], *b = &me->p[i];
            ok &= a->count == b->count && a->dtype == b->dtype && a->op == b->op;
        }
    }
    for (int i = 0; ok && i < me->n; i++) {
        const size_t bytes = me->p[i].count * elem(me->p[i].dtype);
        void *out = malloc(bytes);
        const part *pp[MAX_RANKS];
        for (int r = 0; r < MAX_RANKS; r++) pp[r] = &q->posted[r].p[i];
        ok = out != NULL;
        if (ok) combine(out, pp, q->n, &me->p[i]);
        for (int r = 0; ok && r < q->n; r++) memcpy(q->posted[r].p[i].buf, out, bytes);
        free(out);
        if (ok) count_done(bytes, me->p[i].premul);
    }
    q->failed = !ok;
    q->arrived = 0;
    q->gen++;
}

/* 1 while c's collective is in flight (completing it when it can). */
static int progress(struct rtp_nccl_comm *c)
{
    if (!c || !c->busy || c->stuck) return c && c->busy;
    if (!c->q) return progress_files(c);
    clique *q = c->q;
    pthread_mutex_lock(&q->mu);
    int busy = q->gen == c->gen;
    const int failed = q->failed;
    pthread_mutex_unlock(&q->mu);
    if (!busy) finish(c, failed ? INVALID_USAGE : RTP_NCCL_SUCCESS);
    return busy;
}

int mock_nccl_busy(void) { return progress(current); }

int mock_nccl_defer(void *dst, const void *src, size_t n)
{
    struct rtp_nccl_comm *c = current;
    if (!progress(c)) return 0;
    if (c->nlater == MAX_LATER) {
        mock_nccl_drain(); /* as a synchronisation would */
        return 0;
    }
    c->later[c->nlater].dst = dst;
    c->later[c->nlater].src = src;
    c->later[c->nlater++].n = n;
    return 1;
}

int mock_nccl_settling(void) { return current && current->settling; }

void mock_nccl_drain(void)
{
    for (int waited = 0; progress(current) && waited < 600000; waited++)
        usleep(100); /* a synchronisation waits for the collective: 60 s at most */
}

/* KILN_MOCK_NCCL=hang:R:K: is c's call-th collective (from 1) the one that hangs? */
static int hangs(const struct rtp_nccl_comm *c, unsigned long call)
{
    const char *e = getenv("KILN_MOCK_NCCL");
    int r = -1;
    unsigned long k = 0;
    return e && sscanf(e, "hang:%d:%lu", &r, &k) == 2 && r == c->rank && k == call;
}

/* Launches c's pending collectives as one call (one hang count, one wait). */
static rtp_nccl_result launch(struct rtp_nccl_comm *c)
{
    c->cur = c->pend;
    c->pend.n = 0;
    c->busy = 1;
    c->error = RTP_NCCL_SUCCESS;
    c->calls++;
    current = c;
    if (hangs(c, c->calls)) {
        c->stuck = 1;
        return RTP_NCCL_SUCCESS;
    }
    if (!c->q) return post_file(c);
    clique *q = c->q;
    pthread_mutex_lock(&q->mu);
    c->gen = q->gen;
    q->posted[c->rank] = c->cur;
    if (++q->arrived == q->n) complete_clique(q);
    pthread_mutex_unlock(&q->mu);
    return RTP_NCCL_SUCCESS;
}

/* c's part p of a collective: launched now, or at the end of the open group. */
static rtp_nccl_result start(struct rtp_nccl_comm *c, const part *p)
{
    if (c->busy || c->joining || c->settling || c->pend.n == MAX_PARTS ||
        (c->pend.n == 0 && group_depth > 0 && ngrouped == MAX_RANKS))
        return INVALID_USAGE; /* the mock's streams hold one call; not before ready */
    pthread_mutex_lock(&st.mu);
    st.calls++;
    st.grouped_calls += group_depth > 0;
    pthread_mutex_unlock(&st.mu);
    if (c->pend.n == 0 && group_depth > 0) grouped[ngrouped++] = c;
    c->pend.p[c->pend.n++] = *p;
    return group_depth > 0 ? RTP_NCCL_SUCCESS : launch(c);
}

static rtp_nccl_result get_async_error(rtp_nccl_comm_t comm, rtp_nccl_result *async)
{
    if (still_joining(comm)) {
        *async = RTP_NCCL_IN_PROGRESS;
        return RTP_NCCL_SUCCESS;
    }
    if (comm->settling && group_depth == 0) {
        comm->settling = 0; /* the group's work is launched */
        *async = RTP_NCCL_IN_PROGRESS;
        return RTP_NCCL_SUCCESS;
    }
    (void)progress(comm);
    int peer_gone = 0;
    if (comm->q) {
        pthread_mutex_lock(&comm->q->mu);
        peer_gone = comm->q->aborted;
        pthread_mutex_unlock(&comm->q->mu);
    }
    *async = comm->busy && peer_gone ? SYSTEM_ERROR : comm->busy ? RTP_NCCL_SUCCESS : comm->error;
    return RTP_NCCL_SUCCESS;
}

/* A communicator leaves: files removed, or its clique freed by the last one out. */
static void leave(rtp_nccl_comm_t comm, int aborted)
{
    if (current == comm) current = NULL;
    clique *q = comm->q;
    if (!q) {
        if (comm == reported) {
            report();
            reported = NULL;
        }
        char path[400];
        join_name(path, sizeof path, comm, comm->rank);
        unlink(path);
        for (unsigned long k = comm->calls > 2 ? comm->calls - 2 : 0; k < comm->calls; k++) {
            file_name(path, sizeof path, comm, k, comm->rank);
            unlink(path);
        }
        rmdir(comm->dir); /* fails while another rank's files are there: harmless */
        free(comm);
        return;
    }
    pthread_mutex_lock(&q->mu);
    q->aborted |= aborted;
    int last = ++q->gone == q->n;
    pthread_mutex_unlock(&q->mu);
    if (last) {
        pthread_mutex_destroy(&q->mu);
        free(q->comms);
        free(q);
    }
}

static rtp_nccl_result comm_destroy(rtp_nccl_comm_t comm)
{
    if (comm->busy) mock_nccl_drain(); /* NCCL waits for the communicator's work */
    leave(comm, 0);
    return RTP_NCCL_SUCCESS;
}

static rtp_nccl_result comm_abort(rtp_nccl_comm_t comm)
{
    pthread_mutex_lock(&st.mu);
    st.aborts++;
    pthread_mutex_unlock(&st.mu);
    leave(comm, 1);
    return RTP_NCCL_SUCCESS;
}

static rtp_nccl_result group_start(void)
{
    group_depth++;
    return RTP_NCCL_SUCCESS;
}

static rtp_nccl_result group_end(void)
{
    if (group_depth == 0) return INVALID_USAGE;
    if (--group_depth > 0) return RTP_NCCL_SUCCESS;
    rtp_nccl_result rc = RTP_NCCL_SUCCESS;
    int nonblocking = 0;
    for (int i = 0; i < ngrouped; i++) {
        rtp_nccl_result r = launch(grouped[i]);
        if (rc == RTP_NCCL_SUCCESS) rc = r;
        if (grouped[i]->nonblocking) /* until ncclCommGetAsyncError says it is launched */
            grouped[i]->settling = nonblocking = 1;
    }
    ngrouped = 0;
    return rc == RTP_NCCL_SUCCESS && nonblocking ? RTP_NCCL_IN_PROGRESS : rc;
}

static rtp_nccl_result premul_create(rtp_nccl_redop *op, void *scalar, int dtype, int residence,
                                     rtp_nccl_comm_t comm)
{
    if (dtype != RTP_NCCL_FLOAT32 || residence != RTP_NCCL_SCALAR_HOST) return INVALID_ARGUMENT;
    for (int i = 0; i < MAX_OPS; i++)
        if (!comm->used[i]) {
            comm->used[i] = 1;
            memcpy(&comm->scale[i], scalar, sizeof(float));
            *op = 100 + i;
            return RTP_NCCL_SUCCESS;
        }
    return INVALID_USAGE; /* ops are leaked: the caller must destroy them */
}

static rtp_nccl_result op_destroy(rtp_nccl_redop op, rtp_nccl_comm_t comm)
{
    if (op < 100 || op >= 100 + MAX_OPS || !comm->used[op - 100]) return INVALID_ARGUMENT;
    comm->used[op - 100] = 0;
    return RTP_NCCL_SUCCESS;
}

static rtp_nccl_result all_reduce(const void *send, void *recv, size_t count, int dtype,
                                  rtp_nccl_redop op, rtp_nccl_comm_t comm, cudaStream_t s)
{
    if ((dtype != RTP_NCCL_FLOAT32 && dtype != RTP_NCCL_FLOAT64) || send != recv || count == 0 ||
        !mock_in_device(recv, count * elem(dtype)))
        return INVALID_ARGUMENT; /* Kiln reduces in place, in device memory */
    part p = {.buf = recv, .count = count, .dtype = dtype, .op = RTP_NCCL_SUM, .scale = 1.0f};
    if (op >= 100 && op < 100 + MAX_OPS && comm->used[op - 100] && dtype == RTP_NCCL_FLOAT32)
        p.scale = comm->scale[op - 100], p.premul = 1;
    else if (op == RTP_NCCL_MAX && dtype == RTP_NCCL_FLOAT64) p.op = RTP_NCCL_MAX;
    else if (op != RTP_NCCL_SUM) return INVALID_ARGUMENT;
    return start(comm, &p);
}

static rtp_nccl_result broadcast(const void *send, void *recv, size_t count, int dtype, int root,
                                 rtp_nccl_comm_t comm, cudaStream_t s)
{
    if (dtype != RTP_NCCL_FLOAT32 || send != recv || count == 0 || root != 0 ||
        !mock_in_device(recv, count * elem(dtype)))
        return INVALID_ARGUMENT; /* Kiln broadcasts rank 0's floats, in place */
    part p = {.buf = recv, .count = count, .dtype = dtype, .op = -1, .scale = 1.0f};
    return start(comm, &p);
}

static const rtp_nccl_fns mock_fns = {
    .GetVersion = get_version,
    .GetErrorString = error_string,
    .GetUniqueId = get_unique_id,
    .CommInitAll = comm_init_all,
    .CommInitRank = comm_init_rank,
    .CommDestroy = comm_destroy,
    .GroupStart = group_start,
    .GroupEnd = group_end,
    .AllReduce = all_reduce,
    .RedOpCreatePreMulSum = premul_create,
    .RedOpDestroy = op_destroy,
    .Broadcast = broadcast,
    .CommGetAsyncError = get_async_error,
    .CommAbort = comm_abort,
    .CommInitRankConfig = comm_init_rank_config,
};

static rtp_nccl_result get_old_version(int *v)
{
    *v = 21304; /* 2.13.4: before ncclCommInitRankConfig */
    return RTP_NCCL_SUCCESS;
}
static rtp_nccl_fns old_fns;
static pthread_once_t old_once = PTHREAD_ONCE_INIT;
static void make_old(void)
{
    old_fns = mock_fns;
    old_fns.GetVersion = get_old_version;
    old_fns.CommInitRankConfig = NULL;
}

rt_status rtp_nccl_load(const rtp_nccl_fns **out, rt_error *err)
{
    const char *e = getenv("KILN_MOCK_NCCL");
    *out = NULL;
    if (e && !strcmp(e, "missing"))
        return RT_ERR(err, RT_ENODEV,
                      "cannot load NCCL (libnccl.so.2): not found (mock) ---> HINT: pip "
                      "install 'kiln-kernel[cuda]' (nvidia-nccl-cu12), else apt install "
                      "libnccl2");
    if (e && !strcmp(e, "old")) {
        pthread_once(&old_once, make_old);
        *out = &old_fns;
        return RT_OK;
    }
    *out = &mock_fns;
    return RT_OK;
}
