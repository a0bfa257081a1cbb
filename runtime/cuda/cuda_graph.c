/* cuda_graph.c - a training step recorded once as a CUDA graph and replayed
 * (graph_begin / graph_end / graph_launch / graph_free of rt_backend.h).
 *
 * graph_begin starts a stream capture on the backend's stream; the ops the trainer then
 * calls are captured, not run. A kernel argument that changes from step to step is not
 * baked into the capture: the op asks rtp_graph_slot for a slot of the graph's
 * parameter block (device memory, RTP_GRAPH_BLOCK bytes) and passes its address as the
 * kernel's `dv` (cuda_kernels.h), and the slot keeps the rule that derives the value from
 * an rt_step_vars (the gather's start and augmentation streams, dropout's stream, the
 * statistics row, the optimisers' coefficients - the same host functions the ops use,
 * so the replayed values are bitwise the ones an uncaptured step passes). graph_launch
 * evaluates every slot for the step, writes the block with one small kernel whose
 * argument carries the bytes (rtp_k_set_bytes, RTP_PARAM_CHUNK bytes a launch: a
 * copy from host memory would read the host buffer only when the stream got there, so
 * the next step could not rewrite it without waiting) and launches the graph, both on
 * the stream, so step n + 1's block cannot overtake step n's graph.
 * The graph names device memory directly (activations, workspace, the parameter
 * vector). rtp_cuda.gen moves whenever device memory is freed or the workspace moves;
 * a graph recorded under another gen runs nothing and says so (*ran = 0).
 * Capture failures (an op refused, a call the capture does not allow, e.g. a cuDNN
 * algorithm that cannot be captured) end in graph_end's error; the trainer then runs
 * its steps uncaptured.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../rt_rng.h"
#include "cuda_internal.h"

#define RTP_GRAPH_BLOCK 8192 /* bytes of step variables: ~100 slots */
#define RTP_SLOT_ALIGN 16
#define RTP_GRAPH_SLOTS (RTP_GRAPH_BLOCK / RTP_SLOT_ALIGN)

struct rt_graph {
    cudaGraphExec_t exec;
    rtp_slot slots[RTP_GRAPH_SLOTS];
    int nslots;
    size_t bytes;    /* of the block in use */
    void *dev;       /* the block, device */
    unsigned gen;    /* rtp_cuda.gen when recorded */
    rt_step_vars at; /* the recorded step's values */
    char bad[200];   /* why the recording cannot be used ("" if it can) */
    unsigned char host[RTP_GRAPH_BLOCK];
    rtp_param_chunk chunk; /* the launch argument of rtp_k_set_bytes */
};

/* The slot's value for step v into out; RT_EINVAL if v puts it out of range. */
static rt_status slot_value(const rtp_slot *s, const rt_step_vars *v, void *out, rt_error *err)
{
    switch (s->kind) {
    case RTP_SLOT_GATHER: {
        rtp_gather_vars g;
        memset(&g, 0, sizeof g);
        g.start = v->start + s->delta;
        if (g.start < 0 || g.start > s->limit)
            return RT_ERR(err, RT_EINVAL,
                          "graph_launch: the batch at order position %lld does not fit the "
                          "data set (last start %lld)",
                          (long long)g.start, (long long)s->limit);
        rt_rng r = rt_rng_stream(s->seed, RT_RNG_AUGMENT, v->epoch, 0);
        rt_rng r2 = rt_rng_stream(s->seed, RT_RNG_AUGMENT, v->epoch, 1);
        g.st = (rtp_philox_stream){r.key[0], r.key[1], r.stream[0], r.stream[1]};
        g.st2 = (rtp_philox_stream){r2.key[0], r2.key[1], r2.stream[0], r2.stream[1]};
        memcpy(out, &g, sizeof g);
        return RT_OK;
    }
    case RTP_SLOT_DROPOUT: {
        rt_rng r = rt_rng_stream(s->seed, RT_RNG_DROPOUT, (uint32_t)(v->key + s->delta), s->layer);
        rtp_philox_stream st = {r.key[0], r.key[1], r.stream[0], r.stream[1]};
        memcpy(out, &st, sizeof st);
        return RT_OK;
    }
    case RTP_SLOT_ROW: {
        int64_t row = v->row + s->delta;
        if (row < 0 || row > s->limit)
            return RT_ERR(err, RT_EINVAL,
                          "graph_launch: statistics row %lld outside the ring's %lld rows",
                          (long long)row, (long long)s->limit + 1);
        int32_t r = (int32_t)row;
        memcpy(out, &r, sizeof r);
        return RT_OK;
    }
    case RTP_SLOT_ADAM: {
        rt_adam_coef c = rt_optim_adam_coef(&s->cfg, v->lr, v->step, 0);
        memcpy(out, &c, sizeof c);
        return RT_OK;
    }
    case RTP_SLOT_SGD: {
        rt_sgd_coef c = rt_optim_sgd_coef(&s->cfg, v->lr, v->step, 0);
        memcpy(out, &c, sizeof c);
        return RT_OK;
    }
    case RTP_SLOT_AMP_ADAM: {
        rtp_amp_adam a;
        memset(&a, 0, sizeof a); /* as the op: padding included */
        a.c = rt_optim_adam_coef(&s->cfg, v->lr, 1, 0);
        a.lr = v->lr, a.beta1 = s->cfg.beta1, a.beta2 = s->cfg.beta2;
        memcpy(out, &a, sizeof a);
        return RT_OK;
    }
    case RTP_SLOT_AMP_SGD: {
        rt_sgd_coef c = rt_optim_sgd_coef(&s->cfg, v->lr, 1, 0);
        memcpy(out, &c, sizeof c);
        return RT_OK;
    }
    }
    return RT_ERR(err, RT_EINVAL, "graph: unknown slot kind %d", (int)s->kind);
}

