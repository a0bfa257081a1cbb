/* rt_ckpt_train_state.c - the training-state snapshot (rt_ckpt_train.h): capture from a
 * trainer, read from a checkpoint, apply to a trainer.
 *
 * The state is small integers (step, data order, optimiser step, seed), three running
 * epoch statistics, and the optimiser's float arrays. Doubles travel as C99 hex-float
 * strings ("%a") so they come back bit for bit, NaN and infinities included. Apply
 * checks everything before it changes anything.
 */
#include "rt_ckpt_train.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_ckpt_internal.h"

void rt_ckpt_train_snap_deinit(rt_ckpt_train_snap *s)
{
    if (!s) return;
    free(s->names);
    free(s->lens);
    free(s->arrays);
    free(s->block);
    memset(s, 0, sizeof *s);
}

int64_t rt_ckpt_train_snap_epoch(const rt_ckpt_train_snap *s)
{
    return s->steps_per_epoch > 0 ? s->state.step / s->steps_per_epoch : 0;
}

/* Allocates n arrays of the given lengths in one block. */
static rt_status snap_alloc(rt_ckpt_train_snap *s, size_t n, const size_t *lens, rt_error *err)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += lens[i];
    s->nstate = n;
    s->names = calloc(n + 1, sizeof *s->names);
    s->lens = calloc(n + 1, sizeof *s->lens);
    s->arrays = calloc(n + 1, sizeof *s->arrays);
    s->block = malloc((total + 1) * sizeof *s->block);
    if (!s->names || !s->lens || !s->arrays || !s->block) {
        rt_ckpt_train_snap_deinit(s);
        return RT_ERR(err, RT_ENOMEM, "out of memory for a checkpoint of %zu floats", total);
    }
    float *p = s->block;
    for (size_t i = 0; i < n; i++) {
        s->lens[i] = lens[i];
        s->arrays[i] = p;
        p += lens[i];
    }
    return RT_OK;
}

rt_status rt_ckpt_train_snap_capture(rt_ckpt_train_snap *s, rt_trainer *t, rt_model *m,
                                     rt_error *err)
{
    memset(s, 0, sizeof *s);
    RT_TRY(rt_trainer_flush(t, err)); /* device path: statistics and optimiser to the host */
    rt_optim *o = rt_trainer_optim(t);
    size_t n = rt_optim_state_count(o);
    size_t *lens = calloc(n + 1, sizeof *lens);
    if (!lens) return RT_ERR(err, RT_ENOMEM, "out of memory capturing the training state");
    char name[RT_OPTIM_NAME_MAX];
    for (size_t i = 0; i < n; i++) rt_optim_state_get(o, i, name, &lens[i]);
    rt_status st = snap_alloc(s, n, lens, err);
    free(lens);
    RT_TRY(st);
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const float *a = rt_optim_state_get(o, i, s->names[i], &len);
        memcpy(s->arrays[i], a, len * sizeof *a);
    }
    s->state = rt_trainer_get_state(t);
    s->steps_per_epoch = rt_trainer_steps_per_epoch(t);
    s->seed = rt_model_seed(m);
    s->optim = *rt_optim_get_config(o);
    s->optim_step = rt_optim_step_count(o);
    return RT_OK;
}

/* ---- reading ---- */

static rt_status bad(const rt_ckpt_reader *r, const char *key, const char *why, rt_error *err)
{
    return RT_ERR(err, RT_EFORMAT,
                  "checkpoint '%s': metadata '%s' %s ---> HINT: the file "
                  "was not written by this kiln's %%train; use another checkpoint",
                  rt_ckpt_reader_path(r), key, why);
}

