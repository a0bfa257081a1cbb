/* rt_trainer_device.c - the trainer's device path (rt_trainer.h): the step runs on the
 * backend from data already there, with no host round trip.
 *
 * At create: the training set (images f32, labels as i32, validated) is uploaded once
 * (upload_set: a set held as pixels goes up as its bytes, a staging buffer at a time,
 * and the backend normalises them: no host copy of the floats), with room for the
 * epoch order, a statistics ring and the optimiser state. A step:
 * upload the order if the epoch changed (n int32, once an epoch) -> gather_batch ->
 * forward -> loss -> xent_stats into ring row `pending` -> backward (loss-scaled when
 * loss scaling is on) -> amp_unscale -> clip_grad (when clipping) -> the optimiser op
 * (amp-gated). With accumulation (rt_trainer_controls.c) gather to backward run once a
 * part, each part's statistics in a row of its own (K rows a step). The host keeps
 * for each ring row what it knows without the device (step, epoch, position, lr) and
 * reads the ring when progress is due (read_stats): one download, one
 * synchronisation; the optimiser state comes back only on rtp_dev_flush (checkpoints,
 * the end of a run). Backend memory: the data set, 2 x F floats of optimiser state (F:
 * the length of the flat parameter vector, rt_model_params_flat), a 256-row ring.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_amp_rule.h"
#include "rt_trainer_internal.h"

#define RING_ROWS 256
#define STAGE_BYTES (16u << 20) /* upload_set's staging buffer, host and device */
enum { M_DATA, M_LABELS, M_ORDER, M_STATS, M_AMP, M_S0, M_S1 };

/* Backend memory for a (n,c,h,w) tensor; an out-of-memory error says what it was for. */
static rt_status dev_alloc(rt_trainer *t, int slot, rt_tensor *out, rt_dtype dt, int n, int c,
                           int h, int w, const char *what, rt_error *err)
{
    rt_backend *b = rt_model_backend(t->m);
    rtp_trainer_dev *d = t->dev;
    size_t bytes = (size_t)n * c * h * w * 4;
    rt_status s = b->ops->alloc(b, &d->mem[slot], bytes ? bytes : 4, err);
    if (s != RT_OK) {
        if (err) { /* say what it was for; the backend's hint is about the model */
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            char *hint = strstr(msg, " ---> HINT");
            if (hint) *hint = '\0';
            RT_ERR(err, s,
                   "keeping %s in %s memory (%.2f MiB): %s ---> HINT: train on fewer "
                   "images (%%dataset --subset N), free other models, or use --device cpu",
                   what, b->ops->name, (double)bytes / 1048576.0, msg);
        }
        return s;
    }
    *out = (rt_tensor){.data = d->mem[slot], .dtype = dt, .n = n, .c = c, .h = h, .w = w};
    return RT_OK;
}

static int has_ops(const rt_backend_ops *o, int amp)
{
    return o->gather_batch && o->xent_stats &&
           (!amp || (o->amp_scale && o->amp_unscale && o->amp_adam_update && o->amp_sgd_update));
}

/* A set held as pixels into d->data, STAGE_BYTES at a time: the bytes go up and the
 * backend's bytes_to_f32 normalises them with rt_dataset_norm_table's floats (those of
 * rt_dataset_image_f32, bit for bit); a backend without that op gets floats made on the
 * host, a staging buffer at a time. Either way the host never holds the set as floats. */