static int64_t slot_base(const rtp_slot *s, const rt_step_vars *v)
{
    switch (s->kind) {
    case RTP_SLOT_GATHER: return v->start;
    case RTP_SLOT_DROPOUT: return v->key;
    case RTP_SLOT_ROW: return v->row;
    default: return 0;
    }
}

static void mark_bad(rt_graph *g, const char *why)
{
    if (!g->bad[0]) snprintf(g->bad, sizeof g->bad, "%s", why);
}

const void *rtp_graph_slot(rt_backend *b, const rtp_slot *slot, const void *value, size_t bytes)
{
    rt_graph *g = rtp_cuda_of(b)->cap;
    if (!g) return NULL;
    size_t off = (g->bytes + RTP_SLOT_ALIGN - 1) / RTP_SLOT_ALIGN * RTP_SLOT_ALIGN;
    if (g->nslots == RTP_GRAPH_SLOTS || off + bytes > RTP_GRAPH_BLOCK) {
        mark_bad(g, "the step has more step variables than the graph's parameter block holds");
        return NULL;
    }
    rtp_slot s = *slot;
    s.delta -= slot_base(&s, &g->at);
    s.off = off;
    /* the rule must give what the op computed for the recorded step, bit for bit */
    unsigned char mine[sizeof g->host];
    memset(mine, 0, bytes);
    rt_error e;
    if (slot_value(&s, &g->at, mine, &e) != RT_OK || memcmp(mine, value, bytes) != 0) {
        mark_bad(g, "an op's step variable does not follow from the step's values");
        return NULL;
    }
    g->slots[g->nslots++] = s;
    g->bytes = off + bytes;
    return (const char *)g->dev + off;
}

rt_status rtp_cuda_graph_begin(rt_backend *b, const rt_step_vars *v, rt_error *err)
{
    RTP_ENTER(b);
    rtp_cuda *c = rtp_cuda_of(b);
    if (c->cap) return RT_ERR(err, RT_EINVAL, "graph_begin: a graph is already being recorded");
    rt_graph *g = calloc(1, sizeof *g);
    if (!g) return RT_ERR(err, RT_ENOMEM, "out of memory for a CUDA graph");
    cudaError_t e = cudaMalloc(&g->dev, RTP_GRAPH_BLOCK);
    if (e != cudaSuccess) {
        free(g);
        return e == cudaErrorMemoryAllocation
                   ? rtp_cuda_oom(b, RTP_GRAPH_BLOCK, "a CUDA graph's step variables", err)
                   : rtp_cuda_fail(b, e, "cudaMalloc", __FILE__, __LINE__, err);
    }
    g->at = *v;
    /* thread-local: another thread's CUDA calls neither join nor break this capture */
    e = cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) {
        (void)cudaFree(g->dev);
        free(g);
        return rtp_cuda_fail(b, e, "cudaStreamBeginCapture", __FILE__, __LINE__, err);
    }
    c->cap = g;
    return RT_OK;
}

static void graph_free(rt_graph *g)
{
    if (!g) return;
    if (g->exec) (void)cudaGraphExecDestroy(g->exec);
    (void)cudaFree(g->dev);
    free(g);
}

rt_status rtp_cuda_graph_end(rt_backend *b, rt_graph **out, rt_error *err)
{
    rtp_cuda *c = rtp_cuda_of(b);
    *out = NULL;
    rt_graph *g = c ? c->cap : NULL;
    if (!g) return RT_ERR(err, RT_EINVAL, "graph_end: no graph is being recorded");
    c->cap = NULL;
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamEndCapture(c->stream, &graph);
    if (e == cudaSuccess && !g->bad[0]) e = cudaGraphInstantiateWithFlags(&g->exec, graph, 0);
    if (graph) (void)cudaGraphDestroy(graph);
    if (e != cudaSuccess || g->bad[0]) {
        char why[300];
        if (g->bad[0]) snprintf(why, sizeof why, "%s", g->bad);
        else snprintf(why, sizeof why, "%s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
        (void)cudaGetLastError(); /* a failed capture's error is not sticky */
        graph_free(g);
        if (b->lost) return RT_ERR(err, RT_EDEVICE_LOST, "CUDA graph capture: the device was lost");
        return RT_ERR(err, RT_EDEVICE, "the training step cannot be recorded as a CUDA graph: %s",
                      why);
    }
    g->gen = c->gen;
    *out = g;
    return RT_OK;
}

rt_status rtp_cuda_graph_launch(rt_backend *b, rt_graph *g, const rt_step_vars *v, int *ran,
                                rt_error *err)
{
    RTP_ENTER(b);
    rtp_cuda *c = rtp_cuda_of(b);
    *ran = 0;
    if (g->gen != c->gen) return RT_OK; /* memory it names was freed or moved */
    for (int i = 0; i < g->nslots; i++)
        RT_TRY(slot_value(&g->slots[i], v, g->host + g->slots[i].off, err));
    for (size_t off = 0; off < g->bytes; off += RTP_PARAM_CHUNK) {
        size_t n = g->bytes - off < RTP_PARAM_CHUNK ? g->bytes - off : RTP_PARAM_CHUNK;
        memcpy(g->chunk.b, g->host + off, n);
        RT_CUDA_TRY(b, err, rtp_k_set_bytes(c->stream, (char *)g->dev + off, g->chunk, n));
    }
    RT_CUDA_TRY(b, err, cudaGraphLaunch(g->exec, c->stream));
    *ran = 1;
    return RT_OK;
}

void rtp_cuda_graph_free(rt_backend *b, rt_graph *g)
{
    if (!g) return;
    (void)cudaSetDevice(rtp_cuda_of(b)->device);
    graph_free(g);
}
