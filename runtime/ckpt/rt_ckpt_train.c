/* rt_ckpt_train.c - saving a model (+ a training snapshot) as a Kiln checkpoint and
 * loading a checkpoint's weights into a model (rt_ckpt_train.h).
 *
 * Tensors: "model.<tensor name>" for every model tensor in enumeration order, and
 * "optim.<array>.<parameter tensor name>" with the parameter's shape for every
 * optimiser array. On the CPU the writer borrows the model's own memory (no copy);
 * other backends are downloaded into host buffers first. Metadata JSON is formatted
 * with snprintf (numbers and plain text only: nothing to allocate, nothing to escape).
 */
#include "rt_ckpt_train.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_schedule.h"

/* ---- saving ---- */

typedef struct save_ctx {
    rt_ckpt_writer *w;
    float **owned; /* host copies of device tensors */
    int nowned;
} save_ctx;

/* Metadata JSON is formatted here (numbers and fixed-alphabet text only), not built with
 * jansson: no allocation, so out of memory can never produce a mangled text. */
static rt_status set_jsonf(save_ctx *c, const char *key, rt_error *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static rt_status set_jsonf(save_ctx *c, const char *key, rt_error *err, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof buf)
        return RT_ERR(err, RT_EINVAL, "checkpoint metadata '%s' is too long", key);
    return rt_ckpt_writer_set_meta_json(c->w, key, buf, err);
}

/* 1 when s needs no JSON escaping (schedule specs: letters, digits, "._=+- :") */
static int plain_text(const char *s)
{
    for (; *s; s++)
        if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20) return 0;
    return 1;
}

static rt_status add_model(save_ctx *c, rt_model *m, rt_error *err)
{
    int n = rt_model_num_tensors(m);
    if (!(c->owned = calloc((size_t)n + 1, sizeof *c->owned)))
        return RT_ERR(err, RT_ENOMEM, "out of memory saving a checkpoint");
    for (int i = 0; i < n; i++) {
        rt_named_tensor t;
        RT_TRY(rt_model_tensor(m, i, &t, err));
        const float *data = t.host;
        if (!data) { /* a device tensor: download */
            float *h = malloc(t.numel * sizeof *h + 1);
            if (!h) return RT_ERR(err, RT_ENOMEM, "out of memory saving tensor %s", t.name);
            c->owned[c->nowned++] = h;
            RT_TRY(rt_model_tensor_read(m, i, h, err));
            data = h;
        }
        char name[96];
        int64_t shape[4];
        for (int d = 0; d < t.ndim; d++) shape[d] = t.shape[d];
        snprintf(name, sizeof name, "model.%s", t.name);
        RT_TRY(rt_ckpt_writer_add_tensor(c->w, name, RT_ST_F32, t.ndim, shape, data, err));
    }
    return RT_OK;
}

/* The k-th trainable tensor of m (k = the optimiser's parameter index). */
static rt_status trainable_at(rt_model *m, int k, rt_named_tensor *out, rt_error *err)
{
    int n = rt_model_num_tensors(m);
    for (int i = 0; i < n; i++) {
        RT_TRY(rt_model_tensor(m, i, out, err));
        if (out->trainable && k-- == 0) return RT_OK;
    }
    return RT_ERR(err, RT_EINVAL, "optimiser parameter %d is not a model parameter", k);
}