static rt_status upload_pixels(rt_trainer *t, rt_error *err)
{
    rt_backend *b = rt_model_backend(t->m);
    rtp_trainer_dev *d = t->dev;
    const rt_dataset *ds = t->data;
    size_t plane = (size_t)ds->h * (size_t)ds->w, img = (size_t)ds->c * plane;
    int on_dev = b->ops->bytes_to_f32 != NULL && ds->c <= 4;
    size_t per = on_dev ? img : img * sizeof(float); /* staged bytes an image */
    int rows = per < STAGE_BYTES ? (int)(STAGE_BYTES / per) : 1;
    if (rows > ds->n) rows = ds->n;
    uint8_t *host = malloc((size_t)rows * per);
    void *mem = NULL; /* device staging: the tables (4 x 256 floats), then the bytes */
    rt_status s = host ? RT_OK : RT_ERR(err, RT_ENOMEM, "out of memory staging the training set");
    if (s == RT_OK && on_dev) s = b->ops->alloc(b, &mem, 4096 + (size_t)rows * per + 4, err);
    rt_tensor lut = {.data = mem, .dtype = RT_F32, .n = ds->c * 256, .c = 1, .h = 1, .w = 1};
    rt_tensor bytes = {.data = mem ? (char *)mem + 4096 : NULL,
                       .dtype = RT_I32,
                       .n = (int)(((size_t)rows * per + 3) / 4),
                       .c = 1,
                       .h = 1,
                       .w = 1};
    if (s == RT_OK && on_dev) {
        float tab[4][256];
        for (int c = 0; c < ds->c; c++) rt_dataset_norm_table(ds, c, tab[c]);
        s = rt_backend_upload(b, &lut, tab, (size_t)ds->c * 256 * sizeof(float), err);
    }
    for (int i0 = 0; s == RT_OK && i0 < ds->n; i0 += rows) {
        int k = ds->n - i0 < rows ? ds->n - i0 : rows;
        rt_tensor part = d->data; /* images i0 .. i0 + k of the set on the device */
        part.data = (char *)d->data.data + (size_t)i0 * img * sizeof(float);
        part.n = k;
        if (on_dev) {
            for (int j = 0; j < k; j++) rt_dataset_image_u8(ds, i0 + j, host + (size_t)j * img);
            s = rt_backend_upload(b, &bytes, host, (size_t)k * img, err);
            if (s == RT_OK) s = rt_backend_bytes_to_f32(b, &part, &bytes, &lut, ds->c, plane, err);
        } else {
            float *f = (float *)(void *)host;
            for (int j = 0; j < k; j++) rt_dataset_image_f32(ds, i0 + j, f + (size_t)j * img);
            s = rt_backend_upload(b, &part, f, (size_t)k * img * sizeof(float), err);
        }
    }
    if (mem) b->ops->free(b, mem);
    free(host);
    return s;
}

rt_status rtp_dev_create(rt_trainer *t, rt_error *err)
{
    rt_backend *b = rt_model_backend(t->m);
    const rt_dataset *ds = t->data;
    if (!has_ops(b->ops, t->cfg.loss_scaling))
        return RT_ERR(err, RT_EINVAL,
                      "the %s backend cannot train on its own memory (no "
                      "gather_batch/xent_stats%s op)",
                      b->ops->name, t->cfg.loss_scaling ? "/loss-scaling" : "");
    if (!(t->dev = calloc(1, sizeof *t->dev)))
        return RT_ERR(err, RT_ENOMEM, "out of memory creating the trainer");
    rtp_trainer_dev *d = t->dev;
    d->ring = RING_ROWS;
    const int K = t->cfg.accumulate; /* a step's parts each write a row of stats */
    d->order_epoch = -1;
    d->upload_optim = 1;
    const char *env = getenv("KILN_CUDA_GRAPHS");
    /* --freeze / --lr-mult: a graph's optimiser nodes all take the step's one lr */
    d->graphs_on = b->ops->graph_begin && !t->cfg.no_graphs && !t->cfg.dist &&
                   t->cfg.nreplicas == 0 && !t->groups && !(env && !strcmp(env, "0"));
    d->rows = calloc(RING_ROWS, sizeof *d->rows);
    d->hstats = calloc((size_t)RING_ROWS * K * RT_STEP_STATS, sizeof *d->hstats);
    int32_t *lab = malloc((size_t)ds->n * sizeof *lab);
    if (!d->rows || !d->hstats || !lab) {
        free(lab);
        return RT_ERR(err, RT_ENOMEM, "out of memory creating the trainer");
    }
    for (int i = 0; i < ds->n; i++) { /* the device cannot report a bad label: check here */
        lab[i] = ds->labels[i];
        if (lab[i] >= ds->num_classes) {
            free(lab);
            return RT_ERR(err, RT_EINVAL, "label %d of image %d outside [0, %d) in '%s'",
                          ds->labels[i], i, ds->num_classes, ds->name);
        }
    }
    /* the flat layout (gaps included), which rt_optim's state slots share */
    long P = (long)rt_tensor_numel(rt_model_params_flat(t->m));
    size_t slots = rt_optim_num_slots(t->optim);
    rt_status s =
        dev_alloc(t, M_DATA, &d->data, RT_F32, ds->n, ds->c, ds->h, ds->w, "the training set", err);
    if (s == RT_OK)
        s = dev_alloc(t, M_LABELS, &d->labels, RT_I32, ds->n, 1, 1, 1, "the labels", err);
    if (s == RT_OK)
        s = dev_alloc(t, M_ORDER, &d->order, RT_I32, ds->n, 1, 1, 1, "the data order", err);
    if (s == RT_OK)
        s = dev_alloc(t, M_STATS, &d->stats, RT_F32, RING_ROWS * K, RT_STEP_STATS, 1, 1,
                      "the step statistics", err);
    if (s == RT_OK && t->cfg.loss_scaling)
        s = dev_alloc(t, M_AMP, &d->amp, RT_I32, RT_AMP_WORDS, 1, 1, 1, "the loss scale", err);
    if (s == RT_OK && slots > 0)
        s = dev_alloc(t, M_S0, &d->s0, RT_F32, (int)P, 1, 1, 1, "the optimiser state", err);
    if (s == RT_OK && slots > 1)
        s = dev_alloc(t, M_S1, &d->s1, RT_F32, (int)P, 1, 1, 1, "the optimiser state", err);
    if (s == RT_OK)
        s = ds->images ? rt_backend_upload(b, &d->data, ds->images, rt_tensor_bytes(&d->data), err)
                       : upload_pixels(t, err);
    if (s == RT_OK) s = rt_backend_upload(b, &d->labels, lab, rt_tensor_bytes(&d->labels), err);
    free(lab);
    return s;
}

