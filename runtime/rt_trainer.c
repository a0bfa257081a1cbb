/* rt_trainer.c - the steppable training loop (see rt_trainer.h for the contract): the
 * step's checks and events, the bookkeeping shared by both paths, and the host path.
 *
 * Host path (the CPU backend): staging buffers for one minibatch (images, labels,
 * probabilities) are allocated at create, the batcher fills them, the loss is read every
 * step and the OPTIM module's rt_optim updates the parameters in place. The device path
 * (rt_trainer_device.c) keeps the data, the statistics and the optimiser state in
 * backend memory. Randomness: the batcher (shuffle/augment streams keyed by epoch), the
 * model (dropout stream keyed by step) and init (at attach) all derive from the model's
 * seed, so the state to restore is the step and the batcher position.
 */
#include "rt_trainer_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

rt_tensor rtp_flat_view(const rt_tensor *flat, size_t off, size_t n)
{
    return (rt_tensor){.data = (char *)flat->data + off * sizeof(float),
                       .dtype = RT_F32,
                       .n = (int)n,
                       .c = 1,
                       .h = 1,
                       .w = 1};
}

double rtp_trainer_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

rt_trainer_config rt_trainer_config_default(void)
{
    rt_trainer_config c;
    memset(&c, 0, sizeof c);
    c.epochs = 1;
    c.batch_size = 64;
    c.lr = 1e-3;
    c.optim = rt_optim_config_default(RT_OPTIM_ADAM);
    c.schedule = rt_schedule_default(RT_SCHED_CONSTANT);
    c.shuffle = 1;
    c.report_every_s = 0.25;
    c.crop_pad = 4;
    c.flip_p = 0.5f;
    c.accumulate = 1;
    return c;
}

static rt_status check_config(const rt_model *m, const rt_dataset *d, const rt_trainer_config *c,
                              rt_error *err)
{
    const rt_model_input *in = rt_model_input_shape(m);
    if (!rt_model_backend(m))
        return RT_ERR(err, RT_EINVAL, "the model is not attached to a device");
    if (c->epochs < 1) return RT_ERR(err, RT_EINVAL, "--epochs must be >= 1 (got %d)", c->epochs);
    /* ranks and devices train on shares of the batch: the model holds the largest */
    const int world = rt_dist_size(c->dist) + c->nreplicas;
    const int share = c->batch_size / world + (c->batch_size % world != 0);
    if (c->batch_size < 1 || (world == 1 && c->batch_size > rt_model_max_batch(m)))
        return RT_ERR(err, RT_EINVAL,
                      "--batch %d outside [1, %d] (the model was set up for "
                      "%d)",
                      c->batch_size, rt_model_max_batch(m), rt_model_max_batch(m));
    if (share > rt_model_max_batch(m))
        return RT_ERR(err, RT_EINVAL,
                      "--batch %d over %d ranks or devices: shares of up to %d "
                      "samples, but the model was set up for %d",
                      c->batch_size, world, share, rt_model_max_batch(m));
    if (!(c->lr >= 0.0) || !isfinite(c->lr))
        return RT_ERR(err, RT_EINVAL, "--lr must be a finite number >= 0 (got %g)", c->lr);
    if (d->n < 1) return RT_ERR(err, RT_EINVAL, "the training data set '%s' is empty", d->name);
    if (d->c != in->c || d->h != in->h || d->w != in->w)
        return RT_ERR(err, RT_EINVAL,
                      "the data set '%s' has %dx%dx%d images but the model "
                      "was built for %dx%dx%d",
                      d->name, d->c, d->h, d->w, in->c, in->h, in->w);
    if (d->num_classes != in->num_classes)
        return RT_ERR(err, RT_EINVAL,
                      "the data set '%s' has %d classes but the model ends "
                      "with %d outputs",
                      d->name, d->num_classes, in->num_classes);
    return rtp_controls_check(c, d, err);
}