/* Parses the JSON object under key into *out (new ref). */
static rt_status meta_obj(const rt_ckpt_reader *r, const char *key, json_t **out, rt_error *err)
{
    const char *v = rt_ckpt_reader_meta(r, key);
    if (!v) return bad(r, key, "is missing", err);
    if (rtp_json_load(v, strlen(v), 0, out, NULL, 0) != 0 || !json_is_object(*out)) {
        json_decref(*out);
        *out = NULL;
        return bad(r, key, "is not a JSON object", err);
    }
    return RT_OK;
}

static int get_i64(json_t *o, const char *k, int64_t *v)
{
    json_t *x = json_object_get(o, k);
    if (!json_is_integer(x) || json_integer_value(x) < 0) return -1;
    *v = json_integer_value(x);
    return 0;
}

static int get_hexf(json_t *o, const char *k, double *v)
{
    const char *s = json_string_value(json_object_get(o, k));
    char *end;
    if (!s) return -1;
    errno = 0;
    *v = strtod(s, &end);
    return end == s || *end ? -1 : 0;
}

static rt_status read_position(rt_ckpt_train_snap *s, const rt_ckpt_reader *r, rt_error *err)
{
    json_t *d = NULL, *g = NULL;
    RT_TRY(meta_obj(r, RT_CKPT_KEY_DATA_ORDER, &d, err));
    rt_status st = RT_OK;
    rt_trainer_state *t = &s->state;
    if (get_i64(d, "epoch", &t->batcher.epoch) || get_i64(d, "position", &t->batcher.position) ||
        get_i64(d, "steps_per_epoch", &s->steps_per_epoch) ||
        get_i64(d, "epoch_correct", &t->epoch_correct) ||
        get_i64(d, "epoch_seen", &t->epoch_seen) ||
        get_hexf(d, "epoch_loss_sum", &t->epoch_loss_sum) || s->steps_per_epoch < 1)
        st = bad(r, RT_CKPT_KEY_DATA_ORDER,
                 "lacks a field (epoch, position, steps_per_epoch, "
                 "epoch_correct, epoch_seen, epoch_loss_sum)",
                 err);
    /* loss scaling (optional: absent in checkpoints of runs without it, and older ones) */
    if (st == RT_OK && json_object_get(d, "loss_scale") &&
        (get_hexf(d, "loss_scale", &t->loss_scale) || !(t->loss_scale >= 0) ||
         !isfinite(t->loss_scale) || get_i64(d, "scale_tracker", &t->scale_tracker) ||
         get_i64(d, "skipped_steps", &t->skipped_steps)))
        st = bad(r, RT_CKPT_KEY_DATA_ORDER,
                 "has a bad loss_scale, scale_tracker or "
                 "skipped_steps",
                 err);
    /* the epoch-level controls (optional as well) */
    rt_watch_init(&t->watch);
    json_t *w = json_object_get(d, "watch");
    rt_watch_state *ws = &t->watch;
    int64_t hb = 0, stopped = 0, hpb = 0;
    if (st == RT_OK && w &&
        (get_i64(w, "has_best", &hb) || get_hexf(w, "best", &ws->best) ||
         get_i64(w, "best_epoch", &ws->best_epoch) || get_i64(w, "wait", &ws->wait) ||
         get_i64(w, "stopped", &stopped) || get_i64(w, "has_plateau_best", &hpb) ||
         get_hexf(w, "plateau_best", &ws->plateau_best) ||
         get_i64(w, "plateau_bad", &ws->plateau_bad) || get_hexf(w, "lr_scale", &ws->lr_scale) ||
         get_i64(w, "reductions", &ws->reductions) ||
         /* plateau's cooldown (absent in older checkpoints: none) */
         (json_object_get(w, "cooldown_left") && get_i64(w, "cooldown_left", &ws->cooldown_left)) ||
         rt_watch_check(ws, NULL) != RT_OK))
        st = bad(r, RT_CKPT_KEY_DATA_ORDER, "has a bad \"watch\" (early stopping, plateau)", err);
    ws->has_best = hb != 0, ws->stopped = stopped != 0, ws->has_plateau_best = hpb != 0;
    json_decref(d);
    if (st == RT_OK) st = meta_obj(r, RT_CKPT_KEY_RNG, &g, err);
    if (st == RT_OK) {
        const char *seed = json_string_value(json_object_get(g, "seed"));
        char *end = NULL;
        errno = 0;
        s->seed = seed ? strtoull(seed, &end, 10) : 0;
        if (!seed || !*seed || *end || errno)
            st = bad(r, RT_CKPT_KEY_RNG, "lacks a decimal \"seed\"", err);
    }
    json_decref(g);
    RT_TRY(st);
    RT_TRY(rt_ckpt_reader_meta_i64(r, RT_CKPT_KEY_STEP, &t->step, err));
    RT_TRY(rt_ckpt_reader_meta_i64(r, RT_CKPT_KEY_OPTIMIZER_STEP, &s->optim_step, err));
    const char *kind = rt_ckpt_reader_meta(r, RT_CKPT_KEY_OPTIMIZER);
    rt_optim_kind k;
    if (!kind || rt_optim_kind_parse(kind, &k, NULL) != RT_OK)
        return bad(r, RT_CKPT_KEY_OPTIMIZER, "is not sgd, adam or adamw", err);
    s->optim = rt_optim_config_default(k);
    return RT_OK;
}