void rtp_dev_destroy(rt_trainer *t)
{
    rtp_trainer_dev *d = t->dev;
    if (!d) return;
    rt_backend *b = rt_model_backend(t->m);
    for (int i = 0; i < (int)(sizeof d->graphs / sizeof d->graphs[0]); i++)
        rt_backend_graph_free(b, d->graphs[i].g);
    for (int i = 0; i < (int)(sizeof d->mem / sizeof d->mem[0]); i++)
        if (d->mem[i]) b->ops->free(b, d->mem[i]);
    free(d->rows);
    free(d->hstats);
    free(d);
    t->dev = NULL;
}

int64_t rt_trainer_graph_launches(const rt_trainer *t, int64_t *recorded)
{
    if (recorded) *recorded = t->dev ? t->dev->graph_records : 0;
    return t->dev ? t->dev->graph_launches : 0;
}

/* Host mirrors -> device: the optimiser state and the loss-scaling state. */
static rt_status upload_optim(rt_trainer *t, rt_error *err)
{
    rt_backend *b = rt_model_backend(t->m);
    rtp_trainer_dev *d = t->dev;
    size_t n;
    float *a = rt_optim_state_slot(t->optim, 0, &n);
    if (a) RT_TRY(rt_backend_upload(b, &d->s0, a, n * sizeof *a, err));
    a = rt_optim_state_slot(t->optim, 1, &n);
    if (a) RT_TRY(rt_backend_upload(b, &d->s1, a, n * sizeof *a, err));
    if (t->cfg.loss_scaling) {
        union {
            rt_amp_state s;
            int32_t w[RT_AMP_WORDS];
        } u;
        memset(&u, 0, sizeof u);
        rt_amp_state_init(&u.s, t->st.loss_scale > 0 ? t->st.loss_scale : t->cfg.loss_scale_init);
        u.s.steps = rt_optim_step_count(t->optim);
        u.s.tracker = (int32_t)t->st.scale_tracker;
        u.s.skipped = t->st.skipped_steps;
        t->st.loss_scale = u.s.scale;
        RT_TRY(rt_backend_upload(b, &d->amp, u.w, sizeof u.w, err));
    }
    d->upload_optim = 0;
    return RT_OK;
}