static rt_status make_optim(rt_trainer *t, rt_error *err)
{
    int nt = rt_model_num_tensors(t->m), np = 0;
    rt_optim_param *ps = calloc((size_t)nt + 1, sizeof *ps);
    if (!ps) return RT_ERR(err, RT_ENOMEM, "out of memory creating the optimiser");
    rt_tensor *g = rt_model_grads_flat(t->m), *p = rt_model_params_flat(t->m);
    /* on the device path these are backend pointers rt_optim never dereferences: it is
     * not stepped there, only its state arrays and step count are used (rt_trainer.h) */
    float *pbase = p->data;
    const float *gbase = g->data;
    size_t off = 0;
    rt_status s = RT_OK;
    const double *mult = t->cfg.param_lr_mult;
    int floor = rt_model_num_layers(t->m); /* the lowest layer that trains */
    if (mult && !(t->groups = calloc((size_t)nt + 1, sizeof *t->groups)))
        s = RT_ERR(err, RT_ENOMEM, "out of memory creating the optimiser");
    for (int i = 0; i < nt && s == RT_OK; i++) {
        rt_named_tensor nt_;
        s = rt_model_tensor(t->m, i, &nt_, err);
        if (s != RT_OK || !nt_.trainable) continue;
        /* parameters lie in the flat vectors in enumeration order, each at a multiple
         * of RT_OPTIM_ALIGN floats (rt_model.c), as rt_optim lays out its state */
        ps[np].param = pbase + off;
        ps[np].grad = gbase + off;
        ps[np].n = nt_.numel;
        ps[np].no_decay = 0; /* torch applies weight decay to every parameter */
        ps[np].lr_mult = mult ? mult[np] : 1.0;
        ps[np].frozen = mult && mult[np] == 0.0;
        if (!ps[np].frozen && nt_.layer < floor) floor = nt_.layer;
        if (mult && !(mult[np] >= 0.0 && isfinite(mult[np])))
            s = RT_ERR(err, RT_EINVAL, "the lr multiplier of '%s' is %g", nt_.name, mult[np]);
        if (mult) { /* runs of one multiplier: the device path updates each run */
            rtp_group *run = t->ngroups ? &t->groups[t->ngroups - 1] : NULL;
            if (run && run->lr_mult == mult[np])
                run->n = off + rt_optim_align(nt_.numel) - run->off;
            else
                t->groups[t->ngroups++] = (rtp_group){.off = off,
                                                      .n = rt_optim_align(nt_.numel),
                                                      .lr_mult = mult[np],
                                                      .frozen = mult[np] == 0.0};
        }
        off += rt_optim_align(nt_.numel);
        np++;
    }
    if (s == RT_OK) s = rt_optim_create(&t->optim, &t->cfg.optim, ps, (size_t)np, err);
    /* below the lowest trained layer the backward has nothing to give (set every time:
     * the model outlives this trainer, and the next may train every layer) */
    if (s == RT_OK) rt_model_set_backward_floor(t->m, np ? floor : 0);
    free(ps);
    return s;
}

rt_status rt_trainer_create(rt_trainer **out, rt_model *m, const rt_dataset *train,
                            const rt_trainer_config *cfg, rt_error *err)
{
    *out = NULL;
    if (cfg->nreplicas > 0) return rtp_rep_create(out, m, train, cfg, err);
    RT_TRY(check_config(m, train, cfg, err));
    rt_trainer *t = calloc(1, sizeof *t);
    if (!t) return RT_ERR(err, RT_ENOMEM, "out of memory creating the trainer");
    t->m = m;
    t->data = train;
    t->cfg = *cfg;
    rt_watch_init(&t->st.watch);
    const int B = cfg->batch_size, L = train->num_classes;
    const int BK = B * cfg->accumulate; /* the samples of one update */
    const size_t img = (size_t)train->c * train->h * train->w;
    rt_batcher_config bc = rt_batcher_config_default(BK, rt_model_seed(m));
    bc.shuffle = cfg->shuffle;
    bc.augment = cfg->augment;
    bc.crop_pad = cfg->crop_pad;
    bc.flip_p = cfg->flip_p;
    bc.cutout = cfg->cutout;
    rt_batcher_data bd = rt_batcher_data_of(train);
    t->bcfg = bc;
    rt_status s = rt_batcher_create(&t->batcher, &bd, &bc, err);
    int dev = cfg->device_path || strcmp(rt_model_backend(m)->ops->name, "cpu");
    if (s == RT_OK && cfg->dist && dev &&
        !(t->dist_host = malloc(rt_tensor_bytes(rt_model_grads_flat(m)))))
        s = RT_ERR(err, RT_ENOMEM, "out of memory for the ranks' gradient exchange");
    if (s == RT_OK && cfg->loss_scaling && !dev)
        s = RT_ERR(err, RT_EINVAL, "loss scaling needs the trainer's device path");
    if (s == RT_OK) s = make_optim(t, err);
    if (s == RT_OK) s = rtp_controls_create(t, err);
    if (s == RT_OK && dev) s = rtp_dev_create(t, err);
    if (s == RT_OK && !dev) {
        t->images = malloc((size_t)BK * img * sizeof *t->images);
        t->probs = malloc((size_t)B * L * sizeof *t->probs);
        t->labels = malloc((size_t)BK * sizeof *t->labels);
        if (!t->images || !t->probs || !t->labels)
            s = RT_ERR(err, RT_ENOMEM, "out of memory creating the trainer");
    }
    if (s == RT_OK) {
        t->steps_per_epoch = rt_batcher_steps_per_epoch(t->batcher);
        t->total_steps = t->steps_per_epoch * cfg->epochs;
        s = rt_schedule_resolve(&t->cfg.schedule, t->steps_per_epoch, cfg->epochs, err);
    }
    if (s != RT_OK) {
        rt_trainer_destroy(t);
        return s;
    }
    *out = t;
    return RT_OK;
}

