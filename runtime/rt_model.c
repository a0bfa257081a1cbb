/* rt_model.c - model lifecycle: create (parse), attach (arenas on a backend, init),
 * forward, loss and backward.
 *
 * Memory: four arenas per model, allocated once at attach: params and grads (each one
 * contiguous flat vector so an optimiser can update the whole model in one call; every
 * tensor starts at a multiple of RT_OPTIM_ALIGN floats, 256 bytes, as cuDNN and cuBLAS
 * want, and the zero gaps between tensors stay zero through every update), acts (every
 * layer's output for a max batch, per-sample saved tensors such as dropout masks, two
 * ping-pong gradient buffers, labels, losses, probabilities) and state (BN running stats
 * and batch stats). flatten's output aliases its input, and so does a relu's after
 * conv/dense/batchnorm or fused into the add before it, an add fused into the batchnorm
 * before it (aliases_input), a residual block's begin, and its shortcut's (a view of the
 * block input; rt_layer_residual.c). Forward and backward allocate nothing.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_model_internal.h"
#include "rt_optim.h"

rt_status rt_model_create(rt_model **out, const char *spec, const rt_model_input *in, rt_error *err)
{
    *out = NULL;
    if (!spec || !in) return RT_ERR(err, RT_EINVAL, "rt_model_create: NULL spec or input");
    rt_model *m = calloc(1, sizeof *m);
    if (!m || !(m->spec = strdup(spec))) {
        free(m);
        return RT_ERR(err, RT_ENOMEM, "out of memory creating the model");
    }
    m->in = *in;
    rt_status s = rtp_model_parse(m, err);
    if (s == RT_OK) {
        m->tfwd = calloc((size_t)m->nlayers + 1, sizeof *m->tfwd);
        m->tbwd = calloc((size_t)m->nlayers + 1, sizeof *m->tbwd);
        if (!m->tfwd || !m->tbwd) s = RT_ERR(err, RT_ENOMEM, "out of memory");
    }
    if (s != RT_OK) {
        rt_model_destroy(m);
        return s;
    }
    *out = m;
    return RT_OK;
}

void rtp_model_detach(rt_model *m)
{
    rt_arena_deinit(&m->params);
    rt_arena_deinit(&m->grads);
    rt_arena_deinit(&m->acts);
    rt_arena_deinit(&m->state);
    free(m->act);
    free(m->host_loss);
    m->act = NULL;
    m->host_loss = NULL;
    m->b = NULL;
}

void rt_model_destroy(rt_model *m)
{
    if (!m) return;
    rtp_model_detach(m);
    free(m->spec);
    free(m->canonical);
    free(m->layers);
    free(m->rows);
    free(m->tfwd);
    free(m->tbwd);
    free(m);
}

const char *rt_model_spec(const rt_model *m) { return m->spec; }
const char *rt_model_spec_canonical(const rt_model *m) { return m->canonical; }
const rt_model_input *rt_model_input_shape(const rt_model *m) { return &m->in; }
rt_backend *rt_model_backend(const rt_model *m) { return m->b; }
int rt_model_max_batch(const rt_model *m) { return m->max_batch; }
uint64_t rt_model_seed(const rt_model *m) { return m->seed; }
void rt_model_set_shard(rt_model *m, uint32_t shard) { m->shard = shard; }
void rt_model_set_fusion(rt_model *m, int on) { m->unfused = !on; }
void rt_model_set_label_smoothing(rt_model *m, float eps) { m->smoothing = eps; }
float rt_model_label_smoothing(const rt_model *m) { return m->smoothing; }
int rt_model_num_layers(const rt_model *m) { return m->nlayers; }
long rt_model_num_params(const rt_model *m) { return m->total_params; }
/* Upload targets span the whole max batch (forward narrows them to N again). */
rt_tensor *rt_model_input_tensor(rt_model *m)
{
    m->act[0].n = m->max_batch;
    return &m->act[0];
}

rt_tensor *rt_model_label_tensor(rt_model *m)
{
    m->labels.n = m->max_batch;
    return &m->labels;
}
rt_tensor *rt_model_params_flat(rt_model *m) { return &m->pflat; }
rt_tensor *rt_model_grads_flat(rt_model *m) { return &m->gflat; }