/* The index among m's trainable tensors of model tensor `name`, or -1. */
static int trainable_index(rt_model *m, const char *name)
{
    int nt = rt_model_num_tensors(m), k = 0;
    for (int i = 0; i < nt; i++) {
        rt_named_tensor t;
        if (rt_model_tensor(m, i, &t, NULL) != RT_OK || !t.trainable) continue;
        if (!strcmp(t.name, name)) return k;
        k++;
    }
    return -1;
}

rt_status rt_ckpt_train_snap_read(rt_ckpt_train_snap *s, const rt_ckpt_reader *r, rt_model *m,
                                  rt_error *err)
{
    memset(s, 0, sizeof *s);
    const char *ts = rt_ckpt_reader_meta(r, RT_CKPT_KEY_TRAINING_STATE);
    if (!ts || strcmp(ts, "1"))
        return RT_ERR(err, RT_EINVAL,
                      "checkpoint '%s' holds weights only (no optimiser "
                      "state or data position), so a run cannot continue from it ---> HINT: "
                      "%%checkpoint load it, or resume from a checkpoint %%train wrote",
                      rt_ckpt_reader_path(r));
    rt_ckpt_train_snap tmp;
    memset(&tmp, 0, sizeof tmp);
    RT_TRY(read_position(&tmp, r, err));
    size_t n = 0, nt = rt_ckpt_reader_tensor_count(r);
    size_t *lens = calloc(nt + 1, sizeof *lens);
    int *which = calloc(nt + 1, sizeof *which);
    rt_status st = lens && which ? RT_OK : RT_ERR(err, RT_ENOMEM, "out of memory");
    for (size_t i = 0; i < nt && st == RT_OK; i++) {
        const rt_st_tensor_info *ti = rt_ckpt_reader_tensor_at(r, i);
        if (strncmp(ti->name, "optim.", 6)) continue;
        size_t count = 1;
        for (int d = 0; d < ti->ndim; d++) count *= (size_t)ti->shape[d];
        if (ti->dtype != RT_ST_F32)
            st = RT_ERR(err, RT_EFORMAT,
                        "checkpoint '%s': optimiser tensor '%s' is %s, "
                        "expected F32",
                        rt_ckpt_reader_path(r), ti->name, rt_st_dtype_name(ti->dtype));
        lens[n] = count;
        which[n++] = (int)i;
    }
    if (st == RT_OK) st = snap_alloc(&tmp, n, lens, err);
    for (size_t j = 0; j < n && st == RT_OK; j++) {
        const rt_st_tensor_info *ti = rt_ckpt_reader_tensor_at(r, (size_t)which[j]);
        const char *rest = ti->name + 6, *dot = strchr(rest, '.');
        int idx = dot ? trainable_index(m, dot + 1) : -1;
        if (idx < 0 || (size_t)(dot - rest) >= RT_OPTIM_NAME_MAX - 12) {
            st = RT_ERR(err, RT_EINVAL,
                        "checkpoint '%s': optimiser tensor '%s' belongs to no "
                        "parameter of this model ---> HINT: the checkpoint is for another "
                        "model",
                        rt_ckpt_reader_path(r), ti->name);
            break;
        }
        snprintf(tmp.names[j], RT_OPTIM_NAME_MAX, "%.*s.%d", (int)(dot - rest), rest, idx);
        st = rt_ckpt_reader_get(r, ti->name, RT_ST_F32, ti->ndim, ti->shape, tmp.arrays[j],
                                tmp.lens[j] * sizeof(float), err);
    }
    free(lens);
    free(which);
    if (st != RT_OK) {
        rt_ckpt_train_snap_deinit(&tmp);
        return st;
    }
    *s = tmp;
    return RT_OK;
}