void rt_trainer_destroy(rt_trainer *t)
{
    if (!t) return;
    rtp_rep_destroy(t);
    rtp_dev_destroy(t);
    rtp_controls_destroy(t);
    rt_batcher_destroy(t->batcher);
    rt_optim_destroy(t->optim);
    free(t->images);
    free(t->probs);
    free(t->labels);
    free(t->dist_host);
    free(t->best_weights);
    free(t->groups);
    free(t);
}

rt_status rt_trainer_begin(rt_trainer *t, rt_error *err)
{
    return t->rep ? rtp_rep_run(t, NULL, err) : rtp_trainer_begin_own(t, err);
}

rt_status rtp_trainer_begin_own(rt_trainer *t, rt_error *err)
{
    if (t->dev) t->dev->last_read = rtp_trainer_now();
    t->t_begin = rtp_trainer_now();
    t->images_done = t->steps_done = 0;
    t->last_loss = NAN;
    t->dist_stop = RT_STEP_CONTINUE;
    return t->cfg.dist ? rtp_dist_begin(t, err) : RT_OK;
}

/* Forward, loss, backward of samples [off, off + n) of the staged batch of total. */
rt_status rtp_host_grads(rt_trainer *t, int off, int n, int total, double *loss, int *correct,
                         rt_error *err)
{
    rt_model *m = t->m;
    rt_backend *b = rt_model_backend(m);
    const rt_dataset *d = t->data;
    const int L = d->num_classes;
    const size_t img = (size_t)d->c * d->h * d->w;
    const int32_t *labels = t->labels + off;
    for (int i = 0; i < n; i++)
        if (labels[i] < 0 || labels[i] >= L)
            return RT_ERR(err, RT_EINVAL, "label %d outside [0, %d) in '%s'", labels[i], L,
                          d->name);
    RT_TRY(rt_backend_upload(b, rt_model_input_tensor(m), t->images + (size_t)off * img,
                             (size_t)n * img * 4, err));
    RT_TRY(rt_backend_upload(b, rt_model_label_tensor(m), labels, (size_t)n * 4, err));
    RT_TRY(rt_model_forward(m, n, 1, rtp_controls_key(t), err));
    RT_TRY(rt_model_loss(m, n, loss, t->probs, NULL, err));
    RT_TRY(rt_model_backward_part(m, n, total, NULL, err));
    *correct = 0;
    for (int i = 0; i < n; i++) {
        const float *p = t->probs + (size_t)i * L;
        int best = 0;
        for (int j = 1; j < L; j++)
            if (p[j] > p[best]) best = j;
        *correct += best == labels[i];
    }
    return RT_OK;
}