const rt_summary_row *rt_model_summary(const rt_model *m, int *n, long *total)
{
    if (n) *n = m->nlayers;
    if (total) *total = m->total_params;
    return m->rows;
}

/* ---- attach: size, allocate and bind the arenas ---- */

static size_t act_numel(const rt_layer *l) { return (size_t)l->out_c * l->out_h * l->out_w; }

/* Layer i writes its output over its input: flatten (a view), a relu fused into the
 * layer before (fuse_relus), and a (leaky) relu right after a conv2d, dense or batchnorm,
 * whose backward never reads their own output (relu's backward reads only the relu
 * output). Saves an activation-sized buffer and one memory pass each; not done after
 * pooling (max-pool backward reads its output). */
static int aliases_input(const rt_model *m, int i)
{
    const rt_layer_type *t = m->layers[i].type, *prev = i > 0 ? m->layers[i - 1].type : NULL;
    if (t == &rt_layer_flatten || t == &rt_layer_res_begin) return 1;
    if (t == &rt_layer_relu && m->layers[i].fused_relu) return 1;
    if (t == &rt_layer_res_add && m->layers[i].fused_add) return 1;
    if (t != &rt_layer_relu && t != &rt_layer_leakyrelu) return 0;
    return prev == &rt_layer_conv2d || prev == &rt_layer_dense || prev == &rt_layer_batchnorm;
}

/* Fuses each relu into the batchnorm or residual add right before it, when the backend
 * has the fused ops (bn_fwd_* with rt_bn_desc.relu and bn_relu_bwd; add_relu). Nothing
 * else reads the value before the relu: a relu after a batchnorm already wrote over it
 * (aliases_input), and an add's output feeds only the relu after it. The relu's gradient
 * is then taken inside the fused layer's backward, which recomputes or reads the mask. */
static void fuse_relus(rt_model *m)
{
    for (int i = 0; i < m->nlayers; i++) m->layers[i].fused_relu = 0;
    if (m->unfused) return;
    const rt_backend_ops *ops = m->b->ops;
    for (int i = 1; i < m->nlayers; i++) {
        rt_layer *l = &m->layers[i], *p = &m->layers[i - 1];
        if (l->type != &rt_layer_relu) continue;
        if ((p->type == &rt_layer_batchnorm && ops->bn_relu_bwd) ||
            (p->type == &rt_layer_res_add && ops->add_relu))
            l->fused_relu = p->fused_relu = 1;
    }
}

/* Has each conv2d followed by a batchnorm take the norm's statistics as it stores its
 * output, when the backend has the two ops (conv2d_fwd_moments, bn_fwd_train_moments):
 * the norm's input is exactly the conv's output, and the forward runs them in turn. The
 * moments are the norm's third saved tensor (per sample), there only when fused. */
static void fuse_moments(rt_model *m)
{
    for (int i = 0; i < m->nlayers; i++) {
        rt_layer *l = &m->layers[i];
        /* the moments were the saved tensor added last: drop exactly that slot */
        if (l->moments && l->type == &rt_layer_batchnorm) l->nsaved = (int)(l->moments - l->saved);
        l->moments = NULL;
    }
    const rt_backend_ops *ops = m->b->ops;
    if (m->unfused || !ops->conv2d_fwd_moments || !ops->bn_fwd_train_moments) return;
    for (int i = 1; i < m->nlayers; i++) {
        rt_layer *l = &m->layers[i], *p = &m->layers[i - 1];
        if (l->type != &rt_layer_batchnorm || p->type != &rt_layer_conv2d) continue;
        if (l->nsaved >= RT_LAYER_MAX_SAVED) continue; /* no slot left: the norm's own pass */
        rt_tensor *t = &l->saved[l->nsaved];
        rtp_shape(t, 1, l->in_c, RT_MOMENT_FLOATS, 1);
        l->saved_per_sample[l->nsaved++] = 1;
        l->moments = p->moments = t;
    }
}

/* Fuses each residual add into the batchnorm right before it (the last layer of the
 * block's main path or of its projection) when the backend has bn_add_fwd_train and
 * bn_add_bwd: the norm writes the sum, relu'd when the add has the relu fused, into its
 * output, which the add's then aliases (only the add reads the norm's own output), and
 * its backward keeps the add's gradient. A block's begin right after such an add (or
 * its fused relu) then leaves its sum of the two paths' gradients to that norm, which
 * reads the begin's skip gradient as skip_grad. */