static rt_status add_state(save_ctx *c, rt_model *m, const rt_ckpt_train_snap *s, rt_error *err)
{
    for (size_t j = 0; j < s->nstate; j++) {
        const char *dot = strrchr(s->names[j], '.');
        rt_named_tensor t;
        if (!dot) return RT_ERR(err, RT_EINVAL, "optimiser array '%s' has no index", s->names[j]);
        RT_TRY(trainable_at(m, atoi(dot + 1), &t, err));
        if (t.numel != s->lens[j])
            return RT_ERR(err, RT_EINVAL,
                          "optimiser array '%s' has %zu values, parameter "
                          "'%s' %zu",
                          s->names[j], s->lens[j], t.name, t.numel);
        char name[160];
        int64_t shape[4];
        for (int d = 0; d < t.ndim; d++) shape[d] = t.shape[d];
        snprintf(name, sizeof name, "optim.%.*s.%s", (int)(dot - s->names[j]), s->names[j], t.name);
        RT_TRY(rt_ckpt_writer_add_tensor(c->w, name, RT_ST_F32, t.ndim, shape, s->arrays[j], err));
    }
    char buf[64], seed[32];
    const rt_trainer_state *st = &s->state;
    const rt_watch_state *w = &st->watch;
    char scale[64], best[64], pbest[64], lrs[64];
    snprintf(buf, sizeof buf, "%a", st->epoch_loss_sum);
    snprintf(scale, sizeof scale, "%a", st->loss_scale);
    snprintf(best, sizeof best, "%a", w->best);
    snprintf(pbest, sizeof pbest, "%a", w->plateau_best);
    snprintf(lrs, sizeof lrs, "%a", w->lr_scale);
    /* loss_scale (0: none), scale_tracker, skipped_steps: fp16 loss scaling; "watch":
     * the epoch-level controls (best epoch, early stopping, plateau). Readers of
     * checkpoints without them (written before) take 0 / a fresh state */
    RT_TRY(set_jsonf(
        c, RT_CKPT_KEY_DATA_ORDER, err,
        "{\"epoch\":%lld,\"position\":%lld,\"steps_per_epoch\":%lld,"
        "\"epoch_correct\":%lld,\"epoch_seen\":%lld,\"epoch_loss_sum\":\"%s\","
        "\"loss_scale\":\"%s\",\"scale_tracker\":%lld,\"skipped_steps\":%lld,"
        "\"watch\":{\"has_best\":%d,\"best\":\"%s\",\"best_epoch\":%lld,"
        "\"wait\":%lld,\"stopped\":%d,\"has_plateau_best\":%d,"
        "\"plateau_best\":\"%s\",\"plateau_bad\":%lld,\"lr_scale\":\"%s\","
        "\"reductions\":%lld,\"cooldown_left\":%lld}}",
        (long long)st->batcher.epoch, (long long)st->batcher.position,
        (long long)s->steps_per_epoch, (long long)st->epoch_correct, (long long)st->epoch_seen, buf,
        scale, (long long)st->scale_tracker, (long long)st->skipped_steps, w->has_best, best,
        (long long)w->best_epoch, (long long)w->wait, w->stopped, w->has_plateau_best, pbest,
        (long long)w->plateau_bad, lrs, (long long)w->reductions, (long long)w->cooldown_left));
    snprintf(seed, sizeof seed, "%" PRIu64, s->seed);
    RT_TRY(set_jsonf(c, RT_CKPT_KEY_RNG, err,
                     "{\"generator\":\"philox4x32-10\",\"seed\":\"%s\",\"streams\":{"
                     "\"init\":\"(seed, layer, parameter)\",\"shuffle\":\"(seed, epoch)\","
                     "\"dropout\":\"(seed, step, layer)\",\"augment\":\"(seed, epoch)\"}}",
                     seed));
    const rt_optim_config *o = &s->optim;
    RT_TRY(set_jsonf(c, RT_CKPT_KEY_OPTIM_CONFIG, err,
                     "{\"kind\":\"%s\",\"momentum\":%.17g,\"dampening\":%.17g,"
                     "\"nesterov\":%s,\"beta1\":%.17g,\"beta2\":%.17g,\"eps\":%.17g,"
                     "\"weight_decay\":%.17g}",
                     rt_optim_kind_name(o->kind), o->momentum, o->dampening,
                     o->nesterov ? "true" : "false", o->beta1, o->beta2, o->eps, o->weight_decay));
    RT_TRY(rt_ckpt_writer_set_meta(c->w, RT_CKPT_KEY_OPTIMIZER, rt_optim_kind_name(o->kind), err));
    RT_TRY(rt_ckpt_writer_set_meta_i64(c->w, RT_CKPT_KEY_OPTIMIZER_STEP, s->optim_step, err));
    RT_TRY(rt_ckpt_writer_set_meta_i64(c->w, RT_CKPT_KEY_STEP, st->step, err));
    RT_TRY(rt_ckpt_writer_set_meta_i64(c->w, RT_CKPT_KEY_EPOCH, rt_ckpt_train_snap_epoch(s), err));
    return rt_ckpt_writer_set_meta(c->w, RT_CKPT_KEY_TRAINING_STATE, "1", err);
}