/* ---- applying ---- */

rt_status rt_ckpt_train_snap_apply(const rt_ckpt_train_snap *s, rt_trainer *t, rt_model *m,
                                   rt_error *err)
{
    rt_optim *o = rt_trainer_optim(t);
    const rt_optim_config *c = rt_optim_get_config(o);
    if (c->kind != s->optim.kind)
        return RT_ERR(err, RT_EINVAL,
                      "the checkpoint holds %s state but the run uses "
                      "--optimizer %s",
                      rt_optim_kind_name(s->optim.kind), rt_optim_kind_name(c->kind));
    if (s->seed != rt_model_seed(m))
        return RT_ERR(err, RT_EINVAL,
                      "the checkpoint was trained with --seed %" PRIu64
                      " but the model was built with seed %" PRIu64 " (data order and "
                      "dropout would differ)",
                      s->seed, rt_model_seed(m));
    if (s->steps_per_epoch != rt_trainer_steps_per_epoch(t))
        return RT_ERR(err, RT_EINVAL,
                      "the checkpoint's run had %lld steps an epoch, this "
                      "one has %lld (another --batch or data set size)",
                      (long long)s->steps_per_epoch, (long long)rt_trainer_steps_per_epoch(t));
    size_t n = rt_optim_state_count(o);
    if (n != s->nstate)
        return RT_ERR(err, RT_EINVAL,
                      "the checkpoint holds %zu optimiser arrays, the run's "
                      "%s optimiser has %zu (momentum on in one and off in the other?)",
                      s->nstate, rt_optim_kind_name(c->kind), n);
    for (size_t i = 0; i < n; i++) { /* every array of the optimiser, by name and size */
        char name[RT_OPTIM_NAME_MAX];
        size_t len, j;
        rt_optim_state_get(o, i, name, &len);
        for (j = 0; j < s->nstate && strcmp(s->names[j], name); j++) {}
        if (j == s->nstate)
            return RT_ERR(err, RT_EINVAL, "the checkpoint lacks optimiser state '%s'", name);
        if (s->lens[j] != len)
            return RT_ERR(err, RT_EINVAL,
                          "optimiser state '%s' has %zu values in the "
                          "checkpoint, %zu in the run",
                          name, s->lens[j], len);
    }
    if (s->optim_step < 0)
        return RT_ERR(err, RT_EINVAL, "optimiser step %lld < 0", (long long)s->optim_step);
    /* the only check left is the batcher's (position within the data set): first */
    RT_TRY(rt_trainer_set_state(t, &s->state, err));
    for (size_t j = 0; j < s->nstate; j++)
        RT_TRY(rt_optim_state_set(o, s->names[j], s->arrays[j], s->lens[j], err));
    return rt_optim_set_step_count(o, s->optim_step, err);
}