static void fuse_adds(rt_model *m)
{
    for (int i = 0; i < m->nlayers; i++)
        m->layers[i].fused_add = NULL, m->layers[i].skip_grad = NULL;
    const rt_backend_ops *ops = m->b->ops;
    if (m->unfused || !ops->bn_add_fwd_train || !ops->bn_add_bwd) return;
    for (int i = 1; i < m->nlayers; i++) {
        rt_layer *l = &m->layers[i], *p = &m->layers[i - 1];
        if (l->type == &rt_layer_res_add && p->type == &rt_layer_batchnorm && !p->fused_relu)
            l->fused_add = p, p->fused_add = l;
    }
    for (int i = 1; i < m->nlayers; i++) {
        rt_layer *l = &m->layers[i];
        int j = i - 1;
        if (l->type != &rt_layer_res_begin) continue;
        if (m->layers[j].type == &rt_layer_relu && m->layers[j].fused_relu) j--;
        if (j < 0 || m->layers[j].type != &rt_layer_res_add || !m->layers[j].fused_add) continue;
        const rt_layer *keeper = l->block[1] ? l->block[1] : l->block[2];
        l->fused_add = m->layers[j].fused_add;
        l->fused_add->skip_grad = &keeper->saved[0];
    }
}

static rt_status bind_params(rt_model *m, rt_error *err)
{
    size_t P = 0, off = 0;
    for (int i = 0; i < m->nlayers; i++)
        for (int p = 0; p < m->layers[i].nparams; p++)
            P += rt_optim_align(rt_tensor_numel(&m->layers[i].param[p]));
    RT_TRY(rt_arena_init(&m->params, m->b, P * 4, err));
    RT_TRY(rt_arena_init(&m->grads, m->b, P * 4, err));
    for (int i = 0; i < m->nlayers; i++) {
        rt_layer *l = &m->layers[i];
        for (int p = 0; p < l->nparams; p++) {
            l->param[p].data = (char *)m->params.base + off * 4;
            l->grad[p] = l->param[p];
            l->grad[p].data = (char *)m->grads.base + off * 4;
            off += rt_optim_align(rt_tensor_numel(&l->param[p]));
        }
    }
    rtp_shape(&m->pflat, (int)P, 1, 1, 1);
    m->pflat.data = m->params.base;
    m->gflat = m->pflat;
    m->gflat.data = m->grads.base;
    return RT_OK;
}