/* The loss-scaling state into the host's mirror (and the device's step count into
 * *steps when asked). */
static rt_status download_amp(rt_trainer *t, int64_t *steps, rt_error *err)
{
    union {
        rt_amp_state s;
        int32_t w[RT_AMP_WORDS];
    } u;
    RT_TRY(rt_backend_download(rt_model_backend(t->m), u.w, &t->dev->amp, sizeof u.w, err));
    t->st.loss_scale = u.s.scale;
    t->st.scale_tracker = u.s.tracker;
    t->st.skipped_steps = u.s.skipped;
    if (steps) *steps = u.s.steps;
    return RT_OK;
}

/* Device -> host mirrors (unless the host's are newer). */
static rt_status download_optim(rt_trainer *t, rt_error *err)
{
    rt_backend *b = rt_model_backend(t->m);
    rtp_trainer_dev *d = t->dev;
    if (d->upload_optim) return RT_OK;
    size_t n;
    float *a = rt_optim_state_slot(t->optim, 0, &n);
    if (a) RT_TRY(rt_backend_download(b, a, &d->s0, n * sizeof *a, err));
    a = rt_optim_state_slot(t->optim, 1, &n);
    if (a) RT_TRY(rt_backend_download(b, a, &d->s1, n * sizeof *a, err));
    if (!t->cfg.loss_scaling) return RT_OK; /* the step count is kept on the host */
    int64_t steps;
    RT_TRY(download_amp(t, &steps, err));
    return rt_optim_set_step_count(t->optim, steps, err);
}

/* The progress read: the ring rows since the last read (and the loss-scaling state the
 * progress line shows); one download each, no optimiser state. */
static rt_status read_stats(rt_trainer *t, rt_error *err)
{
    rt_backend *b = rt_model_backend(t->m);
    rtp_trainer_dev *d = t->dev;
    const int K = t->cfg.accumulate, B = t->cfg.batch_size;
    if (d->pending > 0) {
        RT_TRY(rt_backend_download(b, d->hstats, &d->stats,
                                   (size_t)d->pending * K * RT_STEP_STATS * sizeof(float), err));
        /* the skip count and scale the progress line shows */
        if (t->cfg.loss_scaling) RT_TRY(download_amp(t, NULL, err));
        int n = d->pending;
        d->pending = 0;
        for (int i = 0; i < n; i++) {
            const float *r = d->hstats + (size_t)i * K * RT_STEP_STATS;
            const int count = d->rows[i].count;
            double loss;
            memcpy(&loss, r, sizeof loss); /* the host path's double, bit for bit */
            int correct = (int)r[2];
            if (count > B) { /* parts of batch_size: host_parts' sum, in the same order */
                double sum = 0.0;
                correct = 0;
                for (int k = 0; k * B < count; k++) {
                    const float *rk = r + (size_t)k * RT_STEP_STATS;
                    int nk = count - k * B < B ? count - k * B : B;
                    memcpy(&loss, rk, sizeof loss);
                    sum += loss * nk;
                    correct += (int)rk[2];
                }
                loss = sum / count;
            }
            rtp_trainer_account(t, &d->rows[i], loss, correct);
        }
    }
    d->last_read = rtp_trainer_now();
    return RT_OK;
}

rt_status rtp_dev_flush(rt_trainer *t, rt_error *err)
{
    RT_TRY(read_stats(t, err));
    return download_optim(t, err); /* for a checkpoint: ~2 x 4 bytes a parameter */
}

/* Ranks: this rank's share's statistics (ring row 0) and gradients (gr, scaled by the
 * loss scale under loss scaling: every rank has the same scale, so the sum is the
 * scaled mean and an inf/NaN reaches every rank) through host memory to the exchange
 * (rt_trainer_dist.c) and the batch's mean gradient back. One synchronisation a step.
 * A world that sums in device memory (the CUDA devices of a group, GPU ranks over NCCL)
 * sums the gradients where they are, and the statistics row and the stop votes in the
 * same group of collectives (rt_dist_stats): its wait (bounded by the world's timeout,
 * rt_nccl.h) is the step's one host wait, and there is no second collective. */