static rt_status add_info(save_ctx *c, rt_model *m, const rt_ckpt_train_info *in, int64_t step,
                          rt_error *err)
{
    rt_ckpt_writer *w = c->w;
    const rt_model_input *shape = rt_model_input_shape(m);
    char buf[64];
    snprintf(buf, sizeof buf, "[%d,%d,%d]", shape->c, shape->h, shape->w);
    RT_TRY(rt_ckpt_writer_set_meta_json(w, RT_CKPT_KEY_INPUT_SHAPE, buf, err));
    RT_TRY(rt_ckpt_writer_set_meta_i64(w, RT_CKPT_KEY_NUM_CLASSES, shape->num_classes, err));
    RT_TRY(rt_ckpt_writer_set_meta(w, RT_CKPT_KEY_MODEL_SPEC, rt_model_spec(m), err));
    RT_TRY(rt_ckpt_writer_set_meta(w, RT_CKPT_KEY_SPEC_CANONICAL, rt_model_spec_canonical(m), err));
    if (in->run_id) RT_TRY(rt_ckpt_writer_set_meta(w, RT_CKPT_KEY_RUN_ID, in->run_id, err));
    if (in->model_name)
        RT_TRY(rt_ckpt_writer_set_meta(w, RT_CKPT_KEY_MODEL_NAME, in->model_name, err));
    if (in->hyperparameters)
        RT_TRY(rt_ckpt_writer_set_meta_json(w, RT_CKPT_KEY_HYPERPARAMS, in->hyperparameters, err));
    if (in->dataset) RT_TRY(rt_ckpt_writer_set_meta_json(w, RT_CKPT_KEY_DATASET, in->dataset, err));
    if (in->schedule) {
        rt_schedule s;
        RT_TRY(rt_schedule_parse(&s, in->schedule, err));
        double lr = s.steps_per_epoch > 0 ? rt_schedule_lr(&s, in->base_lr, step) : in->base_lr;
        if (!plain_text(in->schedule))
            return RT_ERR(err, RT_EINVAL,
                          "schedule text '%s' has quotes or control "
                          "characters",
                          in->schedule);
        RT_TRY(set_jsonf(c, RT_CKPT_KEY_SCHEDULE, err,
                         "{\"name\":\"%s\",\"spec\":\"%s\",\"step\":%lld,\"lr\":%.17g}",
                         rt_schedule_kind_name(s.kind), in->schedule, (long long)step, lr));
    }
    if (in->metric) RT_TRY(rt_ckpt_writer_set_metric(w, RT_CKPT_KEY_METRIC, in->metric, err));
    if (in->best_metric)
        RT_TRY(rt_ckpt_writer_set_metric(w, RT_CKPT_KEY_BEST_METRIC, in->best_metric, err));
    for (const char *const *e = in->extra; e && e[0] && e[1]; e += 2)
        RT_TRY(rt_ckpt_writer_set_meta(w, e[0], e[1], err));
    return RT_OK;
}

rt_status rt_ckpt_train_save(const char *path, rt_model *m, const rt_ckpt_train_snap *s,
                             const rt_ckpt_train_info *info, rt_error *err)
{
    static const rt_ckpt_train_info none;
    if (!info) info = &none;
    save_ctx c = {0};
    rt_status st = rt_ckpt_writer_create(&c.w, err);
    if (st == RT_OK) st = add_model(&c, m, err);
    if (st == RT_OK && s) st = add_state(&c, m, s, err);
    if (st == RT_OK && !s) {
        st = rt_ckpt_writer_set_meta_i64(c.w, RT_CKPT_KEY_STEP, info->step, err);
        if (st == RT_OK) st = rt_ckpt_writer_set_meta_i64(c.w, RT_CKPT_KEY_EPOCH, info->epoch, err);
    }
    if (st == RT_OK) st = add_info(&c, m, info, s ? s->state.step : info->step, err);
    if (st == RT_OK) st = rt_ckpt_writer_save(c.w, path, err);
    rt_ckpt_writer_destroy(c.w);
    for (int i = 0; i < c.nowned; i++) free(c.owned[i]);
    free(c.owned);
    return st;
}