static rt_status bind_acts(rt_model *m, rt_error *err)
{
    const int N = m->max_batch,
              L = m->in.num_classes > 0 ? m->in.num_classes : m->layers[m->nlayers - 1].out_c;
    size_t maxact = (size_t)m->in.c * m->in.h * m->in.w, need = rt_arena_need(maxact * N);
    size_t sneed = 0;
    for (int i = 0; i < m->nlayers; i++) {
        rt_layer *l = &m->layers[i];
        if (act_numel(l) > maxact) maxact = act_numel(l);
        if (!aliases_input(m, i) && l->type != &rt_layer_res_shortcut)
            need += rt_arena_need(act_numel(l) * N);
        for (int s = 0; s < l->nsaved; s++) {
            size_t n = rt_tensor_numel(&l->saved[s]);
            if (l->saved_per_sample[s])
                need += rt_arena_need((size_t)l->saved[s].c * l->saved[s].h * l->saved[s].w * N);
            else sneed += rt_arena_need(n);
        }
        for (int s = 0; s < l->nbufs; s++) sneed += rt_arena_need(rt_tensor_numel(&l->buf[s]));
    }
    need +=
        2 * rt_arena_need(maxact * N) + 2 * rt_arena_need((size_t)N) + rt_arena_need((size_t)N * L);
    RT_TRY(rt_arena_init(&m->acts, m->b, need, err));
    RT_TRY(rt_arena_init(&m->state, m->b, sneed + 64, err));
    if (!(m->act = calloc((size_t)m->nlayers + 1, sizeof *m->act)) ||
        !(m->host_loss = malloc((size_t)N * sizeof *m->host_loss)))
        return RT_ERR(err, RT_ENOMEM, "out of memory attaching the model");
    rtp_shape(&m->act[0], N, m->in.c, m->in.h, m->in.w);
    RT_TRY(rt_arena_take(&m->acts, &m->act[0], err));
    for (int i = 0; i < m->nlayers; i++) {
        rt_layer *l = &m->layers[i];
        rtp_shape(&m->act[i + 1], N, l->out_c, l->out_h, l->out_w);
        if (l->type == &rt_layer_res_shortcut) /* a view of the block's input */
            m->act[i + 1].data = m->act[l->block[0]->index].data;
        else if (aliases_input(m, i)) m->act[i + 1].data = m->act[i].data;
        else RT_TRY(rt_arena_take(&m->acts, &m->act[i + 1], err));
        if (l->type == &rt_layer_res_add) /* x, or M with a projection */
            l->skip = &m->act[(l->block[1] ? l->block[1] : l->block[0])->index];
        for (int s = 0; s < l->nsaved; s++) {
            if (l->saved_per_sample[s]) {
                l->saved[s].n = N;
                RT_TRY(rt_arena_take(&m->acts, &l->saved[s], err));
            } else {
                RT_TRY(rt_arena_take(&m->state, &l->saved[s], err));
            }
        }
        for (int s = 0; s < l->nbufs; s++) RT_TRY(rt_arena_take(&m->state, &l->buf[s], err));
    }
    for (int g = 0; g < 2; g++) {
        rtp_shape(&m->gbuf[g], N, (int)maxact, 1, 1);
        RT_TRY(rt_arena_take(&m->acts, &m->gbuf[g], err));
    }
    rtp_shape(&m->labels, N, 1, 1, 1);
    m->labels.dtype = RT_I32;
    RT_TRY(rt_arena_take(&m->acts, &m->labels, err));
    rtp_shape(&m->loss, N, 1, 1, 1);
    RT_TRY(rt_arena_take(&m->acts, &m->loss, err));
    rtp_shape(&m->probs, N, L, 1, 1);
    return rt_arena_take(&m->acts, &m->probs, err);
}

static rt_status init_params(rt_model *m, rt_error *err)
{
    for (int i = 0; i < m->nlayers; i++) {
        rt_layer *l = &m->layers[i];
        if (!l->type->init) continue;
        float *host[RT_LAYER_MAX_PARAMS * 2] = {0};
        rt_tensor *t[RT_LAYER_MAX_PARAMS * 2];
        int nt = 0;
        for (int p = 0; p < l->nparams; p++) t[nt++] = &l->param[p];
        for (int p = 0; p < l->nbufs; p++) t[nt++] = &l->buf[p];
        rt_status s = RT_OK;
        for (int k = 0; k < nt && s == RT_OK; k++)
            if (!(host[k] = malloc(rt_tensor_bytes(t[k]))))
                s = RT_ERR(err, RT_ENOMEM, "out of memory initialising the model");
        if (s == RT_OK) l->type->init(l, host, m->seed);
        for (int k = 0; k < nt && s == RT_OK; k++)
            s = rt_backend_upload(m->b, t[k], host[k], rt_tensor_bytes(t[k]), err);
        for (int k = 0; k < nt; k++) free(host[k]);
        RT_TRY(s);
    }
    return RT_OK;
}

rt_status rt_model_attach(rt_model *m, rt_backend *b, int max_batch, uint64_t seed, rt_error *err)
{
    rtp_model_detach(m);
    if (max_batch < 1) return RT_ERR(err, RT_EINVAL, "batch size must be >= 1");
    m->b = b;
    m->max_batch = max_batch;
    m->seed = seed;
    size_t ws = 0;
    for (int i = 0; i < m->nlayers; i++) {
        const rt_layer *l = &m->layers[i];
        size_t w = l->type->workspace ? l->type->workspace(l, b, max_batch) : 0;
        if (w > ws) ws = w;
    }
    fuse_relus(m);
    fuse_adds(m);
    fuse_moments(m);
    rt_status s = b->ops->reserve_workspace(b, ws, err);
    if (s == RT_OK) s = bind_params(m, err);
    if (s == RT_OK) s = bind_acts(m, err);
    if (s == RT_OK) s = init_params(m, err);
    if (s != RT_OK) rtp_model_detach(m);
    return s;
}

