/* mock_nccl.c - a stand-in for NCCL over the mock device (mock_cuda.c), so the device
 * group's code (runtime/cuda/cuda_nccl.c, runtime/rt_dist_group.c) runs without GPUs:
 * rtp_nccl_load hands cuda_nccl.c this table instead of a dlopen'ed libnccl.so.2.
 *
 * ncclCommInitAll makes a clique of n communicators. An all-reduce is a rendezvous: a
 * rank's call blocks until every rank of its clique has called (the mock's streams are
 * synchronous, so "done when the call returns" is their contract), then the last one
 * computes the result in rank order from every rank's buffer and copies it to all. It
 * checks what NCCL requires (every buffer inside one device allocation, the same count,
 * type and kind of op on every rank, a pre-multiplied sum op of this communicator) and
 * counts what a test asserts: collectives, the bytes each reduced, calls made inside a
 * ncclGroupStart/End. A rank that never comes fails the others' calls after 60 s
 * (ncclSystemError), not a hang.
 * ncclCommInitRank (GPU ranks of a launch, one process each) joins a clique that spans
 * processes: its all-reduce goes through files in $TMPDIR/kiln-mock-nccl-<id>/ (each
 * rank writes its scaled buffer as <call>.<rank>, waits for every rank's, sums them in
 * rank order: the same arithmetic as in one process).
 * KILN_MOCK_NCCL=missing: rtp_nccl_load fails as a machine without NCCL does.
 */
#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../../runtime/cuda/nccl_dl.h"
#include "mock_nccl.h"

#define MOCK_NCCL_VERSION 21903 /* 2.19.3 */
#define MAX_OPS 8
enum { INVALID_ARGUMENT = 4, INVALID_USAGE = 5, SYSTEM_ERROR = 2 };

typedef struct clique clique;

struct rtp_nccl_comm {
    clique *q; /* NULL: a rank of a clique across processes (files) */
    int rank, nranks;
    char dir[300]; /* across processes: where the ranks meet */
    unsigned long calls;
    float scale[MAX_OPS]; /* pre-multiplied sum ops: op 100 + i */
    int used[MAX_OPS];
};

struct clique {
    int n;
    struct rtp_nccl_comm *comms; /* (n) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int arrived;
    unsigned long gen;
    int failed; /* of the current collective: a rank's arguments disagree */
    struct {
        void *buf;
        size_t count;
        float scale;
    } posted[16];
};

static struct {
    pthread_mutex_t mu;
    long collectives, calls, grouped_calls;
    size_t bytes, last_bytes;
} st = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0};
static _Thread_local int group_depth;

long mock_nccl_collectives(void) { return st.collectives; }
long mock_nccl_calls(void) { return st.calls; }
long mock_nccl_grouped_calls(void) { return st.grouped_calls; }
size_t mock_nccl_bytes(void) { return st.bytes; }
size_t mock_nccl_last_bytes(void) { return st.last_bytes; }
void mock_nccl_reset(void)
{
    pthread_mutex_lock(&st.mu);
    st.collectives = st.calls = st.grouped_calls = 0;
    st.bytes = st.last_bytes = 0;
    pthread_mutex_unlock(&st.mu);
}

int mock_in_device(const void *p, size_t n);

static rtp_nccl_result get_version(int *v)
{
    *v = MOCK_NCCL_VERSION;
    return RTP_NCCL_SUCCESS;
}

static const char *error_string(rtp_nccl_result r)
{
    return r == INVALID_ARGUMENT ? "invalid argument (mock NCCL)"
           : r == INVALID_USAGE  ? "invalid usage (mock NCCL)"
           : r == SYSTEM_ERROR   ? "a rank did not join within 60 s (mock NCCL)"
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
    if (n < 1 || n > 16) return INVALID_ARGUMENT;
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
    pthread_cond_init(&q->cv, NULL);
    for (int i = 0; i < n; i++) {
        c[i].q = q;
        c[i].rank = i;
        comms[i] = &c[i];
    }
    return RTP_NCCL_SUCCESS;
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
    *comm = c;
    return RTP_NCCL_SUCCESS;
}