void rtp_trainer_account(rt_trainer *t, const rtp_pending *p, double loss, int correct)
{
    const rt_trainer_config *c = &t->cfg;
    if (p->reset) {
        t->st.epoch_loss_sum = 0.0;
        t->st.epoch_correct = t->st.epoch_seen = 0;
    }
    t->st.epoch_loss_sum += loss * p->count;
    t->st.epoch_correct += correct;
    t->st.epoch_seen += p->count;
    t->last_loss = loss;
    if (!c->progress) return;
    double el = rtp_trainer_now() - t->t_begin;
    rt_progress pr = {
        .step = p->step,
        .total_steps = t->total_steps,
        .epoch = p->epoch,
        .epochs = c->epochs,
        .steps_per_epoch = t->steps_per_epoch,
        .step_in_epoch = (p->position + t->bcfg.batch_size - 1) / t->bcfg.batch_size,
        .loss = loss,
        .accuracy = (double)correct / p->count,
        .epoch_loss = t->st.epoch_loss_sum / (double)t->st.epoch_seen,
        .epoch_accuracy = (double)t->st.epoch_correct / (double)t->st.epoch_seen,
        .lr = p->lr,
        .images_per_s = el > 0 ? (double)t->images_done / el : 0.0,
        .elapsed_s = el,
        .epoch_end = p->epoch_end,
        .skipped_steps = t->st.skipped_steps,
        .loss_scale = t->st.loss_scale,
    };
    c->progress(&pr, c->user);
}

rt_step_event rtp_trainer_local_stop(const rt_trainer *t)
{
    const rt_trainer_config *c = &t->cfg;
    if (c->should_stop && c->should_stop(c->user)) return RT_STEP_STOPPED;
    if (c->time_limit_s > 0 && rtp_trainer_now() - t->t_begin >= c->time_limit_s)
        return RT_STEP_TIME_LIMIT;
    return RT_STEP_CONTINUE;
}

/* The staged batch of count samples in parts of batch_size (one part without
 * accumulation), their gradients added: *loss the batch's mean loss. */
static rt_status host_parts(rt_trainer *t, int count, double *loss, int *correct, rt_error *err)
{
    const int B = t->cfg.batch_size;
    if (count <= B) return rtp_host_grads(t, 0, count, count, loss, correct, err);
    double sum = 0.0;
    *correct = 0;
    for (int k = 0, off = 0; off < count; k++, off += B) {
        int n = count - off < B ? count - off : B, c = 0;
        double l = 0.0;
        t->micro = k;
        rt_status s = rtp_host_grads(t, off, n, count, &l, &c, err);
        if (s == RT_OK) s = rtp_controls_accumulate(t, k, off + n >= count, err);
        t->micro = 0;
        RT_TRY(s);
        sum += l * n;
        *correct += c;
    }
    *loss = sum / count;
    return RT_OK;
}

/* Host path: one step with the batcher's copy and a loss read. */
static rt_status host_step(rt_trainer *t, double lr, int *epoch_end, rt_error *err)
{
    int count = 0, correct = 0;
    int64_t epoch = t->st.batcher.epoch;
    if (rt_batcher_epoch_done(t->batcher)) epoch++;
    RT_TRY(rt_batcher_next(t->batcher, t->images, t->labels, NULL, &count, err));
    rtp_pending p = {.epoch = epoch,
                     .count = count,
                     .lr = lr,
                     .reset = t->st.batcher.position == 0 || epoch != t->st.batcher.epoch};
    double loss = 0.0;
    if (t->cfg.dist) RT_TRY(rtp_dist_grads(t, count, &loss, &correct, err));
    else RT_TRY(host_parts(t, count, &loss, &correct, err));
    RT_TRY(rtp_controls_clip(t, err));
    RT_TRY(rt_optim_step(t->optim, lr, err));
    t->st.step++;
    t->st.batcher = rt_batcher_get_state(t->batcher);
    t->images_done += count;
    t->steps_done++;
    *epoch_end = rt_batcher_epoch_done(t->batcher);
    p.step = t->st.step;
    p.position = t->st.batcher.position;
    p.epoch_end = *epoch_end;
    rtp_trainer_account(t, &p, loss, correct);
    return RT_OK;
}