/* ---- loading weights ---- */

static rt_status misfit(const rt_ckpt_reader *r, rt_model *m, const char *what, rt_error *err)
{
    const char *spec = rt_ckpt_reader_meta(r, RT_CKPT_KEY_SPEC_CANONICAL);
    if (!spec) spec = rt_ckpt_reader_meta(r, RT_CKPT_KEY_MODEL_SPEC);
    if (spec && strcmp(spec, rt_model_spec_canonical(m)))
        return RT_ERR(err, RT_EINVAL,
                      "checkpoint '%s' is for another model: %s ---> HINT: "
                      "its model is: %.300s",
                      rt_ckpt_reader_path(r), what, spec);
    return RT_ERR(err, RT_EINVAL, "checkpoint '%s' does not fit the model: %s",
                  rt_ckpt_reader_path(r), what);
}

static void shape_text(char *buf, size_t n, int ndim, const int64_t *shape)
{
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < ndim && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, d ? ",%lld" : "%lld", (long long)shape[d]);
    if (k < n) snprintf(buf + k, n - k, "]");
}

rt_status rt_ckpt_train_load_model(const rt_ckpt_reader *r, rt_model *m, rt_error *err)
{
    int n = rt_model_num_tensors(m), in_file = 0;
    char what[400], a[80], b[80];
    for (size_t i = 0; i < rt_ckpt_reader_tensor_count(r); i++)
        in_file += !strncmp(rt_ckpt_reader_tensor_at(r, i)->name, "model.", 6);
    for (int i = 0; i < n; i++) { /* check everything before changing anything */
        rt_named_tensor t;
        RT_TRY(rt_model_tensor(m, i, &t, err));
        char name[96];
        snprintf(name, sizeof name, "model.%s", t.name);
        const rt_st_tensor_info *ti = rt_ckpt_reader_find(r, name);
        int64_t shape[4];
        for (int d = 0; d < t.ndim; d++) shape[d] = t.shape[d];
        if (!ti) {
            snprintf(what, sizeof what, "it has no tensor '%s'", name);
            return misfit(r, m, what, err);
        }
        int same = ti->dtype == RT_ST_F32 && ti->ndim == t.ndim;
        for (int d = 0; same && d < t.ndim; d++) same = ti->shape[d] == shape[d];
        if (!same) {
            shape_text(a, sizeof a, ti->ndim, ti->shape);
            shape_text(b, sizeof b, t.ndim, shape);
            snprintf(what, sizeof what, "tensor '%s' is %s %s, the model expects F32 %s", name,
                     rt_st_dtype_name(ti->dtype), a, b);
            return misfit(r, m, what, err);
        }
    }
    if (in_file != n) {
        snprintf(what, sizeof what, "it holds %d model tensors, the model has %d", in_file, n);
        return misfit(r, m, what, err);
    }
    for (int i = 0; i < n; i++) {
        rt_named_tensor t;
        RT_TRY(rt_model_tensor(m, i, &t, err));
        char name[96];
        int64_t shape[4];
        for (int d = 0; d < t.ndim; d++) shape[d] = t.shape[d];
        snprintf(name, sizeof name, "model.%s", t.name);
        float *dst = t.host ? t.host : malloc(t.numel * sizeof *dst + 1);
        if (!dst) return RT_ERR(err, RT_ENOMEM, "out of memory loading tensor %s", name);
        rt_status s =
            rt_ckpt_reader_get(r, name, RT_ST_F32, t.ndim, shape, dst, t.numel * sizeof *dst, err);
        if (s == RT_OK && !t.host) s = rt_model_tensor_write(m, i, dst, err); /* upload */
        if (!t.host) free(dst);
        RT_TRY(s);
    }
    return RT_OK;
}