static rt_status dist_exchange(rt_trainer *t, rt_tensor *gr, int n, int count, double *loss,
                               int *correct, rt_error *err)
{
    rt_backend *b = rt_model_backend(t->m);
    const size_t bytes = rt_tensor_bytes(gr);
    if (t->dist_dev) {
        rt_dist_stats st = {.row = n > 0 ? &t->dev->stats : NULL, .n = n};
        rtp_dist_votes(t, st.votes);
        if (n == 0) RT_TRY(rt_backend_fill(b, gr, 0.0f, err)); /* adds nothing */
        RT_TRY(rt_dist_allreduce_dev_f32(t->cfg.dist, b, gr, (float)n / (float)count, &st,
                                         "gradient all-reduce", (long long)t->st.step + 1, err));
        rtp_dist_agree(t, st.sums, count, loss, correct);
        return RT_OK;
    }
    if (n > 0) {
        float row[RT_STEP_STATS];
        RT_TRY(rt_backend_download(b, row, &t->dev->stats, sizeof row, err));
        memcpy(loss, row, sizeof *loss); /* as read_stats: the double in words 0-1 */
        *correct = (int)row[2];
        RT_TRY(rt_backend_download(b, t->dist_host, gr, bytes, err));
    }
    RT_TRY(rtp_dist_average(t, t->dist_host, n, count, loss, correct, err));
    return rt_backend_upload(b, gr, t->dist_host, bytes, err);
}

/* The optimiser op on p with its state s0/s1 and gradient gr at learning rate lr, step
 * `step`; amp: the loss scale to undo (NULL: none). For all parameters, or a run of
 * parameters of one lr multiplier. */
static rt_status dev_update(rt_trainer *t, rt_tensor *p, rt_tensor *s0, rt_tensor *s1,
                            const rt_tensor *gr, rt_tensor *amp, double lr, int64_t step,
                            rt_error *err)
{
    rt_backend *b = rt_model_backend(t->m);
    const rt_optim_config *oc = rt_optim_get_config(t->optim);
    if (oc->kind == RT_OPTIM_SGD) {
        rt_sgd_desc sd = {.lr = lr,
                          .momentum = oc->momentum,
                          .dampening = oc->dampening,
                          .weight_decay = oc->weight_decay,
                          .nesterov = oc->nesterov,
                          .step = step};
        rt_tensor *buf = oc->momentum != 0.0 ? s0 : NULL;
        return amp ? rt_backend_amp_sgd_update(b, p, buf, gr, amp, &sd, err)
                   : rt_backend_sgd_update(b, p, buf, gr, &sd, err);
    }
    rt_adam_desc ad = {.lr = lr,
                       .beta1 = oc->beta1,
                       .beta2 = oc->beta2,
                       .eps = oc->eps,
                       .weight_decay = oc->weight_decay,
                       .decoupled = oc->kind == RT_OPTIM_ADAMW,
                       .step = step};
    return amp ? rt_backend_amp_adam_update(b, p, s0, s1, gr, amp, &ad, err)
               : rt_backend_adam_update(b, p, s0, s1, gr, &ad, err);
}

/* --freeze / --lr-mult (never with loss scaling): each run of parameters at its rate,
 * the frozen ones not at all. */
static rt_status grouped_update(rt_trainer *t, double lr, int64_t next, rt_error *err)
{
    rtp_trainer_dev *d = t->dev;
    rt_tensor *p = rt_model_params_flat(t->m), *gr = rt_model_grads_flat(t->m);
    for (int i = 0; i < t->ngroups; i++) {
        const rtp_group *run = &t->groups[i];
        if (run->frozen) continue;
        rt_tensor pv = rtp_flat_view(p, run->off, run->n);
        rt_tensor gv = rtp_flat_view(gr, run->off, run->n);
        rt_tensor s0 = d->s0.data ? rtp_flat_view(&d->s0, run->off, run->n) : d->s0;
        rt_tensor s1 = d->s1.data ? rtp_flat_view(&d->s1, run->off, run->n) : d->s1;
        RT_TRY(dev_update(t, &pv, &s0, &s1, &gv, NULL, lr * run->lr_mult, next, err));
    }
    return RT_OK;
}