rt_status rt_trainer_step(rt_trainer *t, rt_step_event *ev, rt_error *err)
{
    return t->rep ? rtp_rep_run(t, ev, err) : rtp_trainer_step_own(t, ev, err);
}

rt_status rtp_trainer_step_own(rt_trainer *t, rt_step_event *ev, rt_error *err)
{
    const rt_trainer_config *c = &t->cfg;
    rt_step_event stop = RT_STEP_CONTINUE;
    if (t->st.step >= t->total_steps) stop = RT_STEP_DONE;
    else if (t->st.watch.stopped) stop = RT_STEP_EARLY_STOP;
    else if (c->dist) stop = t->dist_stop; /* every rank stops at the same step */
    else if (c->should_stop && c->should_stop(c->user)) stop = RT_STEP_STOPPED;
    else if (c->time_limit_s > 0 && rtp_trainer_now() - t->t_begin >= c->time_limit_s)
        stop = RT_STEP_TIME_LIMIT;
    if (stop != RT_STEP_CONTINUE) { /* the caller reads the progress of every step now */
        if (t->dev) RT_TRY(rtp_dev_flush(t, err));
        return *ev = stop, RT_OK;
    }
    double lr = rt_schedule_lr(&c->schedule, c->lr, t->st.step) * t->st.watch.lr_scale;
    int epoch_end = 0;
    /* the smoothed loss is the training loss only: evaluation between steps is plain */
    rt_model_set_label_smoothing(t->m, (float)c->label_smoothing);
    rt_status s = t->dev ? rtp_dev_step(t, lr, &epoch_end, err) : host_step(t, lr, &epoch_end, err);
    rt_model_set_label_smoothing(t->m, 0.0f);
    RT_TRY(s);
    *ev = epoch_end ? RT_STEP_EPOCH_END : RT_STEP_CONTINUE;
    return RT_OK;
}

void rt_trainer_set_lr(rt_trainer *t, double lr)
{
    t->cfg.lr = lr;
    if (t->rep) rtp_rep_set_lr(t, lr);
}

rt_status rt_trainer_flush(rt_trainer *t, rt_error *err)
{
    return t->dev ? rtp_dev_flush(t, err) : RT_OK;
}

int rt_trainer_on_device(const rt_trainer *t) { return t->dev != NULL; }

rt_status rt_trainer_end(rt_trainer *t, rt_train_summary *out, rt_error *err)
{
    if (t->dev) RT_TRY(rtp_dev_flush(t, err));
    if (!out) return RT_OK;
    double el = rtp_trainer_now() - t->t_begin;
    out->steps = t->steps_done;
    out->images = t->images_done;
    out->seconds = el;
    out->images_per_s = el > 0 ? (double)t->images_done / el : 0.0;
    out->last_loss = t->last_loss;
    out->skipped_steps = t->st.skipped_steps;
    out->loss_scale = t->st.loss_scale;
    return RT_OK;
}

rt_trainer_state rt_trainer_get_state(const rt_trainer *t) { return t->st; }

rt_status rt_trainer_set_state(rt_trainer *t, const rt_trainer_state *s, rt_error *err)
{
    if (s->step < 0)
        return RT_ERR(err, RT_EINVAL, "trainer state: step %lld < 0", (long long)s->step);
    if (s->loss_scale < 0 || !isfinite(s->loss_scale) || s->scale_tracker < 0 ||
        s->skipped_steps < 0)
        return RT_ERR(err, RT_EINVAL,
                      "trainer state: loss scale %g, tracker %lld, skipped "
                      "%lld",
                      s->loss_scale, (long long)s->scale_tracker, (long long)s->skipped_steps);
    RT_TRY(rt_watch_check(&s->watch, err));
    RT_TRY(rt_batcher_set_state(t->batcher, s->batcher, err));
    t->st = *s;
    if (t->dev) { /* steps not yet read belong to the old position: drop them */
        t->dev->pending = 0;
        t->dev->upload_optim = 1;
    }
    return RT_OK;
}

rt_optim *rt_trainer_optim(rt_trainer *t)
{
    if (t->dev) t->dev->upload_optim = 1; /* the caller may write it */
    return t->optim;
}
int64_t rt_trainer_steps_per_epoch(const rt_trainer *t) { return t->steps_per_epoch; }