/* across processes: post this rank's scaled buffer, wait for all, sum in rank order */
static rtp_nccl_result reduce_files(rtp_nccl_comm_t c, float *buf, size_t count, float scale)
{
    char path[400], tmp[420];
    const unsigned long call = c->calls++;
    snprintf(path, sizeof path, "%s/%lu.%d", c->dir, call, c->rank);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    int ok =
        f && fwrite(&scale, sizeof scale, 1, f) == 1 && fwrite(buf, sizeof *buf, count, f) == count;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok || rename(tmp, path) != 0) return SYSTEM_ERROR;
    float *sum = calloc(count, sizeof *sum), *x = malloc(count * sizeof *x);
    rtp_nccl_result rc = sum && x ? RTP_NCCL_SUCCESS : SYSTEM_ERROR;
    for (int r = 0; r < c->nranks && rc == RTP_NCCL_SUCCESS; r++) {
        snprintf(path, sizeof path, "%s/%lu.%d", c->dir, call, r);
        FILE *g = NULL;
        for (int waited = 0; !(g = fopen(path, "rb")) && waited < 60000; waited++)
            usleep(1000); /* 60 s for a rank to come */
        float s = 0.0f;
        if (!g || fread(&s, sizeof s, 1, g) != 1 || fread(x, sizeof *x, count, g) != count) {
            rc = g ? INVALID_USAGE : SYSTEM_ERROR; /* a rank sent another count */
        } else {
            for (size_t i = 0; i < count; i++) sum[i] += s * x[i];
        }
        if (g) fclose(g);
    }
    if (rc == RTP_NCCL_SUCCESS) memcpy(buf, sum, count * sizeof *sum);
    free(sum);
    free(x);
    if (call >= 2) { /* every rank has read call - 2: it posted call - 1 after that */
        snprintf(path, sizeof path, "%s/%lu.%d", c->dir, call - 2, c->rank);
        unlink(path);
    }
    if (rc == RTP_NCCL_SUCCESS) {
        pthread_mutex_lock(&st.mu);
        st.collectives += c->rank == 0;
        st.bytes += c->rank == 0 ? count * sizeof(float) : 0;
        st.last_bytes = count * sizeof(float);
        pthread_mutex_unlock(&st.mu);
    }
    return rc;
}

static rtp_nccl_result comm_destroy(rtp_nccl_comm_t comm)
{
    clique *q = comm->q;
    if (!q) { /* across processes: this rank's files; the last one out removes the dir */
        char path[400];
        for (unsigned long k = comm->calls > 2 ? comm->calls - 2 : 0; k < comm->calls; k++) {
            snprintf(path, sizeof path, "%s/%lu.%d", comm->dir, k, comm->rank);
            unlink(path);
        }
        rmdir(comm->dir); /* fails while another rank's files are there: harmless */
        free(comm);
        return RTP_NCCL_SUCCESS;
    }
    pthread_mutex_lock(&q->mu);
    int last = ++q->arrived == q->n; /* the last rank destroyed frees the clique */
    pthread_mutex_unlock(&q->mu);
    if (last) {
        pthread_mutex_destroy(&q->mu);
        pthread_cond_destroy(&q->cv);
        free(q->comms);
        free(q);
    }
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
    group_depth--;
    return RTP_NCCL_SUCCESS;
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
    if (dtype != RTP_NCCL_FLOAT32 || send != recv || count == 0 ||
        !mock_in_device(recv, count * sizeof(float)))
        return INVALID_ARGUMENT; /* Kiln reduces floats in place, in device memory */
    float scale = 1.0f;
    if (op >= 100 && op < 100 + MAX_OPS && comm->used[op - 100]) scale = comm->scale[op - 100];
    else if (op != RTP_NCCL_SUM) return INVALID_ARGUMENT;
    pthread_mutex_lock(&st.mu);
    st.calls++;
    st.grouped_calls += group_depth > 0;
    pthread_mutex_unlock(&st.mu);
    if (!comm->q) return reduce_files(comm, recv, count, scale);
    clique *q = comm->q;
    rtp_nccl_result rc = RTP_NCCL_SUCCESS;
    pthread_mutex_lock(&q->mu);
    const unsigned long gen = q->gen;
    q->posted[comm->rank].buf = recv;
    q->posted[comm->rank].count = count;
    q->posted[comm->rank].scale = scale;
    if (++q->arrived == q->n) { /* the last one reduces for all */
        int agree = 1;
        for (int r = 1; r < q->n; r++) agree &= q->posted[r].count == count;
        float *sum = agree ? malloc(count * sizeof *sum) : NULL;
        if (sum) {
            for (size_t i = 0; i < count; i++) {
                float v = 0.0f;
                for (int r = 0; r < q->n; r++)
                    v += q->posted[r].scale * ((const float *)q->posted[r].buf)[i];
                sum[i] = v;
            }
            for (int r = 0; r < q->n; r++) memcpy(q->posted[r].buf, sum, count * sizeof *sum);
            free(sum);
            pthread_mutex_lock(&st.mu);
            st.collectives++;
            st.bytes += count * sizeof(float);
            st.last_bytes = count * sizeof(float);
            pthread_mutex_unlock(&st.mu);
        }
        q->failed = !sum;
        q->arrived = 0;
        q->gen++;
        pthread_cond_broadcast(&q->cv);
    } else {
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_sec += 60;
        while (q->gen == gen)
            if (pthread_cond_timedwait(&q->cv, &q->mu, &dl) == ETIMEDOUT && q->gen == gen) {
                q->arrived--; /* this rank leaves the rendezvous */
                rc = SYSTEM_ERROR;
                break;
            }
    }
    if (rc == RTP_NCCL_SUCCESS && q->failed) rc = INVALID_USAGE;
    pthread_mutex_unlock(&q->mu);
    return rc;
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
};

rt_status rtp_nccl_load(const rtp_nccl_fns **out, rt_error *err)
{
    const char *e = getenv("KILN_MOCK_NCCL");
    *out = NULL;
    if (e && !strcmp(e, "missing"))
        return RT_ERR(err, RT_ENODEV,
                      "cannot load NCCL (libnccl.so.2): not found (mock) "
                      "---> HINT: pip install nvidia-nccl-cu12 (or apt install libnccl2)");
    *out = &mock_fns;
    return RT_OK;
}