/* The ops of one step from the gather to the optimiser (ranks: with the exchange): run,
 * or recorded when a graph is being recorded. */
static rt_status step_ops(rt_trainer *t, rt_gather_desc *g, int64_t start, int lo, int n, int count,
                          double lr, int64_t next, double *dloss, int *dcorrect, rt_error *err)
{
    rt_model *m = t->m;
    rt_backend *b = rt_model_backend(m);
    rtp_trainer_dev *d = t->dev;
    const rt_trainer_config *c = &t->cfg;
    rt_tensor *amp = c->loss_scaling ? &d->amp : NULL;
    /* without ranks, the batch in parts of batch_size (one without accumulation): part k
     * writes ring row pending * K + k; ranks account every step from the exchange, their
     * row is always row 0 */
    const int B = c->batch_size, K = c->accumulate;
    for (int k = 0, off = 0; n > 0 && off < n; k++, off += B) {
        int nk = c->dist || n - off < B ? n - off : B;
        g->start = start + lo + off;
        g->count = nk;
        t->micro = k;
        rt_status s = rt_backend_gather_batch(b, rt_model_input_tensor(m), rt_model_label_tensor(m),
                                              &d->data, &d->labels, &d->order, g, err);
        if (s == RT_OK) s = rt_model_forward(m, nk, 1, rtp_controls_key(t), err);
        if (s == RT_OK) s = rt_model_loss(m, nk, NULL, NULL, NULL, err);
        if (s == RT_OK)
            s = rt_model_step_stats(m, nk, &d->stats, c->dist ? 0 : d->pending * K + k, err);
        if (s == RT_OK) s = rt_model_backward_part(m, nk, n, amp, err);
        if (s == RT_OK) s = rtp_controls_accumulate(t, k, off + nk >= n, err);
        t->micro = 0;
        RT_TRY(s);
    }
    rt_tensor *p = rt_model_params_flat(m), *gr = rt_model_grads_flat(m);
    if (c->dist) RT_TRY(dist_exchange(t, gr, n, count, dloss, dcorrect, err));
    if (amp) RT_TRY(rt_backend_amp_unscale(b, gr, amp, err));
    RT_TRY(rtp_controls_clip(t, err));
    if (t->groups) return grouped_update(t, lr, next, err);
    return dev_update(t, p, &d->s0, &d->s1, gr, amp, lr, next, err);
}

/* The step as a CUDA graph: replayed when this batch size has one; recorded (and run)
 * when the size ran once before op by op (so cuDNN's algorithms are chosen and the
 * workspace grown outside the capture). *done = 0: run it op by op. A step that cannot
 * be recorded turns graphs off for the run, with one line on stderr. */
static rt_status graph_step(rt_trainer *t, rt_gather_desc *gd, int64_t start, int count,
                            uint32_t epoch, double lr, int64_t next, int *done, rt_error *err)
{
    rt_backend *b = rt_model_backend(t->m);
    rtp_trainer_dev *d = t->dev;
    const int nslot = (int)(sizeof d->graphs / sizeof d->graphs[0]);
    *done = 0;
    int i = 0;
    while (i < nslot && d->graphs[i].count != 0 && d->graphs[i].count != count) i++;
    if (i == nslot) return RT_OK; /* more batch sizes than slots: op by op */
    d->graphs[i].count = count;
    rt_step_vars v = {.start = start,
                      .epoch = epoch,
                      .key = rtp_controls_key(t),
                      .row = d->pending * t->cfg.accumulate,
                      .lr = lr,
                      .step = next};
    if (d->graphs[i].g) {
        RT_TRY(rt_backend_graph_launch(b, d->graphs[i].g, &v, done, err));
        if (*done) {
            d->graph_launches++;
            return RT_OK;
        }
        rt_backend_graph_free(b, d->graphs[i].g); /* memory it named is gone: record again */
        d->graphs[i].g = NULL;
    }
    if (!d->graphs[i].seen) {
        d->graphs[i].seen = 1;
        return RT_OK;
    }
    rt_error why = {0};
    rt_graph *g = NULL;
    rt_status s = rt_backend_graph_begin(b, &v, &why);
    if (s == RT_OK) {
        double dl;
        int dc;
        s = step_ops(t, gd, start, 0, count, count, lr, next, &dl, &dc, &why);
        rt_error end_err = {0};
        rt_status e = rt_backend_graph_end(b, &g, &end_err);
        if (s == RT_OK && e != RT_OK) s = e, why = end_err;
    }
    if (s == RT_OK) {
        d->graphs[i].g = g;
        d->graph_records++;
        RT_TRY(rt_backend_graph_launch(b, g, &v, done, err));
        if (*done) d->graph_launches++;
        return RT_OK;
    }
    if (b->lost) return RT_ERR(err, s, "%s", why.msg);
    fprintf(stderr, "kiln: CUDA graphs off for this run (steps run op by op): %s\n", why.msg);
    d->graphs_on = 0;
    return RT_OK;
}