/* ---- the step ---- */

/* Timing clock: wall time, or the process's CPU time (all threads) when timing == 2,
 * which is robust to other processes sharing the cores (benchmarks on busy machines). */
static double now_clock(int timing)
{
    struct timespec ts;
    clock_gettime(timing == 2 ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
#define now() now_clock(m->timing)

static rt_status check_n(const rt_model *m, int N, rt_error *err)
{
    if (!m->b) return RT_ERR(err, RT_EINVAL, "the model is not attached to a backend");
    if (N < 1 || N > m->max_batch)
        return RT_ERR(err, RT_EINVAL, "batch of %d outside [1, %d]", N, m->max_batch);
    return RT_OK;
}

rt_status rt_model_forward(rt_model *m, int N, int train, uint32_t step, rt_error *err)
{
    RT_TRY(check_n(m, N, err));
    rt_fwd_ctx ctx = {.train = train, .seed = m->seed, .step = step, .shard = m->shard};
    m->act[0].n = N;
    for (int i = 0; i < m->nlayers; i++) {
        rt_layer *l = &m->layers[i];
        double t0 = m->timing ? now() : 0.0;
        m->act[i + 1].n = N;
        RT_TRY(l->type->forward(l, m->b, &m->act[i + 1], &m->act[i], &ctx, err));
        if (m->timing) {
            RT_TRY(m->b->ops->sync(m->b, err));
            m->tfwd[i] += now() - t0;
        }
    }
    return RT_OK;
}

rt_status rt_model_loss(rt_model *m, int N, double *loss_out, float *probs_out,
                        float *sample_loss_out, rt_error *err)
{
    RT_TRY(check_n(m, N, err));
    double t0 = m->timing ? now() : 0.0;
    rt_xent_desc d = {.N = N, .L = m->probs.c, .smoothing = m->smoothing};
    m->loss.n = m->labels.n = m->probs.n = N;
    rt_tensor logits = m->act[m->nlayers];
    RT_TRY(rt_backend_xent_fwd(m->b, &m->loss, &m->probs, &logits, &m->labels, &d, err));
    if (loss_out || sample_loss_out) /* nothing asked: no read back (device path) */
        RT_TRY(rt_backend_download(m->b, m->host_loss, &m->loss, (size_t)N * 4, err));
    if (loss_out) {
        double s = 0.0;
        for (int n = 0; n < N; n++) s += m->host_loss[n];
        *loss_out = s / N;
    }
    if (sample_loss_out) memcpy(sample_loss_out, m->host_loss, (size_t)N * 4);
    if (probs_out)
        RT_TRY(rt_backend_download(m->b, probs_out, &m->probs, (size_t)N * d.L * 4, err));
    if (m->timing) m->tfwd[m->nlayers] += now() - t0;
    return RT_OK;
}

rt_status rt_model_logits_read(rt_model *m, int N, float *dst, rt_error *err)
{
    RT_TRY(check_n(m, N, err));
    rt_tensor logits = m->act[m->nlayers];
    logits.n = N;
    return rt_backend_download(m->b, dst, &logits, rt_tensor_bytes(&logits), err);
}

rt_status rt_model_step_stats(rt_model *m, int N, rt_tensor *stats, int row, rt_error *err)
{
    RT_TRY(check_n(m, N, err));
    if (!m->b->ops->xent_stats)
        return RT_ERR(err, RT_EINVAL, "the %s backend has no xent_stats", m->b->ops->name);
    rt_xent_desc d = {.N = N, .L = m->probs.c, .smoothing = m->smoothing};
    return rt_backend_xent_stats(m->b, stats, row, &m->loss, &m->probs, &m->labels, &d, err);
}

rt_status rt_model_backward(rt_model *m, int N, rt_error *err)
{
    return rt_model_backward_scaled(m, N, NULL, err);
}

rt_status rt_model_backward_scaled(rt_model *m, int N, const rt_tensor *amp, rt_error *err)
{
    return rt_model_backward_part(m, N, N, amp, err);
}

rt_status rt_model_backward_part(rt_model *m, int N, int total, const rt_tensor *amp, rt_error *err)
{
    RT_TRY(check_n(m, N, err));
    if (total < N) return RT_ERR(err, RT_EINVAL, "backward: %d samples of a batch of %d", N, total);
    if (amp && !m->b->ops->amp_scale)
        return RT_ERR(err, RT_EINVAL, "the %s backend cannot scale the loss", m->b->ops->name);
    double t0 = m->timing ? now() : 0.0;
    rt_xent_desc d = {.N = N, .L = m->probs.c, .smoothing = m->smoothing};
    int cur = 0;
    rt_tensor dout = m->gbuf[0];
    rtp_shape(&dout, N, d.L, 1, 1);
    dout.data = m->gbuf[0].data;
    RT_TRY(rt_backend_xent_bwd(m->b, &dout, &m->probs, &m->labels, 1.0f / (float)total, &d, err));
    if (amp) RT_TRY(rt_backend_amp_scale(m->b, &dout, amp, err)); /* x 2^k: exact */
    if (m->timing) m->tbwd[m->nlayers] += now() - t0;
    for (int i = m->nlayers - 1; i >= m->bwd_floor; i--) {
        rt_layer *l = &m->layers[i];
        t0 = m->timing ? now() : 0.0;
        rt_tensor din = m->act[i];
        int need_din = i > m->bwd_floor || l->type == &rt_layer_batchnorm;
        if (l->type == &rt_layer_flatten || (l->type == &rt_layer_relu && l->fused_relu) ||
            ((l->type == &rt_layer_res_begin || l->type == &rt_layer_res_add) && l->fused_add)) {
            /* pass-through, no copy; a fused add's norm takes dout and keeps the add's
             * gradient, a fused begin's sum is done by that norm (fuse_adds) */
            din.data = dout.data;
        } else if (l->type == &rt_layer_res_add) {
            /* add keeps dout (through its fused relu) for the skip; the main path (or the
             * projection) starts from that kept gradient, which no layer writes over */
            RT_TRY(l->type->backward(l, m->b, NULL, &dout, &m->act[i], &m->act[i + 1], err));
            din.data = l->saved[0].data;
        } else if (l->type == &rt_layer_res_shortcut) {
            din.data = l->block[2]->saved[0].data; /* dM, kept by add: no copy */
            RT_TRY(l->type->backward(l, m->b, &din, &dout, &m->act[i], &m->act[i + 1], err));
        } else if (i > 0 && m->layers[i - 1].type == &rt_layer_res_shortcut) {
            /* the projection's first layer writes the gradient for x straight into the
             * shortcut's keep (a gradient buffer would be overwritten by the main path) */
            din.data = m->layers[i - 1].saved[0].data;
            RT_TRY(l->type->backward(l, m->b, &din, &dout, &m->act[i], &m->act[i + 1], err));
        } else {
            din.data = m->gbuf[1 - cur].data;
            RT_TRY(l->type->backward(l, m->b, need_din ? &din : NULL, &dout, &m->act[i],
                                     &m->act[i + 1], err));
            cur = 1 - cur;
        }
        dout = din;
        if (m->timing) {
            RT_TRY(m->b->ops->sync(m->b, err));
            m->tbwd[i] += now() - t0;
        }
    }
    return RT_OK;
}

void rt_model_set_backward_floor(rt_model *m, int floor)
{
    m->bwd_floor = floor < 0 ? 0 : floor > m->nlayers ? m->nlayers : floor;
}

int rt_model_backward_floor(const rt_model *m) { return m->bwd_floor; }

/* ---- timing ---- */

void rt_model_timing_enable(rt_model *m, int on) { m->timing = on; }

void rt_model_timing(const rt_model *m, int i, double *fwd, double *bwd)
{
    *fwd = (i >= 0 && i <= m->nlayers) ? m->tfwd[i] : 0.0;
    *bwd = (i >= 0 && i <= m->nlayers) ? m->tbwd[i] : 0.0;
}

void rt_model_timing_reset(rt_model *m)
{
    memset(m->tfwd, 0, ((size_t)m->nlayers + 1) * sizeof *m->tfwd);
    memset(m->tbwd, 0, ((size_t)m->nlayers + 1) * sizeof *m->tbwd);
}