rt_status rtp_dev_step(rt_trainer *t, double lr, int *epoch_end, rt_error *err)
{
    rt_model *m = t->m;
    rt_backend *b = rt_model_backend(m);
    rtp_trainer_dev *d = t->dev;
    const rt_dataset *ds = t->data;
    const rt_trainer_config *c = &t->cfg;
    if (d->upload_optim) RT_TRY(upload_optim(t, err));
    rt_batcher_state before = t->st.batcher;
    int64_t start, epoch;
    int count;
    RT_TRY(rt_batcher_advance(t->batcher, &start, &count, &epoch, err));
    if (epoch != d->order_epoch) { /* once an epoch: n int32 host -> device, no wait */
        const uint32_t *ord = rt_batcher_order(t->batcher, NULL);
        RT_TRY(rt_backend_upload(b, &d->order, ord, (size_t)ds->n * 4, err));
        d->order_epoch = epoch;
    }
    int lo = 0, n = count; /* ranks: this one's share of the batch */
    if (c->dist) rtp_dist_share(t, count, &lo, &n);
    rt_gather_desc g = {.n = ds->n,
                        .C = ds->c,
                        .H = ds->h,
                        .W = ds->w,
                        .start = start + lo,
                        .count = n,
                        .augment = c->augment,
                        .pad = t->bcfg.crop_pad,
                        .flip_p = t->bcfg.flip_p,
                        .cutout = t->bcfg.cutout,
                        .seed = t->bcfg.seed,
                        .epoch = (uint32_t)epoch};
    memcpy(g.pad_value, t->bcfg.pad_value, sizeof g.pad_value);
    int64_t next = rt_optim_step_count(t->optim) + 1; /* without loss scaling */
    double dloss = 0.0;
    int dcorrect = 0, done = 0;
    if (d->graphs_on && !c->dist)
        RT_TRY(graph_step(t, &g, start, count, (uint32_t)epoch, lr, next, &done, err));
    if (!done) RT_TRY(step_ops(t, &g, start, lo, n, count, lr, next, &dloss, &dcorrect, err));
    if (!c->loss_scaling) RT_TRY(rt_optim_set_step_count(t->optim, next, err));
    /* bookkeeping the host knows without the device */
    t->st.step++;
    t->st.batcher = rt_batcher_get_state(t->batcher);
    t->images_done += count;
    t->steps_done++;
    *epoch_end = rt_batcher_epoch_done(t->batcher);
    rtp_pending row = {.step = t->st.step,
                       .epoch = epoch,
                       .position = t->st.batcher.position,
                       .count = count,
                       .reset = before.position == 0 || epoch != before.epoch,
                       .epoch_end = *epoch_end,
                       .lr = lr};
    if (c->dist) { /* the exchange already brought the whole batch's statistics */
        rtp_trainer_account(t, &row, dloss, dcorrect);
        d->last_read = rtp_trainer_now();
        return RT_OK;
    }
    d->rows[d->pending++] = row;
    if (*epoch_end || d->pending == d->ring || t->st.step >= t->total_steps ||
        rtp_trainer_now() - d->last_read >= c->report_every_s)
        RT_TRY(read_stats(t, err));
    return RT_OK;
}
